/*
 * mutate.c - see mutate.h.
 */
#include "mutate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xorshift.h"

static uint64_t rng_state = 0x853c49e6748fea9bull;

uint64_t mut_rng(void)
{
	return xorshift64(&rng_state);
}

/* Where a change goes: with a head, half the time within it. */
static size_t pick(const struct mut_profile *p, size_t len)
{
	if (len == 0)
		return 0;
	if (p->head && mut_rng() % 2)
		return mut_rng() % (len < p->head ? len : p->head);
	return mut_rng() % len;
}

size_t mut_apply(const struct mut_profile *p, unsigned char *buf, size_t len,
		 const unsigned char *other, size_t olen)
{
	size_t at = pick(p, len), n;

	switch (mut_rng() % 7) {
	case 0: /* flip a bit */
		if (len)
			buf[at] ^= (unsigned char)(1u << (mut_rng() % 8));
		return len;
	case 1: /* set a byte to an interesting value */
		if (len)
			buf[at] = p->bytes[mut_rng() % p->n_bytes];
		return len;
	case 2: /* insert bytes */
		n = 1 + mut_rng() % 16;
		memmove(buf + at + n, buf + at, len - at);
		for (size_t i = 0; i < n; i++)
			buf[at + i] = (unsigned char)mut_rng();
		return len + n;
	case 3: /* delete bytes */
		n = len - at < 16 ? len - at : 1 + mut_rng() % 16;
		memmove(buf + at, buf + at + n, len - at - n);
		return len - n;
	case 4: /* cut */
		return at;
	case 5: /* a field (a length, a rate, a count) set to an
		   interesting value, little-endian */
		if (len >= 4 && at <= len - 4)
			memcpy(buf + at, p->words + mut_rng() % p->n_words,
			       p->short_words && mut_rng() % 2 ? 2 : 4);
		return len;
	default: /* splice: the tail of another input */
		n = olen ? mut_rng() % olen : 0;
		n = olen - n < 64 ? olen - n : 64;
		memcpy(buf + at, other + olen - n, n);
		return at + n;
	}
}

size_t mut_mutant(const struct mut_profile *p, unsigned char *buf,
		  const unsigned char *seed, size_t len,
		  const unsigned char *other, size_t olen)
{
	int changes = 1 + (int)(mut_rng() % MUT_MAX_CHANGES);

	memcpy(buf, seed, len);
	for (int c = 0; c < changes; c++)
		len = mut_apply(p, buf, len, other, olen);
	return len;
}

unsigned char *mut_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long size;

	if (f == NULL || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0) {
		perror(path);
		exit(1);
	}
	rewind(f);
	buf = malloc((size_t)size + 1);
	if (buf == NULL || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		perror(path);
		exit(1);
	}
	fclose(f);
	*len = (size_t)size;
	return buf;
}
