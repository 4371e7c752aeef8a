/*
 * timing.cu - --bench: the 10-second job's shape (512-sample records, n_fft
 * 512, hop 512, 32 mels, no centring, dB, f16) through a .so's backend on
 * the GPU: the kernels alone on device-resident batches (CUDA events,
 * through the .so's mel_cuda_time_kernels; median), then the whole
 * submit/wait path with its copies. RESULT lines carry the figures for
 * scripts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

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
		b->rec[r].flags = 0;
		b->rec[r].reserved = 0;
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
void bench_kernels(struct so *so, size_t k, int reps)
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

				cfg_params(&ten_second_cfg, &p);
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
void bench_pipe(struct so *so, size_t total, size_t k)
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

			cfg_params(&ten_second_cfg, &p);
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
