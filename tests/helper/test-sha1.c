/*
 * test-sha1 - unit tests of wavcat's SHA-1 (tools/wavcat/sha1.c), behind
 * the job's fingerprint and the Speech Commands hash split: the FIPS 180
 * example vectors, and the blocks of the SHA extensions (where this
 * processor has them) against the portable code, over many lengths and
 * ways of cutting the input into updates.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/wavcat/wavcat.h"
#include "tap.h"
#include "xorshift.h"

static void hex(const unsigned char md[20], char out[41])
{
	for (int i = 0; i < 20; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* The digest of n bytes at p, given in updates of at most `step` bytes
 * (0: one update), through the SHA extensions or not. */
static void digest(const void *p, size_t n, size_t step, int hw,
		   char out[41])
{
	struct sha1_ctx c;
	unsigned char md[20];
	const unsigned char *b = p;

	sha1_init(&c);
	c.hw = hw;
	while (n > 0) {
		size_t k = step && step < n ? step : n;

		sha1_update(&c, b, k);
		b += k;
		n -= k;
	}
	sha1_final(&c, md);
	hex(md, out);
}

static void test_vectors(int hw, const char *path)
{
	static const struct {
		const char *msg, *want;
	} v[] = {
		{ "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
		{ "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
		  "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  "a49b2446a02c645bf419f995b67091253a04a259" },
	};
	char got[41];
	char *a = malloc(1000000);

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		digest(v[i].msg, strlen(v[i].msg), 0, hw, got);
		tap_is_str(got, v[i].want, "%s: FIPS 180 example %zu", path,
			   i + 1);
	}
	if (!a) {
		tap_ok(0, "out of memory");
		return;
	}
	memset(a, 'a', 1000000);
	digest(a, 1000000, 0, hw, got);
	tap_is_str(got, "34aa973cd4c4daa4f61eeb2bdbad27316534016f",
		   "%s: a million 'a' in one update", path);
	digest(a, 1000000, 999, hw, got);
	tap_is_str(got, "34aa973cd4c4daa4f61eeb2bdbad27316534016f",
		   "%s: a million 'a' in updates of 999 bytes", path);
	free(a);
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
	return xorshift64(&rng_state);
}

/* Every length 0..700 and several cuttings: the SHA extensions' digest
 * against the portable one. */
static void test_against_portable(void)
{
	unsigned char buf[700];
	char want[41], got[41];
	size_t bad = 0, runs = 0;
	static const size_t steps[] = { 0, 1, 3, 63, 64, 65, 130 };

	for (size_t n = 0; n <= sizeof(buf); n++) {
		for (size_t i = 0; i < n; i++)
			buf[i] = (unsigned char)rng();
		digest(buf, n, 0, 0, want);
		for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]);
		     s++) {
			digest(buf, n, steps[s], 1, got);
			runs++;
			if (strcmp(got, want) != 0 && bad++ < 5)
				tap_diag("%zu bytes in steps of %zu: %s, "
					 "portable %s", n, steps[s], got,
					 want);
		}
	}
	tap_ok(bad == 0, "SHA extensions equal the portable code in %zu "
	       "digests of 0 to %zu bytes", runs, sizeof(buf));
}

int main(void)
{
	int hw = sha1_hw_available();

	tap_diag("SHA extensions: %s", hw ? "yes" : "no (both paths below "
	         "are the portable code)");
	test_vectors(0, "portable");
	test_vectors(hw, hw ? "SHA extensions" : "portable again");
	if (hw)
		test_against_portable();
	return tap_done();
}
