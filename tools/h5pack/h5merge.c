/*
 * h5merge.c - the shard files' rows fed to the writer as the records of
 * the whole stream.
 *
 * Clip i is in shard i mod N, at row i / N of its /clips (formats/hdf5.md,
 * Shard files); its rows are the next rows of that shard's groups whose
 * clip column says i, then its rows of /skipped. Each is handed to
 * h5out_add() as the record the whole stream had: a fixed row as one
 * record; a ragged row as one record, or, when its frames cross a block
 * of the shard's features, as an item in pieces, one a block, so that no
 * row is ever held whole. The writer then lays the dataset out as a
 * whole run does, chunk shapes, compression and all, and checks it as it
 * checks a stream (every clip present, one row shape).
 *
 * The rows are already as stored: no top_db floor is applied again (the
 * caller turns it off) and the statistics are not counted again but
 * added from the shards' (h5out_add_stats()).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "h5merge.h"

static const char *const group_names[4] = {
	"all", "training", "validation", "testing"
};

/* What every record of clip i shares: its row of /clips. */
static int clip_record(struct shard_file *f, uint64_t i, uint64_t row,
		       rec_item *it)
{
	const char *const *path = slab_row(f->name, &f->c_path, row);
	const int32_t *label = slab_row(f->name, &f->c_label, row);
	const int8_t *split = slab_row(f->name, &f->c_split, row);
	const int64_t *n = slab_row(f->name, &f->c_samples, row);
	const int32_t *rate = slab_row(f->name, &f->c_rate, row);

	if (!path || !label || !split || !n || !rate)
		return -1;
	memset(it, 0, sizeof(*it));
	it->clip = i;
	it->key = *path ? *path : "";
	it->key_len = strlen(it->key);
	it->label = *label;
	it->split = *split;
	it->clip_samples = *n > 0 ? (uint64_t)*n : 0;
	it->sample_rate = *rate > 0 ? (uint32_t)*rate : 0;
	return 0;
}

#define READ_FAILED INT64_MIN

/* The clip column of row r of a slab, or READ_FAILED after a message. */
static int64_t clip_of(const struct shard_file *f, struct slab *s,
		       uint64_t r)
{
	const int32_t *c = slab_row(f->name, s, r);

	return c ? *c : READ_FAILED;
}

/* A row of f that holds clip c where the merge is past it: why. */
static void refuse_row(const struct merge *m, const struct shard_file *f,
		       const char *what, uint64_t r, int64_t c)
{
	if (c < 0 || (uint64_t)c >= m->clips)
		prog_err("'%s': row %" PRIu64 " of %s holds clip %" PRId64
			 ", outside the job's %" PRIu64 " %s", f->name, r,
			 what, c, m->clips,
			 prog_plural(m->clips, "clip", "clips"));
	else if ((uint64_t)c % m->n != f->k)
		prog_err("'%s': row %" PRIu64 " of %s holds clip %" PRId64
			 ", a clip of shard %" PRIu64 "/%" PRIu32 ", not of "
			 "this shard %" PRIu32 "/%" PRIu32, f->name, r, what,
			 c, (uint64_t)c % m->n, m->n, f->k, m->n);
	else
		prog_err("'%s': row %" PRIu64 " of %s holds clip %" PRId64
			 " out of clip order", f->name, r, what, c);
}

static int fixed_row(struct shard_file *f, struct sgroup *g, h5out *h,
		     rec_item *it, uint64_t r)
{
	const void *x = slab_row(f->name, &g->features, r);

	if (!x)
		return -1;
	if (g->features.rank == 2) { /* mono audio [N, n_samples] */
		it->dim0 = (uint32_t)g->features.dims[1];
		it->dim1 = 1;
	} else {
		it->dim0 = (uint32_t)g->features.dims[1];
		it->dim1 = (uint32_t)g->features.dims[2];
	}
	it->data = x;
	it->data_len = g->features.row_bytes;
	return h5out_add(h, it);
}

/* n frames [n][width] at x as a record's [width][n] (features). */
static const void *as_record(struct merge *m, const void *x, size_t n,
			     size_t width, size_t esize)
{
	size_t bytes = n * width * esize;

	if (bytes > m->scratch_cap) {
		unsigned char *p = realloc(m->scratch, bytes);

		if (!p)
			return NULL;
		m->scratch = p;
		m->scratch_cap = bytes;
	}
	for (size_t f = 0; f < n; f++)
		for (size_t b = 0; b < width; b++)
			memcpy(m->scratch + (b * n + f) * esize,
			       (const unsigned char *)x +
			       (f * width + b) * esize, esize);
	return m->scratch;
}

/* A ragged row: its frames from the shard's features, a block's worth a
 * record (pieces when it crosses a block). */
static int ragged_row(struct merge *m, struct shard_file *f,
		      struct sgroup *g, h5out *h, rec_item *it, uint64_t r)
{
	struct slab *s = &g->features;
	const int64_t *start = slab_row(f->name, &g->start, r);
	const int32_t *n_frames = slab_row(f->name, &g->n_frames, r);
	size_t width = s->rank == 2 ? (size_t)s->dims[1] : 1;
	size_t esize = s->row_bytes / (width ? width : 1);
	uint64_t left, at;

	if (!start || !n_frames)
		return -1;
	if (*start != (int64_t)g->frame || *n_frames < 0 ||
	    (uint64_t)*n_frames > s->dims[0] - g->frame) {
		prog_err("'%s': row %" PRIu64 " of %s starts at frame %" PRId64
			 " with %" PRId32 " frames, expected frame %" PRIu64
			 ": a damaged shard file", f->name, r, g->start.what,
			 *start, *n_frames, g->frame);
		return -1;
	}
	left = (uint64_t)*n_frames;
	at = g->frame;
	do {
		const unsigned char *x = left ? slab_row(f->name, s, at)
					      : s->buf;
		uint64_t in_block = left ? s->lo + s->n - at : 0;
		uint64_t k = left < in_block ? left : in_block;

		if (left && !x)
			return -1;
		it->flags = (at > g->frame ? REC_ITEM_CONT : 0) |
			    (k < left ? REC_ITEM_MORE : 0);
		if (it->type == REC_T_AUDIO) {
			it->dim0 = (uint32_t)k;
			it->dim1 = (uint32_t)(width ? width : 1);
			it->data = x;
		} else {
			it->dim0 = (uint32_t)width;
			it->dim1 = (uint32_t)k;
			it->data = width > 1 ? as_record(m, x, k, width, esize)
					     : x;
			if (!it->data) {
				prog_err("out of memory");
				return -1;
			}
		}
		it->data_len = k * width * esize;
		if (h5out_add(h, it))
			return -1;
		at += k;
		left -= k;
	} while (left);
	g->frame = at;
	return 0;
}

/* The rows of clip i in group g of f. */
static int group_rows(struct merge *m, struct shard_file *f, int split,
		      h5out *h, const rec_item *clip)
{
	struct sgroup *g = &f->g[split];

	while (g->next < g->label.dims[0]) {
		uint64_t r = g->next;
		int64_t c = clip_of(f, &g->clip, r);
		const int32_t *label = slab_row(f->name, &g->label, r);
		const int32_t *seg = slab_row(f->name, &g->segment, r);
		const int64_t *off = slab_row(f->name, &g->offset, r);
		rec_item it = *clip;

		if (c == READ_FAILED || !label || !seg || !off)
			return -1;
		if (c >= 0 && (uint64_t)c > clip->clip)
			return 0;
		if (c < 0 || (uint64_t)c < clip->clip) {
			refuse_row(m, f, g->clip.what, r, c);
			return -1;
		}
		it.type = m->kind;
		it.dtype = m->dtype;
		it.split = split;
		it.label = *label;
		it.segment = (uint32_t)*seg;
		it.offset = (uint64_t)*off;
		if (f->ragged ? ragged_row(m, f, g, h, &it, r)
			      : fixed_row(f, g, h, &it, r))
			return -1;
		g->next++;
	}
	return 0;
}

/* The rows of /skipped of clip i. */
static int skipped_rows(struct merge *m, struct shard_file *f, h5out *h,
			const rec_item *clip)
{
	while (f->next_skipped < f->s_clip.dims[0]) {
		uint64_t r = f->next_skipped;
		int64_t c = clip_of(f, &f->s_clip, r);
		const char *const *path, *const *reason;
		rec_item it = *clip;

		if (c == READ_FAILED)
			return -1;
		if (c < 0 || (uint64_t)c < clip->clip) {
			refuse_row(m, f, "skipped/clip", r, c);
			return -1;
		}
		if ((uint64_t)c > clip->clip)
			return 0;
		path = slab_row(f->name, &f->s_path, r);
		reason = slab_row(f->name, &f->s_reason, r);
		if (!path || !reason)
			return -1;
		it.type = REC_T_SKIPPED;
		it.key = *path ? *path : "";
		it.key_len = strlen(it.key);
		it.data = *reason ? *reason : "";
		it.data_len = strlen(it.data);
		if (h5out_add(h, &it))
			return -1;
		f->next_skipped++;
	}
	return 0;
}

/* The source record of clip i, from its row of the shard's /clips, when
 * the shard knows the file's rate or channels (0: unknown, no record). */
static int source_record(struct shard_file *f, uint64_t row,
			 const rec_item *clip, h5out *h)
{
	const int32_t *rate, *channels;
	char pairs[64];
	int len = 0;
	rec_item it = *clip;

	if (!f->has_source)
		return 0;
	rate = slab_row(f->name, &f->c_source_rate, row);
	channels = slab_row(f->name, &f->c_source_channels, row);
	if (!rate || !channels)
		return -1;
	if (*rate > 0)
		len += snprintf(pairs + len, sizeof(pairs) - (size_t)len,
				"source_rate%c%" PRId32 "%c", 0, *rate, 0);
	if (*channels > 0)
		len += snprintf(pairs + len, sizeof(pairs) - (size_t)len,
				"source_channels%c%" PRId32 "%c", 0,
				*channels, 0);
	if (len == 0)
		return 0;
	it.type = REC_T_SOURCE;
	it.data = pairs;
	it.data_len = (size_t)len;
	return h5out_add(h, &it);
}

static int merge_clip(struct merge *m, h5out *h, uint64_t i)
{
	struct shard_file *f = m->by_k[i % m->n];
	rec_item clip;

	if (clip_record(f, i, i / m->n, &clip) ||
	    source_record(f, i / m->n, &clip, h))
		return -1;
	for (int s = 0; s < 4; s++)
		if (f->g[s].present && group_rows(m, f, s, h, &clip))
			return -1;
	return skipped_rows(m, f, h, &clip);
}

/* Every row of f was merged: a row left is a clip of no shard's. */
static int check_done(const struct merge *m, struct shard_file *f)
{
	for (int s = 0; s < 4; s++) {
		struct sgroup *g = &f->g[s];

		int64_t c;

		if (!g->present || g->next == g->label.dims[0])
			continue;
		c = clip_of(f, &g->clip, g->next);
		if (c != READ_FAILED)
			refuse_row(m, f, g->clip.what, g->next, c);
		return -1;
	}
	if (f->next_skipped < f->s_clip.dims[0]) {
		int64_t c = clip_of(f, &f->s_clip, f->next_skipped);

		if (c != READ_FAILED)
			refuse_row(m, f, "skipped/clip", f->next_skipped, c);
		return -1;
	}
	return 0;
}

static int add_stats(const struct merge *m, h5out *h)
{
	for (uint32_t k = 0; k < m->n; k++) {
		const struct shard_file *f = m->by_k[k];

		for (int s = 0; s < 4; s++) {
			uint32_t width;
			int64_t count;
			double *sum, *sumsq;
			int err;

			if (!f->g[s].present)
				continue;
			if (shard_stats(f, s, &width, &count, &sum, &sumsq))
				return -1;
			err = h5out_add_stats(h, s, width, count, sum, sumsq);
			free(sum);
			free(sumsq);
			if (err) {
				prog_err("'%s': /%s's statistics are of %"
					 PRIu32 " features, not of the rows'",
					 f->name, group_names[s], width);
				return -1;
			}
		}
	}
	return 0;
}

int merge_rows(struct merge *m, h5out *h, void (*tick)(void *, uint64_t),
	       void *arg)
{
	const char *kind = rec_header_get(m->by_k[0]->hdr, "kind");
	const char *dtype = rec_header_get(m->by_k[0]->hdr, "dtype");

	m->kind = kind && !strcmp(kind, "audio") ? REC_T_AUDIO
						 : REC_T_FEATURES;
	m->dtype = dtype ? rec_dtype_parse(dtype) : 0;
	for (uint64_t i = 0; i < m->clips; i++) {
		if (merge_clip(m, h, i))
			return -1;
		if (tick)
			tick(arg, i + 1);
	}
	for (uint32_t k = 0; k < m->n; k++)
		if (check_done(m, m->by_k[k]))
			return -1;
	return add_stats(m, h);
}
