/*
 * h5out.h - the melpipe HDF5 dataset layout (formats/hdf5.md), written
 * record by record.
 *
 * Rows (audio or features records) are buffered per split group and
 * appended to chunked, extendible datasets a chunk at a time; so are the
 * rows of the clip and skipped-input tables, so that memory stays the same
 * however long the stream. The label table and the attributes are written
 * by h5out_finish(), which closes the file. The functions print their own
 * `prog: message` naming the dataset file and return 0 or -1.
 */
#ifndef MELPIPE_H5OUT_H
#define MELPIPE_H5OUT_H

#include <stdint.h>

#include "../../lib/rec.h"

enum h5out_compress { H5OUT_NONE, H5OUT_GZIP, H5OUT_ZSTD };

struct h5out_opts {
	int compress;            /* enum h5out_compress */
	unsigned level;          /* gzip 1..9, zstd 1..22 */
	int kind;                /* REC_T_FEATURES or REC_T_AUDIO */
	int dtype;               /* element type every record must have */
	int splits;              /* training/validation/testing groups */
	uint64_t clips_expected; /* the header's clips; 0 when unknown */
	uint64_t rows_expected;  /* rows of the stream at most; 0: unknown */
	int ragged;              /* records of any length: the ragged layout
				    (formats/hdf5.md) */
	size_t chunk_bytes;      /* target size of a features chunk */
	size_t jobs;             /* threads compressing whole features
				    chunks, and half as many (1 to 4)
				    counting the statistics of chunks
				    written whole (the file is the same
				    for any number) */
	float top_db;            /* features items in pieces are raised to
				    their max - top_db (the header's
				    top_db); < 0: left as they are */
	uint32_t shard_k, shard_n; /* a shard stream (header shard K/N):
				    only the clip indices K mod N; n 0: a
				    whole stream */
	int write_thread;        /* full chunks written on a thread of
				    their own: nothing else may call the
				    HDF5 library while h5out is in use */
	int stats_given;         /* the statistics come from
				    h5out_add_stats() (a merge), not from
				    the rows */
};

/* What the file holds, for the summary line. */
struct h5out_counts {
	uint64_t rows[4];     /* per split: all, training, validation, test */
	int has_group[4];
	uint64_t clips;       /* rows of /clips */
	uint64_t clips_seen;  /* clip indices that appeared in the stream */
	uint64_t skipped;     /* rows of /skipped */
};

typedef struct h5out h5out;

/* Creates the HDF5 file at path (the library's name for the temporary
 * file); name is the dataset's name in messages. */
int h5out_create(h5out **out, const char *path, const char *name,
		 const struct h5out_opts *o);
/* Adds one data record: a row of its split's group (audio, features) or
 * a row of /skipped; either way its clip's row of /clips. A record whose
 * element type or shape (ragged: n_mels or channels) differs from the
 * first one's is an error. The pieces of an item (rec_item.flags) are
 * joined into one row as they come, as records in the order the reader
 * hands them out; a skipped record after a piece flagged more ends the
 * item there (cut short). */
int h5out_add(h5out *h, const rec_item *it);
/* Adds a shard's statistics of split group split (formats/hdf5.md):
 * width features, count frames; -1 (without a message) when the group's
 * width differs. Call it after the last h5out_add(). */
int h5out_add_stats(h5out *h, int split, uint32_t width, int64_t count,
		    const double *sum, const double *sumsq);
/* Writes the remaining rows, the tables and the attributes (hdr: the
 * stream header with h5pack's own stage added) and closes the file. */
int h5out_finish(h5out *h, const rec_header *hdr);
/* Frees h and closes whatever is still open, without reporting; accepts
 * NULL. After a failure the file's contents are undefined. */
void h5out_close(h5out *h);
void h5out_counts(const h5out *h, struct h5out_counts *c);
/* Seconds spent inside the HDF5 library (writing, compressing), and
 * waiting for the compression threads or the writing thread. */
double h5out_write_time(const h5out *h);
/* Seconds the writing thread wrote full chunks while the records went
 * on being taken in (h5out_write_time() counts only the waits for it);
 * known once h5out_finish() has returned. */
double h5out_write_thread_time(const h5out *h);
/* Threads that counted the statistics of chunks beside their writes (0:
 * none; 1 to 4, by --jobs: h5statsbg.c). */
unsigned h5out_stats_threads(const h5out *h);
/* Seconds the compression threads worked, summed over them, how many
 * there were (0 when there were none) and the chunks they compressed. */
double h5out_compress_time(const h5out *h, size_t *threads,
			   uint64_t *chunks);

#endif
