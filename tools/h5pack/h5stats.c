/*
 * h5stats.c - the statistics of a split group (formats/hdf5.md,
 * Statistics): per feature (mel bin, or audio channel) the count, sum
 * and sum of squares of every stored frame, so that a reader gets the
 * mean and standard deviation without a pass over the data, and shard
 * files merge by adding them.
 *
 * Frames are counted as they go to the file: a buffer of rows or frames
 * on its way to H5Dwrite() or the compression threads, after any top_db
 * floor the rows in memory got (h5pieces.c). A ragged item's frames
 * already in the file when its floor is applied are read back and
 * rewritten (h5clamp.c), which takes them out and counts them again.
 *
 * The sums are float64 with Neumaier's compensation, value by value:
 * their error is a few units of the last place of the result, whatever
 * the number of frames or how the rows are cut into chunks, so a merge's
 * sum of the shards' sums equals a whole run's to about 1e-15.
 */
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/half.h"
#include "h5out_priv.h"

#define STATS_BLOCK 4096 /* frames' values widened at a time */

/* s += x with its rounding error kept in *c (Neumaier). */
static inline void nsum(double *s, double *c, double x)
{
	double t = *s + x;

	if (fabs(*s) >= fabs(x))
		*c += (*s - t) + x;
	else
		*c += (x - t) + *s;
	*s = t;
}

/* n values at p of the stored type, widened into out. */
static void widen(int dtype, const void *p, size_t n, double *out)
{
	const int16_t *i16 = p;
	const float *f32 = p;
	const uint16_t *u16 = p;

	switch (dtype) {
	case REC_S16:
		for (size_t i = 0; i < n; i++)
			out[i] = i16[i];
		break;
	case REC_F32:
		for (size_t i = 0; i < n; i++)
			out[i] = f32[i];
		break;
	case REC_F16:
		for (size_t i = 0; i < n; i++)
			out[i] = half_to_f32(u16[i]);
		break;
	default:
		for (size_t i = 0; i < n; i++)
			out[i] = bf16_to_f32(u16[i]);
	}
}

/* The features a group's statistics are per: n_mels of a features row,
 * the channels of audio (1 for mono); 0 before any row fixed the shape. */
static uint32_t stats_width(const h5out *h)
{
	if (!h->shape_known)
		return 0;
	if (h->o.ragged)
		return h->fdim[0];
	return h->o.kind == REC_T_AUDIO ? h->dim1 : h->dim0;
}

int stats_alloc(h5out *h, struct group *g)
{
	struct gstats *st = &g->st;

	st->width = stats_width(h);
	st->v = calloc(4 * (size_t)(st->width ? st->width : 1),
		       sizeof(double));
	if (!st->v)
		return h5_oom(h);
	st->sum = st->v;
	st->sumc = st->sum + st->width;
	st->sq = st->sumc + st->width;
	st->sqc = st->sq + st->width;
	return 0;
}

void stats_free(struct group *g)
{
	free(g->st.v);
	memset(&g->st, 0, sizeof(g->st));
}

/* n values of bin b (sign 1: added, -1: taken out). */
static void add_bin(struct gstats *st, size_t b, const double *x, size_t n,
		    int sign)
{
	for (size_t i = 0; i < n; i++) {
		nsum(&st->sum[b], &st->sumc[b], sign * x[i]);
		nsum(&st->sq[b], &st->sqc[b], x[i] * x[i] * sign);
	}
}

/* n frames [frame][width] (values of one frame together). */
static void add_interleaved(struct gstats *st, int dtype, const void *p,
			    size_t n, int sign)
{
	size_t esize = rec_dtype_size(dtype), total = n * st->width;
	double x[STATS_BLOCK];

	for (size_t done = 0, k, b = 0; done < total; done += k) {
		k = total - done < STATS_BLOCK ? total - done : STATS_BLOCK;
		widen(dtype, (const unsigned char *)p + done * esize, k, x);
		for (size_t i = 0; i < k; i++) {
			nsum(&st->sum[b], &st->sumc[b], sign * x[i]);
			nsum(&st->sq[b], &st->sqc[b], x[i] * x[i] * sign);
			b = b + 1 == st->width ? 0 : b + 1;
		}
	}
	st->frames += sign > 0 ? (int64_t)n : -(int64_t)n;
}

/* One features row [width][len] (values of one bin together). */
static void add_planar(struct gstats *st, int dtype, const void *p,
		       size_t len)
{
	size_t esize = rec_dtype_size(dtype);
	double x[STATS_BLOCK];

	for (size_t b = 0; b < st->width; b++)
		for (size_t done = 0, k; done < len; done += k) {
			k = len - done < STATS_BLOCK ? len - done
						     : STATS_BLOCK;
			widen(dtype, (const unsigned char *)p +
			      (b * len + done) * esize, k, x);
			add_bin(st, b, x, k, 1);
		}
	st->frames += (int64_t)len;
}

void stats_rows(h5out *h, struct group *g, const void *p, size_t rows)
{
	struct gstats *st = &g->st;

	if (h->o.stats_given || !st->width || !rows)
		return;
	if (h->o.ragged) { /* rows are frames [width] */
		add_interleaved(st, h->o.dtype, p, rows, 1);
	} else if (h->o.kind == REC_T_AUDIO) { /* [n_samples][channels] */
		add_interleaved(st, h->o.dtype, p, rows * h->dim0, 1);
	} else { /* features rows [n_mels][n_frames] */
		for (size_t r = 0; r < rows; r++)
			add_planar(st, h->o.dtype, (const unsigned char *)p +
				   r * h->row_bytes, h->dim1);
	}
}

void stats_frames(h5out *h, struct group *g, const void *p, size_t n,
		  int sign)
{
	if (h->o.stats_given || !g->st.width)
		return;
	add_interleaved(&g->st, h->o.dtype, p, n, sign);
}

int h5out_add_stats(h5out *h, int split, uint32_t width, int64_t count,
		    const double *sum, const double *sumsq)
{
	struct gstats *st = &h->groups[split].st;

	if (!count)
		return 0;
	if (!h->has_group[split] || width != st->width)
		return -1;
	for (uint32_t b = 0; b < width; b++) {
		nsum(&st->sum[b], &st->sumc[b], sum[b]);
		nsum(&st->sq[b], &st->sqc[b], sumsq[b]);
	}
	st->frames += count;
	return 0;
}

/* A contiguous 1-D dataset of n elements, no time stamps. */
static int vector(h5out *h, hid_t loc, const char *name, hid_t ftype,
		  hid_t mtype, size_t n, const void *buf)
{
	hsize_t dims[1] = { n };
	hid_t space = H5Screate_simple(1, dims, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	hid_t d = NO_ID;
	int ret = -1;

	if (space >= 0 && dcpl >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0)
		d = H5Dcreate2(loc, name, ftype, space, H5P_DEFAULT, dcpl,
			       H5P_DEFAULT);
	if (d >= 0 && (!n || H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, h->dxpl,
				      buf) >= 0))
		ret = 0;
	if (d >= 0 && H5Dclose(d) < 0)
		ret = -1;
	if (space >= 0)
		H5Sclose(space);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	return ret;
}

int stats_write(h5out *h, struct group *g)
{
	struct gstats *st = &g->st;
	size_t w = st->width;
	int64_t *count = malloc((w ? w : 1) * sizeof(*count));
	double *sum = malloc((w ? w : 1) * 2 * sizeof(*sum));
	int ret = -1;

	if (!count || !sum) {
		h5_oom(h);
		goto out;
	}
	for (size_t b = 0; b < w; b++) {
		count[b] = st->frames;
		sum[b] = st->sum[b] + st->sumc[b];
		sum[w + b] = st->sq[b] + st->sqc[b];
	}
	if (vector(h, g->gid, "stats_count", H5T_STD_I64LE, H5T_NATIVE_INT64,
		   w, count) ||
	    vector(h, g->gid, "stats_sum", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
		   w, sum) ||
	    vector(h, g->gid, "stats_sumsq", H5T_IEEE_F64LE,
		   H5T_NATIVE_DOUBLE, w, sum + w))
		h5_fail(h, "write the statistics");
	else
		ret = 0;
out:
	free(count);
	free(sum);
	return ret;
}
