/*
 * sink.c - where a clip's samples go: its buffer, in the output type
 * (16-bit samples rounded and clipping counted, or float), up to the
 * length wanted, then padded. A clip longer than a piece is handed on a
 * piece at a time as the buffer fills, so that the buffer never holds
 * more than one piece, whatever the clip's length; a piece goes only
 * once a sample after it comes, so that a clip of one piece stays one
 * record and the last piece is never empty.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/crc32c.h"
#include "../../lib/rec.h"
#include "../common/prog.h"
#include "decode_priv.h"

/* The bytes a buffer of cap bytes grows to for need bytes (more than
 * cap): doubled from 64 KiB, never more than a piece of esize samples. */
static size_t grown(size_t cap, size_t need, size_t esize, uint64_t piece)
{
	cap = cap ? cap : 65536;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	/* never more than a piece: need is at most one */
	if (cap > need && cap / esize > piece)
		cap = (size_t)piece * esize;
	return cap;
}

size_t decode_buffer_bytes(const struct decode_cfg *cfg, uint64_t samples)
{
	size_t esize = rec_dtype_size(cfg->dtype);

	if (samples > cfg->piece_samples)
		samples = cfg->piece_samples;
	if (samples > SIZE_MAX / esize)
		return SIZE_MAX;
	return grown(0, (size_t)samples * esize, esize, cfg->piece_samples);
}

/* Makes room for n samples in the clip's buffer. */
int sink_reserve(struct sink *s, uint64_t n)
{
	struct decoded *o = s->out;
	size_t need, cap;
	void *nd;

	if (n > SIZE_MAX / s->esize)
		goto nomem;
	need = (size_t)n * s->esize;
	if (need <= o->cap)
		return 0;
	cap = grown(o->cap, need, s->esize, s->piece);
	nd = realloc(o->data, cap);
	if (nd == NULL)
		goto nomem;
	o->data = nd;
	o->cap = cap;
	return 0;
nomem:
	s->nomem = 1;
	return -1;
}

/* Rounds to 16 bits (to nearest, halves to even), clipping and counting
 * what does not fit. Resampled samples come as float, others as double
 * (rounded once from the file's values). */
static void put_s16f(int16_t *dst, const float *x, size_t n,
		     uint64_t *clipped)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float v = x[i] * 32768.0f;

		if (v >= 32767.5f) {
			dst[i] = 32767;
			++*clipped;
		} else if (v < -32768.5f) {
			dst[i] = -32768;
			++*clipped;
		} else {
			dst[i] = (int16_t)lrintf(v);
		}
	}
}

static void put_s16d(int16_t *dst, const double *x, size_t n,
		     uint64_t *clipped)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double v = x[i] * 32768.0;

		if (v >= 32767.5) {
			dst[i] = 32767;
			++*clipped;
		} else if (v < -32768.5) {
			dst[i] = -32768;
			++*clipped;
		} else {
			dst[i] = (int16_t)lrint(v);
		}
	}
}

uint64_t sink_kept(const struct sink *s)
{
	return s->out->offset + s->out->n;
}

/* Hands the full buffer on as a piece and starts the next one. */
static int emit_piece(struct sink *s)
{
	struct decoded *o = s->out;
	double t0 = prog_now();
	int err = 0;

	o->crc = crc32c(0, o->data, (size_t)o->n * s->esize);
	if (s->emit)
		err = s->emit(s->ctx, o);
	s->t_emit += prog_now() - t0;
	if (err) {
		s->stop = 1;
		return -1;
	}
	o->offset += o->n;
	o->n = 0;
	o->clipped = 0;
	return 0;
}

/* How many of n offered samples go in the buffer now, with room made
 * for them: the full buffer handed on first if need be. */
static size_t sink_take(struct sink *s, size_t n)
{
	struct decoded *o = s->out;
	uint64_t kept = sink_kept(s), k;

	if (s->stop || kept >= s->limit || n == 0)
		return 0;
	k = s->limit - kept < n ? s->limit - kept : n;
	if (o->n >= s->piece && emit_piece(s))
		return 0;
	if (k > s->piece - o->n)
		k = s->piece - o->n;
	if (sink_reserve(s, o->n + k)) {
		s->stop = 1;
		return 0;
	}
	return (size_t)k;
}

void sink_float(struct sink *s, const float *x, size_t n)
{
	struct decoded *o = s->out;
	size_t k;

	while ((k = sink_take(s, n)) > 0) {
		if (s->dtype == REC_S16)
			put_s16f((int16_t *)o->data + o->n, x, k,
				 &o->clipped);
		else
			memcpy((float *)o->data + o->n, x, k * sizeof(float));
		o->n += k;
		x += k;
		n -= k;
	}
}

void sink_double(struct sink *s, const double *x, size_t n)
{
	struct decoded *o = s->out;
	size_t i, k;
	float *f;

	while ((k = sink_take(s, n)) > 0) {
		if (s->dtype == REC_S16) {
			put_s16d((int16_t *)o->data + o->n, x, k,
				 &o->clipped);
		} else {
			f = (float *)o->data + o->n;
			for (i = 0; i < k; i++)
				f[i] = (float)x[i];
		}
		o->n += k;
		x += k;
		n -= k;
	}
}

void sink_short(struct sink *s, const short *x, size_t n)
{
	struct decoded *o = s->out;
	size_t k;

	while ((k = sink_take(s, n)) > 0) {
		memcpy((int16_t *)o->data + o->n, x, k * sizeof(short));
		o->n += k;
		x += k;
		n -= k;
	}
}

int16_t *sink_room(struct sink *s, size_t n, size_t *k)
{
	*k = sink_take(s, n);
	return (int16_t *)s->out->data + s->out->n;
}

void sink_wrote(struct sink *s, size_t n)
{
	s->out->n += n;
}

/* Makes the clip n samples long (n at most the limit): pads with zeros,
 * handing pieces on as they fill, or cuts the samples not handed on
 * yet. */
void sink_set_len(struct sink *s, uint64_t n)
{
	struct decoded *o = s->out;
	uint64_t left;
	size_t k;

	if (n <= sink_kept(s)) {
		o->n = n > o->offset ? n - o->offset : 0;
		return;
	}
	for (;;) {
		left = n - sink_kept(s);
		k = sink_take(s, left < SIZE_MAX ? (size_t)left : SIZE_MAX);
		if (k == 0)
			break;
		memset((char *)o->data + o->n * s->esize, 0, k * s->esize);
		o->n += k;
	}
}
