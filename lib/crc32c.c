/*
 * crc32c.c - CRC32C with the SSE4.2 instruction or slicing-by-8 tables.
 *
 * Every record of every stream is checksummed once by its writer and once
 * by each reader, so this is on the hot path of every stage: the hardware
 * path runs three independent crc32 chains over thirds of a block (the
 * instruction has a latency of 3 cycles and a throughput of 1) and joins
 * them with a carry-less "shift by N bytes" done through tables.
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82F63B78u

/* tab[k][b]: CRC of byte b followed by k zero bytes (slicing-by-8). */
static uint32_t tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_init(void)
{
	for (unsigned b = 0; b < 256; b++) {
		uint32_t c = b;

		for (int i = 0; i < 8; i++)
			c = (c >> 1) ^ (POLY & (0u - (c & 1)));
		tab[0][b] = c;
	}
	for (unsigned b = 0; b < 256; b++)
		for (int k = 1; k < 8; k++)
			tab[k][b] = (tab[k - 1][b] >> 8) ^
				    tab[0][tab[k - 1][b] & 0xff];
}

static uint64_t load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v; /* the table code below assumes a little-endian host */
}

/* Raw (not pre/post-inverted) table update. */
static uint32_t sw_update(uint32_t c, const unsigned char *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint64_t v = load64(p) ^ c;

		c = tab[7][v & 0xff] ^ tab[6][(v >> 8) & 0xff] ^
		    tab[5][(v >> 16) & 0xff] ^ tab[4][(v >> 24) & 0xff] ^
		    tab[3][(v >> 32) & 0xff] ^ tab[2][(v >> 40) & 0xff] ^
		    tab[1][(v >> 48) & 0xff] ^ tab[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xff];
	return c;
}

uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&tab_once, tab_init);
	return ~sw_update(~crc, buf, len);
}

#if defined(__x86_64__)

/*
 * The hardware path. A block of 3*L bytes is processed as three
 * independent chains; chain a's CRC is then moved past the 2*L bytes of
 * chains b and c by multiplying it by x^(8*2*L) mod P, and chain b's past
 * L bytes. Multiplication by a fixed power is linear over GF(2), so it is
 * a table lookup per byte of the 32-bit value. Two block sizes: 3 x 4 KiB
 * for large payloads and 3 x 256 bytes for records of a few hundred
 * bytes (segments, single feature frames), which are common too.
 */
#define LANE_BIG 4096u
#define LANE_SMALL 256u

struct shift_tables {
	uint32_t by1[4][256]; /* advance a CRC over LANE zero bytes */
	uint32_t by2[4][256]; /* over 2*LANE zero bytes */
};

static struct shift_tables big_shift, small_shift;
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static uint32_t multmodp(uint32_t a, uint32_t b);
static uint32_t x8nmodp(uint64_t len);

/* Builds t so that zeros(c, n) == t[0][c&255] ^ t[1][c>>8&255] ^ ...,
 * from the images of the 32 basis vectors: c advanced over n zero bytes
 * is c x^(8n) mod P, one product each (advancing bit by bit over the
 * 13 KB of zeros of the four tables would cost every process 4 ms at its
 * first checksum). */
static void shift_build(uint32_t t[4][256], size_t n)
{
	uint32_t op = x8nmodp(n), basis[32];

	for (int i = 0; i < 32; i++)
		basis[i] = multmodp(op, 1u << i);
	for (int k = 0; k < 4; k++)
		for (unsigned b = 0; b < 256; b++) {
			uint32_t v = 0;

			for (int i = 0; i < 8; i++)
				if (b & (1u << i))
					v ^= basis[8 * k + i];
			t[k][b] = v;
		}
}

static void shift_init(void)
{
	shift_build(big_shift.by1, LANE_BIG);
	shift_build(big_shift.by2, 2 * LANE_BIG);
	shift_build(small_shift.by1, LANE_SMALL);
	shift_build(small_shift.by2, 2 * LANE_SMALL);
}

static uint32_t shift(uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^
	       t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t hw_chain(uint32_t c, const unsigned char *p, size_t len)
{
	uint64_t c64 = c;

	while (len >= 8) {
		c64 = __builtin_ia32_crc32di(c64, load64(p));
		p += 8;
		len -= 8;
	}
	c = (uint32_t)c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}

/* Consumes whole blocks of 3*lane bytes from *pp, three chains at a time
 * (inlined so that lane is a constant in each copy). */
__attribute__((target("sse4.2"), always_inline))
static inline uint32_t hw_blocks(uint32_t c, const unsigned char **pp,
				 size_t *plen, size_t lane,
				 uint32_t by1[4][256], uint32_t by2[4][256])
{
	const unsigned char *p = *pp;
	size_t len = *plen;

	while (len >= 3 * lane) {
		uint64_t a = c, b = 0, d = 0;

		for (size_t i = 0; i < lane; i += 8) {
			a = __builtin_ia32_crc32di(a, load64(p + i));
			b = __builtin_ia32_crc32di(b, load64(p + lane + i));
			d = __builtin_ia32_crc32di(d, load64(p + 2 * lane + i));
		}
		/* Raw CRCs are linear: crc(A.B.D) = shift(A, |B|+|D|) ^
		 * shift(B, |D|) ^ D when B and D start from 0. */
		c = shift(by2, (uint32_t)a) ^ shift(by1, (uint32_t)b) ^
		    (uint32_t)d;
		p += 3 * lane;
		len -= 3 * lane;
	}
	*pp = p;
	*plen = len;
	return c;
}

__attribute__((target("sse4.2")))
static uint32_t hw_update(uint32_t c, const unsigned char *p, size_t len)
{
	if (len >= 3 * LANE_SMALL) {
		pthread_once(&shift_once, shift_init);
		c = hw_blocks(c, &p, &len, LANE_BIG, big_shift.by1,
			      big_shift.by2);
		c = hw_blocks(c, &p, &len, LANE_SMALL, small_shift.by1,
			      small_shift.by2);
	}
	return hw_chain(c, p, len);
}

int crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	if (__builtin_cpu_supports("sse4.2"))
		return ~hw_update(~crc, buf, len);
	return crc32c_portable(crc, buf, len);
}

#else /* not x86-64: tables only */

int crc32c_hw_available(void)
{
	return 0;
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_portable(crc, buf, len);
}

#endif

/*
 * Combining: CRCs are linear over GF(2), so the CRC of a then b follows
 * from crc(a), crc(b) and b's length alone: crc(a b) = crc(a) x^(8 |b|)
 * mod P + crc(b) (the initial value and final XOR cancel out, as in
 * zlib's crc32_combine, whose method this is). Polynomials are
 * reflected: bit 31 is x^0.
 */
/* a * b mod P, bit by bit without branches on the values (a branch per
 * bit was mispredicted about half the time). */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (int i = 0; i < 32; i++) {
		p ^= b & (0u - (a >> 31)); /* a's x^i times b */
		a <<= 1;
		b = (b >> 1) ^ (POLY & (0u - (b & 1))); /* b x mod P */
	}
	return p;
}

/* x^(2^k) mod P, for every k a 64-bit length needs (3 + 63): zlib's
 * table of 32 repeats for its polynomial, whose x has order 2^32 - 1; for
 * CRC32C's the powers repeat every 31, so a table used modulo 32 gave a
 * wrong combine for a second part of 512 MiB or more. */
#define X2N 67
static uint32_t x2n_table[X2N];
static pthread_once_t x2n_once = PTHREAD_ONCE_INIT;

static void x2n_init(void)
{
	uint32_t p = 1u << 30; /* x^1 */

	x2n_table[0] = p;
	for (int k = 1; k < X2N; k++)
		x2n_table[k] = p = multmodp(p, p);
}

/* x^(8 len) mod P. */
static uint32_t x8nmodp(uint64_t len)
{
	uint32_t p = 1u << 31; /* x^0 */
	unsigned k = 3;        /* x^(8 n) = x^(2^3 n) */

	pthread_once(&x2n_once, x2n_init);
	for (; len; len >>= 1, k++)
		if (len & 1)
			p = multmodp(x2n_table[k], p);
	return p;
}

uint32_t crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
	/* A stream's payloads mostly share a length: the power for the last
	 * one, per thread, makes a combine one product instead of one for
	 * each bit of the length set. */
	static _Thread_local uint64_t last_len;
	static _Thread_local uint32_t last_op = 1u << 31; /* x^(8 * 0) */

	if (len2 != last_len) {
		last_op = x8nmodp(len2);
		last_len = len2;
	}
	return multmodp(last_op, crc1) ^ crc2;
}
