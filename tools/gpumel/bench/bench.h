/*
 * bench.h - what the files of gpumel-cuda-bench share: small helpers, the
 * option grid, the float64 reference and its comparison, the emulation
 * backend, gpumel-cuda.so loaded as gpumel loads it, and the runs
 * (parity, the CRC kernel's check, kernel timings, submit/wait timings)
 * that main wires to its options. (shape.h: --bench's shape from gpumel's options, in C.)
 *
 * Host-only C++, built with the host compiler against CUDA's headers: the
 * program reaches a GPU only through the .so it loads.
 */
#ifndef MELPIPE_GPUMEL_BENCH_H
#define MELPIPE_GPUMEL_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "../../../lib/rec.h"
#include "../cuda_mel.h"

#define PROG "gpumel-cuda-bench"

/* ------------------------------------------------------------------ */
/* util.cu */

/* Prints "gpumel-cuda-bench: MESSAGE" on stderr and exits 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
					      noreturn));
/* malloc and calloc that die when out of memory (0 bytes give 1). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
/* Seconds of CLOCK_MONOTONIC. */
double now(void);

/* The random numbers of the records and signals, reproducible: one
 * xorshift64* sequence, restarted by rnd_seed (seed 0 is where it starts
 * unless --seed is given). */
void rnd_seed(uint64_t seed);
uint64_t rnd(void);
/* uniform in [0, 1) */
double rndu(void);
/* uniform in lo..hi */
uint32_t rnd_range(uint32_t lo, uint32_t hi);

/* Bytes of an element of an output type, and element i of out as float. */
size_t out_size(int dtype);
float out_value(const void *out, int dtype, uint64_t i);
/* The median of v[0..n), n >= 1 (sorts v). */
float median(float *v, int n);

/* ------------------------------------------------------------------ */
/* grid.cu: the option sets every parity run goes through */

struct cfg {
	const char *name;
	double sr;
	uint32_t n_fft, win, hop;
	int window, center, pad;
	uint32_t n_mels;
	double fmin, fmax;
	int scale, norm, power, log;
	double amin, top_db;
	int out, bins;
	uint32_t len_min, len_max;   /* record lengths, samples */
};

extern const struct cfg grid[];
extern const size_t n_grid;
/* The 10-second job's gpumel options (docs/BENCHMARKS.md): 512-sample
 * records, n_fft 512, hop 512, 32 mels, no centring, dB, f16. */
extern const struct cfg ten_second_cfg;
/* Records of that job: 39,563 clips of 80 windows. */
#define TEN_SECOND_RECORDS 3165040u

/* The parameters of g. */
void cfg_params(const struct cfg *g, mel_params *p);

/* ------------------------------------------------------------------ */
/* reference.cu: features in float64, and the comparison with them */

/* Scratch of the reference for one parameter set. */
struct ref {
	const mel_params *p;
	const mel_fb *fb;
	double *win;           /* mel_window_build */
	double *re, *im;       /* n_fft */
	double *cs, *sn;       /* cos, sin(2 pi k / n_fft) */
	double *tr, *ti;       /* emu_dft's scratch, n_fft */
	double *pw;            /* n_fft / 2 + 1 */
	double *x;             /* one record's samples (fill_batch's) */
	size_t x_cap;
};

void ref_init(struct ref *R, const mel_params *p, const mel_fb *fb);
void ref_free(struct ref *R);
/* The features of the n samples x (frames frames of them) into
 * out[m * frames + j]. */
void ref_record(struct ref *R, const double *x, uint32_t n, uint32_t frames,
		double *out);

struct stats {
	uint64_t values, bad, batches, records;
	double worst;          /* largest |got - ref| / allowed */
	double max_db;         /* largest error in dB (or its equivalent) */
	char first_bad[640];
};

/* Compares cells features of record rec_index, at element off of out (p's
 * output type), with ref[0..cells), into st. */
void compare_record(const mel_params *p, const void *out, uint64_t off,
		    const double *ref, size_t cells, struct stats *st,
		    size_t rec_index);

/* ------------------------------------------------------------------ */
/* emu_backend.cu */

/* A mel_backend that runs the kernels' arithmetic on the CPU (cuda_emu.h)
 * on the fused path or the cuFFT path; dies when out of memory. */
mel_backend *emu_open(const mel_params *p, const mel_fb *fb, int fused);

/* ------------------------------------------------------------------ */
/* load.cu: gpumel-cuda.so, or a .so that stands in for it */

struct so {
	void *dl;
	mel_cuda_open_fn open;
	mel_cuda_time_fn time;
	mel_cuda_crc_fn crc;   /* NULL when the .so has no CRC hook */
	const char *path;
};

/* Loads path as gpumel does and finds both entry points (and the CRC
 * hook, where there is one); dies otherwise. */
void so_load(struct so *so, const char *path);
/* --probe: opens the backend of path on the 10-second job's parameters
 * and prints its name (returns 0) or why it failed (returns 1). */
int probe(const char *path);

/* ------------------------------------------------------------------ */
/* parity.cu */

/* Every option set of the grid (every third with quick), both FFT paths,
 * against the float64 reference: through so's backend with graphs on and
 * off, or through the emulation when so is NULL. Prints a line a run;
 * returns the number of runs that failed. */
int run_grid(struct so *so, int quick);

/* ------------------------------------------------------------------ */
/* crc.cu: --crc */

/* The CRC kernel through so's CRC hook against lib/crc32c.c, group by
 * group, then a timed batch of timed_payloads payloads of 80 KiB (reps
 * runs). Prints a line a group; returns 1 when one failed. */
int run_crc(struct so *so, size_t timed_payloads, int reps);

/* ------------------------------------------------------------------ */
/* timing.cu: --bench */

/* What --bench times: records of rec_samples samples through p. */
struct bench_shape {
	mel_params p;
	uint32_t rec_samples;
	int ten_second;  /* the 10-second job's: both FFT paths, top_db off
			    and 80, the table scripts/gpu-check reads */
};

/* The 10-second job's shape (512-sample records, ten_second_cfg). */
void shape_ten_second(struct bench_shape *s);
/* The kernels alone on one device-resident batch of k records, reps timed
 * runs: the 10-second job on each FFT path, input type and top_db; any
 * other shape on gpumel's own path, s16 and f32 input. */
void bench_kernels(struct so *so, const struct bench_shape *s, size_t k,
		   int reps);
/* submit/wait of total records in batches of k, copies included. */
void bench_pipe(struct so *so, const struct bench_shape *s, size_t total,
		size_t k);

#endif
