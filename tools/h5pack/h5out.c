/*
 * h5out.c - writes the melpipe HDF5 layout specified in formats/hdf5.md.
 *
 * Rows go to a per-group memory buffer of one features chunk and are
 * appended with one H5Dwrite per dataset when it is full, so the library
 * sees large writes of complete chunks instead of millions of row writes.
 * The /clips and /skipped tables are written the same way as the stream
 * goes, a chunk of rows at a time.
 *
 * Compressed, the full chunks of features are shuffled and compressed in
 * worker threads (chunkpool.c) and written as they are with
 * H5Dwrite_chunk(): the library alone would compress them one at a time
 * in this thread. The last, partial chunk of a group and the small
 * per-row columns go through the library's filters.
 *
 * Memory does not grow with the stream: the buffers have fixed sizes, and
 * so do the library's caches (a chunk cache per dataset sized to what it
 * needs, a fixed metadata cache, bounded free lists). What the process
 * holds is a function of the options and the row shape only: about
 * 20 MiB for 1 MiB chunks in four groups, 35 MiB compressed (whose
 * column caches fill up to their size as a group's first chunks fill),
 * plus the compression threads' chunks in flight (16 of 1 MiB, each with
 * its output) and a chunk and a compressor each: 60 MiB in all with 2
 * threads, 90 MiB with 16.
 * Nothing is allocated per record.
 */
#include "h5out.h"

#include <errno.h>
#include <hdf5.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "chunkpool.h"
#include "h5attr.h"
#include "zstd_filter.h"

#define FORMAT_VERSION 1
#define MAX_CHUNK_ROWS (1u << 20) /* rows of a features chunk at most */
#define COLUMN_CHUNK 65536u     /* rows per chunk of the per-row columns */
#define TABLE_CHUNK 4096u       /* rows per chunk (and write) of a table */
#define TABLE_TEXT (1u << 20)   /* text (paths, reasons) buffered a table */
#define TABLE_MAXCOL 5
#define METADATA_CACHE (512u << 10) /* bytes of metadata cache */
#define POOL_DEPTH 16u          /* compressed chunks in flight at most */
#define POOL_BYTES (64u << 20)  /* and their buffers' bytes at most */
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

/* One column of a table and its block of rows waiting to be written. */
struct column {
	const char *name;
	hid_t type;          /* in the file (owned) */
	hid_t mtype;         /* in memory: type, or a predefined type */
	size_t size;         /* bytes of an element in memory */
	hid_t d;
	unsigned char *buf;  /* TABLE_CHUNK elements */
};

/* /clips or /skipped, written TABLE_CHUNK rows at a time as the stream
 * goes. String columns point into text, which holds the buffered rows'
 * strings and is emptied by each write. */
struct table {
	const char *name;
	hid_t gid;
	struct column col[TABLE_MAXCOL];
	int ncol;
	size_t n;            /* rows buffered */
	uint64_t rows;       /* rows in the file */
	char *text;
	size_t text_len, text_cap;
};

enum { CLIP_PATH, CLIP_LABEL, CLIP_SPLIT, CLIP_SAMPLES, CLIP_RATE };
enum { SKIP_PATH, SKIP_REASON, SKIP_CLIP };

struct h5out {
	struct h5out_opts o;
	const char *name;
	hid_t file;
	hid_t dxpl;           /* transfer properties of every write */
	hid_t ftype;          /* element type of features, file = memory */
	struct group groups[4];
	int has_group[4];

	int shape_known;
	uint32_t dim0, dim1;  /* of the first row */
	int rank;             /* of features: 3, or 2 for mono audio */
	size_t row_bytes;
	hsize_t chunk_rows;
	char *first_key;      /* names the first row in shape errors */

	struct table clips, skipped;
	uint64_t n_clips;       /* one more than the highest clip index */
	uint64_t clips_seen;
	uint64_t missing;       /* clip indices passed over, never to come */
	uint64_t first_missing;

	struct chunkpool *pool; /* compression threads, or NULL */
	size_t jobs;            /* its threads */
	uint64_t n_direct;      /* chunks it compressed, written */
	double t_write;
	double t_compress;
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
/*
 * A chunked dataset of rank dimensions, extendible along the first, with
 * no time stamps, chunks of chunk, a chunk cache of cache_bytes and, with
 * o, o's compression. Fill values are never written, except for strings:
 * the library refuses variable-length data with fill time never.
 */
static hid_t chunked_dataset(hid_t loc, const char *name, hid_t type,
			     int rank, const hsize_t *dims, const hsize_t *max,
			     const hsize_t *chunk, size_t cache_bytes,
			     const struct h5out_opts *o)
{
	hid_t space = H5Screate_simple(rank, dims, max);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
	hid_t d = NO_ID;

	if (space < 0 || dcpl < 0 || dapl < 0 ||
	    H5Pset_chunk(dcpl, rank, chunk) < 0 ||
	    (H5Tis_variable_str(type) <= 0 &&
	     H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0) ||
	    H5Pset_obj_track_times(dcpl, 0) < 0 ||
	    (o && set_compression(dcpl, o) < 0) ||
	    H5Pset_chunk_cache(dapl, 17, cache_bytes, 1.0) < 0)
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

static hid_t row_dataset(h5out *h, hid_t loc, const char *name, hid_t type,
			 int rank, const uint32_t *row_dims,
			 hsize_t chunk_rows, size_t cache_bytes)
{
	hsize_t dims[3] = { 0 }, max[3] = { H5S_UNLIMITED }, chunk[3];

	chunk[0] = chunk_rows;
	for (int i = 1; i < rank; i++) {
		dims[i] = row_dims[i - 1];
		max[i] = dims[i] ? dims[i] : H5S_UNLIMITED;
		chunk[i] = dims[i] ? dims[i] : 1;
	}
	return chunked_dataset(loc, name, type, rank, dims, max, chunk,
			       cache_bytes, &h->o);
}

static int alloc_buffers(h5out *h, struct group *g)
{
	/* One chunk of rows: with whole chunks a write goes straight to the
	 * file, and more only costs memory (eight chunks a write were no
	 * faster, with or without compression) */
	size_t cap = (size_t)h->chunk_rows;

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
 * total: the group's row count if known, else 0.
 *
 * Chunk caches: features are written in whole chunks (only the group's
 * last chunk is partial, and written once), so uncompressed they go
 * straight to the file, uncached; compressed, a cache of one chunk is a
 * fifth faster (the library fills an uncached chunk before it overwrites
 * it). A write of the per-row columns ends inside one of their chunks;
 * uncompressed, the next write puts its rows beside them in the file,
 * uncached too. Compressed, the chunk must be whole to be compressed
 * once: each column's cache holds that one chunk until it is complete.
 * (A cache that fills as the rows come would make the memory held depend
 * on how far a group got: the small validation group fills its first
 * chunk only after some 80,000 clips.) */
static int make_row_datasets(h5out *h, struct group *g, hsize_t total)
{
	uint32_t row[2] = { h->dim0, h->dim1 };
	hsize_t rows = h->chunk_rows, col = COLUMN_CHUNK;
	size_t cf, c4, c8;

	if (total) {
		rows = rows < total ? rows : total;
		col = col < total ? col : total;
	}
	cf = (size_t)rows * h->row_bytes;
	c4 = (size_t)col * 4;
	c8 = (size_t)col * 8;
	if (h->o.compress == H5OUT_NONE)
		cf = c4 = c8 = 0;
	g->d_features = row_dataset(h, g->gid, "features", h->ftype, h->rank,
				    row, rows, cf);
	g->d_label = row_dataset(h, g->gid, "label", H5T_STD_I32LE, 1, row,
				 col, c4);
	g->d_clip = row_dataset(h, g->gid, "clip", H5T_STD_I32LE, 1, row,
				col, c4);
	g->d_segment = row_dataset(h, g->gid, "segment", H5T_STD_I32LE, 1,
				   row, col, c4);
	g->d_offset = row_dataset(h, g->gid, "offset", H5T_STD_I64LE, 1, row,
				  col, c8);
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
	/* tiny rows: the per-row columns would outweigh the features */
	if (h->chunk_rows > MAX_CHUNK_ROWS)
		h->chunk_rows = MAX_CHUNK_ROWS;
	if (it) {
		h->first_key = strndup(it->key, it->key_len);
		if (!h->first_key)
			return oom(h);
	}
	if (h->o.compress != H5OUT_NONE && h->row_bytes &&
	    start_pool(h) < 0)
		return -1;
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
static int drain(h5out *h)
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
	/* rank 2 (audio): the library reads only { rows, dim0 } */
	hsize_t dims[3] = { g->rows + g->n, h->dim0, h->dim1 };

	if (H5Dset_extent(g->d_features, dims) < 0)
		return h5_fail(h, "write rows");
	while (chunkpool_full(h->pool))
		if (write_oldest(h))
			return -1;
	chunkpool_submit(h->pool, &g->features, g->n * h->row_bytes,
			 (int)(g - h->groups), g->rows);
	return 0;
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
	if (h->pool && !final && g->n == g->cap) {
		/* it names what failed itself */
		if (submit_chunk(h, g)) {
			h->t_write += prog_now() - t0;
			return -1;
		}
		err = 0;
	} else {
		err = append(h, g->d_features, h->ftype, h->rank, g->rows,
			     g->n, g->features);
	}
	err = err ||
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

/* ------------------------------------------------------------------ */
/* Tables: /labels at the end; /clips and /skipped as the stream goes */

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

static int write_labels(h5out *h, const rec_header *hdr)
{
	size_t n = rec_header_count(hdr, "label");
	const char **v = malloc((n ? n : 1) * sizeof(*v));
	hid_t t = h5attr_utf8_type();
	int ret = -1;

	if (!v) {
		oom(h);
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

static int table_init(h5out *h, struct table *t, int skipped)
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
				   H5T_NATIVE_INT32, 4);
	if (!err)
		return 0;
	for (int i = 0; i < t->ncol; i++)
		if (!t->col[i].buf)
			return oom(h);
	return h5_fail(h, "make the tables");
}

/* Closes what is open without reporting; a failed table_init() too. */
static void table_free(struct table *t)
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
static int table_close(h5out *h, struct table *t)
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
static int table_flush(h5out *h, struct table *t, int final)
{
	double t0 = prog_now();
	int err = 0;

	if (t->gid < 0 && table_make(h, t, final))
		return -1;
	for (int i = 0; i < t->ncol && t->n && !err; i++)
		err = append(h, t->col[i].d, t->col[i].mtype, 1, t->rows, t->n,
			     t->col[i].buf);
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
		return oom(h);
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

	if (table_reserve(h, t, (size_t)it->key_len + 1))
		return -1;
	path = table_text(t, it->key, it->key_len);
	table_put(t, CLIP_PATH, &path);
	table_put(t, CLIP_LABEL, &it->label);
	table_put(t, CLIP_SPLIT, &split);
	table_put(t, CLIP_SAMPLES, &n_samples);
	table_put(t, CLIP_RATE, &rate);
	return table_next(h, t);
}

/* The record's clip gets its row of /clips from the first record of it.
 * Clips come in increasing order (the reader makes sure), so a clip is
 * new when its index is above the last one's, and an index passed over
 * is a clip that can no longer come: the file will be refused at the end
 * (check_clips()), and /clips is not written on past the gap. */
static int note_clip(h5out *h, const rec_item *it)
{
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
	if (it->clip + 1 < h->n_clips) {
		prog_err("'%.*s': clip index %" PRIu64 " after %" PRIu64
			 " (records must be in clip order)", (int)it->key_len,
			 it->key, it->clip, h->n_clips - 1);
		return -1;
	}
	if (it->clip + 1 == h->n_clips)
		return 0;
	if (it->clip > h->n_clips) {
		if (!h->missing)
			h->first_missing = h->n_clips;
		h->missing += it->clip - h->n_clips;
	}
	h->n_clips = it->clip + 1;
	h->clips_seen++;
	return h->missing ? 0 : clip_row(h, it);
}

static int add_skipped(h5out *h, const rec_item *it)
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
	uint64_t n = h->n_clips, missing = h->missing;
	uint64_t first = h->first_missing;

	if (h->o.clips_expected > n) {
		n = h->o.clips_expected;
		if (!missing)
			first = h->n_clips;
		missing += n - h->n_clips;
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
	if (drain(h))
		goto out;
	h->t_compress = chunkpool_work_time(h->pool);
	chunkpool_stop(h->pool);
	h->pool = NULL;
	if (write_labels(h, hdr) || table_flush(h, &h->clips, 1) ||
	    table_flush(h, &h->skipped, 1) || write_dtype_attrs(h) ||
	    write_root_attrs(h, hdr) || close_groups(h) ||
	    table_close(h, &h->clips) || table_close(h, &h->skipped))
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

/* The metadata cache (object headers, chunk indexes, the global heap
 * collections that hold the strings of /clips and /skipped) at a fixed
 * size. The library's adaptive default starts at 2 MiB and grows up to
 * 32 MiB when its hit rate falls, and a writer that never reads back has
 * a low one: it filled with heap collections of strings already written.
 * What an append touches (a dataset's header and its chunk index path,
 * for some 30 datasets) fits in 512 KiB; 256 KiB was as fast. */
static int fixed_metadata_cache(hid_t fapl)
{
	H5AC_cache_config_t c = { .version = H5AC__CURR_CACHE_CONFIG_VERSION };

	if (H5Pget_mdc_config(fapl, &c) < 0)
		return -1;
	c.set_initial_size = 1;
	c.initial_size = c.min_size = c.max_size = METADATA_CACHE;
	c.incr_mode = H5C_incr__off;
	c.flash_incr_mode = H5C_flash_incr__off;
	c.decr_mode = H5C_decr__off;
	return H5Pset_mdc_config(fapl, &c) < 0 ? -1 : 0;
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
	    fixed_metadata_cache(fapl) == 0 && no_file_locking(fapl) == 0)
		f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
	if (fcpl >= 0)
		H5Pclose(fcpl);
	if (fapl >= 0)
		H5Pclose(fapl);
	return f;
}

/* Only strings are converted on the way to the file (into references to
 * the global heap), a table's chunk of them at a time: a conversion
 * buffer of that size does instead of the library's 1 MiB, which it would
 * allocate and clear for every write of strings. */
static hid_t transfer_plist(void)
{
	hid_t p = H5Pcreate(H5P_DATASET_XFER);

	if (p >= 0 && H5Pset_buffer(p, TABLE_CHUNK * 16, NULL, NULL) < 0) {
		H5Pclose(p);
		p = NO_ID;
	}
	return p;
}

/* The library keeps freed blocks on free lists for reuse, by default up
 * to 21 MiB of them, filling them as a run goes; a small reserve is as
 * fast for h5pack (measured) and bounds what the library can hold.
 * (Process-wide: h5pack writes one file.) */
static void limit_free_lists(void)
{
	H5set_free_list_limits(1 << 20, 64 << 10, 1 << 20, 256 << 10,
			       1 << 20, 256 << 10);
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
	limit_free_lists();
	h->file = h->ftype = h->dxpl = NO_ID;
	for (int s = 0; s < 4; s++) {
		struct group *g = &h->groups[s];

		g->gid = g->d_features = g->d_label = g->d_clip = NO_ID;
		g->d_segment = g->d_offset = NO_ID;
	}
	h->clips.gid = h->skipped.gid = NO_ID;
	h->ftype = element_type(o->dtype);
	if (h->ftype < 0)
		return h5_fail(h, "make the element type");
	h->dxpl = transfer_plist();
	if (h->dxpl < 0)
		return h5_fail(h, "make the transfer properties");
	h->file = create_file(path);
	if (h->file < 0)
		return h5_fail(h, "create the file");
	if (table_init(h, &h->clips, 0) || table_init(h, &h->skipped, 1))
		return -1;
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
	/* first: its threads may be compressing from its buffers */
	chunkpool_stop(h->pool);
	for (int s = 0; s < 4; s++)
		close_group(&h->groups[s]);
	table_free(&h->clips);
	table_free(&h->skipped);
	if (h->ftype >= 0)
		H5Tclose(h->ftype);
	if (h->dxpl >= 0)
		H5Pclose(h->dxpl);
	if (h->file >= 0)
		H5Fclose(h->file);
	H5Eclear2(H5E_DEFAULT);
	free(h->first_key);
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
	c->skipped = h->skipped.rows + h->skipped.n;
}

double h5out_write_time(const h5out *h)
{
	return h->t_write;
}

double h5out_compress_time(const h5out *h, size_t *threads,
			   uint64_t *chunks)
{
	*threads = h->jobs;
	*chunks = h->n_direct;
	return h->t_compress;
}
