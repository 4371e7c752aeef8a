/*
 * rec_read_shm.c - the reader's side of the shared-memory path
 * (formats/record.md, version 5): ring records attach the rings they
 * offer, a shared record's reference resolves to its payload in a ring,
 * whose CRC is checked where it lies (or, for a caller that checks it
 * where it copies the payload to, handed over: defer_shm_crc), and a
 * payload's slot stays held until the next record, or for as long as the
 * caller holds it (rec_reader_hold).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "rec.h"
#include "rec_int.h"
#include "rec_read_int.h"
#include "rec_shm.h"
#include "shmring.h"

/* A shared record's payload: resolves its reference and checks the CRC
 * the record would have inline (its header without the shared flag, the
 * version that gives, data_len = raw_len) over the header, the metadata
 * and the payload where it lies in the ring; *data then points there.
 * With defer_crc the payload is not hashed: the CRC it must have is
 * derived from the record's and the caller takes it (rec_reader_take_crc)
 * or rd_shared_done() checks it before the next record. */
int rd_shared(rec_reader *r, const struct rhdr *h, const unsigned char **data)
{
	const unsigned char *p = r->buf + r->pos, *payload;
	unsigned char head[REC_HDR_SIZE];
	struct rhdr ih = *h;
	struct shm_ref ref;
	uint32_t hm, pc, crc;
	char why[256];

	shm_ref_get(p + REC_HDR_SIZE + h->meta_len, &ref);
	payload = shm_rd_resolve(&r->shm, &ref, h->raw_len, why, sizeof(why));
	if (payload == NULL)
		return rd_fail(r, REC_E_FORMAT, "%s", why);
	ih.flags &= ~REC_F_SHARED;
	ih.version = rec_version(ih.type, ih.flags);
	ih.data_len = h->raw_len;
	ih.crc = 0;
	rhdr_put(head, &ih);
	hm = crc32c(crc32c(0, head, REC_HDR_SIZE), p + REC_HDR_SIZE,
		    h->meta_len);
	if (r->defer_crc) {
		/* crc = hm x^(8 raw_len) + the payload's CRC (mod P) */
		r->crc_due = 1;
		r->crc_want = h->crc ^ crc32c_combine(hm, 0, h->raw_len);
		r->due_ptr = payload;
		r->due_len = h->raw_len;
		r->due_ring = ref.ring;
		r->due_slot = ref.slot;
		r->data_crc = r->crc_want;
		r->have_data_crc = r->want_data_crc;
		r->shared = 1;
		*data = payload;
		return REC_OK;
	}
	pc = crc32c(0, payload, h->raw_len);
	crc = crc32c_combine(hm, pc, h->raw_len);
	if (crc != h->crc)
		return rd_fail(r, REC_E_CRC, "checksum mismatch of a payload "
			       "in shared memory, ring %" PRIu32 " slot %"
			       PRIu32 " (stored 0x%08" PRIx32 ", computed "
			       "0x%08" PRIx32 ")", ref.ring, ref.slot, h->crc,
			       crc);
	r->data_crc = pc;
	r->have_data_crc = r->want_data_crc;
	r->shared = 1;
	*data = payload;
	return REC_OK;
}

/* A payload in a ring stays where it is (it is not ours to move); one
 * passed on from a place not 16-byte aligned, for a caller that needs
 * alignment, is copied out. NULL when out of memory. */
const void *rd_shared_align(rec_reader *r, const rec_item *it,
			    const unsigned char *data)
{
	if (r->unaligned || (uintptr_t)data % PAYLOAD_ALIGN == 0)
		return data;
	if (r->zcap < it->data_len || r->zbuf == NULL) {
		unsigned char *nb = realloc(r->zbuf, it->data_len);

		if (nb == NULL)
			return NULL;
		r->zbuf = nb;
		r->zcap = it->data_len;
	}
	memcpy(r->zbuf, data, it->data_len);
	return r->zbuf;
}

/* A ring record (version 5): checked, then the ring it offers is
 * attached when the reader takes them; it is no data record, counted
 * nowhere and outside the stream's checksum. */
int rd_ring(rec_reader *r, const unsigned char *meta, const struct rhdr *h)
{
	struct shm_offer o;
	char why[256];

	if (rd_fixed_size(r, h, "ring record", SHM_RING_META))
		return r->state;
	if (get32(meta + 44) != 0)
		return rd_fail(r, REC_E_FORMAT, "ring record reserved field "
			       "is not 0");
	shm_offer_get(meta, &o);
	if (shm_rd_offer(&r->shm, &o, why, sizeof(why)))
		return rd_fail(r, REC_E_FORMAT, "%s", why);
	return REC_OK;
}

struct shm_rd *rec_reader_shm_rd(rec_reader *r)
{
	return &r->shm;
}

void rec_reader_shm(const rec_reader *r, rec_shm_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->records = r->shm.records;
	rep->bytes = r->shm.bytes;
	snprintf(rep->why, sizeof(rep->why), "%s", r->shm.why);
}

/* The deferred check, on this thread. */
static int rd_check_due(rec_reader *r)
{
	uint32_t got;

	r->crc_due = 0;
	got = crc32c(0, r->due_ptr, r->due_len);
	if (got != r->crc_want)
		return rd_fail(r, REC_E_CRC, "checksum mismatch of a payload "
			       "in shared memory, ring %" PRIu32 " slot %"
			       PRIu32 " (the payload's CRC32C must be 0x%08"
			       PRIx32 ", computed 0x%08" PRIx32 ")",
			       r->due_ring, r->due_slot, r->crc_want, got);
	return REC_OK;
}

int rd_shared_done(rec_reader *r)
{
	int err = r->crc_due ? rd_check_due(r) : REC_OK;

	shm_rd_release(&r->shm);
	r->shared = 0;
	return err;
}

int rec_reader_take_crc(rec_reader *r, uint32_t *want)
{
	if (r == NULL || r->state || !r->crc_due)
		return 0;
	r->crc_due = 0;
	*want = r->crc_want;
	return 1;
}

int rec_reader_check_crc(rec_reader *r)
{
	if (r == NULL)
		return REC_E_INVAL;
	if (r->state)
		return r->state;
	return r->crc_due ? rd_check_due(r) : REC_OK;
}

int rec_reader_hold(rec_reader *r, rec_hold *h)
{
	struct shm_rd *s = &r->shm;

	if (r->state || !s->held)
		return 0;
	h->ring = s->rings[s->held_i].ring;
	h->slot = s->held_slot;
	h->ptr = s->held_ptr;
	h->len = s->held_len;
	s->held = 0; /* the next read leaves it alone */
	return 1;
}

void rec_hold_release(rec_hold *h)
{
	if (h->ring == NULL)
		return;
	shmring_release(h->ring, h->slot);
	h->ring = NULL;
}

const void *rec_hold_area(const rec_hold *h, uint64_t *bytes)
{
	return shmring_data(h->ring, bytes);
}
