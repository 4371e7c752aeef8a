/*
 * h5out.c - writes the melpipe HDF5 layout specified in formats/hdf5.md:
 * creates the file with its properties, takes the records in, and
 * finishes the file (the last rows, the tables, the attributes).
 *
 * Rows go to a per-group memory buffer of one features chunk and are
 * appended with one H5Dwrite per dataset when it is full, so the library
 * sees large writes of complete chunks instead of millions of row writes
 * (h5rows.c). The /clips and /skipped tables are written the same way as
 * the stream goes, a chunk of rows at a time (h5tables.c).
 *
 * Compressed, the full chunks of features are shuffled and compressed in
 * worker threads (chunkpool.c) and written as they are with
 * H5Dwrite_chunk(): the library alone would compress them one at a time
 * in this thread. The last, partial chunk of a group and the small
 * per-row columns go through the library's filters. Uncompressed, a
 * group's full chunks are written with their columns on a thread of
 * their own while this one fills the next (h5writebg.c); a full chunk
 * that goes through the library has its statistics counted on another
 * while it is written (h5statsbg.c).
 *
 * Memory does not grow with the stream: the buffers have fixed sizes, and
 * so do the library's caches (a chunk cache per dataset sized to what it
 * needs, a fixed metadata cache, bounded free lists). What the process
 * holds is a function of the options and the row shape only: about
 * 24 MiB for 1 MiB chunks in four groups (with the writing thread's
 * queue of four chunks of rows), 35 MiB compressed (whose
 * column caches fill up to their size as a group's first chunks fill),
 * plus the compression threads' chunks in flight (16 of 1 MiB, each with
 * its output) and a chunk and a compressor each: 60 MiB in all with 2
 * threads, 90 MiB with 16. The ragged layout (h5ragged.c) buffers its
 * per-row columns apart, 128 KiB a group more. An item in pieces
 * (h5pieces.c) adds nothing but, in the fixed layout, its first row
 * gathered apart, and a chunk to read back what its top_db floor raises
 * (h5clamp.c). Nothing is allocated per record.
 */
#include "h5out.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "chunkpool.h"
#include "h5attr.h"
#include "h5out_priv.h"

#define FORMAT_VERSION 2
#define METADATA_CACHE (512u << 10) /* bytes of metadata cache */

int h5out_add(h5out *h, const rec_item *it)
{
	if (it->split < REC_SPLIT_NONE || it->split > REC_SPLIT_TESTING) {
		prog_err("'%.*s': split %d out of range", (int)it->key_len,
			 it->key, it->split);
		return -1;
	}
	if (it->type == REC_T_SOURCE)
		return note_source(h, it);
	if (it->type == REC_T_SKIPPED)
		return h->join.open && join_cut(h, it) ? -1
						       : add_skipped(h, it);
	if (h->join.open || rec_item_is_piece(it))
		return join_piece(h, it);
	if (it->type == REC_T_FWINDOWS)
		return add_fwindows(h, it);
	return add_row(h, it);
}

/* ------------------------------------------------------------------ */
/* Attributes */

static const char *layout_name(const h5out *h)
{
	return h->o.ragged ? "ragged" : "fixed";
}

static int write_root_attrs(h5out *h, const rec_header *hdr)
{
	if (h5attr_header(h->file, hdr, FORMAT_VERSION) ||
	    h5attr_string(h->file, "layout", layout_name(h)))
		return h5_fail(h, "write the attributes");
	return 0;
}

static int write_features_attrs(h5out *h)
{
	const char *dt = rec_dtype_name(h->o.dtype);

	for (int s = 0; s < 4; s++) {
		hid_t d = h->groups[s].d_features;

		if (h->has_group[s] &&
		    (h5attr_string(d, "dtype", dt) ||
		     h5attr_string(d, "layout", layout_name(h))))
			return h5_fail(h, "write the attributes");
	}
	return 0;
}

int h5out_finish(h5out *h, const rec_header *hdr)
{
	double t0 = prog_now(), before = h->t_write;
	int ret = -1;

	if (write_bg_wait(h))
		goto out;
	if (h->join.open) { /* the reader refuses such a stream */
		prog_err("the stream ended inside an item in pieces: not "
			 "writing '%s'", h->name);
		goto out;
	}
	if (check_clips(h))
		goto out;
	if (!h->shape_known && set_shape(h, NULL))
		goto out;
	for (int s = 0; s < 4; s++)
		if (h->has_group[s] &&
		    (h->o.ragged ? flush_ragged(h, &h->groups[s], 1)
				 : flush_group(h, &h->groups[s], 1)))
			goto out;
	if (drain_chunks(h) || write_bg_wait(h))
		goto out;
	write_bg_stop(h);
	h->t_compress = chunkpool_work_time(h->pool);
	chunkpool_stop(h->pool);
	h->pool = NULL;
	for (int s = 0; s < 4; s++)
		if (h->has_group[s] && stats_write(h, &h->groups[s]))
			goto out;
	if (write_labels(h, hdr) || table_flush(h, &h->clips, 1) ||
	    table_flush(h, &h->skipped, 1) || write_features_attrs(h) ||
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
	/* all of it, once (the waits and writes inside count themselves) */
	h->t_write = before + prog_now() - t0;
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
	h->clamp = o->kind == REC_T_FEATURES && o->top_db >= 0 &&
		   o->dtype != REC_S16;
	h5_catch_errors();
	limit_free_lists();
	h->file = h->ftype = h->dxpl = NO_ID;
	for (int s = 0; s < 4; s++) {
		struct group *g = &h->groups[s];

		g->gid = g->d_features = g->d_label = g->d_clip = NO_ID;
		g->d_segment = g->d_offset = NO_ID;
		g->d_start = g->d_n_frames = NO_ID;
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
	/* first: their threads may be reading its buffers */
	chunkpool_stop(h->pool);
	write_bg_stop(h);
	stats_bg_stop(h);
	for (int s = 0; s < 4; s++)
		close_group(&h->groups[s]);
	table_free(&h->clips);
	table_free(&h->skipped);
	join_free(&h->join);
	free(h->block);
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
		c->rows[s] = group_rows(h, &h->groups[s]);
		c->has_group[s] = h->has_group[s];
	}
	c->clips = h->clips.rows + h->clips.n;
	c->clips_seen = h->clips_seen;
	c->skipped = h->skipped.rows + h->skipped.n;
}

double h5out_write_time(const h5out *h)
{
	return h->t_write;
}

double h5out_write_thread_time(const h5out *h)
{
	return h->t_bg_write;
}

unsigned h5out_stats_threads(const h5out *h)
{
	return h->sbg_threads;
}

double h5out_compress_time(const h5out *h, size_t *threads,
			   uint64_t *chunks)
{
	*threads = h->jobs;
	*chunks = h->n_direct;
	return h->t_compress;
}
