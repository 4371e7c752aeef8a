/*
 * shmring-fixture.h - what the parts of test-shmring share: the payloads
 * (a function of a seed and their number, so that a reader checks one
 * without being told its bytes), rings made or refused loudly, and what
 * this process holds of rings.
 */
#ifndef MELPIPE_SHMRING_FIXTURE_H
#define MELPIPE_SHMRING_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/shmring.h"

/* The build id of the tests' rings. */
extern const uint8_t g_id[16];

/* splitmix64: a mixer, and a generator over the state *s. */
uint64_t mix64(uint64_t x);
uint64_t rng_next(uint64_t *s);

/* Payload k of a run seeded with seed: its bytes, a check of them (1 when
 * p holds them), its length (big: see pay_len in the .c). */
void pay_fill(uint64_t seed, uint64_t k, unsigned char *p, size_t len);
int pay_ok(uint64_t seed, uint64_t k, const unsigned char *p, size_t len);
size_t pay_len(uint64_t seed, uint64_t k, size_t big);

/* Seconds on the monotonic clock. */
double now(void);

/* This process's fds and mappings of a ring's memfd; names in /dev/shm
 * that look like a ring's. */
int ring_fds(void);
int ring_maps(void);
int shm_names(void);

/* A way of making a writer's ring: shmring_create or
 * shmring_create_private. */
typedef int (*create_fn)(struct shmring **, uint64_t, uint32_t,
			 const uint8_t *);

struct kind {
	const char *name;
	create_fn create;
};

/* A ring of kd's kind with build id g_id; bails out when refused. */
struct shmring *mk(const struct kind *kd, uint64_t bytes, uint32_t slots);

/* An allocation: shmring_alloc's results. */
struct ref {
	uint32_t slot;
	uint64_t off;
	size_t len;
	void *ptr;
};

/* shmring_alloc of len bytes into *r. */
int take(struct shmring *w, size_t len, struct ref *r);

#endif
