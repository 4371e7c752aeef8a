/*
 * recmerge.h - what recmerge's files share: one input stream (a shard of
 * a job) and the steps of a merge. shards.c checks that the shards agree
 * and makes the merged header; merge.c interleaves their records.
 * Functions here print their own `recmerge: message` and return 0 or -1.
 */
#ifndef MELPIPE_RECMERGE_H
#define MELPIPE_RECMERGE_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/rec.h"

/* Where a shard's reader stands in the merge. */
enum shard_state {
	SHARD_NEED,  /* the next record is still to be read */
	SHARD_HAVE,  /* next holds a record of a clip not yet merged */
	SHARD_END    /* its trailer was read and verified */
};

/* One input stream. */
struct shard {
	const char *name;     /* as given; "stdin" for '-' */
	int fd;               /* -1 until opened */
	rec_reader *r;
	uint32_t k;           /* its shard value K/N, from the header */
	enum shard_state state;
	rec_item next;        /* SHARD_HAVE: the record read ahead, valid
				 until the reader's next rec_read() */
	uint64_t clips;       /* clips merged from it */
};

/* The job the shards make up, once their headers agree. */
struct job {
	uint32_t n;           /* shards */
	uint64_t clips;       /* the whole job's clips */
	struct shard **by_k;  /* n entries: by_k[K] holds shard K/N */
	const char *output;   /* -o FILE, NULL: standard output */
};

/* Checks the headers of the n opened streams s[] (readers open, in
 * command-line order) against each other as formats/record.md's Shard
 * streams says: each has shard, job and clips; all give the same N, job
 * and clips, and every other pair but producer, stage and shard equal in
 * order; each K from 0 to N-1 exactly once. Fills *job (by_k allocated;
 * the caller frees it). The first fault gets one line naming the stream
 * and the field. */
int shards_check(struct shard *s, size_t n, struct job *job);

/* The merged stream's header: shard 0's pairs without shard and stage,
 * producer recmerge's, each shard's stage values as shard_stage pairs in
 * shard order, then recmerge's own stage for its command line. NULL
 * after a message when out of memory. */
rec_header *shards_output_header(const struct job *job, int argc,
				 char **argv);

/* Totals of a merge. */
struct merge_stats {
	uint64_t records;     /* data records written */
	uint64_t skipped;     /* of them skipped records */
};

/* Writes every clip of the job to w, clip i from shard i mod N, each
 * clip's records as its shard gives them, and reads every shard to its
 * verified trailer. Refuses a shard that lacks a clip of its own, holds
 * a clip of another shard or one at or above the job's clips, and a
 * stream that breaks (cut short, bad record). */
int merge_clips(const struct job *job, rec_writer *w,
		struct merge_stats *st);

#endif
