/*
 * tap.h - a tiny Test Anything Protocol emitter for the C unit tests of
 * lib/: each check prints "ok N - what" or "not ok N - what" with the
 * values on "#" lines, and tap_done() prints the plan and gives the exit
 * status (0 when every check passed).
 */
#ifndef MELPIPE_TAP_H
#define MELPIPE_TAP_H

#include <stdint.h>

/* Records one check; returns cond so that callers can stop early. */
int tap_ok(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Checks got == want for integers and prints both when they differ. */
int tap_is(int64_t got, int64_t want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int tap_is_u64(uint64_t got, uint64_t want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Checks that strings are equal (NULL equals only NULL). */
int tap_is_str(const char *got, const char *want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A "# ..." comment line. */
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the plan; returns the exit status for main. */
int tap_done(void);

#endif
