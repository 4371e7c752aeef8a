/*
 * test-rec-item - unit tests of lib/rec_item.c and rec_piece.c:
 * rec_window() and rec_each_window() on windows records in memory, the
 * last segment a record holds, and the item rules as the writer applies
 * them: windows that do not fit their samples, refused by rec_write and
 * by commit, the clip and segment order over a windows record's range,
 * and the rules of items in pieces.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "rec-fixture.h"
#include "tap.h"

/* rec_window() on a record in memory: fields, where data points, zeros
 * after the samples, and its refusals. */
static void test_rec_window(void)
{
	struct titem a, b;
	rec_item out;
	unsigned char pad[40 * 2 * 2];
	size_t frame = 2 * 2;
	int err;

	/* 4 windows of 40 every 20 in 61 stereo frames: 2 fit, 2 padded */
	titem_windows(&a, REC_S16, 3, 10, 61, 2, 40, 20, 4, REC_WIN_PAD, 5);
	for (uint32_t i = 0; i < 4; i++) {
		size_t start = 20 * (size_t)i, have;

		memset(pad, 0xaa, sizeof(pad));
		err = rec_window(&a.it, i, &out, pad);
		tap_is(err, REC_OK, "rec_window %u", i);
		tap_ok(out.type == REC_T_AUDIO && out.clip == 3 &&
		       out.offset == a.it.offset + start &&
		       out.segment == 10 + i && out.dim0 == 40 &&
		       out.dim1 == 2 && out.dtype == REC_S16 &&
		       out.data_len == 40 * frame && out.key == a.it.key &&
		       out.key_len == 5 && out.label == a.it.label &&
		       out.split == a.it.split && out.clip_samples ==
		       a.it.clip_samples && out.win_len == 0 &&
		       out.win_hop == 0 && out.n_windows == 0 &&
		       out.win_flags == 0,
		       "window %u: an audio record at offset + %zu, segment "
		       "10 + %u, 40 frames, no window fields", i, start, i);
		if (start + 40 <= 61) {
			tap_ok(out.data == a.data + start * frame,
			       "window %u points into the payload", i);
			continue;
		}
		have = (61 - start) * frame;
		tap_ok(out.data == pad && memcmp(pad, a.data + start * frame,
						 have) == 0,
		       "window %u: the %zu bytes left copied into pad", i,
		       have);
		tap_ok(pad[have] == 0 && pad[sizeof(pad) - 1] == 0 &&
		       memchr(pad + have, 0xaa, sizeof(pad) - have) == NULL,
		       "window %u: and zeros after them", i);
	}
	tap_is(rec_window(&a.it, 0, &out, NULL), REC_OK, "a window inside "
	       "the samples needs no pad buffer");
	tap_is(rec_window(&a.it, 2, &out, NULL), REC_E_INVAL, "a padded "
	       "window without a pad buffer is refused");
	tap_is(rec_window(&a.it, 4, &out, pad), REC_E_INVAL, "window "
	       "n_windows is out of range");
	tap_is(rec_window(&a.it, UINT32_MAX, &out, pad), REC_E_INVAL,
	       "window 2^32 - 1 too");
	tap_is(rec_window(NULL, 0, &out, pad), REC_E_INVAL, "NULL record");
	tap_is(rec_window(&a.it, 0, NULL, pad), REC_E_INVAL, "NULL out");
	titem_make(&b, REC_T_AUDIO, REC_S16, 3, 0, 80, 1, 2);
	tap_is(rec_window(&b.it, 0, &out, pad), REC_E_INVAL, "an audio "
	       "record has no windows");
	tap_is(rec_item_last_segment(&a.it), 13, "last segment of a windows "
	       "record is segment + n_windows - 1");
	b.it.segment = 7;
	tap_is(rec_item_last_segment(&b.it), 7, "last segment of an audio "
	       "record is its segment");
	free(a.data);
	free(b.data);
}

/* rec_each_window()'s callback: records what it was given; stops with 7
 * at the window whose segment is stop_at. */
struct each_seen {
	uint32_t n, stop_at;
	uint64_t offsets[8];
	unsigned char bytes[8][40 * 2 * 2];
};

static int each_fn(const rec_item *win, void *arg)
{
	struct each_seen *e = arg;

	if (win->segment == e->stop_at)
		return 7;
	if (e->n < 8) {
		e->offsets[e->n] = win->offset;
		memcpy(e->bytes[e->n], win->data, win->data_len);
	}
	e->n++;
	return 0;
}

/* rec_each_window() gives what rec_window() gives, in order, grows the
 * pad buffer, stops at the callback's first non-zero value. */
static void test_each_window(void)
{
	struct titem a, b;
	struct each_seen e = { .stop_at = UINT32_MAX };
	unsigned char want[40 * 2 * 2];
	void *pad = NULL;
	size_t cap = 0;
	rec_item out;
	int bad = 0;

	titem_windows(&a, REC_S16, 3, 10, 61, 2, 40, 20, 4, REC_WIN_PAD, 5);
	tap_is(rec_each_window(&a.it, &pad, &cap, each_fn, &e), REC_OK,
	       "rec_each_window over 4 windows");
	tap_ok(e.n == 4 && cap >= 40 * 2 * 2, "4 calls, pad grown to a "
	       "window (%zu bytes)", cap);
	for (uint32_t i = 0; i < 4 && i < e.n; i++) {
		rec_window(&a.it, i, &out, want);
		bad += e.offsets[i] != out.offset ||
		       memcmp(e.bytes[i], out.data, out.data_len) != 0;
	}
	tap_is(bad, 0, "each window as rec_window gives it");
	e.n = 0;
	e.stop_at = 12;
	tap_is(rec_each_window(&a.it, &pad, &cap, each_fn, &e), 7,
	       "the callback's first non-zero value comes back");
	tap_is(e.n, 2, "and no window after it is given");
	titem_make(&b, REC_T_AUDIO, REC_S16, 3, 0, 80, 1, 2);
	tap_is(rec_each_window(&b.it, &pad, &cap, each_fn, &e), REC_E_INVAL,
	       "an audio record is refused");
	free(pad);
	free(a.data);
	free(b.data);
}

/* Descriptions that do not fit their samples, each refused with
 * REC_E_INVAL and a reason by rec_write and by commit. */
static const struct bad_windows {
	uint32_t dim0, len, hop, n, flags, seg;
	const char *why;
} bad_windows[] = {
	{ 80, 0, 20, 3, 0, 0, "window length 0, hop 20 and 3 windows "
	  "(none may be 0)" },
	{ 80, 40, 0, 3, 0, 0, "window length 40, hop 0 and 3 windows" },
	{ 80, 40, 20, 0, 0, 0, "hop 20 and 0 windows (none may be 0)" },
	{ 80, 40, 20, 3, 2, 0, "unknown windows flags 0x2" },
	{ 80, 40, 20, 3, 0x80000001u, 0, "unknown windows flags 0x80000001" },
	{ 80, 40, 20, 4, 0, 0, "4 windows of 40 every 20 do not fit 80 "
	  "samples (and the pad flag is clear)" },
	{ 80, 40, 20, 5, REC_WIN_PAD, 0, "5 windows of 40 every 20 do not "
	  "fit 80 samples" },
	{ 80, 40, 20, 3, 0, UINT32_MAX - 1, "3 windows from segment "
	  "4294967294 run past segment index 2^32 - 1" },
};

static void test_windows_refusals(void)
{
	enum { NBAD = sizeof(bad_windows) / sizeof(bad_windows[0]) };
	struct titem good[4], t;
	rec_header *h = test_header();
	rec_writer *w = NULL;
	int fd = temp_fd(), explained = 0, commits = 0, err;
	void *p;

	rec_writer_open(&w, fd, h, NULL);
	for (size_t i = 0; i < NBAD; i++) {
		const struct bad_windows *b = &bad_windows[i];

		titem_windows(&t, REC_S16, 0, b->seg, b->dim0, 1, b->len,
			      b->hop, b->n, b->flags, 3);
		err = rec_write(w, &t.it);
		tap_is(err, REC_E_INVAL, "rec_write refuses: %s", b->why);
		if (!strstr(rec_writer_detail(w), b->why)) {
			explained++;
			tap_diag("detail: %s", rec_writer_detail(w));
		}
		if (rec_write_reserve(w, t.it.data_len, &p) == REC_OK) {
			memcpy(p, t.data, t.it.data_len);
			commits += rec_write_commit(w, &t.it) == REC_E_INVAL;
		}
		free(t.data);
	}
	tap_is(explained, 0, "each refusal says why");
	tap_is(commits, NBAD, "rec_write_commit refuses them all too");

	/* Segments 0..2 of clip 0; then the order rule over that range. */
	titem_windows(&good[0], REC_S16, 0, 0, 80, 1, 40, 20, 3, 0, 3);
	tap_is(rec_write(w, &good[0].it), 0, "a good windows record after "
	       "the refusals");
	titem_make(&t, REC_T_AUDIO, REC_S16, 0, 0, 40, 1, 3);
	t.it.segment = 2;
	tap_is(rec_write(w, &t.it), REC_E_INVAL, "segment 2 after a windows "
	       "record holding 0 to 2 is refused");
	tap_ok(strstr(rec_writer_detail(w), "clip 0 segment 2 after clip 0 "
		      "segment 2") != NULL, "naming the last window's segment: "
	       "%s", rec_writer_detail(w));
	t.it.segment = 1;
	tap_is(rec_write(w, &t.it), REC_E_INVAL, "segment 1 too");
	free(t.data);
	titem_windows(&t, REC_S16, 0, 2, 80, 1, 40, 20, 3, 0, 3);
	tap_is(rec_write(w, &t.it), REC_E_INVAL, "a windows record starting "
	       "at segment 2 too");
	free(t.data);
	titem_make(&good[1], REC_T_AUDIO, REC_S16, 0, 0, 40, 1, 3);
	good[1].it.segment = 3;
	tap_is(rec_write(w, &good[1].it), 0, "segment 3 is accepted");
	titem_windows(&good[2], REC_F32, 0, 4, 10, 1, 4, 2, 4, 0, 3);
	tap_is(rec_write_reserve(w, good[2].it.data_len, &p), 0, "reserve");
	memcpy(p, good[2].data, good[2].it.data_len);
	tap_is(rec_write_commit(w, &good[2].it), 0, "and commit a windows "
	       "record of segments 4 to 7");
	titem_make(&t, REC_T_AUDIO, REC_S16, 0, 0, 40, 1, 3);
	t.it.segment = 7;
	tap_is(rec_write(w, &t.it), REC_E_INVAL, "segment 7 after it is "
	       "refused");
	free(t.data);
	titem_make(&good[3], REC_T_SKIPPED, 0, 1, 0, 0, 0, 3);
	tap_is(rec_write(w, &good[3].it), 0, "the next clip is accepted");
	tap_is(rec_writer_finish(w), 0, "finish");
	check_stream(fd, good, 4, "windows after refusals");
	rec_writer_close(w);
	rec_header_free(h);
	free_items(good, 4);
	close(fd);
}

/* rec_write() (or commit) of t must be refused with REC_E_INVAL and a
 * detail holding why; counts what was not. */
static int refused(rec_writer *w, const struct titem *t, int commit,
		   const char *why)
{
	int err;
	void *p;

	if (commit) {
		err = rec_write_reserve(w, t->it.data_len, &p);
		if (err == REC_OK) {
			memcpy(p, t->data, t->it.data_len);
			err = rec_write_commit(w, &t->it);
		}
	} else {
		err = rec_write(w, &t->it);
	}
	tap_is(err, REC_E_INVAL, "%s refuses: %s", commit ? "commit"
	       : "rec_write", why);
	if (strstr(rec_writer_detail(w), why))
		return 0;
	tap_diag("detail: %s", rec_writer_detail(w));
	return 1;
}

/* A piece like base (its clip, key, dtype), changed by the caller. */
static void piece_like(struct titem *t, const struct titem *base,
		       uint64_t offset, uint32_t n, uint32_t flags,
		       uint64_t clip_samples)
{
	titem_piece(t, base->it.type, base->it.dtype, base->it.clip, offset, n,
		    flags, clip_samples, base->it.key_len);
}

/* The writer refuses each piece that breaks a rule, with the reader's
 * reason, through rec_write and commit, and the stream goes on: the
 * pieces it took read back as written. */
static void test_piece_refusals(void)
{
	enum { MC = REC_ITEM_MORE | REC_ITEM_CONT };
	struct titem good[9], t;
	rec_header *h = test_header();
	rec_writer *w = NULL;
	int fd = temp_fd(), unexplained = 0, k = 0;

	rec_writer_open(&w, fd, h, NULL);
	titem_piece(&good[k], REC_T_AUDIO, REC_S16, 0, 0, 10, REC_ITEM_MORE,
		    0, 4);
	tap_is(rec_write(w, &good[k++].it), 0, "a piece flagged more");
	tap_ok(rec_item_is_piece(&good[0].it), "rec_item_is_piece() says so");

	titem_piece(&t, REC_T_SKIPPED, 0, 0, 10, 0, REC_ITEM_MORE, 10, 4);
	unexplained += refused(w, &t, 0, "the more flag on a skipped record "
			       "(only audio and features records come in "
			       "pieces)");
	free(t.data);
	titem_windows(&t, REC_S16, 0, 0, 80, 1, 40, 20, 3, 0, 4);
	t.it.flags = REC_ITEM_CONT;
	unexplained += refused(w, &t, 0, "the cont flag on a windows record");
	free(t.data);
	piece_like(&t, &good[0], 10, 10, 0x10, 20);
	unexplained += refused(w, &t, 0, "unknown item flags 0x10");
	tap_is(rec_writer_finish(w), REC_E_INVAL, "no trailer after a piece "
	       "flagged more");
	unexplained += !strstr(rec_writer_detail(w), "the stream ends after a "
			       "piece of clip 0 segment 0 flagged more");
	free(t.data);
	titem_make(&t, REC_T_AUDIO, REC_S16, 1, 0, 10, 1, 4);
	unexplained += refused(w, &t, 1, "audio record of clip 1 segment 0 "
			       "after a piece of clip 0 segment 0 flagged "
			       "more");
	free(t.data);

	/* the next piece, each field wrong in turn */
	piece_like(&t, &good[0], 10, 10, MC, 20);
	t.it.label = 7;
	unexplained += refused(w, &t, 0, "a piece flagged cont whose label "
			       "(7) differs from the piece before (-1)");
	t.it.label = good[0].it.label;
	t.it.sample_rate = 8000;
	unexplained += refused(w, &t, 1, "whose sample_rate (8000) differs");
	t.it.sample_rate = good[0].it.sample_rate;
	t.it.split = 2;
	unexplained += refused(w, &t, 0, "whose split (2) differs");
	t.it.split = good[0].it.split;
	t.it.dtype = REC_BF16;
	unexplained += refused(w, &t, 0, "whose dtype (bf16) differs from "
			       "the piece before (s16)");
	t.it.dtype = REC_S16;
	t.key[0] = 'q';
	unexplained += refused(w, &t, 0, "whose key differs from the piece "
			       "before");
	t.key[0] = good[0].key[0];
	t.it.key_len = 3;
	unexplained += refused(w, &t, 0, "whose key differs from the piece "
			       "before");
	t.it.key_len = 4;
	t.it.segment = 1;
	unexplained += refused(w, &t, 0, "audio piece flagged cont of clip 0 "
			       "segment 1 after a piece of clip 0 segment 0 "
			       "flagged more");
	t.it.segment = 0;
	t.it.offset = 11;
	unexplained += refused(w, &t, 1, "a piece flagged cont at offset 11, "
			       "not where the piece before ends (0 + 10)");
	t.it.offset = 10;
	t.it.dim0 = 5;
	t.it.dim1 = 2;
	unexplained += refused(w, &t, 0, "whose dim1 (2) differs from the "
			       "piece before (1)");
	t.it.dim0 = 10;
	t.it.dim1 = 1;
	t.it.type = REC_T_FEATURES;
	unexplained += refused(w, &t, 0, "whose type (features) differs from "
			       "the piece before (audio)");
	t.it.type = REC_T_AUDIO;
	t.it.flags = REC_ITEM_CONT;
	t.it.clip_samples = 0;
	unexplained += refused(w, &t, 0, "the last piece of an item with "
			       "clip_samples 0");
	free(t.data);
	piece_like(&t, &good[0], 10, 0, MC, 20);
	unexplained += refused(w, &t, 1, "a piece of 0 samples flagged more "
			       "(only the last piece of an item may be "
			       "empty)");
	free(t.data);
	piece_like(&good[k], &good[0], 10, 10, MC, 20);
	tap_is(rec_write(w, &good[k++].it), 0, "the right next piece, its "
	       "length known");
	piece_like(&t, &good[0], 20, 10, REC_ITEM_CONT, 21);
	unexplained += refused(w, &t, 0, "whose clip_samples (21) differs "
			       "from the piece before (20)");
	free(t.data);
	piece_like(&good[k], &good[0], 20, 0, REC_ITEM_CONT, 20);
	tap_is(rec_write(w, &good[k++].it), 0, "an empty last piece");
	piece_like(&t, &good[0], 20, 5, REC_ITEM_CONT, 20);
	unexplained += refused(w, &t, 0, "a piece flagged cont (clip 0 "
			       "segment 0) without a piece flagged more "
			       "before it");
	free(t.data);

	/* features: offsets increase; cut short by a skipped record */
	titem_piece(&good[k], REC_T_FEATURES, REC_F32, 1, 0, 2, REC_ITEM_MORE,
		    0, 6);
	tap_is(rec_write(w, &good[k++].it), 0, "a features piece flagged "
	       "more");
	piece_like(&t, &good[k - 1], 0, 1, MC, 0);
	unexplained += refused(w, &t, 0, "a piece flagged cont at offset 0, "
			       "not after the piece before (0)");
	t.it.offset = 320;
	t.it.dim0 = 4;
	t.it.dim1 = 2;
	unexplained += refused(w, &t, 1, "whose dim0 (4) differs from the "
			       "piece before (8)");
	free(t.data);
	piece_like(&good[k], &good[k - 1], 320, 1, MC, 0);
	tap_is(rec_write(w, &good[k++].it), 0, "its next piece");
	titem_piece(&t, REC_T_SKIPPED, 0, 1, 480, 0, 0, 480, 6);
	t.it.segment = 1;
	unexplained += refused(w, &t, 0, "skipped record of clip 1 segment 1 "
			       "after a piece of clip 1 segment 0 flagged "
			       "more");
	free(t.data);
	titem_piece(&good[k], REC_T_SKIPPED, 0, 1, 480, 0, 0, 480, 6);
	tap_is(rec_write(w, &good[k++].it), 0, "a skipped record of its clip "
	       "and segment ends it cut short");
	titem_make(&good[k], REC_T_AUDIO, REC_S16, 1, 0, 10, 1, 6);
	good[k].it.segment = 1;
	tap_is(rec_write(w, &good[k++].it), 0, "and the clip's next segment "
	       "follows");
	tap_is(unexplained, 0, "each refusal says why");
	tap_is(rec_writer_finish(w), 0, "finish");
	check_stream(fd, good, (size_t)k, "pieces after refusals");
	rec_writer_close(w);
	rec_header_free(h);
	free_items(good, (size_t)k);
	close(fd);
}

int main(void)
{
	test_rec_window();
	test_each_window();
	test_windows_refusals();
	test_piece_refusals();
	return tap_done();
}
