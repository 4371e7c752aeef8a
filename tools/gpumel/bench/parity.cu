/*
 * parity.cu - --emu and --parity: rounds of batches of random records
 * through a backend (the emulation, or the one a .so opens), over every
 * option set of the grid and both FFT paths, every batch compared with
 * the float64 reference; one line a run says how close it came.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

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
		rec->flags = 0;
		rec->reserved = 0;
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
		       const mel_params *p, const mel_fb *fb, int quick,
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

int run_grid(struct so *so, int quick)
{
	int fails = 0;

	for (size_t i = 0; i < n_grid; i++) {
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
				parity_run(be, g, &p, fb, quick, &st);
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
