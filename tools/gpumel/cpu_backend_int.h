/*
 * cpu_backend_int.h - what gpumel's CPU backend's files share privately:
 * cpu_backend.c (the threads, their shares of a batch, submit and wait,
 * set-up and teardown) and cpu_frame.c (one frame, and the loops over a
 * run of frames). Not for the rest of gpumel: its interface is
 * backend.h (mel_cpu_open).
 */
#ifndef MELPIPE_GPUMEL_CPU_BACKEND_INT_H
#define MELPIPE_GPUMEL_CPU_BACKEND_INT_H

#include <fftw3.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* A record only partly computed by one thread, with that part's max. */
struct part {
	size_t rec;
	float max;
};

/* One thread of the pool (w[0] is the calling thread): its scratch, its
 * share of the batch and the records it computed only in part. */
struct worker {
	struct cpu_ctx *c;
	pthread_t tid;
	int started;
	float *frame;          /* n_fft windowed samples (FFTW input) */
	fftwf_complex *spec;   /* n_bins (FFTW output) */
	float *mag;            /* n_bins: |X|^2 or |X| */
	float *mel;            /* n_bands of one frame after the log (and
				  n_rows for MFCC's coefficients) */
	uint16_t *mel16;       /* the same in a 16-bit output type */
	double *dv;            /* MFCC: n_mels clamped bands */
	uint64_t g0, g1;       /* this thread's frames in the batch */
	struct part part[2];
	int n_part;
};

/* The backend's state (mel_backend.ctx): the parameters and what is
 * derived from them once, the plan, the pool, the batch being computed. */
struct cpu_ctx {
	mel_params p;
	const mel_fb *fb;
	float *win_f32;        /* the window */
	float *win_s16;        /* the window / 32768: scales s16 exactly */
	uint32_t win_lo, win_hi; /* nonzero part of the window in n_fft */
	uint32_t n_rows;       /* rows of a frame (mel_n_rows) */
	uint32_t n_bands;      /* rows before the DCT (mel_n_bands) */
	uint32_t row0;         /* the first mel's band: 1 after the energy */
	int mfcc;              /* n_mfcc > 0: the two passes */
	double *dct;           /* MFCC: [n_rows][n_mels] (mel_dct_build) */
	int pass;              /* 0 the bands, 1 the DCT (MFCC) */
	float *bands;          /* MFCC: record i's [n_bands][n_frames] at
				  fstart[i] * n_bands */
	size_t bands_cap;      /* floats */
	float *rmax;           /* MFCC: each record's max, for top_db */
	size_t rmax_cap;
	int fbank;             /* Kaldi's frames (kaldi_frame) */
	double log_efloor;     /* fbank: ln(energy_floor), or -inf */
	float amin, top_db;
	float log_mul;         /* ln -> the output's log: 1, 10 or 20/ln 10 */
	int clamp;             /* --top-db applies */
	size_t out_size;       /* bytes per output element */
	fftwf_plan plan;
	int nthreads;
	struct worker *w;

	pthread_mutex_t mu;
	pthread_cond_t go, done;
	int sync_ok;           /* mu and the conds were initialised */
	uint64_t gen;          /* bumped for every batch the workers run */
	int remaining;         /* workers still busy on this batch */
	int stop;

	mel_batch *cur;        /* batch being computed */
	uint64_t *fstart;      /* first frame of record i in the batch, n+1 */
	size_t fstart_cap;
	mel_batch *finished;   /* returned by the next wait */
};

/* cpu_frame.c: called from cpu_backend.c once per run of frames or per
 * record, never per frame, so that what runs per frame stays in that
 * file. */

/* Frames [a, e) of record ri of the current batch (c->cur) into the
 * output, or with MFCC into the scratch bands; returns their max. */
float run_frames(struct worker *w, size_t ri, uint64_t a, uint64_t e);
/* MFCC's second pass: frames [a, e) of record ri through the DCT into
 * the output. */
void dct_frames(struct worker *w, size_t ri, uint64_t a, uint64_t e);
/* Raises every element of a record's matrix (n elements of the output
 * type) to lowest. */
void clamp_matrix(const struct cpu_ctx *c, void *out, uint64_t n,
		  float lowest);
/* Where record r's matrix starts in batch b's output. */
void *rec_out(const struct cpu_ctx *c, const mel_batch *b,
	      const mel_rec *r);

#endif
