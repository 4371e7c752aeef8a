/*
 * merge.c - the shards' records interleaved into clip order.
 *
 * Shards are round-robin: clip i is in shard i mod N. So the order is
 * fixed and no heap is needed: for i = 0, 1, 2, ... take all of clip
 * i's records from shard i mod N, until a record of another clip shows;
 * that record waits in its reader's buffer (rec_read() keeps it valid
 * until the next call on that reader) for the shard's next turn. Only
 * the shard whose clip is due is read, so a lagging shard holds the
 * merge up only around its own clips: until its clip comes, and until
 * its next record shows that the clip has ended (the format marks no
 * clip's end). Memory is the N readers' buffers whatever the number of
 * clips.
 *
 * Every record is passed on as read; an uncompressed payload keeps its
 * CRC (rec_reader_data_crc) so the writer does not hash it again.
 */
#include <inttypes.h>

#include "../common/prog.h"
#include "recmerge.h"

/* Reads s's next record into s->next unless one is waiting. 0 (state
 * HAVE or END), or -1 after the reader's message. */
static int fetch(struct shard *s)
{
	int err;

	if (s->state != SHARD_NEED)
		return 0;
	err = rec_read(s->r, &s->next);
	if (err == REC_END) {
		s->state = SHARD_END;
		return 0;
	}
	if (err) {
		prog_err("%s", rec_reader_detail(s->r));
		return -1;
	}
	s->state = SHARD_HAVE;
	return 0;
}

/* The record s has waiting is not clip i, which it should hold next:
 * why, in one line naming the stream, the record and the clip. */
static void refuse_clip(const struct shard *s, const struct job *job,
			uint64_t i)
{
	uint64_t c = s->next.clip, recno = rec_reader_count(s->r);

	if (s->state == SHARD_END)
		prog_err("'%s': shard %" PRIu32 "/%" PRIu32 " ends before "
			 "its clip %" PRIu64 " (the job has %" PRIu64
			 " %s)", s->name, s->k, job->n, i, job->clips,
			 prog_plural(job->clips, "clip", "clips"));
	else if (c >= job->clips)
		prog_err("'%s': record %" PRIu64 " holds clip %" PRIu64
			 ", at or above the job's %" PRIu64 " %s",
			 s->name, recno, c, job->clips,
			 prog_plural(job->clips, "clip", "clips"));
	else if (c % job->n != s->k)
		prog_err("'%s': record %" PRIu64 " holds clip %" PRIu64
			 ", a clip of shard %" PRIu64 "/%" PRIu32 ", not of "
			 "this shard %" PRIu32 "/%" PRIu32, s->name, recno,
			 c, c % job->n, job->n, s->k, job->n);
	else
		prog_err("'%s': shard %" PRIu32 "/%" PRIu32 " has no clip %"
			 PRIu64 " (record %" PRIu64 " holds clip %" PRIu64
			 ")", s->name, s->k, job->n, i, recno, c);
}

static int write_record(struct shard *s, const struct job *job,
			rec_writer *w, struct merge_stats *st)
{
	uint32_t crc;
	int err = rec_reader_data_crc(s->r, &crc) ?
		  rec_write_crc(w, &s->next, crc) : rec_write(w, &s->next);

	if (err)
		return prog_write_failed(job->output, w, err);
	st->records++;
	st->skipped += s->next.type == REC_T_SKIPPED;
	s->state = SHARD_NEED;
	return 0;
}

/* Writes all records of clip i from its shard. */
static int merge_clip(const struct job *job, uint64_t i, rec_writer *w,
		      struct merge_stats *st)
{
	struct shard *s = job->by_k[i % job->n];

	if (fetch(s))
		return -1;
	if (s->state == SHARD_END || s->next.clip != i) {
		refuse_clip(s, job, i);
		return -1;
	}
	while (s->state == SHARD_HAVE && s->next.clip == i)
		if (write_record(s, job, w, st) || fetch(s))
			return -1;
	s->clips++;
	return 0;
}

int merge_clips(const struct job *job, rec_writer *w,
		struct merge_stats *st)
{
	for (uint64_t i = 0; i < job->clips; i++)
		if (merge_clip(job, i, w, st))
			return -1;
	/* every shard at its end: reading to it verifies the trailer */
	for (uint32_t k = 0; k < job->n; k++) {
		struct shard *s = job->by_k[k];

		if (fetch(s))
			return -1;
		if (s->state != SHARD_END) {
			refuse_clip(s, job, job->clips);
			return -1;
		}
	}
	return 0;
}
