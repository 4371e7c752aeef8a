/*
 * h5tables.c - the tables: /labels, written at the end, and /clips and
 * /skipped, written a block of rows at a time as the stream goes; and the
 * clip accounting behind /clips (clip order, clips passed over).
 */
#include <errno.h>
#include <hdf5.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "h5attr.h"
#include "h5out_priv.h"

#define TABLE_TEXT (1u << 20)   /* text (paths, reasons) buffered a table */

enum {
	CLIP_PATH, CLIP_LABEL, CLIP_SPLIT, CLIP_SAMPLES, CLIP_RATE,
	CLIP_SOURCE_RATE, CLIP_SOURCE_CHANNELS
};
enum { SKIP_PATH, SKIP_REASON, SKIP_CLIP };

/* A fixed-size 1-D dataset of n elements written from buf (mtype). */
static int table(h5out *h, hid_t loc, const char *name, hid_t ftype,
		 hid_t mtype, size_t n, const void *buf)
{
	hsize_t dims[1] = { n };
	hid_t space = H5Screate_simple(1, dims, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	hid_t d = NO_ID;
	int ret = -1;

	if (space < 0 || dcpl < 0 || H5Pset_obj_track_times(dcpl, 0) < 0)
		goto out;
	d = H5Dcreate2(loc, name, ftype, space, H5P_DEFAULT, dcpl,
		       H5P_DEFAULT);
	if (d < 0)
		goto out;
	if (n && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, h->dxpl, buf) < 0)
		goto out;
	ret = 0;
out:
	if (d >= 0 && H5Dclose(d) < 0)
		ret = -1;
	if (space >= 0)
		H5Sclose(space);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (ret)
		h5_fail(h, "write a table");
	return ret;
}

int write_labels(h5out *h, const rec_header *hdr)
{
	size_t n = rec_header_count(hdr, "label");
	const char **v = malloc((n ? n : 1) * sizeof(*v));
	hid_t t = h5attr_utf8_type();
	int ret = -1;

	if (!v) {
		h5_oom(h);
		goto out;
	}
	if (t < 0) {
		h5_fail(h, "make a string type");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = rec_header_get_nth(hdr, "label", i);
	ret = table(h, h->file, "labels", t, t, n, v);
out:
	if (t >= 0)
		H5Tclose(t);
	free(v);
	return ret;
}

/* Adds a column of file type ftype (taken over, closed by table_free())
 * read from memory elements of mtype (a predefined type), or of ftype
 * itself when mtype is NO_ID. */
static int table_column(struct table *t, const char *name, hid_t ftype,
			hid_t mtype, size_t size)
{
	struct column *c = &t->col[t->ncol++];

	c->name = name;
	c->type = ftype;
	c->mtype = mtype < 0 ? ftype : mtype;
	c->size = size;
	c->d = NO_ID;
	c->buf = malloc(TABLE_CHUNK * size);
	return ftype < 0 || !c->buf ? -1 : 0;
}

int table_init(h5out *h, struct table *t, int skipped)
{
	const size_t ptr = sizeof(const char *);
	int err;

	t->name = skipped ? "skipped" : "clips";
	t->gid = NO_ID;
	if (skipped)
		err = table_column(t, "path", h5attr_utf8_type(), NO_ID, ptr) ||
		      table_column(t, "reason", h5attr_utf8_type(), NO_ID,
				   ptr) ||
		      table_column(t, "clip", H5Tcopy(H5T_STD_I32LE),
				   H5T_NATIVE_INT32, 4);
	else
		err = table_column(t, "path", h5attr_utf8_type(), NO_ID, ptr) ||
		      table_column(t, "label", H5Tcopy(H5T_STD_I32LE),
				   H5T_NATIVE_INT32, 4) ||
		      table_column(t, "split", split_enum_type(), NO_ID, 1) ||
		      table_column(t, "n_samples", H5Tcopy(H5T_STD_I64LE),
				   H5T_NATIVE_INT64, 8) ||
		      table_column(t, "sample_rate", H5Tcopy(H5T_STD_I32LE),
				   H5T_NATIVE_INT32, 4) ||
		      table_column(t, "source_rate", H5Tcopy(H5T_STD_I32LE),
				   H5T_NATIVE_INT32, 4) ||
		      table_column(t, "source_channels",
				   H5Tcopy(H5T_STD_I32LE), H5T_NATIVE_INT32, 4);
	if (!err)
		return 0;
	for (int i = 0; i < t->ncol; i++)
		if (!t->col[i].buf)
			return h5_oom(h);
	return h5_fail(h, "make the tables");
}

/* Closes what is open without reporting; a failed table_init() too. */
void table_free(struct table *t)
{
	for (int i = 0; i < t->ncol; i++) {
		struct column *c = &t->col[i];

		if (c->d >= 0)
			H5Dclose(c->d);
		if (c->type >= 0)
			H5Tclose(c->type);
		free(c->buf);
		c->d = c->type = NO_ID;
		c->buf = NULL;
	}
	t->ncol = 0;
	if (t->gid >= 0)
		H5Gclose(t->gid);
	t->gid = NO_ID;
	free(t->text);
	t->text = NULL;
}

/* Closes the table's datasets and group, reporting a failure (closing
 * writes what the library still holds). */
int table_close(h5out *h, struct table *t)
{
	int ret = 0;

	for (int i = 0; i < t->ncol; i++) {
		if (t->col[i].d >= 0 && H5Dclose(t->col[i].d) < 0)
			ret = -1;
		t->col[i].d = NO_ID;
	}
	if (t->gid >= 0 && H5Gclose(t->gid) < 0)
		ret = -1;
	t->gid = NO_ID;
	return ret ? h5_fail(h, "write a table") : 0;
}

/* A table column: chunked and extendible like the row columns, since its
 * length is known only at the end, but never compressed (formats/hdf5.md).
 * Its chunk cache holds one chunk: writes are whole chunks but for the
 * last, and a block cut short by a long text (table_reserve()) is
 * completed in the cache rather than read back. */
static hid_t table_dataset(hid_t loc, const struct column *c,
			   hsize_t chunk)
{
	hsize_t dims[1] = { 0 }, max[1] = { H5S_UNLIMITED };
	/* a string is stored as a 16-byte reference to the global heap */
	size_t esize = H5Tis_variable_str(c->type) > 0 ? 16 :
		       H5Tget_size(c->type);

	return chunked_dataset(loc, c->name, c->type, 1, dims, max, &chunk,
			       (size_t)chunk * esize, NULL);
}

/* The group and datasets are made at the first write; when that is the
 * last one too, a small table gets a chunk of its own size (at least 1:
 * an empty table is a valid chunked dataset of 0 rows). */
static int table_make(h5out *h, struct table *t, int final)
{
	hsize_t chunk = TABLE_CHUNK;

	if (final && t->rows + t->n < chunk)
		chunk = t->rows + t->n ? t->rows + t->n : 1;
	t->gid = new_group(h, t->name);
	if (t->gid < 0)
		return -1;
	for (int i = 0; i < t->ncol; i++) {
		t->col[i].d = table_dataset(t->gid, &t->col[i], chunk);
		if (t->col[i].d < 0)
			return h5_fail(h, "create a table");
	}
	return 0;
}

/* Writes the buffered rows; final: they are the table's last. */
int table_flush(h5out *h, struct table *t, int final)
{
	double t0;
	int err = 0;

	if (write_bg_wait(h))
		return -1;
	t0 = prog_now();
	if (t->gid < 0 && table_make(h, t, final))
		return -1;
	for (int i = 0; i < t->ncol && t->n && !err; i++)
		err = append_rows(h, t->col[i].d, t->col[i].mtype, 1,
				  t->rows, t->n, t->col[i].buf);
	h->t_write += prog_now() - t0;
	if (err)
		return h5_fail(h, "write a table");
	t->rows += t->n;
	t->n = 0;
	t->text_len = 0;
	return 0;
}

/* Makes room for need bytes of text for the next row: writes the rows
 * buffered first when the text would outgrow TABLE_TEXT, so that a table
 * keeps at most that much (or one row's text, when that is more). */
static int table_reserve(h5out *h, struct table *t, size_t need)
{
	char *p;

	if (t->text_len + need <= t->text_cap)
		return 0;
	if (t->n && table_flush(h, t, 0))
		return -1;
	if (need <= t->text_cap)
		return 0;
	/* nothing points into the text now: it may move */
	p = realloc(t->text, need > TABLE_TEXT ? need : TABLE_TEXT);
	if (!p)
		return h5_oom(h);
	t->text = p;
	t->text_cap = need > TABLE_TEXT ? need : TABLE_TEXT;
	return 0;
}

/* Copies s[0..n) and a NUL into the text table_reserve() made room for. */
static const char *table_text(struct table *t, const void *s, size_t n)
{
	char *p = t->text + t->text_len;

	memcpy(p, s, n);
	p[n] = '\0';
	t->text_len += n + 1;
	return p;
}

static void table_put(struct table *t, int col, const void *v)
{
	struct column *c = &t->col[col];

	memcpy(c->buf + t->n * c->size, v, c->size);
}

/* The row is complete: a full block is written. */
static int table_next(h5out *h, struct table *t)
{
	if (++t->n == TABLE_CHUNK)
		return table_flush(h, t, 0);
	return 0;
}

/* The row of /clips of the record's clip. */
static int clip_row(h5out *h, const rec_item *it)
{
	struct table *t = &h->clips;
	const char *path;
	int64_t n_samples = (int64_t)it->clip_samples;
	int32_t rate = (int32_t)it->sample_rate;
	int8_t split = (int8_t)it->split;
	int src = h->have_source && h->source_clip == it->clip;
	int32_t src_rate = src ? h->source_rate : 0;
	int32_t src_channels = src ? h->source_channels : 0;

	h->have_source = 0;
	if (table_reserve(h, t, (size_t)it->key_len + 1))
		return -1;
	path = table_text(t, it->key, it->key_len);
	table_put(t, CLIP_PATH, &path);
	table_put(t, CLIP_LABEL, &it->label);
	table_put(t, CLIP_SPLIT, &split);
	table_put(t, CLIP_SAMPLES, &n_samples);
	table_put(t, CLIP_RATE, &rate);
	table_put(t, CLIP_SOURCE_RATE, &src_rate);
	table_put(t, CLIP_SOURCE_CHANNELS, &src_channels);
	return table_next(h, t);
}

/* Sets the current clip's n_samples: in the buffered block when its row
 * is there still, else in the file (one element; a rare write: a clip's
 * length given only by its later records). */
static int set_clip_samples(h5out *h, int64_t n)
{
	struct table *t = &h->clips;
	struct column *c = &t->col[CLIP_SAMPLES];
	hsize_t at = h->clip_row, one = 1;
	hid_t fspace = NO_ID, mspace = NO_ID;
	int ret = -1;

	h->clip_samples = n;
	if (at >= t->rows) {
		memcpy(c->buf + (at - t->rows) * c->size, &n, sizeof(n));
		return 0;
	}
	if (write_bg_wait(h))
		return -1;
	fspace = H5Dget_space(c->d);
	mspace = H5Screate_simple(1, &one, NULL);
	if (fspace >= 0 && mspace >= 0 &&
	    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &at, NULL, &one,
				NULL) >= 0 &&
	    H5Dwrite(c->d, c->mtype, mspace, fspace, h->dxpl, &n) >= 0)
		ret = 0;
	if (fspace >= 0)
		H5Sclose(fspace);
	if (mspace >= 0)
		H5Sclose(mspace);
	return ret ? h5_fail(h, "write a table") : 0;
}

/* A later record of the current clip: its n_samples is the largest
 * clip_samples of its records (pieces and windows flagged more may give
 * 0, the length not known yet), but the samples kept once a skipped
 * record follows the clip's rows (cut short: formats/record.md). */
static int same_clip(h5out *h, const rec_item *it)
{
	int64_t n = (int64_t)it->clip_samples;

	if (it->type == REC_T_SKIPPED && h->clip_rows) {
		h->clip_cut = 1;
	} else {
		h->clip_rows |= it->type != REC_T_SKIPPED;
		if (h->clip_cut || n <= h->clip_samples)
			return 0;
	}
	if (h->missing || n == h->clip_samples)
		return 0;
	return set_clip_samples(h, n);
}

/* Shards (formats/record.md, Shard streams): a shard K/N holds the clip
 * indices i with i mod N = K; a whole stream is shard 0/1. */
static uint64_t shard_n(const h5out *h)
{
	return h->o.shard_n ? h->o.shard_n : 1;
}

/* How many of the stream's own clip indices lie below x. */
static uint64_t own_below(const h5out *h, uint64_t x)
{
	uint64_t k = h->o.shard_k, n = shard_n(h);

	return x > k ? (x - k + n - 1) / n : 0;
}

/* The first of the stream's own clip indices at or above x. */
static uint64_t own_from(const h5out *h, uint64_t x)
{
	return h->o.shard_k + own_below(h, x) * shard_n(h);
}

/* The record's clip gets its row of /clips from the first record of it.
 * Clips come in increasing order (the reader makes sure), so a clip is
 * new when its index is above the last one's, and an index passed over
 * is a clip that can no longer come: the file will be refused at the end
 * (check_clips()), and /clips is not written on past the gap. */
int note_clip(h5out *h, const rec_item *it)
{
	if (it->clip > INT32_MAX) {
		prog_err("'%.*s': clip index %" PRIu64 " too large for "
			 "'%s'", (int)it->key_len, it->key, it->clip,
			 h->name);
		return -1;
	}
	if (h->o.clips_expected && it->clip >= h->o.clips_expected) {
		prog_err("'%.*s': clip index %" PRIu64 ", but the stream "
			 "header says it holds %" PRIu64 " %s",
			 (int)it->key_len, it->key, it->clip,
			 h->o.clips_expected,
			 prog_plural(h->o.clips_expected, "clip", "clips"));
		return -1;
	}
	if (it->clip % shard_n(h) != h->o.shard_k) {
		prog_err("'%.*s': clip index %" PRIu64 " in shard %" PRIu32
			 "/%" PRIu32 ", which holds the clips whose index is "
			 "%" PRIu32 " modulo %" PRIu32, (int)it->key_len,
			 it->key, it->clip, h->o.shard_k, h->o.shard_n,
			 h->o.shard_k, h->o.shard_n);
		return -1;
	}
	if (it->clip + 1 < h->n_clips) {
		prog_err("'%.*s': clip index %" PRIu64 " after %" PRIu64
			 " (records must be in clip order)", (int)it->key_len,
			 it->key, it->clip, h->n_clips - 1);
		return -1;
	}
	if (it->clip + 1 == h->n_clips)
		return same_clip(h, it);
	if (own_below(h, it->clip) > own_below(h, h->n_clips)) {
		if (!h->missing)
			h->first_missing = own_from(h, h->n_clips);
		h->missing += own_below(h, it->clip) -
			      own_below(h, h->n_clips);
	}
	h->n_clips = it->clip + 1;
	h->clips_seen++;
	h->clip_row = h->clips.rows + h->clips.n;
	h->clip_samples = (int64_t)it->clip_samples;
	h->clip_rows = it->type != REC_T_SKIPPED;
	h->clip_cut = 0;
	return h->missing ? 0 : clip_row(h, it);
}

/* A source pair's value as a count: a decimal from 1 to 2^31 - 1, else
 * 0 (unknown: the pair is absent, or not a number h5pack can store). */
static int32_t source_count(const rec_item *it, const char *key)
{
	const char *v = rec_source_get(it, key);
	char *end;
	long long n;

	if (v == NULL || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || n < 1 || n > INT32_MAX)
		return 0;
	return (int32_t)n;
}

int note_source(h5out *h, const rec_item *it)
{
	h->have_source = 1;
	h->source_clip = it->clip;
	h->source_rate = source_count(it, "source_rate");
	h->source_channels = source_count(it, "source_channels");
	return 0;
}

int add_skipped(h5out *h, const rec_item *it)
{
	struct table *t = &h->skipped;
	const char *path, *reason;
	int32_t clip = (int32_t)it->clip;

	if (note_clip(h, it) ||
	    table_reserve(h, t, (size_t)it->key_len + it->data_len + 2))
		return -1;
	path = table_text(t, it->key, it->key_len);
	reason = table_text(t, it->data, it->data_len);
	table_put(t, SKIP_PATH, &path);
	table_put(t, SKIP_REASON, &reason);
	table_put(t, SKIP_CLIP, &clip);
	return table_next(h, t);
}

/* Every clip index below the announced count (or the highest seen) must
 * have appeared, as rows or as a skipped input: a gap means a stage lost
 * a clip, and a dataset missing clips must not look complete. A shard
 * answers for its own indices only. */
int check_clips(h5out *h)
{
	uint64_t n = h->n_clips, missing = h->missing;
	uint64_t first = h->first_missing;

	if (h->o.clips_expected > n) {
		n = h->o.clips_expected;
		if (!missing)
			first = own_from(h, h->n_clips);
		missing += own_below(h, n) - own_below(h, h->n_clips);
	}
	uint64_t of = h->o.shard_n ? own_below(h, n) : n;
	char more[64] = "", whose[64] = "in the stream";

	if (!missing)
		return 0;
	if (missing > 1)
		snprintf(more, sizeof(more), " (and %" PRIu64 " more)",
			 missing - 1);
	if (h->o.shard_n)
		snprintf(whose, sizeof(whose), "of shard %" PRIu32 "/%" PRIu32,
			 h->o.shard_k, h->o.shard_n);
	prog_err("clip %" PRIu64 "%s of the %" PRIu64 " %s %s never "
		 "appeared, neither as rows nor as a skipped input: not "
		 "writing an incomplete '%s'", first, more, of,
		 prog_plural(of, "clip", "clips"), whose, h->name);
	return -1;
}
