/*
 * cuda_emu.cu - the CUDA backend's kernels on the CPU (see cuda_emu.h):
 * the simulated threads of a team run each phase of cuda_mel_dev.h one
 * after another, which computes what the parallel run computes
 * (cuda_mel_dev.h says why); cuFFT's R2C in float64; and the CRC
 * kernels over cuda_crc_dev.h.
 *
 * Host-only C++, built with the host compiler against CUDA's headers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda_crc_dev.h"
#include "../cuda_mel_dev.h"
#include "cuda_emu.h"

static void *emu_alloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "cuda emulation: out of memory (%zu bytes)\n",
			n);
		abort();
	}
	return p;
}

/* The team's largest value into its record's key (the kernels' team_max
 * and atomicMax). */
static void emu_key(const mel_kargs &a, uint32_t r, float mx)
{
	uint32_t k = md_fkey(mx);

	if (a.rec_key && k > a.rec_key[r])
		a.rec_key[r] = k;
}

/* k_fused over batch frames [a.f0, a.f0 + a.nf). */
template <int N, class IN, bool FB>
static void emu_fused_n(const mel_kargs &a)
{
	constexpr int M = N / 2, T = md_fused_team_of(N, FB);
	float2 *A = (float2 *)emu_alloc(M * sizeof(float2));
	float2 *B = (float2 *)emu_alloc(M * sizeof(float2));
	const float2 *tw = (const float2 *)a.tw;

	for (uint32_t i = 0; i < a.nf; i++) {
		md_frame fr = md_locate(a, a.f0 + i);
		float mx = -INFINITY;

		if (a.fbank) {
			md_kaldi_frame<md_team_one, IN>(a, fr, 0, (float *)B);
			for (int t = 0; t < T; t++)
				md_pairs_of<N, T>((const float *)B, A, t);
		} else {
			for (int t = 0; t < T; t++)
				md_load_pairs<N, T, IN>(a, fr, t, A);
		}
		float2 *Z = md_fft<M, T, md_pol_host>(A, B, 0, true, tw);
		float *P = (float *)(Z == A ? B : A);

		for (int t = 0; t < T; t++)
			md_power<M, T>(Z, P, t, tw, a.power);
		for (int t = 0; t < T; t++)
			mx = fmaxf(mx, md_mel(a, fr, t, T, md_pw_array{ P },
					      (float *)Z));
		if (md_mel_split(a.n_mels, T) > 0)
			for (int t = 0; t < T; t++)
				mx = fmaxf(mx, md_mel_combine(a, fr, t, T,
							      (float *)Z));
		emu_key(a, fr.r, mx);
	}
	free(A);
	free(B);
}

template <int N>
static void emu_fused_in(const mel_kargs &a)
{
	if constexpr (md_fused_fbank_ok(N)) {
		if (a.fbank && a.in_dtype == REC_S16)
			return emu_fused_n<N, int16_t, true>(a);
		if (a.fbank)
			return emu_fused_n<N, float, true>(a);
	}
	if (a.in_dtype == REC_S16)
		emu_fused_n<N, int16_t, false>(a);
	else
		emu_fused_n<N, float, false>(a);
}

int emu_fused(const mel_kargs &a)
{
	switch (a.n_fft) {
	case 8: emu_fused_in<8>(a); return 0;
	case 16: emu_fused_in<16>(a); return 0;
	case 32: emu_fused_in<32>(a); return 0;
	case 64: emu_fused_in<64>(a); return 0;
	case 128: emu_fused_in<128>(a); return 0;
	case 256: emu_fused_in<256>(a); return 0;
	case 512: emu_fused_in<512>(a); return 0;
	case 1024: emu_fused_in<1024>(a); return 0;
	case 2048: emu_fused_in<2048>(a); return 0;
	case 4096: emu_fused_in<4096>(a); return 0;
	}
	return -1;
}

void emu_frames(const mel_kargs &a)
{
	for (uint32_t i = 0; i < a.nf; i++) {
		md_frame fr = md_locate(a, a.f0 + i);
		float *row = a.frames + (size_t)i * a.n_fft;

		if (a.fbank && a.in_dtype == REC_S16) {
			md_kaldi_frame<md_team_one, int16_t>(a, fr, 0, row);
			continue;
		}
		if (a.fbank) {
			md_kaldi_frame<md_team_one, float>(a, fr, 0, row);
			continue;
		}
		for (int t = 0; t < MEL_T_FRAMES; t++) {
			if (a.in_dtype == REC_S16)
				md_load_real<int16_t>(a, fr, t, MEL_T_FRAMES,
						      row);
			else
				md_load_real<float>(a, fr, t, MEL_T_FRAMES,
						    row);
		}
	}
}

void emu_mel(const mel_kargs &a)
{
	for (uint32_t i = 0; i < a.nf; i++) {
		md_frame fr = md_locate(a, a.f0 + i);
		const float2 *X = (const float2 *)a.spec +
				  (size_t)i * (a.n_fft / 2 + 1);
		float mx = -INFINITY;

		for (int t = 0; t < MEL_T_MEL; t++)
			mx = fmaxf(mx, md_mel(a, fr, t, MEL_T_MEL,
					      md_pw_spec{ X, a.power }, NULL));
		emu_key(a, fr.r, mx);
	}
}

void emu_clamp(const mel_kargs &a, uint32_t n_frames)
{
	for (uint32_t f = 0; f < n_frames; f++)
		for (uint32_t m = 0; m < a.n_mels; m++)
			md_clamp(a, f, m);
}

void emu_dct(const mel_kargs &a, uint32_t n_frames)
{
	for (uint32_t f = 0; f < n_frames; f++)
		md_dct(a, f);
}

void emu_dft(uint32_t n, uint32_t kmax, double *re, double *im,
	     const double *cs, const double *sn, double *tr, double *ti)
{
	if (n & (n - 1)) {
		for (uint32_t k = 0; k < kmax; k++) {
			double sr = 0.0, si = 0.0;
			uint64_t e = 0;

			for (uint32_t t = 0; t < n; t++) {
				sr += re[t] * cs[e] + im[t] * sn[e];
				si += im[t] * cs[e] - re[t] * sn[e];
				e += k;
				if (e >= n)
					e -= n;
			}
			tr[k] = sr;
			ti[k] = si;
		}
		memcpy(re, tr, kmax * sizeof(double));
		memcpy(im, ti, kmax * sizeof(double));
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
				double wr = cs[k * step], wi = -sn[k * step];
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

void emu_r2c(uint32_t n, size_t rows, const float *in, float *out)
{
	double *buf = (double *)emu_alloc(6 * (size_t)n * sizeof(double));
	double *cs = buf, *sn = buf + n, *re = buf + 2 * n, *im = buf + 3 * n;

	for (uint32_t k = 0; k < n; k++) {
		cs[k] = cos(2.0 * M_PI * (double)k / (double)n);
		sn[k] = sin(2.0 * M_PI * (double)k / (double)n);
	}
	for (size_t r = 0; r < rows; r++) {
		float *y = out + r * 2 * (n / 2 + 1);

		for (uint32_t t = 0; t < n; t++) {
			re[t] = in[r * n + t];
			im[t] = 0.0;
		}
		emu_dft(n, n / 2 + 1, re, im, cs, sn, buf + 4 * n,
			buf + 5 * n);
		for (uint32_t k = 0; k <= n / 2; k++) {
			y[2 * k] = (float)re[k];
			y[2 * k + 1] = (float)im[k];
		}
	}
	free(buf);
}

/* The CRC kernels (cuda_crc.cu): got zeroed, then each segment's value
 * XORed in, every thread of a segment's block computed in turn, and the
 * power of x of a segment's shift made as warp 0's shuffles make it. */
void emu_crc32c(const unsigned char *base, mel_crc *checks, uint32_t n)
{
	static constexpr mel_crc_tab tab = mel_crc_tab_make();
	const uint32_t *t = &tab.tab[0][0];

	for (uint32_t i = 0; i < n; i++)
		checks[i].got = 0;
	for (uint32_t i = 0; i < n; i++) {
		mc_geom g = mc_geom_of(base, checks[i].off, checks[i].len);

		for (uint64_t k = 0; k < g.nseg; k++) {
			uint32_t r = 0, f[32], x[32];

			for (uint32_t j = 0; g.m && j < MEL_CRC_T; j++)
				r ^= mc_part(t, tab.lane[j], &g, k, j);
			if (k + 1 == g.nseg) {
				checks[i].got ^= mc_last(t, &g, r);
				continue;
			}
			for (uint32_t l = 0; l < 32; l++)
				f[l] = mc_factor(tab.x2n, mc_after(&g, k), l);
			for (uint32_t o = 1; o < 32; o <<= 1) {
				for (uint32_t l = 0; l < 32; l++)
					x[l] = mc_mul(f[l], f[l ^ o]);
				memcpy(f, x, sizeof(f));
			}
			checks[i].got ^= mc_mul(f[0], r);
		}
	}
}
