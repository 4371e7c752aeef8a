/*
 * cpu_frame.c - what one frame goes through in gpumel's CPU backend
 * (cpu_backend.c), and the two loops over a thread's run of frames:
 * run_frames (the bands, or MFCC's first pass) and dct_frames (MFCC's
 * second pass). The per-frame helpers stay static in this file, so that
 * the compiler inlines them into those loops.
 *
 * Per frame: gather n_fft samples (padding at the record's edges when
 * centred), multiply by the window, r2c FFT, |X|^2 or |X|, the sparse mel
 * filterbank, the log, the cast to the output type, written straight into
 * the record's [n_rows][n_frames] matrix.
 *
 * fbank frames are Kaldi's (kaldi_frame): win_length samples in Kaldi's
 * scale, dithered, mean removed, pre-emphasised and windowed at the start
 * of the n_fft, the log energy beside; the rest is the same path with
 * ln(max(x, epsilon)), the energy in row 0 when asked for.
 */
#include <fftw3.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../lib/half.h"
#include "../../lib/rec.h"
#include "backend.h"
#include "cpu_backend_int.h"
#include "dither.h"

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
void clamp_matrix(const struct cpu_ctx *c, void *out, uint64_t n,
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

void *rec_out(const struct cpu_ctx *c, const mel_batch *b,
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
float run_frames(struct worker *w, size_t ri, uint64_t a, uint64_t e)
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
void dct_frames(struct worker *w, size_t ri, uint64_t a, uint64_t e)
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
