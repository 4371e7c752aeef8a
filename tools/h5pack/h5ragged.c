/*
 * h5ragged.c - the rows of the ragged layout (formats/hdf5.md): records
 * of any length, their frames one after another in the group's features
 * [frames, width], each record a row of the per-row columns with the
 * start and count of its frames.
 *
 * The frames fill the group's buffer of one features chunk, a record
 * spilling over into the next chunks (an item in pieces, h5pieces.c, a
 * piece at a time, its row of the per-row columns added at its end); a full chunk goes to the file (or
 * the compression threads) as in the fixed layout, so the same chunks
 * are written in the same order for any --jobs. The per-row columns fill
 * chunks of their own and are written when one is full.
 */
#include <hdf5.h>
#include <string.h>

#include "../common/prog.h"
#include "h5out_priv.h"

/*
 * Frames [from, from + n) of a features record, [width][len] in the
 * stream, into dst as [n][width]: the transpose that makes a record's
 * frames one contiguous slice of the dataset. Elements of 2 or 4 bytes.
 * A frame's values are a column of the record, len elements apart; the
 * width rows they come from stay in the cache from one frame to the
 * next.
 */
void transpose(unsigned char *dst, const unsigned char *src, size_t esize,
	       size_t width, size_t len, size_t from, size_t n)
{
	if (esize == 2) {
		for (size_t f = 0; f < n; f++)
			for (size_t m = 0; m < width; m++)
				memcpy(dst + (f * width + m) * 2,
				       src + (m * len + from + f) * 2, 2);
	} else {
		for (size_t f = 0; f < n; f++)
			for (size_t m = 0; m < width; m++)
				memcpy(dst + (f * width + m) * 4,
				       src + (m * len + from + f) * 4, 4);
	}
}

static int make_datasets(h5out *h, struct group *g, int final)
{
	hsize_t frames = g->rows + g->n, items = g->items + g->ni;

	if (!final)
		return make_row_datasets(h, g, 0, 0);
	/* at least 1: a chunk of an empty dataset */
	return make_row_datasets(h, g, frames + !frames, items + !items);
}

static int write_items(h5out *h, struct group *g)
{
	if (write_columns(h, g, g->items, g->ni) ||
	    append_rows(h, g->d_start, H5T_NATIVE_INT64, 1, g->items, g->ni,
			g->start) ||
	    append_rows(h, g->d_n_frames, H5T_NATIVE_INT32, 1, g->items,
			g->ni, g->n_frames))
		return h5_fail(h, "write rows");
	return 0;
}

/* Writes the buffered frames, or the buffered rows of the per-row
 * columns; final: they are the group's last. */
static int flush_part(h5out *h, struct group *g, int final, int frames)
{
	double t0 = prog_now();
	size_t *n = frames ? &g->n : &g->ni;
	uint64_t *written = frames ? &g->rows : &g->items;
	int err;

	if (g->d_features < 0 && make_datasets(h, g, final))
		return -1;
	if (!*n)
		return 0;
	err = frames ? write_features(h, g, final) : write_items(h, g);
	h->t_write += prog_now() - t0;
	if (err)
		return -1;
	*written += *n;
	*n = 0;
	return 0;
}

int flush_ragged(h5out *h, struct group *g, int final)
{
	return flush_part(h, g, final, 1) || flush_part(h, g, final, 0) ? -1
									: 0;
}

/* The record's frames into the buffer, a full chunk written at once. */
int add_frames(h5out *h, struct group *g, const rec_item *it, size_t len)
{
	size_t esize = rec_dtype_size(h->o.dtype);
	size_t width = h->fdim[0];
	const unsigned char *src = it->data;

	for (size_t done = 0, n; done < len; done += n) {
		unsigned char *dst = g->features + g->n * h->row_bytes;

		n = len - done < g->cap - g->n ? len - done : g->cap - g->n;
		if (h->o.kind == REC_T_AUDIO || width == 1)
			memcpy(dst, src + done * h->row_bytes,
			       n * h->row_bytes);
		else
			transpose(dst, src, esize, width, len, done, n);
		g->n += n;
		if (g->n == g->cap && flush_part(h, g, 0, 1))
			return -1;
	}
	return 0;
}

int add_ragged_row(h5out *h, struct group *g, const rec_item *it)
{
	size_t len = h->o.kind == REC_T_AUDIO ? it->dim0 : it->dim1;
	size_t i = g->ni;

	g->label[i] = it->label;
	g->clip[i] = (int32_t)it->clip;
	g->segment[i] = (int32_t)it->segment;
	g->offset[i] = (int64_t)it->offset;
	g->start[i] = (int64_t)(g->rows + g->n);
	g->n_frames[i] = (int32_t)len;
	if (++g->ni == g->icap && flush_part(h, g, 0, 0))
		return -1;
	return add_frames(h, g, it, len);
}

int add_ragged_item(h5out *h, struct group *g, const struct join *j)
{
	size_t i = g->ni;

	g->label[i] = j->label;
	g->clip[i] = (int32_t)j->clip;
	g->segment[i] = (int32_t)j->segment;
	g->offset[i] = (int64_t)j->offset;
	g->start[i] = (int64_t)j->start;
	g->n_frames[i] = (int32_t)j->frames;
	if (++g->ni == g->icap && flush_part(h, g, 0, 0))
		return -1;
	return 0;
}
