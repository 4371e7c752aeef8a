/*
 * cuda_kernels.cu - the CUDA backend's kernels and their launchers.
 *
 * Every kernel runs blocks of MEL_BLOCK threads (the fused one:
 * md_fused_block) split into teams of T threads, one frame per team; the
 * arithmetic is in cuda_mel_dev.h, shared with the CPU emulation of
 * gpumel-cuda-bench.
 *
 *   k_fused   framing + window -> shared-memory FFT -> power -> mel -> log
 *             -> cast -> store, and the record's max for top_db; one pass
 *             over device memory: samples in, features out. With FB,
 *             fbank: the team's first warp makes Kaldi's frame in shared
 *             memory (md_kaldi_frame) before the FFT.
 *   k_frames  framing + window into cuFFT's input (cuFFT path)
 *   k_kaldi_frames  fbank's frames into cuFFT's input, the log energy into
 *             the output (cuFFT path; a warp per frame)
 *   k_mel     power -> mel -> log -> cast -> store from cuFFT's output
 *   k_clamp   top_db: every element up to its record's max - top_db
 *   k_dct     MFCC: the bands (clamped) through the DCT, a thread per
 *             frame
 */
#include "cuda_mel_dev.h"

/* The record maxima for top_db: the team's largest value, reduced within
 * each warp's share of the team by shuffles, then one atomicMax per warp
 * share. Every thread of the block calls it (full-mask shuffles); T is a
 * power of two, so a team of fewer than 32 threads is an aligned group of
 * lanes and the xor offsets below T stay inside it. */
template <int T>
__device__ void team_max(float mx, int t, bool active, uint32_t *key)
{
	constexpr int W = T < 32 ? T : 32;

#pragma unroll
	for (int o = W / 2; o > 0; o >>= 1)
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
	if (active && t % W == 0)
		atomicMax(key, md_fkey(mx));
}

template <int N, class IN, bool FB>
__global__ void __launch_bounds__(md_fused_block_of(N, FB))
	k_fused(mel_kargs a)
{
	constexpr int M = N / 2, T = md_fused_team_of(N, FB);
	constexpr int FPB = md_fused_block_of(N, FB) / T;
	using POL = md_pol_dev;
	__shared__ float2 sm[FPB][2][M];
	const int team = threadIdx.x / T, t = threadIdx.x % T;
	const uint32_t i = blockIdx.x * FPB + team;
	const bool active = i < a.nf;
	const float2 *tw = (const float2 *)a.tw;
	md_frame fr = {};
	float mx = -INFINITY;

	if (active)
		fr = md_locate(a, a.f0 + i);
	if constexpr (FB) {
		static_assert(md_fused_fbank_ok(N), "fbank: whole warps");
		float *buf = (float *)sm[team][1];

		if (active && t < 32)
			md_kaldi_frame<md_team_warp, IN>(a, fr, t, buf);
		POL::sync<T>();
		if (active)
			md_pairs_of<N, T>(buf, sm[team][0], t);
	} else if (active) {
		md_load_pairs<N, T, IN>(a, fr, t, sm[team][0]);
	}
	POL::sync<T>();
	float2 *Z = md_fft<M, T, POL>(sm[team][0], sm[team][1], t, active, tw);
	float *P = (float *)(Z == sm[team][0] ? sm[team][1] : sm[team][0]);

	if (active)
		md_power<M, T>(Z, P, t, tw, a.power);
	POL::sync<T>();
	/* the mel sums' parts go where Z was */
	if (active)
		mx = md_mel(a, fr, t, T, md_pw_array{ P }, (float *)Z);
	if (md_mel_split(a.n_mels, T) > 0) {
		POL::sync<T>();
		if (active)
			mx = md_mel_combine(a, fr, t, T, (const float *)Z);
	}
	if (a.rec_key)
		team_max<T>(mx, t, active, a.rec_key + fr.r);
}

template <class IN>
__global__ void __launch_bounds__(MEL_BLOCK) k_frames(mel_kargs a)
{
	constexpr int T = MEL_T_FRAMES, FPB = MEL_BLOCK / T;
	const int team = threadIdx.x / T, t = threadIdx.x % T;
	const uint32_t i = blockIdx.x * FPB + team;

	/* no barrier below: a team past the end may leave */
	if (i >= a.nf)
		return;
	md_frame fr = md_locate(a, a.f0 + i);

	md_load_real<IN>(a, fr, t, T, a.frames + (size_t)i * a.n_fft);
}

template <class IN>
__global__ void __launch_bounds__(MEL_BLOCK) k_kaldi_frames(mel_kargs a)
{
	constexpr int FPB = MEL_BLOCK / 32;
	const int team = threadIdx.x / 32, t = threadIdx.x % 32;
	const uint32_t i = blockIdx.x * FPB + team;

	/* whole warps leave: the warp's shuffles see all its lanes */
	if (i >= a.nf)
		return;
	md_frame fr = md_locate(a, a.f0 + i);

	md_kaldi_frame<md_team_warp, IN>(a, fr, t,
					 a.frames + (size_t)i * a.n_fft);
}

__global__ void __launch_bounds__(MEL_BLOCK) k_mel(mel_kargs a)
{
	constexpr int T = MEL_T_MEL, FPB = MEL_BLOCK / T;
	const int team = threadIdx.x / T, t = threadIdx.x % T;
	const uint32_t i = blockIdx.x * FPB + team;
	const bool active = i < a.nf;
	md_frame fr = {};
	float mx = -INFINITY;

	if (active) {
		const float2 *X = (const float2 *)a.spec +
				  (size_t)i * (a.n_fft / 2 + 1);

		/* a team of one warp: no split (md_mel_split is 0) */
		fr = md_locate(a, a.f0 + i);
		mx = md_mel(a, fr, t, T, md_pw_spec{ X, a.power }, NULL);
	}
	if (a.rec_key)
		team_max<T>(mx, t, active, a.rec_key + fr.r);
}

__global__ void __launch_bounds__(MEL_BLOCK) k_clamp(mel_kargs a,
						      uint32_t n_frames)
{
	const uint64_t total = (uint64_t)n_frames * a.n_mels;
	const uint64_t step = (uint64_t)gridDim.x * blockDim.x;

	for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	     e < total; e += step)
		md_clamp(a, (uint32_t)(e / a.n_mels), (uint32_t)(e % a.n_mels));
}

__global__ void __launch_bounds__(MEL_BLOCK) k_dct(mel_kargs a,
						    uint32_t n_frames)
{
	const uint32_t f = blockIdx.x * MEL_BLOCK + threadIdx.x;

	if (f < n_frames)
		md_dct(a, f);
}

/* ------------------------------------------------------------------ */
/* Launchers */

static unsigned int blocks_for(uint32_t frames, int per_block)
{
	return (unsigned int)((frames + (uint32_t)per_block - 1) /
			      (uint32_t)per_block);
}

template <int N>
static cudaError_t launch_fused_n(const mel_kargs *a, cudaStream_t s)
{
	constexpr int B = md_fused_block(N), FPB = B / md_fused_team(N);
	unsigned int g = blocks_for(a->nf, FPB);

	if constexpr (md_fused_fbank_ok(N)) {
		constexpr int BF = md_fused_block_of(N, true);
		unsigned int gf = blocks_for(a->nf,
					     BF / md_fused_team_of(N, true));

		if (a->fbank && a->in_dtype == REC_S16)
			k_fused<N, int16_t, true><<<gf, BF, 0, s>>>(*a);
		else if (a->fbank)
			k_fused<N, float, true><<<gf, BF, 0, s>>>(*a);
		if (a->fbank)
			return cudaGetLastError();
	} else if (a->fbank) {
		return cudaErrorInvalidValue;
	}
	if (a->in_dtype == REC_S16)
		k_fused<N, int16_t, false><<<g, B, 0, s>>>(*a);
	else
		k_fused<N, float, false><<<g, B, 0, s>>>(*a);
	return cudaGetLastError();
}

extern "C" cudaError_t mel_cuda_launch_fused(const mel_kargs *a,
					     cudaStream_t s)
{
	switch (a->n_fft) {
	case 8: return launch_fused_n<8>(a, s);
	case 16: return launch_fused_n<16>(a, s);
	case 32: return launch_fused_n<32>(a, s);
	case 64: return launch_fused_n<64>(a, s);
	case 128: return launch_fused_n<128>(a, s);
	case 256: return launch_fused_n<256>(a, s);
	case 512: return launch_fused_n<512>(a, s);
	case 1024: return launch_fused_n<1024>(a, s);
	case 2048: return launch_fused_n<2048>(a, s);
	case 4096: return launch_fused_n<4096>(a, s);
	}
	return cudaErrorInvalidValue;
}

extern "C" cudaError_t mel_cuda_launch_frames(const mel_kargs *a,
					      cudaStream_t s)
{
	unsigned int g = blocks_for(a->nf, MEL_BLOCK / MEL_T_FRAMES);

	if (a->fbank) {
		g = blocks_for(a->nf, MEL_BLOCK / 32);
		if (a->in_dtype == REC_S16)
			k_kaldi_frames<int16_t><<<g, MEL_BLOCK, 0, s>>>(*a);
		else
			k_kaldi_frames<float><<<g, MEL_BLOCK, 0, s>>>(*a);
		return cudaGetLastError();
	}
	if (a->in_dtype == REC_S16)
		k_frames<int16_t><<<g, MEL_BLOCK, 0, s>>>(*a);
	else
		k_frames<float><<<g, MEL_BLOCK, 0, s>>>(*a);
	return cudaGetLastError();
}

extern "C" cudaError_t mel_cuda_launch_mel(const mel_kargs *a, cudaStream_t s)
{
	unsigned int g = blocks_for(a->nf, MEL_BLOCK / MEL_T_MEL);

	k_mel<<<g, MEL_BLOCK, 0, s>>>(*a);
	return cudaGetLastError();
}

extern "C" cudaError_t mel_cuda_launch_clamp(const mel_kargs *a,
					     uint32_t n_frames, cudaStream_t s)
{
	uint64_t total = (uint64_t)n_frames * a->n_mels;
	uint64_t g = (total + MEL_BLOCK - 1) / MEL_BLOCK;

	/* a grid-stride loop covers the rest */
	if (g > (1u << 20))
		g = 1u << 20;
	k_clamp<<<(unsigned int)g, MEL_BLOCK, 0, s>>>(*a, n_frames);
	return cudaGetLastError();
}

extern "C" cudaError_t mel_cuda_launch_dct(const mel_kargs *a,
					   uint32_t n_frames, cudaStream_t s)
{
	k_dct<<<blocks_for(n_frames, MEL_BLOCK), MEL_BLOCK, 0, s>>>(*a,
								    n_frames);
	return cudaGetLastError();
}

extern "C" cudaError_t mel_cuda_kernels_check(void)
{
	cudaFuncAttributes fa;

	return cudaFuncGetAttributes(&fa, k_mel);
}
