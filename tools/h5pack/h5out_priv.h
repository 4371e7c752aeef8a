/*
 * h5out_priv.h - the writer's state, shared by the files that make up
 * h5out (h5out.h): h5out.c (the file, creating and finishing it),
 * h5fail.c (the library's errors as messages), h5layout.c (the groups and
 * their datasets), h5rows.c (the rows), h5pieces.c (items in pieces
 * joined into rows), h5clamp.c (their top_db floor), h5stats.c (the
 * groups' statistics), h5statsbg.c (their thread), h5writebg.c (the
 * rows' writing thread) and h5tables.c (the tables and the clip
 * accounting). Nothing outside those files includes it.
 */
#ifndef MELPIPE_H5OUT_PRIV_H
#define MELPIPE_H5OUT_PRIV_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "../../lib/rec.h"
#include "h5out.h"

#define TABLE_CHUNK 4096u       /* rows per chunk (and write) of a table */
#define TABLE_MAXCOL 7
#define NO_ID ((hid_t)-1)

/* A group's statistics (h5stats.c): per feature, Neumaier sums of the
 * values and their squares with their compensations, over frames. */
struct gstats {
	uint32_t width;      /* features: n_mels, or channels; 0: no shape */
	int64_t frames;
	double *v;           /* the six arrays below, width each */
	double *sum, *sumc, *sq, *sqc;
	double *ps, *pq;     /* a block's partial sums (h5stats.c) */
};

/* One split group: its datasets and the rows waiting to be written.
 * In the ragged layout a row of features is a frame, and the per-row
 * columns (items: label ... n_frames) are counted and written apart. */
struct group {
	hid_t gid;
	hid_t d_features, d_label, d_clip, d_segment, d_offset;
	hid_t d_start, d_n_frames;  /* ragged */
	uint64_t rows;   /* rows of features in the file */
	size_t n, cap;   /* rows of features buffered, buffer capacity */
	unsigned char *features;
	int32_t *label, *clip, *segment;
	int64_t *offset;
	uint64_t items;  /* ragged: rows of the per-row columns in the file */
	size_t ni, icap; /* ragged: buffered, buffer capacity */
	int64_t *start;
	int32_t *n_frames;
	struct gstats st;
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

/* An item in pieces being joined into one row (h5pieces.c): the fields
 * of its first piece, where its frames go, and their range for top_db. */
struct join {
	int open;             /* the last record was a piece flagged more */
	int split;
	int32_t label;
	uint64_t clip, offset;
	uint32_t segment;
	uint32_t width;       /* n_mels, or channels */
	uint64_t frames;      /* joined so far (audio: samples) */
	uint64_t start;       /* ragged: its first frame in features */
	float max, min;       /* of its values so far (clamp only) */
	/* fixed layout, before the first row fixes the shape: its frames
	 * [frame][width] until it ends */
	unsigned char *stage;
	size_t stage_len, stage_cap;
};

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
	int rank;             /* of features: 3, or 2 for mono audio;
				 ragged: 2, or 1 for mono audio */
	uint32_t fdim[2];     /* features' dimensions after the first */
	size_t row_bytes;     /* of a row of features (ragged: a frame) */
	hsize_t chunk_rows;
	char *first_key;      /* names the first row in shape errors */

	struct join join;
	int clamp;              /* items in pieces get the top_db floor */
	unsigned char *block;   /* a features chunk read back to clamp it */

	struct table clips, skipped;
	uint64_t clip_row;      /* the current clip's row of /clips */
	int64_t clip_samples;   /* its n_samples as it stands */
	int clip_rows;          /* a row of it came (or is being joined) */
	int clip_cut;           /* a skipped record after its rows set
				   n_samples: the samples kept, final */
	uint64_t n_clips;       /* one more than the highest clip index */
	uint64_t clips_seen;
	uint64_t missing;       /* clip indices passed over, never to come */
	uint64_t first_missing;
	/* The source record before the clip's first record (format
	 * version 4): the file's own rate and channels for its /clips
	 * row, 0 where unknown. */
	int have_source;
	uint64_t source_clip;
	int32_t source_rate, source_channels;

	struct stats_bg *sbg;   /* the statistics threads (h5statsbg.c) */
	int sbg_failed;         /* none could be started */
	unsigned sbg_threads;   /* threads started */
	struct write_bg *wbg;   /* the writing thread (h5writebg.c) */
	int wbg_failed;         /* it could not be started */
	int wbg_busy;           /* it holds chunks: the library is its */
	int wbg_said;           /* its failure was reported */
	double t_bg_write;      /* seconds it wrote */
	struct chunkpool *pool; /* compression threads, or NULL */
	size_t jobs;            /* its threads */
	uint64_t n_direct;      /* chunks it compressed, written */
	double t_write;
	double t_compress;
};

/* h5fail.c: every function that fails prints why, naming the dataset
 * file, and returns -1. */

/* Has the library keep its first failure's description for h5_fail()
 * instead of printing its error stack. */
void h5_catch_errors(void);
/* "unable to WHAT in 'NAME': REASON", the reason the library's. */
int h5_fail(const h5out *h, const char *what);
int h5_oom(const h5out *h);

/* h5layout.c */

/* The file's element type for dtype (REC_S16, REC_F32, REC_F16,
 * REC_BF16), or NO_ID. */
hid_t element_type(int dtype);
/* The type of /clips' split column: an enum of the group names. */
hid_t split_enum_type(void);
hid_t chunked_dataset(hid_t loc, const char *name, hid_t type, int rank,
		      const hsize_t *dims, const hsize_t *max,
		      const hsize_t *chunk, size_t cache_bytes,
		      const struct h5out_opts *o);
hid_t new_group(h5out *h, const char *name);
int make_group(h5out *h, int split);
/* total, items: the group's rows of features and of the per-row columns
 * when these are all (the group's last write), else 0. */
int make_row_datasets(h5out *h, struct group *g, hsize_t total,
		      hsize_t items);
int alloc_buffers(h5out *h, struct group *g);
/* Frees a group's buffers and closes its objects without reporting. */
void close_group(struct group *g);
int close_groups(h5out *h);

/* h5rows.c */

int set_shape(h5out *h, const rec_item *it);
/* The checks of a row's record: element type, kind, shape (for a piece
 * of an item, the width only: n_mels or channels), segment and offset;
 * the first row fixes the shape (not a piece in the fixed layout, whose
 * item must end first). */
int check_row(h5out *h, const rec_item *it, int piece);
/* "'KEY': shape AxB differs from ..." for the fixed layout; -1. */
int shape_error(const h5out *h, const rec_item *it, uint64_t dim0,
		uint64_t dim1, const char *what);
/* Writes n rows from buf (mtype) at row `at` of d, grown to hold them. */
int append_rows(h5out *h, hid_t d, hid_t mtype, int rank, hsize_t at,
		hsize_t n, const void *buf);
int flush_group(h5out *h, struct group *g, int final);
/* Writes every chunk still with the compression threads. */
int drain_chunks(h5out *h);
int add_row(h5out *h, const rec_item *it);
/* The rows of a features-windows record's windows (h5rows.c). */
int add_fwindows(h5out *h, const rec_item *it);
/* Appends n rows of label, clip, segment and offset from the buffers at
 * row at; -1 without a message. */
int write_columns(h5out *h, struct group *g, hsize_t at, hsize_t n);
/* The same from the columns given (the writing thread's chunk). */
int append_columns(h5out *h, struct group *g, hsize_t at, hsize_t n,
		   const int32_t *label, const int32_t *clip,
		   const int32_t *segment, const int64_t *offset);
/* Appends n rows of the group's features from p at row at, their
 * statistics counted (a full chunk's on the statistics threads, while
 * it is written); -1 without a message. */
int append_features(h5out *h, struct group *g, hsize_t at, size_t n,
		    const void *p);
/* Writes the buffered features rows; a full chunk to the threads when
 * there are some and this is not the group's last write. */
int write_features(h5out *h, struct group *g, int final);
/* The rows (items) of a group so far, written or buffered. */
uint64_t group_rows(const h5out *h, const struct group *g);

/* h5ragged.c: the ragged layout's rows */

int add_ragged_row(h5out *h, struct group *g, const rec_item *it);
int flush_ragged(h5out *h, struct group *g, int final);
/* Appends len frames of the record (features: transposed) to the group's
 * features, a full chunk written at once. */
int add_frames(h5out *h, struct group *g, const rec_item *it, size_t len);
/* The per-row columns of a row whose frames are in features; n_frames
 * frames from start. */
int add_ragged_item(h5out *h, struct group *g, const struct join *j);
/* Frames [from, from + n) of a [width][len] matrix into dst as
 * [n][width]; elements of 2 or 4 bytes. */
void transpose(unsigned char *dst, const unsigned char *src, size_t esize,
	       size_t width, size_t len, size_t from, size_t n);

/* h5pieces.c: items in pieces */

/* Adds a piece: the first one opens the item, the last one makes it a
 * row. */
int join_piece(h5out *h, const rec_item *it);
/* The item is cut short by the skipped record it: a row of what came. */
int join_cut(h5out *h, const rec_item *it);
void join_free(struct join *j);

/* h5clamp.c: the top_db floor of a features item that came in pieces */

/* Widens the range of the item's values by the n values at p (any
 * address). */
void clamp_range(struct join *j, int dtype, const void *p, size_t n);
/* Raises the n values at p (a row in memory) to the item's floor. */
void clamp_memory(const h5out *h, const struct join *j, void *p, size_t n);
/* Raises the item's frames in the group's features, those in the file
 * (read back and rewritten a chunk at a time) and those still buffered,
 * to its floor. */
int clamp_ragged(h5out *h, struct group *g, const struct join *j);

/* h5stats.c: the statistics of a group's stored frames */

/* Sizes the group's statistics by the row shape (known or not). */
int stats_alloc(h5out *h, struct group *g);
void stats_free(struct group *g);
/* Whether the group's frames are counted here: not when the statistics
 * come given (a merge adds the shards'), nor before the row shape is
 * known. */
int stats_counted(const h5out *h, const struct group *g);
/* Counts n rows of the group's features as written from p (the fixed
 * layout's rows, or the ragged layout's frames). */
void stats_rows(h5out *h, struct group *g, const void *p, size_t rows);
/* Whether the group's rows are [n_mels][n_frames] features, whose bins
 * can be counted apart: stats_rows_bins() for bins [b0, b1) of each of
 * the rows (any split of the bins gives stats_rows()'s sums, to the last
 * bit), then stats_rows_counted() once for the rows' frames. */
int stats_by_bins(const h5out *h, const struct group *g);
void stats_rows_bins(h5out *h, struct group *g, const void *p, size_t rows,
		     size_t b0, size_t b1);
void stats_rows_counted(h5out *h, struct group *g, size_t rows);
/* Counts (sign 1) or takes out (-1) n frames [frame][width] of a ragged
 * group's features. */
void stats_frames(h5out *h, struct group *g, const void *p, size_t n,
		  int sign);
/* stats_count, stats_sum and stats_sumsq in the group. */
int stats_write(h5out *h, struct group *g);

/* h5statsbg.c: stats_rows() on threads of their own, while this one
 * writes the rows */

/* Starts counting n rows at p (which stay as they are until
 * stats_rows_end()); counts them here when no thread can start. */
void stats_rows_begin(h5out *h, struct group *g, const void *p,
		      size_t rows);
/* Waits until the rows handed to stats_rows_begin() are counted. */
void stats_rows_end(h5out *h);
/* Ends the threads (a count under way first). */
void stats_bg_stop(h5out *h);

/* h5writebg.c: a group's full chunk of rows written on a thread of its
 * own while this one fills the next (the rule on who calls the library
 * is at the top of h5writebg.c) */

/* Hands the group's full chunk (uncompressed, fixed layout, the group's
 * datasets made) to the writing thread, the group's rows moved on, after
 * waiting for a free place in its queue: 0. 1: not handed over (not such
 * a chunk, or no thread): write it here. -1 with a message: a chunk
 * handed over before failed to be written. */
int write_bg_start(h5out *h, struct group *g);
/* Waits until the chunks handed over are written: the library is this
 * thread's again. -1 when a write failed: with a message the first time
 * it says so. */
int write_bg_wait(h5out *h);
/* Ends the thread (the chunks handed over are written first, unless one
 * failed). */
void write_bg_stop(h5out *h);
/* Whether this thread may call the library now: the writing thread, or
 * this one with no chunk handed over. 0, said as an internal error,
 * where the rule above is broken. */
int write_bg_owner(const h5out *h);

/* h5tables.c */

int table_init(h5out *h, struct table *t, int skipped);
int table_flush(h5out *h, struct table *t, int final);
int table_close(h5out *h, struct table *t);
void table_free(struct table *t);
int write_labels(h5out *h, const rec_header *hdr);
/* Gives the record's clip its row of /clips at its first record; later
 * records raise its n_samples to theirs, but a skipped record after the
 * clip's rows sets it (the samples kept of a clip cut short). */
int note_clip(h5out *h, const rec_item *it);
/* Keeps a source record's source_rate and source_channels for the row
 * of /clips its clip's first record gives. */
int note_source(h5out *h, const rec_item *it);
int add_skipped(h5out *h, const rec_item *it);
int check_clips(h5out *h);

#endif
