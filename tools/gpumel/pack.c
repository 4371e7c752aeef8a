/*
 * pack.c - gpumel's reader thread: reads the records and packs their
 * samples into batches (the backend's buffers), each record's metadata
 * beside them; a windows record's samples go in once, its windows
 * pointing into them; an item in pieces goes to pieces.c. The hot loop of
 * the host side: everything it calls per record of a stream without
 * pieces is here or inline in loop.h.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/half.h"
#include "../../lib/rec.h"
#include "../common/prog.h"
#include "loop.h"

/* Doubles *cap until it holds need elements of size sz. */
static int grow(void **v, size_t *cap, size_t need, size_t sz)
{
	size_t n = *cap ? *cap : 64;
	void *nv;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	nv = realloc(*v, n * sz);
	if (!nv)
		return -1;
	*v = nv;
	*cap = n;
	return 0;
}

static void hb_reset(struct hbatch *hb)
{
	/* (its holds were released when the backend returned it) */
	hb->n_hold = 0;
	hb->n_area = 0;
	hb->hold_bytes = 0;
	hb->hold_max = UINT64_MAX;
	hb->mb.n_copy = 0;
	hb->mb.n_crc = 0;
	hb->n_ent = 0;
	hb->arena_len = 0;
	hb->in_used = 0;
	hb->out_used = 0;
	hb->done = 0;
	hb->mb.n = 0;
}

/* Copies len bytes into the batch's arena; returns their offset. */
static int arena_add(struct loop *lp, struct hbatch *hb, const void *s,
		     size_t len, size_t *off)
{
	if (grow((void **)&hb->arena, &hb->arena_cap, hb->arena_len + len + 1,
		 1) < 0) {
		loop_fail(lp, "out of memory for record keys");
		return -1;
	}
	*off = hb->arena_len;
	if (len)
		memcpy(hb->arena + hb->arena_len, s, len);
	hb->arena[hb->arena_len + len] = '\0';
	hb->arena_len += len + 1;
	return 0;
}

/* Appends an entry for it (metadata copied: it dies at the next read).
 * key_off: where an earlier entry of this batch keeps the same key, or
 * SIZE_MAX to copy it into the arena. */
static struct entry *add_entry_key(struct loop *lp, struct hbatch *hb,
				   const rec_item *it, size_t key_off)
{
	struct entry *e;

	if (grow((void **)&hb->ent, &hb->cap_ent, hb->n_ent + 1,
		 sizeof(*hb->ent)) < 0) {
		loop_fail(lp, "out of memory for record metadata");
		return NULL;
	}
	e = &hb->ent[hb->n_ent];
	memset(e, 0, sizeof(*e));
	e->clip = it->clip;
	e->offset = it->offset;
	e->clip_samples = it->clip_samples;
	e->segment = it->segment;
	e->sample_rate = it->sample_rate;
	e->label = it->label;
	e->split = it->split;
	e->key_len = it->key_len;
	e->key_off = key_off;
	if (key_off == SIZE_MAX &&
	    arena_add(lp, hb, it->key, it->key_len, &e->key_off) < 0)
		return NULL;
	hb->n_ent++;
	return e;
}

struct entry *add_entry(struct loop *lp, struct hbatch *hb,
			const rec_item *it)
{
	return add_entry_key(lp, hb, it, SIZE_MAX);
}

static int add_skipped(struct loop *lp, struct hbatch *hb, const rec_item *it,
		       const char *reason, size_t len)
{
	struct entry *e = add_entry(lp, hb, it);

	if (!e)
		return -1;
	e->skipped = 1;
	e->text_len = len;
	return arena_add(lp, hb, reason, len, &e->text_off);
}

/* Hands hb to the compute thread to be (re)allocated with at least the
 * given capacities and waits for it. -1 on abort. */
static int request_resize(struct loop *lp, struct hbatch *hb, size_t in,
			  size_t out, size_t recs)
{
	double t0;
	int ok;

	hb->want_in = in;
	hb->want_out = out;
	hb->want_recs = recs;
	hb->resize = 1;
	t0 = prog_now();
	q_push(lp, &lp->ready_q, hb);
	pthread_mutex_lock(&lp->mu);
	while (hb->resize && !lp->abort)
		pthread_cond_wait(&lp->resized, &lp->mu);
	ok = !lp->abort;
	pthread_mutex_unlock(&lp->mu);
	lp->st.t_alloc += prog_now() - t0;
	return ok ? 0 : -1;
}

static size_t max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* The batch size, from the first record (in bytes of samples, out bytes
 * of features, in nrecs computed records: the windows of a windows
 * record): about target_in bytes of samples (or --batch computed
 * records), records of that size. */
static void choose_sizes(struct loop *lp, size_t in, size_t out,
			 size_t nrecs)
{
	size_t k;

	if (lp->batch_recs) {
		/* --batch: that many records, unless they are huge */
		size_t per = max_sz((in + out) / nrecs, 1);

		k = MAX_BATCH_BYTES / per;
		k = max_sz(1, k < lp->batch_recs ? k : lp->batch_recs);
		lp->cap_recs = max_sz(lp->batch_recs, nrecs);
		lp->cap_in = max_sz(k * in / nrecs, in);
		lp->cap_out = max_sz(k * out / nrecs, out);
		return;
	}
	lp->cap_in = max_sz(lp->target_in, in);
	k = lp->cap_in / max_sz(in, 1);
	/* records vary in length: room for more, shorter ones */
	lp->cap_recs = k * nrecs * 2 + 16;
	if (lp->cap_recs > DEFAULT_BATCH_RECS)
		lp->cap_recs = max_sz(DEFAULT_BATCH_RECS, nrecs);
	lp->cap_out = max_sz(out, (k + k / 4 + 1) * out);
}

/* The next free batch, empty, with room for a record of in + out bytes
 * and nrecs computed records (0, 0, 0: any). NULL on abort. */
static struct hbatch *get_batch(struct loop *lp, size_t in, size_t out,
				size_t nrecs)
{
	double t0 = prog_now();
	struct hbatch *hb = q_pop(lp, &lp->free_q, 1);
	mel_batch *b;

	lp->st.t_out_blocked += prog_now() - t0;
	if (!hb)
		return NULL;
	hb_reset(hb);
	b = &hb->mb;
	if ((in || out) && (!hb->allocated || b->in_cap < in ||
			    b->out_cap < out || b->cap_recs < nrecs ||
			    b->cap_recs < lp->cap_recs ||
			    b->in_cap < lp->cap_in || b->out_cap < lp->cap_out))
		if (request_resize(lp, hb, max_sz(in, lp->cap_in),
				   max_sz(out, lp->cap_out),
				   max_sz(nrecs, lp->cap_recs)) < 0)
			return NULL;
	return hb;
}

/* A skipped record naming reason (len bytes), with it's fields, in the
 * current batch (or a new one). -1 on abort. */
int add_skipped_rec(struct loop *lp, struct hbatch **cur, const rec_item *it,
		    const char *reason, size_t len)
{
	if (!*cur && !(*cur = get_batch(lp, 0, 0, 0)))
		return -1;
	return add_skipped(lp, *cur, it, reason, len);
}

/* Passes the current batch on (if it holds anything). */
static void flush_batch(struct loop *lp, struct hbatch **cur)
{
	if (*cur && (*cur)->n_ent)
		q_push(lp, &lp->ready_q, *cur);
	else if (*cur)
		q_push(lp, &lp->free_q, *cur);
	*cur = NULL;
}

static int is_finite_f32(const float *x, size_t n, size_t *bad)
{
	uint32_t u;

	for (size_t i = 0; i < n; i++) {
		memcpy(&u, &x[i], sizeof(u));
		if ((u & 0x7f800000u) == 0x7f800000u) {
			*bad = i;
			return 0;
		}
	}
	return 1;
}

/* f16 or bf16 samples at src (the reader hands payloads out where they
 * are: maybe at an odd address) to floats. */
static void halves_to_f32(float *dst, const void *src, size_t n, int dtype)
{
	const unsigned char *p = src;
	uint16_t u;

	if ((uintptr_t)src % 2 == 0 && dtype == REC_F16) {
		half_to_f32_array(dst, src, n);
		return;
	}
	if ((uintptr_t)src % 2 == 0) {
		bf16_to_f32_array(dst, src, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(&u, p + 2 * i, sizeof(u));
		dst[i] = dtype == REC_F16 ? half_to_f32(u) : bf16_to_f32(u);
	}
}

/* Copies (converts) samples [from, from + n) of it to dst: s16 stays
 * s16, the rest becomes f32. Returns 0, or -1 when a sample is not
 * finite (*bad: the first, counted from from). */
int convert_samples(void *dst, const rec_item *it, size_t from, size_t n,
		    size_t *bad)
{
	const char *src = (const char *)it->data +
			  from * rec_dtype_size(it->dtype);

	switch (it->dtype) {
	case REC_S16:
		memcpy(dst, src, n * 2);
		return 0;
	case REC_F32:
		memcpy(dst, src, n * 4);
		break;
	case REC_F16:
	case REC_BF16:
		halves_to_f32(dst, src, n, it->dtype);
		break;
	}
	return is_finite_f32(dst, n, bad) ? 0 : -1;
}

/* The payload CRC of the record read last, when the reader left it to
 * gpumel and it is not taken by the backend: checked here, now, before
 * its samples are used. 0, or -1 after loop_fail(). */
static int crc_now(struct loop *lp)
{
	int err = rec_reader_check_crc(lp->rd);

	if (err)
		loop_fail(lp, "%s", rec_reader_detail(lp->rd));
	return err ? -1 : 0;
}

/* Notes the ring area of h in hb (the compute thread registers it). */
static int add_area(struct hbatch *hb, const rec_hold *h)
{
	uint64_t bytes;
	const void *p = rec_hold_area(h, &bytes);

	for (unsigned i = 0; i < hb->n_area; i++)
		if (hb->area[i] == p)
			return 0;
	if (hb->n_area == DMA_AREAS)
		return -1;
	hb->area[hb->n_area] = p;
	hb->area_bytes[hb->n_area++] = bytes;
	if (bytes / 4 < hb->hold_max)
		hb->hold_max = bytes / 4;
	return 0;
}

/*
 * The payload of it (it->data_len bytes) into hb's samples at byte off,
 * left where it lies when it came by reference in a ring: hb holds its
 * slot, the backend copies it from there (by DMA) and checks its CRC
 * where it lands (entry ent names it). 1 when taken so; 0 when it came
 * inline (its CRC checked already, the caller copies it); -1 on abort.
 */
static int take_payload(struct loop *lp, struct hbatch *hb,
			const rec_item *it, uint64_t off, size_t ent)
{
	mel_batch *b = &hb->mb;
	uint32_t want;
	mel_copy *c;
	rec_hold h;

	if (!lp->dma || !rec_reader_hold(lp->rd, &h))
		return 0;
	if (grow((void **)&hb->hold, &hb->cap_hold, hb->n_hold + 1,
		 sizeof(*hb->hold)) < 0 ||
	    grow((void **)&b->copy, &hb->cap_copy, b->n_copy + 1,
		 sizeof(*b->copy)) < 0 ||
	    grow((void **)&hb->crc_ent, &hb->cap_crc_ent, b->n_crc + 1,
		 sizeof(*hb->crc_ent)) < 0 || add_area(hb, &h) < 0) {
		rec_hold_release(&h);
		loop_fail(lp, "out of memory for a batch's copies (or more "
			  "than %d rings)", DMA_AREAS);
		return -1;
	}
	hb->hold[hb->n_hold++] = h;
	hb->hold_bytes += it->data_len;
	if (rec_reader_take_crc(lp->rd, &want)) {
		mel_crc *k = &b->crc[b->n_crc];

		k->off = off;
		k->len = it->data_len;
		k->want = want;
		k->got = 0;
		hb->crc_ent[b->n_crc++] = ent;
	}
	c = b->n_copy ? &b->copy[b->n_copy - 1] : NULL;
	if (c && (const char *)c->src + c->bytes == (const char *)it->data &&
	    c->off + c->bytes == off) {
		c->bytes += it->data_len;
	} else {
		c = &b->copy[b->n_copy++];
		c->src = it->data;
		c->off = off;
		c->bytes = it->data_len;
		lp->st.dma_copies++;
	}
	lp->st.dma++;
	lp->st.dma_bytes += it->data_len;
	return 1;
}

/* Copies (converts) the samples of it to dst. Returns 0, or -1 (reason
 * set) when a sample is not finite. */
static int copy_samples(void *dst, const rec_item *it, char *reason,
			size_t rlen)
{
	size_t bad;

	if (convert_samples(dst, it, 0, it->dim0, &bad) == 0)
		return 0;
	snprintf(reason, rlen, "sample %zu is not a finite number", bad);
	return -1;
}

/* The samples of it into hb at its in_used: left where they lie for the
 * backend to copy when it is the record read last (whole) and its s16
 * payload came by reference; else copied (converted) here, after its CRC
 * is checked (f32 samples are checked for NaN as they are copied). 0, -1
 * on abort, 1 when a sample is not finite (reason set). */
static int place_samples(struct loop *lp, struct hbatch *hb,
			 const rec_item *it, int whole, char *reason,
			 size_t rlen)
{
	size_t isz = it->dtype == REC_S16 ? 2 : 4;
	int taken = 0;

	if (whole && it->dtype == REC_S16)
		taken = take_payload(lp, hb, it, hb->in_used * isz, hb->n_ent);
	if (taken)
		return taken < 0 ? -1 : 0;
	if (crc_now(lp) < 0)
		return -1;
	return copy_samples((char *)hb->mb.in + hb->in_used * isz, it, reason,
			    rlen) < 0 ? 1 : 0;
}

/* Why an audio record cannot be computed, or NULL (nf: its frames; any
 * number but 0 asks only about its channels, rate and type). */
const char *unusable(const struct loop *lp, const rec_item *it, uint64_t nf,
		     char *buf, size_t len)
{
	if (it->dim1 != 1)
		snprintf(buf, len, "%" PRIu32 " channels: gpumel takes mono "
			 "audio", it->dim1);
	else if (it->sample_rate != lp->p.sample_rate)
		snprintf(buf, len, "sample rate %" PRIu32 " Hz differs from "
			 "the stream's %g Hz", it->sample_rate,
			 lp->p.sample_rate);
	else if (it->dtype < REC_S16 || it->dtype > REC_BF16)
		snprintf(buf, len, "unknown sample type %d", it->dtype);
	else if (nf == 0 && it->dim0 == 0)
		snprintf(buf, len, "no samples");
	else if (nf == 0 && lp->p.feature == MEL_FEAT_FBANK)
		snprintf(buf, len, "too short: %" PRIu32 " %s no frame of %"
			 PRIu32 " samples %s", it->dim0,
			 prog_plural(it->dim0, "sample gives", "samples give"),
			 lp->p.win_length, lp->p.center ?
			 "(half a frame shift at least)" : "with snip_edges");
	else if (nf == 0)
		snprintf(buf, len, "too short: %" PRIu32 " %s no frame of "
			 "n_fft %" PRIu32 " without --center", it->dim0,
			 prog_plural(it->dim0, "sample gives", "samples give"),
			 lp->p.n_fft);
	else
		return NULL;
	return buf;
}

/* Prints a key with control bytes escaped, so a warning stays one line. */
void warn_skip(const rec_item *it, const char *reason)
{
	char key[512];
	size_t j = 0;

	for (size_t i = 0; i < it->key_len && j + 5 < sizeof(key); i++) {
		unsigned char ch = (unsigned char)it->key[i];

		if (ch < 0x20 || ch == 0x7f)
			j += (size_t)snprintf(key + j, sizeof(key) - j,
					      "\\x%02x", ch);
		else
			key[j++] = (char)ch;
	}
	key[j] = '\0';
	prog_warn("'%s': %s, skipped", key, reason);
}

/* Makes *cur a batch where n samples of dtype dt, giving nrecs computed
 * records of nf frames in all, fit. -1 on abort. */
int make_room(struct loop *lp, struct hbatch **cur, int dt, size_t n,
	      uint64_t nf, size_t nrecs)
{
	size_t isz = dt == REC_S16 ? 2 : 4;
	size_t in = n * isz, out = nf * mel_n_rows(&lp->p) * lp->out_size;
	struct hbatch *hb = *cur;

	if (!lp->cap_in)
		choose_sizes(lp, in, out, nrecs);
	if (hb && hb->mb.n && hb->mb.in_dtype != dt)
		flush_batch(lp, cur);
	hb = *cur;
	if (hb && hb->allocated && nrecs <= hb->mb.cap_recs - hb->mb.n &&
	    (hb->in_used + n) * isz <= hb->mb.in_cap &&
	    (hb->out_used + nf * mel_n_rows(&lp->p)) * lp->out_size <=
	    hb->mb.out_cap)
		return 0;
	flush_batch(lp, cur);
	*cur = get_batch(lp, in, out, nrecs);
	return *cur ? 0 : -1;
}

/* Puts a usable audio record into a batch: 0, -1 on abort, 1 when a
 * sample turns out not to be finite (reason set). whole: it is the record
 * read last, not a window cut from it (whose samples may be a copy). */
static int place_audio(struct loop *lp, struct hbatch **cur,
		       const rec_item *it, uint64_t nf, int whole,
		       char *reason, size_t rlen)
{
	int dt = it->dtype == REC_S16 ? REC_S16 : REC_F32;
	struct hbatch *hb;
	struct entry *e;
	mel_rec *r;
	int err;

	if (make_room(lp, cur, dt, it->dim0, nf, 1) < 0)
		return -1;
	hb = *cur;
	if ((err = place_samples(lp, hb, it, whole, reason, rlen)))
		return err;
	hb->mb.in_dtype = dt;
	r = &hb->mb.rec[hb->mb.n];
	r->in_off = hb->in_used;
	r->n_samples = it->dim0;
	r->n_frames = (uint32_t)nf;
	r->out_off = hb->out_used;
	r->flags = 0;
	r->reserved = 0;
	r->clip = it->clip;
	r->pos0 = (int64_t)it->offset - (int64_t)mel_pad_len(&lp->p);
	e = add_entry(lp, hb, it);
	if (!e)
		return -1;
	e->rec = hb->mb.n++;
	hb->in_used += it->dim0;
	hb->out_used += nf * mel_n_rows(&lp->p);
	return 0;
}

/* An audio record (whole: as read, else a window of one): into a batch,
 * or a skipped record naming why. */
static int add_audio(struct loop *lp, struct hbatch **cur, const rec_item *it,
		     int whole)
{
	char reason[256];
	uint64_t nf = mel_n_frames(&lp->p, it->dim0);
	const char *why = unusable(lp, it, nf, reason, sizeof(reason));
	int r;

	lp->st.audio++;
	if (!why) {
		r = place_audio(lp, cur, it, nf, whole, reason,
				sizeof(reason));
		if (r <= 0)
			return r;
		why = reason;
	}
	warn_skip(it, why);
	lp->st.skipped_here++;
	return add_skipped_rec(lp, cur, it, why, strlen(why));
}

/* What add_windows_one_by_one() hands each window. */
struct one_args {
	struct loop *lp;
	struct hbatch **cur;
};

static int add_one(const rec_item *win, void *arg)
{
	struct one_args *a = arg;

	return add_audio(a->lp, a->cur, win, 0) < 0 ? 1 : 0;
}

/* The windows of a windows record, one at a time, as audio records: for
 * records whose windows cannot all be computed (each gets its own verdict,
 * exactly as if segment had copied them). */
static int add_windows_one_by_one(struct loop *lp, struct hbatch **cur,
				  const rec_item *it)
{
	struct one_args a = { lp, cur };
	int err;

	if (crc_now(lp) < 0)
		return -1;
	err = rec_each_window(it, &lp->pad, &lp->pad_cap, add_one, &a);

	if (err < 0) /* (1: add_audio failed and said why) */
		loop_fail(lp, "record %" PRIu64 " ('%.*s'): %s",
			  rec_reader_count(lp->rd), (int)it->key_len, it->key,
			  rec_strerror(err));
	return err ? -1 : 0;
}

/*
 * A windows record: its samples go into a batch once (and zeros after
 * them for a padded last window), each window becomes a computed record
 * pointing into them. Windows that cannot be computed (wrong rate, too
 * short, a sample that is not finite) take the one-by-one path, which
 * gives each window the verdict a copied window would get.
 */
static int add_windows(struct loop *lp, struct hbatch **cur,
		       const rec_item *it)
{
	int dt = it->dtype == REC_S16 ? REC_S16 : REC_F32;
	size_t isz = dt == REC_S16 ? 2 : 4;
	uint64_t span = (uint64_t)(it->n_windows - 1) * it->win_hop +
			it->win_len;
	uint64_t n = span > it->dim0 ? span : it->dim0;
	uint64_t nf = mel_n_frames(&lp->p, it->win_len);
	size_t key_off = SIZE_MAX, first;
	char reason[256];
	rec_item probe = *it;
	struct hbatch *hb;
	int err;

	probe.dim0 = it->win_len;
	/* a record too big for one batch goes window by window too */
	if (unusable(lp, &probe, nf, reason, sizeof(reason)) ||
	    n > MAX_BATCH_BYTES / isz || it->n_windows > DEFAULT_BATCH_RECS ||
	    nf * it->n_windows > MAX_BATCH_BYTES / lp->out_size /
	    mel_n_rows(&lp->p))
		return add_windows_one_by_one(lp, cur, it);
	if (make_room(lp, cur, dt, n, nf * it->n_windows, it->n_windows) < 0)
		return -1;
	hb = *cur;
	err = place_samples(lp, hb, it, 1, reason, sizeof(reason));
	if (err < 0)
		return -1;
	if (err > 0)
		return add_windows_one_by_one(lp, cur, it);
	memset((char *)hb->mb.in + (hb->in_used + it->dim0) * isz, 0,
	       (n - it->dim0) * isz);
	hb->mb.in_dtype = dt;
	lp->st.audio += it->n_windows;
	first = hb->n_ent;
	for (uint32_t i = 0; i < it->n_windows; i++) {
		mel_rec *r = &hb->mb.rec[hb->mb.n];
		rec_item win = *it;
		struct entry *e;

		r->in_off = hb->in_used + (uint64_t)i * it->win_hop;
		r->n_samples = it->win_len;
		r->n_frames = (uint32_t)nf;
		r->out_off = hb->out_used;
		r->flags = 0;
		r->reserved = 0;
		win.offset = it->offset + (uint64_t)i * it->win_hop;
		win.segment = it->segment + i;
		r->clip = win.clip;
		r->pos0 = (int64_t)win.offset -
			  (int64_t)mel_pad_len(&lp->p);
		e = add_entry_key(lp, hb, &win, key_off);
		if (!e)
			return -1;
		key_off = e->key_off;
		e->rec = hb->mb.n++;
		hb->out_used += nf * mel_n_rows(&lp->p);
	}
	hb->ent[first].n_win = it->n_windows;
	hb->ent[first].win_len = it->win_len;
	hb->ent[first].win_hop = it->win_hop;
	hb->ent[first].win_flags = it->win_flags;
	hb->in_used += n;
	return 0;
}

static int add_record(struct loop *lp, struct hbatch **cur, const rec_item *it)
{
	/* a features piece is refused below, as any features record */
	if (lp->pc.open || (rec_item_is_piece(it) && it->type == REC_T_AUDIO))
		return crc_now(lp) < 0 ? -1 : add_piece(lp, cur, it);
	switch (it->type) {
	case REC_T_AUDIO:
		return add_audio(lp, cur, it, 1);
	case REC_T_WINDOWS:
		return add_windows(lp, cur, it);
	case REC_T_SKIPPED:
		lp->st.skipped_in++;
		return add_skipped_rec(lp, cur, it, it->data, it->data_len);
	case REC_T_SOURCE: /* goes on unchanged, in its place */
		if (add_skipped_rec(lp, cur, it, it->data, it->data_len))
			return -1;
		(*cur)->ent[(*cur)->n_ent - 1].skipped = ENTRY_SOURCE;
		return 0;
	default:
		loop_fail(lp, "record %" PRIu64 " ('%.*s') is a %s record: "
			  "gpumel reads audio streams",
			  rec_reader_count(lp->rd), (int)it->key_len, it->key,
			  it->type == REC_T_FEATURES ? "features"
			  : it->type == REC_T_FWINDOWS ? "features-windows"
			  : "unknown");
		return -1;
	}
}

void *reader_main(void *arg)
{
	struct loop *lp = arg;
	struct hbatch *cur = NULL;
	double t0 = prog_now();
	/* the wait for the header, before this thread, is not its own */
	double w0 = rec_reader_wait(lp->rd);
	rec_item it;

	for (;;) {
		int err = rec_read(lp->rd, &it);

		if (err == REC_END)
			break;
		if (err < 0) {
			loop_fail(lp, "%s", rec_reader_detail(lp->rd)[0] ?
				  rec_reader_detail(lp->rd) :
				  rec_strerror(err));
			break;
		}
		err = add_record(lp, &cur, &it);
		if (err < 0 || aborted(lp))
			break;
		if (cur && cur->hold_bytes >= cur->hold_max) {
			flush_batch(lp, &cur);
			lp->st.dma_early++;
		}
	}
	if (!aborted(lp))
		flush_batch(lp, &cur);
	lp->st.t_reader = prog_now() - t0;
	lp->st.t_reader_in = rec_reader_wait(lp->rd) - w0;
	q_close(lp, &lp->ready_q);
	return NULL;
}
