/*
 * timing.cu - --bench: a shape (records of some length and the transform
 * gpumel would apply to them) through a .so's backend on the GPU: the
 * kernels alone on device-resident batches (CUDA events, through the .so's
 * mel_cuda_time_kernels; median), then the whole submit/wait path with its
 * copies. The default shape is the 10-second job's (512-sample records,
 * n_fft 512, hop 512, 32 mels, no centring, dB, f16), timed on both FFT
 * paths and with top_db off and 80; a shape from gpumel's options
 * (--record-samples, shape.c) is timed on the path gpumel would take.
 * RESULT lines carry the figures for scripts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void shape_ten_second(struct bench_shape *s)
{
	memset(s, 0, sizeof(*s));
	cfg_params(&ten_second_cfg, &s->p);
	s->rec_samples = ten_second_cfg.n_fft;
	s->ten_second = 1;
}

/* Frames and output elements of one record of the shape. */
static uint32_t shape_frames(const struct bench_shape *s)
{
	return (uint32_t)mel_n_frames(&s->p, s->rec_samples);
}

static size_t shape_out_bytes(const struct bench_shape *s)
{
	return (size_t)mel_n_rows(&s->p) * shape_frames(s) *
	       out_size(s->p.out_dtype);
}

/* A batch of k records of noise of the shape, as gpumel packs them. */
static void bench_fill(mel_batch *b, const struct bench_shape *s,
		       int in_dtype, size_t k)
{
	uint32_t n = s->rec_samples, frames = shape_frames(s);

	b->in_dtype = in_dtype;
	b->n = k;
	for (size_t r = 0; r < k; r++) {
		b->rec[r].in_off = r * n;
		b->rec[r].n_samples = n;
		b->rec[r].n_frames = frames;
		b->rec[r].out_off = r * mel_n_rows(&s->p) * frames;
		b->rec[r].flags = 0;
		b->rec[r].reserved = 0;
		b->rec[r].clip = r;
		b->rec[r].pos0 = 0;
	}
	for (size_t i = 0; i < k * n; i++) {
		double v = 0.3 * (2.0 * rndu() - 1.0);

		if (in_dtype == REC_S16)
			((int16_t *)b->in)[i] = (int16_t)(v * 32767.0);
		else
			((float *)b->in)[i] = (float)v;
	}
}

/* path: fused, cufft, or auto (MELPIPE_CUDA_FFT unset: gpumel's pick). */
static void bench_open(struct so *so, const mel_params *p, const mel_fb *fb,
		       const char *path, int graphs, mel_backend **be)
{
	char err[512];

	if (strcmp(path, "auto"))
		setenv(MEL_CUDA_ENV_FFT, path, 1);
	else
		unsetenv(MEL_CUDA_ENV_FFT);
	setenv(MEL_CUDA_ENV_GRAPH, graphs ? "1" : "0", 1);
	if (so->open(p, fb, -1, 0, be, err, sizeof(err)) < 0)
		die("mel_cuda_open: %s", err);
}

static const char *dtype_name(int dtype)
{
	return dtype == REC_S16 ? "s16" : dtype == REC_F32 ? "f32" :
	       dtype == REC_F16 ? "f16" : "bf16";
}

/* One line of the kernels-alone table: p on path, in_dtype samples, k
 * records, reps runs. */
static void time_one(struct so *so, const struct bench_shape *s,
		     const mel_params *p, const char *path, int in_dtype,
		     size_t k, int reps, float *ms)
{
	mel_fb *fb = NULL;
	mel_backend *be = NULL;
	mel_batch b, *done;
	float med, mn;
	double gs, samples = (double)k * s->rec_samples;
	char top[32];

	if (mel_fb_build(p, &fb) < 0)
		die("mel_fb_build: out of memory");
	bench_open(so, p, fb, path, 0, &be);
	memset(&b, 0, sizeof(b));
	if (be->batch_alloc(be, &b, k * s->rec_samples * 4,
			    k * shape_out_bytes(s), k) < 0)
		die("batch_alloc: %s", be->err);
	bench_fill(&b, s, in_dtype, k);
	if (be->submit(be, &b) < 0 || be->wait(be, &done) < 0)
		die("submit/wait: %s", be->err);
	/* warm-up, then the timed runs */
	if (so->time(be, &b, 3, ms) < 0 || so->time(be, &b, reps, ms) < 0)
		die("timing: %s", be->err);
	mn = ms[0];
	for (int i = 1; i < reps; i++)
		mn = ms[i] < mn ? ms[i] : mn;
	med = median(ms, reps);
	gs = samples / (med * 1e-3) / 1e9;
	if (mel_clamps(p))
		snprintf(top, sizeof(top), "%g", p->top_db);
	else
		snprintf(top, sizeof(top), "none");
	if (s->ten_second) {
		/* as scripts/gpu-check and scripts/bench have read it */
		printf("  %-6s %-4s %-7s %10.3f %10.3f %12.1f\n", path,
		       dtype_name(in_dtype), top, med, mn, gs);
		printf("RESULT kernels path=%s in=%s top_db=%s "
		       "gsamples_per_s=%.2f median_ms=%.4f\n", path,
		       dtype_name(in_dtype), top, gs, med);
	} else {
		printf("  %-6s %-4s %-7s %10.3f %10.3f %12.1f %10.3f\n",
		       path, dtype_name(in_dtype), top, med, mn, gs,
		       med * 1e3 / (double)k);
		printf("RESULT kernels path=%s in=%s top_db=%s records=%zu "
		       "record_samples=%u gsamples_per_s=%.2f median_ms=%.4f "
		       "min_ms=%.4f us_per_record=%.4f\n", path,
		       dtype_name(in_dtype), top, k, s->rec_samples, gs, med,
		       mn, med * 1e3 / (double)k);
	}
	be->batch_free(be, &b);
	be->destroy(be);
	mel_fb_free(fb);
}

/* What the shape computes, for the headings. */
static void shape_describe(const struct bench_shape *s, char *buf,
			   size_t len)
{
	const mel_params *p = &s->p;

	if (s->ten_second) {
		snprintf(buf, len, "the 10-second job: n_fft 512, hop 512, 32 "
			 "mels, no centring, dB, f16");
		return;
	}
	snprintf(buf, len, "%s, %g Hz, frame %u every %u, n_fft %u, %u "
		 "rows x %u frames of %s a record",
		 p->feature == MEL_FEAT_FBANK ? "fbank" : "mel",
		 p->sample_rate, mel_frame_len(p), p->hop_length, p->n_fft,
		 mel_n_rows(p), shape_frames(s), dtype_name(p->out_dtype));
}

/* The kernels alone on one device-resident batch of k records. */
void bench_kernels(struct so *so, const struct bench_shape *s, size_t k,
		   int reps)
{
	static const char *paths[] = { "fused", "cufft" };
	static const int dtypes[] = { REC_S16, REC_F32 };
	static const double tops[] = { -1.0, 80.0 };
	float *ms = (float *)xmalloc((size_t)reps * sizeof(float));
	char what[256];

	printf("\nkernels alone, device-resident batch of %zu records x %u "
	       "samples (median of %d runs)\n", k, s->rec_samples, reps);
	if (!s->ten_second) {
		shape_describe(s, what, sizeof(what));
		printf("  %s\n", what);
		printf("  %-6s %-4s %-7s %10s %10s %12s %10s\n", "path",
		       "in", "top_db", "median ms", "min ms", "Gsamples/s",
		       "us/record");
		for (int di = 0; di < 2; di++)
			time_one(so, s, &s->p, "auto", dtypes[di], k, reps,
				 ms);
		free(ms);
		return;
	}
	printf("  %-6s %-4s %-7s %10s %10s %12s\n", "path", "in", "top_db",
	       "median ms", "min ms", "Gsamples/s");
	for (int pi = 0; pi < 2; pi++)
		for (int ti = 0; ti < 2; ti++)
			for (int di = 0; di < 2; di++) {
				mel_params p = s->p;

				p.top_db = tops[ti];
				time_one(so, s, &p, paths[pi], dtypes[di], k,
					 reps, ms);
			}
	free(ms);
}

/* The whole path: submit/wait of total records in batches of k, copies
 * in and out included (the batches are filled once: the host loop's own
 * packing is not part of this). */
void bench_pipe(struct so *so, const struct bench_shape *s, size_t total,
		size_t k)
{
	static const char *paths[] = { "fused", "cufft", "auto" };
	uint32_t n = s->rec_samples;
	double in_bytes = (double)total * n * 2;

	printf("\nsubmit/wait with copies: %zu records x %u s16 samples in "
	       "batches of %zu\n", total, n, k);
	printf("  %-6s %-7s %10s %12s %12s\n", "path", "graphs", "seconds",
	       "GB/s s16", "Gsamples/s");
	for (int pi = s->ten_second ? 0 : 2; pi < (s->ten_second ? 2 : 3);
	     pi++)
		for (int graphs = 1; graphs >= 0; graphs--) {
			const char *path = paths[pi];
			mel_fb *fb = NULL;
			mel_backend *be = NULL;
			mel_batch b[8];
			int nb, inflight = 0;
			size_t left = total, sub = 0;
			double t0, t;

			if (mel_fb_build(&s->p, &fb) < 0)
				die("mel_fb_build: out of memory");
			bench_open(so, &s->p, fb, path, graphs, &be);
			nb = be->depth + 1 < 8 ? be->depth + 1 : 8;
			memset(b, 0, sizeof(b));
			for (int i = 0; i < nb; i++) {
				if (be->batch_alloc(be, &b[i], k * n * 2,
						    k * shape_out_bytes(s),
						    k) < 0)
					die("batch_alloc: %s", be->err);
				bench_fill(&b[i], s, REC_S16, k);
			}
			t0 = now();
			for (; left > 0; sub++) {
				mel_batch *x = &b[sub % nb], *done;
				size_t m = left < k ? left : k;

				if (inflight == be->depth) {
					if (be->wait(be, &done) < 0)
						die("wait: %s", be->err);
					inflight--;
				}
				x->n = m;
				if (be->submit(be, x) < 0)
					die("submit: %s", be->err);
				inflight++;
				left -= m;
			}
			for (mel_batch *done; inflight > 0; inflight--)
				if (be->wait(be, &done) < 0)
					die("wait: %s", be->err);
			t = now() - t0;
			printf("  %-6s %-7s %10.3f %12.2f %12.1f\n", path,
			       graphs ? "on" : "off", t, in_bytes / t / 1e9,
			       in_bytes / 2 / t / 1e9);
			if (s->ten_second)
				printf("RESULT pipe path=%s graphs=%d "
				       "seconds=%.4f gbytes_per_s=%.3f\n",
				       path, graphs, t, in_bytes / t / 1e9);
			else
				printf("RESULT pipe path=%s graphs=%d "
				       "records=%zu record_samples=%u "
				       "seconds=%.4f gbytes_per_s=%.3f\n",
				       path, graphs, total, n, t,
				       in_bytes / t / 1e9);
			for (int i = 0; i < nb; i++)
				be->batch_free(be, &b[i]);
			be->destroy(be);
			mel_fb_free(fb);
		}
}
