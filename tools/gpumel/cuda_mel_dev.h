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
 * policy type: md_pol_dev runs thread t and synchronises the block,
 * md_pol_host runs threads 0..T-1 in turn.
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

#define MD __host__ __device__ inline
/* Unrolling hints for the device compiler only (the host compiler warns
 * about a pragma it does not know). */
#ifdef __CUDA_ARCH__
#define MD_UNROLL _Pragma("unroll")
#else
#define MD_UNROLL
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

/* ------------------------------------------------------------------ */
/* Barrier policies */

struct md_pol_dev {
	MD static int lo(int t) { return t; }
	MD static int hi(int t, int) { return t + 1; }
	MD static void sync(void)
	{
#ifdef __CUDA_ARCH__
		__syncthreads();
#endif
	}
};

struct md_pol_host {
	MD static int lo(int) { return 0; }
	MD static int hi(int, int team) { return team; }
	MD static void sync(void) {}
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
 * Where complex point p of a frame's FFT buffers lives: p with its low 4
 * bits XORed by 5 * (bits 4-5), a permutation inside each block of 16
 * points (the identity below 16). The radix-4 stages with sub-transforms
 * of 1 and 4 points write with strides of 4 points, which would put 4 of
 * the 16 threads of a half-warp on one bank pair; permuted, every stage's
 * reads and writes are free of bank conflicts. Used by every access to
 * the buffers: the load, the stages, the power phase.
 */
MD int md_sw(int p)
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
	fr.out_off = R->out_off;
	fr.n = R->n_samples;
	fr.stride = R->n_frames;
	fr.start = (int64_t)fr.j * a.hop - (int64_t)a.pad;
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
template <int N, class IN>
MD void md_load_pairs(const mel_kargs &a, const md_frame &fr, int t, int T,
		      float2 *z)
{
	const IN *x = (const IN *)a.in + fr.in_off;
	const float *w = a.win;

	if (md_inside(fr, N)) {
		const IN *p = x + fr.start;

		if (md_aligned2(p)) {
			for (int i = t; i < N / 2; i += T) {
				float2 v = md_load2(p, i);
				float2 g = md_ldg((const float2 *)w + i);

				z[md_sw(i)] = make_float2(v.x * g.x,
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
 * writes dst[(j / NS) NS R + k + r NS]. tw holds W_(2M)^e, so W_M^e is
 * tw[2e]; every index stays below 2M.
 */
template <int M, int R, int NS>
MD void md_fft_stage(const float2 *src, float2 *dst, int j, const float2 *tw)
{
	const int k = j & (NS - 1);
	float2 v[R];

MD_UNROLL
	for (int r = 0; r < R; r++)
		v[r] = src[md_sw(j + r * (M / R))];
	if (NS > 1) {
MD_UNROLL
		for (int r = 1; r < R; r++)
			v[r] = md_cmul(v[r], md_ldg(tw + 2 * r * k *
							      (M / (NS * R))));
	}
	md_dft<R>(v);
	const int d = (j / NS) * NS * R + k;

MD_UNROLL
	for (int r = 0; r < R; r++)
		dst[md_sw(d + r * NS)] = v[r];
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
		if (active)
			for (int tt = POL::lo(t); tt < POL::hi(t, T); tt++)
				for (int j = tt; j < M / 4; j += T)
					md_fft_stage<M, 4, NS>(src, dst, j, tw);
		POL::sync();
		return md_fft_r4<M, NS * 4, T, POL>(dst, src, t, active, tw);
	}
}

/* The M-point FFT of a; returns a or b, whichever holds the result (both
 * in natural order through md_sw). */
template <int M, int T, class POL>
MD float2 *md_fft(float2 *a, float2 *b, int t, bool active, const float2 *tw)
{
	if constexpr (md_log2(M) & 1) {
		if (active)
			for (int tt = POL::lo(t); tt < POL::hi(t, T); tt++)
				for (int j = tt; j < M / 2; j += T)
					md_fft_stage<M, 2, 1>(a, b, j, tw);
		POL::sync();
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
 * Bin k (0..M) of the real 2M-point FFT from Z, the M-point FFT of the
 * even/odd pairs: X[k] = E + W_2M^k O, E = (Z[k] + conj Z[M-k]) / 2,
 * O = (Z[k] - conj Z[M-k]) / 2i, indices mod M.
 */
template <int M>
MD float2 md_split(const float2 *Z, int k, const float2 *tw)
{
	float2 a = Z[md_sw(k & (M - 1))], b = Z[md_sw((M - k) & (M - 1))];
	float2 w = md_ldg(tw + k);
	float ex = 0.5f * (a.x + b.x), ey = 0.5f * (a.y - b.y);
	float dx = 0.5f * (a.x - b.x), dy = 0.5f * (a.y + b.y);

	return make_float2(ex + (w.x * dy + w.y * dx),
			   ey - (w.x * dx - w.y * dy));
}

/* Power phase: P[0..M] from Z. The thread that has bin 0 also does bin M
 * (both read only Z[0]), so each thread does M / T bins. */
template <int M>
MD void md_power(const float2 *Z, float *P, int t, int T, const float2 *tw,
		 int power)
{
	for (int k = t; k < M; k += T) {
		P[k] = md_pow(md_split<M>(Z, k, tw), power);
		if (k == 0)
			P[M] = md_pow(md_split<M>(Z, M, tw), power);
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

/* Mel phase: filters t, t + T, ... of the frame, logged, cast and stored
 * in column j of the record's matrix; returns the largest value stored
 * (-inf when none), for top_db. */
template <class PW>
MD float md_mel(const mel_kargs &a, const md_frame &fr, int t, int T,
		const PW &pw)
{
	float mx = -INFINITY;

	for (uint32_t m = t; m < a.n_mels; m += T) {
		const float *w = a.fb_w + md_ldg(a.fb_off + m);
		uint32_t b0 = md_ldg(a.fb_first + m);
		uint32_t cnt = md_ldg(a.fb_count + m);
		float s = 0.0f;

		for (uint32_t i = 0; i < cnt; i++)
			s += md_ldg(w + i) * pw(b0 + i);
		s = md_finish(a, s);
		md_store(a, fr.out_off + (uint64_t)m * fr.stride + fr.j, s);
		mx = fmaxf(mx, s);
	}
	return mx;
}

/* top_db: raises element (frame f, mel m) to its record's max - top_db.
 * After the cast, as the CPU backend: rounding is monotonic, so
 * max(round(x), round(floor)) is round(max(x, floor)). */
MD void md_clamp(const mel_kargs &a, uint32_t f, uint32_t m)
{
	uint32_t r = a.frame_rec[f];
	const mel_rec *R = a.rec + r;
	uint64_t i = R->out_off + (uint64_t)m * R->n_frames +
		     (f - a.frame_base[r]);
	float floor = md_key_float(a.rec_key[r]) - a.top_db;

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
