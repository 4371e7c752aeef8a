/*
 * h5merge.h - h5pack --merge: the shard files of one job (formats/hdf5.md,
 * Shard files) written as the one dataset the whole job gives.
 *
 * h5shard.c reads a shard file a block at a time (slabs of rows);
 * h5mcheck.c checks that the files make up one job and makes the merged
 * header; h5merge.c feeds their rows, clip by clip, to the writer
 * (h5out.h) as the records of the whole stream, and adds their
 * statistics. Functions print their own `h5pack: message`, naming the
 * file, and return 0 or -1.
 */
#ifndef MELPIPE_H5MERGE_H
#define MELPIPE_H5MERGE_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "../../lib/rec.h"
#include "h5out.h"

/* Rows of one dataset read a block (its chunk) at a time, in order. */
struct slab {
	char what[40];         /* its path in the file, for messages */
	hid_t d;
	hid_t mtype;           /* in memory (owned) */
	int vlen;              /* variable-length strings: reclaimed */
	int rank;
	hsize_t dims[3];       /* dims[0]: rows in the file */
	size_t row_bytes;      /* in memory */
	hsize_t block;         /* rows a read */
	uint64_t lo;           /* first row buffered */
	size_t n;              /* rows buffered */
	unsigned char *buf;
};

/* A split group of a shard file: its columns and where the merge is. */
struct sgroup {
	int present;
	struct slab features, label, clip, segment, offset, start, n_frames;
	uint64_t next;         /* its next row (of the per-row columns) */
	uint64_t frame;        /* ragged: the next row's first frame */
};

/* One shard file. */
struct shard_file {
	const char *name;
	hid_t file;
	rec_header *hdr;       /* its stream_header */
	uint32_t k;            /* shard K/N */
	int ragged;
	struct slab c_path, c_label, c_split, c_samples, c_rate;
	int has_source;        /* /clips/source_rate and source_channels
				  (absent from an older h5pack's file) */
	struct slab c_source_rate, c_source_channels;
	struct slab s_path, s_reason, s_clip;
	uint64_t next_skipped;
	struct sgroup g[4];    /* all, training, validation, testing */
};

struct merge {
	struct shard_file *f;  /* as given */
	size_t n_files;
	uint32_t n;            /* shards */
	uint64_t clips;        /* the job's */
	struct shard_file **by_k;
	int kind, dtype;       /* REC_T_*, REC_* */
	unsigned char *scratch; /* a transposed block of frames */
	size_t scratch_cap;
};

/* h5shard.c */

/* Opens the shard file f->name: its header (stream_header), its tables
 * and groups. */
int shard_open(struct shard_file *f);
/* Closes what is open, without reporting; accepts a closed one. */
void shard_close(struct shard_file *f);
/* Row row of s into the buffer (read as needed): a pointer to it, or
 * NULL after a message naming the file. */
const void *slab_row(const char *file, struct slab *s, uint64_t row);
/* The group's statistics, if it has rows: width features and count
 * frames, sum and sumsq (malloc()ed, the caller frees). 0, or -1 after a
 * message. */
int shard_stats(const struct shard_file *f, int split, uint32_t *width,
		int64_t *count, double **sum, double **sumsq);
/* h5fail.c: has the library keep its first failure for the messages
 * (h5out_create() does it too). */
void h5_catch_errors(void);
/* "unable to WHAT 'NAME': REASON", the reason the library's; -1. */
int h5_fail_file(const char *name, const char *what);

/* h5mcheck.c */

/* Opens the n files and checks that they make up one job (as recmerge
 * checks streams: formats/record.md, Shard streams); fills m. */
int merge_open(struct merge *m, char **names, size_t n);
/* The merged dataset's header: shard 0's pairs without shard and stage,
 * each shard's stage values as shard_stage pairs in shard order (h5pack
 * adds its own producer and stage). NULL after a message. */
rec_header *merge_header(const struct merge *m);
void merge_close(struct merge *m);

/* h5merge.c */

/* Every clip of the job, clip i from shard i mod N, as records to h;
 * then the shards' statistics. */
int merge_rows(struct merge *m, h5out *h, void (*tick)(void *, uint64_t),
	       void *arg);

#endif
