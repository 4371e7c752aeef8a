/*
 * pieces.c - gpumel's reader thread for an item in pieces (formats/
 * record.md, "Items in pieces"): frames a clip that comes in several
 * audio records exactly as one record of all its samples would be
 * framed, a stretch at a time, in memory that does not grow with the
 * clip, and writes its features as features pieces.
 *
 * Frame t of an item covers samples [t * hop, t * hop + L) of the
 * padded signal y (L: mel_frame_len, n_fft or fbank's win_length): P
 * samples of padding (mel_pad_len: n_fft / 2 with --center, fbank's
 * without snip_edges; else 0), the item's samples, and at its end P more
 * (mel), or as many as Kaldi's last frame reaches past it (fbank). The
 * carry keeps y from the first frame not computed yet (fewer than L + hop
 * samples). A piece's samples go into a batch behind the carry, and the
 * frames they complete become computed records flagged MEL_REC_PADDED
 * (the host built the padding: the backend frames them as without
 * center) and MEL_REC_NO_CLAMP (top_db needs the item's maximum, known
 * only at its end: whoever joins the pieces clamps), which leave as
 * features pieces: frame t once, in order, at offset + t * hop. The last
 * frame a piece completes is held back for the next, so that the item's
 * end (its last piece, or a skipped record that cuts it short) always has
 * a frame to give and no features piece flagged more is empty.
 *
 * Until the first frames are computed the carry holds the samples as
 * they came: the start's padding (reflect reads samples 1 .. P, Kaldi's
 * reflection 0 .. P - 1) is built with the first stretch. An item that
 * ends before then (fewer than L + hop - P samples) is computed as one record of all its samples,
 * padded by the backend and clamped: the very output of that one record,
 * or the skipped record it would give.
 *
 * MFCCs with top_db cannot be computed so (the bands must be clamped to
 * the item's maximum before the DCT): such an item, once longer than one
 * record, is refused whole, a skipped record naming why at its end.
 *
 * A sample that is not finite cuts the item short where it is: the
 * frames of the samples before it (with --center's end padding there)
 * leave in a piece still flagged more, then a skipped record naming it;
 * the rest of the item is dropped. Where those samples give no frame, the
 * item is skipped whole at its end, as one record would be. A skipped
 * record from upstream after a piece flagged more ends the item the same
 * way and is passed on.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rec.h"
#include "../common/prog.h"
#include "loop.h"

enum { PC_FRAME, PC_REFUSED, PC_DROP };
/* How a stretch ends the item: not at all, with its last piece, or cut
 * short (a sample that is not finite, a skipped record from upstream). */
enum { END_NONE, END_LAST, END_CUT };

/* For the tests: at most that many frames in a features piece (and a
 * piece's samples framed about that many frames at a time). */
#define ENV_FRAMES "MELPIPE_GPUMEL_FRAMES"
/* Samples of one computed record at most (mel_rec.n_samples). */
#define MAX_STRETCH (1u << 30)
#define MAX_KEY_LEN 0xffffu

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t pad_len(const struct loop *lp)
{
	return mel_pad_len(&lp->p);
}

/* Frames whose L samples lie in the first len samples of y. */
static uint64_t frames_in(const mel_params *p, uint64_t len)
{
	uint64_t L = mel_frame_len(p);

	return len >= L ? 1 + (len - L) / p->hop_length : 0;
}

/* Padding after an item of n samples: P (mel), or what fbank's last
 * frame reaches past the item (Kaldi: at most half a frame). */
static uint64_t end_pad_len(const struct loop *lp, uint64_t n)
{
	const mel_params *p = &lp->p;
	uint64_t nf, end;

	if (p->feature != MEL_FEAT_FBANK)
		return pad_len(lp);
	nf = mel_n_frames(p, n);
	end = nf ? (nf - 1) * p->hop_length + p->win_length : 0;
	return end > pad_len(lp) + n ? end - pad_len(lp) - n : 0;
}

/*
 * Features pieces of at most 32 MiB (4 batches' worth of samples; far
 * below the readers' payload cap of 256 MiB), and a piece's samples
 * framed in stretches that give about that many frames, at most a
 * batch's worth of samples: a piece of any size keeps batches their size.
 */
static void set_limits(struct loop *lp, struct pieces *pc)
{
	const mel_params *p = &lp->p;
	uint64_t per = (uint64_t)mel_n_rows(p) * lp->out_size;
	uint64_t cap = min_u64(4 * (uint64_t)lp->target_in,
			       REC_DEFAULT_MAX_DATA);
	const char *env = getenv(ENV_FRAMES);
	uint64_t f = cap / per;

	f = min_u64(f, (MAX_STRETCH - mel_frame_len(p)) / p->hop_length);
	if (env && strtoull(env, NULL, 10) > 0)
		f = min_u64(f, strtoull(env, NULL, 10));
	pc->max_frames = f ? f : 1;
	pc->chunk = pc->max_frames > 2 ?
		    min_u64((pc->max_frames - 2) * p->hop_length,
			    lp->target_in / 4) : 1;
}

/* The first piece: its fields, and whether the item can be framed. */
static int begin_item(struct loop *lp, const rec_item *it)
{
	struct pieces *pc = &lp->pc;
	const char *why;

	if (!pc->key) {
		set_limits(lp, pc);
		pc->carry_cap = ((size_t)mel_frame_len(&lp->p) +
				 lp->p.hop_length) * 4;
		pc->carry = malloc(pc->carry_cap);
		pc->key = malloc(MAX_KEY_LEN + 1);
		if (!pc->carry || !pc->key) {
			loop_fail(lp, "out of memory for an item in pieces");
			return -1;
		}
	}
	lp->st.audio++;
	pc->open = 1;
	pc->started = pc->emitted = 0;
	pc->n = pc->n_all = pc->t_next = pc->y0 = 0;
	pc->nan = 0;
	pc->carry_len = 0;
	pc->first = *it;
	memcpy(pc->key, it->key, it->key_len);
	pc->first.key = pc->key;
	pc->first.flags = 0;
	pc->first.data = NULL;
	pc->first.data_len = 0;
	pc->dt = it->dtype == REC_S16 ? REC_S16 : REC_F32;
	pc->isz = pc->dt == REC_S16 ? 2 : 4;
	why = unusable(lp, it, 1, pc->why, sizeof(pc->why));
	pc->mode = why ? PC_REFUSED : PC_FRAME;
	return 0;
}

/* The item's fields with another offset and clip_samples. */
static rec_item item_fields(const struct pieces *pc, uint64_t offset,
			    uint64_t clip_samples)
{
	rec_item m = pc->first;

	m.offset = offset;
	m.clip_samples = clip_samples;
	return m;
}

/* A computed record of frames [t0, t0 + nf) at in_off in the batch,
 * leaving as a features piece (or the whole item, when last and none
 * went before): -1 on abort. */
static int add_frames(struct loop *lp, struct hbatch *hb, uint64_t in_off,
		      uint64_t t0, uint64_t nf, uint64_t n_samples, int last)
{
	struct pieces *pc = &lp->pc;
	mel_rec *r = &hb->mb.rec[hb->mb.n];
	rec_item m = item_fields(pc, pc->first.offset +
				 t0 * lp->p.hop_length, pc->clip_samples);
	int whole = last && !pc->emitted;
	struct entry *e;

	r->in_off = in_off;
	r->n_samples = (uint32_t)n_samples;
	r->n_frames = (uint32_t)nf;
	r->out_off = hb->out_used;
	r->flags = pc->started ? MEL_REC_PADDED : 0;
	r->flags |= whole ? 0 : MEL_REC_NO_CLAMP;
	r->reserved = 0;
	r->clip = pc->first.clip;
	r->pos0 = (int64_t)(pc->first.offset + t0 * lp->p.hop_length) -
		  (int64_t)pad_len(lp);
	e = add_entry(lp, hb, &m);
	if (!e)
		return -1;
	e->flags = pc->emitted ? REC_ITEM_CONT : 0;
	e->flags |= last ? 0 : REC_ITEM_MORE;
	e->rec = hb->mb.n++;
	hb->out_used += nf * mel_n_rows(&lp->p);
	pc->emitted = 1;
	return 0;
}

/* Element i of a batch's samples of isz bytes, to element j. */
static void copy_elem(unsigned char *x, size_t isz, int64_t j, int64_t i)
{
	memcpy(x + j * (int64_t)isz, x + i * (int64_t)isz, isz);
}

/* y[0, P) before the samples at y + P (at least P + 1 of them): zeros,
 * or numpy.pad's reflect, y[P - i] = y[P + i], or for fbank Kaldi's,
 * y[P - 1 - i] = y[P + i]. */
static void start_pad(const struct loop *lp, unsigned char *y, size_t isz)
{
	int64_t P = (int64_t)pad_len(lp);

	if (lp->p.feature == MEL_FEAT_FBANK) {
		for (int64_t j = 0; j < P; j++)
			copy_elem(y, isz, j, 2 * P - 1 - j);
		return;
	}
	if (lp->p.pad_mode != MEL_PAD_REFLECT) {
		memset(y, 0, (size_t)P * isz);
		return;
	}
	for (int64_t j = 0; j < P; j++)
		copy_elem(y, isz, j, 2 * P - j);
}

/* E samples at e, right after the item's last sample (at least E + 1
 * samples before e): zeros, or reflect, e[i] = e[-2 - i], or for fbank
 * Kaldi's, e[i] = e[-1 - i]. */
static void end_pad(const struct loop *lp, unsigned char *e, size_t isz,
		    uint64_t E)
{
	int64_t P = (int64_t)E;

	if (lp->p.feature == MEL_FEAT_FBANK) {
		for (int64_t i = 0; i < P; i++)
			copy_elem(e, isz, i, -1 - i);
		return;
	}
	if (lp->p.pad_mode != MEL_PAD_REFLECT) {
		memset(e, 0, (size_t)P * isz);
		return;
	}
	for (int64_t i = 0; i < P; i++)
		copy_elem(e, isz, i, -2 - i);
}

/* Whether an item of n samples that ends before any frame was computed
 * is one computed record: unless it has more frames than a piece holds
 * and could be padded on the host (reflect needs P + 1 samples, Kaldi's
 * reflection as many as either end's padding). */
static int one_record(const struct loop *lp, uint64_t n)
{
	if (mel_n_frames(&lp->p, n) <= lp->pc.max_frames)
		return 1;
	if (lp->p.feature == MEL_FEAT_FBANK)
		return n < pad_len(lp) || n < end_pad_len(lp, n);
	return lp->p.center && lp->p.pad_mode == MEL_PAD_REFLECT &&
	       n <= pad_len(lp);
}

/* The whole item (pc->n samples at in_off, the backend pads) as one
 * computed record; none when it gives no frame. */
static int whole_record(struct loop *lp, struct hbatch *hb, uint64_t in_off,
			int end)
{
	struct pieces *pc = &lp->pc;
	uint64_t nf = mel_n_frames(&lp->p, pc->n);

	if (nf == 0)
		return 0;
	if (add_frames(lp, hb, in_off, 0, nf, pc->n, end == END_LAST) < 0)
		return -1;
	hb->in_used = in_off + pc->n;
	pc->t_next = nf;
	return 0;
}

/* The frames [pc->t_next, t_end) of y, whose sample ybase is the batch's
 * sample in_used, in records of at most max_frames frames. */
static int add_stretch(struct loop *lp, struct hbatch *hb, uint64_t ybase,
		       uint64_t t_end, int end)
{
	struct pieces *pc = &lp->pc;
	uint64_t hop = lp->p.hop_length;

	for (uint64_t a = pc->t_next, b; a < t_end; a = b) {
		b = min_u64(t_end, a + pc->max_frames);
		if (add_frames(lp, hb, hb->in_used + a * hop - ybase, a, b - a,
			       (b - a - 1) * hop + mel_frame_len(&lp->p),
			       end == END_LAST && b == t_end) < 0)
			return -1;
	}
	pc->t_next = t_end;
	return 0;
}

/*
 * Frames the carry and samples [from, from + c) of it, in a batch: the
 * frames they complete (all that remain when end says the item ends),
 * and keeps in the carry what later frames need. A sample that is not
 * finite ends the item there: *end becomes END_CUT, pc->n the samples
 * before it. -1 on abort.
 */
static int stretch(struct loop *lp, struct hbatch **cur, const rec_item *it,
		   size_t from, size_t c, int *end)
{
	struct pieces *pc = &lp->pc;
	const mel_params *p = &lp->p;
	uint64_t P = pad_len(lp), isz = pc->isz;
	uint64_t nf = mel_n_frames(p, pc->n + c);
	uint64_t at = pc->started ? 0 : P, ybase, yend, t_end;
	struct hbatch *hb;
	unsigned char *y;
	size_t bad;

	/* room for the padding at both ends */
	if (make_room(lp, cur, pc->dt, 2 * P + mel_frame_len(p) +
		      pc->carry_len + c, nf, nf / pc->max_frames + 2) < 0)
		return -1;
	hb = *cur;
	hb->mb.in_dtype = pc->dt;
	y = (unsigned char *)hb->mb.in + hb->in_used * isz;
	memcpy(y + at * isz, pc->carry, pc->carry_len * isz);
	if (c && convert_samples(y + (at + pc->carry_len) * isz, it, from, c,
				 &bad) < 0) {
		c = bad;
		*end = END_CUT;
	}
	pc->n += c;
	if (!pc->started && *end != END_NONE && one_record(lp, pc->n))
		return whole_record(lp, hb, hb->in_used + P, *end);
	if (!pc->started && p->n_mfcc && mel_clamps(p)) {
		/* the DCT needs the bands clamped first, to a maximum known
		 * only at the item's end */
		snprintf(pc->why, sizeof(pc->why), "MFCC with --top-db needs "
			 "the whole clip's maximum before the DCT, and this "
			 "clip comes in pieces (longer than wavcat's "
			 "--piece-samples); give --top-db none, cut it with "
			 "segment, or give wavcat a larger --piece-samples");
		pc->mode = PC_REFUSED;
		return 0;
	}
	ybase = pc->y0;
	yend = P + pc->n;
	if (!pc->started)
		start_pad(lp, y, isz);
	pc->started = 1;
	if (*end != END_NONE) {
		uint64_t E = end_pad_len(lp, pc->n);

		end_pad(lp, y + (yend - ybase) * isz, isz, E);
		yend += E;
	}
	t_end = frames_in(p, yend);
	if (*end == END_NONE) /* the last frame waits for the next piece */
		t_end = t_end > pc->t_next + 1 ? t_end - 1 : pc->t_next;
	if (add_stretch(lp, hb, ybase, t_end, *end) < 0)
		return -1;
	if (*end == END_NONE) {
		pc->carry_len = yend - t_end * p->hop_length;
		memcpy(pc->carry, y + (t_end * p->hop_length - ybase) * isz,
		       pc->carry_len * isz);
		pc->y0 = t_end * p->hop_length;
	}
	hb->in_used += yend - ybase;
	return 0;
}

/* Samples [from, from + c) of it: into the carry while they complete no
 * frame but the one held back, else framed in a batch. */
static int feed(struct loop *lp, struct hbatch **cur, const rec_item *it,
		size_t from, size_t c, int *end)
{
	struct pieces *pc = &lp->pc;
	size_t bad;

	if (*end != END_NONE ||
	    frames_in(&lp->p, pad_len(lp) + pc->n + c) > pc->t_next + 1)
		return stretch(lp, cur, it, from, c, end);
	/* carry_len + c < n_fft + hop: the carry holds them */
	if (convert_samples(pc->carry + pc->carry_len * pc->isz, it, from, c,
			    &bad) == 0) {
		pc->carry_len += c;
		pc->n += c;
		return 0;
	}
	pc->carry_len += bad;
	pc->n += bad;
	*end = END_CUT;
	return stretch(lp, cur, it, 0, 0, end);
}

/* The item is refused whole (pc->why): one skipped record, as one record
 * of it would give (cut: the skipped record from upstream that ends it,
 * whose samples kept and reason it takes on). */
static int refuse_item(struct loop *lp, struct hbatch **cur,
		       const rec_item *cut)
{
	struct pieces *pc = &lp->pc;
	rec_item m = item_fields(pc, pc->first.offset, pc->clip_samples);
	char why[1024];

	if (cut) {
		m.offset = cut->offset;
		m.clip_samples = cut->clip_samples;
		snprintf(why, sizeof(why), "%s (cut short upstream: %.*s)",
			 pc->why, (int)min_u64(cut->data_len, 512),
			 (const char *)cut->data);
	} else if (pc->nan && mel_n_frames(&lp->p, pc->n_all) == 0) {
		/* one record of it says too short before it looks at the
		 * samples */
		m.dim0 = (uint32_t)pc->n_all;
		unusable(lp, &m, 0, why, sizeof(why));
	} else {
		snprintf(why, sizeof(why), "%s", pc->why);
	}
	warn_skip(&m, why);
	lp->st.skipped_here++;
	return add_skipped_rec(lp, cur, &m, why, strlen(why));
}

/* A sample that is not finite ended the item after pc->n samples: cut
 * short where frames went out, else refused whole at its end. */
static int cut_here(struct loop *lp, struct hbatch **cur)
{
	struct pieces *pc = &lp->pc;
	uint64_t kept = pc->n;
	rec_item m;
	char why[160];

	if (!pc->emitted) {
		snprintf(pc->why, sizeof(pc->why), "sample %" PRIu64 " is not "
			 "a finite number", kept);
		pc->mode = PC_REFUSED;
		pc->nan = 1;
		return 0;
	}
	snprintf(why, sizeof(why), "sample %" PRIu64 " is not a finite "
		 "number (%" PRIu64 " %s kept)", kept, kept,
		 prog_plural(kept, "sample", "samples"));
	m = item_fields(pc, pc->first.offset + kept, pc->first.offset + kept);
	warn_skip(&m, why);
	lp->st.skipped_here++;
	pc->mode = PC_DROP;
	return add_skipped_rec(lp, cur, &m, why, strlen(why));
}

/* The samples of an audio piece, a stretch of at most pc->chunk at a
 * time. */
static int frame_piece(struct loop *lp, struct hbatch **cur,
		       const rec_item *it)
{
	struct pieces *pc = &lp->pc;
	int last = !(it->flags & REC_ITEM_MORE);
	size_t from = 0;

	do {
		size_t c = min_u64(it->dim0 - from, pc->chunk);
		int end = last && from + c == it->dim0 ? END_LAST : END_NONE;

		if (feed(lp, cur, it, from, c, &end) < 0)
			return -1;
		if (pc->mode != PC_FRAME) /* refused: skipped at its end */
			return 0;
		from += c;
		if (end == END_CUT)
			return cut_here(lp, cur);
		if (end == END_LAST && !pc->emitted) {
			/* no frame: skipped as one record of it would be */
			rec_item m = item_fields(pc, pc->first.offset,
						 pc->clip_samples);
			char why[256];

			m.dim0 = (uint32_t)pc->n;
			unusable(lp, &m, 0, why, sizeof(why));
			warn_skip(&m, why);
			lp->st.skipped_here++;
			return add_skipped_rec(lp, cur, &m, why, strlen(why));
		}
	} while (from < it->dim0);
	return 0;
}

/* A skipped record after a piece flagged more: the item ends there. */
static int cut_upstream(struct loop *lp, struct hbatch **cur,
			const rec_item *it)
{
	struct pieces *pc = &lp->pc;
	int end = END_CUT;

	pc->open = 0;
	if (pc->mode == PC_REFUSED)
		return refuse_item(lp, cur, it);
	if (pc->mode == PC_DROP) /* cut short here already */
		return 0;
	if (stretch(lp, cur, it, 0, 0, &end) < 0)
		return -1;
	lp->st.skipped_in++;
	return add_skipped_rec(lp, cur, it, it->data, it->data_len);
}

int add_piece(struct loop *lp, struct hbatch **cur, const rec_item *it)
{
	struct pieces *pc = &lp->pc;

	if (pc->open && it->type == REC_T_SKIPPED)
		return cut_upstream(lp, cur, it);
	if (it->type != REC_T_AUDIO ||
	    !(it->flags & REC_ITEM_CONT) != !pc->open) {
		/* lib/rec keeps this from happening */
		loop_fail(lp, "record %" PRIu64 ": an audio piece out of "
			  "place", rec_reader_count(lp->rd));
		return -1;
	}
	if (!(it->flags & REC_ITEM_CONT) && begin_item(lp, it) < 0)
		return -1;
	pc->clip_samples = it->clip_samples;
	pc->n_all += it->dim0;
	if (pc->mode == PC_FRAME && frame_piece(lp, cur, it) < 0)
		return -1;
	if (it->flags & REC_ITEM_MORE)
		return 0;
	pc->open = 0;
	return pc->mode == PC_REFUSED ? refuse_item(lp, cur, NULL) : 0;
}

void pieces_free(struct pieces *pc)
{
	free(pc->carry);
	free(pc->key);
	pc->carry = NULL;
	pc->key = NULL;
}
