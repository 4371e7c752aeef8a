/*
 * xorshift.h - the test helpers' reproducible pseudo-random numbers
 * (xorshift64: shifts 13, 7, 17). Each caller keeps its own state, with a
 * seed of its own, so that its data are the same on every run.
 */
#ifndef MELPIPE_XORSHIFT_H
#define MELPIPE_XORSHIFT_H

#include <stdint.h>

/* Moves *state on and returns it (never 0 from a seed that is not). */
static inline uint64_t xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
