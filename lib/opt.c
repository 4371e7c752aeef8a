/* opt.c - checked parsing of numbers given on command lines. */
#include "opt.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

int opt_parse_u64(const char *s, uint64_t min, uint64_t max, int flags,
		  uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (s == NULL || !isdigit((unsigned char)*s))
		return OPT_E_SYNTAX;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return OPT_E_RANGE;
	if (*end != '\0' && (flags & OPT_SUFFIX)) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return OPT_E_SYNTAX;
		}
		end++;
	}
	if (*end != '\0')
		return OPT_E_SYNTAX;
	if (shift && v > (UINT64_MAX >> shift))
		return OPT_E_RANGE;
	v <<= shift;
	if (v < min || v > max)
		return OPT_E_RANGE;
	*out = v;
	return OPT_OK;
}

int opt_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return OPT_E_SYNTAX;
	errno = 0;
	v = strtod(s, &end);
	if (*end != '\0' || end == s)
		return OPT_E_SYNTAX;
	if (errno == ERANGE || !isfinite(v))
		return OPT_E_RANGE;
	if (v < min || v > max)
		return OPT_E_RANGE;
	*out = v;
	return OPT_OK;
}

const char *opt_strerror(int err)
{
	switch (err) {
	case OPT_OK: return "success";
	case OPT_E_SYNTAX: return "not a number";
	case OPT_E_RANGE: return "out of range";
	}
	return "unknown error";
}
