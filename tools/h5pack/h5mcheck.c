/*
 * h5mcheck.c - do the given files make up one job's shard files, and the
 * merged dataset's header (formats/hdf5.md, Shard files).
 *
 * The rules are recmerge's for shard streams (formats/record.md, Shard
 * streams; tools/common/shards.c), applied to the stream header each
 * file keeps (its root attribute stream_header), and so are the messages.
 * A shard file also holds one /clips row for each of its clips, which is
 * checked here.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "../common/shards.h"
#include "h5merge.h"

/* Shard K of N holds the clips K, K + N, ...: one row of /clips each. */
static int check_clip_rows(const struct shard_file *f, const struct merge *m)
{
	uint64_t want = m->clips > f->k ? (m->clips - f->k + m->n - 1) / m->n
					: 0;

	if (f->c_path.dims[0] == want)
		return 0;
	prog_err("'%s': /clips has %" PRIu64 " %s, shard %" PRIu32 "/%"
		 PRIu32 " of %" PRIu64 " %s holds %" PRIu64, f->name,
		 (uint64_t)f->c_path.dims[0],
		 prog_plural(f->c_path.dims[0], "row", "rows"), f->k, m->n,
		 m->clips, prog_plural(m->clips, "clip", "clips"), want);
	return -1;
}

static int check_all(struct merge *m)
{
	static const struct shard_words words = {
		"file", "a whole dataset, not a shard (h5pack --merge merges "
		"the shard files of one job)"
	};
	size_t n = m->n_files;
	struct shard_member *sm = calloc(n, sizeof(*sm));
	int err;

	if (!sm) {
		prog_err("out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		sm[i].name = m->f[i].name;
		sm[i].hdr = m->f[i].hdr;
	}
	err = shard_set_check(sm, n, &words, &m->n, &m->clips);
	for (size_t i = 0; i < n && !err; i++)
		m->f[i].k = sm[i].k;
	free(sm);
	for (size_t i = 0; i < n && !err; i++)
		err = check_clip_rows(&m->f[i], m);
	return err ? -1 : 0;
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

rec_header *merge_header(const struct merge *m)
{
	const rec_header **by_k = calloc(m->n, sizeof(*by_k));
	rec_header *h = NULL;

	if (by_k) {
		for (uint32_t k = 0; k < m->n; k++)
			by_k[k] = m->by_k[k]->hdr;
		h = shards_merged_header(by_k, m->n);
		free(by_k);
	}
	if (!h)
		prog_err("out of memory");
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
