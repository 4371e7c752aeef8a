/*
 * h5out.c - writes the melpipe HDF5 layout specified in formats/hdf5.md.
 *
 * Rows go to a per-group memory buffer of whole chunks and are appended
 * with one H5Dwrite per dataset when it is full, so the library sees a few
 * hundred large writes of complete chunks instead of millions of row
 * writes. Everything about clips (paths, labels, ...) is kept in memory
 * (a few dozen bytes per clip, strings in one growing arena) and written
 * as plain tables at the end. Nothing is allocated per record.
 */
#include "h5out.h"

#include <hdf5.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "h5attr.h"
#include "zstd_filter.h"

#define FORMAT_VERSION 1
#define BATCH_CHUNKS 8          /* chunks buffered per group before a write */
#define MAX_BATCH_ROWS (1u << 20) /* ... unless that is more rows than this */
#define COLUMN_CHUNK 65536u     /* rows per chunk of the per-row columns */
#define NO_ID ((hid_t)-1)

static const char *const group_names[4] = {
	"all", "training", "validation", "testing"
};

/* One split group: its datasets and the rows waiting to be written. */
struct group {
	hid_t gid;
	hid_t d_features, d_label, d_clip, d_segment, d_offset;
	uint64_t rows;   /* rows in the file */
	size_t n, cap;   /* rows buffered, buffer capacity */
	unsigned char *features;
	int32_t *label, *clip, *segment;
	int64_t *offset;
};

struct clip_row {
	uint64_t path;       /* offset in the string arena */
	int64_t n_samples;
	int32_t label;
	int32_t sample_rate;
	int8_t split;
	uint8_t seen;
};

struct skip_row {
	uint64_t clip;
	uint64_t path, reason; /* offsets in the string arena */
};

struct arena {
	char *p;
	size_t len, cap;
};

struct h5out {
	struct h5out_opts o;
	const char *name;
	hid_t file;
	hid_t ftype;          /* element type of features, file = memory */
	struct group groups[4];
	int has_group[4];

	int shape_known;
	uint32_t dim0, dim1;  /* of the first row */
	int rank;             /* of features: 3, or 2 for mono audio */
	size_t row_bytes;
	hsize_t chunk_rows;
	char *first_key;      /* names the first row in shape errors */

	struct clip_row *clips;
	size_t n_clips, cap_clips;
	uint64_t clips_seen;
	struct skip_row *skips;
	size_t n_skips, cap_skips;
	struct arena strings;

	double t_write;
};

/* ------------------------------------------------------------------ */
/* Errors. The library calls our handler when one of its API functions
 * fails, while its error stack still describes the failure (the next API
 * call, even a cleanup, clears it). We keep the first failure's innermost
 * description until h5_fail() reports it: that is the cause, later
 * failures are consequences. */

static char h5_first_error[2048];

static herr_t innermost(unsigned n, const H5E_error2_t *e, void *data)
{
	char *buf = data;

	(void)n;
	if (!buf[0] && e->desc && e->desc[0])
		snprintf(buf, sizeof(h5_first_error), "%s", e->desc);
	return 0;
}

static herr_t record_error(hid_t stack, void *data)
{
	(void)data;
	if (!h5_first_error[0])
		H5Ewalk2(stack, H5E_WALK_UPWARD, innermost, h5_first_error);
	return 0;
}

/* The reason for the failure: the system's error message when a system
 * call failed (HDF5 embeds it as "error message = '...'"), else the
 * library's innermost description. Forgets it for the next failure. */
static const char *h5_reason(char *buf, size_t n)
{
	const char *m = strstr(h5_first_error, "error message = '");
	const char *end = m ? strchr(m + 17, '\'') : NULL;

	if (end)
		snprintf(buf, n, "%.*s", (int)(end - m - 17), m + 17);
	else if (h5_first_error[0])
		snprintf(buf, n, "%.200s", h5_first_error);
	else
		snprintf(buf, n, "HDF5 library error");
	h5_first_error[0] = '\0';
	return buf;
}

static int h5_fail(const h5out *h, const char *what)
{
	char buf[256];

	prog_err("unable to %s in '%s': %s", what, h->name,
		 h5_reason(buf, sizeof(buf)));
	return -1;
}

static int oom(const h5out *h)
{
	prog_err("out of memory writing '%s'", h->name);
	return -1;
}

/* ------------------------------------------------------------------ */
/* Strings and tables kept in memory */

/* Appends s[0..n) and a NUL; returns its offset or -1. */
static int64_t arena_add(struct arena *a, const char *s, size_t n)
{
	size_t at = a->len;

	if (a->len + n + 1 > a->cap) {
		size_t cap = a->cap ? a->cap : 1u << 16;
		char *p;

		while (cap < a->len + n + 1)
			cap *= 2;
		p = realloc(a->p, cap);
		if (!p)
			return -1;
		a->p = p;
		a->cap = cap;
	}
	memcpy(a->p + at, s, n);
	a->p[at + n] = '\0';
	a->len += n + 1;
	return (int64_t)at;
}

static int grow_clips(h5out *h, uint64_t clip)
{
	size_t cap = h->cap_clips ? h->cap_clips : 1024;
	struct clip_row *p;

	while (cap <= clip)
		cap *= 2;
	p = realloc(h->clips, cap * sizeof(*p));
	if (!p)
		return oom(h);
	memset(p + h->cap_clips, 0, (cap - h->cap_clips) * sizeof(*p));
	h->clips = p;
	h->cap_clips = cap;
	return 0;
}

/* The record's clip gets its row of /clips from the first record of it. */
static int note_clip(h5out *h, const rec_item *it)
{
	struct clip_row *c;
	int64_t path;

	if (it->clip > INT32_MAX) {
		prog_err("'%.*s': clip index %" PRIu64 " too large for "
			 "'%s'", (int)it->key_len, it->key, it->clip,
			 h->name);
		return -1;
	}
	if (h->o.clips_expected && it->clip >= h->o.clips_expected) {
		prog_err("'%.*s': clip index %" PRIu64 ", but the stream "
			 "header says it holds %" PRIu64 " clips",
			 (int)it->key_len, it->key, it->clip,
			 h->o.clips_expected);
		return -1;
	}
	/* without a count, a wild index must not size the table: clips
	 * come in order, so a jump is a stream that lost millions */
	if (!h->o.clips_expected && it->clip > h->n_clips + (1u << 24)) {
		prog_err("'%.*s': clip index jumps from %zu to %" PRIu64,
			 (int)it->key_len, it->key, h->n_clips, it->clip);
		return -1;
	}
	if (it->clip >= h->cap_clips && grow_clips(h, it->clip))
		return -1;
	c = &h->clips[it->clip];
	if (c->seen)
		return 0;
	path = arena_add(&h->strings, it->key, it->key_len);
	if (path < 0)
		return oom(h);
	c->path = (uint64_t)path;
	c->n_samples = (int64_t)it->clip_samples;
	c->label = it->label;
	c->sample_rate = (int32_t)it->sample_rate;
	c->split = (int8_t)it->split;
	c->seen = 1;
	h->clips_seen++;
	if (it->clip >= h->n_clips)
		h->n_clips = it->clip + 1;
	return 0;
}

static int add_skipped(h5out *h, const rec_item *it)
{
	struct skip_row *s;
	int64_t path, reason;

	if (h->n_skips == h->cap_skips) {
		size_t cap = h->cap_skips ? 2 * h->cap_skips : 64;

		s = realloc(h->skips, cap * sizeof(*s));
		if (!s)
			return oom(h);
		h->skips = s;
		h->cap_skips = cap;
	}
	path = arena_add(&h->strings, it->key, it->key_len);
	reason = arena_add(&h->strings, it->data, it->data_len);
	if (path < 0 || reason < 0)
		return oom(h);
	s = &h->skips[h->n_skips++];
	s->clip = it->clip;
	s->path = (uint64_t)path;
	s->reason = (uint64_t)reason;
	return note_clip(h, it);
}

/* ------------------------------------------------------------------ */
/* Types and datasets */

/* A 16-bit float type: IEEE binary16 (what HDF5 1.14.4+ calls
 * H5T_IEEE_F16LE) or bfloat16 (the top half of a binary32: 8 exponent
 * bits, 7 mantissa bits). Readers convert either to a native float. */
static hid_t float16_type(int bf16)
{
	hid_t t = H5Tcopy(H5T_IEEE_F32LE);

	if (t < 0)
		return NO_ID;
	if (H5Tset_fields(t, 15, bf16 ? 7 : 10, bf16 ? 8 : 5, 0,
			  bf16 ? 7 : 10) < 0 ||
	    H5Tset_precision(t, 16) < 0 || H5Tset_offset(t, 0) < 0 ||
	    H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, bf16 ? 127 : 15) < 0) {
		H5Tclose(t);
		return NO_ID;
	}
	return t;
}

static hid_t element_type(int dtype)
{
	switch (dtype) {
	case REC_S16:
		return H5Tcopy(H5T_STD_I16LE);
	case REC_F32:
		return H5Tcopy(H5T_IEEE_F32LE);
	case REC_F16:
		return float16_type(0);
	case REC_BF16:
		return float16_type(1);
	}
	return NO_ID;
}

/* Compressed datasets are byte-shuffled first (HDF5's built-in filter 2,
 * which every reader has): grouping the bytes of like significance makes
 * float features a third smaller under zstd instead of a fifth. */
static int set_compression(hid_t dcpl, const struct h5out_opts *o)
{
	unsigned level = o->level;

	if (o->compress != H5OUT_NONE && H5Pset_shuffle(dcpl) < 0)
		return -1;
	if (o->compress == H5OUT_GZIP)
		return H5Pset_deflate(dcpl, level) < 0 ? -1 : 0;
	if (o->compress == H5OUT_ZSTD)
		return H5Pset_filter(dcpl, H5Z_FILTER_ZSTD, H5Z_FLAG_MANDATORY,
				     1, &level) < 0 ? -1 : 0;
	return 0;
}

/* An extendible dataset of rank dims, 0 rows so far; row_dims are the
 * dimensions after the first (0 = not known yet, then extendible too). */
static hid_t row_dataset(h5out *h, hid_t loc, const char *name, hid_t type,
			 int rank, const uint32_t *row_dims,
			 hsize_t chunk_rows, size_t cache_bytes)
{
	hsize_t dims[3] = { 0 }, max[3] = { H5S_UNLIMITED }, chunk[3];
	hid_t space = NO_ID, dcpl = NO_ID, dapl = NO_ID, d = NO_ID;

	chunk[0] = chunk_rows;
	for (int i = 1; i < rank; i++) {
		dims[i] = row_dims[i - 1];
		max[i] = dims[i] ? dims[i] : H5S_UNLIMITED;
		chunk[i] = dims[i] ? dims[i] : 1;
	}
	space = H5Screate_simple(rank, dims, max);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	dapl = H5Pcreate(H5P_DATASET_ACCESS);
	if (space < 0 || dcpl < 0 || dapl < 0 ||
	    H5Pset_chunk(dcpl, rank, chunk) < 0 ||
	    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0 ||
	    H5Pset_obj_track_times(dcpl, 0) < 0 ||
	    set_compression(dcpl, &h->o) < 0 ||
	    H5Pset_chunk_cache(dapl, 521, cache_bytes, 1.0) < 0)
		goto out;
	d = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, dapl);
out:
	if (space >= 0)
		H5Sclose(space);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (dapl >= 0)
		H5Pclose(dapl);
	return d;
}

static int alloc_buffers(h5out *h, struct group *g)
{
	size_t cap = (size_t)h->chunk_rows * BATCH_CHUNKS;

	/* tiny rows: the per-row columns would outweigh the features */
	while (cap > MAX_BATCH_ROWS && cap > h->chunk_rows)
		cap -= (size_t)h->chunk_rows;
	g->cap = cap;
	g->features = malloc(cap * (h->row_bytes ? h->row_bytes : 1));
	g->label = malloc(cap * sizeof(int32_t));
	g->clip = malloc(cap * sizeof(int32_t));
	g->segment = malloc(cap * sizeof(int32_t));
	g->offset = malloc(cap * sizeof(int64_t));
	if (!g->features || !g->label || !g->clip || !g->segment ||
	    !g->offset)
		return oom(h);
	return 0;
}

/* The datasets are made at a group's first write: when that is its last
 * one too, the group's size is known and a small group gets chunks no
 * bigger than itself instead of a mostly empty 1 MiB chunk per dataset.
 * total: the group's row count if known, else 0. */
static int make_row_datasets(h5out *h, struct group *g, hsize_t total)
{
	uint32_t row[2] = { h->dim0, h->dim1 };
	hsize_t rows = h->chunk_rows, col = COLUMN_CHUNK;
	size_t cache;

	if (total) {
		rows = rows < total ? rows : total;
		col = col < total ? col : total;
	}
	cache = 2 * (size_t)rows * h->row_bytes;
	if (cache < (1u << 20))
		cache = 1u << 20;
	g->d_features = row_dataset(h, g->gid, "features", h->ftype, h->rank,
				    row, rows, cache);
	g->d_label = row_dataset(h, g->gid, "label", H5T_STD_I32LE, 1, row,
				 col, 1u << 20);
	g->d_clip = row_dataset(h, g->gid, "clip", H5T_STD_I32LE, 1, row,
				col, 1u << 20);
	g->d_segment = row_dataset(h, g->gid, "segment", H5T_STD_I32LE, 1,
				   row, col, 1u << 20);
	g->d_offset = row_dataset(h, g->gid, "offset", H5T_STD_I64LE, 1, row,
				  col, 1u << 20);
	if (g->d_features < 0 || g->d_label < 0 || g->d_clip < 0 ||
	    g->d_segment < 0 || g->d_offset < 0)
		return h5_fail(h, "create the row datasets");
	return 0;
}

static int make_group(h5out *h, int split)
{
	struct group *g = &h->groups[split];
	hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);

	if (gcpl < 0 || H5Pset_obj_track_times(gcpl, 0) < 0) {
		if (gcpl >= 0)
			H5Pclose(gcpl);
		return h5_fail(h, "create a group");
	}
	g->gid = H5Gcreate2(h->file, group_names[split], H5P_DEFAULT, gcpl,
			    H5P_DEFAULT);
	H5Pclose(gcpl);
	if (g->gid < 0)
		return h5_fail(h, "create a group");
	h->has_group[split] = 1;
	if (h->shape_known)
		return alloc_buffers(h, g);
	return 0;
}

/* The first row fixes the shape; now the row datasets can be made. */
static int set_shape(h5out *h, const rec_item *it)
{
	size_t esize = rec_dtype_size(h->o.dtype);

	h->shape_known = 1;
	h->dim0 = it ? it->dim0 : 0;
	h->dim1 = it ? it->dim1 : 0;
	h->rank = h->o.kind == REC_T_AUDIO && (!it || it->dim1 == 1) ? 2 : 3;
	h->row_bytes = (size_t)h->dim0 * h->dim1 * esize;
	h->chunk_rows = 1;
	if (h->row_bytes && h->row_bytes < h->o.chunk_bytes)
		h->chunk_rows = h->o.chunk_bytes / h->row_bytes;
	if (h->chunk_rows > MAX_BATCH_ROWS)
		h->chunk_rows = MAX_BATCH_ROWS;
	if (it) {
		h->first_key = strndup(it->key, it->key_len);
		if (!h->first_key)
			return oom(h);
	}
	for (int s = 0; s < 4; s++)
		if (h->has_group[s] && alloc_buffers(h, &h->groups[s]))
			return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Rows */

static int append(h5out *h, hid_t d, hid_t mtype, int rank, hsize_t at,
		  hsize_t n, const void *buf)
{
	hsize_t dims[3] = { at + n, h->dim0, h->dim1 };
	hsize_t start[3] = { at, 0, 0 }, count[3] = { n, h->dim0, h->dim1 };
	hid_t fspace = NO_ID, mspace = NO_ID;
	int ret = -1;

	if (rank == 2)
		dims[1] = count[1] = h->dim0; /* audio: [rows, samples] */
	if (H5Dset_extent(d, dims) < 0)
		goto out;
	fspace = H5Dget_space(d);
	mspace = H5Screate_simple(rank, count, NULL);
	if (fspace < 0 || mspace < 0 ||
	    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count,
				NULL) < 0 ||
	    H5Dwrite(d, mtype, mspace, fspace, H5P_DEFAULT, buf) < 0)
		goto out;
	ret = 0;
out:
	if (fspace >= 0)
		H5Sclose(fspace);
	if (mspace >= 0)
		H5Sclose(mspace);
	return ret;
}

/* Writes the buffered rows; final: they are the group's last. */
static int flush_group(h5out *h, struct group *g, int final)
{
	double t0 = prog_now();
	int err;

	if (g->d_features < 0 &&
	    make_row_datasets(h, g, final ? g->rows + g->n + !g->n : 0))
		return -1;
	if (!g->n)
		return 0;
	err = append(h, g->d_features, h->ftype, h->rank, g->rows, g->n,
		     g->features) ||
	      append(h, g->d_label, H5T_NATIVE_INT32, 1, g->rows, g->n,
		     g->label) ||
	      append(h, g->d_clip, H5T_NATIVE_INT32, 1, g->rows, g->n,
		     g->clip) ||
	      append(h, g->d_segment, H5T_NATIVE_INT32, 1, g->rows, g->n,
		     g->segment) ||
	      append(h, g->d_offset, H5T_NATIVE_INT64, 1, g->rows, g->n,
		     g->offset);
	h->t_write += prog_now() - t0;
	if (err)
		return h5_fail(h, "write rows");
	g->rows += g->n;
	g->n = 0;
	return 0;
}

static int check_row(h5out *h, const rec_item *it)
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
		if (set_shape(h, it))
			return -1;
	} else if (it->dim0 != h->dim0 || it->dim1 != h->dim1) {
		prog_err("'%.*s': shape %" PRIu32 "x%" PRIu32 " differs from "
			 "%" PRIu32 "x%" PRIu32 " of the first record ('%s'); "
			 "a dataset needs one shape (segment with --last pad "
			 "gives one)", (int)it->key_len, it->key, it->dim0,
			 it->dim1, h->dim0, h->dim1, h->first_key);
		return -1;
	}
	if (it->segment > INT32_MAX || it->offset > INT64_MAX) {
		prog_err("'%.*s': segment %" PRIu32 " or offset %" PRIu64
			 " out of range", (int)it->key_len, it->key,
			 it->segment, it->offset);
		return -1;
	}
	return 0;
}

static int add_row(h5out *h, const rec_item *it)
{
	struct group *g;

	if (check_row(h, it) || note_clip(h, it))
		return -1;
	if (!h->has_group[it->split] && make_group(h, it->split))
		return -1;
	g = &h->groups[it->split];
	memcpy(g->features + g->n * h->row_bytes, it->data, h->row_bytes);
	g->label[g->n] = it->label;
	g->clip[g->n] = (int32_t)it->clip;
	g->segment[g->n] = (int32_t)it->segment;
	g->offset[g->n] = (int64_t)it->offset;
	if (++g->n == g->cap)
		return flush_group(h, g, 0);
	return 0;
}

int h5out_add(h5out *h, const rec_item *it)
{
	if (it->split < REC_SPLIT_NONE || it->split > REC_SPLIT_TESTING) {
		prog_err("'%.*s': split %d out of range", (int)it->key_len,
			 it->key, it->split);
		return -1;
	}
	if (it->type == REC_T_SKIPPED)
		return add_skipped(h, it);
	return add_row(h, it);
}

/* ------------------------------------------------------------------ */
/* Tables */

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
	if (n && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
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

static int string_table(h5out *h, hid_t loc, const char *name,
			const char **v, size_t n)
{
	hid_t t = h5attr_utf8_type();
	int ret;

	if (t < 0)
		return h5_fail(h, "make a string type");
	ret = table(h, loc, name, t, t, n, v);
	H5Tclose(t);
	return ret;
}

static hid_t split_enum_type(void)
{
	hid_t t = H5Tenum_create(H5T_STD_I8LE);

	for (int8_t s = 0; t >= 0 && s < 4; s++) {
		const char *name = s ? group_names[s] : "none";

		if (H5Tenum_insert(t, name, &s) < 0) {
			H5Tclose(t);
			t = NO_ID;
		}
	}
	return t;
}

static hid_t new_group(h5out *h, const char *name)
{
	hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
	hid_t g = NO_ID;

	if (gcpl >= 0 && H5Pset_obj_track_times(gcpl, 0) >= 0)
		g = H5Gcreate2(h->file, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
	if (gcpl >= 0)
		H5Pclose(gcpl);
	if (g < 0)
		h5_fail(h, "create a group");
	return g;
}

enum clip_field { CF_PATH, CF_LABEL, CF_SPLIT, CF_SAMPLES, CF_RATE };

/* Fills col (n elements of 8 bytes at most), or paths, with one field of
 * the clip table. (check_clips() made sure every row was seen.) */
static void clip_column(const h5out *h, enum clip_field field, void *col,
			const char **paths)
{
	for (size_t i = 0; i < h->n_clips; i++) {
		const struct clip_row *c = &h->clips[i];

		switch (field) {
		case CF_PATH:
			paths[i] = h->strings.p + c->path;
			break;
		case CF_LABEL:
			((int32_t *)col)[i] = c->label;
			break;
		case CF_SPLIT:
			((int8_t *)col)[i] = c->split;
			break;
		case CF_SAMPLES:
			((int64_t *)col)[i] = c->n_samples;
			break;
		case CF_RATE:
			((int32_t *)col)[i] = c->sample_rate;
			break;
		}
	}
}

static int write_clips(h5out *h)
{
	size_t n = h->n_clips;
	const char **paths = malloc((n ? n : 1) * sizeof(*paths));
	void *col = malloc((n ? n : 1) * sizeof(int64_t));
	hid_t g = NO_ID, split_t = split_enum_type();
	int ret = -1;

	if (!paths || !col || split_t < 0) {
		oom(h);
		goto out;
	}
	g = new_group(h, "clips");
	if (g < 0)
		goto out;
	clip_column(h, CF_PATH, col, paths);
	if (string_table(h, g, "path", paths, n))
		goto out;
	clip_column(h, CF_LABEL, col, paths);
	if (table(h, g, "label", H5T_STD_I32LE, H5T_NATIVE_INT32, n, col))
		goto out;
	clip_column(h, CF_SPLIT, col, paths);
	if (table(h, g, "split", split_t, split_t, n, col))
		goto out;
	clip_column(h, CF_SAMPLES, col, paths);
	if (table(h, g, "n_samples", H5T_STD_I64LE, H5T_NATIVE_INT64, n, col))
		goto out;
	clip_column(h, CF_RATE, col, paths);
	if (table(h, g, "sample_rate", H5T_STD_I32LE, H5T_NATIVE_INT32, n,
		  col))
		goto out;
	ret = 0;
out:
	if (g >= 0)
		H5Gclose(g);
	if (split_t >= 0)
		H5Tclose(split_t);
	free(paths);
	free(col);
	return ret;
}

static int write_skipped(h5out *h)
{
	size_t n = h->n_skips;
	const char **paths = malloc((n ? n : 1) * sizeof(*paths));
	const char **reasons = malloc((n ? n : 1) * sizeof(*reasons));
	int32_t *clips = malloc((n ? n : 1) * sizeof(*clips));
	hid_t g = NO_ID;
	int ret = -1;

	if (!paths || !reasons || !clips) {
		oom(h);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		paths[i] = h->strings.p + h->skips[i].path;
		reasons[i] = h->strings.p + h->skips[i].reason;
		clips[i] = (int32_t)h->skips[i].clip;
	}
	g = new_group(h, "skipped");
	if (g < 0 || string_table(h, g, "path", paths, n) ||
	    string_table(h, g, "reason", reasons, n) ||
	    table(h, g, "clip", H5T_STD_I32LE, H5T_NATIVE_INT32, n, clips))
		goto out;
	ret = 0;
out:
	if (g >= 0)
		H5Gclose(g);
	free(paths);
	free(reasons);
	free(clips);
	return ret;
}

static int write_labels(h5out *h, const rec_header *hdr)
{
	size_t n = rec_header_count(hdr, "label");
	const char **v = malloc((n ? n : 1) * sizeof(*v));
	int ret;

	if (!v)
		return oom(h);
	for (size_t i = 0; i < n; i++)
		v[i] = rec_header_get_nth(hdr, "label", i);
	ret = string_table(h, h->file, "labels", v, n);
	free(v);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Attributes */

static int write_root_attrs(h5out *h, const rec_header *hdr)
{
	if (h5attr_header(h->file, hdr, FORMAT_VERSION))
		return h5_fail(h, "write the attributes");
	return 0;
}

static int write_dtype_attrs(h5out *h)
{
	const char *dt = rec_dtype_name(h->o.dtype);

	for (int s = 0; s < 4; s++)
		if (h->has_group[s] &&
		    h5attr_string(h->groups[s].d_features, "dtype", dt))
			return h5_fail(h, "write the attributes");
	return 0;
}

/* ------------------------------------------------------------------ */

static void close_group(struct group *g)
{
	hid_t *ids[] = { &g->d_features, &g->d_label, &g->d_clip,
			 &g->d_segment, &g->d_offset, &g->gid };

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		if (*ids[i] >= 0)
			H5Oclose(*ids[i]);
		*ids[i] = NO_ID;
	}
	free(g->features);
	free(g->label);
	free(g->clip);
	free(g->segment);
	free(g->offset);
	g->features = NULL;
	g->label = g->clip = g->segment = NULL;
	g->offset = NULL;
}

/* Closes every object, reporting failures (data is flushed on close). */
static int close_groups(h5out *h)
{
	int ret = 0;

	for (int s = 0; s < 4; s++) {
		struct group *g = &h->groups[s];
		hid_t *ids[] = { &g->d_features, &g->d_label, &g->d_clip,
				 &g->d_segment, &g->d_offset, &g->gid };

		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			if (*ids[i] >= 0 && H5Oclose(*ids[i]) < 0)
				ret = -1;
			*ids[i] = NO_ID;
		}
	}
	return ret ? h5_fail(h, "write rows") : 0;
}

/* Every clip index below the announced count (or the highest seen) must
 * have appeared, as rows or as a skipped input: a gap means a stage lost
 * a clip, and a dataset missing clips must not look complete. */
static int check_clips(h5out *h)
{
	uint64_t n = h->n_clips, missing = 0, first = 0;

	if (h->o.clips_expected > n)
		n = h->o.clips_expected;
	for (uint64_t i = 0; i < n; i++) {
		if (i < h->n_clips && h->clips[i].seen)
			continue;
		if (!missing++)
			first = i;
	}
	if (!missing)
		return 0;
	prog_err("clip %" PRIu64 " (and %" PRIu64 " more) of the %" PRIu64
		 " clips in the stream never appeared, neither as rows nor "
		 "as a skipped input: not writing an incomplete '%s'", first,
		 missing - 1, n, h->name);
	return -1;
}

int h5out_finish(h5out *h, const rec_header *hdr)
{
	double t0 = prog_now();
	int ret = -1;

	if (check_clips(h))
		goto out;
	if (!h->shape_known && set_shape(h, NULL))
		goto out;
	for (int s = 0; s < 4; s++)
		if (h->has_group[s] && flush_group(h, &h->groups[s], 1))
			goto out;
	if (write_labels(h, hdr) || write_clips(h) || write_skipped(h) ||
	    write_dtype_attrs(h) || write_root_attrs(h, hdr) ||
	    close_groups(h))
		goto out;
	if (H5Tclose(h->ftype) < 0)
		goto out;
	h->ftype = NO_ID;
	if (H5Fclose(h->file) < 0) {
		h->file = NO_ID;
		h5_fail(h, "write the file");
		goto out;
	}
	h->file = NO_ID;
	ret = 0;
out:
	h->t_write += prog_now() - t0;
	return ret;
}

static int no_file_locking(hid_t fapl)
{
#if H5_VERSION_GE(1, 10, 7)
	return H5Pset_file_locking(fapl, 0, 1) < 0 ? -1 : 0;
#else
	(void)fapl; /* older libraries lock; HDF5_USE_FILE_LOCKING=FALSE */
	return 0;
#endif
}

static hid_t create_file(const char *path)
{
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	hid_t f = NO_ID;

	/* the 1.8 file format: read by every HDF5 since 2008, and it stores
	 * large attribute sets (a long label table) densely; our temporary
	 * file is private, so no file locking (which NFS may refuse) */
	if (fcpl >= 0 && fapl >= 0 &&
	    H5Pset_obj_track_times(fcpl, 0) >= 0 &&
	    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) >= 0 &&
	    no_file_locking(fapl) == 0)
		f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
	if (fcpl >= 0)
		H5Pclose(fcpl);
	if (fapl >= 0)
		H5Pclose(fapl);
	return f;
}

int h5out_create(h5out **out, const char *path, const char *name,
		 const struct h5out_opts *o)
{
	h5out *h = calloc(1, sizeof(*h));

	*out = h;
	if (!h) {
		prog_err("out of memory");
		return -1;
	}
	h->o = *o;
	h->name = name;
	H5Eset_auto2(H5E_DEFAULT, record_error, NULL);
	h->file = h->ftype = NO_ID;
	for (int s = 0; s < 4; s++) {
		struct group *g = &h->groups[s];

		g->gid = g->d_features = g->d_label = g->d_clip = NO_ID;
		g->d_segment = g->d_offset = NO_ID;
	}
	h->ftype = element_type(o->dtype);
	if (h->ftype < 0)
		return h5_fail(h, "make the element type");
	h->file = create_file(path);
	if (h->file < 0)
		return h5_fail(h, "create the file");
	if (o->splits)
		return make_group(h, REC_SPLIT_TRAINING) ||
		       make_group(h, REC_SPLIT_VALIDATION) ||
		       make_group(h, REC_SPLIT_TESTING) ? -1 : 0;
	return make_group(h, REC_SPLIT_NONE);
}

void h5out_close(h5out *h)
{
	if (!h)
		return;
	for (int s = 0; s < 4; s++)
		close_group(&h->groups[s]);
	if (h->ftype >= 0)
		H5Tclose(h->ftype);
	if (h->file >= 0)
		H5Fclose(h->file);
	H5Eclear2(H5E_DEFAULT);
	free(h->first_key);
	free(h->clips);
	free(h->skips);
	free(h->strings.p);
	free(h);
}

void h5out_counts(const h5out *h, struct h5out_counts *c)
{
	memset(c, 0, sizeof(*c));
	for (int s = 0; s < 4; s++) {
		c->rows[s] = h->groups[s].rows + h->groups[s].n;
		c->has_group[s] = h->has_group[s];
	}
	c->clips = h->n_clips;
	c->clips_seen = h->clips_seen;
	c->skipped = h->n_skips;
}

double h5out_write_time(const h5out *h)
{
	return h->t_write;
}
