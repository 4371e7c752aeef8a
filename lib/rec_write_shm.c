/*
 * rec_write_shm.c - the writer's side of the shared-memory path
 * (formats/record.md, version 5; rec_shm.h): finding the pipe's one
 * reader, offering rings, allocating payloads in the writer's own ring
 * (waiting a little for room), passing on the references its linked
 * reader holds, and the shared records themselves.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buildid.h"
#include "crc32c.h"
#include "rec_write_int.h"
#include "shmring.h"

#define SHM_CHECKS 20           /* reader checks: at payloads 0, 1, 2, 4... */
/* Seconds to wait for room in the ring with no slot coming back before a
 * payload goes inline: a reader that stopped (killed, stopped, or
 * holding what it cannot give back without more input) never stops the
 * stream. Readers of this build give slots back without waiting for more
 * input (formats/record.md), so a wait this long means one of those. */
#define SHM_PATIENCE 0.05
#define SHM_NAP_NS 20000L
/* The most payload bytes the records in the unflushed buffer may refer
 * to (and at most an eighth of their ring): references waiting in the
 * buffer hold their slots and tell the reader nothing, so they go to
 * the pipe about as often as the payloads would inline. */
#define SHM_PENDING_MAX ((uint64_t)1 << 20)

/* The process our references may go to: the pipe's one reader, a stage
 * of this build (with shm 2, whatever it runs), looked for at payloads 0,
 * 1, 2, 4, 8, ... (it may not have started its program yet at first); 0
 * while there is none, -1 with shm 2 when the pipe has no reader process
 * (a test's writer and reader in one process). */
static pid_t wr_shm_reader(rec_writer *w)
{
	struct shm_wr *s = &w->shm;
	uint64_t k = s->payloads++;

	if (s->reader || s->mode == 0)
		return s->reader;
	if (s->checks >= SHM_CHECKS)
		return s->mode == 2 ? (s->reader = -1) : 0;
	if (k > 2 && (k & (k - 1)))
		return 0;
	s->checks++;
	s->reader = shm_pipe_reader(w->fd, s->mode == 1, s->why,
				    sizeof(s->why));
	if (s->reader == 0 && s->mode == 2)
		s->reader = -1;
	if (s->reader)
		s->why[0] = '\0';
	if (s->reader > 0) /* named now: it cannot be once it has gone */
		buildid_pid_name(s->reader, s->reader_name,
				 sizeof(s->reader_name));
	return s->reader;
}

/* Appends a ring record offering o. */
static int wr_offer(rec_writer *w, const struct shm_out_ring *o)
{
	struct rhdr h = { 0 };
	unsigned char meta[SHM_RING_META];
	int have = w->have_data_crc, err;

	shm_offer_put(meta, &o->offer);
	h.type = REC_T_RING;
	h.meta_len = SHM_RING_META;
	w->have_data_crc = 0; /* (inside rec_write_crc(): not this record's) */
	err = wr_emit(w, &h, NULL, meta, NULL);
	w->have_data_crc = have;
	/* to the reader now: references wait for its answer */
	return err ? err : wr_flush(w);
}

/* Whether our reader has attached o's ring. */
static int wr_acked(const struct shm_wr *s, struct shm_out_ring *o)
{
	if (!o->acked)
		o->acked = s->reader > 0 ? shmring_attached(o->ring, s->reader)
			   : o->from == NULL && shmring_acked(o->ring) != 0;
	return o->acked;
}

/* Adds a ring to the stream's table and offers it: REC_OK with *out, 1
 * when the table is full, or a write error. */
static int wr_add_ring(rec_writer *w, struct shmring *ring,
		       const struct shm_in_ring *from,
		       struct shm_out_ring **out)
{
	struct shm_wr *s = &w->shm;
	struct shm_out_ring *o;

	if (s->n == SHM_MAX_RINGS)
		return 1;
	o = &s->rings[s->n];
	memset(o, 0, sizeof(*o));
	o->ring = ring;
	o->from = from;
	if (from) {
		o->offer = from->offer;
		o->offer.pid = (uint32_t)getpid();
		o->offer.fd = (uint32_t)from->fd;
	} else {
		uint64_t bytes;

		shmring_data(ring, &bytes);
		o->offer.pid = (uint32_t)getpid();
		o->offer.fd = (uint32_t)shmring_fd(ring);
		o->offer.bytes = bytes;
		o->offer.slots = SHM_RING_SLOTS;
		o->offer.creator = o->offer.pid;
		memcpy(o->offer.build, buildid_bytes(), 16);
	}
	o->id = o->offer.id = s->n + 1;
	s->n++;
	*out = o;
	return wr_offer(w, o);
}

/* The writer's own ring, made and offered at the first call, when our
 * reader has attached it; else NULL (or a write error in *err). */
static struct shm_out_ring *wr_own_ring(rec_writer *w, int *err)
{
	struct shm_wr *s = &w->shm;
	struct shm_out_ring *o;
	struct shmring *ring;
	int e;

	*err = REC_OK;
	if (s->own >= 0) {
		o = &s->rings[s->own];
		if (!wr_acked(s, o))
			return NULL;
		/* attached: other threads may lease from it now */
		if (!atomic_load_explicit(&s->lease_ring,
					  memory_order_relaxed))
			atomic_store_explicit(&s->lease_ring, o->ring,
					      memory_order_release);
		return o;
	}
	if (s->own_failed)
		return NULL;
	e = shmring_create(&ring, s->ring_bytes, SHM_RING_SLOTS,
			   buildid_bytes());
	if (e) {
		snprintf(s->why, sizeof(s->why), "cannot make a ring: %s",
			 ring && shmring_detail(ring)[0] ? shmring_detail(ring)
			 : shmring_strerror(e));
		shmring_destroy(ring);
		s->own_failed = 1;
		return NULL;
	}
	e = wr_add_ring(w, ring, NULL, &o);
	if (e == 1) {
		shmring_destroy(ring);
		s->own_failed = 1;
		return NULL;
	}
	s->own = (int)(o - s->rings);
	*err = e;
	return NULL; /* offered now: not attached yet */
}

/* shmring_alloc() in our own ring, which leasing threads share. */
static int own_alloc(struct shm_wr *s, struct shmring *ring, size_t len,
		     uint32_t *slot, uint64_t *off, void **ptr)
{
	int e;

	pthread_mutex_lock(&s->mu);
	e = shmring_alloc(ring, len, slot, off, ptr);
	pthread_mutex_unlock(&s->mu);
	return e;
}

/* A slot of len bytes in our own ring. When the ring is full, hands what
 * is buffered to the pipe (it may be what the reader needs to go on and
 * give slots back) and waits for room, as a write(2) waits on a full
 * pipe, for as long as slots keep coming back: the payload goes inline
 * only after SHM_PATIENCE with none back. 0, a shmring error (the
 * payload goes inline), or a write error in *err. */
static int wr_ring_alloc(rec_writer *w, struct shm_out_ring *o, size_t len,
			 uint32_t *slot, uint64_t *off, void **ptr, int *err)
{
	struct shm_wr *s = &w->shm;
	struct timespec nap = { 0, SHM_NAP_NS };
	int e = own_alloc(s, o->ring, len, slot, off, ptr);
	uint64_t seen, now;
	double t0, last;

	*err = REC_OK;
	if (e != SHMRING_E_FULL)
		return e;
	if ((*err = wr_flush(w)))
		return e;
	s->waits++;
	t0 = last = mono_now();
	seen = shmring_freed(o->ring);
	do {
		nanosleep(&nap, NULL);
		e = own_alloc(s, o->ring, len, slot, off, ptr);
		if (e == SHMRING_E_FULL &&
		    (now = shmring_freed(o->ring)) != seen) {
			seen = now;
			last = mono_now();
		}
	} while (e == SHMRING_E_FULL && mono_now() - last < SHM_PATIENCE);
	s->t_wait += mono_now() - t0;
	if (e == SHMRING_E_FULL)
		s->full++;
	return e;
}

/* Offers our reader each ring the linked reader attached and we have not
 * offered yet, as soon as we know our reader: it answers while the
 * payloads before the offer drain, not after the first reference. 0 or a
 * write error. */
static int wr_offer_inputs(rec_writer *w)
{
	struct shm_rd *in = rec_reader_shm_rd(w->link);
	struct shm_wr *s = &w->shm;
	struct shm_out_ring *o;
	int e;

	for (unsigned i = 0; i < in->n; i++) {
		int known = in->rings[i].ring == NULL;

		for (unsigned k = 0; k < s->n && !known; k++)
			known = s->rings[k].from == &in->rings[i];
		if (!known && (e = wr_add_ring(w, in->rings[i].ring,
					       &in->rings[i], &o)) < 0)
			return e;
	}
	return REC_OK;
}

/* The payload at data, when it lies in the payload the linked reader
 * handed out last, as a reference into the same ring (its slot held for
 * our reader): REC_OK with *ref, 1 when it cannot go so, or a write
 * error. */
static int wr_forward(rec_writer *w, const void *data, size_t len,
		      struct shm_ref *ref)
{
	struct shm_wr *s = &w->shm;
	struct shm_rd *in = rec_reader_shm_rd(w->link);
	struct shm_out_ring *o = NULL;
	unsigned i;
	uint32_t slot;
	uint64_t off;
	int e;

	if (!shm_rd_find(in, data, len, &i, &slot, &off))
		return 1;
	for (unsigned k = 0; k < s->n; k++)
		if (s->rings[k].from == &in->rings[i])
			o = &s->rings[k];
	if (o == NULL) {
		e = wr_add_ring(w, in->rings[i].ring, &in->rings[i], &o);
		return e ? e : 1; /* offered now: not attached yet */
	}
	if (!wr_acked(s, o) || shmring_hold(o->ring, slot))
		return 1;
	ref->ring = o->id;
	ref->slot = slot;
	ref->off = off;
	s->forwarded++;
	return REC_OK;
}

/* SHM_PENDING_MAX, or an eighth of ref's ring when that is less. */
static uint64_t pending_max(const struct shm_wr *s, const struct shm_ref *ref)
{
	uint64_t eighth = s->rings[ref->ring - 1].offer.bytes / 8;

	return eighth < SHM_PENDING_MAX ? eighth : SHM_PENDING_MAX;
}

/* Appends the data record it whose payload, len bytes at payload, is in
 * a ring at ref: the record's CRC is the one it would have inline, so
 * that the stream's checksum, and a copy of it made inline again, are
 * the same. */
static int wr_emit_shared(rec_writer *w, const rec_item *it,
			  const struct shm_ref *ref, const void *payload,
			  size_t len)
{
	struct rhdr h = { 0 };
	size_t head = REC_HDR_SIZE + item_meta_size(it);
	size_t total = head + SHM_REF_SIZE;
	unsigned char *p, le[4];
	uint32_t crc;
	int err;

	if (total > w->cap - w->len && (err = wr_flush(w)))
		return err;
	if (total > w->cap && (err = wr_grow(w, total)))
		return err;
	p = w->buf + w->len;
	item_meta_put(p + REC_HDR_SIZE, it);
	h.type = (unsigned)it->type;
	h.flags = it->flags;
	h.version = rec_version(h.type, h.flags);
	h.meta_len = (uint32_t)item_meta_size(it);
	h.raw_len = h.data_len = (uint32_t)len;
	rhdr_put(p, &h);
	crc = crc32c(0, p, head);
	if (w->have_data_crc)
		crc = crc32c_combine(crc, w->data_crc, len);
	else
		crc = crc32c(crc, payload, len);
	h.flags |= REC_F_SHARED;
	h.version = rec_version(h.type, h.flags);
	h.data_len = SHM_REF_SIZE;
	h.crc = crc;
	rhdr_put(p, &h);
	shm_ref_put(p + head, ref);
	put32(le, crc);
	w->stream_crc = crc32c(w->stream_crc, le, 4);
	w->bytes += total;
	w->inline_bytes += head + len; /* the record inline: its payload */
	w->nrec++;
	w->len += total;
	w->shm.records++;
	w->shm.bytes += len;
	wr_count(w, it);
	w->shm.pending += len;
	if (w->shm.pending >= pending_max(&w->shm, ref))
		return wr_flush(w);
	return REC_OK;
}

/* The record it whose payload is the lease being written, by reference
 * to where it lies: the lease is used up. */
static int wr_send_lease(rec_writer *w, const rec_item *it)
{
	struct shm_wr *s = &w->shm;
	struct shm_out_ring *o = &s->rings[s->own];
	struct shm_ref ref = { .ring = o->id, .slot = w->lease->slot,
			       .off = w->lease->off };
	const void *p = w->lease->ptr;
	size_t len = w->lease->len;

	atomic_fetch_sub_explicit(&s->leased, len, memory_order_relaxed);
	w->lease->ptr = NULL;
	s->leased_n++;
	return wr_emit_shared(w, it, &ref, p, len);
}

/* Sends the payload of it by reference when it can: passed on from the
 * input's ring, or copied into our own. REC_OK when it went so, 1 when it
 * goes inline, or an error. */
int wr_shared(rec_writer *w, const rec_item *it, const void *data,
		     size_t len)
{
	struct shm_out_ring *o;
	struct shm_ref ref;
	void *ptr;
	int err;

	if (!wr_shm_reader(w))
		return 1;
	if (w->lease && data == w->lease->ptr && len == w->lease->len)
		return wr_send_lease(w, it);
	if (w->link && (err = wr_offer_inputs(w)))
		return err;
	if (w->link && (err = wr_forward(w, data, len, &ref)) <= 0)
		return err ? err : wr_emit_shared(w, it, &ref, data, len);
	if ((o = wr_own_ring(w, &err)) == NULL)
		return err ? err : 1;
	if (wr_ring_alloc(w, o, len, &ref.slot, &ref.off, &ptr, &err))
		return err ? err : 1;
	memcpy(ptr, data, len);
	ref.ring = o->id;
	return wr_emit_shared(w, it, &ref, ptr, len);
}

/* Whether a payload of len bytes of a record of this type may try the
 * shared path. */
int wr_shm_wants(const rec_writer *w, int type, size_t len)
{
	return w->shm.mode && w->level == 0 && len >= SHM_MIN_PAYLOAD &&
	       rec_sends_shared(type);
}

/* The shared-memory path: only into a pipe, and only with payloads
 * stored raw. */
void wr_shm_init(rec_writer *w, const rec_writer_opts *opts)
{
	struct stat st;

	if (opts == NULL || opts->shm == 0)
		return;
	w->shm.ring_bytes = opts->shm_bytes ? (opts->shm_bytes + 63) & ~63ull
			    : SHM_RING_BYTES;
	if (w->level > 0)
		snprintf(w->shm.why, sizeof(w->shm.why), "payloads "
			 "compressed (zstd)");
	else if (fstat(w->fd, &st) != 0 || !S_ISFIFO(st.st_mode))
		snprintf(w->shm.why, sizeof(w->shm.why), "the output is not "
			 "a pipe");
	else
		w->shm.mode = opts->shm;
}

/* A reservation in our own ring, for a payload that may go by
 * reference: REC_OK with res_ptr set, 1 when it goes in the buffer, or a
 * write error. */
int wr_reserve_shared(rec_writer *w, size_t data_len)
{
	struct shm_out_ring *o;
	void *ptr;
	int err;

	/* the type is not known yet: a payload this large is samples or
	 * features; a commit of a type not sent so copies it inline */
	if (!wr_shm_wants(w, REC_T_AUDIO, data_len) || !wr_shm_reader(w))
		return 1;
	if ((o = wr_own_ring(w, &err)) == NULL)
		return err ? err : 1;
	if (wr_ring_alloc(w, o, data_len, &w->res_slot, &w->res_off, &ptr,
			  &err))
		return err ? err : 1;
	w->res_shared = 1;
	w->res_ptr = ptr;
	return REC_OK;
}

/* Commits a reservation in our own ring (err: the item's check). */
int wr_commit_shared(rec_writer *w, const rec_item *it, int err)
{
	struct shm_ref ref = { .slot = w->res_slot, .off = w->res_off };
	struct shmring *ring = w->shm.rings[w->shm.own].ring;

	w->res_shared = 0;
	if (err == REC_OK && !rec_sends_shared(it->type))
		err = wr_item(w, it, w->res_ptr, w->res_len);
	else if (err == REC_OK) {
		ref.ring = w->shm.rings[w->shm.own].id;
		return wr_emit_shared(w, it, &ref, w->res_ptr, w->res_len);
	}
	shmring_release(ring, w->res_slot); /* the slot was never sent */
	return err;
}

void rec_writer_link(rec_writer *w, rec_reader *r)
{
	if (w)
		w->link = r;
}

void rec_writer_shm(const rec_writer *w, rec_shm_report *rep)
{
	const struct shm_wr *s = &w->shm;

	memset(rep, 0, sizeof(*rep));
	rep->records = s->records;
	rep->bytes = s->bytes;
	rep->forwarded = s->forwarded;
	rep->leased = s->leased_n;
	rep->full = s->full;
	rep->waits = s->waits;
	rep->t_wait = s->t_wait;
	snprintf(rep->why, sizeof(rep->why), "%s", s->why);
	if (rep->why[0] == '\0' && s->records == 0 && s->n > 0)
		snprintf(rep->why, sizeof(rep->why), "%s",
			 shmring_attached(s->rings[0].ring, s->reader) ||
			 (s->reader < 0 && shmring_acked(s->rings[0].ring))
			 ? "the reader attached the ring offered only after "
			   "the last payload" : "the reader did not attach "
			   "the ring offered (its -v says why)");
}

int rec_writer_lease(rec_writer *w, size_t len, rec_lease *l)
{
	struct shm_wr *s;
	struct shmring *ring;
	uint32_t slot;
	uint64_t off;
	void *ptr;

	if (l == NULL)
		return REC_E_INVAL;
	memset(l, 0, sizeof(*l));
	if (w == NULL || len < SHM_MIN_PAYLOAD)
		return 1;
	s = &w->shm;
	ring = atomic_load_explicit(&s->lease_ring, memory_order_acquire);
	/* leases wait for the writing thread, which writes in order: at
	 * most half the ring, so that the rest keeps the stream going */
	if (ring == NULL ||
	    atomic_load_explicit(&s->leased, memory_order_relaxed) + len >
	    s->ring_bytes / 2)
		return 1;
	if (own_alloc(s, ring, len, &slot, &off, &ptr) != 0)
		return 1;
	atomic_fetch_add_explicit(&s->leased, len, memory_order_relaxed);
	l->ptr = ptr;
	l->len = len;
	l->slot = slot;
	l->off = off;
	return 0;
}

void rec_lease_drop(rec_writer *w, rec_lease *l)
{
	struct shmring *ring;

	if (w == NULL || l == NULL || l->ptr == NULL)
		return;
	ring = atomic_load_explicit(&w->shm.lease_ring, memory_order_acquire);
	atomic_fetch_sub_explicit(&w->shm.leased, l->len,
				  memory_order_relaxed);
	shmring_release(ring, l->slot);
	l->ptr = NULL;
}

int rec_write_leased(rec_writer *w, const rec_item *it, uint32_t data_crc,
		     rec_lease *l)
{
	int err;

	if (w == NULL || l == NULL)
		return REC_E_INVAL;
	if (l->ptr == NULL)
		return rec_write_crc(w, it, data_crc);
	if (it == NULL || it->data != l->ptr || it->data_len != l->len) {
		rec_lease_drop(w, l);
		return wr_fail(w, REC_E_INVAL, "a leased payload written as "
			       "another");
	}
	/* wr_shared sends it by reference when it can (and uses it up);
	 * else it is copied as any payload and goes back */
	w->lease = l;
	err = rec_write_crc(w, it, data_crc);
	w->lease = NULL;
	rec_lease_drop(w, l);
	return err;
}
