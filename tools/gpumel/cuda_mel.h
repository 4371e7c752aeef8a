/*
 * cuda_mel.h - the private interface of gpumel's CUDA backend: between its
 * host code (cuda_backend.cu) and its kernels (cuda_kernels.cu), and the
 * benchmark hook that gpumel-cuda.so exports beside mel_cuda_open for
 * gpumel-cuda-bench. Plain C; included only by the .cu files.
 *
 * The work of a batch, on the batch's own stream:
 *   copy in (records, frame tables, samples) -> [memset of the record
 *   maxima] -> compute -> [top_db clamp] -> copy out (features)
 * where compute is one kernel (fused: framing, window, a shared-memory FFT,
 * power, mel, log, cast) when n_fft is a power of two the fused kernel has
 * a size for, and otherwise frames kernel -> cuFFT R2C -> mel kernel, in
 * chunks of frames that bound the scratch memory.
 */
#ifndef MELPIPE_GPUMEL_CUDA_MEL_H
#define MELPIPE_GPUMEL_CUDA_MEL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads of every block of every kernel. */
#define MEL_BLOCK 256
/* Team (threads per frame) of the cuFFT path's frames and mel kernels. */
#define MEL_T_FRAMES 64
#define MEL_T_MEL 32
/* n_fft range of the fused kernel (powers of two). */
#define MEL_FUSED_MIN 8u
#define MEL_FUSED_MAX 4096u

/*
 * Arguments of every kernel, passed by value. Pointers are device pointers
 * on the GPU (host pointers in gpumel-cuda-bench's CPU emulation).
 */
typedef struct mel_kargs {
	const void *in;              /* the batch's samples, in_dtype */
	void *out;                   /* the batch's features, out_dtype */
	const mel_rec *rec;          /* the batch's records */
	const uint32_t *frame_base;  /* per record: its first batch frame */
	const uint32_t *frame_rec;   /* per batch frame: its record */
	uint32_t *rec_key;           /* per record: max dB as an ordered key
					(md_fkey), when top_db clamps; else
					NULL */
	const float *win;            /* n_fft window; times 2^-15 for s16 */
	const float *tw;             /* fused: n_fft twiddles
					e^(-2 pi i k / n_fft) as (re, im) */
	const uint32_t *fb_first, *fb_count, *fb_off;
	const float *fb_w;
	float *frames;               /* cuFFT path: [nf][n_fft] frames */
	float *spec;                 /* cuFFT path: [nf][n_fft / 2 + 1]
					(re, im) spectra */
	uint32_t n_fft, hop, pad, n_mels;
	uint32_t f0, nf;             /* this launch: batch frames [f0, f0 +
					nf), scratch row = frame - f0 */
	int in_dtype, out_dtype;     /* enum rec_dtype */
	int reflect, power, log;     /* pad_mode is reflect; 1 or 2; enum
					mel_log */
	float amin, log_mul, top_db; /* log_mul: 10 (power) or 20 (magnitude) */
} mel_kargs;

/* Whether the fused kernel has a size for n_fft. */
static inline int mel_cuda_fused_ok(uint32_t n_fft)
{
	return n_fft >= MEL_FUSED_MIN && n_fft <= MEL_FUSED_MAX &&
	       (n_fft & (n_fft - 1)) == 0;
}

/*
 * Launchers (cuda_kernels.cu): enqueue one kernel on stream s for a->nf
 * frames (a->nf > 0) and return cudaGetLastError()'s code (cudaSuccess,
 * or why the launch was refused).
 */
cudaError_t mel_cuda_launch_fused(const mel_kargs *a, cudaStream_t s);
cudaError_t mel_cuda_launch_frames(const mel_kargs *a, cudaStream_t s);
cudaError_t mel_cuda_launch_mel(const mel_kargs *a, cudaStream_t s);
/* Clamps every element of the batch's n_frames frames to its record's
 * max - top_db. */
cudaError_t mel_cuda_launch_clamp(const mel_kargs *a, uint32_t n_frames,
				  cudaStream_t s);
/* Asks the runtime about one kernel: fails (cudaErrorNoKernelImageForDevice
 * and the like) when this build has no code the current device runs. */
cudaError_t mel_cuda_kernels_check(void);

/*
 * Benchmark hook, exported by gpumel-cuda.so: reruns the compute of batch
 * b (submitted and returned by wait at least once, so that its samples and
 * tables are on the device) reps times back to back on its stream, with no
 * copies, and stores each run's milliseconds (CUDA events) in ms[].
 * Returns 0, or -1 with be->err set.
 */
#define MEL_CUDA_TIME_SYMBOL "mel_cuda_time_kernels"
typedef int (*mel_cuda_time_fn)(mel_backend *be, mel_batch *b, int reps,
				float *ms);

/* Environment variables read by mel_cuda_open and batch_alloc:
 * MELPIPE_CUDA_FFT=auto|fused|cufft picks the FFT path (auto: fused when
 * n_fft allows); MELPIPE_CUDA_GRAPH=0 turns CUDA graphs off;
 * MELPIPE_CUDA_CHUNK=N sets the frames of one cuFFT chunk (default: 32 MiB
 * of frames and spectra), for tests and tuning. */
#define MEL_CUDA_ENV_FFT "MELPIPE_CUDA_FFT"
#define MEL_CUDA_ENV_GRAPH "MELPIPE_CUDA_GRAPH"
#define MEL_CUDA_ENV_CHUNK "MELPIPE_CUDA_CHUNK"

/* Whether top_db clamps: dB output and top_db >= 0. */
static inline int mel_cuda_clamps(const mel_params *p)
{
	return p->log == MEL_LOG_DB && p->top_db >= 0.0;
}

/* The scalar kernel arguments of p for a batch of in_dtype samples (the
 * pointers are the caller's). */
static inline void mel_cuda_scalars(mel_kargs *a, const mel_params *p,
				    int in_dtype)
{
	a->n_fft = p->n_fft;
	a->hop = p->hop_length;
	a->pad = p->center ? p->n_fft / 2 : 0;
	a->n_mels = p->n_mels;
	a->in_dtype = in_dtype;
	a->out_dtype = p->out_dtype;
	a->reflect = p->pad_mode == MEL_PAD_REFLECT;
	a->power = p->power;
	a->log = p->log;
	a->amin = (float)p->amin;
	a->log_mul = p->power == 1 ? 20.0f : 10.0f;
	a->top_db = (float)p->top_db;
}

/* The frame tables of n records (their n_frames checked by the caller):
 * base[r], the first batch frame of record r, and frec[f], the record of
 * batch frame f. Returns the number of frames. */
static inline uint64_t mel_cuda_tables(const mel_rec *rec, size_t n,
				       uint32_t *base, uint32_t *frec)
{
	uint64_t F = 0;

	for (size_t r = 0; r < n; r++) {
		base[r] = (uint32_t)F;
		for (uint32_t j = 0; j < rec[r].n_frames; j++)
			frec[F + j] = (uint32_t)r;
		F += rec[r].n_frames;
	}
	return F;
}

/* The n_fft twiddles e^(-2 pi i k / n_fft), k < n_fft, as (re, im) float
 * pairs (2 * n_fft floats), computed in float64. */
static inline void mel_cuda_twiddles(uint32_t n_fft, float *tw)
{
	for (uint32_t k = 0; k < n_fft; k++) {
		double a = 2.0 * M_PI * (double)k / (double)n_fft;

		tw[2 * k] = (float)cos(a);
		tw[2 * k + 1] = (float)-sin(a);
	}
}

/* The float windows for f32 and s16 input from the float64 window w:
 * scaling by 2^-15 is exact, so (float)s * w16[i] is exactly
 * ((float)s / 32768) * w32[i], as in the CPU backend. */
static inline void mel_cuda_windows(const double *w, uint32_t n, float *w32,
				    float *w16)
{
	for (uint32_t i = 0; i < n; i++) {
		w32[i] = (float)w[i];
		w16[i] = (float)w[i] * (1.0f / 32768.0f);
	}
}

#ifdef __cplusplus
}
#endif

#endif
