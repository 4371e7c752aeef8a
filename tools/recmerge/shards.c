/*
 * shards.c - do the given streams make up one job's shards, and the
 * merged stream's header (formats/record.md, Shard streams); the rules
 * and their messages are tools/common/shards.c's, shared with h5pack
 * --merge.
 */
#include <stdlib.h>

#include "../common/prog.h"
#include "../common/shards.h"
#include "recmerge.h"

int shards_check(struct shard *s, size_t n, struct job *job)
{
	static const struct shard_words words = {
		"stream", "a whole stream, not a shard (recmerge merges the "
		"shards of one job)"
	};
	struct shard_member *m = calloc(n, sizeof(*m));
	int err;

	job->by_k = NULL;
	if (!m) {
		prog_err("out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		m[i].name = s[i].name;
		m[i].hdr = rec_reader_header(s[i].r);
	}
	err = shard_set_check(m, n, &words, &job->n, &job->clips);
	for (size_t i = 0; i < n && !err; i++)
		s[i].k = m[i].k;
	free(m);
	if (err)
		return -1;
	job->by_k = calloc(n, sizeof(*job->by_k));
	if (!job->by_k) {
		prog_err("out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		job->by_k[s[i].k] = &s[i];
	return 0;
}

rec_header *shards_output_header(const struct job *job, int argc,
				 char **argv)
{
	const rec_header **by_k = calloc(job->n, sizeof(*by_k));
	rec_header *h = NULL;
	int err = !by_k;

	for (uint32_t k = 0; k < job->n && !err; k++)
		by_k[k] = rec_reader_header(job->by_k[k]->r);
	if (!err)
		h = shards_merged_header(by_k, job->n);
	free(by_k);
	err = !h || rec_header_set(h, "producer", "recmerge "
				   MELPIPE_VERSION) ||
	      rec_header_add_stage(h, "recmerge", MELPIPE_VERSION, argc, argv);
	if (err) {
		prog_err("out of memory");
		rec_header_free(h);
		return NULL;
	}
	return h;
}
