/*
 * emu_backend.cu - gpumel-cuda-bench --emu's backend: a mel_backend whose
 * submit runs the kernels' arithmetic on the CPU (cuda_emu.h) over the
 * batch, with the arguments and tables the CUDA backend would give the
 * kernels, so that the parity runs check the kernels where there is no
 * GPU. The cuFFT path runs in one chunk, its R2C in float64.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_emu.h"

struct emu {
	mel_params p;
	const mel_fb *fb;
	int fused;
	float *win32, *win16, *tw;
	mel_tiles tiles;
	mel_batch *q[8];
	int head, count;
};

/* The kernels' arguments, as cuda_submit.cu's kernel_args() sets them. */
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
	if (mel_clamps(p))
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

mel_backend *emu_open(const mel_params *p, const mel_fb *fb, int fused)
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
