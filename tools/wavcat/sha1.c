/*
 * sha1.c - SHA-1 (FIPS 180-4), only for the Speech Commands hash split,
 * which must reproduce TensorFlow's which_set() bit for bit. Not for
 * anything that needs a secure hash.
 */
#include <stdint.h>
#include <string.h>

#include "wavcat.h"

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

void sha1_init(struct sha1_ctx *c)
{
	static const uint32_t h0[5] = { 0x67452301u, 0xEFCDAB89u,
					0x98BADCFEu, 0x10325476u,
					0xC3D2E1F0u };

	memcpy(c->h, h0, sizeof(h0));
	c->len = 0;
	c->fill = 0;
}

void sha1_update(struct sha1_ctx *c, const void *data, size_t len)
{
	const unsigned char *p = data;

	c->len += len;
	while (len > 0) {
		size_t n = 64 - c->fill;

		if (n > len)
			n = len;
		memcpy(c->buf + c->fill, p, n);
		c->fill += n;
		p += n;
		len -= n;
		if (c->fill == 64) {
			sha1_block(c->h, c->buf);
			c->fill = 0;
		}
	}
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
