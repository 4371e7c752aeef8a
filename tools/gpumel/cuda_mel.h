/*
 * cuda_mel.h - the private interface of gpumel's CUDA backend: between its
 * host code (the files cuda_backend.h lists) and its kernels
 * (cuda_kernels.cu, cuda_crc.cu), and the benchmark hooks that
 * gpumel-cuda.so exports beside mel_cuda_open for gpumel-cuda-bench. C style (the few functions
 * the kernels share are marked __host__ __device__); included only by C++:
 * the .cu files and the headers beside them.
 *
 * The work of a batch, on the batch's own stream:
 *   copy in (records, frame tables, samples) -> [memset of the record
 *   maxima] -> compute -> [top_db clamp, or MFCC's DCT] -> copy out
 *   (features)
 * (MFCC: compute writes the bands in float to a scratch matrix per record,
 * the DCT kernel clamps them and writes the coefficients)
 * where compute is one kernel (fused: framing, window, a shared-memory FFT,
 * power, mel, log, cast) when n_fft is a power of two the fused kernel has
 * a size for, and otherwise frames kernel -> cuFFT R2C -> mel kernel, in
 * chunks of frames that bound the scratch memory.
 *
 * The constant tables the kernels read (twiddles, filterbank) are laid out
 * here, on the host, in the order the kernels' warps read them: each warp
 * load touches consecutive addresses (see mel_cuda_twiddles and
 * mel_cuda_tiles_build).
 */
#ifndef MELPIPE_GPUMEL_CUDA_MEL_H
#define MELPIPE_GPUMEL_CUDA_MEL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads of every block of the kernels but the fused one, and the
 * largest team of the fused kernel. */
#define MEL_BLOCK 256
/* Threads of a fused kernel block, unless one team is larger: few frames
 * per block, as each barrier waits for the block's slowest warp, but not
 * one, as a block per small frame costs more in block scheduling than it
 * saves in waits (for n_fft 512, two frames a block ran faster than one
 * or four). */
#define MEL_FUSED_BLOCK 128
/* Team (threads per frame) of the cuFFT path's frames and mel kernels. */
#define MEL_T_FRAMES 64
#define MEL_T_MEL 32
/* n_fft range of the fused kernel (powers of two). */
#define MEL_FUSED_MIN 8u
#define MEL_FUSED_MAX 4096u
/* Mels of one filterbank tile (see mel_cuda_tiles_build): a warp's lanes. */
#define MEL_TILE 32u
/* Twiddle tables of the fused kernel start at multiples of this many
 * entries (256 bytes), so that a warp's row reads fill whole 128-byte
 * lines. */
#define MEL_TW_ALIGN 32u

/* For functions the kernels call as well as the host (CUDA's headers make
 * __host__ and __device__ empty for a plain C++ compiler). */
#define MEL_HD __host__ __device__

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
	const float *tw;             /* fused: the twiddle tables, (re, im)
					pairs (mel_cuda_twiddles) */
	const uint32_t *fbt_tile;    /* the filterbank in tiles (mel_tiles):
					per tile (offset, rows) */
	const uint32_t *fbt_mel;     /* per mel (bin, lo, n, 0), 16-byte
					aligned */
	const float *fbt_w;          /* the tiles' weight rows */
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
	/* fbank (cuFFT path only): Kaldi's frames (md_kaldi_frame), the
	 * mels from row row0 (1: the log energy in row 0) */
	int fbank;
	uint32_t win_length, row0;
	int remove_dc, use_energy, raw_energy;
	float preemph;
	double dither, log_efloor;   /* log_efloor: ln(energy_floor), -inf */
	uint64_t seed;
	/* MFCC. compute: bands > 0 (rows per frame, mel_n_bands), and out
	 * is the float scratch, record r's [bands][n_frames] at frame_base[r]
	 * * bands. The DCT kernel: bandsp that scratch (n_bands rows),
	 * dct the [n_ceps][n_mels] matrix (lifter folded in), ceps_energy:
	 * coefficient 0 is band row 0, the log energy. */
	uint32_t bands, n_bands, n_ceps;
	int ceps_energy;
	const float *bandsp;
	const float *dct;
} mel_kargs;

/* Whether the fused kernel has a size for n_fft. */
static inline int mel_cuda_fused_ok(uint32_t n_fft)
{
	return n_fft >= MEL_FUSED_MIN && n_fft <= MEL_FUSED_MAX &&
	       (n_fft & (n_fft - 1)) == 0;
}

/* Whether the fused kernel makes fbank's frames for n_fft: its teams
 * (n_fft / 8 threads) must hold whole warps (md_fused_fbank_ok). */
static inline int mel_cuda_fused_fbank_ok(uint32_t n_fft)
{
	return mel_cuda_fused_ok(n_fft) && n_fft >= 256;
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
/* MFCC: the coefficients of the batch's n_frames frames from the bands
 * (a->bandsp), clamped to their record's max - top_db when a->rec_key. */
cudaError_t mel_cuda_launch_dct(const mel_kargs *a, uint32_t n_frames,
				cudaStream_t s);
/*
 * The CRC32C of n payloads (cuda_crc.cu): enqueues on stream s the
 * kernels that set checks[i].got to crc32c(0, base + checks[i].off,
 * checks[i].len) (lib/crc32c.h) for every i < n, reading only off and
 * len; base and checks are device pointers. Offsets need no alignment;
 * lengths may be 0 or any size. Nothing is launched for n == 0. Returns
 * the launch's error code (cudaSuccess, or why it was refused).
 */
cudaError_t mel_cuda_launch_crc32c(const unsigned char *base,
				   mel_crc *checks, uint32_t n,
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

/*
 * CRC hook, exported by gpumel-cuda.so (cuda_crc_check.cu) for
 * gpumel-cuda-bench --crc, on the calling thread's current device: copies
 * the bytes at host and the n checks to the device, runs
 * mel_cuda_launch_crc32c on them reps times (reps >= 1), each timed with
 * CUDA events into ms[i], and copies the checks back with got filled.
 * Returns 0, or -1 with why in err (errlen bytes).
 */
#define MEL_CUDA_CRC_SYMBOL "mel_cuda_crc32c_check"
typedef int (*mel_cuda_crc_fn)(const void *host, size_t bytes,
			       mel_crc *checks, uint32_t n, int reps,
			       float *ms, char *err, size_t errlen);

/* Environment variables read by mel_cuda_open and batch_alloc:
 * MELPIPE_CUDA_FFT=auto|fused|cufft picks the FFT path (auto: fused when
 * n_fft allows); MELPIPE_CUDA_GRAPH=0 turns CUDA graphs off;
 * MELPIPE_CUDA_CHUNK=N sets the frames of one cuFFT chunk (default: 32 MiB
 * of frames and spectra), for tests and tuning. */
#define MEL_CUDA_ENV_FFT "MELPIPE_CUDA_FFT"
#define MEL_CUDA_ENV_GRAPH "MELPIPE_CUDA_GRAPH"
#define MEL_CUDA_ENV_CHUNK "MELPIPE_CUDA_CHUNK"

/* The scalar kernel arguments of p for a batch of in_dtype samples (the
 * pointers are the caller's). */
static inline void mel_cuda_scalars(mel_kargs *a, const mel_params *p,
				    int in_dtype)
{
	a->n_fft = p->n_fft;
	a->hop = p->hop_length;
	a->pad = mel_pad_len(p);
	a->n_mels = p->n_mels;
	a->in_dtype = in_dtype;
	a->out_dtype = p->out_dtype;
	a->reflect = p->pad_mode == MEL_PAD_REFLECT;
	a->power = p->power;
	a->log = p->log;
	a->amin = (float)p->amin;
	a->log_mul = p->power == 1 ? 20.0f : 10.0f;
	a->top_db = (float)p->top_db;
	a->fbank = p->feature == MEL_FEAT_FBANK;
	a->win_length = p->win_length;
	a->row0 = mel_n_bands(p) - p->n_mels;
	a->n_bands = mel_n_bands(p);
	a->n_ceps = p->n_mfcc;
	a->ceps_energy = p->n_mfcc && a->row0;
	a->remove_dc = p->k.remove_dc;
	a->use_energy = p->k.use_energy;
	a->raw_energy = p->k.raw_energy;
	a->preemph = p->k.preemphasis;
	a->dither = p->k.dither;
	a->log_efloor = p->k.energy_floor > 0.0 ? log(p->k.energy_floor) :
			-INFINITY;
	a->seed = p->k.seed;
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

/*
 * The fused kernel's twiddle tables for an n_fft-point real transform, which
 * runs as an M-point complex FFT (M = n_fft / 2), as (re, im) float pairs
 * (entries) computed in float64 and rounded:
 *
 *   entries [0, M / 2): W^k = e^(-2 pi i k / n_fft), k < M / 2, for the
 *     split of the complex result into the real spectrum (md_power);
 *   then, at mel_cuda_tw_stage(M, NS), the table of each FFT stage that has
 *     sub-transforms of NS > 1 points (radix R): R - 1 rows of NS entries,
 *     row r - 1 holding e^(-2 pi i r k / (R NS)) for k < NS.
 *
 * Butterfly j of a stage needs row entries k = j mod NS, so the lanes of a
 * warp read consecutive entries of a row (one or two 128-byte lines per
 * load), where one table of e^(-2 pi i k / M) read at stride r M / (R NS)
 * gave each lane a line of its own. Tables start at multiples of
 * MEL_TW_ALIGN entries (zeros between them).
 *
 * The stages, as md_fft runs them: one radix-2 stage of NS = 1 first when
 * log2 M is odd, then radix-4 stages of NS = 1 or 2, times 4 each, up to
 * M / 4. Only NS > 1 needs a table.
 */
static inline MEL_HD uint32_t mel_cuda_tw_align(uint32_t n)
{
	return (n + MEL_TW_ALIGN - 1) / MEL_TW_ALIGN * MEL_TW_ALIGN;
}

/* Sub-transform length of the first radix-4 stage of an M-point FFT. */
static inline MEL_HD uint32_t mel_cuda_tw_ns0(uint32_t m)
{
	uint32_t lg = 0;

	while ((1u << lg) < m)
		lg++;
	return lg & 1 ? 2 : 1;
}

/* Entry where the table of the radix-4 stage with sub-transforms of ns
 * points starts (ns = M gives the tables' total length). The kernels call
 * it with constants, which the compiler folds. */
static inline MEL_HD uint32_t mel_cuda_tw_stage(uint32_t m, uint32_t ns)
{
	uint32_t off = mel_cuda_tw_align(m / 2);

	for (uint32_t s = mel_cuda_tw_ns0(m); s < ns; s *= 4)
		if (s > 1)
			off += mel_cuda_tw_align(3 * s);
	return off;
}

/* Entries of the twiddle tables for n_fft (a power of two, >= 8). */
static inline uint32_t mel_cuda_twiddles_len(uint32_t n_fft)
{
	return mel_cuda_tw_stage(n_fft / 2, n_fft / 2);
}

/* Fills tw with the tables: 2 * mel_cuda_twiddles_len(n_fft) floats. */
static inline void mel_cuda_twiddles(uint32_t n_fft, float *tw)
{
	uint32_t m = n_fft / 2, len = mel_cuda_twiddles_len(n_fft);

	for (uint32_t i = 0; i < 2 * len; i++)
		tw[i] = 0.0f;
	for (uint32_t k = 0; k < m / 2; k++) {
		double a = 2.0 * M_PI * (double)k / (double)n_fft;

		tw[2 * k] = (float)cos(a);
		tw[2 * k + 1] = (float)-sin(a);
	}
	for (uint32_t ns = mel_cuda_tw_ns0(m); ns < m; ns *= 4) {
		float *t = tw + 2 * (size_t)mel_cuda_tw_stage(m, ns);

		if (ns == 1)
			continue;
		for (uint32_t r = 1; r < 4; r++)
			for (uint32_t k = 0; k < ns; k++) {
				double a = 2.0 * M_PI * (double)(r * k) /
					   (double)(4 * ns);
				float *e = t + 2 * ((size_t)(r - 1) * ns + k);

				e[0] = (float)cos(a);
				e[1] = (float)-sin(a);
			}
	}
}

/*
 * The filterbank as the mel phase reads it: mels in tiles of MEL_TILE
 * consecutive mels (the last one narrower), each tile a dense matrix of
 * rows x MEL_TILE weights, row-major, so that at row i the lanes of a
 * warp, one mel each, read consecutive floats, where the sparse layout
 * (backend.h) gave each lane a line of its own. The fixed row length lets
 * the unrolled loop address rows by immediate offsets.
 *
 * Tile g (width = min(MEL_TILE, n_mels - g MEL_TILE) mels): tile[2g] =
 * offset of its rows in w, tile[2g + 1] = rows, the largest count of its
 * mels.
 * Mel m, n = count[m] weights from bin first[m]: mel[4m + 1] = lo, the row
 * where its weights start (0 <= lo <= rows - n); mel[4m] = bin = first -
 * lo (mod 2^32), so that row i is bin bin + i; mel[4m + 2] = n;
 * mel[4m + 3] = 0. Row i, column c of the tile holds mel c's weight of
 * bin bin + i for lo <= i < lo + n, zero elsewhere. The kernels add only
 * rows lo .. lo + n - 1 of each mel: a mel's sum runs over exactly its own
 * bins, in order, as the sparse sum does (a zero weight times an infinite
 * power would be NaN), and no bin outside them is ever read.
 *
 * lo is free within its range, and is chosen so that the lanes' P[bin + i]
 * reads at each row fall in distinct shared-memory banks: bin mod 32
 * distinct across the tile's mels (mel_cuda_tile_spread). Left at lo = 0,
 * filters whose starts are about 6.5 bins apart (the 10-second job's 32
 * mels of a 512-point FFT) repeat every 5 lanes: 5-way conflicts on every
 * row.
 *
 * The padding costs (largest / mean count of a tile) times the sparse
 * weights in a full tile, and a narrower last tile up to MEL_TILE x n_bins
 * floats: 64 n_fft bytes, no more than the cuFFT path's smallest scratch
 * (8 frames and their spectra).
 */
typedef struct mel_tiles {
	uint32_t n_tiles;
	uint32_t n_w;          /* floats in w */
	uint32_t *tile;        /* [n_tiles][2] */
	uint32_t *mel;         /* [n_mels][4] */
	float *w;              /* [n_w] */
} mel_tiles;

static inline void mel_cuda_tiles_free(mel_tiles *t)
{
	free(t->tile);
	free(t->mel);
	free(t->w);
	t->tile = t->mel = NULL;
	t->w = NULL;
}

/* One augmenting path of mel_cuda_tile_spread (Kuhn's matching): gives
 * mel c of the tile a bank (first - lo) mod 32, lo <= rows - count,
 * taking a bank from another mel if that one can move to a free one.
 * owner[b]: the mel holding bank b or -1; lo[c]: mel c's choice. */
static inline int mel_cuda_tile_augment(const mel_fb *fb, uint32_t m0,
					uint32_t rows, uint32_t c,
					int *owner, uint32_t *lo,
					uint32_t *seen)
{
	uint32_t first = fb->first[m0 + c], span = rows - fb->count[m0 + c];

	for (uint32_t l = 0; l <= span && l < 32; l++) {
		uint32_t b = (first - l) % 32;

		if (*seen & (1u << b))
			continue;
		*seen |= 1u << b;
		if (owner[b] < 0 ||
		    mel_cuda_tile_augment(fb, m0, rows, (uint32_t)owner[b],
					  owner, lo, seen)) {
			owner[b] = (int)c;
			lo[c] = l;
			return 1;
		}
	}
	return 0;
}

/* lo of the width mels of the tile from mel m0 (rows rows): distinct
 * banks for as many mels as the ranges allow (a maximum matching), lo = 0
 * for the others and for empty filters (never read). */
static inline void mel_cuda_tile_spread(const mel_fb *fb, uint32_t m0,
					uint32_t width, uint32_t rows,
					uint32_t *lo)
{
	int owner[32];

	for (uint32_t b = 0; b < 32; b++)
		owner[b] = -1;
	for (uint32_t c = 0; c < width; c++) {
		uint32_t seen = 0;

		lo[c] = 0;
		if (fb->count[m0 + c])
			mel_cuda_tile_augment(fb, m0, rows, c, owner, lo,
					      &seen);
	}
}

/* Builds the tiles of fb (whose filters lie within its bins and weights,
 * as mel_cuda_open checks). Returns 0, or -1 when out of memory or past
 * 2^32 weights (t then holds nothing). */
static inline int mel_cuda_tiles_build(const mel_fb *fb, mel_tiles *t)
{
	uint32_t nm = fb->n_mels, G = (nm + MEL_TILE - 1) / MEL_TILE;
	uint64_t n_w = 0;

	t->n_tiles = G;
	t->tile = (uint32_t *)calloc(2 * (size_t)G + 1, sizeof(uint32_t));
	t->mel = (uint32_t *)calloc(4 * (size_t)nm + 1, sizeof(uint32_t));
	t->w = NULL;
	if (!t->tile || !t->mel)
		goto fail;
	for (uint32_t g = 0; g < G; g++) {
		uint32_t m0 = g * MEL_TILE, width = nm - m0, rows = 0;

		width = width < MEL_TILE ? width : MEL_TILE;
		for (uint32_t c = 0; c < width; c++)
			if (fb->count[m0 + c] > rows)
				rows = fb->count[m0 + c];
		t->tile[2 * g] = (uint32_t)n_w;
		t->tile[2 * g + 1] = rows;
		n_w += (uint64_t)rows * MEL_TILE;
		if (n_w > UINT32_MAX)
			goto fail;
	}
	t->n_w = (uint32_t)n_w;
	t->w = (float *)calloc(n_w ? n_w : 1, sizeof(float));
	if (!t->w)
		goto fail;
	for (uint32_t g = 0; g < G; g++) {
		uint32_t m0 = g * MEL_TILE, width = nm - m0, lo[MEL_TILE];

		width = width < MEL_TILE ? width : MEL_TILE;
		mel_cuda_tile_spread(fb, m0, width, t->tile[2 * g + 1], lo);
		for (uint32_t c = 0; c < width; c++) {
			uint32_t m = m0 + c;
			float *col = t->w + t->tile[2 * g] + c;

			t->mel[4 * m] = fb->first[m] - lo[c];
			t->mel[4 * m + 1] = lo[c];
			t->mel[4 * m + 2] = fb->count[m];
			for (uint32_t i = 0; i < fb->count[m]; i++)
				col[(size_t)(lo[c] + i) * MEL_TILE] =
					fb->w[fb->off[m] + i];
		}
	}
	return 0;
fail:
	mel_cuda_tiles_free(t);
	return -1;
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
