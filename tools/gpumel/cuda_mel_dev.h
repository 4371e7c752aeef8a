/*
 * cuda_mel_dev.h - the arithmetic of the CUDA backend's kernels, written
 * once as __host__ __device__ code: the kernels (cuda_kernels.cu) run it on
 * the GPU, and gpumel-cuda-bench --emu runs the very same functions on the
 * CPU, one simulated thread after another, against a float64 reference, so
 * that the numerics and the indexing are checked on machines with no GPU.
 *
 * The work is split as on the GPU: a team of T threads computes one frame,
 * and each phase function below is what thread t of the team does between
 * two barriers (its loops stride by T). A phase reads only what earlier
 * phases wrote and writes places no other thread of the phase reads or
 * writes, so running a phase's threads one after another computes exactly
 * what the parallel run computes. The barriers themselves come from a
 * policy type: md_pol_dev runs thread t and synchronises the warp (teams
 * of up to 32 threads) or the block, md_pol_host runs threads 0..T-1 in
 * turn.
 *
 * A frame's phases: load (window, into buffer A) | FFT stages, ping-pong
 * between A and B | power (spectrum into the buffer the FFT's result is
 * not in) | mel sums (into the other buffer when a tile's rows are split
 * between warps) | [mel combine]. '|' is POL::sync<T>().
 *
 * C++ for templates only (sizes known at compile time unroll the FFT);
 * otherwise C style. Needs -std=c++17 (if constexpr).
 */
#ifndef MELPIPE_GPUMEL_CUDA_MEL_DEV_H
#define MELPIPE_GPUMEL_CUDA_MEL_DEV_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include "../../lib/rec.h"
#include "cuda_mel.h"
#include "dither.h"

#define MD __host__ __device__ inline
/* Unrolling hints for the device compiler only (the host compiler warns
 * about a pragma it does not know). */
#ifdef __CUDA_ARCH__
#define MD_UNROLL _Pragma("unroll")
#define MD_UNROLL4 _Pragma("unroll 4")
#else
#define MD_UNROLL
#define MD_UNROLL4
#endif

/* ------------------------------------------------------------------ */
/* Team shapes */

__host__ __device__ constexpr int md_log2(int n)
{
	return n <= 1 ? 0 : 1 + md_log2(n / 2);
}

/* Threads per frame of the fused kernel for n_fft N: a quarter of the N / 2
 * complex points (one radix-4 butterfly each per stage), 1 to 256. */
__host__ __device__ constexpr int md_fused_team(int n)
{
	return n / 8 < 1 ? 1 : (n / 8 > MEL_BLOCK ? MEL_BLOCK : n / 8);
}

/* Threads per block of the fused kernel: MEL_FUSED_BLOCK, or one team. */
__host__ __device__ constexpr int md_fused_block(int n)
{
	return md_fused_team(n) > MEL_FUSED_BLOCK ? md_fused_team(n) :
						    MEL_FUSED_BLOCK;
}

/* ------------------------------------------------------------------ */
/* Barrier policies */

/* The device's: sync<T>() orders the team's shared-memory work. A team
 * within one warp synchronises the warp (its other teams call it at the
 * same point); a larger one the block. Every thread of the block calls the
 * same barriers, inactive teams too. (Not a barrier per team, bar.sync
 * 1 + team with T threads: the ids must be immediates, else ptxas reserves
 * all 16 barriers and the SM holds 4 blocks, and choosing the immediate
 * costs more issue slots than the block barrier's waits, so it ran slower
 * for n_fft 512.) */
struct md_pol_dev {
	MD static int lo(int t) { return t; }
	MD static int hi(int t, int) { return t + 1; }
	template <int T> MD static void sync(void)
	{
#ifdef __CUDA_ARCH__
		if constexpr (T <= 32)
			__syncwarp();
		else
			__syncthreads();
#endif
	}
};

struct md_pol_host {
	MD static int lo(int) { return 0; }
	MD static int hi(int, int team) { return team; }
	template <int T> MD static void sync(void) {}
};

/* ------------------------------------------------------------------ */
/* Small helpers */

MD float2 md_cmul(float2 a, float2 b)
{
	return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

MD float2 md_cadd(float2 a, float2 b)
{
	return make_float2(a.x + b.x, a.y + b.y);
}

MD float2 md_csub(float2 a, float2 b)
{
	return make_float2(a.x - b.x, a.y - b.y);
}

/* -i * a */
MD float2 md_cmul_negi(float2 a)
{
	return make_float2(a.y, -a.x);
}

MD uint32_t md_float_bits(float x)
{
#ifdef __CUDA_ARCH__
	return __float_as_uint(x);
#else
	uint32_t u;

	memcpy(&u, &x, sizeof(u));
	return u;
#endif
}

MD float md_bits_float(uint32_t u)
{
#ifdef __CUDA_ARCH__
	return __uint_as_float(u);
#else
	float x;

	memcpy(&x, &u, sizeof(x));
	return x;
#endif
}

/* An unsigned key that orders like the float (for atomicMax on floats of
 * any sign): negative floats flipped whole, positive ones get the sign bit.
 * Key 0 is below every float's key, so a zeroed array means "no value". */
MD uint32_t md_fkey(float x)
{
	uint32_t u = md_float_bits(x);

	return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

MD float md_key_float(uint32_t k)
{
	return md_bits_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

/* Read-only data (window, twiddles, filterbank) through the GPU's
 * read-only data path. */
template <class X> MD X md_ldg(const X *p)
{
#ifdef __CUDA_ARCH__
	return __ldg(p);
#else
	return *p;
#endif
}

/* Two consecutive samples as floats, from an address aligned to twice the
 * sample size: one 32-bit (s16) or 64-bit (f32) load on the GPU. */
MD float2 md_load2(const int16_t *p, int i)
{
#ifdef __CUDA_ARCH__
	short2 v = reinterpret_cast<const short2 *>(p)[i];

	return make_float2((float)v.x, (float)v.y);
#else
	return make_float2((float)p[2 * i], (float)p[2 * i + 1]);
#endif
}

MD float2 md_load2(const float *p, int i)
{
#ifdef __CUDA_ARCH__
	return reinterpret_cast<const float2 *>(p)[i];
#else
	return make_float2(p[2 * i], p[2 * i + 1]);
#endif
}

template <class IN> MD int md_aligned2(const IN *p)
{
	return ((uintptr_t)p & (2 * sizeof(IN) - 1)) == 0;
}

/*
 * Where complex point p of a frame's FFT buffers lives until the last
 * stage: p with its low 4 bits XORed by 5 * (bits 4-5), a permutation
 * inside each block of 16 points (the identity below 16). The radix-4
 * stages with sub-transforms of 1 and 4 points write with strides of 4
 * points, which would put 4 of the 16 threads of a half-warp on one bank
 * pair; permuted, every stage's reads and writes are free of bank
 * conflicts. Used by the load and by every stage but the last, which
 * writes its result in natural order: its writes are contiguous anyway,
 * and the power phase reads Z[M - k] for 16 consecutive k, which spans two
 * blocks of 16 points; permuted, the block's missing point and the other
 * block's point would share a bank pair.
 *
 * The map is linear over XOR (5 x = x | 4 x for x < 4), so for a + b with
 * a and b of disjoint bits, md_sw(a + b) = md_sw(a) ^ md_sw(b): the stages
 * and the load permute their thread's base index once and XOR in the
 * permuted constant part of each access, which the compiler folds.
 */
__host__ __device__ constexpr int md_sw(int p)
{
	return p ^ (((p >> 4) & 3) * 5);
}

/* ------------------------------------------------------------------ */
/* Frames */

/* Where a batch frame reads and writes. */
struct md_frame {
	uint64_t in_off;   /* the record's first sample in the batch */
	uint64_t out_off;  /* the record's matrix in the batch's out */
	int64_t start;     /* the frame's first sample in the record (< 0 in
			      the left padding) */
	uint32_t n;        /* samples of the record */
	uint32_t j;        /* frame index in the record */
	uint32_t stride;   /* the record's n_frames: one mel row of out */
	uint32_t r;        /* record index in the batch */
};

MD md_frame md_locate(const mel_kargs &a, uint32_t f)
{
	md_frame fr;
	uint32_t r = a.frame_rec[f];
	const mel_rec *R = a.rec + r;

	fr.r = r;
	fr.j = f - a.frame_base[r];
	fr.in_off = R->in_off;
	/* MFCC's bands: the scratch, laid out by batch frame */
	fr.out_off = a.bands ? (uint64_t)a.frame_base[r] * a.bands :
			       R->out_off;
	fr.n = R->n_samples;
	fr.stride = R->n_frames;
	/* a stretch of an item in pieces comes padded by the host */
	fr.start = (int64_t)fr.j * a.hop -
		   ((R->flags & MEL_REC_PADDED) ? 0 : (int64_t)a.pad);
	return fr;
}

/* Sample o of a record of n samples (x points at its first) as padded:
 * zero (constant) or numpy.pad's reflect, repeated with period 2 (n - 1)
 * for pads longer than the record, the one sample itself when n = 1. */
template <class IN>
MD float md_fetch(const IN *x, uint32_t n, int64_t o, int reflect)
{
	if (o >= 0 && o < (int64_t)n)
		return (float)x[o];
	if (!reflect || n == 0)
		return 0.0f;
	if (n == 1)
		return (float)x[0];
	int64_t p = 2 * ((int64_t)n - 1);
	int64_t m = o % p;

	if (m < 0)
		m += p;
	if (m >= (int64_t)n)
		m = p - m;
	return (float)x[m];
}

/* Whether the frame lies inside its record (no padding to compute). */
MD int md_inside(const md_frame &fr, uint32_t n_fft)
{
	return fr.start >= 0 && fr.start + (int64_t)n_fft <= (int64_t)fr.n;
}

/*
 * Fused load phase: the windowed frame as N / 2 complex points z[i] =
 * (x[2i], x[2i+1]), the input of the half-length complex FFT (point i
 * stored at md_sw(i)).
 */
template <int N, int T, class IN>
MD void md_load_pairs(const mel_kargs &a, const md_frame &fr, int t,
		      float2 *z)
{
	const IN *x = (const IN *)a.in + fr.in_off;
	const float *w = a.win;

	static_assert((N / 2) % T == 0, "whole rounds of the team");
	if (md_inside(fr, N)) {
		const IN *p = x + fr.start;

		if (md_aligned2(p)) {
			/* the common case: a trip count the compiler knows */
			const int st = md_sw(t);

MD_UNROLL
			for (int i0 = 0; i0 < N / 2; i0 += T) {
				const int i = i0 + t;
				float2 v = md_load2(p, i);
				float2 g = md_ldg((const float2 *)w + i);

				/* md_sw(i0 + t), t < T | i0 */
				z[st ^ md_sw(i0)] = make_float2(v.x * g.x,
								v.y * g.y);
			}
		} else {
			for (int i = t; i < N / 2; i += T)
				z[md_sw(i)] = make_float2(
					(float)p[2 * i] * md_ldg(w + 2 * i),
					(float)p[2 * i + 1] *
						md_ldg(w + 2 * i + 1));
		}
		return;
	}
	for (int i = t; i < N / 2; i += T) {
		int64_t o = fr.start + 2 * i;

		z[md_sw(i)] = make_float2(md_fetch(x, fr.n, o, a.reflect) *
						  md_ldg(w + 2 * i),
					  md_fetch(x, fr.n, o + 1, a.reflect) *
						  md_ldg(w + 2 * i + 1));
	}
}

/* cuFFT path load phase: the windowed frame, n_fft reals, into dst. */
template <class IN>
MD void md_load_real(const mel_kargs &a, const md_frame &fr, int t, int T,
		     float *dst)
{
	const IN *x = (const IN *)a.in + fr.in_off;
	const float *w = a.win;
	const int n = (int)a.n_fft;

	if (md_inside(fr, a.n_fft)) {
		const IN *p = x + fr.start;

		for (int i = t; i < n; i += T)
			dst[i] = (float)p[i] * md_ldg(w + i);
		return;
	}
	for (int i = t; i < n; i += T)
		dst[i] = md_fetch(x, fr.n, fr.start + i, a.reflect) *
			 md_ldg(w + i);
}

/* ------------------------------------------------------------------ */
/* FFT: Stockham autosort, radix 4 (one radix-2 stage first when log2 M is
 * odd), ping-pong between two buffers of M complex points. Forward
 * transform, no scaling: Z[k] = sum z[n] e^(-2 pi i k n / M). */

template <int R> MD void md_dft(float2 *v);

template <> MD void md_dft<2>(float2 *v)
{
	float2 a = v[0], b = v[1];

	v[0] = md_cadd(a, b);
	v[1] = md_csub(a, b);
}

template <> MD void md_dft<4>(float2 *v)
{
	float2 a0 = md_cadd(v[0], v[2]), a1 = md_csub(v[0], v[2]);
	float2 a2 = md_cadd(v[1], v[3]);
	float2 a3 = md_cmul_negi(md_csub(v[1], v[3]));

	v[0] = md_cadd(a0, a2);
	v[1] = md_cadd(a1, a3);
	v[2] = md_csub(a0, a2);
	v[3] = md_csub(a1, a3);
}

/*
 * Butterfly j (0 <= j < M / R) of the stage whose sub-transforms are NS
 * long: reads src[j + r M / R], twiddles by W_(NS R)^(r k), k = j mod NS,
 * from row r - 1 of the stage's table (mel_cuda_twiddles: consecutive j,
 * consecutive entries), writes dst[(j / NS) NS R + k + r NS], permuted
 * (md_sw) except in the last stage.
 */
template <int M, int R, int NS>
MD void md_fft_stage(const float2 *src, float2 *dst, int j, const float2 *tw)
{
	constexpr bool last = NS * R >= M;
	const int k = j & (NS - 1), sj = md_sw(j);
	float2 v[R];

	/* j < M / R and d below: bits disjoint from the r terms (md_sw) */
MD_UNROLL
	for (int r = 0; r < R; r++)
		v[r] = src[sj ^ md_sw(r * (M / R))];
	if constexpr (NS > 1) {
		const float2 *row = tw + mel_cuda_tw_stage(M, NS) + k;

		static_assert(R == 4, "tables are for the radix-4 stages");
MD_UNROLL
		for (int r = 1; r < R; r++)
			v[r] = md_cmul(v[r], md_ldg(row + (r - 1) * NS));
	}
	md_dft<R>(v);
	const int d = (j / NS) * NS * R + k, sd = md_sw(d);

MD_UNROLL
	for (int r = 0; r < R; r++)
		dst[last ? d + r * NS : sd ^ md_sw(r * NS)] = v[r];
}

/* The radix-4 stages from sub-transform length NS on; returns the buffer
 * holding the result. Every thread of the block calls it (the barriers);
 * inactive teams skip the work. */
template <int M, int NS, int T, class POL>
MD float2 *md_fft_r4(float2 *src, float2 *dst, int t, bool active,
		     const float2 *tw)
{
	if constexpr (NS >= M) {
		return src;
	} else {
		static_assert((M / 4) % T == 0, "whole rounds of the team");
		if (active)
			for (int tt = POL::lo(t); tt < POL::hi(t, T); tt++)
MD_UNROLL
				for (int j0 = 0; j0 < M / 4; j0 += T)
					md_fft_stage<M, 4, NS>(src, dst,
							       j0 + tt, tw);
		POL::template sync<T>();
		return md_fft_r4<M, NS * 4, T, POL>(dst, src, t, active, tw);
	}
}

/* The M-point FFT of a (M >= 4, stored through md_sw); returns a or b,
 * whichever holds the result, in natural order. */
template <int M, int T, class POL>
MD float2 *md_fft(float2 *a, float2 *b, int t, bool active, const float2 *tw)
{
	static_assert(M >= 4, "the last stage is a radix-4 one");
	if constexpr (md_log2(M) & 1) {
		static_assert((M / 2) % T == 0, "whole rounds of the team");
		if (active)
			for (int tt = POL::lo(t); tt < POL::hi(t, T); tt++)
MD_UNROLL
				for (int j0 = 0; j0 < M / 2; j0 += T)
					md_fft_stage<M, 2, 1>(a, b, j0 + tt,
							      tw);
		POL::template sync<T>();
		return md_fft_r4<M, 2, T, POL>(b, a, t, active, tw);
	} else {
		return md_fft_r4<M, 1, T, POL>(a, b, t, active, tw);
	}
}

/* |X|^2 or |X|, as the CPU backend computes them. */
MD float md_pow(float2 x, int power)
{
	float p = x.x * x.x + x.y * x.y;

	return power == 1 ? sqrtf(p) : p;
}

/*
 * Power phase: P[0..M], the real 2M-point FFT's bins, from Z, the M-point
 * FFT of the even/odd pairs (natural order). With a = Z[k], b = Z[M - k]
 * (indices mod M), E = (a + conj b) / 2, O = (a - conj b) / 2i and
 * W = W_2M^k (entry k of the split table):
 *   X[k] = E + W O,   X[M - k] = conj(E - W O),
 * the second since swapping a and b conjugates E and O and W_2M^(M - k)
 * = -conj W. So thread t does the pairs k = t, t + T, ... < M / 2, each
 * from one read of a and of b and one twiddle (k = 0 gives bins 0 and M),
 * and thread 0 also the middle bin, X[M / 2] = conj Z[M / 2] (W = -i).
 * Reads of Z[M - k] for consecutive k are contiguous (natural order): free
 * of bank conflicts.
 */
template <int M, int T>
MD void md_power(const float2 *Z, float *P, int t, const float2 *tw,
		 int power)
{
	static_assert((M / 2) % T == 0, "whole rounds of the team");
MD_UNROLL
	for (int k0 = 0; k0 < M / 2; k0 += T) {
		const int k = k0 + t;
		float2 a = Z[k], b = Z[(M - k) & (M - 1)];
		float2 w = md_ldg(tw + k);
		float ex = 0.5f * (a.x + b.x), ey = 0.5f * (a.y - b.y);
		float dx = 0.5f * (a.x - b.x), dy = 0.5f * (a.y + b.y);
		float u = w.x * dy + w.y * dx, v = w.x * dx - w.y * dy;

		P[k] = md_pow(make_float2(ex + u, ey - v), power);
		P[M - k] = md_pow(make_float2(ex - u, -(ey + v)), power);
	}
	if (t == 0) {
		float2 h = Z[M / 2];

		P[M / 2] = md_pow(make_float2(h.x, -h.y), power);
	}
}

/* ------------------------------------------------------------------ */
/* Mel, log, cast */

/* Power of bin b: from the power phase's array (fused) or straight from
 * cuFFT's spectrum (cuFFT path). */
struct md_pw_array {
	const float *P;
	MD float operator()(uint32_t b) const { return P[b]; }
};

struct md_pw_spec {
	const float2 *X;
	int power;
	MD float operator()(uint32_t b) const { return md_pow(X[b], power); }
};

MD float md_finish(const mel_kargs &a, float s)
{
	if (a.log == MEL_LOG_DB)
		return a.log_mul * log10f(fmaxf(s, a.amin));
	if (a.log == MEL_LOG_LN)
		return logf(fmaxf(s, a.amin));
	return s;
}

MD void md_store(const mel_kargs &a, uint64_t i, float v)
{
	if (a.out_dtype == REC_F16)
		((__half *)a.out)[i] = __float2half_rn(v);
	else if (a.out_dtype == REC_BF16)
		((__nv_bfloat16 *)a.out)[i] = __float2bfloat16_rn(v);
	else
		((float *)a.out)[i] = v;
}

/* The value of mel m of the frame, logged, cast and stored in column j of
 * the record's matrix (row row0 + m); returns what was stored (before the
 * cast). */
MD float md_put(const mel_kargs &a, const md_frame &fr, uint32_t m, float s)
{
	s = md_finish(a, s);
	md_store(a, fr.out_off + (uint64_t)(a.row0 + m) * fr.stride + fr.j, s);
	return s;
}

/*
 * How a team of T threads shares the mel phase. The filterbank comes in
 * tiles of up to MEL_TILE mels (mel_tiles), and a tile is worked by L
 * lanes, L = min(T, MEL_TILE): a warp, or the whole team when smaller;
 * lane l takes the tile's mels l, l + L, ... and at each row all L lanes
 * read consecutive weights. The team's T / L warps take the tiles in turn;
 * when they outnumber the tiles, each tile's rows are split into S = 2^ls
 * parts (md_mel_split: S tiles <= T / L), one warp each (the idle warps
 * would otherwise wait), and a combine phase adds the parts.
 */
MD int md_mel_lanes(int T)
{
	return T < (int)MEL_TILE ? T : (int)MEL_TILE;
}

MD uint32_t md_mel_tiles(uint32_t n_mels)
{
	return (n_mels + MEL_TILE - 1) / MEL_TILE;
}

/* log2 of the parts of each tile: of the largest power of two S with
 * S tiles <= the team's warps (1 when the tiles are as many). */
MD int md_mel_split(uint32_t n_mels, int T)
{
	uint32_t warps = (uint32_t)(T / md_mel_lanes(T));
	uint32_t G = md_mel_tiles(n_mels);
	int ls = 0;

	while ((G << (ls + 1)) <= warps)
		ls++;
	return ls;
}

/*
 * Mel phase, the sums: thread t's lane of its warp's units, unit u = tile
 * u / S, part p = u mod S, which adds rows [p h, p h + h) of the tile,
 * h = ceil(rows / S). Each mel adds only its own rows lo .. lo + n - 1
 * (its bins; see mel_tiles), in increasing order: the lanes' weight reads
 * at a row are consecutive floats, their P[bin + i] reads distinct banks
 * where the host could arrange it. With S = 1 the sums are the mels'
 * values: logged, cast and stored here, and the largest value stored is
 * returned (-inf when none), for top_db. With S > 1 they go to
 * part[u * MEL_TILE + c] (c: the mel's column; S tiles <= T / 32 units, so
 * part needs at most T floats), for md_mel_combine after a barrier, and
 * -inf is returned.
 */
template <class PW>
MD float md_mel(const mel_kargs &a, const md_frame &fr, int t, int T,
		const PW &pw, float *part)
{
	const int L = md_mel_lanes(T), ls = md_mel_split(a.n_mels, T);
	const uint32_t S = 1u << ls, units = md_mel_tiles(a.n_mels) << ls;
	float mx = -INFINITY;

	for (uint32_t u = (uint32_t)(t / L); u < units; u += T / L) {
		const uint32_t g = u >> ls, m0 = g * MEL_TILE;
		const uint2 tile = md_ldg((const uint2 *)a.fbt_tile + g);
		const uint32_t width = a.n_mels - m0 < MEL_TILE ?
				       a.n_mels - m0 : MEL_TILE;
		const uint32_t h = (tile.y + S - 1) >> ls;
		const uint32_t i0 = (u & (S - 1)) * h;
		const uint32_t i1 = tile.y < i0 + h ? tile.y : i0 + h;

		for (uint32_t c = (uint32_t)(t % L); c < width; c += L) {
			const uint4 mel = md_ldg((const uint4 *)a.fbt_mel +
						 m0 + c);
			/* row i0 of the mel's column; rows MEL_TILE apart */
			const float *w = a.fbt_w + tile.x + c +
					 (size_t)i0 * MEL_TILE;
			float s = 0.0f;

MD_UNROLL4
			for (uint32_t i = i0; i < i1; i++, w += MEL_TILE)
				if (i - mel.y < mel.z)
					s += md_ldg(w) * pw(mel.x + i);
			if (S > 1)
				part[u * MEL_TILE + c] = s;
			else
				mx = fmaxf(mx, md_put(a, fr, m0 + c, s));
		}
	}
	return mx;
}

/* Mel combine phase (after md_mel with S > 1): mels t, t + T, ... of the
 * frame, their S parts added in order, logged, cast and stored; returns
 * the largest value stored (-inf when none). */
MD float md_mel_combine(const mel_kargs &a, const md_frame &fr, int t,
			int T, const float *part)
{
	const int ls = md_mel_split(a.n_mels, T);
	float mx = -INFINITY;

	for (uint32_t m = (uint32_t)t; m < a.n_mels; m += (uint32_t)T) {
		const float *p = part + ((m / MEL_TILE) << ls) * MEL_TILE +
				 m % MEL_TILE;
		float s = p[0];

		for (uint32_t q = 1; q < (1u << ls); q++)
			s += p[q * MEL_TILE];
		mx = fmaxf(mx, md_put(a, fr, m, s));
	}
	return mx;
}

/* ------------------------------------------------------------------ */
/* fbank: Kaldi's frames */

/* How the L lanes of a Kaldi frame's team work together (md_kaldi_frame):
 * sum() adds a value over the lanes (every lane gets it), up1() gives each
 * lane the value of the lane before (lane 0: its own), last() the value of
 * lane L - 1. The device's team is a warp (shuffles, the same butterfly
 * order on every lane); the host's (the emulation) one lane. */
struct md_team_warp {
	static const int L = 32;
#ifdef __CUDA_ARCH__
	__device__ static double sum(double v)
	{
		for (int o = 16; o > 0; o >>= 1)
			v += __shfl_xor_sync(0xffffffffu, v, o);
		return v;
	}
	__device__ static float up1(float v)
	{
		return __shfl_up_sync(0xffffffffu, v, 1);
	}
	__device__ static float last(float v)
	{
		return __shfl_sync(0xffffffffu, v, 31);
	}
#endif
};

struct md_team_one {
	static const int L = 1;
	MD static double sum(double v) { return v; }
	MD static float up1(float v) { return v; }
	MD static float last(float v) { return v; }
};

/* Kaldi's reflection at a record's edges (ExtractWindow): -1 -> 0,
 * n -> n - 1, repeated with period 2 n. */
MD int64_t md_kaldi_index(int64_t i, int64_t n)
{
	int64_t m = i % (2 * n);

	if (m < 0)
		m += 2 * n;
	return m < n ? m : 2 * n - 1 - m;
}

/* ln of an energy, floored at amin (float's epsilon), then at
 * ln(energy_floor). */
MD float md_log_energy(const mel_kargs &a, double e)
{
	e = log(e > (double)a.amin ? e : (double)a.amin);
	return (float)(e > a.log_efloor ? e : a.log_efloor);
}

/*
 * Frame fr as Kaldi's ExtractWindow and ProcessWindow make it, into dst
 * (n_fft floats: the frame's win_length, then zeros), as the CPU backend
 * does (cpu_frame.c, kaldi_frame): samples in Kaldi's scale (s16 as
 * they are, f32 times 32768), reflected at the record's edges, plus
 * dither times the noise of dither.h, less their mean, pre-emphasised,
 * windowed; the log energy (raw: before pre-emphasis) goes into row 0 of
 * the record's matrix with use_energy. Lane `lane` of a team of TEAM::L
 * takes samples lane, lane + L, ...; sums in float64.
 */
template <class TEAM, class IN>
MD void md_kaldi_frame(const mel_kargs &a, const md_frame &fr, int lane,
		       float *dst)
{
	const int L = TEAM::L;
	const IN *x = (const IN *)a.in + fr.in_off;
	const mel_rec *R = a.rec + fr.r;
	const int64_t W = a.win_length, pos = R->pos0 + (int64_t)fr.j * a.hop;
	const float scale = sizeof(IN) == 2 ? 1.0f : 32768.0f;
	double s = 0.0;
	float mean = 0.0f, carry = 0.0f, energy = 0.0f;

	for (int64_t i = lane; i < W; i += L) {
		int64_t o = fr.start + i;
		float v;

		if (o < 0 || o >= (int64_t)fr.n)
			o = md_kaldi_index(o, fr.n);
		v = (float)x[o] * scale;
		if (a.dither != 0.0)
			v += (float)(a.dither * mel_dither_noise(
				a.seed, R->clip, pos, (uint32_t)i));
		dst[i] = v;
		s += v;
	}
	if (a.remove_dc)
		mean = (float)(TEAM::sum(s) / (double)W);
	s = 0.0;
	for (int64_t i = lane; i < W; i += L) {
		float v = dst[i] - mean;

		dst[i] = v;
		s += (double)v * v;
	}
	if (a.use_energy && a.raw_energy)
		energy = md_log_energy(a, TEAM::sum(s));
	/* pre-emphasis a row of L samples at a time, in order: each lane's
	 * sample before comes from the lane before, or the last row */
	s = 0.0;
	for (int64_t b = 0; b < W; b += L) {
		const int64_t i = b + lane;
		float v = i < W ? dst[i] : 0.0f, before = TEAM::up1(v);

		if (lane == 0)
			before = b == 0 ? v : carry;
		carry = TEAM::last(v);
		if (i < W) {
			v = (v - a.preemph * before) * md_ldg(a.win + i);
			dst[i] = v;
			s += (double)v * v;
		}
	}
	if (a.use_energy && !a.raw_energy)
		energy = md_log_energy(a, TEAM::sum(s));
	for (int64_t i = W + lane; i < (int64_t)a.n_fft; i += L)
		dst[i] = 0.0f;
	if (a.use_energy && lane == 0)
		md_store(a, fr.out_off + fr.j, energy);
}

/* The fused kernel's fbank load phase, after md_kaldi_frame wrote the
 * frame's N floats to buf: as md_load_pairs, the N / 2 complex points
 * z[i] = (x[2i], x[2i+1]), point i stored at md_sw(i). */
template <int N, int T>
MD void md_pairs_of(const float *buf, float2 *z, int t)
{
	for (int i = t; i < N / 2; i += T)
		z[md_sw(i)] = make_float2(buf[2 * i], buf[2 * i + 1]);
}

/* Whether the fused kernel makes fbank's frames for n_fft N: its team
 * holds whole warps (md_kaldi_frame's team is the first warp). */
__host__ __device__ constexpr bool md_fused_fbank_ok(int n)
{
	return md_fused_team(n) >= 32;
}

/* The fused kernel's team for n_fft N: fbank's is one warp up to 1024
 * (the warp that makes the Kaldi frame then does the FFT and the mels,
 * with no barrier across warps and no warp waiting for it; four frames'
 * buffers, 32 KB at 1024, fit a block's static shared memory), else
 * md_fused_team's; and its block. */
__host__ __device__ constexpr int md_fused_team_of(int n, bool fbank)
{
	return fbank && n <= 1024 ? 32 : md_fused_team(n);
}

__host__ __device__ constexpr int md_fused_block_of(int n, bool fbank)
{
	return md_fused_team_of(n, fbank) > MEL_FUSED_BLOCK ?
		       md_fused_team_of(n, fbank) : MEL_FUSED_BLOCK;
}

/*
 * MFCC: the coefficients of batch frame f, from its bands in the scratch
 * (bandsp: record r's [n_bands][n_frames] at frame_base[r] * n_bands),
 * each raised to the record's max - top_db when rec_key is set and the
 * record is no piece; coefficient c = sum over m of dct[c][m] band m, in
 * float, a chunk of MD_CEPS coefficients at a time (their sums in
 * registers: each band is read once a chunk); coefficient 0 is the log
 * energy with ceps_energy. Stored in the record's [n_ceps][n_frames].
 */
#define MD_CEPS 16
MD void md_dct(const mel_kargs &a, uint32_t f)
{
	const uint32_t r = a.frame_rec[f];
	const mel_rec *R = a.rec + r;
	const uint32_t j = f - a.frame_base[r], nf = R->n_frames;
	const float *x = a.bandsp + (uint64_t)a.frame_base[r] * a.n_bands + j;
	const float *xm = x + (uint64_t)(a.n_bands - a.n_mels) * nf;
	float lowest = -INFINITY;

	if (a.rec_key && !(R->flags & MEL_REC_NO_CLAMP))
		lowest = md_key_float(a.rec_key[r]) - a.top_db;
	for (uint32_t c0 = 0; c0 < a.n_ceps; c0 += MD_CEPS) {
		float acc[MD_CEPS];
		const uint32_t nc = a.n_ceps - c0 < MD_CEPS ? a.n_ceps - c0 :
							      MD_CEPS;

MD_UNROLL
		for (int k = 0; k < MD_CEPS; k++)
			acc[k] = 0.0f;
		for (uint32_t m = 0; m < a.n_mels; m++) {
			const float v = fmaxf(xm[(uint64_t)m * nf], lowest);
			const float *d = a.dct + (uint64_t)c0 * a.n_mels + m;

MD_UNROLL
			for (int k = 0; k < MD_CEPS; k++)
				if ((uint32_t)k < nc)
					acc[k] = fmaf(md_ldg(d + (uint64_t)k *
							     a.n_mels), v,
						      acc[k]);
		}
		for (uint32_t k = 0; k < nc; k++)
			md_store(a, R->out_off + (uint64_t)(c0 + k) * nf + j,
				 c0 + k == 0 && a.ceps_energy ? x[0] :
							       acc[k]);
	}
}

/* top_db: raises element (frame f, mel m) to its record's max - top_db,
 * but in a record flagged MEL_REC_NO_CLAMP (a piece of an item). After
 * the cast, as the CPU backend: rounding is monotonic, so
 * max(round(x), round(floor)) is round(max(x, floor)). */
MD void md_clamp(const mel_kargs &a, uint32_t f, uint32_t m)
{
	uint32_t r = a.frame_rec[f];
	const mel_rec *R = a.rec + r;
	uint64_t i = R->out_off + (uint64_t)m * R->n_frames +
		     (f - a.frame_base[r]);
	float floor = md_key_float(a.rec_key[r]) - a.top_db;

	if (R->flags & MEL_REC_NO_CLAMP)
		return;

	if (a.out_dtype == REC_F16) {
		__half *o = (__half *)a.out, h = __float2half_rn(floor);

		if (__half2float(o[i]) < __half2float(h))
			o[i] = h;
	} else if (a.out_dtype == REC_BF16) {
		__nv_bfloat16 *o = (__nv_bfloat16 *)a.out;
		__nv_bfloat16 h = __float2bfloat16_rn(floor);

		if (__bfloat162float(o[i]) < __bfloat162float(h))
			o[i] = h;
	} else {
		float *o = (float *)a.out;

		if (o[i] < floor)
			o[i] = floor;
	}
}

#endif
