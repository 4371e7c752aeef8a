/*
 * shards.c - one job cut into shards, as every program sees it: the
 * shard value, the checks that a set of headers makes up one job, and
 * their merge's header (formats/record.md, Shard streams).
 *
 * Every header is checked before anything is written, against the one
 * given first: a refusal names the member, the field and both values, so
 * that a shard of the wrong run is found at once rather than as a dataset
 * that mixes two.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"
#include "shards.h"

/* A decimal number without sign, spaces or suffix, up to max. */
static int parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end || *v > max ? -1 : 0;
}

int shard_value_parse(const char *v, uint32_t *k, uint32_t *n)
{
	const char *slash = strchr(v, '/');
	char kbuf[16];
	uint64_t kk, nn;

	if (!slash || (size_t)(slash - v) >= sizeof(kbuf))
		return SHARD_BAD_SYNTAX;
	memcpy(kbuf, v, (size_t)(slash - v));
	kbuf[slash - v] = '\0';
	if (parse_u64(kbuf, UINT32_MAX, &kk) ||
	    parse_u64(slash + 1, UINT32_MAX, &nn))
		return SHARD_BAD_SYNTAX;
	if (nn == 0)
		return SHARD_BAD_N;
	if (kk >= nn)
		return SHARD_BAD_K;
	*k = (uint32_t)kk;
	*n = (uint32_t)nn;
	return 0;
}

/* The value of a key every shard must have, or NULL after a message. */
static const char *required(const struct shard_member *s, const char *key,
			    const char *why)
{
	const char *v = rec_header_get(s->hdr, key);

	if (!v)
		prog_err("'%s': no '%s' in its header: %s", s->name, key, why);
	return v;
}

/* The pairs shards must have equal: all but producer, stage and shard. */
static int compared(const char *key)
{
	return strcmp(key, "producer") && strcmp(key, "stage") &&
	       strcmp(key, "shard");
}

/* The index of the next compared pair of h from i on, or len. */
static size_t next_compared(const rec_header *h, size_t i)
{
	const char *k, *v;

	for (; i < rec_header_len(h); i++) {
		rec_header_entry(h, i, &k, &v);
		if (compared(k))
			break;
	}
	return i;
}

/* Every compared pair of s equals ref's, in order; else one line naming
 * the first key that differs and both values. */
static int same_pairs(const struct shard_member *s, const struct shard_member *ref)
{
	const rec_header *a = s->hdr;
	const rec_header *b = ref->hdr;
	size_t i = next_compared(a, 0), j = next_compared(b, 0);
	const char *ka = NULL, *va = NULL, *kb = NULL, *vb = NULL;

	for (;; i = next_compared(a, i + 1), j = next_compared(b, j + 1)) {
		int end_a = i == rec_header_len(a);
		int end_b = j == rec_header_len(b);

		if (end_a && end_b)
			return 0;
		if (!end_a)
			rec_header_entry(a, i, &ka, &va);
		if (!end_b)
			rec_header_entry(b, j, &kb, &vb);
		if (end_a || end_b || strcmp(ka, kb) || strcmp(va, vb))
			break;
	}
	if (i < rec_header_len(a) && j < rec_header_len(b) && !strcmp(ka, kb))
		prog_err("'%s': %s is '%s', in '%s' '%s': the shards do not "
			 "agree", s->name, ka, va, ref->name, vb);
	else if (j == rec_header_len(b))
		prog_err("'%s': %s is '%s', '%s' has no more pairs: the "
			 "shards do not agree", s->name, ka, va, ref->name);
	else if (i == rec_header_len(a))
		prog_err("'%s': no more pairs, '%s' has %s = '%s': the shards "
			 "do not agree", s->name, ref->name, kb, vb);
	else
		prog_err("'%s': %s = '%s' where '%s' has %s = '%s': the "
			 "shards do not agree", s->name, ka, va, ref->name, kb,
			 vb);
	return -1;
}

/* Reads s's shard value into s->k and its N into *n. */
static int read_shard(struct shard_member *s, uint32_t *n,
		      const struct shard_words *w)
{
	const char *v = required(s, "shard", w->whole);

	if (!v)
		return -1;
	if (shard_value_parse(v, &s->k, n)) {
		prog_err("'%s': shard: invalid value '%s' (expected K/N, "
			 "0 <= K < N)", s->name, v);
		return -1;
	}
	return 0;
}

/* s (not the reference) against ref: N, job, clips, then the rest. */
static int agree(struct shard_member *s, const struct shard_member *ref,
		 uint32_t n, const struct shard_words *w)
{
	const rec_header *a = s->hdr;
	const rec_header *b = ref->hdr;
	uint32_t n_s;

	if (read_shard(s, &n_s, w))
		return -1;
	if (n_s != n) {
		prog_err("'%s': shard is '%s', in '%s' '%s': another number "
			 "of shards", s->name, rec_header_get(a, "shard"),
			 ref->name, rec_header_get(b, "shard"));
		return -1;
	}
	if (!required(s, "job", "shards name their job (wavcat --shard "
		      "writes it)") ||
	    !required(s, "clips", "shards give the job's clips"))
		return -1;
	if (strcmp(rec_header_get(a, "job"), rec_header_get(b, "job"))) {
		prog_err("'%s': job is '%s', in '%s' '%s': a shard of another "
			 "job", s->name, rec_header_get(a, "job"), ref->name,
			 rec_header_get(b, "job"));
		return -1;
	}
	if (strcmp(rec_header_get(a, "clips"), rec_header_get(b, "clips"))) {
		prog_err("'%s': clips is '%s', in '%s' '%s': the shards do not "
			 "agree", s->name, rec_header_get(a, "clips"),
			 ref->name, rec_header_get(b, "clips"));
		return -1;
	}
	return same_pairs(s, ref);
}

/* The reference stream's own fields: shard, job, clips. */
static int check_first(struct shard_member *s, const struct shard_words *w,
		       uint32_t *n, uint64_t *job_clips)
{
	const char *clips;

	if (read_shard(s, n, w) ||
	    !required(s, "job", "shards name their job (wavcat --shard "
		      "writes it)") ||
	    !(clips = required(s, "clips", "shards give the job's clips")))
		return -1;
	if (parse_u64(clips, UINT64_MAX, job_clips)) {
		prog_err("'%s': clips: invalid value '%s' (expected a count)",
			 s->name, clips);
		return -1;
	}
	return 0;
}

/* The stream among the first n of s that holds shard k, or NULL. */
static const struct shard_member *holding(const struct shard_member *s,
					  size_t n, uint32_t k)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].k == k)
			return &s[i];
	return NULL;
}

int shard_set_check(struct shard_member *s, size_t n,
		    const struct shard_words *w, uint32_t *shards,
		    uint64_t *clips)
{
	const struct shard_member *twin;

	if (check_first(&s[0], w, shards, clips))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (i && agree(&s[i], &s[0], *shards, w))
			return -1;
		if ((twin = holding(s, i, s[i].k))) {
			prog_err("'%s': shard %" PRIu32 "/%" PRIu32 " is "
				 "given twice (also '%s')", s[i].name,
				 s[i].k, *shards, twin->name);
			return -1;
		}
	}
	/* n distinct K below N: all there when n = N, else the first
	 * missing one is at most n */
	for (uint32_t k = 0; n < *shards; k++)
		if (!holding(s, n, k)) {
			prog_err("shard %" PRIu32 "/%" PRIu32 " is missing: "
				 "%zu %s%s given for %" PRIu32 " shards",
				 k, *shards, n, w->unit, n == 1 ? "" : "s",
				 *shards);
			return -1;
		}
	return 0;
}

/* Appends "K/N<TAB>stage" for each stage value of shard K's header. */
static int add_shard_stages(rec_header *h, const rec_header *in,
			    uint32_t k, uint32_t n)
{
	size_t count = rec_header_count(in, "stage");

	for (size_t i = 0; i < count; i++) {
		const char *v = rec_header_get_nth(in, "stage", i);
		size_t len = strlen(v) + 32;
		char *pair = malloc(len);
		int err;

		if (!pair)
			return REC_E_NOMEM;
		snprintf(pair, len, "%" PRIu32 "/%" PRIu32 "\t%s", k, n, v);
		err = rec_header_add(h, "shard_stage", pair);
		free(pair);
		if (err)
			return err;
	}
	return 0;
}

rec_header *shards_merged_header(const rec_header *const *by_k, uint32_t n)
{
	rec_header *h = rec_header_dup(by_k[0]);
	int err = !h;

	if (h) {
		rec_header_del(h, "shard");
		rec_header_del(h, "stage");
	}
	for (uint32_t k = 0; k < n && !err; k++)
		err = add_shard_stages(h, by_k[k], k, n);
	if (err) {
		rec_header_free(h);
		return NULL;
	}
	return h;
}
