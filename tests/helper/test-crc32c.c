/*
 * test-crc32c - unit tests of lib/crc32c: known vectors (the check value
 * and the iSCSI vectors of RFC 3720 B.4), and both code paths against a
 * bit-at-a-time reference written from the definition, over many lengths,
 * alignments and split points.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/crc32c.h"
#include "tap.h"
#include "xorshift.h"

/* The definition: reflected, polynomial 0x82F63B78, init and final XOR
 * 0xFFFFFFFF, one bit at a time. */
static uint32_t ref_crc(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int i = 0; i < 8; i++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
}

/* xorshift: reproducible test data */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	return xorshift64(&rng_state);
}

static void test_vectors(void)
{
	unsigned char buf[48];
	/* RFC 3720 B.4: an iSCSI read command PDU. */
	static const unsigned char pdu[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};

	tap_is_u64(crc32c(0, "123456789", 9), 0xe3069283u,
		   "check value of \"123456789\"");
	tap_is_u64(crc32c_portable(0, "123456789", 9), 0xe3069283u,
		   "check value, portable path");
	tap_is_u64(crc32c(0, NULL, 0), 0, "empty input gives 0");
	tap_is_u64(crc32c(0x12345678u, NULL, 0), 0x12345678u,
		   "empty extension keeps the value");

	memset(buf, 0, 32);
	tap_is_u64(crc32c(0, buf, 32), 0x8a9136aau, "RFC 3720: 32 zeros");
	memset(buf, 0xff, 32);
	tap_is_u64(crc32c(0, buf, 32), 0x62a8ab43u, "RFC 3720: 32 0xff");
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	tap_is_u64(crc32c(0, buf, 32), 0x46dd794eu,
		   "RFC 3720: 32 increasing");
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	tap_is_u64(crc32c(0, buf, 32), 0x113fdb5cu,
		   "RFC 3720: 32 decreasing");
	tap_is_u64(crc32c(0, pdu, 48), 0xd9963a56u,
		   "RFC 3720: iSCSI read command");
	tap_is_u64(crc32c_portable(0, pdu, 48), 0xd9963a56u,
		   "RFC 3720: iSCSI read command, portable path");
}

/* Lengths around the 8-byte words and the 3 x 4096-byte blocks of the
 * hardware path, at every alignment. */
static void test_against_reference(void)
{
	static const size_t lens[] = {
		0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 1000,
		4095, 4096, 4097, 8191, 12287, 12288, 12289, 12295, 24576,
		24577, 36871, 65536, 100003, 1 << 20
	};
	size_t max = (1 << 20) + 16;
	unsigned char *buf = malloc(max);
	int bad_hw = 0, bad_sw = 0, n = 0;

	for (size_t i = 0; i < max; i++)
		buf[i] = (unsigned char)rng();
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t a = 0; a < 8; a++) {
			uint32_t want = ref_crc(buf + a, lens[l]);

			bad_hw += crc32c(0, buf + a, lens[l]) != want;
			bad_sw += crc32c_portable(0, buf + a, lens[l]) != want;
			n++;
		}
	tap_diag("hardware crc32 instruction: %s",
		 crc32c_hw_available() ? "yes" : "no");
	tap_is(bad_hw, 0, "crc32c() equals the definition (%d cases)", n);
	tap_is(bad_sw, 0, "portable path equals the definition (%d cases)",
	       n);
	free(buf);
}

/* crc(a then b) == crc32c(crc32c(0, a), b) at random split points. */
static void test_incremental(void)
{
	size_t len = 3 * 4096 * 8 + 123;
	unsigned char *buf = malloc(len);
	uint32_t whole;
	int bad = 0, bad_sw = 0;

	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)rng();
	whole = ref_crc(buf, len);
	for (int t = 0; t < 200; t++) {
		size_t a = rng() % (len + 1), b = a + rng() % (len - a + 1);
		uint32_t c = crc32c(0, buf, a);

		c = crc32c(c, buf + a, b - a);
		bad += crc32c(c, buf + b, len - b) != whole;
		c = crc32c_portable(0, buf, a);
		c = crc32c_portable(c, buf + a, b - a);
		bad_sw += crc32c_portable(c, buf + b, len - b) != whole;
	}
	tap_is(bad, 0, "three-piece updates equal one pass");
	tap_is(bad_sw, 0, "three-piece updates equal one pass, portable");
	free(buf);
}

/* crc32c_combine(crc(a), crc(b), |b|) == crc(a b), against the bitwise
 * definition, at random split points and over 2 MiB of zeros. */
static void test_combine(void)
{
	size_t len = 3 * 4096 * 8 + 123;
	unsigned char *buf = malloc(len);
	int bad = 0;

	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)rng();
	for (int t = 0; t < 300; t++) {
		size_t a = t < 3 ? (size_t)t : rng() % (len + 1);
		size_t b = t % 5 == 0 ? len - a : rng() % (len - a + 1);
		uint32_t ca = ref_crc(buf, a), cb = ref_crc(buf + a, b);

		bad += crc32c_combine(ca, cb, b) != ref_crc(buf, a + b);
	}
	tap_is(bad, 0, "combine(crc(a), crc(b), |b|) is crc(a b)");
	/* runs of one length and changes between them, 0 among them (a
	 * combine keeps the power for the last length it saw): each
	 * against the definition */
	bad = 0;
	for (int t = 0; t < 60; t++) {
		static const size_t lens[] = { 81920, 81920, 7, 81920, 0, 0,
					       7, 7, 1, 81920 };
		size_t b = lens[t % 10], a = rng() % (len - b + 1);
		uint32_t ca = ref_crc(buf, a), cb = ref_crc(buf + a, b);

		bad += crc32c_combine(ca, cb, b) != ref_crc(buf, a + b);
	}
	tap_is(bad, 0, "combines of repeated and changing lengths");
	free(buf);
	{
		/* crc of 2 MiB of zeros: once directly, once combined */
		size_t n = 1 << 20;
		unsigned char *z = calloc(2 * n, 1);
		uint32_t half = ref_crc(z, n), whole = ref_crc(z, 2 * n);

		tap_is_u64(crc32c_combine(half, half, n), whole,
			   "combine over 1 MiB of zeros");
		tap_is_u64(crc32c_combine(0x12345678u, 0, 0), 0x12345678u,
			   "combine with nothing after it");
		/* second parts of 2^29 bytes and more (the lengths where a
		 * table of powers used modulo 32 went wrong): zeros, calloc'ed
		 * (pages the kernel maps only when written) */
		{
			static const size_t lens[] = { (1u << 29) - 8,
						       1u << 29,
						       (1u << 29) + 8 };
			unsigned char *zz = calloc(lens[2], 1);
			int wrong = 0;

			if (!zz)
				exit(2);
			for (int i = 0; i < 3; i++)
				wrong += crc32c_combine(crc32c(0, "abc", 3),
							crc32c(0, zz, lens[i]),
							lens[i]) !=
					 crc32c(crc32c(0, "abc", 3), zz,
						lens[i]);
			free(zz);
			tap_is(wrong, 0, "combine over 512 MiB (and 8 bytes "
			       "either side) of zeros");
		}
		free(z);
	}
}

int main(void)
{
	test_vectors();
	test_against_reference();
	test_incremental();
	test_combine();
	return tap_done();
}
