/*
 * rec-round-trip.c - the round trips shared by the writer's and the
 * reader's unit tests (rec-round-trip.h).
 */
#include "rec-round-trip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "rec-fixture.h"
#include "tap.h"

/* Writes the n items of t, with rec_write or, when reserve is set,
 * alternately with reserve/commit (counting the reserved payloads not
 * 16-byte aligned in *misaligned), and the trailer. */
static int write_items(rec_writer *w, const struct titem *t, size_t n,
		       int reserve, int *misaligned)
{
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		void *p;

		if (!reserve || i % 2) {
			err = rec_write(w, &t[i].it);
			continue;
		}
		err = rec_write_reserve(w, t[i].it.data_len, &p);
		if (err)
			break;
		*misaligned += (uintptr_t)p % 16 != 0;
		memcpy(p, t[i].data, t[i].it.data_len);
		err = rec_write_commit(w, &t[i].it);
	}
	return err ? err : rec_writer_finish(w);
}

/* The n items of t written by write_items() into a temporary file, with
 * zstd level and a writer's buffer of bufsize bytes (0: the default),
 * the writer's result, alignment and byte count checked; the file. */
static int write_stream(const struct titem *t, size_t n, int level,
			size_t bufsize, int reserve, const char *what)
{
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_writer_opts o = { .zstd_level = level, .buffer_size = bufsize,
			      .write_behind = g_wb };
	int fd = temp_fd(), err, misaligned = 0;

	err = rec_writer_open(&w, fd, h, &o);
	if (!err)
		err = write_items(w, t, n, reserve, &misaligned);
	tap_is(err, 0, "%s: write %zu records", what, n);
	if (err)
		tap_diag("%s", rec_writer_detail(w));
	tap_is(misaligned, 0, "%s: reserved payloads aligned", what);
	tap_is_u64(rec_writer_count(w), n, "%s: writer count", what);
	tap_is_u64(rec_writer_bytes(w), (uint64_t)lseek(fd, 0, SEEK_END),
		   "%s: writer bytes equal the file size", what);
	rec_writer_close(w);
	rec_header_free(h);
	return fd;
}

void test_round_trip(int level, size_t bufsize)
{
	struct titem t[300];
	size_t n = make_items(t, 290, 1);
	char what[64];
	int fd;

	snprintf(what, sizeof(what), "zstd %d, buffer %zu", level, bufsize);
	fd = write_stream(t, n, level, bufsize, 0, what);
	g_plain = level == 0;
	check_stream(fd, t, n, what);
	g_plain = 0;
	free_items(t, n);
	close(fd);
}

/* Windows records of every dtype among the other types: windows that fit
 * exactly, a record of the clip right after the last window, padded ones
 * whose last window starts on the last frame, a single window longer than
 * its record, 2 channels, a hop longer than the window, segment indices
 * up to 2^32 - 1, keys of several lengths (payload alignments). */
static size_t make_windows_items(struct titem *t)
{
	size_t n = 0;
	uint64_t clip = 0;

	for (int d = REC_S16; d <= REC_BF16; d++) {
		titem_windows(&t[n++], d, clip, 0, 80, 1, 40, 20, 3, 0,
			      (size_t)(2 + d));
		titem_make(&t[n], REC_T_AUDIO, d, clip++, 0, 40, 1, 3);
		t[n++].it.segment = 3;
		titem_windows(&t[n++], d, clip, 5, 61, 2, 40, 20, 4,
			      REC_WIN_PAD, (size_t)(7 * d));
		titem_windows(&t[n++], d, clip++, 9, 10, 1, 16, 16, 1,
			      REC_WIN_PAD, 0);
		titem_make(&t[n++], REC_T_SKIPPED, 0, clip++, 0, 0, 0, 5);
		titem_windows(&t[n++], d, clip++, UINT32_MAX - 2, 25, 1, 3,
			      11, 3, 0, 20);
		titem_make(&t[n++], REC_T_FEATURES, d, clip++, 0, 8, 5, 1);
	}
	titem_windows(&t[n++], REC_S16, clip++, 0, 300000, 1, 16000, 8000,
		      35, 0, 9);
	return n;
}

/* Window i of the record t as the spec defines it, computed here from
 * the record's own samples: win_len frames from frame i * hop, zeros
 * past the end. */
static void expected_window(const struct titem *t, uint32_t i,
			    unsigned char *out)
{
	size_t frame = rec_dtype_size(t->it.dtype) * t->it.dim1;
	size_t start = (size_t)i * t->it.win_hop * frame;
	size_t len = (size_t)t->it.win_len * frame;

	for (size_t j = 0; j < len; j++)
		out[j] = start + j < t->it.data_len ? t->data[start + j] : 0;
}

/* Reads the stream at fd and expands each windows record with
 * rec_window(): every window must be the audio record the spec says,
 * pointing into the reader's payload when it fits, else into pad. */
static void check_windows_expand(int fd, const struct titem *want, size_t n,
				 const char *what)
{
	rec_reader *r = NULL;
	rec_item it, win;
	unsigned char *pad = malloc(1 << 20), *exp = malloc(1 << 20);
	size_t k = 0, windows = 0, padded = 0;
	int err, bad = 0, where = 0;

	lseek(fd, 0, SEEK_SET);
	err = rec_reader_open(&r, fd, &(rec_reader_opts){
				      .read_ahead = g_ra });
	while (err == REC_OK && (err = rec_read(r, &it)) == REC_OK) {
		const struct titem *t = &want[k < n ? k : n - 1];
		size_t frame = rec_dtype_size(it.dtype) * it.dim1;

		bad += k++ >= n;
		if (it.type != REC_T_WINDOWS)
			continue;
		for (uint32_t i = 0; i < it.n_windows; i++) {
			uint64_t start = (uint64_t)i * it.win_hop;
			int fits = start + it.win_len <= it.dim0;

			if (rec_window(&it, i, &win, pad) != REC_OK) {
				bad++;
				continue;
			}
			expected_window(t, i, exp);
			bad += win.type != REC_T_AUDIO ||
			       win.offset != it.offset + start ||
			       win.segment != it.segment + i ||
			       win.dim0 != it.win_len || win.dim1 != it.dim1 ||
			       win.data_len != (size_t)it.win_len * frame ||
			       win.win_len || win.win_hop || win.n_windows ||
			       win.win_flags || win.clip != it.clip ||
			       win.label != it.label || win.key != it.key ||
			       memcmp(win.data, exp, win.data_len) != 0;
			where += fits ? win.data != (const char *)it.data +
					start * frame
				      : win.data != (const void *)pad;
			windows++;
			padded += !fits;
		}
	}
	tap_is(err, REC_END, "%s: read to the end", what);
	tap_is(bad, 0, "%s: rec_window gives each of %zu windows as the "
	       "spec says (%zu padded)", what, windows, padded);
	tap_is(where, 0, "%s: in the payload, or in pad when padded", what);
	tap_ok(padded > 0 && windows > padded, "%s: padded and unpadded "
	       "windows seen", what);
	rec_reader_close(r);
	free(pad);
	free(exp);
}

/* The trailer of the stream s (len bytes), at last, counts the n items
 * of t: every record, every record but skipped ones as an item (pieces
 * and windows records too), the skipped ones. */
static void check_trailer_counts(const unsigned char *s, size_t len,
				 size_t last, const struct titem *t, size_t n,
				 const char *what)
{
	uint64_t items = 0, skipped = 0;

	for (size_t i = 0; i < n; i++) {
		skipped += t[i].it.type == REC_T_SKIPPED;
		items += t[i].it.type != REC_T_SKIPPED;
	}
	if (!tap_ok(last + REC_HDR_SIZE + 32 <= len &&
		    s[last + 4] == REC_T_TRAILER, "%s: a trailer last", what))
		return;
	tap_is_u64(le32(s + last + 24) | (uint64_t)le32(s + last + 28) << 32,
		   n, "%s: trailer n_records", what);
	tap_is_u64(le32(s + last + 32) | (uint64_t)le32(s + last + 36) << 32,
		   items, "%s: trailer n_items counts audio, windows and "
		   "features records, each piece", what);
	tap_is_u64(le32(s + last + 40) | (uint64_t)le32(s + last + 44) << 32,
		   skipped, "%s: trailer n_skipped", what);
}

/* In the bytes: windows records carry version 2, every other record
 * (header and trailer too) version 1; the trailer counts windows records
 * as items. */
static void check_windows_bytes(int fd, const struct titem *t, size_t n,
				const char *what)
{
	size_t len, nwin = 0, v2 = 0, other = 0, v1 = 0, p = 0, last = 0;
	unsigned char *s = fd_bytes(fd, &len);

	while (p + REC_HDR_SIZE <= len) {
		if (s[p + 4] == REC_T_WINDOWS) {
			nwin++;
			v2 += s[p + 6] == 2;
		} else {
			other++;
			v1 += s[p + 6] == 1;
		}
		last = p;
		p += REC_HDR_SIZE + (size_t)le32(s + p + 8) + le32(s + p + 12);
	}
	tap_ok(nwin > 0 && v2 == nwin, "%s: %zu windows records, %zu with "
	       "version byte 2", what, nwin, v2);
	tap_ok(v1 == other, "%s: the %zu others with version byte 1 (%zu)",
	       what, other, v1);
	check_trailer_counts(s, len, last, t, n, what);
	free(s);
}

void test_windows_round_trip(int level, size_t bufsize, int reserve)
{
	struct titem t[64];
	size_t n = make_windows_items(t);
	char what[80];
	int fd;

	snprintf(what, sizeof(what), "windows%s, zstd %d, buffer %zu",
		 reserve ? " reserved" : "", level, bufsize);
	fd = write_stream(t, n, level, bufsize, reserve, what);
	check_stream(fd, t, n, what);
	check_windows_bytes(fd, t, n, what);
	check_windows_expand(fd, t, n, what);
	free_items(t, n);
	close(fd);
}

/* For every dtype: an audio clip in 3 pieces, its length 0 until the
 * second; a features item in 2 pieces, the last empty; an audio item
 * and a features item cut short (a piece flagged more, then a skipped
 * record of its clip and segment); a whole record between. Then a clip
 * of 2 x 3 MB in 2 pieces: larger than the writer's buffer, and than a
 * chunk read ahead. */
static size_t make_piece_items(struct titem *t)
{
	size_t n = 0;
	uint64_t c = 0;

	for (int d = REC_S16; d <= REC_BF16; d++, c += 5) {
		size_t k = (size_t)(3 * d);

		titem_piece(&t[n++], REC_T_AUDIO, d, c, 0, 100, REC_ITEM_MORE,
			    0, k);
		titem_piece(&t[n++], REC_T_AUDIO, d, c, 100, 100,
			    REC_ITEM_MORE | REC_ITEM_CONT, 250, k);
		titem_piece(&t[n++], REC_T_AUDIO, d, c, 200, 50,
			    REC_ITEM_CONT, 250, k);
		titem_piece(&t[n++], REC_T_FEATURES, d, c + 1, 0, 3,
			    REC_ITEM_MORE, 0, k + 1);
		titem_piece(&t[n++], REC_T_FEATURES, d, c + 1, 480, 0,
			    REC_ITEM_CONT, 700, k + 1);
		titem_piece(&t[n++], REC_T_AUDIO, d, c + 2, 0, 64,
			    REC_ITEM_MORE, 0, k);
		titem_piece(&t[n++], REC_T_SKIPPED, 0, c + 2, 64, 0, 0, 64, k);
		titem_make(&t[n++], REC_T_AUDIO, d, c + 3, 0, 30, 1, k);
		titem_piece(&t[n++], REC_T_FEATURES, d, c + 4, 0, 2,
			    REC_ITEM_MORE, 900, k);
		titem_piece(&t[n++], REC_T_SKIPPED, 0, c + 4, 400, 0, 0, 400,
			    k);
	}
	titem_piece(&t[n++], REC_T_AUDIO, REC_S16, c, 0, 1500000,
		    REC_ITEM_MORE, 0, 9);
	titem_piece(&t[n++], REC_T_AUDIO, REC_S16, c, 1500000, 1500000,
		    REC_ITEM_CONT, 3000000, 9);
	return n;
}

/* In the bytes: exactly the records flagged more or cont carry version
 * 3 (the others 1), and their flags byte is the item's (with zstd); the
 * trailer counts each piece as a record and an item. */
static void check_piece_bytes(int fd, const struct titem *t, size_t n,
			      const char *what)
{
	size_t len, p = 0, k = 0, pieces = 0, wrong = 0, last = 0;
	unsigned char *s = fd_bytes(fd, &len);

	while (p + REC_HDR_SIZE <= len) {
		unsigned flags = s[p + 5] & ~REC_F_ZSTD;
		int data = s[p + 4] != REC_T_HEADER &&
			   s[p + 4] != REC_T_TRAILER;

		pieces += flags != 0;
		wrong += s[p + 6] != (flags ? 3 : 1) ||
			 (data && k < n && flags != t[k].it.flags);
		k += data;
		last = p;
		p += REC_HDR_SIZE + (size_t)le32(s + p + 8) + le32(s + p + 12);
	}
	tap_ok(pieces > 0 && wrong == 0, "%s: %zu pieces, each of version 3 "
	       "with its flags, the others of version 1 (%zu wrong)", what,
	       pieces, wrong);
	check_trailer_counts(s, len, last, t, n, what);
	free(s);
}

void test_pieces_round_trip(int level, size_t bufsize, int reserve)
{
	struct titem t[64];
	size_t n = make_piece_items(t);
	char what[80];
	int fd;

	snprintf(what, sizeof(what), "pieces%s, zstd %d, buffer %zu",
		 reserve ? " reserved" : "", level, bufsize);
	fd = write_stream(t, n, level, bufsize, reserve, what);
	g_plain = level == 0;
	check_stream(fd, t, n, what);
	g_plain = 0;
	check_piece_bytes(fd, t, n, what);
	free_items(t, n);
	close(fd);
}
