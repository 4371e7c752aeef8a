/*
 * cpu_backend.c - gpumel's CPU backend: FFTW3f on a pool of worker threads:
 * the threads and their shares of a batch, submit and wait, set-up and
 * teardown. What each frame goes through is in cpu_frame.c.
 *
 * A batch is cut into equal runs of frames (not records, so that one long
 * record still keeps every thread busy); the calling thread takes the
 * first run and the workers the others. Every frame goes through the same
 * code and the same single-transform FFTW plan, so the output does not
 * depend on the number of threads or on where a frame falls in a batch.
 *
 * --top-db needs each record's maximum: a record that one thread computed
 * whole is clamped by that thread at once; one split between threads is
 * clamped after the join; a record flagged MEL_REC_NO_CLAMP (a piece of an
 * item) is not clamped.
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rec.h"
#include "backend.h"
#include "cpu_backend_int.h"

/* ------------------------------------------------------------------ */
/* A thread's share */

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
