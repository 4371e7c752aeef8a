/*
 * cuda_bench.cu - gpumel-cuda-bench: checks and times gpumel's CUDA
 * backend.
 *
 *   --probe SO    loads SO as gpumel does and opens the backend: prints its
 *                 name (exit 0) or why it cannot run here (exit 1)
 *   --emu         runs the kernels' own arithmetic (cuda_mel_dev.h) on the
 *                 CPU, thread by simulated thread, over a grid of options,
 *                 against a float64 reference: needs no GPU
 *   --parity SO   the same grid through SO on the GPU, both FFT paths, CUDA
 *                 graphs on and off, every batch checked
 *   --bench SO    the seeds' shape (512-sample records, n_fft 512, hop 512,
 *                 32 mels, no centring, dB, f16): the kernels alone on
 *                 device-resident batches (CUDA events, median), then the
 *                 whole submit/wait path with its copies
 *
 * The program reaches the GPU only through SO (dlopen, like gpumel), so it
 * links no CUDA runtime and --emu runs anywhere. The float64 reference is
 * written from the formulas (frames of the padded signal, periodic window,
 * |rfft|^power, filterbank, log, top_db), independent of the kernels.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/cuda_emu.h"
#include "cuda_mel_dev.h"

#define PROG "gpumel-cuda-bench"
#define SEEDS_RECORDS 3165040u

/* ------------------------------------------------------------------ */
/* Small things */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
						     noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory (%zu bytes)", n * size);
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64*: reproducible from --seed */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* uniform in [0, 1) */
static double rndu(void)
{
	return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0);
}

static uint32_t rnd_range(uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(rnd() % ((uint64_t)hi - lo + 1));
}

static size_t out_size(int dtype)
{
	return dtype == REC_F32 ? 4 : 2;
}

static float out_value(const void *out, int dtype, uint64_t i)
{
	if (dtype == REC_F32)
		return ((const float *)out)[i];
	if (dtype == REC_F16)
		return __half2float(((const __half *)out)[i]);
	uint16_t b = ((const uint16_t *)out)[i];

	return md_bits_float((uint32_t)b << 16);
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static float median(float *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_float);
	return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

/* ------------------------------------------------------------------ */
/* The option grid */

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

#define HANN MEL_WIN_HANN
#define HAMM MEL_WIN_HAMMING
#define RECT MEL_WIN_RECT
#define REFL MEL_PAD_REFLECT
#define CONST MEL_PAD_CONSTANT
#define HTK MEL_SCALE_HTK
#define SLA MEL_SCALE_SLANEY
#define NSLA MEL_NORM_SLANEY
#define NNONE MEL_NORM_NONE

static const struct cfg grid[] = {
	/* the seeds' job, and with top_db and f32 */
	{ "seeds", 4096, 512, 512, 512, HANN, 0, REFL, 32, 0, 2048, SLA, NSLA,
	  2, MEL_LOG_DB, 1e-10, -1, REC_F16, MEL_BINS_RFFT, 512, 1100 },
	{ "seeds-top80-f32", 4096, 512, 512, 512, HANN, 0, REFL, 32, 0, 2048,
	  HTK, NNONE, 2, MEL_LOG_DB, 1e-10, 80, REC_F32, MEL_BINS_RFFT, 512,
	  2048 },
	/* librosa's defaults (constant padding since librosa 0.10) */
	{ "librosa", 22050, 2048, 2048, 512, HANN, 1, CONST, 128, 0, 11025, SLA,
	  NSLA, 2, MEL_LOG_DB, 1e-10, 80, REC_F32, MEL_BINS_RFFT, 1, 12000 },
	/* torchaudio's: n_fft 400 is not a power of two: cuFFT only */
	{ "torchaudio", 16000, 400, 400, 200, HANN, 1, REFL, 128, 0, 8000, HTK,
	  NNONE, 2, MEL_LOG_NONE, 1e-10, -1, REC_F32, MEL_BINS_TORCH, 1,
	  8000 },
	/* keyword spotting: short window in a longer FFT, magnitude, dB */
	{ "kws-mag-db", 16000, 512, 400, 160, HAMM, 1, REFL, 40, 20, 7600, HTK,
	  NSLA, 1, MEL_LOG_DB, 1e-5, 80, REC_F16, MEL_BINS_RFFT, 100, 8000 },
	{ "ln-bf16", 16000, 1024, 1000, 256, RECT, 1, REFL, 64, 0, 8000, SLA,
	  NSLA, 2, MEL_LOG_LN, 1e-6, -1, REC_BF16, MEL_BINS_RFFT, 1, 9000 },
	/* records shorter than the padding: reflect repeats */
	{ "tiny-reflect", 8000, 64, 64, 16, HANN, 1, REFL, 16, 0, 4000, HTK,
	  NNONE, 2, MEL_LOG_DB, 1e-10, 60, REC_F32, MEL_BINS_RFFT, 1, 300 },
	{ "odd-401", 16000, 401, 301, 100, HANN, 1, REFL, 40, 0, 8000, HTK,
	  NSLA, 1, MEL_LOG_DB, 1e-5, 50, REC_F16, MEL_BINS_RFFT, 1, 5000 },
	{ "big-4096", 44100, 4096, 4096, 1024, HANN, 0, REFL, 128, 30, 16000,
	  SLA, NSLA, 2, MEL_LOG_DB, 1e-10, 80, REC_F32, MEL_BINS_RFFT, 4096,
	  20000 },
	/* fmax above Nyquist: the last filters weigh the Nyquist bin */
	{ "n8-const", 8000, 8, 8, 4, HANN, 1, CONST, 2, 0, 6000, HTK, NNONE, 2,
	  MEL_LOG_NONE, 1e-10, -1, REC_F32, MEL_BINS_RFFT, 1, 100 },
	{ "hop-gt-nfft", 16000, 256, 200, 300, HAMM, 0, REFL, 20, 0, 9000, HTK,
	  NSLA, 1, MEL_LOG_LN, 1e-5, -1, REC_F16, MEL_BINS_RFFT, 256, 6000 },
};
#define N_GRID (sizeof(grid) / sizeof(grid[0]))

static void cfg_params(const struct cfg *g, mel_params *p)
{
	memset(p, 0, sizeof(*p));
	p->sample_rate = g->sr;
	p->n_fft = g->n_fft;
	p->win_length = g->win;
	p->hop_length = g->hop;
	p->window = g->window;
	p->center = g->center;
	p->pad_mode = g->pad;
	p->n_mels = g->n_mels;
	p->fmin = g->fmin;
	p->fmax = g->fmax;
	p->mel_scale = g->scale;
	p->norm = g->norm;
	p->power = g->power;
	p->log = g->log;
	p->amin = g->amin;
	p->top_db = g->top_db;
	p->out_dtype = g->out;
	p->bin_freqs = g->bins;
}

/* The seeds' job: the issue's pipeline command. */
static const struct cfg seeds_cfg = {
	"seeds", 4096, 512, 512, 512, HANN, 0, REFL, 32, 0, 2048, SLA, NSLA,
	2, MEL_LOG_DB, 1e-10, -1, REC_F16, MEL_BINS_RFFT, 512, 512
};

/* ------------------------------------------------------------------ */
/* Float64 reference */

struct ref {
	const mel_params *p;
	const mel_fb *fb;
	double *win;           /* mel_window_build */
	double *re, *im;       /* n_fft */
	double *cs, *sn;       /* cos, sin(2 pi k / n_fft) */
	double *pw;            /* n_fft / 2 + 1 */
	double *x;             /* one record's samples */
	size_t x_cap;
};

static void ref_init(struct ref *R, const mel_params *p, const mel_fb *fb)
{
	uint32_t n = p->n_fft;

	memset(R, 0, sizeof(*R));
	R->p = p;
	R->fb = fb;
	R->win = (double *)xmalloc(n * sizeof(double));
	R->re = (double *)xmalloc(n * sizeof(double));
	R->im = (double *)xmalloc(n * sizeof(double));
	R->cs = (double *)xmalloc(n * sizeof(double));
	R->sn = (double *)xmalloc(n * sizeof(double));
	R->pw = (double *)xmalloc((n / 2 + 1) * sizeof(double));
	mel_window_build(p, R->win);
	for (uint32_t k = 0; k < n; k++) {
		R->cs[k] = cos(2.0 * M_PI * (double)k / (double)n);
		R->sn[k] = sin(2.0 * M_PI * (double)k / (double)n);
	}
}

static void ref_free(struct ref *R)
{
	free(R->win);
	free(R->re);
	free(R->im);
	free(R->cs);
	free(R->sn);
	free(R->pw);
	free(R->x);
}

/* In-place forward DFT of (re, im): radix-2 decimation in time when n is
 * a power of two, else the direct sum. */
static void ref_dft(struct ref *R)
{
	uint32_t n = R->p->n_fft;
	double *re = R->re, *im = R->im;

	if (n & (n - 1)) {
		double *ore = (double *)xmalloc(n * sizeof(double));
		double *oim = (double *)xmalloc(n * sizeof(double));

		for (uint32_t k = 0; k <= n / 2; k++) {
			double sr = 0.0, si = 0.0;
			uint64_t e = 0;

			for (uint32_t t = 0; t < n; t++) {
				sr += re[t] * R->cs[e] + im[t] * R->sn[e];
				si += im[t] * R->cs[e] - re[t] * R->sn[e];
				e += k;
				if (e >= n)
					e -= n;
			}
			ore[k] = sr;
			oim[k] = si;
		}
		memcpy(re, ore, (n / 2 + 1) * sizeof(double));
		memcpy(im, oim, (n / 2 + 1) * sizeof(double));
		free(ore);
		free(oim);
		return;
	}
	for (uint32_t i = 1, j = 0; i < n; i++) {
		uint32_t bit = n >> 1;

		for (; j & bit; bit >>= 1)
			j ^= bit;
		j ^= bit;
		if (i < j) {
			double t = re[i];

			re[i] = re[j];
			re[j] = t;
			t = im[i];
			im[i] = im[j];
			im[j] = t;
		}
	}
	for (uint32_t len = 2; len <= n; len <<= 1) {
		uint32_t step = n / len;

		for (uint32_t i = 0; i < n; i += len)
			for (uint32_t k = 0; k < len / 2; k++) {
				double wr = R->cs[k * step], wi = -R->sn[k * step];
				uint32_t u = i + k, v = i + k + len / 2;
				double xr = re[v] * wr - im[v] * wi;
				double xi = re[v] * wi + im[v] * wr;

				re[v] = re[u] - xr;
				im[v] = im[u] - xi;
				re[u] += xr;
				im[u] += xi;
			}
	}
}

/* Sample o of x[0..n) as padded: zero, or reflected at both ends again
 * and again (numpy.pad's reflect). */
static double ref_sample(const double *x, uint32_t n, int64_t o, int reflect)
{
	if (o >= 0 && o < (int64_t)n)
		return x[o];
	if (!reflect)
		return 0.0;
	if (n == 1)
		return x[0];
	while (o < 0 || o >= (int64_t)n) {
		if (o < 0)
			o = -o;
		if (o >= (int64_t)n)
			o = 2 * ((int64_t)n - 1) - o;
	}
	return x[o];
}

/* out[m * frames + j]: the record's features in float64. */
static void ref_record(struct ref *R, const double *x, uint32_t n,
		       uint32_t frames, double *out)
{
	const mel_params *p = R->p;
	const mel_fb *fb = R->fb;
	uint32_t N = p->n_fft, bins = N / 2 + 1;
	int64_t pad = p->center ? N / 2 : 0;
	int reflect = p->pad_mode == MEL_PAD_REFLECT;
	double mul = p->power == 1 ? 20.0 : 10.0, mx = -INFINITY;

	for (uint32_t j = 0; j < frames; j++) {
		int64_t start = (int64_t)j * p->hop_length - pad;

		for (uint32_t i = 0; i < N; i++) {
			R->re[i] = ref_sample(x, n, start + i, reflect) *
				   R->win[i];
			R->im[i] = 0.0;
		}
		ref_dft(R);
		for (uint32_t k = 0; k < bins; k++) {
			double q = R->re[k] * R->re[k] + R->im[k] * R->im[k];

			R->pw[k] = p->power == 1 ? sqrt(q) : q;
		}
		for (uint32_t m = 0; m < p->n_mels; m++) {
			double s = 0.0;

			for (uint32_t i = 0; i < fb->count[m]; i++)
				s += fb->w64[fb->off[m] + i] *
				     R->pw[fb->first[m] + i];
			if (p->log == MEL_LOG_DB)
				s = mul * log10(fmax(s, p->amin));
			else if (p->log == MEL_LOG_LN)
				s = log(fmax(s, p->amin));
			out[(size_t)m * frames + j] = s;
			mx = fmax(mx, s);
		}
	}
	if (p->log == MEL_LOG_DB && p->top_db >= 0.0)
		for (size_t i = 0; i < (size_t)p->n_mels * frames; i++)
			out[i] = fmax(out[i], mx - p->top_db);
}

/* ------------------------------------------------------------------ */
/* Comparison */

/* One unit in the last place of the output type at |r|. */
static double ulp_at(int dtype, double r)
{
	int e;

	if (dtype == REC_F32)
		return 0.0;
	r = fabs(r);
	frexp(r, &e); /* r = f * 2^e, f in [0.5, 1) */
	if (dtype == REC_F16)
		return r < ldexp(1.0, -14) ? ldexp(1.0, -24) :
					     ldexp(1.0, e - 11);
	return r < ldexp(1.0, -126) ? ldexp(1.0, -133) : ldexp(1.0, e - 8);
}

struct stats {
	uint64_t values, bad, batches, records;
	double worst;          /* largest |got - ref| / allowed */
	double max_db;         /* largest error in dB (or its equivalent) */
	char first_bad[640];
};

/*
 * The allowed error: 0.01 dB (db), its equivalent 0.01 ln(10) / 10 (ln)
 * or relative 0.23% (none, with a floor of 1e-5 of the record's largest
 * value for the float32 FFT's absolute error), plus one unit in the last
 * place for f16 and bf16.
 */
static void compare_record(const mel_params *p, const void *out,
			   uint64_t off, const double *ref, size_t cells,
			   struct stats *st, size_t rec_index)
{
	const double ln_tol = 0.01 * log(10.0) / 10.0;
	double peak = 0.0;

	for (size_t i = 0; i < cells; i++)
		peak = fmax(peak, fabs(ref[i]));
	for (size_t i = 0; i < cells; i++) {
		double r = ref[i], g = out_value(out, p->out_dtype, off + i);
		double tol, err = fabs(g - r), db;

		if (p->log == MEL_LOG_DB)
			tol = 0.01;
		else if (p->log == MEL_LOG_LN)
			tol = ln_tol;
		else
			tol = ln_tol * fabs(r) + 1e-5 * peak;
		tol += ulp_at(p->out_dtype, r);
		if (p->out_dtype == REC_F16 && isinf(g) && r >= 65520.0)
			err = 0.0; /* overflows to inf, as it must */
		if (p->log == MEL_LOG_DB)
			db = err;
		else if (p->log == MEL_LOG_LN)
			db = err * 10.0 / log(10.0);
		else
			db = 10.0 * log10(1.0 + err / fmax(fabs(r), 1e-30));
		st->values++;
		if (p->out_dtype == REC_F32 && db > st->max_db)
			st->max_db = db;
		if (isnan(g) || err > tol) {
			if (!st->bad++)
				snprintf(st->first_bad, sizeof(st->first_bad),
					 "record %zu element %zu: got %.9g, "
					 "float64 reference %.9g", rec_index, i,
					 g, r);
			continue;
		}
		if (err / tol > st->worst)
			st->worst = err / tol;
	}
}

/* ------------------------------------------------------------------ */
/* Batches of random records */

/* A batch slot: its records' lengths and reference features. */
struct slot {
	mel_batch b;
	uint32_t *len;         /* lengths of this batch's records */
	double *ref;           /* reference features, at out_off each */
	size_t ref_cap;
	int busy;
};

/* Random record samples: noise at a random level, noise with a tone,
 * silence, or a burst in silence (dynamic range a float32 FFT resolves to
 * 0.01 dB). */
static void make_signal(double *x, uint32_t n, double sr)
{
	int kind = (int)(rnd() % 8);
	double amp = pow(10.0, -3.0 + 2.39 * rndu()); /* 4 amp <= 1 */
	double f = sr * (0.02 + 0.45 * rndu()), ph = 2 * M_PI * rndu();
	uint32_t b0 = rnd_range(0, n - 1), b1 = rnd_range(b0, n - 1);

	for (uint32_t i = 0; i < n; i++) {
		double v = amp * (2.0 * rndu() - 1.0);

		if (kind == 0)
			v = 0.0;
		else if (kind == 1 && (i < b0 || i > b1))
			v = 0.0;
		else if (kind >= 5)
			v += 3.0 * amp * sin(2 * M_PI * f * i / sr + ph);
		x[i] = v;
	}
}

/*
 * Fills slot s with records of the given lengths (those that give no frame
 * are skipped, as gpumel does) and computes their reference.
 */
static void fill_batch(struct slot *s, struct ref *R, int in_dtype,
		       const uint32_t *len, size_t n_len)
{
	const mel_params *p = R->p;
	mel_batch *b = &s->b;
	uint64_t in_off = 0, out_off = 0;
	size_t n = 0, esz = in_dtype == REC_S16 ? 2 : 4;

	b->in_dtype = in_dtype;
	for (size_t r = 0; r < n_len; r++) {
		uint32_t frames = (uint32_t)mel_n_frames(p, len[r]);
		mel_rec *rec = &b->rec[n];
		size_t cells = (size_t)p->n_mels * frames;

		if (!frames)
			continue;
		if (len[r] > R->x_cap) {
			free(R->x);
			R->x_cap = len[r];
			R->x = (double *)xmalloc(R->x_cap * sizeof(double));
		}
		if ((in_off + len[r]) * esz > b->in_cap || n >= b->cap_recs ||
		    (out_off + cells) * out_size(p->out_dtype) > b->out_cap ||
		    out_off + cells > s->ref_cap)
			die("internal: test batch overflows its buffers");
		make_signal(R->x, len[r], p->sample_rate);
		for (uint32_t i = 0; i < len[r]; i++) {
			if (in_dtype == REC_S16) {
				double v = nearbyint(R->x[i] * 32767.0);

				((int16_t *)b->in)[in_off + i] = (int16_t)v;
				R->x[i] = v / 32768.0;
			} else {
				float v = (float)R->x[i];

				((float *)b->in)[in_off + i] = v;
				R->x[i] = v;
			}
		}
		rec->in_off = in_off;
		rec->n_samples = len[r];
		rec->n_frames = frames;
		rec->out_off = out_off;
		ref_record(R, R->x, len[r], frames, s->ref + out_off);
		in_off += len[r];
		out_off += cells;
		n++;
	}
	b->n = n;
	/* poison: every element the backend fails to write stays NaN */
	memset(b->out, 0xff, b->out_cap);
}

static void check_batch(const mel_params *p, const struct slot *s,
			struct stats *st)
{
	const mel_batch *b = &s->b;

	for (size_t r = 0; r < b->n; r++) {
		const mel_rec *rec = &b->rec[r];

		compare_record(p, b->out, rec->out_off, s->ref + rec->out_off,
			       (size_t)p->n_mels * rec->n_frames, st, r);
	}
	st->batches++;
	st->records += b->n;
}

/* ------------------------------------------------------------------ */
/* The CPU emulation backend: cuda_mel_dev.h's phases, thread by thread */

struct emu {
	mel_params p;
	const mel_fb *fb;
	int fused;
	float *win32, *win16, *tw;
	mel_tiles tiles;
	mel_batch *q[8];
	int head, count;
};

/* The kernels' arguments, as cuda_backend.cu's kernel_args() sets them. */
static void emu_args(const struct emu *e, const mel_batch *b,
		     uint32_t *tab, uint32_t *key, mel_kargs *a)
{
	const mel_params *p = &e->p;

	memset(a, 0, sizeof(*a));
	a->in = b->in;
	a->out = b->out;
	a->rec = b->rec;
	a->frame_base = tab;
	a->frame_rec = tab + b->n;
	if (mel_cuda_clamps(p))
		a->rec_key = key;
	a->win = b->in_dtype == REC_S16 ? e->win16 : e->win32;
	a->tw = e->tw;
	a->fbt_tile = e->tiles.tile;
	a->fbt_mel = e->tiles.mel;
	a->fbt_w = e->tiles.w;
	mel_cuda_scalars(a, p, b->in_dtype);
}

static void emu_run(struct emu *e, mel_batch *b)
{
	uint32_t F = 0, N = e->p.n_fft;
	uint32_t *tab, *key = (uint32_t *)xcalloc(b->n, sizeof(uint32_t));
	mel_kargs a;

	for (size_t r = 0; r < b->n; r++)
		F += b->rec[r].n_frames;
	tab = (uint32_t *)xmalloc((b->n + F) * sizeof(uint32_t));
	mel_cuda_tables(b->rec, b->n, tab, tab + b->n);
	emu_args(e, b, tab, key, &a);
	a.f0 = 0;
	a.nf = F;
	if (e->fused) {
		if (emu_fused(a) < 0)
			die("internal: no fused size %u", N);
	} else {
		/* the cuFFT path in one chunk: frames, R2C, mel */
		a.frames = (float *)xmalloc((size_t)F * N * sizeof(float));
		a.spec = (float *)xmalloc((size_t)F * (N / 2 + 1) * 2 *
					  sizeof(float));
		emu_frames(a);
		emu_r2c(N, F, a.frames, a.spec);
		emu_mel(a);
		free(a.frames);
		free(a.spec);
	}
	if (a.rec_key)
		emu_clamp(a, F);
	free(tab);
	free(key);
}

static int emu_batch_alloc(mel_backend *be, mel_batch *b, size_t in_cap,
			   size_t out_cap, size_t cap_recs)
{
	(void)be;
	b->in = xmalloc(in_cap);
	b->out = xmalloc(out_cap);
	b->rec = (mel_rec *)xcalloc(cap_recs, sizeof(mel_rec));
	b->in_cap = in_cap;
	b->out_cap = out_cap;
	b->cap_recs = cap_recs;
	b->n = 0;
	return 0;
}

static void emu_batch_free(mel_backend *be, mel_batch *b)
{
	(void)be;
	free(b->in);
	free(b->out);
	free(b->rec);
	b->in = b->out = NULL;
	b->rec = NULL;
}

static int emu_submit(mel_backend *be, mel_batch *b)
{
	struct emu *e = (struct emu *)be->ctx;

	if (e->count == be->depth) {
		snprintf(be->err, sizeof(be->err), "emu: too many in flight");
		return -1;
	}
	emu_run(e, b);
	e->q[(e->head + e->count++) % 8] = b;
	return 0;
}

static int emu_wait(mel_backend *be, mel_batch **done)
{
	struct emu *e = (struct emu *)be->ctx;

	*done = NULL;
	if (!e->count)
		return 0;
	*done = e->q[e->head];
	e->head = (e->head + 1) % 8;
	e->count--;
	return 0;
}

static void emu_destroy(mel_backend *be)
{
	struct emu *e;

	if (!be)
		return;
	e = (struct emu *)be->ctx;
	free(e->win32);
	free(e->win16);
	free(e->tw);
	mel_cuda_tiles_free(&e->tiles);
	free(e);
	free(be);
}

static mel_backend *emu_open(const mel_params *p, const mel_fb *fb,
			     int fused)
{
	mel_backend *be = (mel_backend *)xcalloc(1, sizeof(*be));
	struct emu *e = (struct emu *)xcalloc(1, sizeof(*e));
	uint32_t n = p->n_fft;
	double *w = (double *)xmalloc(n * sizeof(double));

	e->p = *p;
	e->fb = fb;
	e->fused = fused;
	e->win32 = (float *)xmalloc(n * sizeof(float));
	e->win16 = (float *)xmalloc(n * sizeof(float));
	mel_window_build(p, w);
	mel_cuda_windows(w, n, e->win32, e->win16);
	if (fused) {
		e->tw = (float *)xmalloc(2 * (size_t)mel_cuda_twiddles_len(n) *
					 sizeof(float));
		mel_cuda_twiddles(n, e->tw);
	}
	if (mel_cuda_tiles_build(fb, &e->tiles) < 0)
		die("out of memory (filterbank tiles)");
	free(w);
	snprintf(be->name, sizeof(be->name), "emu (%s)",
		 fused ? "fused fft" : "cufft path");
	be->depth = 3;
	be->batch_alloc = emu_batch_alloc;
	be->batch_free = emu_batch_free;
	be->submit = emu_submit;
	be->wait = emu_wait;
	be->destroy = emu_destroy;
	be->ctx = e;
	return be;
}

/* ------------------------------------------------------------------ */
/* Parity runs (emulated or on the GPU) */

struct so {
	void *dl;
	mel_cuda_open_fn open;
	mel_cuda_time_fn time;
	const char *path;
};

static void so_load(struct so *so, const char *path)
{
	void *sym;

	so->path = path;
	so->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so->dl)
		die("cannot load '%s': %s", path, dlerror());
	sym = dlsym(so->dl, MEL_CUDA_OPEN_SYMBOL);
	if (!sym)
		die("'%s' has no %s", path, MEL_CUDA_OPEN_SYMBOL);
	memcpy(&so->open, &sym, sizeof(sym));
	sym = dlsym(so->dl, MEL_CUDA_TIME_SYMBOL);
	if (!sym)
		die("'%s' has no %s", path, MEL_CUDA_TIME_SYMBOL);
	memcpy(&so->time, &sym, sizeof(sym));
}

static int quick;

/* Waits for the oldest batch and checks it. */
static int collect(mel_backend *be, const mel_params *p, struct slot *slots,
		   int n_slots, struct stats *st)
{
	mel_batch *done = NULL;

	if (be->wait(be, &done) < 0) {
		snprintf(st->first_bad, sizeof(st->first_bad), "wait: %s",
			 be->err);
		st->bad++;
		return -1;
	}
	for (int i = 0; i < n_slots; i++)
		if (done == &slots[i].b) {
			check_batch(p, &slots[i], st);
			slots[i].busy = 0;
			return 0;
		}
	snprintf(st->first_bad, sizeof(st->first_bad),
		 "wait returned an unknown batch");
	st->bad++;
	return -1;
}

/*
 * Runs rounds of batches through be: first 12 rounds of one shape with
 * s16 input and 12 with f32 (every slot sees its shape three times: the
 * CUDA backend runs it directly, captures a graph, replays it), then
 * rounds of random shapes and input types. Every batch is compared with
 * the float64 reference.
 */
static void parity_run(mel_backend *be, const struct cfg *g,
		       const mel_params *p, const mel_fb *fb,
		       struct stats *st)
{
	const int n_slots = be->depth + 1;
	const int fixed = quick ? 4 : 12, rounds = 2 * fixed + (quick ? 2 : 8);
	uint32_t avg = (g->len_min + g->len_max) / 2;
	size_t n_rec = avg ? 60000 / avg : 64;
	struct slot *slots = (struct slot *)xcalloc(n_slots, sizeof(*slots));
	uint32_t *fixed_len;
	size_t max_in = 0, max_cells = 0;
	struct ref R;
	int inflight = 0;

	if (n_rec < 3)
		n_rec = 3;
	if (n_rec > (quick ? 16u : 200u))
		n_rec = quick ? 16 : 200;
	ref_init(&R, p, fb);
	fixed_len = (uint32_t *)xmalloc(n_rec * sizeof(uint32_t));
	for (size_t r = 0; r < n_rec; r++)
		fixed_len[r] = rnd_range(g->len_min, g->len_max);
	max_in = (size_t)n_rec * g->len_max;
	max_cells = (size_t)n_rec * p->n_mels * mel_n_frames(p, g->len_max);
	for (int i = 0; i < n_slots; i++) {
		struct slot *s = &slots[i];

		if (be->batch_alloc(be, &s->b, max_in * 4, max_cells *
				    out_size(p->out_dtype), n_rec) < 0)
			die("batch_alloc: %s", be->err);
		s->len = (uint32_t *)xmalloc(n_rec * sizeof(uint32_t));
		s->ref_cap = max_cells;
		s->ref = (double *)xmalloc(max_cells * sizeof(double));
	}
	for (int round = 0; round < rounds && !st->bad; round++) {
		struct slot *s = &slots[round % n_slots];
		int in_dtype = round < fixed ? REC_S16 : REC_F32;

		while (!st->bad && (inflight == be->depth || s->busy))
			if (collect(be, p, slots, n_slots, st) == 0)
				inflight--;
		if (st->bad)
			break;
		if (round < 2 * fixed) {
			memcpy(s->len, fixed_len, n_rec * sizeof(uint32_t));
		} else {
			for (size_t r = 0; r < n_rec; r++)
				s->len[r] = rnd_range(g->len_min, g->len_max);
			in_dtype = rnd() % 2 ? REC_S16 : REC_F32;
		}
		fill_batch(s, &R, in_dtype, s->len,
			   round < 2 * fixed ? n_rec : 1 + rnd() % n_rec);
		if (be->submit(be, &s->b) < 0) {
			snprintf(st->first_bad, sizeof(st->first_bad),
				 "submit: %s", be->err);
			st->bad++;
			break;
		}
		s->busy = 1;
		inflight++;
	}
	while (inflight > 0 && collect(be, p, slots, n_slots, st) == 0)
		inflight--;
	for (int i = 0; i < n_slots; i++) {
		be->batch_free(be, &slots[i].b);
		free(slots[i].len);
		free(slots[i].ref);
	}
	free(slots);
	free(fixed_len);
	ref_free(&R);
}

static int report(const char *what, const struct cfg *g, const char *how,
		  const struct stats *st)
{
	if (st->bad) {
		printf("FAIL %-5s %-16s %-22s %llu bad of %llu values; first: "
		       "%s\n", what, g->name, how, (unsigned long long)st->bad,
		       (unsigned long long)st->values, st->first_bad);
		return 1;
	}
	printf("ok   %-5s %-16s %-22s %4llu batches %6llu records %8llu "
	       "values, worst %.2f of the limit", what, g->name, how,
	       (unsigned long long)st->batches,
	       (unsigned long long)st->records,
	       (unsigned long long)st->values, st->worst);
	if (g->out == REC_F32)
		printf(", max %.2g dB", st->max_db);
	printf("\n");
	return 0;
}

static int run_grid(struct so *so)
{
	int fails = 0;

	for (size_t i = 0; i < N_GRID; i++) {
		const struct cfg *g = &grid[i];
		mel_params p;
		mel_fb *fb = NULL;

		if (quick && i % 3)
			continue;
		cfg_params(g, &p);
		if (mel_fb_build(&p, &fb) < 0)
			die("mel_fb_build: out of memory");
		for (int path = 0; path < 2; path++) {
			int fused = path == 0;

			if (fused && !mel_cuda_fused_ok(p.n_fft))
				continue;
			for (int graphs = 1; graphs >= 0; graphs--) {
				char how[64], err[512];
				struct stats st;
				mel_backend *be = NULL;

				if (!so && !graphs)
					continue;
				memset(&st, 0, sizeof(st));
				snprintf(how, sizeof(how), "%s%s",
					 fused ? "fused" : "cufft",
					 so ? (graphs ? " graphs" : " direct") :
					      "");
				if (so) {
					setenv(MEL_CUDA_ENV_FFT,
					       fused ? "fused" : "cufft", 1);
					setenv(MEL_CUDA_ENV_GRAPH,
					       graphs ? "1" : "0", 1);
					if (so->open(&p, fb, -1, 0, &be, err,
						     sizeof(err)) < 0)
						die("mel_cuda_open: %s", err);
				} else {
					be = emu_open(&p, fb, fused);
				}
				parity_run(be, g, &p, fb, &st);
				be->destroy(be);
				fails += report(so ? "gpu" : "emu", g, how, &st);
				fflush(stdout);
			}
		}
		mel_fb_free(fb);
	}
	unsetenv(MEL_CUDA_ENV_FFT);
	unsetenv(MEL_CUDA_ENV_GRAPH);
	return fails;
}

/* ------------------------------------------------------------------ */
/* Probe */

static int probe(const char *path)
{
	struct so so;
	mel_params p;
	mel_fb *fb = NULL;
	mel_backend *be = NULL;
	char err[512] = "";

	so_load(&so, path);
	cfg_params(&seeds_cfg, &p);
	if (mel_fb_build(&p, &fb) < 0)
		die("mel_fb_build: out of memory");
	if (so.open(&p, fb, -1, 0, &be, err, sizeof(err)) < 0) {
		if (be)
			die("mel_cuda_open failed but returned a backend");
		printf("open failed: %s\n", err);
		mel_fb_free(fb);
		return 1;
	}
	printf("open ok: %s, depth %d\n", be->name, be->depth);
	be->destroy(be);
	mel_fb_free(fb);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Benchmark: the seeds' shape */

/* A batch of k records of 512 noise samples, as gpumel packs them. */
static void bench_fill(mel_batch *b, const mel_params *p, int in_dtype,
		       size_t k)
{
	uint32_t n = p->n_fft;

	b->in_dtype = in_dtype;
	b->n = k;
	for (size_t r = 0; r < k; r++) {
		b->rec[r].in_off = r * n;
		b->rec[r].n_samples = n;
		b->rec[r].n_frames = (uint32_t)mel_n_frames(p, n);
		b->rec[r].out_off = r * p->n_mels * b->rec[r].n_frames;
	}
	for (size_t i = 0; i < k * n; i++) {
		double v = 0.3 * (2.0 * rndu() - 1.0);

		if (in_dtype == REC_S16)
			((int16_t *)b->in)[i] = (int16_t)(v * 32767.0);
		else
			((float *)b->in)[i] = (float)v;
	}
}

static void bench_open(struct so *so, const mel_params *p, const mel_fb *fb,
		       const char *path, int graphs, mel_backend **be)
{
	char err[512];

	setenv(MEL_CUDA_ENV_FFT, path, 1);
	setenv(MEL_CUDA_ENV_GRAPH, graphs ? "1" : "0", 1);
	if (so->open(p, fb, -1, 0, be, err, sizeof(err)) < 0)
		die("mel_cuda_open: %s", err);
}

/* The kernels alone on one device-resident batch of k records. */
static void bench_kernels(struct so *so, size_t k, int reps)
{
	static const char *paths[] = { "fused", "cufft" };
	static const int dtypes[] = { REC_S16, REC_F32 };
	static const double tops[] = { -1.0, 80.0 };
	float *ms = (float *)xmalloc((size_t)reps * sizeof(float));

	printf("\nkernels alone, device-resident batch of %zu records x 512 "
	       "samples (median of %d runs)\n", k, reps);
	printf("  %-6s %-4s %-7s %10s %10s %12s\n", "path", "in", "top_db",
	       "median ms", "min ms", "Gsamples/s");
	for (int pi = 0; pi < 2; pi++)
		for (int ti = 0; ti < 2; ti++)
			for (int di = 0; di < 2; di++) {
				mel_params p;
				mel_fb *fb = NULL;
				mel_backend *be = NULL;
				mel_batch b;
				mel_batch *done;
				float med, mn;
				double gs;

				cfg_params(&seeds_cfg, &p);
				p.top_db = tops[ti];
				if (mel_fb_build(&p, &fb) < 0)
					die("mel_fb_build: out of memory");
				bench_open(so, &p, fb, paths[pi], 0, &be);
				memset(&b, 0, sizeof(b));
				if (be->batch_alloc(be, &b, k * 512 * 4,
						    k * 32 * 2, k) < 0)
					die("batch_alloc: %s", be->err);
				bench_fill(&b, &p, dtypes[di], k);
				if (be->submit(be, &b) < 0 ||
				    be->wait(be, &done) < 0)
					die("submit/wait: %s", be->err);
				/* warm-up, then the timed runs */
				if (so->time(be, &b, 3, ms) < 0 ||
				    so->time(be, &b, reps, ms) < 0)
					die("timing: %s", be->err);
				mn = ms[0];
				for (int i = 1; i < reps; i++)
					mn = ms[i] < mn ? ms[i] : mn;
				med = median(ms, reps);
				gs = (double)k * 512 / (med * 1e-3) / 1e9;
				printf("  %-6s %-4s %-7s %10.3f %10.3f %12.1f\n",
				       paths[pi], dtypes[di] == REC_S16 ? "s16" :
				       "f32", ti ? "80" : "none", med, mn, gs);
				printf("RESULT kernels path=%s in=%s top_db=%s "
				       "gsamples_per_s=%.2f median_ms=%.4f\n",
				       paths[pi], dtypes[di] == REC_S16 ? "s16" :
				       "f32", ti ? "80" : "none", gs, med);
				be->batch_free(be, &b);
				be->destroy(be);
				mel_fb_free(fb);
			}
	free(ms);
}

/* The whole path: submit/wait of total records in batches of k, copies
 * in and out included (the batches are filled once: the host loop's own
 * packing is not part of this). */
static void bench_pipe(struct so *so, size_t total, size_t k)
{
	printf("\nsubmit/wait with copies: %zu records x 512 s16 samples in "
	       "batches of %zu\n", total, k);
	printf("  %-6s %-7s %10s %12s %12s\n", "path", "graphs", "seconds",
	       "GB/s s16", "Gsamples/s");
	for (int pi = 0; pi < 2; pi++)
		for (int graphs = 1; graphs >= 0; graphs--) {
			const char *path = pi ? "cufft" : "fused";
			mel_params p;
			mel_fb *fb = NULL;
			mel_backend *be = NULL;
			mel_batch b[8];
			int nb, inflight = 0;
			size_t left = total, sub = 0;
			double t0, t;

			cfg_params(&seeds_cfg, &p);
			if (mel_fb_build(&p, &fb) < 0)
				die("mel_fb_build: out of memory");
			bench_open(so, &p, fb, path, graphs, &be);
			nb = be->depth + 1 < 8 ? be->depth + 1 : 8;
			memset(b, 0, sizeof(b));
			for (int i = 0; i < nb; i++) {
				if (be->batch_alloc(be, &b[i], k * 512 * 2,
						    k * 32 * 2, k) < 0)
					die("batch_alloc: %s", be->err);
				bench_fill(&b[i], &p, REC_S16, k);
			}
			t0 = now();
			for (; left > 0; sub++) {
				mel_batch *x = &b[sub % nb], *done;
				size_t n = left < k ? left : k;

				if (inflight == be->depth) {
					if (be->wait(be, &done) < 0)
						die("wait: %s", be->err);
					inflight--;
				}
				x->n = n;
				if (be->submit(be, x) < 0)
					die("submit: %s", be->err);
				inflight++;
				left -= n;
			}
			for (mel_batch *done; inflight > 0; inflight--)
				if (be->wait(be, &done) < 0)
					die("wait: %s", be->err);
			t = now() - t0;
			printf("  %-6s %-7s %10.3f %12.2f %12.1f\n", path,
			       graphs ? "on" : "off", t,
			       (double)total * 1024 / t / 1e9,
			       (double)total * 512 / t / 1e9);
			printf("RESULT pipe path=%s graphs=%d seconds=%.4f "
			       "gbytes_per_s=%.3f\n", path, graphs, t,
			       (double)total * 1024 / t / 1e9);
			for (int i = 0; i < nb; i++)
				be->batch_free(be, &b[i]);
			be->destroy(be);
			mel_fb_free(fb);
		}
}

/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " [options] MODE...\n"
"Checks and times gpumel's CUDA backend (gpumel-cuda.so).\n"
"\n"
"Modes (any number, run in this order):\n"
"      --probe=SO         load SO as gpumel does and open the backend: print\n"
"                         its name (exit 0) or why it cannot run (exit 1)\n"
"      --emu              run the kernels' arithmetic on the CPU over a grid\n"
"                         of options against a float64 reference (no GPU)\n"
"      --parity=SO        the same grid through SO on the GPU: both FFT\n"
"                         paths, CUDA graphs on and off\n"
"      --bench=SO         time the seeds' shape (512-sample records, n_fft\n"
"                         512, hop 512, 32 mels, no centring, dB, f16)\n"
"Options:\n"
"      --batch=N          records per batch timed by --bench's kernels\n"
"                         (default 262144)\n"
"      --pipe-batch=N     records per batch of --bench's submit/wait run\n"
"                         (default 32768, gpumel's 32 MiB batches)\n"
"      --records=N        records of that run (default %u, the seeds)\n"
"      --reps=N           timed kernel runs (default 30)\n"
"      --quick            a few small cases (for compute-sanitizer)\n"
"      --seed=N           random seed (default 1)\n"
"  -h, --help\n"
"Exit status: 0 all passed, 1 a check failed or an error, 2 usage.\n",
		SEEDS_RECORDS);
}

enum { O_PROBE = 256, O_EMU, O_PARITY, O_BENCH, O_BATCH, O_PIPE, O_RECORDS,
       O_REPS, O_QUICK, O_SEED };

static size_t arg_num(const char *opt, const char *s, size_t lo, size_t hi)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (!*s || *end || v < lo || v > hi) {
		fprintf(stderr, PROG ": %s: '%s' is not a number in %zu..%zu\n",
			opt, s, lo, hi);
		exit(2);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "probe", required_argument, NULL, O_PROBE },
		{ "emu", no_argument, NULL, O_EMU },
		{ "parity", required_argument, NULL, O_PARITY },
		{ "bench", required_argument, NULL, O_BENCH },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "pipe-batch", required_argument, NULL, O_PIPE },
		{ "records", required_argument, NULL, O_RECORDS },
		{ "reps", required_argument, NULL, O_REPS },
		{ "quick", no_argument, NULL, O_QUICK },
		{ "seed", required_argument, NULL, O_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *probe_so = NULL, *parity_so = NULL, *bench_so = NULL;
	size_t batch = 262144, pipe_batch = 32768, records = SEEDS_RECORDS;
	int emu = 0, reps = 30, c, ret = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_PROBE: probe_so = optarg; break;
		case O_EMU: emu = 1; break;
		case O_PARITY: parity_so = optarg; break;
		case O_BENCH: bench_so = optarg; break;
		case O_BATCH:
			batch = arg_num("--batch", optarg, 1, 1u << 22);
			break;
		case O_PIPE:
			pipe_batch = arg_num("--pipe-batch", optarg, 1, 1u << 22);
			break;
		case O_RECORDS:
			records = arg_num("--records", optarg, 1, 1ull << 32);
			break;
		case O_REPS: reps = (int)arg_num("--reps", optarg, 1, 10000); break;
		case O_QUICK: quick = 1; break;
		case O_SEED:
			rng_state = 0x9e3779b97f4a7c15ull ^
				    arg_num("--seed", optarg, 0, ~(size_t)0);
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || (!probe_so && !emu && !parity_so && !bench_so)) {
		usage(stderr);
		return 2;
	}
	if (probe_so && probe(probe_so))
		ret = 1;
	if (emu && run_grid(NULL))
		ret = 1;
	if (parity_so) {
		struct so so;

		so_load(&so, parity_so);
		if (run_grid(&so))
			ret = 1;
	}
	if (bench_so) {
		struct so so;

		so_load(&so, bench_so);
		bench_kernels(&so, batch, reps);
		bench_pipe(&so, records, pipe_batch);
	}
	return ret;
}
