/*
 * rec_source.c - source records (format version 4): the input file as
 * wavcat found it (its own rate, channels, frames, format), one record
 * per clip right before the clip's first data record, so that what
 * wavcat alone knows travels with the clip through every stage.
 *
 * The rules: its payload is key NUL value NUL pairs, as a header's; it
 * comes where a record of its clip could and none has come yet, never
 * after a piece flagged more, at most one per clip; a data record of its
 * clip follows it. The reader and the writer apply them (rec_int.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rec.h"
#include "rec_int.h"

const char *rec_source_pairs_check(const void *data, size_t len, char *buf,
				   size_t size)
{
	const char *p = data, *end;
	size_t npairs = 0;

	if (len == 0)
		return NULL;
	end = p + len;
	if (end[-1] != '\0')
		return "source payload does not end with a NUL";
	while (p < end) {
		const char *k = p, *v;
		size_t kl = strlen(k);

		if (!rec_key_valid(k, kl)) {
			snprintf(buf, size, "source pair %zu has an invalid "
				 "key (not [a-z0-9_]+)", npairs);
			return buf;
		}
		v = k + kl + 1;
		if (v >= end) {
			snprintf(buf, size, "source key '%s' has no value",
				 k);
			return buf;
		}
		p = v + strlen(v) + 1;
		npairs++;
	}
	return NULL;
}

const char *rec_source_place(const struct rec_order *o, const rec_item *it,
			     char *buf, size_t size)
{
	if (o->open)
		snprintf(buf, size, "source record of clip %" PRIu64 " after "
			 "a piece of clip %" PRIu64 " segment %" PRIu32
			 " flagged more (a source record comes before its "
			 "clip's first data record)", it->clip, o->piece.clip,
			 o->piece.segment);
	else if (o->source && o->source_clip == it->clip)
		snprintf(buf, size, "a second source record for clip %"
			 PRIu64 " (one per clip at most)", it->clip);
	else if (o->source)
		snprintf(buf, size, "source record of clip %" PRIu64 " right "
			 "after the source record of clip %" PRIu64 " (a data "
			 "record of its clip must follow a source record)",
			 it->clip, o->source_clip);
	else if (o->have_prev && it->clip <= o->clip)
		snprintf(buf, size, "source record of clip %" PRIu64 " after "
			 "a record of clip %" PRIu64 " (a source record comes "
			 "before its clip's first data record)", it->clip,
			 o->clip);
	else
		return NULL;
	return buf;
}

void rec_source_note(struct rec_order *o, const rec_item *it)
{
	o->source = 1;
	o->source_clip = it->clip;
}

const char *rec_source_next(const struct rec_order *o, const rec_item *it,
			    char *buf, size_t size)
{
	if (it->clip == o->source_clip)
		return NULL;
	snprintf(buf, size, "clip %" PRIu64 " segment %" PRIu32 " after the "
		 "source record of clip %" PRIu64 " (a data record of its "
		 "clip must follow a source record)", it->clip, it->segment,
		 o->source_clip);
	return buf;
}

const char *rec_source_get(const rec_item *it, const char *key)
{
	const char *p, *end;

	if (it == NULL || key == NULL || it->type != REC_T_SOURCE ||
	    it->data == NULL)
		return NULL;
	p = it->data;
	end = p + it->data_len;
	while (p < end) {
		const char *k = p, *v;
		const char *kz = memchr(k, '\0', (size_t)(end - k));
		const char *vz;

		if (kz == NULL)
			return NULL;
		v = kz + 1;
		vz = v < end ? memchr(v, '\0', (size_t)(end - v)) : NULL;
		if (vz == NULL)
			return NULL;
		if (strcmp(k, key) == 0)
			return v;
		p = vz + 1;
	}
	return NULL;
}
