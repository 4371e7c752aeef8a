/*
 * test-opt - unit tests of lib/opt: checked parsing of command-line
 * numbers (syntax, ranges, K/M/G/T suffixes, overflow).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "../../lib/opt.h"
#include "tap.h"

static void u64_ok(const char *s, int flags, uint64_t want)
{
	uint64_t v = 0;
	int err = opt_parse_u64(s, 0, UINT64_MAX, flags, &v);

	tap_ok(err == OPT_OK && v == want, "u64 '%s'%s parses as %llu", s,
	       flags ? " (suffixes)" : "", (unsigned long long)want);
}

static void u64_err(const char *s, uint64_t min, uint64_t max, int flags,
		    int want)
{
	uint64_t v = 12345;
	int err = opt_parse_u64(s, min, max, flags, &v);

	tap_ok(err == want && v == 12345, "u64 '%s' in [%llu, %llu] is "
	       "refused: %s", s, (unsigned long long)min,
	       (unsigned long long)max, opt_strerror(want));
}

static void dbl_ok(const char *s, double want)
{
	double v = 0;
	int err = opt_parse_double(s, -1e300, 1e300, &v);

	tap_ok(err == OPT_OK && v == want, "double '%s' parses as %g", s,
	       want);
}

static void dbl_err(const char *s, double min, double max, int want)
{
	double v = 42;
	int err = opt_parse_double(s, min, max, &v);

	tap_ok(err == want && v == 42, "double '%s' in [%g, %g] is refused: "
	       "%s", s, min, max, opt_strerror(want));
}

int main(void)
{
	u64_ok("0", 0, 0);
	u64_ok("4096", 0, 4096);
	u64_ok("18446744073709551615", 0, UINT64_MAX);
	u64_ok("1K", OPT_SUFFIX, 1024);
	u64_ok("3k", OPT_SUFFIX, 3072);
	u64_ok("256M", OPT_SUFFIX, 256ull << 20);
	u64_ok("2G", OPT_SUFFIX, 2ull << 30);
	u64_ok("1T", OPT_SUFFIX, 1ull << 40);
	u64_ok("16777215T", OPT_SUFFIX, 16777215ull << 40);
	u64_err("18446744073709551616", 0, UINT64_MAX, 0, OPT_E_RANGE);
	u64_err("16777216T", 0, UINT64_MAX, OPT_SUFFIX, OPT_E_RANGE);
	u64_err("1K", 0, UINT64_MAX, 0, OPT_E_SYNTAX);
	u64_err("1X", 0, UINT64_MAX, OPT_SUFFIX, OPT_E_SYNTAX);
	u64_err("1KB", 0, UINT64_MAX, OPT_SUFFIX, OPT_E_SYNTAX);
	u64_err("", 0, UINT64_MAX, 0, OPT_E_SYNTAX);
	u64_err("-1", 0, UINT64_MAX, 0, OPT_E_SYNTAX);
	u64_err("+1", 0, UINT64_MAX, 0, OPT_E_SYNTAX);
	u64_err(" 1", 0, UINT64_MAX, 0, OPT_E_SYNTAX);
	u64_err("1 ", 0, UINT64_MAX, 0, OPT_E_SYNTAX);
	u64_err("0x10", 0, UINT64_MAX, 0, OPT_E_SYNTAX);
	u64_err("1.5", 0, UINT64_MAX, 0, OPT_E_SYNTAX);
	u64_err("abc", 0, UINT64_MAX, 0, OPT_E_SYNTAX);
	u64_err("0", 1, 10, 0, OPT_E_RANGE);
	u64_err("11", 1, 10, 0, OPT_E_RANGE);
	u64_err("1K", 1, 1023, OPT_SUFFIX, OPT_E_RANGE);
	tap_is(opt_parse_u64(NULL, 0, 1, 0, &(uint64_t){ 0 }), OPT_E_SYNTAX,
	       "u64 NULL is a syntax error");

	dbl_ok("0", 0.0);
	dbl_ok("1.5", 1.5);
	dbl_ok("-80", -80.0);
	dbl_ok("1e-10", 1e-10);
	dbl_ok("2595.0", 2595.0);
	dbl_err("", -1, 1, OPT_E_SYNTAX);
	dbl_err(" 1", -10, 10, OPT_E_SYNTAX);
	dbl_err("1.5x", -10, 10, OPT_E_SYNTAX);
	dbl_err("x", -10, 10, OPT_E_SYNTAX);
	dbl_err("nan", -10, 10, OPT_E_RANGE);
	dbl_err("inf", -1e308, 1e308, OPT_E_RANGE);
	dbl_err("1e400", -1e308, 1e308, OPT_E_RANGE);
	dbl_err("10.5", 0, 10, OPT_E_RANGE);
	dbl_err("-0.1", 0, 10, OPT_E_RANGE);
	tap_is(opt_parse_double(NULL, 0, 1, &(double){ 0 }), OPT_E_SYNTAX,
	       "double NULL is a syntax error");

	tap_is_str(opt_strerror(OPT_OK), "success", "strerror of OPT_OK");
	tap_ok(opt_strerror(-99) != NULL, "strerror of an unknown code is "
	       "not NULL");
	return tap_done();
}
