/*
 * mutate.h - the deterministic mutations the fuzz targets' plain mains
 * (fuzz-rec, fuzz-decode) apply to their seeds, so that `make check`
 * exercises mangled input under the sanitizers without libFuzzer.
 */
#ifndef MELPIPE_TESTS_MUTATE_H
#define MELPIPE_TESTS_MUTATE_H

#include <stddef.h>
#include <stdint.h>

/* What a target's inputs look like, for the mutations that matter. */
struct mut_profile {
	const unsigned char *bytes; /* interesting byte values */
	size_t n_bytes;
	const uint32_t *words;      /* interesting field values */
	size_t n_words;
	int short_words;            /* also write them as 16-bit fields */
	size_t head;                /* > 0: half the changes fall in the
				       first head bytes (the headers) */
};

/* The next number of a fixed xorshift sequence (the same every run). */
uint64_t mut_rng(void);

/* One random change of buf (len bytes, room for len + 64): a bit flipped,
 * an interesting byte or field value written, bytes inserted or deleted,
 * a cut, or the tail of other spliced in. Returns the new length. */
size_t mut_apply(const struct mut_profile *p, unsigned char *buf, size_t len,
		 const unsigned char *other, size_t olen);

/* A mutant of seed (len bytes) in buf: 1 to MUT_MAX_CHANGES changes by
 * mut_apply(), other giving the spliced tails. buf must hold
 * MUT_ROOM(len) bytes (no change adds more than 64). Returns its length. */
#define MUT_MAX_CHANGES 4
#define MUT_ROOM(len) ((len) + 64 * MUT_MAX_CHANGES + 1)
size_t mut_mutant(const struct mut_profile *p, unsigned char *buf,
		  const unsigned char *seed, size_t len,
		  const unsigned char *other, size_t olen);

/* The whole file at path (exits with a message when it cannot be read). */
unsigned char *mut_slurp(const char *path, size_t *len);

#endif
