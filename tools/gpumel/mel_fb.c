/*
 * mel_fb.c - what every gpumel backend shares: the frame count, the
 * analysis window and the mel filterbank, all computed once on the host in
 * float64.
 *
 * The filterbank follows librosa.filters.mel (fft_frequencies, then
 * mel_frequencies of n_mels + 2 points, then triangles from the ramps
 * divided by the point spacing, then Slaney's area normalisation) and
 * torchaudio.functional.melscale_fbanks, which is the same construction
 * with one difference kept here on purpose: torchaudio places the bins at
 * linspace(0, floor(sr / 2), n_bins) rather than at k * sr / n_fft (see
 * MEL_BINS_TORCH in backend.h).
 *
 * fbank's filterbank and windows are Kaldi's (feature-window.cc,
 * mel-computations.cc), as torchaudio.compliance.kaldi mirrors them.
 */
#include <math.h>
#include <stdlib.h>

#include "backend.h"

uint64_t mel_n_frames(const mel_params *p, uint64_t n_samples)
{
	uint64_t len = n_samples;

	/* Nothing to analyse: reflecting an empty signal is undefined and a
	 * frame of pure padding describes no audio. */
	if (n_samples == 0)
		return 0;
	if (p->feature == MEL_FEAT_FBANK && p->center)
		return (n_samples + p->hop_length / 2) / p->hop_length;
	if (p->feature == MEL_FEAT_FBANK)
		return n_samples < p->win_length ? 0 :
		       1 + (n_samples - p->win_length) / p->hop_length;
	/* librosa and torch both pad n_fft / 2 (rounded down) on each side,
	 * so an odd n_fft loses one frame position against 1 + n / hop. */
	if (p->center)
		len += 2 * (uint64_t)(p->n_fft / 2);
	if (len < p->n_fft)
		return 0;
	return 1 + (len - p->n_fft) / p->hop_length;
}

uint64_t mel_rec_frames(const mel_params *p, const mel_rec *r)
{
	mel_params q;

	if (!(r->flags & MEL_REC_PADDED))
		return mel_n_frames(p, r->n_samples);
	q = *p;
	q.center = 0;
	return mel_n_frames(&q, r->n_samples);
}

/* Slaney's Auditory Toolbox scale (librosa's default): linear below
 * 1 kHz, logarithmic above. */
#define SLANEY_F_SP (200.0 / 3.0)
#define SLANEY_MIN_LOG_HZ 1000.0
#define SLANEY_MIN_LOG_MEL (SLANEY_MIN_LOG_HZ / SLANEY_F_SP)

static double slaney_logstep(void)
{
	return log(6.4) / 27.0;
}

static double hz_to_mel(double hz, int scale)
{
	if (scale == MEL_SCALE_KALDI)
		return 1127.0 * log(1.0 + hz / 700.0);
	if (scale == MEL_SCALE_HTK)
		return 2595.0 * log10(1.0 + hz / 700.0);
	if (hz >= SLANEY_MIN_LOG_HZ)
		return SLANEY_MIN_LOG_MEL +
		       log(hz / SLANEY_MIN_LOG_HZ) / slaney_logstep();
	return hz / SLANEY_F_SP;
}

static double mel_to_hz(double mel, int scale)
{
	if (scale == MEL_SCALE_HTK)
		return 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
	if (mel >= SLANEY_MIN_LOG_MEL)
		return SLANEY_MIN_LOG_HZ *
		       exp(slaney_logstep() * (mel - SLANEY_MIN_LOG_MEL));
	return SLANEY_F_SP * mel;
}

/* numpy.linspace(start, stop, num): i * step + start, the last point set
 * to stop exactly. */
static void linspace(double start, double stop, uint32_t num, double *out)
{
	double step = num > 1 ? (stop - start) / (double)(num - 1) : 0.0;

	for (uint32_t i = 0; i < num; i++)
		out[i] = (double)i * step + start;
	if (num > 1)
		out[num - 1] = stop;
}

/* Centre frequency of every FFT bin, as the library named by bin_freqs
 * computes it. */
static void bin_frequencies(const mel_params *p, uint32_t n_bins, double *f)
{
	if (p->bin_freqs == MEL_BINS_TORCH) {
		linspace(0.0, floor(p->sample_rate / 2.0), n_bins, f);
		return;
	}
	/* numpy.fft.rfftfreq(n_fft, 1 / sr): k * (1 / (n_fft * d)) */
	double val = 1.0 / ((double)p->n_fft * (1.0 / p->sample_rate));

	for (uint32_t k = 0; k < n_bins; k++)
		f[k] = (double)k * val;
}

/* Filter m's weight on a bin at frequency f: the rising ramp from point m
 * to m + 1, the falling one from m + 1 to m + 2, never negative. */
static double triangle(const double *mel_f, uint32_t m, double f)
{
	double lower = (f - mel_f[m]) / (mel_f[m + 1] - mel_f[m]);
	double upper = (mel_f[m + 2] - f) / (mel_f[m + 2] - mel_f[m + 1]);
	double w = lower < upper ? lower : upper;

	return w > 0.0 ? w : 0.0;
}

/* Dense weights [n_mels][n_bins] into dense; mel_f gets the n_mels + 2
 * filter edge frequencies. */
static void dense_weights(const mel_params *p, uint32_t n_bins,
			  const double *freqs, double *mel_f, double *dense)
{
	uint32_t n_pts = p->n_mels + 2;

	linspace(hz_to_mel(p->fmin, p->mel_scale),
		 hz_to_mel(p->fmax, p->mel_scale), n_pts, mel_f);
	for (uint32_t i = 0; i < n_pts; i++)
		mel_f[i] = mel_to_hz(mel_f[i], p->mel_scale);
	for (uint32_t m = 0; m < p->n_mels; m++) {
		double enorm = 1.0;

		if (p->norm == MEL_NORM_SLANEY)
			enorm = 2.0 / (mel_f[m + 2] - mel_f[m]);
		for (uint32_t k = 0; k < n_bins; k++)
			dense[(size_t)m * n_bins + k] =
				triangle(mel_f, m, freqs[k]) * enorm;
	}
}

/* Keeps each filter's nonzero run (a triangle: one run) in fb. */
static int sparsify(mel_fb *fb, const double *dense)
{
	uint32_t n = 0;

	for (uint32_t m = 0; m < fb->n_mels; m++) {
		const double *row = dense + (size_t)m * fb->n_bins;
		uint32_t lo = 0, hi = fb->n_bins;

		while (lo < hi && row[lo] == 0.0)
			lo++;
		while (hi > lo && row[hi - 1] == 0.0)
			hi--;
		fb->first[m] = hi > lo ? lo : 0;
		fb->count[m] = hi - lo;
		fb->off[m] = n;
		n += hi - lo;
	}
	fb->n_weights = n;
	fb->w = malloc(((size_t)n + 1) * sizeof(*fb->w));
	fb->w64 = malloc(((size_t)n + 1) * sizeof(*fb->w64));
	if (!fb->w || !fb->w64)
		return -1;
	for (uint32_t m = 0; m < fb->n_mels; m++) {
		const double *row = dense + (size_t)m * fb->n_bins;

		for (uint32_t j = 0; j < fb->count[m]; j++) {
			fb->w64[fb->off[m] + j] = row[fb->first[m] + j];
			fb->w[fb->off[m] + j] = (float)row[fb->first[m] + j];
		}
	}
	return 0;
}

/*
 * Kaldi's MelBanks: n_mels + 2 points evenly spaced in mel from fmin to
 * fmax; filter m rises from point m to m + 1 and falls to m + 2 in the
 * mel domain, over the bins k < n_fft / 2 at k * sr / n_fft strictly
 * inside its edges (the Nyquist bin gets no weight).
 */
static void kaldi_weights(const mel_params *p, uint32_t n_bins,
			  double *dense)
{
	double lo = hz_to_mel(p->fmin, MEL_SCALE_KALDI);
	double hi = hz_to_mel(p->fmax, MEL_SCALE_KALDI);
	double delta = (hi - lo) / (double)(p->n_mels + 1);
	double width = p->sample_rate / (double)p->n_fft;

	for (uint32_t m = 0; m < p->n_mels; m++) {
		double left = lo + m * delta, centre = lo + (m + 1) * delta;
		double right = lo + (m + 2) * delta;

		for (uint32_t k = 0; k < n_bins; k++) {
			double mel = hz_to_mel(width * k, MEL_SCALE_KALDI);
			double w = 0.0;

			if (k < p->n_fft / 2 && mel > left && mel < right)
				w = mel <= centre ?
				    (mel - left) / (centre - left) :
				    (right - mel) / (right - centre);
			dense[(size_t)m * n_bins + k] = w;
		}
	}
}

int mel_fb_build(const mel_params *p, mel_fb **out)
{
	uint32_t n_bins = p->n_fft / 2 + 1;
	double *freqs = malloc(n_bins * sizeof(*freqs));
	double *mel_f = malloc((p->n_mels + 2) * sizeof(*mel_f));
	double *dense = malloc((size_t)p->n_mels * n_bins * sizeof(*dense));
	mel_fb *fb = calloc(1, sizeof(*fb));
	int ret = -1;

	*out = NULL;
	if (!freqs || !mel_f || !dense || !fb)
		goto out;
	fb->n_mels = p->n_mels;
	fb->n_bins = n_bins;
	fb->first = calloc(p->n_mels, sizeof(*fb->first));
	fb->count = calloc(p->n_mels, sizeof(*fb->count));
	fb->off = calloc(p->n_mels, sizeof(*fb->off));
	if (!fb->first || !fb->count || !fb->off)
		goto out;
	if (p->mel_scale == MEL_SCALE_KALDI) {
		kaldi_weights(p, n_bins, dense);
	} else {
		bin_frequencies(p, n_bins, freqs);
		dense_weights(p, n_bins, freqs, mel_f, dense);
	}
	if (sparsify(fb, dense) < 0)
		goto out;
	*out = fb;
	fb = NULL;
	ret = 0;
out:
	mel_fb_free(fb);
	free(dense);
	free(mel_f);
	free(freqs);
	return ret;
}

void mel_fb_free(mel_fb *fb)
{
	if (!fb)
		return;
	free(fb->first);
	free(fb->count);
	free(fb->off);
	free(fb->w);
	free(fb->w64);
	free(fb);
}

/* Kaldi's windows (FeatureWindowFunction): symmetric, a = 2 pi / (N - 1). */
static double kaldi_window(int window, uint32_t i, uint32_t n)
{
	double a = 2.0 * M_PI / (double)(n - 1), x = a * (double)i;

	switch (window) {
	case MEL_WIN_HANN:
		return 0.5 - 0.5 * cos(x);
	case MEL_WIN_HAMMING:
		return 0.54 - 0.46 * cos(x);
	case MEL_WIN_POVEY:
		return pow(0.5 - 0.5 * cos(x), 0.85);
	case MEL_WIN_BLACKMAN:
		return 0.42 - 0.5 * cos(x) + 0.08 * cos(2.0 * x);
	default:
		return 1.0;
	}
}

void mel_window_build(const mel_params *p, double *w)
{
	uint32_t left = mel_window_left(p);
	double n = (double)p->win_length;

	for (uint32_t i = 0; i < p->n_fft; i++)
		w[i] = 0.0;
	if (p->feature == MEL_FEAT_FBANK) {
		for (uint32_t i = 0; i < p->win_length; i++)
			w[i] = p->win_length > 1 ?
			       kaldi_window(p->window, i, p->win_length) : 1.0;
		return;
	}
	/* Periodic windows (scipy's fftbins=True, torch's periodic=True):
	 * the period is win_length, not win_length - 1. */
	for (uint32_t i = 0; i < p->win_length; i++) {
		double c = cos(2.0 * M_PI * (double)i / n);
		double v = 1.0;

		if (p->window == MEL_WIN_HANN)
			v = 0.5 - 0.5 * c;
		else if (p->window == MEL_WIN_HAMMING)
			v = 0.54 - 0.46 * c;
		w[left + i] = v;
	}
}

void mel_dct_build(const mel_params *p, double *d)
{
	uint32_t M = p->n_mels;

	for (uint32_t c = 0; c < p->n_mfcc; c++) {
		double scale = sqrt((c ? 2.0 : 1.0) / M);
		double q = p->lifter;
		double lift = q != 0.0 ? 1.0 + 0.5 * q * sin(M_PI * c / q) :
					 1.0;

		for (uint32_t m = 0; m < M; m++)
			d[(size_t)c * M + m] = lift * scale *
					       cos(M_PI * c * (m + 0.5) / M);
	}
}
