/*
 * shards.h - one job cut into shards, as every program sees it
 * (formats/record.md, Shard streams): the header's shard value "K/N",
 * whether a set of shard headers makes up one job, and the header of
 * their merge. recmerge checks streams with it, h5pack --merge the stream
 * headers its shard files keep, wavcat parses --shard with it: one set of
 * rules, and one wording of every refusal.
 */
#ifndef MELPIPE_SHARDS_H
#define MELPIPE_SHARDS_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/rec.h"

enum { SHARD_BAD_SYNTAX = 1, SHARD_BAD_N, SHARD_BAD_K };

/* Parses "K/N" (decimal digits only, N >= 1, K < N, both below 2^32) into
 * *k and *n: 0, or SHARD_BAD_SYNTAX, SHARD_BAD_N (N is 0) or SHARD_BAD_K
 * (K is N or more), *k and *n then untouched. */
int shard_value_parse(const char *v, uint32_t *k, uint32_t *n);

/* One would-be shard: a name for messages and its header. */
struct shard_member {
	const char *name;
	const rec_header *hdr;
	uint32_t k;            /* set by shard_set_check(): its K */
};

/* What the members are called in messages: "stream" or "file", and why a
 * member without a shard value is refused ("a whole stream, not a shard
 * (recmerge merges the shards of one job)"). */
struct shard_words {
	const char *unit;
	const char *whole;
};

/*
 * Checks that the count members make up one job's shards, in the order
 * formats/record.md gives: each has shard, job and clips; all give the
 * same N, job and clips, and every other pair but producer, stage and
 * shard equal, in order, to the first member's; each K from 0 to N-1
 * exactly once. Sets each member's k, *n and *clips. 0, or -1 after one
 * line (prog_err) naming the member and the field.
 */
int shard_set_check(struct shard_member *m, size_t count,
		    const struct shard_words *w, uint32_t *n,
		    uint64_t *clips);

/*
 * The merged header: by_k[0]'s pairs without shard and stage, then each
 * shard's stage values as "K/N<TAB>stage" shard_stage pairs in shard
 * order (by_k[K] is shard K's header, n of them). The caller adds its
 * own producer and stage. NULL when out of memory.
 */
rec_header *shards_merged_header(const rec_header *const *by_k, uint32_t n);

#endif
