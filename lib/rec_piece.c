/*
 * rec_piece.c - items in pieces (format version 3): the rules of a
 * piece's own fields, and of its place in the stream: after a piece
 * flagged more comes the next piece of the same item, repeating its
 * fields, or a skipped record that ends the item cut short; a piece
 * flagged cont comes after a piece flagged more and nowhere else; the
 * stream does not end inside an item.
 *
 * The reader and the writer apply the same rules (through rec_int.h).
 * Their per-record paths come here only for a piece or the record after
 * one flagged more, so that streams without pieces pay one branch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"
#include "rec_int.h"

#define PIECE_FLAGS (REC_F_MORE | REC_F_CONT)

int rec_item_is_piece(const rec_item *it)
{
	return it && (it->flags & PIECE_FLAGS) != 0;
}

const char *rec_piece_flag_names(uint32_t flags)
{
	if ((flags & PIECE_FLAGS) == PIECE_FLAGS)
		return "the more and cont flags";
	return flags & REC_F_MORE ? "the more flag" : "the cont flag";
}

const char *rec_piece_flags_refusal(int type, uint32_t flags, char *buf,
				    size_t size)
{
	if (flags & ~PIECE_FLAGS) {
		snprintf(buf, size, "unknown item flags 0x%02" PRIx32, flags);
		return buf;
	}
	if (flags && type != REC_T_AUDIO && type != REC_T_FEATURES) {
		snprintf(buf, size, "%s on a %s record (only audio and "
			 "features records come in pieces)",
			 rec_piece_flag_names(flags), rec_type_name(type));
		return buf;
	}
	return NULL;
}

/* The rules of a piece's own fields: only the last piece of an item may
 * be empty, and it gives the clip's length. */
static const char *piece_fields(const rec_item *it)
{
	uint32_t n = it->type == REC_T_AUDIO ? it->dim0 : it->dim1;

	if ((it->flags & REC_F_MORE) && n == 0)
		return it->type == REC_T_AUDIO
		       ? "a piece of 0 samples flagged more (only the last "
			 "piece of an item may be empty)"
		       : "a piece of 0 frames flagged more (only the last "
			 "piece of an item may be empty)";
	if (it->flags == REC_F_CONT && it->clip_samples == 0)
		return "the last piece of an item with clip_samples 0 (it "
		       "gives the clip's length)";
	return NULL;
}

/* "a piece flagged cont whose FIELD (now) differs from the piece
 * before (then)". */
static const char *differs(char *buf, size_t size, const char *field,
			   int64_t now, int64_t then)
{
	snprintf(buf, size, "a piece flagged cont whose %s (%" PRId64
		 ") differs from the piece before (%" PRId64 ")", field, now,
		 then);
	return buf;
}

/* The fields a piece flagged cont repeats from the piece p before it,
 * in the spec's order (clip and segment are checked already), and its
 * offset: right after p's samples (audio), after p's offset (features,
 * whose offsets count the frames' hops). */
static const char *cont_fields(const rec_item *p, const rec_item *it,
			       char *buf, size_t size)
{
	if (it->type != p->type) {
		snprintf(buf, size, "a piece flagged cont whose type (%s) "
			 "differs from the piece before (%s)",
			 rec_type_name(it->type), rec_type_name(p->type));
		return buf;
	}
	if (it->key_len != p->key_len ||
	    (it->key_len && memcmp(it->key, p->key, it->key_len) != 0))
		return "a piece flagged cont whose key differs from the piece "
		       "before";
	if (it->label != p->label)
		return differs(buf, size, "label", it->label, p->label);
	if (it->sample_rate != p->sample_rate)
		return differs(buf, size, "sample_rate", it->sample_rate,
			       p->sample_rate);
	if (it->split != p->split)
		return differs(buf, size, "split", it->split, p->split);
	if (it->dtype != p->dtype) {
		snprintf(buf, size, "a piece flagged cont whose dtype (%s) "
			 "differs from the piece before (%s)",
			 rec_dtype_name(it->dtype), rec_dtype_name(p->dtype));
		return buf;
	}
	if (it->type == REC_T_AUDIO && it->dim1 != p->dim1)
		return differs(buf, size, "dim1", it->dim1, p->dim1);
	if (it->type == REC_T_FEATURES && it->dim0 != p->dim0)
		return differs(buf, size, "dim0", it->dim0, p->dim0);
	if (it->type == REC_T_AUDIO &&
	    (it->offset < p->offset || it->offset - p->offset != p->dim0)) {
		snprintf(buf, size, "a piece flagged cont at offset %" PRIu64
			 ", not where the piece before ends (%" PRIu64 " + %"
			 PRIu32 ")", it->offset, p->offset, p->dim0);
		return buf;
	}
	if (it->type == REC_T_FEATURES && it->offset <= p->offset) {
		snprintf(buf, size, "a piece flagged cont at offset %" PRIu64
			 ", not after the piece before (%" PRIu64 ")",
			 it->offset, p->offset);
		return buf;
	}
	if (p->clip_samples && it->clip_samples != p->clip_samples) {
		snprintf(buf, size, "a piece flagged cont whose clip_samples (%"
			 PRIu64 ") differs from the piece before (%" PRIu64
			 ")", it->clip_samples, p->clip_samples);
		return buf;
	}
	return NULL;
}

/* The place of it after the records before, o->open or not. */
static const char *piece_order(const struct rec_order *o, const rec_item *it,
			       char *buf, size_t size)
{
	const rec_item *p = &o->piece;

	if (!o->open && (it->flags & REC_F_CONT)) {
		snprintf(buf, size, "a piece flagged cont (clip %" PRIu64
			 " segment %" PRIu32 ") without a piece flagged more "
			 "before it", it->clip, it->segment);
		return buf;
	}
	if (!o->open) /* the first piece of an item */
		return rec_order_after(o, it, buf, size);
	if ((it->type != REC_T_SKIPPED && !(it->flags & REC_F_CONT)) ||
	    it->clip != p->clip || it->segment != p->segment) {
		snprintf(buf, size, "%s %s of clip %" PRIu64 " segment %"
			 PRIu32 " after a piece of clip %" PRIu64 " segment %"
			 PRIu32 " flagged more (a piece flagged cont or a "
			 "skipped record of that clip and segment must "
			 "follow)", rec_type_name(it->type),
			 it->flags & REC_F_CONT ? "piece flagged cont"
			 : "record", it->clip, it->segment, p->clip,
			 p->segment);
		return buf;
	}
	if (it->type == REC_T_SKIPPED) /* the item ends cut short */
		return NULL;
	return cont_fields(p, it, buf, size);
}

int rec_piece_check(const struct rec_order *o, const rec_item *it,
		    const char **why, char *buf, size_t size)
{
	if ((*why = rec_piece_flags_refusal(it->type, it->flags, buf, size)))
		return REC_E_FORMAT;
	if (it->flags && (*why = piece_fields(it)))
		return REC_E_FORMAT;
	if ((*why = piece_order(o, it, buf, size)))
		return REC_E_ORDER;
	return REC_OK;
}

int rec_piece_room(struct rec_order *o, const rec_item *it)
{
	if (!(it->flags & REC_F_MORE) || o->key)
		return REC_OK;
	o->key = malloc(MAX_KEY + 1);
	return o->key ? REC_OK : REC_E_NOMEM;
}

void rec_piece_note(struct rec_order *o, const rec_item *it)
{
	rec_order_note(o, it);
	o->open = (it->flags & REC_F_MORE) != 0;
	if (!o->open)
		return;
	o->piece = *it;
	if (it->key_len)
		memcpy(o->key, it->key, it->key_len);
	o->piece.key = o->key;
	o->piece.data = NULL;
	o->piece.data_len = 0;
}

const char *rec_piece_end_check(const struct rec_order *o, char *buf,
				size_t size)
{
	if (o->source) {
		snprintf(buf, size, "the stream ends after the source record "
			 "of clip %" PRIu64 " (a data record of its clip must "
			 "follow a source record)", o->source_clip);
		return buf;
	}
	if (!o->open)
		return NULL;
	snprintf(buf, size, "the stream ends after a piece of clip %" PRIu64
		 " segment %" PRIu32 " flagged more (its item goes on)",
		 o->piece.clip, o->piece.segment);
	return buf;
}

void rec_order_free(struct rec_order *o)
{
	free(o->key);
	o->key = NULL;
	o->open = 0;
	o->source = 0;
}
