/*
 * shmring-pair.h - test-shmring's runs of a writer and a reader through
 * one ring (shmring-pair.c); each prints its TAP checks.
 */
#ifndef MELPIPE_SHMRING_PAIR_H
#define MELPIPE_SHMRING_PAIR_H

#include <stdint.h>

/* A forked reader process attached through /proc/PARENT/fd/N, n
 * payloads. */
int run_procs(uint64_t n);
/* A writer and a reader thread on one mapping, n payloads (for
 * ThreadSanitizer, which sees no other process). */
int run_threads(uint64_t n);
/* The reader SIGKILLed while it holds slots. */
int run_kill(void);
/* A reader of another user (uid 65534), as root; skipped otherwise. */
int run_user(void);

#endif
