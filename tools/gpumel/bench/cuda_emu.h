/*
 * cuda_emu.h - the CUDA backend's kernels run on the CPU: every kernel of
 * cuda_kernels.cu as a host function over the same mel_kargs, calling the
 * same phase functions (cuda_mel_dev.h) for each simulated thread of each
 * team in turn, plus a float64 real FFT in cuFFT's place, and the CRC32C
 * kernel's split and arithmetic (cuda_crc_dev.h).
 *
 * Used by gpumel-cuda-bench (its --emu backend and its float64 reference)
 * and by the mock CUDA runtime (tests/helper/cuda_mock.cu) that runs the
 * backend's host code without a GPU. Host-only C++ (mel_kargs by
 * reference, as the phase functions take it); the pointers in the
 * arguments are host pointers. Out of memory aborts: these are test tools.
 */
#ifndef MELPIPE_GPUMEL_CUDA_EMU_H
#define MELPIPE_GPUMEL_CUDA_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "../cuda_mel.h"

/* k_fused over batch frames [a.f0, a.f0 + a.nf). Returns 0, or -1 when
 * the fused kernel has no size a.n_fft (nothing is computed then). */
int emu_fused(const mel_kargs &a);

/* k_frames: batch frames [a.f0, a.f0 + a.nf) into rows of a.frames. */
void emu_frames(const mel_kargs &a);

/* k_mel: the features of batch frames [a.f0, a.f0 + a.nf) from the rows
 * of a.spec. */
void emu_mel(const mel_kargs &a);

/* k_clamp over the batch's n_frames frames. */
void emu_clamp(const mel_kargs &a, uint32_t n_frames);

/* k_dct (MFCC) over the batch's n_frames frames. */
void emu_dct(const mel_kargs &a, uint32_t n_frames);

/*
 * One complex row (re, im) of n points, transformed forward in place in
 * float64: radix 2 when n is a power of two (all n bins), else the direct
 * sum with exact twiddle indices, of bins k < kmax only. cs and sn hold
 * cos and sin(2 pi k / n) for k < n; tr and ti are kmax doubles of
 * scratch (unused for a power of two).
 */
void emu_dft(uint32_t n, uint32_t kmax, double *re, double *im,
	     const double *cs, const double *sn, double *tr, double *ti);

/* cuFFT's R2C in float64, rounded: rows of n reals to rows of n / 2 + 1
 * (re, im) float pairs. */
void emu_r2c(uint32_t n, size_t rows, const float *in, float *out);

/* The CRC kernels (mel_cuda_launch_crc32c): checks[i].got, i < n, the
 * CRC32C of the payload at base + off, by cuda_crc_dev.h's split and
 * arithmetic, thread by simulated thread. */
void emu_crc32c(const unsigned char *base, mel_crc *checks, uint32_t n);

#endif
