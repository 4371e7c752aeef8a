/*
 * rec_read_item.c - the reader's side of data records (audio, features,
 * windows, skipped and source records): their metadata read and checked
 * against the rules of rec_item.c, their place after the records before
 * (order, pieces: rec_piece.c), and the item handed out, its key
 * terminated and its payload aligned to 16 bytes.
 */
#include <inttypes.h>
#include <string.h>

#include "rec.h"
#include "rec_int.h"
#include "rec_read_int.h"

/* The fixed part of a data record's metadata (REC_ITEM_META_SIZE bytes
 * at p) into *it. */
static void item_meta_get(const unsigned char *p, rec_item *it)
{
	it->clip = get64(p);
	it->offset = get64(p + 8);
	it->clip_samples = get64(p + 16);
	it->segment = get32(p + 24);
	it->label = (int32_t)get32(p + 28);
	it->sample_rate = get32(p + 32);
	it->split = p[36];
	it->dtype = p[37];
	it->key_len = get16(p + 38);
	it->dim0 = get32(p + 40);
	it->dim1 = get32(p + 44);
}

/* Checks a data or source record's metadata (and a source record's
 * pairs, at data) and fills *it (but for data). */
int rd_check_item(rec_reader *r, const unsigned char *meta,
		  const unsigned char *data, const struct rhdr *h,
		  rec_item *it)
{
	char why[256];
	const char *bad;

	if (h->meta_len < REC_ITEM_META_SIZE)
		return rd_fail(r, REC_E_FORMAT, "%s record with %" PRIu32
			       " bytes of metadata (at least %u)",
			       rec_type_name((int)h->type), h->meta_len,
			       REC_ITEM_META_SIZE);
	memset(it, 0, sizeof(*it));
	it->type = (int)h->type;
	it->flags = h->flags & (REC_F_MORE | REC_F_CONT);
	item_meta_get(meta, it);
	if (h->meta_len != item_meta_size(it))
		return rd_fail(r, REC_E_FORMAT, "metadata length %" PRIu32
			       " is not 48 + key length %zu%s", h->meta_len,
			       it->key_len, item_has_windows(it->type) ?
			       " + 16" : "");
	it->key = (const char *)meta + REC_ITEM_META_SIZE;
	if (item_has_windows(it->type)) {
		const unsigned char *wf = meta + REC_ITEM_META_SIZE +
					  it->key_len;

		it->win_len = get32(wf);
		it->win_hop = get32(wf + 4);
		it->n_windows = get32(wf + 8);
		it->win_flags = get32(wf + 12);
	}
	bad = rec_item_check(it, h->raw_len, why, sizeof(why));
	if (bad == NULL && it->type == REC_T_SOURCE)
		bad = rec_source_pairs_check(data, h->raw_len, why,
					     sizeof(why));
	if (bad)
		return rd_fail(r, REC_E_FORMAT, "%s", bad);
	return REC_OK;
}

/*
 * Moves a payload back by up to 15 bytes onto the metadata before it
 * (already parsed and copied) so that it is aligned to 16 bytes: the
 * stream has no padding, and typed access to a misaligned array is
 * undefined behaviour. Skipped records' reasons are text and stay put.
 */
static const unsigned char *rd_align(const rec_item *it, unsigned char *data)
{
	size_t mis = (uintptr_t)data % PAYLOAD_ALIGN;

	if (mis == 0 || it->type == REC_T_SKIPPED || it->type == REC_T_SOURCE)
		return data;
	memmove(data - mis, data, it->data_len);
	return data - mis;
}

/* The checks of a piece, or of the record after one flagged more, and
 * the order's note of it. */
static int rd_piece(rec_reader *r, const rec_item *it)
{
	char why[256];
	const char *bad;
	int err = rec_piece_check(&r->order, it, &bad, why, sizeof(why));

	if (err)
		return rd_fail(r, err, "%s", bad);
	if (rec_piece_room(&r->order, it))
		return rd_fail(r, REC_E_NOMEM, "out of memory");
	rec_piece_note(&r->order, it);
	return REC_OK;
}

/* Checks a data record against the one before it and completes *it. */
int rd_accept_item(rec_reader *r, const struct rhdr *h,
		   const unsigned char *data, rec_item *it)
{
	char why[256];
	const char *bad;
	int err;

	if (it->type == REC_T_SOURCE) {
		if ((bad = rec_source_place(&r->order, it, why, sizeof(why))))
			return rd_fail(r, REC_E_ORDER, "%s", bad);
		rec_source_note(&r->order, it);
	} else if (rec_order_pieces(&r->order, it)) {
		if ((err = rd_piece(r, it)))
			return err;
	} else if ((bad = rec_order_after(&r->order, it, why, sizeof(why)))) {
		return rd_fail(r, REC_E_ORDER, "%s", bad);
	} else {
		rec_order_note(&r->order, it);
	}
	/* The key is small: copy it out to terminate it, since the payload
	 * follows it in the buffer. */
	memcpy(r->key, it->key, it->key_len);
	r->key[it->key_len] = '\0';
	it->key = r->key;
	it->data_len = h->raw_len;
	if (r->shared)
		it->data = rd_shared_align(r, it, data);
	else
		it->data = data == r->zbuf || r->unaligned ? data
			   : rd_align(it, (unsigned char *)data);
	if (it->data == NULL)
		return rd_fail(r, REC_E_NOMEM, "out of memory for a payload "
			       "of %zu bytes", it->data_len);
	r->ndata++;
	if (h->type == REC_T_SKIPPED)
		r->nskipped++;
	else if (h->type != REC_T_SOURCE)
		r->nitems++;
	return REC_OK;
}
