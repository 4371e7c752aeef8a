/*
 * h5clamp.c - the top_db floor of a features item that came in pieces.
 *
 * gpumel raises a one-record item's dB values to its max - top_db, but
 * it cannot for an item it writes in pieces (the max is known only at
 * the end, after the pieces have gone), so it writes those unclamped and
 * h5pack does it once the item is joined: the range of the values is
 * kept while the pieces are written, and at the end every value below
 * the floor is raised to it, as gpumel's clamp_matrix() does: in float32
 * on the values as stored; 16-bit values compared as float32 with the
 * floor rounded to their type, and raised to that.
 *
 * A fixed row is in memory until it ends. A ragged item may be any
 * length: its frames already in the file are read back a chunk at a
 * time, raised and written again where something changed (with the
 * features' chunk cache of one chunk, a compressed chunk is decompressed
 * and compressed once), and those still buffered are raised in place.
 * The memory is one chunk, whatever the item's length.
 */
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/half.h"
#include "../common/prog.h"
#include "h5out_priv.h"

#define BLOCK 1024 /* 16-bit values widened at a time */

static float widen(int dtype, uint16_t v)
{
	return dtype == REC_F16 ? half_to_f32(v) : bf16_to_f32(v);
}

void clamp_range(struct join *j, int dtype, const void *p, size_t n)
{
	const unsigned char *b = p;
	float max = j->max, min = j->min, f[BLOCK];
	uint16_t h[BLOCK];

	/* p is a record's payload, at any address (h5pack reads them
	 * unaligned): copied out a block at a time */
	for (size_t done = 0, k; done < n; done += k) {
		const float *v = f;

		k = n - done < BLOCK ? n - done : BLOCK;
		if (dtype == REC_F32) {
			memcpy(f, b + done * sizeof(float), k * sizeof(float));
		} else {
			memcpy(h, b + done * sizeof(uint16_t),
			       k * sizeof(uint16_t));
			if (dtype == REC_F16)
				half_to_f32_array(f, h, k);
			else
				bf16_to_f32_array(f, h, k);
		}
		for (size_t i = 0; i < k; i++) {
			/* NaN takes part in neither, as in gpumel */
			max = v[i] > max ? v[i] : max;
			min = v[i] < min ? v[i] : min;
		}
	}
	j->max = max;
	j->min = min;
}

/* The item's floor in float32, and its value as stored (16-bit types:
 * rounded to nearest even, then widened back, exactly). */
static float item_floor(const h5out *h, const struct join *j, uint16_t *h16)
{
	float floor = j->max - h->o.top_db;

	if (h->o.dtype == REC_F16)
		*h16 = half_from_f32(floor);
	else if (h->o.dtype == REC_BF16)
		*h16 = bf16_from_f32(floor);
	else
		return floor;
	return widen(h->o.dtype, *h16);
}

/* Raises the n values at p below the floor to it; whether any was. */
static int raise_values(const h5out *h, const struct join *j, void *p,
			size_t n)
{
	uint16_t h16 = 0;
	float floor = item_floor(h, j, &h16);
	int changed = 0;

	if (!(j->min < floor))
		return 0;
	if (h->o.dtype == REC_F32) {
		float *v = p;

		for (size_t i = 0; i < n; i++)
			if (v[i] < floor) {
				v[i] = floor;
				changed = 1;
			}
		return changed;
	}
	for (size_t i = 0; i < n; i++) {
		uint16_t *v = (uint16_t *)p + i;

		if (widen(h->o.dtype, *v) < floor) {
			*v = h16;
			changed = 1;
		}
	}
	return changed;
}

void clamp_memory(const h5out *h, const struct join *j, void *p, size_t n)
{
	raise_values(h, j, p, n);
}

/* Frames [a, b) of the group's features: read, raised, and written back
 * when something changed. */
static int clamp_block(h5out *h, struct group *g, const struct join *j,
		       hsize_t a, hsize_t b)
{
	hsize_t start[2] = { a, 0 }, count[2] = { b - a, h->fdim[0] };
	hid_t fspace, mspace;
	int ret = -1;

	if (!write_bg_owner(h))
		return -1;
	fspace = H5Dget_space(g->d_features);
	mspace = H5Screate_simple(2, count, NULL);
	if (fspace < 0 || mspace < 0 ||
	    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count,
				NULL) < 0 ||
	    H5Dread(g->d_features, h->ftype, mspace, fspace, H5P_DEFAULT,
		    h->block) < 0)
		goto out;
	/* the frames were counted as written: count them as raised */
	stats_frames(h, g, h->block, (size_t)(b - a), -1);
	if (raise_values(h, j, h->block, (size_t)(b - a) * h->fdim[0]) &&
	    H5Dwrite(g->d_features, h->ftype, mspace, fspace, h->dxpl,
		     h->block) < 0)
		goto out;
	stats_frames(h, g, h->block, (size_t)(b - a), 1);
	ret = 0;
out:
	if (fspace >= 0)
		H5Sclose(fspace);
	if (mspace >= 0)
		H5Sclose(mspace);
	return ret;
}

int clamp_ragged(h5out *h, struct group *g, const struct join *j)
{
	uint16_t h16;
	hsize_t a = j->start, cr = h->chunk_rows;
	double t0;
	int err = 0;

	if (!(j->min < item_floor(h, j, &h16)))
		return 0; /* nothing below the floor */
	if (a >= g->rows) { /* all of it still buffered */
		clamp_memory(h, j, g->features + (a - g->rows) * h->row_bytes,
			     (size_t)j->frames * h->fdim[0]);
		return 0;
	}
	clamp_memory(h, j, g->features, g->n * h->fdim[0]);
	/* the chunks with the threads go to the file first */
	if (drain_chunks(h))
		return -1;
	if (!h->block && !(h->block = malloc(cr * h->row_bytes)))
		return h5_oom(h);
	t0 = prog_now();
	for (hsize_t b; !err && a < g->rows; a = b) {
		b = (a / cr + 1) * cr; /* the end of a's chunk */
		b = b < g->rows ? b : g->rows;
		err = clamp_block(h, g, j, a, b);
	}
	h->t_write += prog_now() - t0;
	return err ? h5_fail(h, "rewrite rows") : 0;
}
