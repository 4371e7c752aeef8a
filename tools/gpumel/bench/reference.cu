/*
 * reference.cu - what the features should be, in float64, written from
 * the formulas independently of the kernels (frames of the padded signal,
 * periodic window, |rfft|^power, filterbank, log, top_db), and the
 * comparison of a backend's output with it. The DFT is emu_dft, the
 * float64 transform that stands in for cuFFT in the emulation, not the
 * kernels' FFT; real cuFFT on a GPU checks it in turn (--parity).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_emu.h"

void ref_init(struct ref *R, const mel_params *p, const mel_fb *fb)
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
	R->tr = (double *)xmalloc(n * sizeof(double));
	R->ti = (double *)xmalloc(n * sizeof(double));
	R->pw = (double *)xmalloc((n / 2 + 1) * sizeof(double));
	mel_window_build(p, R->win);
	for (uint32_t k = 0; k < n; k++) {
		R->cs[k] = cos(2.0 * M_PI * (double)k / (double)n);
		R->sn[k] = sin(2.0 * M_PI * (double)k / (double)n);
	}
}

void ref_free(struct ref *R)
{
	free(R->win);
	free(R->re);
	free(R->im);
	free(R->cs);
	free(R->sn);
	free(R->tr);
	free(R->ti);
	free(R->pw);
	free(R->x);
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

void ref_record(struct ref *R, const double *x, uint32_t n, uint32_t frames,
		double *out)
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
		emu_dft(N, bins, R->re, R->im, R->cs, R->sn, R->tr, R->ti);
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

/*
 * The allowed error: 0.01 dB (db), its equivalent 0.01 ln(10) / 10 (ln)
 * or relative 0.23% (none, with a floor of 1e-5 of the record's largest
 * value for the float32 FFT's absolute error), plus one unit in the last
 * place for f16 and bf16.
 */
void compare_record(const mel_params *p, const void *out, uint64_t off,
		    const double *ref, size_t cells, struct stats *st,
		    size_t rec_index)
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
