/*
 * h5shard.c - a shard file read for h5pack --merge: its header, and its
 * tables and row groups a block of rows at a time.
 *
 * Each dataset is read in blocks of its own chunk, aligned on chunk
 * boundaries, so that every read covers whole chunks: the library reads
 * (and decompresses) each chunk once, straight into our buffer, and no
 * chunk cache is needed. A shard is read from start to end, once. Memory
 * is a block of each dataset in use: a features chunk (about 1 MiB) and
 * the per-row columns' chunks (at most 65536 rows) a group, 4096 rows of
 * each table.
 */
#include <hdf5.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "h5attr.h"
#include "h5merge.h"

#define NO_ID ((hid_t)-1)

static const char *const group_names[4] = {
	"all", "training", "validation", "testing"
};

static hid_t open_dataset(hid_t loc, const char *path)
{
	hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
	hid_t d = NO_ID;

	/* whole chunks are read: no cache */
	if (dapl >= 0 && H5Pset_chunk_cache(dapl, 0, 0, 1.0) >= 0)
		d = H5Dopen2(loc, path, dapl);
	if (dapl >= 0)
		H5Pclose(dapl);
	return d;
}

/* Opens the dataset path of the file as a slab read into mtype (taken
 * over; NO_ID: the dataset's own type, so nothing is converted). */
static int slab_open(const char *file, hid_t loc, struct slab *s,
		     const char *path, hid_t mtype)
{
	hid_t space = NO_ID, dcpl = NO_ID;
	hsize_t chunk[3] = { 0 };
	int ret = -1;

	memset(s, 0, sizeof(*s));
	snprintf(s->what, sizeof(s->what), "%s", path);
	s->d = open_dataset(loc, path);
	s->mtype = mtype >= 0 ? mtype : s->d >= 0 ? H5Dget_type(s->d) : NO_ID;
	if (s->d < 0 || s->mtype < 0)
		goto out;
	space = H5Dget_space(s->d);
	dcpl = H5Dget_create_plist(s->d);
	s->rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
	if (s->rank < 1 || s->rank > 3 ||
	    H5Sget_simple_extent_dims(space, s->dims, NULL) < 0 || dcpl < 0)
		goto out;
	s->block = 4096;
	if (H5Pget_layout(dcpl) == H5D_CHUNKED &&
	    H5Pget_chunk(dcpl, 3, chunk) == s->rank && chunk[0])
		s->block = chunk[0];
	s->vlen = H5Tis_variable_str(s->mtype) > 0;
	s->row_bytes = H5Tget_size(s->mtype);
	for (int i = 1; i < s->rank; i++)
		s->row_bytes *= s->dims[i];
	s->buf = malloc(s->block * (s->row_bytes ? s->row_bytes : 1));
	if (!s->buf) {
		prog_err("out of memory reading '%s'", file);
		goto fail;
	}
	ret = 0;
out:
	if (ret)
		ret = h5_fail_file(file, "read");
fail:
	if (space >= 0)
		H5Sclose(space);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	return ret;
}

/* The variable-length strings of the buffered block back to the
 * library. */
static void slab_reclaim(struct slab *s)
{
	hsize_t n = s->n;
	hid_t space;

	if (!s->vlen || !s->n)
		return;
	space = H5Screate_simple(1, &n, NULL);
	if (space >= 0) {
		H5Dvlen_reclaim(s->mtype, space, H5P_DEFAULT, s->buf);
		H5Sclose(space);
	}
	s->n = 0;
}

static void slab_close(struct slab *s)
{
	slab_reclaim(s);
	if (s->d > 0)
		H5Dclose(s->d);
	if (s->mtype > 0)
		H5Tclose(s->mtype);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* Reads the block of rows holding row. */
static int slab_read(const char *file, struct slab *s, uint64_t row)
{
	hsize_t start[3] = { 0 }, count[3];
	hid_t fspace = NO_ID, mspace = NO_ID;
	int ret = -1;

	slab_reclaim(s);
	start[0] = row / s->block * s->block;
	count[0] = s->dims[0] - start[0] < s->block ? s->dims[0] - start[0]
						    : s->block;
	for (int i = 1; i < s->rank; i++)
		count[i] = s->dims[i];
	fspace = H5Dget_space(s->d);
	mspace = H5Screate_simple(s->rank, count, NULL);
	if (fspace >= 0 && mspace >= 0 &&
	    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count,
				NULL) >= 0 &&
	    H5Dread(s->d, s->mtype, mspace, fspace, H5P_DEFAULT, s->buf) >= 0) {
		s->lo = start[0];
		s->n = (size_t)count[0];
		ret = 0;
	}
	if (fspace >= 0)
		H5Sclose(fspace);
	if (mspace >= 0)
		H5Sclose(mspace);
	if (ret) {
		char what[128];

		snprintf(what, sizeof(what), "read %s of", s->what);
		return h5_fail_file(file, what);
	}
	return 0;
}

const void *slab_row(const char *file, struct slab *s, uint64_t row)
{
	if (row >= s->dims[0]) {
		prog_err("'%s': %s has %" PRIu64 " %s, row %" PRIu64
			 " wanted: a damaged shard file", file, s->what,
			 (uint64_t)s->dims[0],
			 prog_plural(s->dims[0], "row", "rows"), row);
		return NULL;
	}
	if ((row < s->lo || row >= s->lo + s->n) && slab_read(file, s, row))
		return NULL;
	return s->buf + (row - s->lo) * s->row_bytes;
}

/* The root attribute stream_header as a header. */
static int read_header(struct shard_file *f)
{
	hid_t a = NO_ID, space = NO_ID, t = h5attr_utf8_type();
	hssize_t n = -1;
	char **v = NULL;
	int ret = -1;

	if (H5Aexists(f->file, "stream_header") <= 0) {
		prog_err("'%s': no stream_header attribute: not a melpipe "
			 "dataset", f->name);
		goto done;
	}
	a = H5Aopen(f->file, "stream_header", H5P_DEFAULT);
	space = a >= 0 ? H5Aget_space(a) : NO_ID;
	n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
	if (t < 0 || n < 0 || !(v = calloc((size_t)n + 1, sizeof(*v))) ||
	    H5Aread(a, t, v) < 0) {
		h5_fail_file(f->name, "read the attributes of");
		goto done;
	}
	f->hdr = rec_header_new();
	for (hssize_t i = 0; f->hdr && i < n; i++) {
		char *eq = v[i] ? strchr(v[i], '=') : NULL;

		if (!eq) {
			prog_err("'%s': stream_header entry '%s' is not "
				 "key=value", f->name, v[i] ? v[i] : "");
			goto done;
		}
		*eq = '\0';
		if (rec_header_add(f->hdr, v[i], eq + 1))
			break;
		*eq = '=';
	}
	if (!f->hdr || rec_header_len(f->hdr) != (size_t)n)
		prog_err("out of memory reading '%s'", f->name);
	else
		ret = 0;
done:
	if (v && space >= 0)
		H5Dvlen_reclaim(t, space, H5P_DEFAULT, v);
	free(v);
	if (t >= 0)
		H5Tclose(t);
	if (space >= 0)
		H5Sclose(space);
	if (a >= 0)
		H5Aclose(a);
	return ret;
}

static int check_version(const struct shard_file *f)
{
	hid_t a;
	int v = 0;

	if (H5Aexists(f->file, "melpipe_hdf5_version") <= 0) {
		prog_err("'%s': no melpipe_hdf5_version attribute: not a "
			 "melpipe dataset", f->name);
		return -1;
	}
	a = H5Aopen(f->file, "melpipe_hdf5_version", H5P_DEFAULT);
	if (a < 0 || H5Aread(a, H5T_NATIVE_INT, &v) < 0) {
		if (a >= 0)
			H5Aclose(a);
		return h5_fail_file(f->name, "read the attributes of");
	}
	H5Aclose(a);
	if (v != 2) {
		prog_err("'%s': melpipe_hdf5_version is %d; h5pack --merge "
			 "reads version 2", f->name, v);
		return -1;
	}
	return 0;
}

/* The file's own rates and channels, when the shard has them. */
static int open_source_columns(struct shard_file *f)
{
	htri_t has = H5Lexists(f->file, "clips/source_rate", H5P_DEFAULT);

	if (has < 0)
		return h5_fail_file(f->name, "read");
	f->has_source = has > 0;
	if (!f->has_source)
		return 0;
	return slab_open(f->name, f->file, &f->c_source_rate,
			 "clips/source_rate", H5Tcopy(H5T_NATIVE_INT32)) ||
	       slab_open(f->name, f->file, &f->c_source_channels,
			 "clips/source_channels", H5Tcopy(H5T_NATIVE_INT32))
	       ? -1 : 0;
}

static int open_tables(struct shard_file *f)
{
	return open_source_columns(f) ||
	       slab_open(f->name, f->file, &f->c_path, "clips/path",
			 h5attr_utf8_type()) ||
	       slab_open(f->name, f->file, &f->c_label, "clips/label",
			 H5Tcopy(H5T_NATIVE_INT32)) ||
	       slab_open(f->name, f->file, &f->c_split, "clips/split",
			 NO_ID) ||
	       slab_open(f->name, f->file, &f->c_samples, "clips/n_samples",
			 H5Tcopy(H5T_NATIVE_INT64)) ||
	       slab_open(f->name, f->file, &f->c_rate, "clips/sample_rate",
			 H5Tcopy(H5T_NATIVE_INT32)) ||
	       slab_open(f->name, f->file, &f->s_path, "skipped/path",
			 h5attr_utf8_type()) ||
	       slab_open(f->name, f->file, &f->s_reason, "skipped/reason",
			 h5attr_utf8_type()) ||
	       slab_open(f->name, f->file, &f->s_clip, "skipped/clip",
			 H5Tcopy(H5T_NATIVE_INT32)) ? -1 : 0;
}

static int open_group(struct shard_file *f, int split)
{
	struct sgroup *g = &f->g[split];
	char p[7][40];
	static const char *const cols[7] = {
		"features", "label", "clip", "segment", "offset", "start",
		"n_frames"
	};
	int err;

	for (int i = 0; i < 7; i++)
		snprintf(p[i], sizeof(p[i]), "%s/%s", group_names[split],
			 cols[i]);
	g->present = 1;
	err = slab_open(f->name, f->file, &g->features, (p[0]), NO_ID) ||
	      slab_open(f->name, f->file, &g->label, (p[1]),
			H5Tcopy(H5T_NATIVE_INT32)) ||
	      slab_open(f->name, f->file, &g->clip, (p[2]),
			H5Tcopy(H5T_NATIVE_INT32)) ||
	      slab_open(f->name, f->file, &g->segment, (p[3]),
			H5Tcopy(H5T_NATIVE_INT32)) ||
	      slab_open(f->name, f->file, &g->offset, (p[4]),
			H5Tcopy(H5T_NATIVE_INT64));
	if (!err && f->ragged)
		err = slab_open(f->name, f->file, &g->start, (p[5]),
				H5Tcopy(H5T_NATIVE_INT64)) ||
		      slab_open(f->name, f->file, &g->n_frames, (p[6]),
				H5Tcopy(H5T_NATIVE_INT32));
	return err ? -1 : 0;
}

static hid_t open_file(const char *name)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	hid_t f = NO_ID;

#if H5_VERSION_GE(1, 10, 7)
	if (fapl >= 0 && H5Pset_file_locking(fapl, 0, 1) < 0) {
		H5Pclose(fapl);
		return NO_ID;
	}
#endif
	if (fapl >= 0)
		f = H5Fopen(name, H5F_ACC_RDONLY, fapl);
	if (fapl >= 0)
		H5Pclose(fapl);
	return f;
}

int shard_open(struct shard_file *f)
{
	const char *layout;

	f->file = open_file(f->name);
	if (f->file < 0)
		return h5_fail_file(f->name, "open");
	if (check_version(f) || read_header(f))
		return -1;
	layout = rec_header_get(f->hdr, "duration") ||
		 rec_header_get(f->hdr, "segment_len") ? "fixed" : "ragged";
	f->ragged = !strcmp(layout, "ragged");
	if (open_tables(f))
		return -1;
	for (int s = 0; s < 4; s++) {
		htri_t has = H5Lexists(f->file, group_names[s], H5P_DEFAULT);

		if (has < 0)
			return h5_fail_file(f->name, "read");
		if (has && open_group(f, s))
			return -1;
	}
	return 0;
}

void shard_close(struct shard_file *f)
{
	struct slab *t[] = { &f->c_path, &f->c_label, &f->c_split,
			     &f->c_samples, &f->c_rate, &f->c_source_rate,
			     &f->c_source_channels, &f->s_path,
			     &f->s_reason, &f->s_clip };

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++)
		slab_close(t[i]);
	for (int s = 0; s < 4; s++) {
		struct sgroup *g = &f->g[s];

		if (!g->present)
			continue;
		slab_close(&g->features);
		slab_close(&g->label);
		slab_close(&g->clip);
		slab_close(&g->segment);
		slab_close(&g->offset);
		slab_close(&g->start);
		slab_close(&g->n_frames);
		g->present = 0;
	}
	rec_header_free(f->hdr);
	f->hdr = NULL;
	if (f->file > 0)
		H5Fclose(f->file);
	f->file = NO_ID;
}

/* A 1-D float64 or int64 dataset of the group, read whole. */
static int read_vector(const struct shard_file *f, int split,
		       const char *name, hid_t mtype, size_t esize,
		       void **out, hsize_t *n)
{
	char path[64];
	hid_t d, space;
	int ret = -1;

	snprintf(path, sizeof(path), "%s/%s", group_names[split], name);
	if (H5Lexists(f->file, path, H5P_DEFAULT) <= 0) {
		prog_err("'%s': no %s: a shard file needs its statistics "
			 "(h5pack %s writes them)", f->name, path,
			 MELPIPE_VERSION);
		return -1;
	}
	d = H5Dopen2(f->file, path, H5P_DEFAULT);
	space = d >= 0 ? H5Dget_space(d) : NO_ID;
	if (space >= 0 && H5Sget_simple_extent_ndims(space) == 1 &&
	    H5Sget_simple_extent_dims(space, n, NULL) == 1) {
		*out = malloc(*n ? *n * esize : 1);
		if (*out && (!*n || H5Dread(d, mtype, H5S_ALL, H5S_ALL,
					    H5P_DEFAULT, *out) >= 0))
			ret = 0;
	}
	if (space >= 0)
		H5Sclose(space);
	if (d >= 0)
		H5Dclose(d);
	return ret ? h5_fail_file(f->name, "read the statistics of") : 0;
}

int shard_stats(const struct shard_file *f, int split, uint32_t *width,
		int64_t *count, double **sum, double **sumsq)
{
	int64_t *c = NULL;
	hsize_t n1 = 0, n2 = 0, n3 = 0;
	int ret = -1;

	*sum = *sumsq = NULL;
	if (read_vector(f, split, "stats_count", H5T_NATIVE_INT64, 8,
			(void **)&c, &n1) ||
	    read_vector(f, split, "stats_sum", H5T_NATIVE_DOUBLE, 8,
			(void **)sum, &n2) ||
	    read_vector(f, split, "stats_sumsq", H5T_NATIVE_DOUBLE, 8,
			(void **)sumsq, &n3))
		goto out;
	if (n1 != n2 || n1 != n3) {
		prog_err("'%s': /%s's statistics have %" PRIu64 ", %" PRIu64
			 " and %" PRIu64 " features: a damaged shard file",
			 f->name, group_names[split], (uint64_t)n1,
			 (uint64_t)n2, (uint64_t)n3);
		goto out;
	}
	*width = (uint32_t)n1;
	*count = n1 ? c[0] : 0;
	ret = 0;
out:
	free(c);
	if (ret) {
		free(*sum);
		free(*sumsq);
		*sum = *sumsq = NULL;
	}
	return ret;
}
