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
 * The sums are float64 with each addition's rounding error kept (TwoSum),
 * value by value:
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

#define STATS_FRAMES 256 /* frames converted at a time */

/* s += x with its rounding error kept in *c (Neumaier), for the few
 * additions of a merge. */
static inline void nsum(double *s, double *c, double x)
{
	double t = *s + x;

	if (fabs(*s) >= fabs(x))
		*c += (*s - t) + x;
	else
		*c += (x - t) + *s;
	*s = t;
}

/* n values at p of the stored type, contiguous, as float into out: exact
 * for every type (s16 values are integers below 2^15; f16 and bf16 are
 * narrower floats), with lib/half's bulk conversion (F16C) for f16. */
static void to_f32(int dtype, const void *p, size_t n, float *out)
{
	const int16_t *i16 = p;
	const uint16_t *u16 = p;

	switch (dtype) {
	case REC_S16:
		for (size_t i = 0; i < n; i++)
			out[i] = i16[i];
		break;
	case REC_F32:
		memcpy(out, p, n * sizeof(float));
		break;
	case REC_F16:
		half_to_f32_array(out, u16, n);
		break;
	default:
		bf16_to_f32_array(out, u16, n);
	}
}

/* (s, c) += x, c gathering the exact rounding error (Knuth's TwoSum:
 * the error Neumaier's sum keeps, without its branch, which the sign of
 * |s| - |x| makes unpredictable). */
static inline void two_sum(double *restrict s, double *restrict c, double x)
{
	double t = *s + x, z = t - *s;

	*c += (*s - (t - z)) + (x - z);
	*s = t;
}

/* Adds n frames of values, v[f * width + b] the value of bin b in frame
 * f, times sign, to each bin's sum and sum of squares, bin by bin across
 * a frame (no dependency from one value to the next).
 *
 * The squares are added plainly within the block, then the block's sum
 * into the total with its error kept: they are all of one sign, so the
 * block's rounding is at most STATS_FRAMES units of its last place, and
 * shards' sums agree with a whole run's to about 1e-14. The values are
 * added the same way when the block's sum is exact (exact: s16 values
 * are integers, f16 values multiples of 2^-24 below 2^16, so a block's
 * sum of either is exact in float64); f32 and bf16 values, whose sum may
 * cancel to far below its terms, are added one by one with their error
 * kept. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize")))
#endif
static void add_block(struct gstats *st, const float *restrict v,
		      size_t n, double sign, int exact)
{
	size_t w = st->width;
	double *restrict s = st->sum, *restrict sc = st->sumc;
	double *restrict ps = st->ps, *restrict pq = st->pq;

	for (size_t b = 0; b < w; b++)
		ps[b] = pq[b] = 0.0;
	if (exact) {
		for (size_t f = 0; f < n; f++, v += w)
			for (size_t b = 0; b < w; b++) {
				double x = v[b];

				ps[b] += x;
				pq[b] += x * x;
			}
	} else {
		for (size_t f = 0; f < n; f++, v += w)
			for (size_t b = 0; b < w; b++) {
				double y = v[b], x = sign * y, t = s[b] + x;
				double z = t - s[b];

				sc[b] += (s[b] - (t - z)) + (x - z);
				s[b] = t;
				pq[b] += y * y;
			}
	}
	for (size_t b = 0; b < w; b++) {
		if (exact)
			two_sum(&st->sum[b], &st->sumc[b], sign * ps[b]);
		two_sum(&st->sq[b], &st->sqc[b], sign * pq[b]);
	}
}

/* Adds n (<= STATS_FRAMES) values of bin b, contiguous at v, as
 * add_block does: a planar row's bin at a time, in four lanes (a block's
 * sum is exact in any order where the type makes it exact; its squares'
 * rounding stays within the block's bound). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize")))
#endif
static void add_run(struct gstats *st, size_t b, const float *restrict v,
		    size_t n, int exact)
{
	double ps[4] = { 0 }, pq[4] = { 0 };
	size_t i = 0;

	if (exact) {
		for (; i + 4 <= n; i += 4)
			for (int l = 0; l < 4; l++) {
				double x = v[i + l];

				ps[l] += x;
				pq[l] += x * x;
			}
		for (; i < n; i++) {
			double x = v[i];

			ps[0] += x;
			pq[0] += x * x;
		}
		two_sum(&st->sum[b], &st->sumc[b],
			(ps[0] + ps[1]) + (ps[2] + ps[3]));
	} else {
		for (; i + 4 <= n; i += 4)
			for (int l = 0; l < 4; l++) {
				double x = v[i + l];

				pq[l] += x * x;
			}
		for (; i < n; i++) {
			double x = v[i];

			pq[0] += x * x;
		}
		for (i = 0; i < n; i++)
			two_sum(&st->sum[b], &st->sumc[b], v[i]);
	}
	two_sum(&st->sq[b], &st->sqc[b], (pq[0] + pq[1]) + (pq[2] + pq[3]));
}

/* Whether a block's plain sum of values of dtype is exact. */
static int sum_exact(int dtype)
{
	return dtype == REC_S16 || dtype == REC_F16;
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
	st->v = calloc(6 * (size_t)(st->width ? st->width : 1),
		       sizeof(double));
	if (!st->v)
		return h5_oom(h);
	st->sum = st->v;
	st->sumc = st->sum + st->width;
	st->sq = st->sumc + st->width;
	st->sqc = st->sq + st->width;
	st->ps = st->sqc + st->width;
	st->pq = st->ps + st->width;
	return 0;
}

void stats_free(struct group *g)
{
	free(g->st.v);
	memset(&g->st, 0, sizeof(g->st));
}

/* n frames [frame][width] (values of one frame together); sign 1:
 * added, -1: taken out. */
static void add_interleaved(struct gstats *st, int dtype, const void *p,
			    size_t n, int sign)
{
	size_t esize = rec_dtype_size(dtype), w = st->width;
	float x[STATS_FRAMES * 8], *buf = x;
	size_t per = STATS_FRAMES;

	if (w > 8) { /* wide frames: fewer of them at a time */
		per = sizeof(x) / sizeof(x[0]) / w;
		if (per == 0) {
			per = 1;
			buf = malloc(w * sizeof(float));
			if (buf == NULL) /* frame by frame, bin by bin */
				per = 0;
		}
	}
	for (size_t f = 0, k; f < n; f += k) {
		k = n - f < per ? n - f : per;
		if (k == 0) { /* no memory for one frame: value by value */
			for (size_t b = 0; b < w; b++) {
				float v;

				to_f32(dtype, (const unsigned char *)p +
				       (f * w + b) * esize, 1, &v);
				nsum(&st->sum[b], &st->sumc[b], sign * v);
				nsum(&st->sq[b], &st->sqc[b],
				     (double)v * v * sign);
			}
			k = 1;
			continue;
		}
		to_f32(dtype, (const unsigned char *)p + f * w * esize, k * w,
		       buf);
		add_block(st, buf, k, sign, sum_exact(dtype));
	}
	if (buf != x)
		free(buf);
	st->frames += sign > 0 ? (int64_t)n : -(int64_t)n;
}

/* Bins [b0, b1) of one features row [width][len] (values of one bin
 * together): bin by bin, STATS_FRAMES values at a time. Each bin's sums
 * are its own, so bins counted apart (stats_rows_bins()) give the sums a
 * count of every bin at once gives, to the last bit. */
static void add_planar(struct gstats *st, int dtype, const void *p,
		       size_t len, size_t b0, size_t b1)
{
	size_t esize = rec_dtype_size(dtype);
	int exact = sum_exact(dtype);
	float x[STATS_FRAMES];

	for (size_t b = b0; b < b1; b++)
		for (size_t t = 0, k; t < len; t += k) {
			k = len - t < STATS_FRAMES ? len - t : STATS_FRAMES;
			to_f32(dtype, (const unsigned char *)p +
			       (b * len + t) * esize, k, x);
			add_run(st, b, x, k, exact);
		}
}

int stats_counted(const h5out *h, const struct group *g)
{
	return !h->o.stats_given && g->st.width;
}

int stats_by_bins(const h5out *h, const struct group *g)
{
	return stats_counted(h, g) && !h->o.ragged &&
	       h->o.kind != REC_T_AUDIO && h->dim1 != 1;
}

void stats_rows_bins(h5out *h, struct group *g, const void *p, size_t rows,
		     size_t b0, size_t b1)
{
	for (size_t r = 0; r < rows; r++)
		add_planar(&g->st, h->o.dtype,
			   (const unsigned char *)p + r * h->row_bytes,
			   h->dim1, b0, b1);
}

void stats_rows_counted(h5out *h, struct group *g, size_t rows)
{
	g->st.frames += (int64_t)(rows * h->dim1);
}

void stats_rows(h5out *h, struct group *g, const void *p, size_t rows)
{
	struct gstats *st = &g->st;

	if (!rows)
		return;
	if (stats_by_bins(h, g)) { /* features rows [n_mels][n_frames] */
		stats_rows_bins(h, g, p, rows, 0, st->width);
		stats_rows_counted(h, g, rows);
	} else if (!stats_counted(h, g)) {
		return;
	} else if (h->o.kind == REC_T_AUDIO && !h->o.ragged) {
		/* [n_samples][channels] */
		add_interleaved(st, h->o.dtype, p, rows * h->dim0, 1);
	} else { /* ragged rows are frames [width]; rows of one frame:
		    frames [n_mels] */
		add_interleaved(st, h->o.dtype, p, rows, 1);
	}
}

void stats_frames(h5out *h, struct group *g, const void *p, size_t n,
		  int sign)
{
	if (!stats_counted(h, g))
		return;
	add_interleaved(&g->st, h->o.dtype, p, n, sign);
}

int h5out_add_stats(h5out *h, int split, uint32_t width, int64_t count,
		    const double *sum, const double *sumsq)
{
	struct gstats *st = &h->groups[split].st;

	if (write_bg_wait(h))
		return -1;
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
