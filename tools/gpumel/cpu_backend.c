/*
 * cpu_backend.c - gpumel's CPU backend: FFTW3f on a pool of worker threads.
 *
 * A batch is cut into equal runs of frames (not records, so that one long
 * record still keeps every thread busy); the calling thread takes the
 * first run and the workers the others. Every frame goes through the same
 * code and the same single-transform FFTW plan, so the output does not
 * depend on the number of threads or on where a frame falls in a batch.
 *
 * Per frame: gather n_fft samples (padding at the record's edges when
 * centred), multiply by the window, r2c FFT, |X|^2 or |X|, the sparse mel
 * filterbank, the log, the cast to the output type, written straight into
 * the record's [n_rows][n_frames] matrix. --top-db needs each record's
 * maximum: a record that one thread computed whole is clamped by that
 * thread at once; one split between threads is clamped after the join; a
 * record flagged MEL_REC_NO_CLAMP (a piece of an item) is not clamped.
 *
 * fbank frames are Kaldi's (kaldi_frame): win_length samples in Kaldi's
 * scale, dithered, mean removed, pre-emphasised and windowed at the start
 * of the n_fft, the log energy beside; the rest is the same path with
 * ln(max(x, epsilon)), the energy in row 0 when asked for.
 *
 * MFCCs take two passes over the batch, as the DCT needs the bands
 * clamped to their record's maximum, known only when the whole record is
 * computed: the bands go, in float, to a scratch matrix per record (the
 * maxima noted as for the clamp), then each thread takes its frames
 * through the DCT (dct_frames) into the output.
 */
#include <errno.h>
#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/half.h"
#include "../../lib/rec.h"
#include "backend.h"
#include "dither.h"

/* A record only partly computed by one thread, with that part's max. */
struct part {
	size_t rec;
	float max;
};

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

/* ------------------------------------------------------------------ */
/* One frame */

/* numpy.pad's reflect, repeated for pads longer than the signal. */
static int64_t reflect_index(int64_t i, int64_t n)
{
	int64_t period = 2 * (n - 1);

	if (n == 1)
		return 0;
	i %= period;
	if (i < 0)
		i += period;
	return i < n ? i : period - i;
}

/* Sample i of the record as padded (i may fall outside [0, n)). */
static float padded_sample(const struct cpu_ctx *c, const void *x,
			   int in_dtype, int64_t i, int64_t n)
{
	if (i < 0 || i >= n) {
		if (c->p.pad_mode == MEL_PAD_CONSTANT)
			return 0.0f;
		i = reflect_index(i, n);
	}
	if (in_dtype == REC_S16)
		return (float)((const int16_t *)x)[i];
	return ((const float *)x)[i];
}

/*
 * Eight lanes at a time with the compilers' vector extensions, which
 * split them into what the target has (two SSE2 operations on plain
 * x86-64). Every lane does the IEEE operation the scalar tail does, so a
 * sample gives the same bits whichever path takes it.
 */
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef int16_t v8h __attribute__((vector_size(16)));

/* dst[j] = x[j] * w[j] for j in [lo, hi), s16 samples. */
static void window_s16(float *dst, const int16_t *x, const float *w,
		       uint32_t lo, uint32_t hi)
{
	uint32_t j = lo;

	for (; j + 8 <= hi; j += 8) {
		v8h h;
		v8f wv, f;

		memcpy(&h, x + j, sizeof(h));
		memcpy(&wv, w + j, sizeof(wv));
		f = __builtin_convertvector(__builtin_convertvector(h, v8i),
					    v8f) * wv;
		memcpy(dst + j, &f, sizeof(f));
	}
	for (; j < hi; j++)
		dst[j] = (float)x[j] * w[j];
}

/* The same for f32 samples. */
static void window_f32(float *dst, const float *x, const float *w,
		       uint32_t lo, uint32_t hi)
{
	uint32_t j = lo;

	for (; j + 8 <= hi; j += 8) {
		v8f xv, wv;

		memcpy(&xv, x + j, sizeof(xv));
		memcpy(&wv, w + j, sizeof(wv));
		xv *= wv;
		memcpy(dst + j, &xv, sizeof(xv));
	}
	for (; j < hi; j++)
		dst[j] = x[j] * w[j];
}

/* Fills frame with the windowed samples of frame f of record r. */
static void fill_frame(const struct cpu_ctx *c, const mel_batch *b,
		       const mel_rec *r, uint64_t f, float *frame)
{
	int64_t n = r->n_samples;
	int pad = c->p.center && !(r->flags & MEL_REC_PADDED);
	int64_t start = (int64_t)(f * c->p.hop_length) -
			(pad ? (int64_t)(c->p.n_fft / 2) : 0);
	int s16 = b->in_dtype == REC_S16;
	const float *win = s16 ? c->win_s16 : c->win_f32;
	const void *x = s16 ?
		(const void *)((const int16_t *)b->in + r->in_off) :
		(const void *)((const float *)b->in + r->in_off);
	uint32_t lo = c->win_lo, hi = c->win_hi;

	if (start + lo < 0 || start + hi > n) {
		/* at an edge: padding */
		for (uint32_t j = lo; j < hi; j++)
			frame[j] = padded_sample(c, x, b->in_dtype, start + j,
						 n) * win[j];
	} else if (s16) {
		window_s16(frame, (const int16_t *)x + start, win, lo, hi);
	} else {
		window_f32(frame, (const float *)x + start, win, lo, hi);
	}
}

/* Kaldi's reflection at a record's edges (ExtractWindow): -1 -> 0,
 * n -> n - 1, repeated with period 2 n for frames longer than it. */
static int64_t kaldi_index(int64_t i, int64_t n)
{
	int64_t m = i % (2 * n);

	if (m < 0)
		m += 2 * n;
	return m < n ? m : 2 * n - 1 - m;
}

/* ln of the sum of squares of x[0, n), floored as Kaldi: at float's
 * epsilon, then at energy_floor when that is > 0. */
static float log_energy(const struct cpu_ctx *c, const float *x, uint32_t n)
{
	double e = 0.0;

	for (uint32_t j = 0; j < n; j++)
		e += (double)x[j] * x[j];
	e = log(e > c->p.amin ? e : c->p.amin);
	return (float)(e > c->log_efloor ? e : c->log_efloor);
}

/*
 * Frame f of record r as Kaldi's ExtractWindow and ProcessWindow make it,
 * in frame[0, win_length) (the rest of the n_fft stays zero): the samples
 * (s16 as they are, f32 times 32768, reflected at the record's edges),
 * plus dither times the noise (dither.h) of the frame's place in its
 * clip, less their mean, pre-emphasised, times the window. Returns the
 * frame's log energy: before pre-emphasis (raw_energy) or after the
 * window. Sums in float64, the rest in float.
 */
static float kaldi_frame(const struct cpu_ctx *c, const mel_batch *b,
			 const mel_rec *r, uint64_t f, float *frame)
{
	const mel_kaldi *k = &c->p.k;
	uint32_t W = c->p.win_length;
	int64_t n = r->n_samples, hop = c->p.hop_length;
	int64_t start = (int64_t)f * hop - ((r->flags & MEL_REC_PADDED) ? 0 :
					    (int64_t)mel_pad_len(&c->p));
	float coef = k->preemphasis, energy = 0.0f;

	for (uint32_t j = 0; j < W; j++) {
		int64_t i = start + j;

		if (i < 0 || i >= n)
			i = kaldi_index(i, n);
		frame[j] = b->in_dtype == REC_S16 ?
			   (float)((const int16_t *)b->in)[r->in_off + i] :
			   ((const float *)b->in)[r->in_off + i] * 32768.0f;
	}
	if (k->dither != 0.0)
		for (uint32_t j = 0; j < W; j++)
			frame[j] += (float)(k->dither * mel_dither_noise(
				k->seed, r->clip, r->pos0 + (int64_t)f * hop,
				j));
	if (k->remove_dc) {
		double sum = 0.0;
		float mean;

		for (uint32_t j = 0; j < W; j++)
			sum += frame[j];
		mean = (float)(sum / W);
		for (uint32_t j = 0; j < W; j++)
			frame[j] -= mean;
	}
	if (k->use_energy && k->raw_energy)
		energy = log_energy(c, frame, W);
	if (coef != 0.0f) {
		for (uint32_t j = W - 1; j > 0; j--)
			frame[j] -= coef * frame[j - 1];
		frame[0] -= coef * frame[0];
	}
	for (uint32_t j = 0; j < W; j++)
		frame[j] *= c->win_f32[j];
	if (k->use_energy && !k->raw_energy)
		energy = log_energy(c, frame, W);
	return energy;
}

/* mag[k] = |X_k|^2 or |X_k|. */
static void magnitude(const struct cpu_ctx *c, const float *spec,
		      float *mag)
{
	uint32_t n_bins = c->fb->n_bins;

	uint32_t k = 0;

	/* spec: n_bins (re, im) pairs */
	for (; k + 4 <= n_bins; k += 4) {
		v8f v;
		v4f re, im;

		memcpy(&v, spec + 2 * k, sizeof(v));
		re = __builtin_shufflevector(v, v, 0, 2, 4, 6);
		im = __builtin_shufflevector(v, v, 1, 3, 5, 7);
		re = re * re + im * im;
		memcpy(mag + k, &re, sizeof(re));
	}
	for (; k < n_bins; k++)
		mag[k] = spec[2 * k] * spec[2 * k] +
			 spec[2 * k + 1] * spec[2 * k + 1];
	if (c->p.power == 1)
		for (k = 0; k < n_bins; k++)
			mag[k] = sqrtf(mag[k]);
}

/* mel[m] = the filterbank applied to mag, then the log; returns the
 * frame's max. */
static float mel_log(const struct cpu_ctx *c, const float *mag, float *mel)
{
	const mel_fb *fb = c->fb;
	float max = -INFINITY;

	for (uint32_t m = 0; m < fb->n_mels; m++) {
		const float *w = fb->w + fb->off[m];
		const float *x = mag + fb->first[m];
		float s = 0.0f;

		for (uint32_t k = 0; k < fb->count[m]; k++)
			s += w[k] * x[k];
		/* 10 log10(x) as (10 / ln 10) ln(x): glibc's logf is much
		 * faster than its log10f, and as accurate to a rounding */
		if (c->p.log != MEL_LOG_NONE)
			s = c->log_mul * logf(s > c->amin ? s : c->amin);
		mel[m] = s;
		max = s > max ? s : max;
	}
	return max;
}

/* Writes one frame's rows into column f of an [n_rows][nf] matrix; the
 * 16-bit types are converted as an array first (F16C where the CPU has
 * it, the same bits as the scalar conversion). */
static void store_column(const struct cpu_ctx *c, struct worker *w,
			 void *out, uint64_t nf, uint64_t f)
{
	uint32_t n_rows = c->n_rows;

	if (c->p.out_dtype == REC_F32) {
		for (uint32_t m = 0; m < n_rows; m++)
			((float *)out)[m * nf + f] = w->mel[m];
		return;
	}
	if (c->p.out_dtype == REC_F16)
		half_from_f32_array(w->mel16, w->mel, n_rows);
	else
		bf16_from_f32_array(w->mel16, w->mel, n_rows);
	for (uint32_t m = 0; m < n_rows; m++)
		((uint16_t *)out)[m * nf + f] = w->mel16[m];
}

/* Raises every element of a record's matrix (n elements) to lowest. The
 * clamp runs after the cast: rounding is monotonic, so max(round(x),
 * round(lowest)) is round(max(x, lowest)). */
static void clamp_matrix(const struct cpu_ctx *c, void *out, uint64_t n,
			 float lowest)
{
	uint16_t h;
	float hf;

	switch (c->p.out_dtype) {
	case REC_F16:
		h = half_from_f32(lowest);
		hf = half_to_f32(h);
		for (uint64_t i = 0; i < n; i++)
			if (half_to_f32(((uint16_t *)out)[i]) < hf)
				((uint16_t *)out)[i] = h;
		break;
	case REC_BF16:
		h = bf16_from_f32(lowest);
		hf = bf16_to_f32(h);
		for (uint64_t i = 0; i < n; i++)
			if (bf16_to_f32(((uint16_t *)out)[i]) < hf)
				((uint16_t *)out)[i] = h;
		break;
	default:
		for (uint64_t i = 0; i < n; i++)
			if (((float *)out)[i] < lowest)
				((float *)out)[i] = lowest;
		break;
	}
}

static void *rec_out(const struct cpu_ctx *c, const mel_batch *b,
		     const mel_rec *r)
{
	return (char *)b->out + r->out_off * c->out_size;
}

/* MFCC's first pass: the frame's bands into column f of record ri's
 * scratch matrix. */
static void store_bands(const struct cpu_ctx *c, const struct worker *w,
			size_t ri, uint64_t f)
{
	uint64_t nf = c->cur->rec[ri].n_frames;
	float *x = c->bands + c->fstart[ri] * c->n_bands;

	for (uint32_t m = 0; m < c->n_bands; m++)
		x[m * nf + f] = w->mel[m];
}

/* Frames [a, b) of record ri; returns their max. */
static float run_frames(struct worker *w, size_t ri, uint64_t a, uint64_t e)
{
	const struct cpu_ctx *c = w->c;
	const mel_batch *b = c->cur;
	const mel_rec *r = &b->rec[ri];
	void *out = rec_out(c, b, r);
	float max = -INFINITY, fm;

	for (uint64_t f = a; f < e; f++) {
		if (c->fbank)
			w->mel[0] = kaldi_frame(c, b, r, f, w->frame);
		else
			fill_frame(c, b, r, f, w->frame);
		fftwf_execute_dft_r2c(c->plan, w->frame, w->spec);
		magnitude(c, (const float *)w->spec, w->mag);
		fm = mel_log(c, w->mag, w->mel + c->row0);
		max = fm > max ? fm : max;
		if (c->mfcc)
			store_bands(c, w, ri, f);
		else
			store_column(c, w, out, r->n_frames, f);
	}
	return max;
}

/* Frames [a, e) of record ri through the DCT: its bands raised to its
 * max - top_db (unless a piece), the coefficients, fbank's log energy as
 * coefficient 0 with use_energy, into the output. */
static void dct_frames(struct worker *w, size_t ri, uint64_t a, uint64_t e)
{
	const struct cpu_ctx *c = w->c;
	const mel_batch *b = c->cur;
	const mel_rec *r = &b->rec[ri];
	uint64_t nf = r->n_frames;
	const float *x = c->bands + c->fstart[ri] * c->n_bands;
	const uint32_t M = c->p.n_mels;
	float lowest = -INFINITY;

	if (c->clamp && !(r->flags & MEL_REC_NO_CLAMP))
		lowest = c->rmax[ri] - c->top_db;
	for (uint64_t f = a; f < e; f++) {
		double *v = w->dv;

		for (uint32_t m = 0; m < M; m++) {
			float y = x[(uint64_t)(c->row0 + m) * nf + f];

			v[m] = y > lowest ? y : lowest;
		}
		for (uint32_t k = 0; k < c->n_rows; k++) {
			const double *d = c->dct + (size_t)k * M;
			double s = 0.0;

			for (uint32_t m = 0; m < M; m++)
				s += d[m] * v[m];
			w->mel[k] = (float)s;
		}
		if (c->row0)
			w->mel[0] = x[f];
		store_column(c, w, rec_out(c, b, r), nf, f);
	}
}

/* The last record whose first frame is at or before g. */
static size_t find_record(const struct cpu_ctx *c, uint64_t g)
{
	size_t lo = 0, hi = c->cur->n; /* fstart[lo] <= g < fstart[hi] */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->fstart[mid] <= g)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Clamps record ri of the current batch to its max - top_db (MFCC:
 * notes its max for the DCT pass). */
static void clamp_record(const struct cpu_ctx *c, size_t ri, float max)
{
	const mel_rec *r = &c->cur->rec[ri];

	if (c->mfcc) {
		c->rmax[ri] = max;
		return;
	}
	clamp_matrix(c, rec_out(c, c->cur, r),
		     (uint64_t)c->n_rows * r->n_frames, max - c->top_db);
}

/* A worker's share of the batch: frames [g0, g1). */
static void run_share(struct worker *w)
{
	const struct cpu_ctx *c = w->c;

	w->n_part = 0;
	if (w->g0 >= w->g1)
		return;
	for (size_t ri = find_record(c, w->g0); ri < c->cur->n; ri++) {
		uint64_t fs = c->fstart[ri], fe = c->fstart[ri + 1];
		uint64_t a, e;
		float max;

		if (fs >= w->g1)
			break;
		a = w->g0 > fs ? w->g0 - fs : 0;
		e = (w->g1 < fe ? w->g1 : fe) - fs;
		if (a >= e)
			continue;
		if (c->pass == 1) {
			dct_frames(w, ri, a, e);
			continue;
		}
		max = run_frames(w, ri, a, e);
		if (!c->clamp || (c->cur->rec[ri].flags & MEL_REC_NO_CLAMP))
			continue;
		if (a == 0 && e == fe - fs) {
			clamp_record(c, ri, max);
		} else {
			w->part[w->n_part].rec = ri;
			w->part[w->n_part].max = max;
			w->n_part++;
		}
	}
}

/* Clamps the records that were split between threads, each to its max
 * over all the threads' parts. Parts come in record order. */
static void clamp_split_records(struct cpu_ctx *c)
{
	size_t rec = SIZE_MAX;
	float max = -INFINITY;

	for (int t = 0; t < c->nthreads; t++) {
		for (int i = 0; i < c->w[t].n_part; i++) {
			const struct part *pt = &c->w[t].part[i];

			if (pt->rec == rec) {
				max = fmaxf(max, pt->max);
				continue;
			}
			if (rec != SIZE_MAX)
				clamp_record(c, rec, max);
			rec = pt->rec;
			max = pt->max;
		}
	}
	if (rec != SIZE_MAX)
		clamp_record(c, rec, max);
}

/* ------------------------------------------------------------------ */
/* Thread pool */

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct cpu_ctx *c = w->c;
	uint64_t seen = 0;

	for (;;) {
		pthread_mutex_lock(&c->mu);
		while (c->gen == seen && !c->stop)
			pthread_cond_wait(&c->go, &c->mu);
		if (c->stop) {
			pthread_mutex_unlock(&c->mu);
			break;
		}
		seen = c->gen;
		pthread_mutex_unlock(&c->mu);

		run_share(w);

		pthread_mutex_lock(&c->mu);
		if (--c->remaining == 0)
			pthread_cond_signal(&c->done);
		pthread_mutex_unlock(&c->mu);
	}
	return NULL;
}

/* Splits the batch's frames evenly between the threads. */
static void assign_shares(struct cpu_ctx *c, uint64_t total)
{
	for (int t = 0; t < c->nthreads; t++) {
		c->w[t].g0 = total * (uint64_t)t / (uint64_t)c->nthreads;
		c->w[t].g1 = total * (uint64_t)(t + 1) / (uint64_t)c->nthreads;
	}
}

/* Runs the current batch on every thread and waits for them all. */
static void run_all(struct cpu_ctx *c)
{
	pthread_mutex_lock(&c->mu);
	c->gen++;
	c->remaining = c->nthreads - 1;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->mu);

	run_share(&c->w[0]);

	pthread_mutex_lock(&c->mu);
	while (c->remaining > 0)
		pthread_cond_wait(&c->done, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* ------------------------------------------------------------------ */
/* The backend interface */

static int cpu_batch_alloc(mel_backend *be, mel_batch *b, size_t in_cap,
			   size_t out_cap, size_t cap_recs)
{
	memset(b, 0, sizeof(*b));
	b->in = malloc(in_cap ? in_cap : 1);
	b->out = malloc(out_cap ? out_cap : 1);
	b->rec = malloc((cap_recs ? cap_recs : 1) * sizeof(*b->rec));
	if (!b->in || !b->out || !b->rec) {
		snprintf(be->err, sizeof(be->err), "cannot allocate a batch "
			 "of %zu + %zu bytes: %s", in_cap, out_cap,
			 strerror(ENOMEM));
		free(b->in);
		free(b->out);
		free(b->rec);
		memset(b, 0, sizeof(*b));
		return -1;
	}
	b->in_cap = in_cap;
	b->out_cap = out_cap;
	b->cap_recs = cap_recs;
	return 0;
}

static void cpu_batch_free(mel_backend *be, mel_batch *b)
{
	(void)be;
	free(b->in);
	free(b->out);
	free(b->rec);
	b->in = b->out = NULL;
	b->rec = NULL;
	b->in_cap = b->out_cap = b->cap_recs = 0;
}

/* Checks that every record lies inside the batch's buffers: a host loop
 * bug must not become a wild read or write. */
static int check_batch(mel_backend *be, const struct cpu_ctx *c,
		       const mel_batch *b)
{
	size_t in_size = rec_dtype_size(b->in_dtype);

	if (b->in_dtype != REC_S16 && b->in_dtype != REC_F32) {
		snprintf(be->err, sizeof(be->err), "batch input type %d is "
			 "neither s16 nor f32", b->in_dtype);
		return -1;
	}
	for (size_t i = 0; i < b->n; i++) {
		const mel_rec *r = &b->rec[i];
		uint64_t out_n = (uint64_t)c->n_rows * r->n_frames;

		if (r->n_frames != mel_rec_frames(&c->p, r) ||
		    (r->in_off + r->n_samples) * in_size > b->in_cap ||
		    (r->out_off + out_n) * c->out_size > b->out_cap) {
			snprintf(be->err, sizeof(be->err), "batch record %zu "
				 "does not fit its buffers or its frame "
				 "count", i);
			return -1;
		}
	}
	return 0;
}

/* MFCC's scratch for batch b (fstart set): its bands and maxima. */
static int mfcc_scratch(mel_backend *be, struct cpu_ctx *c,
			const mel_batch *b)
{
	size_t need = (size_t)c->fstart[b->n] * c->n_bands;

	if (need > c->bands_cap) {
		float *x = realloc(c->bands, need * sizeof(*x));

		if (!x)
			goto nomem;
		c->bands = x;
		c->bands_cap = need;
	}
	if (b->n > c->rmax_cap) {
		float *x = realloc(c->rmax, b->n * sizeof(*x));

		if (!x)
			goto nomem;
		c->rmax = x;
		c->rmax_cap = b->n;
	}
	return 0;
nomem:
	snprintf(be->err, sizeof(be->err), "cannot allocate the MFCC "
		 "scratch of %zu frames: %s", (size_t)c->fstart[b->n],
		 strerror(ENOMEM));
	return -1;
}

static int cpu_submit(mel_backend *be, mel_batch *b)
{
	struct cpu_ctx *c = be->ctx;

	if (c->finished) {
		snprintf(be->err, sizeof(be->err), "submit with a batch "
			 "still in flight (depth is 1)");
		return -1;
	}
	if (b->n > b->cap_recs || check_batch(be, c, b) < 0)
		return -1;
	if (b->n + 1 > c->fstart_cap) {
		uint64_t *fs = realloc(c->fstart, (b->n + 1) * sizeof(*fs));

		if (!fs) {
			snprintf(be->err, sizeof(be->err), "cannot allocate "
				 "the frame index of %zu records: %s", b->n,
				 strerror(ENOMEM));
			return -1;
		}
		c->fstart = fs;
		c->fstart_cap = b->n + 1;
	}
	c->fstart[0] = 0;
	for (size_t i = 0; i < b->n; i++)
		c->fstart[i + 1] = c->fstart[i] + b->rec[i].n_frames;
	if (c->mfcc && mfcc_scratch(be, c, b) < 0)
		return -1;
	c->cur = b;
	c->pass = 0;
	assign_shares(c, c->fstart[b->n]);
	run_all(c);
	if (c->clamp)
		clamp_split_records(c);
	if (c->mfcc) {
		c->pass = 1;
		run_all(c);
	}
	c->cur = NULL;
	c->finished = b;
	return 0;
}

static int cpu_wait(mel_backend *be, mel_batch **done)
{
	struct cpu_ctx *c = be->ctx;

	*done = c->finished;
	c->finished = NULL;
	return 0;
}

static void stop_workers(struct cpu_ctx *c)
{
	if (!c->sync_ok)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->mu);
	for (int t = 1; t < c->nthreads; t++)
		if (c->w[t].started)
			pthread_join(c->w[t].tid, NULL);
}

static void cpu_destroy(mel_backend *be)
{
	struct cpu_ctx *c;

	if (!be)
		return;
	c = be->ctx;
	if (c) {
		stop_workers(c);
		for (int t = 0; c->w && t < c->nthreads; t++) {
			fftwf_free(c->w[t].frame);
			fftwf_free(c->w[t].spec);
			free(c->w[t].mag);
			free(c->w[t].mel);
			free(c->w[t].mel16);
			free(c->w[t].dv);
		}
		if (c->plan)
			fftwf_destroy_plan(c->plan);
		if (c->sync_ok) {
			pthread_mutex_destroy(&c->mu);
			pthread_cond_destroy(&c->go);
			pthread_cond_destroy(&c->done);
		}
		free(c->w);
		free(c->win_f32);
		free(c->win_s16);
		free(c->fstart);
		free(c->dct);
		free(c->bands);
		free(c->rmax);
		free(c);
	}
	free(be);
}

/* The window in float, twice (f32 input, and s16 input with the 1/32768
 * scale folded in: a power of two, so exact), and its nonzero span. */
static int build_windows(struct cpu_ctx *c)
{
	uint32_t n = c->p.n_fft;
	double *w = malloc(n * sizeof(*w));

	c->win_f32 = malloc(n * sizeof(*c->win_f32));
	c->win_s16 = malloc(n * sizeof(*c->win_s16));
	if (!w || !c->win_f32 || !c->win_s16) {
		free(w);
		return -1;
	}
	mel_window_build(&c->p, w);
	for (uint32_t i = 0; i < n; i++) {
		c->win_f32[i] = (float)w[i];
		c->win_s16[i] = (float)w[i] * (1.0f / 32768.0f);
	}
	free(w);
	c->win_lo = mel_window_left(&c->p);
	c->win_hi = c->win_lo + c->p.win_length;
	return 0;
}

/* MFCC's matrix, in double: the DCT sums in double. */
static int build_dct(struct cpu_ctx *c)
{
	if (!c->mfcc)
		return 0;
	c->dct = malloc((size_t)c->n_rows * c->p.n_mels * sizeof(*c->dct));
	if (!c->dct)
		return -1;
	mel_dct_build(&c->p, c->dct);
	return 0;
}

/* Scratch of one thread; the frame is zero outside the window and stays
 * so (fill_frame writes only inside, and an out-of-place r2c plan
 * preserves its input). */
static int alloc_scratch(struct cpu_ctx *c, struct worker *w)
{
	w->c = c;
	w->frame = fftwf_alloc_real(c->p.n_fft);
	w->spec = fftwf_alloc_complex(c->fb->n_bins);
	w->mag = malloc(c->fb->n_bins * sizeof(*w->mag));
	w->mel = malloc((c->n_bands > c->n_rows ? c->n_bands : c->n_rows) *
			sizeof(*w->mel));
	w->mel16 = malloc(c->n_rows * sizeof(*w->mel16));
	w->dv = malloc(c->p.n_mels * sizeof(*w->dv));
	if (!w->frame || !w->spec || !w->mag || !w->mel || !w->mel16 ||
	    !w->dv)
		return -1;
	memset(w->frame, 0, c->p.n_fft * sizeof(*w->frame));
	return 0;
}

/*
 * One r2c plan for every thread (fftwf_execute_dft_r2c is thread-safe;
 * all scratch comes from fftwf_alloc_* so it has the plan's alignment).
 * FFTW_ESTIMATE, not FFTW_MEASURE: measured, MEASURE's plans run
 * 3-10% faster for n_fft 400..2048 (the FFT is about a quarter of the
 * time per frame) but take 0.1-0.3 s to make, and they are chosen by
 * timing, so the output's last bits could change from run to run; an
 * ESTIMATE plan gives the same bits every time. PRESERVE_INPUT keeps the
 * zeros outside the window.
 */
static int make_plan(struct cpu_ctx *c)
{
	float *in = fftwf_alloc_real(c->p.n_fft);
	fftwf_complex *out = fftwf_alloc_complex(c->fb->n_bins);

	if (in && out)
		c->plan = fftwf_plan_dft_r2c_1d((int)c->p.n_fft, in, out,
						FFTW_ESTIMATE |
						FFTW_PRESERVE_INPUT);
	fftwf_free(in);
	fftwf_free(out);
	return c->plan ? 0 : -1;
}

static int start_workers(struct cpu_ctx *c, char *err, size_t errlen)
{
	int e;

	if (pthread_mutex_init(&c->mu, NULL) ||
	    pthread_cond_init(&c->go, NULL) ||
	    pthread_cond_init(&c->done, NULL)) {
		snprintf(err, errlen, "cannot initialise the thread pool");
		return -1;
	}
	c->sync_ok = 1;
	for (int t = 1; t < c->nthreads; t++) {
		e = pthread_create(&c->w[t].tid, NULL, worker_main, &c->w[t]);
		if (e) {
			snprintf(err, errlen, "cannot start worker thread "
				 "%d: %s", t, strerror(e));
			return -1;
		}
		c->w[t].started = 1;
	}
	return 0;
}

static void set_constants(struct cpu_ctx *c)
{
	c->amin = (float)c->p.amin;
	c->top_db = (float)c->p.top_db;
	c->log_mul = c->p.log == MEL_LOG_LN ? 1.0f :
		     (float)((c->p.power == 1 ? 20.0 : 10.0) / M_LN10);
	c->clamp = mel_clamps(&c->p);
	c->out_size = rec_dtype_size(c->p.out_dtype);
	c->fbank = c->p.feature == MEL_FEAT_FBANK;
	c->n_rows = mel_n_rows(&c->p);
	c->n_bands = mel_n_bands(&c->p);
	c->row0 = c->n_bands - c->p.n_mels;
	c->mfcc = c->p.n_mfcc > 0;
	c->log_efloor = c->p.k.energy_floor > 0.0 ? log(c->p.k.energy_floor) :
			-INFINITY;
}

static mel_backend *new_backend(struct cpu_ctx *c)
{
	mel_backend *be = calloc(1, sizeof(*be));

	if (!be)
		return NULL;
	snprintf(be->name, sizeof(be->name), "cpu: fftw3f, %d thread%s",
		 c->nthreads, c->nthreads == 1 ? "" : "s");
	be->depth = 1;
	be->batch_alloc = cpu_batch_alloc;
	be->batch_free = cpu_batch_free;
	be->submit = cpu_submit;
	be->wait = cpu_wait;
	be->destroy = cpu_destroy;
	be->ctx = c;
	return be;
}

int mel_cpu_open(const mel_params *p, const mel_fb *fb, int nthreads,
		 mel_backend **out, char *err, size_t errlen)
{
	struct cpu_ctx *c = calloc(1, sizeof(*c));
	mel_backend *be = NULL;

	*out = NULL;
	if (!c)
		goto nomem;
	c->p = *p;
	c->fb = fb;
	c->nthreads = nthreads < 1 ? 1 : nthreads;
	set_constants(c);
	if (c->out_size == 0 || c->p.out_dtype == REC_S16) {
		snprintf(err, errlen, "output type %d is not f32, f16 or bf16",
			 p->out_dtype);
		free(c);
		return -1;
	}
	be = new_backend(c);
	if (!be)
		goto nomem;
	c->w = calloc((size_t)c->nthreads, sizeof(*c->w));
	if (!c->w || build_windows(c) < 0 || build_dct(c) < 0)
		goto nomem;
	for (int t = 0; t < c->nthreads; t++)
		if (alloc_scratch(c, &c->w[t]) < 0)
			goto nomem;
	if (make_plan(c) < 0) {
		snprintf(err, errlen, "fftwf_plan_dft_r2c_1d failed for "
			 "n_fft %u", p->n_fft);
		goto fail;
	}
	if (start_workers(c, err, errlen) < 0)
		goto fail;
	*out = be;
	return 0;
nomem:
	snprintf(err, errlen, "cannot set up the CPU backend: %s",
		 strerror(ENOMEM));
fail:
	if (be)
		cpu_destroy(be);
	else
		free(c);
	return -1;
}
