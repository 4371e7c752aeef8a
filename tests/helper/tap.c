/* tap.c - a tiny TAP emitter for the C unit tests. */
#include "tap.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int n_tests, n_failed;

static int vreport(int cond, const char *fmt, va_list ap)
{
	n_tests++;
	if (!cond)
		n_failed++;
	printf("%sok %d - ", cond ? "" : "not ", n_tests);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	return cond;
}

int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cond, fmt, ap);
	va_end(ap);
	return cond;
}

int tap_is(int64_t got, int64_t want, const char *fmt, ...)
{
	va_list ap;
	int cond = got == want;

	va_start(ap, fmt);
	vreport(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		printf("#   got:  %" PRId64 "\n#   want: %" PRId64 "\n", got,
		       want);
	return cond;
}

int tap_is_u64(uint64_t got, uint64_t want, const char *fmt, ...)
{
	va_list ap;
	int cond = got == want;

	va_start(ap, fmt);
	vreport(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		printf("#   got:  %" PRIu64 " (0x%" PRIx64 ")\n#   want: %"
		       PRIu64 " (0x%" PRIx64 ")\n", got, got, want, want);
	return cond;
}

int tap_is_str(const char *got, const char *want, const char *fmt, ...)
{
	va_list ap;
	int cond = (got == NULL || want == NULL) ? got == want
		   : strcmp(got, want) == 0;

	va_start(ap, fmt);
	vreport(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		printf("#   got:  '%s'\n#   want: '%s'\n",
		       got ? got : "(null)", want ? want : "(null)");
	return cond;
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

int tap_done(void)
{
	printf("1..%d\n", n_tests);
	if (n_failed)
		printf("# failed %d of %d\n", n_failed, n_tests);
	return n_failed ? 1 : 0;
}
