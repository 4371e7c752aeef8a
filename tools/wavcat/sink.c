/*
 * sink.c - where a clip's samples go: its buffer, in the output type
 * (16-bit samples rounded and clipping counted, or float), up to the
 * most a clip may hold, then padded or cut to the length wanted.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rec.h"
#include "decode_priv.h"

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
	cap = o->cap ? o->cap : 65536;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
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

/* How many of n offered samples are kept, with room made for them. */
static size_t sink_take(struct sink *s, size_t n)
{
	uint64_t have = s->out->n;
	size_t k = 0;

	s->produced += n;
	if (have < s->limit)
		k = s->limit - have < n ? (size_t)(s->limit - have) : n;
	if (k > 0 && sink_reserve(s, have + k))
		return 0;
	return k;
}

void sink_float(struct sink *s, const float *x, size_t n)
{
	struct decoded *o = s->out;
	size_t k = sink_take(s, n);

	if (k == 0)
		return;
	if (s->dtype == REC_S16)
		put_s16f((int16_t *)o->data + o->n, x, k, &o->clipped);
	else
		memcpy((float *)o->data + o->n, x, k * sizeof(float));
	o->n += k;
}

void sink_double(struct sink *s, const double *x, size_t n)
{
	struct decoded *o = s->out;
	size_t k = sink_take(s, n);
	float *f;
	size_t i;

	if (k == 0)
		return;
	if (s->dtype == REC_S16) {
		put_s16d((int16_t *)o->data + o->n, x, k, &o->clipped);
	} else {
		f = (float *)o->data + o->n;
		for (i = 0; i < k; i++)
			f[i] = (float)x[i];
	}
	o->n += k;
}

void sink_short(struct sink *s, const short *x, size_t n)
{
	struct decoded *o = s->out;
	size_t k = sink_take(s, n);

	if (k == 0)
		return;
	memcpy((int16_t *)o->data + o->n, x, k * sizeof(short));
	o->n += k;
}

/* Makes the clip exactly n samples long: cuts or pads with zeros. */
void sink_set_len(struct sink *s, uint64_t n)
{
	struct decoded *o = s->out;

	if (n <= o->n) {
		o->n = n;
		return;
	}
	if (sink_reserve(s, n))
		return;
	memset((char *)o->data + o->n * s->esize, 0,
	       (size_t)(n - o->n) * s->esize);
	o->n = n;
}
