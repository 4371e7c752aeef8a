/*
 * rec_item.c - the rules of a data record: element sizes, what its type,
 * dims and payload length must agree on, windows that must fit their
 * samples, the clip and segment order of a stream (pieces of an item:
 * rec_piece.c); and windows records expanded into the audio records they
 * describe.
 *
 * The reader and the writer apply the same rules (through rec_int.h), so
 * a bad record is refused where it is made rather than where it is read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"
#include "rec_int.h"

size_t rec_dtype_size(int dtype)
{
	switch (dtype) {
	case REC_S16: return 2;
	case REC_F32: return 4;
	case REC_F16: return 2;
	case REC_BF16: return 2;
	}
	return 0;
}

/* The payload size that dims and dtype imply (times n_windows for a
 * features-windows record), or UINT64_MAX on overflow. */
static uint64_t item_raw_size(const rec_item *it)
{
	uint64_t n;

	if (__builtin_mul_overflow((uint64_t)it->dim0, (uint64_t)it->dim1,
				   &n) ||
	    __builtin_mul_overflow(n, (uint64_t)rec_dtype_size(it->dtype), &n))
		return UINT64_MAX;
	if (it->type == REC_T_FWINDOWS &&
	    __builtin_mul_overflow(n, (uint64_t)it->n_windows, &n))
		return UINT64_MAX;
	return n;
}

uint32_t rec_item_last_segment(const rec_item *it)
{
	return item_last_segment(it);
}

/* Why a windows record's description does not fit its samples, or NULL.
 * Every window starts inside the payload; without REC_WIN_PAD every
 * window ends inside it too; segment indices do not wrap. A
 * features-windows record's fields follow the same rules but the fit. */
static const char *windows_check(const rec_item *it, char *buf, size_t size)
{
	uint64_t last_start, n = it->dim0;

	if (it->win_len == 0 || it->win_hop == 0 || it->n_windows == 0) {
		snprintf(buf, size, "%s record with window length %"
			 PRIu32 ", hop %" PRIu32 " and %" PRIu32 " windows "
			 "(none may be 0)", rec_type_name(it->type),
			 it->win_len, it->win_hop, it->n_windows);
		return buf;
	}
	if (it->win_flags & ~REC_WIN_PAD) {
		snprintf(buf, size, "unknown windows flags 0x%" PRIx32,
			 it->win_flags);
		return buf;
	}
	if (it->n_windows - 1 > UINT32_MAX - it->segment) {
		snprintf(buf, size, "%" PRIu32 " windows from segment %"
			 PRIu32 " run past segment index 2^32 - 1",
			 it->n_windows, it->segment);
		return buf;
	}
	if (it->type == REC_T_FWINDOWS) /* features: no samples to fit */
		return NULL;
	last_start = (uint64_t)(it->n_windows - 1) * it->win_hop;
	if (last_start >= n || (!(it->win_flags & REC_WIN_PAD) &&
				last_start + it->win_len > n)) {
		snprintf(buf, size, "%" PRIu32 " windows of %" PRIu32
			 " every %" PRIu32 " do not fit %" PRIu64
			 " samples%s", it->n_windows, it->win_len,
			 it->win_hop, n, it->win_flags & REC_WIN_PAD ? ""
			 : " (and the pad flag is clear)");
		return buf;
	}
	return NULL;
}

/* Window i of a features-windows record: its features record, whose
 * payload is the i-th matrix. */
static int features_window(const rec_item *w, uint32_t i, rec_item *out)
{
	size_t bytes = (size_t)w->dim0 * w->dim1 * rec_dtype_size(w->dtype);

	*out = *w;
	out->type = REC_T_FEATURES;
	out->offset = w->offset + (uint64_t)i * w->win_hop;
	out->segment = w->segment + i;
	out->data_len = bytes;
	out->data = (const char *)w->data + (size_t)i * bytes;
	out->win_len = out->win_hop = out->n_windows = out->win_flags = 0;
	return REC_OK;
}

int rec_window(const rec_item *w, uint32_t i, rec_item *out, void *pad)
{
	size_t frame, have;
	uint64_t start;

	if (w == NULL || out == NULL || i >= w->n_windows ||
	    (w->type != REC_T_WINDOWS && w->type != REC_T_FWINDOWS))
		return REC_E_INVAL;
	if (w->type == REC_T_FWINDOWS)
		return features_window(w, i, out);
	frame = rec_dtype_size(w->dtype) * w->dim1;
	start = (uint64_t)i * w->win_hop;
	if (start >= w->dim0 || (start + w->win_len > w->dim0 && pad == NULL))
		return REC_E_INVAL;
	*out = *w;
	out->type = REC_T_AUDIO;
	out->offset = w->offset + start;
	out->segment = w->segment + i;
	out->dim0 = w->win_len;
	out->data_len = (size_t)w->win_len * frame;
	out->win_len = out->win_hop = out->n_windows = out->win_flags = 0;
	out->data = (const char *)w->data + start * frame;
	if (start + w->win_len <= w->dim0)
		return REC_OK;
	have = (size_t)(w->dim0 - start) * frame;
	memcpy(pad, out->data, have);
	memset((char *)pad + have, 0, out->data_len - have);
	out->data = pad;
	return REC_OK;
}

int rec_each_window(const rec_item *w, void **pad, size_t *pad_cap,
		    int (*fn)(const rec_item *window, void *arg), void *arg)
{
	size_t need;
	rec_item win;
	int err;

	if (w == NULL || pad == NULL || pad_cap == NULL || fn == NULL ||
	    (w->type != REC_T_WINDOWS && w->type != REC_T_FWINDOWS))
		return REC_E_INVAL;
	need = w->type == REC_T_FWINDOWS ? 0 /* no padding to build */
	       : (size_t)w->win_len * rec_dtype_size(w->dtype) * w->dim1;
	if (need > *pad_cap) {
		void *np = realloc(*pad, need);

		if (np == NULL)
			return REC_E_NOMEM;
		*pad = np;
		*pad_cap = need;
	}
	for (uint32_t i = 0; i < w->n_windows; i++) {
		if ((err = rec_window(w, i, &win, *pad)) != REC_OK)
			return err;
		if ((err = fn(&win, arg)) != 0)
			return err;
	}
	return REC_OK;
}

/* A source record sets clip, label, split and key only: its other
 * fields are 0 (the samples are the clip's records', not the file's). */
static const char *source_fields(const rec_item *it, char *buf, size_t size)
{
	const struct { const char *name; uint64_t v; } f[] = {
		{ "offset", it->offset },
		{ "clip_samples", it->clip_samples },
		{ "segment", it->segment },
		{ "sample_rate", it->sample_rate },
		{ "dtype", (uint64_t)it->dtype },
		{ "dim0", it->dim0 },
		{ "dim1", it->dim1 },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (f[i].v == 0)
			continue;
		snprintf(buf, size, "source record with %s %" PRIu64 " (only "
			 "clip, label, split and key are set: the others are "
			 "0)", f[i].name, f[i].v);
		return buf;
	}
	return NULL;
}

const char *rec_item_check(const rec_item *it, uint64_t data_len,
			   char *buf, size_t size)
{
	if (it->split < 0 || it->split > REC_SPLIT_TESTING) {
		snprintf(buf, size, "invalid split %d", it->split);
		return buf;
	}
	if (it->key && memchr(it->key, '\0', it->key_len))
		return "key contains a NUL byte";
	if (it->type == REC_T_SOURCE)
		return source_fields(it, buf, size);
	if (it->type == REC_T_SKIPPED) {
		if (it->dtype != 0 || it->dim0 != 0 || it->dim1 != 0) {
			snprintf(buf, size, "skipped record with dtype %d "
				 "and dims %" PRIu32 "x%" PRIu32
				 " (must be 0)", it->dtype, it->dim0,
				 it->dim1);
			return buf;
		}
		return NULL;
	}
	if (rec_dtype_size(it->dtype) == 0) {
		snprintf(buf, size, "invalid dtype %d", it->dtype);
		return buf;
	}
	if (item_raw_size(it) != data_len) {
		if (it->type == REC_T_FWINDOWS)
			snprintf(buf, size, "payload of %" PRIu64 " bytes "
				 "does not match %" PRIu32 " windows of %"
				 PRIu32 "x%" PRIu32 " %s", data_len,
				 it->n_windows, it->dim0, it->dim1,
				 rec_dtype_name(it->dtype));
		else
			snprintf(buf, size, "payload of %" PRIu64 " bytes "
				 "does not match %" PRIu32 "x%" PRIu32 " %s",
				 data_len, it->dim0, it->dim1,
				 rec_dtype_name(it->dtype));
		return buf;
	}
	if (item_has_windows(it->type))
		return windows_check(it, buf, size);
	return NULL;
}

const char *rec_order_refusal(uint64_t pclip, uint32_t pseg,
			      const rec_item *it, char *buf, size_t size)
{
	snprintf(buf, size, "clip %" PRIu64 " segment %" PRIu32
		 " after clip %" PRIu64 " segment %" PRIu32
		 " (records must be in clip and segment order)",
		 it->clip, it->segment, pclip, pseg);
	return buf;
}
