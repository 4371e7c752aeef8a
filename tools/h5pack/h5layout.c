/*
 * h5layout.c - the split groups and their datasets: element types, chunk
 * shapes, compression filters and chunk caches; made when needed, closed
 * at the end.
 */
#include <hdf5.h>
#include <stdlib.h>

#include "zstd_filter.h"
#include "h5out_priv.h"

#define COLUMN_CHUNK 65536u     /* rows per chunk of the per-row columns */
#define ITEM_BUFFER 4096u       /* ragged: their rows buffered a group */

static const char *const group_names[4] = {
	"all", "training", "validation", "testing"
};

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

hid_t element_type(int dtype)
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

/*
 * A chunked dataset of rank dimensions, extendible along the first, with
 * no time stamps, chunks of chunk, a chunk cache of cache_bytes and, with
 * o, o's compression. Fill values are never written, except for strings:
 * the library refuses variable-length data with fill time never.
 */
hid_t chunked_dataset(hid_t loc, const char *name, hid_t type, int rank,
		      const hsize_t *dims, const hsize_t *max,
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

/* An extendible dataset of rank dims, 0 rows so far; row_dims are the
 * dimensions after the first (0 = not known yet, then extendible too). */
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

/* Rows of a chunk of the per-row columns: no more than the stream can
 * have, as its header tells. */
static hsize_t column_chunk(const h5out *h)
{
	uint64_t most = h->o.rows_expected;

	return most && most < COLUMN_CHUNK ? most : COLUMN_CHUNK;
}

int alloc_buffers(h5out *h, struct group *g)
{
	/* One chunk of rows: with whole chunks a write goes straight to the
	 * file, and more only costs memory (eight chunks a write were no
	 * faster, with or without compression). Ragged, the per-row columns
	 * are written apart, a fixed number of rows at a time: the memory
	 * held does not depend on the stream, and the column caches (the
	 * fixed layout's) complete their chunks. */
	size_t cap = (size_t)h->chunk_rows;
	size_t icap = h->o.ragged ? ITEM_BUFFER : cap;

	g->cap = cap;
	g->features = malloc(cap * (h->row_bytes ? h->row_bytes : 1));
	g->label = malloc(icap * sizeof(int32_t));
	g->clip = malloc(icap * sizeof(int32_t));
	g->segment = malloc(icap * sizeof(int32_t));
	g->offset = malloc(icap * sizeof(int64_t));
	if (!g->features || !g->label || !g->clip || !g->segment ||
	    !g->offset)
		return h5_oom(h);
	if (stats_alloc(h, g))
		return -1;
	if (!h->o.ragged)
		return 0;
	g->icap = icap;
	g->start = malloc(icap * sizeof(int64_t));
	g->n_frames = malloc(icap * sizeof(int32_t));
	if (!g->start || !g->n_frames)
		return h5_oom(h);
	return 0;
}

/* The datasets are made at a group's first write: when that is its last
 * one too, the group's size is known and a small group gets chunks no
 * bigger than itself instead of a mostly empty 1 MiB chunk per dataset.
 * total: the group's row count if known, else 0. The per-row columns'
 * chunks are no bigger than the rows the header lets the stream have
 * either: a group that fills a few features chunks would otherwise get
 * 65,536-row chunks of columns, mostly padding in a small file.
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
int make_row_datasets(h5out *h, struct group *g, hsize_t total,
		      hsize_t items)
{
	const uint32_t *row = h->fdim;
	hsize_t rows = h->chunk_rows, col = column_chunk(h);
	size_t cf, c4, c8;

	if (!write_bg_owner(h))
		return -1;
	if (total)
		rows = rows < total ? rows : total;
	if (items)
		col = col < items ? col : items;
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
	if (!h->o.ragged)
		return 0;
	g->d_start = row_dataset(h, g->gid, "start", H5T_STD_I64LE, 1, row,
				 col, c8);
	g->d_n_frames = row_dataset(h, g->gid, "n_frames", H5T_STD_I32LE, 1,
				    row, col, c4);
	if (g->d_start < 0 || g->d_n_frames < 0)
		return h5_fail(h, "create the row datasets");
	return 0;
}

hid_t new_group(h5out *h, const char *name)
{
	hid_t gcpl, g = NO_ID;

	if (!write_bg_owner(h))
		return NO_ID;
	gcpl = H5Pcreate(H5P_GROUP_CREATE);
	if (gcpl >= 0 && H5Pset_obj_track_times(gcpl, 0) >= 0)
		g = H5Gcreate2(h->file, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
	if (gcpl >= 0)
		H5Pclose(gcpl);
	if (g < 0)
		h5_fail(h, "create a group");
	return g;
}

int make_group(h5out *h, int split)
{
	struct group *g = &h->groups[split];

	if (write_bg_wait(h))
		return -1;
	g->gid = new_group(h, group_names[split]);
	if (g->gid < 0)
		return -1;
	h->has_group[split] = 1;
	if (h->shape_known)
		return alloc_buffers(h, g);
	return 0;
}

hid_t split_enum_type(void)
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

void close_group(struct group *g)
{
	hid_t *ids[] = { &g->d_features, &g->d_label, &g->d_clip,
			 &g->d_segment, &g->d_offset, &g->d_start,
			 &g->d_n_frames, &g->gid };

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
	free(g->start);
	free(g->n_frames);
	stats_free(g);
	g->features = NULL;
	g->label = g->clip = g->segment = g->n_frames = NULL;
	g->offset = g->start = NULL;
}

/* Closes every object, reporting failures (data is flushed on close). */
int close_groups(h5out *h)
{
	int ret = 0;

	for (int s = 0; s < 4; s++) {
		struct group *g = &h->groups[s];
		hid_t *ids[] = { &g->d_features, &g->d_label, &g->d_clip,
				 &g->d_segment, &g->d_offset, &g->d_start,
				 &g->d_n_frames, &g->gid };

		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			if (*ids[i] >= 0 && H5Oclose(*ids[i]) < 0)
				ret = -1;
			*ids[i] = NO_ID;
		}
	}
	return ret ? h5_fail(h, "write rows") : 0;
}
