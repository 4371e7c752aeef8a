/*
 * cuda_crc_dev.h - the arithmetic of the CUDA backend's CRC32C kernel
 * (cuda_crc.cu), written once as __host__ __device__ code: the kernel runs
 * it on the GPU, and the CPU emulation (emu_crc32c in bench/cuda_emu.cu,
 * which the mock CUDA runtime runs in the kernel's place) runs the very
 * same functions for each simulated thread, so that the split and the
 * combining are checked where there is no GPU.
 *
 * The CRC is lib/crc32c.h's: CRC32C, reflected polynomial P = 0x82F63B78,
 * initial value and final XOR 0xFFFFFFFF. "Raw" CRCs below start from 0
 * and are not inverted; they are linear over GF(2): the raw CRC of A then
 * B is shift(raw(A), |B|) ^ raw(B), where shift(c, n) = c x^(8n) mod P
 * (mc_mul, reflected: bit 31 is x^0), and leading zero bytes leave a raw
 * CRC unchanged. The initial value is folded into the data: the CRC of a
 * payload of 4 bytes or more is ~raw(the payload with its first 4 bytes
 * inverted).
 *
 * The split. A payload at address a, len >= 16 bytes, is read in chunks
 * of MEL_CRC_W = 16 bytes at 16-byte aligned addresses, from a0 = a & ~15
 * up to the last aligned address at or below a + len: m chunks, chunk 0's
 * bytes before a read as zeros, then a tail of fewer than 16 bytes. The
 * chunks form segments of MEL_CRC_SEG chunks (256 KiB), one block of
 * MEL_CRC_T threads each. A segment is read in steps of MEL_CRC_T chunks
 * (2 KiB, one 16-byte load per thread: a warp reads 512 consecutive bytes)
 * as if zero chunks were put in front of it to make whole steps, so that
 * thread j's chunk ends, at every step, MEL_CRC_W (T - 1 - j) bytes
 * before a step's end. Thread j keeps the raw CRC of its chunks and the
 * zeros between them (Horner: acc = shift(acc, 2 KiB) ^ raw(chunk), one
 * table pass), shifts it over the bytes after its last chunk (one multiply
 * by a constant of its own) and the block XORs its threads' values: the
 * raw CRC of the segment. A segment that is not the last is shifted over
 * the bytes after it (one multiply, its power of x made by a warp); the
 * last one takes the tail bytes and the final XOR. The payload's CRC is
 * the XOR of its segments' values (atomicXor on the GPU). A payload of
 * fewer than 16 bytes is one thread's byte loop.
 *
 * C++17 (constexpr tables, in global memory on the GPU, copied to shared
 * memory by each block); included only by .cu files.
 */
#ifndef MELPIPE_GPUMEL_CUDA_CRC_DEV_H
#define MELPIPE_GPUMEL_CUDA_CRC_DEV_H

#include <stdint.h>

#include <vector_functions.h>
#include <vector_types.h>

#include "cuda_mel.h"

#define MC __host__ __device__ inline

#define MEL_CRC_POLY 0x82F63B78u
/* Threads of a block. */
#define MEL_CRC_T 128
/* Bytes of a chunk: one 16-byte load. */
#define MEL_CRC_W 16
/* Bytes of a step of the block. */
#define MEL_CRC_TILE (MEL_CRC_T * MEL_CRC_W)
/* Chunks of a segment: 128 steps, 256 KiB. */
#define MEL_CRC_SEG ((uint64_t)128 * MEL_CRC_T)
/* x^(2^j) for j < 67: bit j of a 64-bit byte count is x^(2^(j + 3)). */
#define MEL_CRC_X2N 67

/* The tables: tab[k], k < 8, the raw CRC of byte b then k zero bytes
 * (slicing by 8); tab[8 + i][b] = shift(b << 8i, MEL_CRC_TILE - MEL_CRC_W)
 * (the gap between a thread's chunks, a byte of the register at a time).
 * lane[j] = x^(8 MEL_CRC_W (T - 1 - j)): shifts thread j's CRC over the
 * chunks of the higher threads of its last step. */
#define MC_GAP 8
#define MC_TABS 12

typedef struct alignas(16) mel_crc_tab {
	uint32_t tab[MC_TABS][256];
	uint32_t lane[MEL_CRC_T];
	uint32_t x2n[MEL_CRC_X2N];
} mel_crc_tab;

/* a * b mod P (reflected, as lib/crc32c.c's multmodp). */
__host__ __device__ constexpr uint32_t mc_mul(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (uint32_t m = 1u << 31; m; m >>= 1) {
		if (a & m)
			p ^= b;
		b = b & 1 ? (b >> 1) ^ MEL_CRC_POLY : b >> 1;
	}
	return p;
}

/* x^(8 n) mod P from the table of x^(2^j) (bit j of n one at a time). */
__host__ __device__ constexpr uint32_t mc_xpow8(const uint32_t *x2n,
						 uint64_t n)
{
	uint32_t p = 1u << 31; /* x^0 */

	for (int j = 0; n; n >>= 1, j++)
		if (n & 1)
			p = mc_mul(p, x2n[j + 3]);
	return p;
}

__host__ __device__ constexpr mel_crc_tab mel_crc_tab_make(void)
{
	mel_crc_tab t = {};
	uint32_t gap = 0;

	for (uint32_t b = 0; b < 256; b++) {
		uint32_t c = b;

		for (int i = 0; i < 8; i++)
			c = (c >> 1) ^ (MEL_CRC_POLY & (0u - (c & 1)));
		t.tab[0][b] = c;
	}
	for (int k = 1; k < 8; k++)
		for (uint32_t b = 0; b < 256; b++)
			t.tab[k][b] = (t.tab[k - 1][b] >> 8) ^
				      t.tab[0][t.tab[k - 1][b] & 0xff];
	t.x2n[0] = 1u << 30; /* x^1 */
	for (int j = 1; j < MEL_CRC_X2N; j++)
		t.x2n[j] = mc_mul(t.x2n[j - 1], t.x2n[j - 1]);
	gap = mc_xpow8(t.x2n, MEL_CRC_TILE - MEL_CRC_W);
	for (int i = 0; i < 4; i++)
		for (uint32_t b = 0; b < 256; b++)
			t.tab[MC_GAP + i][b] = mc_mul(b << (8 * i), gap);
	for (int j = 0; j < MEL_CRC_T; j++)
		t.lane[j] = mc_xpow8(t.x2n, (uint64_t)MEL_CRC_W *
					      (MEL_CRC_T - 1 - j));
	return t;
}

/* One byte into the raw CRC c (t: tab[0..MC_TABS) flattened). */
MC uint32_t mc_byte(const uint32_t *t, uint32_t c, uint32_t byte)
{
	return (c >> 8) ^ t[(c ^ byte) & 0xff];
}

/* Slicing by 8: the raw CRC c then the bytes of lo and hi (little end
 * first). */
MC uint32_t mc_eight(const uint32_t *t, uint32_t c, uint32_t lo, uint32_t hi)
{
	c ^= lo;
	return t[7 * 256 + (c & 0xff)] ^ t[6 * 256 + ((c >> 8) & 0xff)] ^
	       t[5 * 256 + ((c >> 16) & 0xff)] ^ t[4 * 256 + (c >> 24)] ^
	       t[3 * 256 + (hi & 0xff)] ^ t[2 * 256 + ((hi >> 8) & 0xff)] ^
	       t[1 * 256 + ((hi >> 16) & 0xff)] ^ t[hi >> 24];
}

/* A thread's step: its CRC moved over the gap to its next chunk d, then
 * d: shift(acc, MEL_CRC_TILE) ^ raw(d). */
MC uint32_t mc_step(const uint32_t *t, uint32_t acc, uint4 d)
{
	const uint32_t *g = t + MC_GAP * 256;
	uint32_t c = g[acc & 0xff] ^ g[256 + ((acc >> 8) & 0xff)] ^
		     g[512 + ((acc >> 16) & 0xff)] ^ g[768 + (acc >> 24)];

	c = mc_eight(t, c, d.x, d.y);
	return mc_eight(t, c, d.z, d.w);
}

/* Where a payload's chunks lie. */
typedef struct mc_geom {
	const unsigned char *a;   /* the payload's first byte */
	const unsigned char *a0;  /* a & ~15 */
	uint32_t mis;             /* a - a0 */
	uint32_t tail;            /* bytes after the chunks (all of them when
				     m == 0) */
	uint64_t len, m;          /* bytes; chunks (0: len < 16) */
	uint64_t nseg;            /* segments (1 when m == 0) */
} mc_geom;

MC mc_geom mc_geom_of(const unsigned char *base, uint64_t off, uint64_t len)
{
	mc_geom g;
	uintptr_t a = (uintptr_t)(base + off);

	g.a = base + off;
	g.mis = (uint32_t)(a & (MEL_CRC_W - 1));
	g.a0 = g.a - g.mis;
	g.len = len;
	g.m = len < MEL_CRC_W ? 0 : (g.mis + len) / MEL_CRC_W;
	g.tail = (uint32_t)(len - (g.m ? g.m * MEL_CRC_W - g.mis : 0));
	g.nseg = g.m ? (g.m + MEL_CRC_SEG - 1) / MEL_CRC_SEG : 1;
	return g;
}

/* Segment k's chunks [c0, c0 + count), its steps and its zero chunks in
 * front (pad < MEL_CRC_T). */
typedef struct mc_seg {
	uint64_t c0, count, steps;
	uint32_t pad;
} mc_seg;

MC mc_seg mc_seg_of(const mc_geom *g, uint64_t k)
{
	mc_seg s;

	s.c0 = k * MEL_CRC_SEG;
	s.count = g->m - s.c0 < MEL_CRC_SEG ? g->m - s.c0 : MEL_CRC_SEG;
	s.steps = (s.count + MEL_CRC_T - 1) / MEL_CRC_T;
	s.pad = (uint32_t)(s.steps * MEL_CRC_T - s.count);
	return s;
}

/* Chunk i of the payload, i < 2 (where the payload starts): bytes before
 * it read as zeros (and not read), its first 4 bytes inverted (the
 * initial value). */
MC uint4 mc_chunk_head(const mc_geom *g, uint64_t i)
{
	uint32_t w[4] = { 0, 0, 0, 0 };

	for (int b = 0; b < MEL_CRC_W; b++) {
		int64_t pos = (int64_t)(i * MEL_CRC_W) + b - g->mis;
		uint32_t v;

		if (pos < 0)
			continue;
		v = g->a[pos];
		if (pos < 4)
			v ^= 0xff;
		w[b / 4] |= v << (8 * (b % 4));
	}
	return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Chunk i of the payload, i >= 2: one aligned load. */
MC uint4 mc_chunk(const mc_geom *g, uint64_t i)
{
	return *(const uint4 *)(g->a0 + i * MEL_CRC_W);
}

/*
 * Thread j's part of segment k: the raw CRC of its chunks with the zeros
 * between them, shifted over the bytes after its last one to the
 * segment's end (lane = the table's lane[j]). The first two steps of the
 * first segment may hold chunks 0 and 1 (mc_chunk_head); every other
 * step is plain loads, four issued before they are used.
 */
MC uint32_t mc_part(const uint32_t *t, uint32_t lane, const mc_geom *g,
		    uint64_t k, uint32_t j)
{
	mc_seg s = mc_seg_of(g, k);
	uint64_t st = j < s.pad ? 1 : 0, head = k == 0 ? 2 : 0;
	/* chunk of step st of this thread: c0 + st * T + j - pad */
	uint64_t c = s.c0 + j - s.pad;
	uint32_t acc = 0;

	for (; st < s.steps && st < head; st++) {
		uint64_t i = c + st * MEL_CRC_T;

		acc = mc_step(t, acc, i < 2 ? mc_chunk_head(g, i) :
					      mc_chunk(g, i));
	}
	for (; st + 4 <= s.steps; st += 4) {
		uint64_t i = c + st * MEL_CRC_T;
		uint4 d0 = mc_chunk(g, i), d1 = mc_chunk(g, i + MEL_CRC_T);
		uint4 d2 = mc_chunk(g, i + 2 * MEL_CRC_T);
		uint4 d3 = mc_chunk(g, i + 3 * MEL_CRC_T);

		acc = mc_step(t, acc, d0);
		acc = mc_step(t, acc, d1);
		acc = mc_step(t, acc, d2);
		acc = mc_step(t, acc, d3);
	}
	for (; st < s.steps; st++)
		acc = mc_step(t, acc, mc_chunk(g, c + st * MEL_CRC_T));
	return mc_mul(acc, lane);
}

/* Bytes after segment k (the tail included): what its raw CRC is
 * shifted over. */
MC uint64_t mc_after(const mc_geom *g, uint64_t k)
{
	uint64_t end = (k + 1) * MEL_CRC_SEG;

	return (end < g->m ? g->m - end : 0) * MEL_CRC_W + g->tail;
}

/* Lane l's factor of x^(8 n): the powers of bits l and l + 32 of n. The
 * product of the 32 lanes' factors is x^(8 n). */
MC uint32_t mc_factor(const uint32_t *x2n, uint64_t n, uint32_t l)
{
	uint32_t f = 1u << 31;

	if ((n >> l) & 1)
		f = x2n[l + 3];
	if ((n >> (l + 32)) & 1)
		f = mc_mul(f, x2n[l + 35]);
	return f;
}

/*
 * The value of the last segment (its raw CRC r): the tail bytes, then the
 * final XOR. For a payload of fewer than 16 bytes (m == 0) the tail is
 * the whole payload and the CRC starts from the initial value.
 */
MC uint32_t mc_last(const uint32_t *t, const mc_geom *g, uint32_t r)
{
	const unsigned char *p = g->m ? g->a0 + g->m * MEL_CRC_W : g->a;
	uint64_t pos = (uint64_t)(p - g->a);
	uint32_t c = g->m ? r : 0xFFFFFFFFu;

	for (uint32_t i = 0; i < g->tail; i++, pos++) {
		uint32_t v = p[i];

		if (g->m && pos < 4)
			v ^= 0xff;
		c = mc_byte(t, c, v);
	}
	return c ^ 0xFFFFFFFFu;
}

#endif
