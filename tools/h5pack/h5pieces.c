/*
 * h5pieces.c - an item in pieces (formats/record.md, Items in pieces)
 * joined into one row as its pieces come: the samples (audio) or frames
 * (features) of its pieces, in order, are the row's.
 *
 * Nothing waits for the item's end but what its layout needs. Ragged,
 * each piece's frames go on the group's features like a record's, a
 * chunk written whenever one is full, and the per-row columns (start,
 * n_frames ...) get the row at the end. Fixed, the row's slot in the
 * group's buffer takes each piece's columns (features) or samples
 * (audio) in place, and a piece that would make the row longer than the
 * rows before is refused at once; only the stream's first row, whose
 * item fixes the row shape, is gathered apart until it ends, frame by
 * frame, and then laid out as a row. So memory is bounded by one row in
 * the fixed layout (as it was: a chunk holds at least one) and does not
 * depend on the item's length in the ragged one.
 *
 * A features item in pieces comes without gpumel's top_db floor, which
 * needs the whole item's max: h5clamp.c applies it at the end.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "h5out_priv.h"

#define STAGE_MIN (64u << 10) /* bytes the first row's gathering starts at */

static int is_audio(const h5out *h)
{
	return h->o.kind == REC_T_AUDIO;
}

/* Samples (audio) or frames (features) of a piece. */
static uint64_t piece_len(const h5out *h, const rec_item *it)
{
	return is_audio(h) ? it->dim0 : it->dim1;
}

static int join_begin(h5out *h, const rec_item *it)
{
	struct join *j = &h->join;
	struct group *g;

	if (check_row(h, it, 1) || note_clip(h, it))
		return -1;
	if (!h->has_group[it->split] && make_group(h, it->split))
		return -1;
	g = &h->groups[it->split];
	j->open = 1;
	j->split = it->split;
	j->label = it->label;
	j->clip = it->clip;
	j->offset = it->offset;
	j->segment = it->segment;
	j->width = is_audio(h) ? it->dim1 : it->dim0;
	j->frames = 0;
	j->start = g->rows + g->n;
	j->max = -INFINITY;
	j->min = INFINITY;
	return 0;
}

/* The first row's frames, [frame][width], until its item ends. */
static int stage_piece(h5out *h, struct join *j, const rec_item *it,
		       size_t len)
{
	size_t esize = rec_dtype_size(h->o.dtype);
	size_t bytes = len * j->width * esize;

	if (bytes > j->stage_cap - j->stage_len) {
		size_t cap = j->stage_cap ? j->stage_cap : STAGE_MIN;
		unsigned char *p;

		while (cap && cap - j->stage_len < bytes)
			cap *= 2;
		if (!cap || !(p = realloc(j->stage, cap)))
			return h5_oom(h);
		j->stage = p;
		j->stage_cap = cap;
	}
	if (is_audio(h) || j->width == 1)
		memcpy(j->stage + j->stage_len, it->data, bytes);
	else
		transpose(j->stage + j->stage_len, it->data, esize, j->width,
			  len, 0, len);
	j->stage_len += bytes;
	return 0;
}

/* A piece into its row's slot of the group's buffer: audio samples
 * after those before, features columns beside them. */
static int place_piece(h5out *h, struct group *g, const rec_item *it,
		       size_t len)
{
	struct join *j = &h->join;
	size_t esize = rec_dtype_size(h->o.dtype);
	uint64_t row_len = is_audio(h) ? h->dim0 : h->dim1;
	unsigned char *row = g->features + g->n * h->row_bytes;
	const unsigned char *src = it->data;

	if (j->frames + len > row_len) {
		uint64_t n = j->frames + len;

		return shape_error(h, it, is_audio(h) ? n : j->width,
				   is_audio(h) ? j->width : n,
				   " (its pieces so far)");
	}
	if (is_audio(h)) {
		memcpy(row + j->frames * j->width * esize, src,
		       len * j->width * esize);
		return 0;
	}
	for (size_t m = 0; m < j->width; m++)
		memcpy(row + (m * row_len + j->frames) * esize,
		       src + m * len * esize, len * esize);
	return 0;
}

static int join_append(h5out *h, const rec_item *it)
{
	struct join *j = &h->join;
	struct group *g = &h->groups[j->split];
	uint64_t len = piece_len(h, it);
	int err;

	if (j->frames + len > INT32_MAX) {
		prog_err("'%.*s': %" PRIu64 " %s joined, too many for a row",
			 (int)it->key_len, it->key, j->frames + len,
			 is_audio(h) ? "samples" : "frames");
		return -1;
	}
	if (!len) /* an empty last piece */
		return 0;
	if (h->clamp)
		clamp_range(j, h->o.dtype, it->data,
			    (size_t)len * j->width);
	if (h->o.ragged)
		err = add_frames(h, g, it, (size_t)len);
	else if (!h->shape_known)
		err = stage_piece(h, j, it, (size_t)len);
	else
		err = place_piece(h, g, it, (size_t)len);
	if (err)
		return -1;
	j->frames += len;
	return 0;
}

/* The stream's first row: its joined item fixes the shape, and its
 * gathered frames become the group's first row. */
static int first_row(h5out *h, struct group *g, const rec_item *last)
{
	struct join *j = &h->join;
	rec_item joined = *last;
	size_t esize = rec_dtype_size(h->o.dtype);

	joined.dim0 = is_audio(h) ? (uint32_t)j->frames : j->width;
	joined.dim1 = is_audio(h) ? j->width : (uint32_t)j->frames;
	if (set_shape(h, &joined))
		return -1;
	if (is_audio(h) || j->width == 1)
		memcpy(g->features, j->stage, j->stage_len);
	else
		transpose(g->features, j->stage, esize, j->frames, j->width,
			  0, j->width);
	join_free(j);
	return 0;
}

/* The joined item as a row of the fixed layout: its length must be the
 * rows' (the first one's fixes it). */
static int end_fixed(h5out *h, struct group *g, const rec_item *last)
{
	struct join *j = &h->join;
	uint64_t d0 = is_audio(h) ? j->frames : j->width;
	uint64_t d1 = is_audio(h) ? j->width : j->frames;

	if (!h->shape_known) {
		if (first_row(h, g, last))
			return -1;
	} else if (d0 != h->dim0 || d1 != h->dim1) {
		return shape_error(h, last, d0, d1, " (its pieces joined)");
	}
	if (h->clamp)
		clamp_memory(h, j, g->features + g->n * h->row_bytes,
			     (size_t)(d0 * d1));
	g->label[g->n] = j->label;
	g->clip[g->n] = (int32_t)j->clip;
	g->segment[g->n] = (int32_t)j->segment;
	g->offset[g->n] = (int64_t)j->offset;
	if (++g->n == g->cap)
		return flush_group(h, g, 0);
	return 0;
}

/* The item is complete (last: its last piece, or the skipped record
 * that cut it short): its row. */
static int join_end(h5out *h, const rec_item *last)
{
	struct join *j = &h->join;
	struct group *g = &h->groups[j->split];

	j->open = 0;
	if (!h->o.ragged)
		return end_fixed(h, g, last);
	if (h->clamp && clamp_ragged(h, g, j))
		return -1;
	return add_ragged_item(h, g, j);
}

int join_piece(h5out *h, const rec_item *it)
{
	int cont = (it->flags & REC_ITEM_CONT) != 0;

	if (cont != h->join.open) { /* the reader keeps them in order */
		prog_err("'%.*s': a piece of an item out of order",
			 (int)it->key_len, it->key);
		return -1;
	}
	if (cont ? note_clip(h, it) : join_begin(h, it))
		return -1;
	if (join_append(h, it))
		return -1;
	if (it->flags & REC_ITEM_MORE)
		return 0;
	return join_end(h, it);
}

int join_cut(h5out *h, const rec_item *it)
{
	return join_end(h, it);
}

void join_free(struct join *j)
{
	free(j->stage);
	j->stage = NULL;
	j->stage_len = j->stage_cap = 0;
}
