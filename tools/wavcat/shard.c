/*
 * shard.c - one job cut into shards (formats/record.md, Shard streams):
 * the --shard argument, which clips shard K of N decodes, and the job's
 * fingerprint that every shard of one job, and the whole run, agree on.
 *
 * The fingerprint is computed from the whole listing, never from what
 * one shard decodes: a shard proves it belongs to the job by the clips
 * it did not open as much as by those it did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rec.h"
#include "../common/shards.h"
#include "wavcat.h"

int shard_parse(const char *arg, struct shard_sel *s)
{
	return shard_value_parse(arg, &s->k, &s->n);
}

uint64_t shard_clips(const struct shard_sel *s, uint64_t clips)
{
	return clips > s->k ? (clips - s->k - 1) / s->n + 1 : 0;
}

uint64_t shard_clip_index(const struct shard_sel *s, uint64_t j)
{
	return s->k + j * s->n;
}

/* The header pairs the fingerprint leaves out: they differ from shard to
 * shard (producer, stage, shard), are its result (job), or follow from
 * the clips hashed already (clips). */
static int job_leaves_out(const char *key)
{
	static const char *const out[] = { "producer", "stage", "shard",
					   "job", "clips" };
	size_t i;

	for (i = 0; i < sizeof(out) / sizeof(out[0]); i++)
		if (strcmp(key, out[i]) == 0)
			return 1;
	return 0;
}

/* Adds s and its NUL. */
static void hash_str(struct sha1_ctx *c, const char *s)
{
	sha1_update(c, s, strlen(s) + 1);
}

/* Adds v in decimal ("%ld") and its NUL, written by hand: snprintf
 * took much of this pass over the listing, which the header waits for. */
static void hash_dec(struct sha1_ctx *c, long v)
{
	char num[24], *p = num + sizeof(num);
	unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;

	*--p = '\0';
	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--p = '-';
	sha1_update(c, p, (size_t)(num + sizeof(num) - p));
}

int shard_job(struct clip_list *cl, const struct label_table *lt,
	      const struct splitter *sp, const struct rec_header *h,
	      char hex[41])
{
	struct sha1_ctx ctx;
	struct clip_merge *m;
	unsigned char md[20];
	const char *k, *v;
	struct clip c;
	size_t i;
	int got;

	sha1_init(&ctx);
	if ((m = inputs_open(cl)) == NULL)
		return -1;
	while ((got = inputs_read(cl, m, &c)) > 0) {
		hash_str(&ctx, c.key);
		hash_dec(&ctx, (long)labels_of(lt, &c));
		hash_dec(&ctx, split_of(sp, &c));
	}
	inputs_close(m);
	if (got < 0)
		return -1;
	for (i = 0; i < rec_header_len(h); i++) {
		rec_header_entry(h, i, &k, &v);
		if (job_leaves_out(k))
			continue;
		hash_str(&ctx, k);
		hash_str(&ctx, v);
	}
	sha1_final(&ctx, md);
	for (i = 0; i < sizeof(md); i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}
