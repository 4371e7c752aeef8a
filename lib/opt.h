/*
 * opt.h - checked parsing of numbers given on command lines.
 * Never prints, never exits: returns 0 or a negative OPT_E_* code.
 */
#ifndef MELPIPE_OPT_H
#define MELPIPE_OPT_H

#include <stdint.h>

enum opt_err {
	OPT_OK = 0,
	OPT_E_SYNTAX = -1, /* not a number, or trailing characters */
	OPT_E_RANGE = -2   /* outside [min, max] */
};

#define OPT_SUFFIX 1 /* accept K, M, G, T (powers of 1024) after the number */

/* Parses a decimal unsigned integer in [min, max]. With OPT_SUFFIX in
 * flags, a K/M/G/T suffix multiplies by a power of 1024. */
int opt_parse_u64(const char *s, uint64_t min, uint64_t max, int flags,
		  uint64_t *out);
/* Parses a finite decimal floating-point number in [min, max]. */
int opt_parse_double(const char *s, double min, double max, double *out);
/* Text of a code: "not a number", "out of range". Never NULL. */
const char *opt_strerror(int err);

#endif
