/*
 * pieces.c - segment's cutting of an audio item that comes in pieces
 * (formats/record.md, Items in pieces): the windows the clip would give in
 * one record, written as the pieces come, in memory bounded by the window
 * length whatever the clip's length.
 *
 * Positions are sample frames from the item's first sample; window k
 * covers [k * hop, k * hop + len). Samples are in three places:
 *
 *   the piece being cut   [got, got + its dim0);
 *   the carry             [got - carry_len, got): the samples before the
 *                         piece that the first window not yet complete
 *                         needs, so fewer than len;
 *   the hold              the len samples of the window held back.
 *
 * When a piece completes windows, every complete window but the last is
 * written (the held one first) and the last is held back: copied into the
 * hold, to be written with the next piece's windows, or at the item's end
 * with the last ones, so that the record written last, which gives the
 * clip's final clip_samples, holds a window. The clip_samples of a record
 * is what the pieces have given so far (0 while unknown).
 *
 * The windows of one piece leave as one windows record, or as several
 * where one would pass the payload cap, or where the held window and the
 * next do not touch (a gap between windows that no piece kept), and
 * apart from the windows that begin before the piece: those are copied
 * together from the hold, the carry and the piece, while the record of
 * the windows inside the piece points at the piece's own samples, so
 * that where the piece came in shared memory, it goes on by reference to
 * the same bytes, never copied (rec_writer_link()).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "segment.h"

struct buf {
	unsigned char *p;
	size_t cap;
};

struct piece_cut {
	int active;        /* an item has begun and not ended */
	rec_item tmpl;     /* the item's fields; offset: its first sample's */
	struct buf key;    /* tmpl's key (the reader's goes with its record) */
	size_t frame;      /* bytes per sample frame */
	uint32_t base;     /* segment index of window 0 */
	uint64_t got;      /* samples of the pieces before the one being cut */
	uint64_t next_k;   /* the first window not complete */
	uint64_t written;  /* the first window not written */
	int held;          /* window written is in the hold */
	struct buf hold;
	struct buf carry;
	size_t carry_beg;  /* frames before the carry's first in its buffer */
	uint64_t carry_len; /* frames */
};

/* The samples at hand while a piece is cut (piece_len 0 at a cut short). */
struct src {
	const struct piece_cut *pc;
	const unsigned char *piece;
	uint64_t piece_len;
};

static int buf_reserve(struct buf *b, size_t n)
{
	unsigned char *p;

	if (n <= b->cap)
		return 0;
	p = realloc(b->p, n);
	if (!p) {
		prog_err("out of memory");
		return -1;
	}
	b->p = p;
	b->cap = n;
	return 0;
}

struct piece_cut *piece_cut_new(void)
{
	return calloc(1, sizeof(struct piece_cut));
}

void piece_cut_free(struct piece_cut *pc)
{
	if (!pc)
		return;
	free(pc->key.p);
	free(pc->hold.p);
	free(pc->carry.p);
	free(pc);
}

int piece_cut_active(const struct piece_cut *pc)
{
	return pc->active;
}

/* Windows complete within n samples. */
static uint64_t complete_windows(uint64_t n, const struct options *o)
{
	return n >= o->len ? (n - o->len) / o->hop + 1 : 0;
}

static uint64_t avail_end(const struct src *s)
{
	return s->pc->got + s->piece_len;
}

/* The first sample of the carry and the piece, which touch. */
static uint64_t avail_start(const struct src *s)
{
	return s->pc->got - s->pc->carry_len;
}

/* Copies the frames [pos, pos + n) to dst from the piece, the carry or
 * the hold. Every window written or held lies in them (see the top). */
static void src_copy(const struct src *s, const struct options *o,
		     unsigned char *dst, uint64_t pos, uint64_t n)
{
	const struct piece_cut *pc = s->pc;
	size_t f = pc->frame;

	while (n) {
		const unsigned char *from;
		uint64_t k;

		if (pos >= pc->got) {
			from = s->piece + (pos - pc->got) * f;
			k = n;
		} else if (pos >= avail_start(s)) {
			from = pc->carry.p +
			       (pc->carry_beg + pos - avail_start(s)) * f;
			k = pc->got - pos;
		} else {
			uint64_t off = pos - pc->written * o->hop;

			from = pc->hold.p + off * f;
			k = avail_start(s) - pos;
			if (k > o->len - off)
				k = o->len - off;
		}
		if (k > n)
			k = n;
		if (!k) /* a window not at hand: a bug here */
			abort();
		if (f)
			memcpy(dst, from, k * f);
		dst += k * f;
		pos += k;
		n -= k;
	}
}

/* Window k as an audio record (--copy), zero-padded past the samples. */
static int copy_window(struct piece_cut *pc, struct cut_ctx *c,
		       const struct src *s, uint64_t k, uint64_t clip_samples)
{
	const struct options *o = c->o;
	uint64_t start = k * o->hop, have = avail_end(s) - start;
	rec_item out = pc->tmpl;
	void *p;
	int err;

	if (have > o->len)
		have = o->len;
	out.offset = pc->tmpl.offset + start;
	out.clip_samples = clip_samples;
	out.segment = pc->base + (uint32_t)k;
	out.dim0 = o->len;
	out.data_len = (size_t)o->len * pc->frame;
	err = rec_write_reserve(c->w, out.data_len, &p);
	if (err)
		return write_failed(c->w, rec_strerror(err));
	src_copy(s, o, p, start, have);
	memset((char *)p + have * pc->frame, 0,
	       out.data_len - have * pc->frame);
	if (have < o->len)
		c->st.padded++;
	c->st.windows++;
	err = rec_write_commit(c->w, &out);
	return err ? write_failed(c->w, rec_strerror(err)) : 0;
}

/* Windows [a, b) as one windows record, padded when the last runs past
 * the samples. */
static int describe_run(struct piece_cut *pc, struct cut_ctx *c,
			const struct src *s, uint64_t a, uint64_t b,
			uint64_t clip_samples)
{
	const struct options *o = c->o;
	uint64_t start = a * o->hop, end = (b - 1) * o->hop + o->len;
	rec_item out = pc->tmpl;
	void *p;
	int err;

	out.type = REC_T_WINDOWS;
	out.offset = pc->tmpl.offset + start;
	out.clip_samples = clip_samples;
	out.segment = pc->base + (uint32_t)a;
	out.win_len = o->len;
	out.win_hop = o->hop;
	out.n_windows = (uint32_t)(b - a);
	out.win_flags = 0;
	if (end > avail_end(s)) {
		end = avail_end(s);
		out.win_flags = REC_WIN_PAD;
		c->st.padded++;
	}
	out.dim0 = (uint32_t)(end - start);
	out.data_len = (size_t)out.dim0 * pc->frame;
	c->st.windows += b - a;
	if (start >= pc->got) { /* all in the piece: its own bytes */
		out.data = s->piece + (start - pc->got) * pc->frame;
		err = rec_write(c->w, &out);
		return err ? write_failed(c->w, rec_strerror(err)) : 0;
	}
	err = rec_write_reserve(c->w, out.data_len, &p);
	if (err)
		return write_failed(c->w, rec_strerror(err));
	src_copy(s, o, p, start, out.dim0);
	err = rec_write_commit(c->w, &out);
	return err ? write_failed(c->w, rec_strerror(err)) : 0;
}

/* The most windows one windows record holds: its payload within the
 * reader's default cap, its dim0 within 32 bits. */
static uint64_t windows_per_record(const struct piece_cut *pc,
				   const struct options *o)
{
	uint64_t frames = pc->frame ? REC_DEFAULT_MAX_DATA / pc->frame :
				      UINT32_MAX;

	if (frames > UINT32_MAX)
		frames = UINT32_MAX;
	return o->len >= frames ? 1 : (frames - o->len) / o->hop + 1;
}

/* Writes the windows [written, b): the held one (if any) first; those
 * that begin before the piece apart from those inside it. */
static int write_windows(struct piece_cut *pc, struct cut_ctx *c,
			 const struct src *s, uint64_t b,
			 uint64_t clip_samples)
{
	uint64_t a = pc->written, most = windows_per_record(pc, c->o);
	uint64_t inside = (pc->got + c->o->hop - 1) / c->o->hop;
	int err = 0;

	if (c->o->copy) {
		for (; a < b && !err; a++)
			err = copy_window(pc, c, s, a, clip_samples);
		return err;
	}
	/* The samples between the held window and the carry are gone. */
	if (a < b && pc->held &&
	    a * c->o->hop + c->o->len < avail_start(s)) {
		err = describe_run(pc, c, s, a, a + 1, clip_samples);
		a++;
	}
	while (a < b && !err) {
		uint64_t n = b - a < most ? b - a : most;

		if (a < inside && a + n > inside)
			n = inside - a;
		err = describe_run(pc, c, s, a, a + n, clip_samples);
		a += n;
	}
	return err;
}

/* Keeps the samples from the first window not complete on. */
static int update_carry(struct piece_cut *pc, const struct options *o,
			const struct src *s)
{
	uint64_t c0 = pc->next_k * o->hop, end = avail_end(s);
	const unsigned char *add = s->piece;
	uint64_t n = s->piece_len;
	size_t f = pc->frame;

	if (c0 >= end) {
		pc->carry_beg = 0;
		pc->carry_len = 0;
		return 0;
	}
	if (c0 >= pc->got) {
		pc->carry_beg = 0;
		pc->carry_len = 0;
		add += (c0 - pc->got) * f;
		n = end - c0;
	} else {
		uint64_t drop = c0 - avail_start(s);

		pc->carry_beg += drop;
		pc->carry_len -= drop;
	}
	if ((pc->carry_beg + pc->carry_len + n) * f > pc->carry.cap) {
		if (pc->carry_len)
			memmove(pc->carry.p, pc->carry.p + pc->carry_beg * f,
				pc->carry_len * f);
		pc->carry_beg = 0;
		if (buf_reserve(&pc->carry, 2 * (pc->carry_len + n) * f))
			return -1;
	}
	if (n && f)
		memcpy(pc->carry.p + (pc->carry_beg + pc->carry_len) * f, add,
		       n * f);
	pc->carry_len += n;
	return 0;
}

static int too_many_windows(const struct piece_cut *pc, uint64_t n)
{
	if (n <= UINT32_MAX - pc->base)
		return 0;
	prog_err("'%.*s': more than 2^32 windows in clip %" PRIu64,
		 (int)pc->tmpl.key_len, pc->tmpl.key, pc->tmpl.clip);
	return 1;
}

static int begin_item(struct piece_cut *pc, struct cut_ctx *c,
		      const rec_item *it)
{
	if (buf_reserve(&pc->key, it->key_len + 1))
		return -1;
	if (it->key_len)
		memcpy(pc->key.p, it->key, it->key_len);
	pc->key.p[it->key_len] = '\0';
	pc->tmpl = *it;
	pc->tmpl.flags = 0;
	pc->tmpl.key = (const char *)pc->key.p;
	pc->tmpl.data = NULL;
	pc->frame = rec_dtype_size(it->dtype) * it->dim1;
	pc->base = clip_next_segment(&c->cs, it->clip);
	pc->got = pc->next_k = pc->written = 0;
	pc->held = 0;
	pc->carry_beg = 0;
	pc->carry_len = 0;
	pc->active = 1;
	c->st.in_audio++;
	return 0;
}

/* The item ends after the samples at hand: its last windows, the last
 * per --last. Returns the windows it gave, or -1. */
static int64_t end_item(struct piece_cut *pc, struct cut_ctx *c,
			const struct src *s, uint64_t clip_samples)
{
	uint64_t n = window_count(avail_end(s), c->o);

	pc->active = 0;
	if (too_many_windows(pc, n) ||
	    write_windows(pc, c, s, n, clip_samples))
		return -1;
	c->cs.next_segment = pc->base + (uint32_t)n;
	return (int64_t)n;
}

int piece_cut_add(struct piece_cut *pc, struct cut_ctx *c,
		  const rec_item *it)
{
	const struct options *o = c->o;
	struct src s = { pc, it->data, it->dim0 };
	uint64_t k;

	if (!(it->flags & REC_ITEM_CONT) && begin_item(pc, c, it))
		return -1;
	if (!(it->flags & REC_ITEM_MORE)) {
		int64_t n = end_item(pc, c, &s, it->clip_samples);
		rec_item whole = pc->tmpl;

		if (n != 0)
			return n < 0 ? -1 : 0;
		whole.clip_samples = it->clip_samples;
		c->cs.next_segment = pc->base + 1;
		return write_too_short(c, &whole, avail_end(&s), pc->base);
	}
	k = complete_windows(avail_end(&s), o);
	if (too_many_windows(pc, k))
		return -1;
	if (k > pc->next_k) {
		if (write_windows(pc, c, &s, k - 1, it->clip_samples) ||
		    buf_reserve(&pc->hold, (size_t)o->len * pc->frame))
			return -1;
		src_copy(&s, o, pc->hold.p, (k - 1) * o->hop, o->len);
		pc->written = k - 1;
		pc->held = 1;
		pc->next_k = k;
	}
	if (update_carry(pc, o, &s))
		return -1;
	pc->got += it->dim0;
	return 0;
}

int piece_cut_short(struct piece_cut *pc, struct cut_ctx *c,
		    const rec_item *sk)
{
	struct src s = { pc, NULL, 0 };
	rec_item out = *sk;
	int64_t n = end_item(pc, c, &s, sk->clip_samples ? sk->clip_samples :
							   pc->got);
	int err;

	if (n < 0)
		return -1;
	out.segment = c->cs.next_segment++;
	c->st.in_skipped++;
	err = rec_write(c->w, &out);
	return err ? write_failed(c->w, rec_strerror(err)) : 0;
}
