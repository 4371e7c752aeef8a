/*
 * sha1.c - SHA-1 (FIPS 180-4), for the Speech Commands hash split, which
 * must reproduce TensorFlow's which_set() bit for bit, and for the job's
 * fingerprint (shard.c), which formats/record.md defines as a SHA-1. Not
 * for anything that needs a secure hash.
 *
 * Where the processor has the SHA extensions (x86-64), the blocks go
 * through them: the fingerprint hashes every key of the listing before
 * the stream's header can go out, and the portable blocks were the
 * largest part of that pass.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "wavcat.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define SHA1_HW 1
#endif

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void sha1_block(uint32_t h[5], const unsigned char *p)
{
	uint32_t w[80], a, b, c, d, e, f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = load_be32(p + 4 * i);
	for (; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0];
	b = h[1];
	c = h[2];
	d = h[3];
	e = h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5A827999u;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ED9EBA1u;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8F1BBCDCu;
		} else {
			f = b ^ c ^ d;
			k = 0xCA62C1D6u;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

#ifdef SHA1_HW
/* One SHA1RNDS4 group: four rounds with function f, message words
 * W[4g..4g+3] made from the four groups before (kept in w[g % 4]) where
 * g >= 4, and the round's E from the state before the previous group. */
#define SHA1_GROUP(f)                                                     \
	do {                                                              \
		if (g >= 4)                                               \
			w[g & 3] = _mm_sha1msg2_epu32(                    \
				_mm_xor_si128(_mm_sha1msg1_epu32(         \
						      w[g & 3],           \
						      w[(g + 1) & 3]),    \
					      w[(g + 2) & 3]),            \
				w[(g + 3) & 3]);                          \
		e = g ? _mm_sha1nexte_epu32(prev, w[g & 3]) :             \
			_mm_add_epi32(e0, w[0]);                          \
		prev = abcd;                                              \
		abcd = _mm_sha1rnds4_epu32(abcd, e, f);                   \
		g++;                                                      \
	} while (0)

__attribute__((target("sha,ssse3,sse4.1")))
static void sha1_block_hw(uint32_t h[5], const unsigned char *p)
{
	/* the block's big-endian words, first word in the top lane */
	const __m128i swap = _mm_set_epi64x(0x0001020304050607LL,
					    0x08090a0b0c0d0e0fLL);
	__m128i abcd, e0, e, prev, w[4];
	int g = 0;

	abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0x1B);
	e0 = _mm_set_epi32((int)h[4], 0, 0, 0);
	for (int i = 0; i < 4; i++)
		w[i] = _mm_shuffle_epi8(
			_mm_loadu_si128((const __m128i *)(p + 16 * i)), swap);
	prev = abcd;
	while (g < 5)
		SHA1_GROUP(0);
	while (g < 10)
		SHA1_GROUP(1);
	while (g < 15)
		SHA1_GROUP(2);
	while (g < 20)
		SHA1_GROUP(3);
	e0 = _mm_sha1nexte_epu32(prev, e0);
	abcd = _mm_add_epi32(abcd, _mm_shuffle_epi32(
			     _mm_loadu_si128((const __m128i *)h), 0x1B));
	_mm_storeu_si128((__m128i *)h, _mm_shuffle_epi32(abcd, 0x1B));
	h[4] = (uint32_t)_mm_extract_epi32(e0, 3);
}

/* CPUID: SHA (leaf 7, EBX bit 29), SSSE3 and SSE4.1 (leaf 1, ECX bits 9
 * and 19). Read from CPUID itself: not every compiler's
 * __builtin_cpu_supports() knows "sha". */
static int cpu_has_sha(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) ||
	    !(c & (1u << 19)))
		return 0;
	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	return (b >> 29) & 1;
}
#endif

int sha1_hw_available(void)
{
#ifdef SHA1_HW
	/* asked once: CPUID traps to the hypervisor in a virtual machine,
	 * and the hash split starts a digest for every clip */
	static _Atomic int known = -1;
	int v = atomic_load_explicit(&known, memory_order_relaxed);

	if (v < 0) {
		v = cpu_has_sha();
		atomic_store_explicit(&known, v, memory_order_relaxed);
	}
	return v;
#else
	return 0;
#endif
}

static void block(struct sha1_ctx *c, const unsigned char *p)
{
#ifdef SHA1_HW
	if (c->hw) {
		sha1_block_hw(c->h, p);
		return;
	}
#endif
	sha1_block(c->h, p);
}

void sha1_init(struct sha1_ctx *c)
{
	static const uint32_t h0[5] = { 0x67452301u, 0xEFCDAB89u,
					0x98BADCFEu, 0x10325476u,
					0xC3D2E1F0u };

	memcpy(c->h, h0, sizeof(h0));
	c->len = 0;
	c->fill = 0;
	c->hw = sha1_hw_available();
}

void sha1_update(struct sha1_ctx *c, const void *data, size_t len)
{
	const unsigned char *p = data;

	c->len += len;
	if (c->fill > 0) { /* a partial block first */
		size_t n = 64 - c->fill < len ? 64 - c->fill : len;

		memcpy(c->buf + c->fill, p, n);
		c->fill += n;
		p += n;
		len -= n;
		if (c->fill < 64)
			return;
		block(c, c->buf);
		c->fill = 0;
	}
	/* whole blocks straight from the caller's bytes */
	for (; len >= 64; p += 64, len -= 64)
		block(c, p);
	if (len > 0)
		memcpy(c->buf, p, len);
	c->fill = len;
}

void sha1_final(struct sha1_ctx *c, unsigned char out[20])
{
	unsigned char pad[72] = { 0x80 };
	uint64_t bits = c->len * 8;
	size_t npad;
	int i;

	/* 0x80, zeros up to 56 mod 64, then the length in bits. */
	npad = (c->fill < 56 ? 56 : 120) - c->fill;
	for (i = 0; i < 8; i++)
		pad[npad + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
	sha1_update(c, pad, npad + 8);
	for (i = 0; i < 20; i++)
		out[i] = (unsigned char)(c->h[i / 4] >> (24 - 8 * (i % 4)));
}
