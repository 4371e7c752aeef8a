/*
 * h5rows.c - the rows of the split groups: buffered a features chunk at
 * a time, appended to the extendible datasets, and when compressed, the
 * full chunks of features handed to the compression threads and written
 * as they come back.
 */
#include <errno.h>
#include <hdf5.h>
#include <inttypes.h>
#include <string.h>

#include "../common/prog.h"
#include "chunkpool.h"
#include "h5out_priv.h"

#define MAX_CHUNK_ROWS (1u << 20) /* rows of a features chunk at most */
#define POOL_DEPTH 16u          /* compressed chunks in flight at most */
#define POOL_BYTES (64u << 20)  /* and their buffers' bytes at most */

/*
 * The compression threads. The chunks in flight (depth) depend on the
 * chunk size only, never on the number of threads: a chunk is written
 * when the chunk depth places after it is handed in, so the sequence of
 * writes, and so the file, is the same for any --jobs.
 */
static int start_pool(h5out *h)
{
	size_t chunk = (size_t)h->chunk_rows * h->row_bytes;
	size_t depth = POOL_BYTES / (2 * chunk);
	size_t jobs = h->o.jobs ? h->o.jobs : 1;

	depth = depth < 2 ? 2 : depth > POOL_DEPTH ? POOL_DEPTH : depth;
	jobs = jobs > depth ? depth : jobs;
	h->pool = chunkpool_start(h->o.compress, h->o.level,
				  rec_dtype_size(h->o.dtype), chunk, jobs,
				  depth);
	if (!h->pool) {
		prog_err("unable to start %zu compression threads for '%s': "
			 "%s", jobs, h->name, strerror(errno));
		return -1;
	}
	h->jobs = chunkpool_threads(h->pool);
	return 0;
}

/* A ragged row of features is a frame: n_mels values, or a sample of
 * every channel (the width, what every record must share). */
static void set_ragged_shape(h5out *h)
{
	int audio = h->o.kind == REC_T_AUDIO;

	h->fdim[0] = audio ? h->dim1 : h->dim0;
	h->rank = audio && h->fdim[0] <= 1 ? 1 : 2;
	h->row_bytes = (size_t)h->fdim[0] * rec_dtype_size(h->o.dtype);
}

/* The first row fixes the shape; now the row datasets can be made. */
int set_shape(h5out *h, const rec_item *it)
{
	size_t esize = rec_dtype_size(h->o.dtype);

	h->shape_known = 1;
	h->dim0 = it ? it->dim0 : 0;
	h->dim1 = it ? it->dim1 : 0;
	h->rank = h->o.kind == REC_T_AUDIO && (!it || it->dim1 == 1) ? 2 : 3;
	h->fdim[0] = h->dim0;
	h->fdim[1] = h->dim1;
	h->row_bytes = (size_t)h->dim0 * h->dim1 * esize;
	if (h->o.ragged)
		set_ragged_shape(h);
	h->chunk_rows = 1;
	if (h->row_bytes && h->row_bytes < h->o.chunk_bytes)
		h->chunk_rows = h->o.chunk_bytes / h->row_bytes;
	/* tiny rows: the per-row columns would outweigh the features */
	if (h->chunk_rows > MAX_CHUNK_ROWS)
		h->chunk_rows = MAX_CHUNK_ROWS;
	if (it) {
		h->first_key = strndup(it->key, it->key_len);
		if (!h->first_key)
			return h5_oom(h);
	}
	if (h->o.compress != H5OUT_NONE && h->row_bytes &&
	    start_pool(h) < 0)
		return -1;
	for (int s = 0; s < 4; s++)
		if (h->has_group[s] && alloc_buffers(h, &h->groups[s]))
			return -1;
	return 0;
}

int append_rows(h5out *h, hid_t d, hid_t mtype, int rank, hsize_t at,
		hsize_t n, const void *buf)
{
	/* rank 1: the library reads only the first of each */
	hsize_t dims[3] = { at + n, h->fdim[0], h->fdim[1] };
	hsize_t start[3] = { at, 0, 0 };
	hsize_t count[3] = { n, h->fdim[0], h->fdim[1] };
	hid_t fspace = NO_ID, mspace = NO_ID;
	int ret = -1;

	if (!write_bg_owner(h))
		return -1;
	if (H5Dset_extent(d, dims) < 0)
		goto out;
	fspace = H5Dget_space(d);
	mspace = H5Screate_simple(rank, count, NULL);
	if (fspace < 0 || mspace < 0 ||
	    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count,
				NULL) < 0 ||
	    H5Dwrite(d, mtype, mspace, fspace, h->dxpl, buf) < 0)
		goto out;
	ret = 0;
out:
	if (fspace >= 0)
		H5Sclose(fspace);
	if (mspace >= 0)
		H5Sclose(mspace);
	return ret;
}

/* Writes the oldest chunk the threads compressed. */
static int write_oldest(h5out *h)
{
	const struct chunk_job *j = chunkpool_oldest(h->pool);
	hsize_t offset[3] = { 0, 0, 0 };

	if (!j)
		return 0;
	if (j->err) {
		prog_err("unable to compress a chunk of '%s': %s", h->name,
			 j->err);
		return -1;
	}
	offset[0] = j->at;
	if (H5Dwrite_chunk(h->groups[j->tag].d_features, h->dxpl, 0, offset,
			   j->out_len, j->out) < 0)
		return h5_fail(h, "write rows");
	chunkpool_release(h->pool);
	h->n_direct++;
	return 0;
}

/* Writes every chunk still with the threads. */
int drain_chunks(h5out *h)
{
	double t0 = prog_now();
	int err = 0;

	while (!err && h->pool && chunkpool_pending(h->pool))
		err = write_oldest(h);
	h->t_write += prog_now() - t0;
	return err;
}

/* Hands a group's full chunk of features to the threads (the dataset
 * grown to hold it), after writing the oldest one when all are busy. */
static int submit_chunk(h5out *h, struct group *g)
{
	/* lower ranks: the library reads only the first of them */
	hsize_t dims[3] = { g->rows + g->n, h->fdim[0], h->fdim[1] };

	if (H5Dset_extent(g->d_features, dims) < 0)
		return h5_fail(h, "write rows");
	while (chunkpool_full(h->pool))
		if (write_oldest(h))
			return -1;
	chunkpool_submit(h->pool, &g->features, g->n * h->row_bytes,
			 (int)(g - h->groups), g->rows);
	return 0;
}

int append_columns(h5out *h, struct group *g, hsize_t at, hsize_t n,
		   const int32_t *label, const int32_t *clip,
		   const int32_t *segment, const int64_t *offset)
{
	return append_rows(h, g->d_label, H5T_NATIVE_INT32, 1, at, n,
			   label) ||
	       append_rows(h, g->d_clip, H5T_NATIVE_INT32, 1, at, n, clip) ||
	       append_rows(h, g->d_segment, H5T_NATIVE_INT32, 1, at, n,
			   segment) ||
	       append_rows(h, g->d_offset, H5T_NATIVE_INT64, 1, at, n,
			   offset) ? -1 : 0;
}

int write_columns(h5out *h, struct group *g, hsize_t at, hsize_t n)
{
	return append_columns(h, g, at, n, g->label, g->clip, g->segment,
			      g->offset);
}

int append_features(h5out *h, struct group *g, hsize_t at, size_t n,
		    const void *p)
{
	int err;

	/* a full chunk's statistics counted while it is written */
	if (n == g->cap)
		stats_rows_begin(h, g, p, n);
	else
		stats_rows(h, g, p, n);
	err = append_rows(h, g->d_features, h->ftype, h->rank, at, n, p);
	stats_rows_end(h);
	return err;
}

uint64_t group_rows(const h5out *h, const struct group *g)
{
	return h->o.ragged ? g->items + g->ni : g->rows + g->n;
}

int write_features(h5out *h, struct group *g, int final)
{
	if (h->pool && !final && g->n == g->cap) {
		stats_rows(h, g, g->features, g->n);
		return submit_chunk(h, g); /* it names what failed itself */
	}
	if (append_features(h, g, g->rows, g->n, g->features))
		return h5_fail(h, "write rows");
	return 0;
}

/* Writes the buffered rows; final: they are the group's last. */
int flush_group(h5out *h, struct group *g, int final)
{
	double t0;
	hsize_t total = final ? g->rows + g->n + !g->n : 0;
	int err;

	/* a full chunk to the writing thread (it waits for a free place in
	 * the queue only); else the library is this thread's */
	err = final ? 1 : write_bg_start(h, g);
	if (err <= 0)
		return err;
	if (write_bg_wait(h))
		return -1;
	t0 = prog_now();
	if (g->d_features < 0 && make_row_datasets(h, g, total, total))
		return -1;
	if (!g->n)
		return 0;
	if (write_features(h, g, final)) {
		h->t_write += prog_now() - t0;
		return -1;
	}
	err = write_columns(h, g, g->rows, g->n);
	h->t_write += prog_now() - t0;
	if (err)
		return h5_fail(h, "write rows");
	g->rows += g->n;
	g->n = 0;
	return 0;
}

/* Ragged records share their width: n_mels, or the channels. */
static int check_width(h5out *h, const rec_item *it)
{
	int audio = h->o.kind == REC_T_AUDIO;
	uint32_t w = audio ? it->dim1 : it->dim0;
	uint32_t len = audio ? it->dim0 : it->dim1;

	if (w != h->fdim[0]) {
		prog_err("'%.*s': %" PRIu32 " %s, but the first record ('%s') "
			 "has %" PRIu32, (int)it->key_len, it->key, w,
			 audio ? "channels" : "mels", h->first_key,
			 h->fdim[0]);
		return -1;
	}
	if (len > INT32_MAX) {
		prog_err("'%.*s': %" PRIu32 " frames, too many for a row",
			 (int)it->key_len, it->key, len);
		return -1;
	}
	return 0;
}

int shape_error(const h5out *h, const rec_item *it, uint64_t dim0,
		uint64_t dim1, const char *what)
{
	prog_err("'%.*s': shape %" PRIu64 "x%" PRIu64 "%s differs from "
		 "%" PRIu32 "x%" PRIu32 " of the first record ('%s'); a "
		 "dataset needs one shape (segment with --last pad gives "
		 "one)", (int)it->key_len, it->key, dim0, dim1, what,
		 h->dim0, h->dim1, h->first_key);
	return -1;
}

/* A piece of an item in the fixed layout: the same n_mels (features) or
 * channels (audio) as the rows; its length counts once joined. */
static int check_piece_width(const h5out *h, const rec_item *it)
{
	if (h->o.kind == REC_T_AUDIO ? it->dim1 == h->dim1
				     : it->dim0 == h->dim0)
		return 0;
	return shape_error(h, it, it->dim0, it->dim1, " (a piece of an item)");
}

int check_row(h5out *h, const rec_item *it, int piece)
{
	if (it->dtype != h->o.dtype) {
		prog_err("'%.*s': element type %s, but the stream header "
			 "says %s", (int)it->key_len, it->key,
			 rec_dtype_name(it->dtype) ? rec_dtype_name(it->dtype)
						   : "unknown",
			 rec_dtype_name(h->o.dtype));
		return -1;
	}
	if (it->type != h->o.kind) {
		prog_err("'%.*s': %s record in a stream of %s",
			 (int)it->key_len, it->key,
			 it->type == REC_T_AUDIO ? "an audio" : "a features",
			 h->o.kind == REC_T_AUDIO ? "audio" : "features");
		return -1;
	}
	if (!h->shape_known) {
		/* a fixed row's length is its whole item's */
		if ((!piece || h->o.ragged) && set_shape(h, it))
			return -1;
	} else if (h->o.ragged) {
		if (check_width(h, it))
			return -1;
	} else if (piece) {
		if (check_piece_width(h, it))
			return -1;
	} else if (it->dim0 != h->dim0 || it->dim1 != h->dim1) {
		return shape_error(h, it, it->dim0, it->dim1, "");
	}
	if (it->segment > INT32_MAX || it->offset > INT64_MAX) {
		prog_err("'%.*s': segment %" PRIu32 " or offset %" PRIu64
			 " out of range", (int)it->key_len, it->key,
			 it->segment, it->offset);
		return -1;
	}
	return 0;
}

int add_row(h5out *h, const rec_item *it)
{
	struct group *g;

	if (check_row(h, it, 0) || note_clip(h, it))
		return -1;
	if (!h->has_group[it->split] && make_group(h, it->split))
		return -1;
	g = &h->groups[it->split];
	if (h->o.ragged)
		return add_ragged_row(h, g, it);
	memcpy(g->features + g->n * h->row_bytes, it->data, h->row_bytes);
	g->label[g->n] = it->label;
	g->clip[g->n] = (int32_t)it->clip;
	g->segment[g->n] = (int32_t)it->segment;
	g->offset[g->n] = (int64_t)it->offset;
	if (++g->n == g->cap)
		return flush_group(h, g, 0);
	return 0;
}

/* The windows of a features-windows record: in the ragged layout each
 * as the features record it stands for; in the fixed layout, whose rows
 * its matrices are, one after the other, copied by the chunk's worth
 * with their columns, the record checked once (its last window's segment
 * and offset too: the others lie between). */
int add_fwindows(h5out *h, const rec_item *it)
{
	rec_item w;
	struct group *g;
	const unsigned char *p = it->data;
	uint64_t last_off;
	uint32_t i = 0;

	if (rec_window(it, 0, &w, NULL) != REC_OK) {
		prog_err("'%.*s': a features-windows record without windows",
			 (int)it->key_len, it->key);
		return -1;
	}
	if (h->o.ragged) {
		for (; i < it->n_windows; i++)
			if (rec_window(it, i, &w, NULL) != REC_OK ||
			    add_row(h, &w))
				return -1;
		return 0;
	}
	if (check_row(h, &w, 0) || note_clip(h, &w))
		return -1;
	if (__builtin_mul_overflow((uint64_t)(it->n_windows - 1),
				   (uint64_t)it->win_hop, &last_off) ||
	    __builtin_add_overflow(last_off, it->offset, &last_off) ||
	    last_off > INT64_MAX ||
	    rec_item_last_segment(it) > INT32_MAX) {
		prog_err("'%.*s': segment %" PRIu32 " or offset of its last "
			 "window out of range", (int)it->key_len, it->key,
			 rec_item_last_segment(it));
		return -1;
	}
	if (!h->has_group[it->split] && make_group(h, it->split))
		return -1;
	g = &h->groups[it->split];
	while (i < it->n_windows) {
		size_t k = g->cap - g->n;

		if (k > it->n_windows - i)
			k = it->n_windows - i;
		memcpy(g->features + g->n * h->row_bytes, p, k * h->row_bytes);
		p += k * h->row_bytes;
		for (size_t j = 0; j < k; j++, i++) {
			g->label[g->n + j] = it->label;
			g->clip[g->n + j] = (int32_t)it->clip;
			g->segment[g->n + j] = (int32_t)(it->segment + i);
			g->offset[g->n + j] = (int64_t)(it->offset +
					      (uint64_t)i * it->win_hop);
		}
		g->n += k;
		if (g->n == g->cap && flush_group(h, g, 0))
			return -1;
	}
	return 0;
}
