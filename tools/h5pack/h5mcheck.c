/*
 * h5mcheck.c - do the given files make up one job's shard files, and the
 * merged dataset's header (formats/hdf5.md, Shard files).
 *
 * The rules are recmerge's for shard streams (formats/record.md, Shard
 * streams), applied to the stream header each file keeps (its root
 * attribute stream_header), and so are the messages: every header is
 * checked before anything is written, against the file given first, and
 * a refusal names the file, the field and both values.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "h5merge.h"

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

int shard_parse(const char *v, uint32_t *k, uint32_t *n)
{
	const char *slash = strchr(v, '/');
	char kbuf[16];
	uint64_t kk, nn;

	if (!slash || (size_t)(slash - v) >= sizeof(kbuf))
		return -1;
	memcpy(kbuf, v, (size_t)(slash - v));
	kbuf[slash - v] = '\0';
	if (parse_u64(kbuf, UINT32_MAX, &kk) ||
	    parse_u64(slash + 1, UINT32_MAX, &nn) || nn == 0 || kk >= nn)
		return -1;
	*k = (uint32_t)kk;
	*n = (uint32_t)nn;
	return 0;
}

/* The value of a key every shard must have, or NULL after a message. */
static const char *required(const struct shard_file *f, const char *key,
			    const char *why)
{
	const char *v = rec_header_get(f->hdr, key);

	if (!v)
		prog_err("'%s': no '%s' in its header: %s", f->name, key, why);
	return v;
}

/* The pairs shards must have equal: all but producer, stage and shard. */
static int compared(const char *key)
{
	return strcmp(key, "producer") && strcmp(key, "stage") &&
	       strcmp(key, "shard");
}

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

/* Every compared pair of f equals ref's, in order; else one line naming
 * the first key that differs and both values. */
static int same_pairs(const struct shard_file *f,
		      const struct shard_file *ref)
{
	const rec_header *a = f->hdr, *b = ref->hdr;
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
			 "agree", f->name, ka, va, ref->name, vb);
	else if (j == rec_header_len(b))
		prog_err("'%s': %s is '%s', '%s' has no more pairs: the "
			 "shards do not agree", f->name, ka, va, ref->name);
	else if (i == rec_header_len(a))
		prog_err("'%s': no more pairs, '%s' has %s = '%s': the shards "
			 "do not agree", f->name, ref->name, kb, vb);
	else
		prog_err("'%s': %s = '%s' where '%s' has %s = '%s': the "
			 "shards do not agree", f->name, ka, va, ref->name, kb,
			 vb);
	return -1;
}

static int read_shard(struct shard_file *f, uint32_t *n)
{
	const char *v = required(f, "shard", "a whole dataset, not a shard "
				 "(h5pack --merge merges the shard files of "
				 "one job)");

	if (!v)
		return -1;
	if (shard_parse(v, &f->k, n)) {
		prog_err("'%s': shard: invalid value '%s' (expected K/N, "
			 "0 <= K < N)", f->name, v);
		return -1;
	}
	return 0;
}

static int agree(struct shard_file *f, const struct shard_file *ref,
		 uint32_t n)
{
	const rec_header *a = f->hdr, *b = ref->hdr;
	uint32_t n_f;

	if (read_shard(f, &n_f))
		return -1;
	if (n_f != n) {
		prog_err("'%s': shard is '%s', in '%s' '%s': another number "
			 "of shards", f->name, rec_header_get(a, "shard"),
			 ref->name, rec_header_get(b, "shard"));
		return -1;
	}
	if (!required(f, "job", "shards name their job (wavcat --shard "
		      "writes it)") ||
	    !required(f, "clips", "shards give the job's clips"))
		return -1;
	if (strcmp(rec_header_get(a, "job"), rec_header_get(b, "job"))) {
		prog_err("'%s': job is '%s', in '%s' '%s': a shard of another "
			 "job", f->name, rec_header_get(a, "job"), ref->name,
			 rec_header_get(b, "job"));
		return -1;
	}
	if (strcmp(rec_header_get(a, "clips"), rec_header_get(b, "clips"))) {
		prog_err("'%s': clips is '%s', in '%s' '%s': the shards do not "
			 "agree", f->name, rec_header_get(a, "clips"),
			 ref->name, rec_header_get(b, "clips"));
		return -1;
	}
	return same_pairs(f, ref);
}

static int check_first(struct shard_file *f, struct merge *m)
{
	const char *clips;

	if (read_shard(f, &m->n) ||
	    !required(f, "job", "shards name their job (wavcat --shard "
		      "writes it)") ||
	    !(clips = required(f, "clips", "shards give the job's clips")))
		return -1;
	if (parse_u64(clips, INT32_MAX, &m->clips)) {
		prog_err("'%s': clips: invalid value '%s' (expected a count)",
			 f->name, clips);
		return -1;
	}
	return 0;
}

static const struct shard_file *holding(const struct shard_file *f,
					size_t n, uint32_t k)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].k == k)
			return &f[i];
	return NULL;
}

/* Shard K of N holds the clips K, K + N, ...: one row of /clips each. */
static int check_clip_rows(const struct shard_file *f, const struct merge *m)
{
	uint64_t want = m->clips > f->k ? (m->clips - f->k + m->n - 1) / m->n
					: 0;

	if (f->c_path.dims[0] == want)
		return 0;
	prog_err("'%s': /clips has %" PRIu64 " rows, shard %" PRIu32 "/%"
		 PRIu32 " of %" PRIu64 " clips holds %" PRIu64, f->name,
		 (uint64_t)f->c_path.dims[0], f->k, m->n, m->clips, want);
	return -1;
}

static int check_all(struct merge *m)
{
	struct shard_file *f = m->f;
	const struct shard_file *twin;
	size_t n = m->n_files;

	if (check_first(&f[0], m))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (i && agree(&f[i], &f[0], m->n))
			return -1;
		if ((twin = holding(f, i, f[i].k))) {
			prog_err("'%s': shard %" PRIu32 "/%" PRIu32 " is "
				 "given twice (also '%s')", f[i].name, f[i].k,
				 m->n, twin->name);
			return -1;
		}
	}
	for (uint32_t k = 0; n < m->n; k++)
		if (!holding(f, n, k)) {
			prog_err("shard %" PRIu32 "/%" PRIu32 " is missing: "
				 "%zu files given for %" PRIu32 " shards", k,
				 m->n, n, m->n);
			return -1;
		}
	for (size_t i = 0; i < n; i++)
		if (check_clip_rows(&f[i], m))
			return -1;
	return 0;
}

int merge_open(struct merge *m, char **names, size_t n)
{
	memset(m, 0, sizeof(*m));
	m->f = calloc(n, sizeof(*m->f));
	if (!m->f) {
		prog_err("out of memory");
		return -1;
	}
	m->n_files = n;
	for (size_t i = 0; i < n; i++) {
		m->f[i].name = names[i];
		m->f[i].file = -1;
	}
	/* every header first: a wrong file is named before any is read */
	for (size_t i = 0; i < n; i++)
		if (shard_open(&m->f[i]))
			return -1;
	if (check_all(m))
		return -1;
	m->by_k = calloc(n, sizeof(*m->by_k));
	if (!m->by_k) {
		prog_err("out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		m->by_k[m->f[i].k] = &m->f[i];
	return 0;
}

/* Appends "K/N<TAB>stage" for each stage value of shard f. */
static int add_shard_stages(rec_header *h, const struct shard_file *f,
			    uint32_t n)
{
	size_t count = rec_header_count(f->hdr, "stage");

	for (size_t i = 0; i < count; i++) {
		const char *v = rec_header_get_nth(f->hdr, "stage", i);
		size_t len = strlen(v) + 32;
		char *pair = malloc(len);
		int err;

		if (!pair)
			return REC_E_NOMEM;
		snprintf(pair, len, "%" PRIu32 "/%" PRIu32 "\t%s", f->k, n, v);
		err = rec_header_add(h, "shard_stage", pair);
		free(pair);
		if (err)
			return err;
	}
	return 0;
}

rec_header *merge_header(const struct merge *m)
{
	rec_header *h = rec_header_dup(m->by_k[0]->hdr);
	int err = !h;

	if (h) {
		rec_header_del(h, "shard");
		rec_header_del(h, "stage");
	}
	for (uint32_t k = 0; k < m->n && !err; k++)
		err = add_shard_stages(h, m->by_k[k], m->n);
	if (err) {
		prog_err("out of memory");
		rec_header_free(h);
		return NULL;
	}
	return h;
}

void merge_close(struct merge *m)
{
	for (size_t i = 0; m->f && i < m->n_files; i++)
		shard_close(&m->f[i]);
	free(m->f);
	free(m->by_k);
	free(m->scratch);
	memset(m, 0, sizeof(*m));
}
