/*
 * test-rec-read - unit tests of lib/rec_read.c: detection of every
 * single-byte corruption and truncation, the reader's caps and errors,
 * its rules for windows records (version bytes, descriptions, metadata
 * length, order over a record's segments) and for items in pieces (flags,
 * versions, the fields a piece repeats, the order), streams dribbled
 * through a pipe in small pieces. With --read-ahead they run again through the
 * reading thread (lib/readahead.c), with round trips, payloads left
 * unaligned, and a reader closed while its thread waits on a stalled
 * pipe.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/crc32c.h"
#include "../../lib/rec.h"
#include "rec-fixture.h"
#include "rec-round-trip.h"
#include "tap.h"

/* Reads a stream from memory to its end; returns the final status. */
static int read_all(const unsigned char *buf, size_t len, char *detail,
		    size_t dsize, uint64_t max_data)
{
	int fd = temp_fd(), err;
	rec_reader *r = NULL;
	rec_item it;

	if (write(fd, buf, len) != (ssize_t)len)
		exit(99);
	lseek(fd, 0, SEEK_SET);
	err = rec_reader_open(&r, fd, &(rec_reader_opts){
				      .name = "mem", .max_data = max_data,
				      .read_ahead = g_ra });
	while (err == REC_OK)
		err = rec_read(r, &it);
	if (detail)
		snprintf(detail, dsize, "%s", rec_reader_detail(r));
	rec_reader_close(r);
	close(fd);
	return err;
}

static void test_corruption(int level)
{
	size_t len;
	unsigned char *s = small_stream(&len, level);
	char detail[1024];
	int undetected = 0, unexplained = 0, cut_ok = 0, cut_bad = 0;
	static const unsigned char masks[] = { 0x01, 0x80, 0xff };

	tap_is(read_all(s, len, NULL, 0, 0), REC_END, "zstd %d: the small "
	       "stream is valid", level);
	for (size_t i = 0; i < len; i++)
		for (size_t m = 0; m < sizeof(masks); m++) {
			int err;

			s[i] ^= masks[m];
			err = read_all(s, len, detail, sizeof(detail), 0);
			s[i] ^= masks[m];
			if (err >= 0) {
				undetected++;
				tap_diag("byte %zu ^ 0x%02x not detected", i,
					 masks[m]);
			} else if (strncmp(detail, "mem: record ", 12) != 0 ||
				   !strstr(detail, " at byte ")) {
				unexplained++;
				tap_diag("byte %zu: '%s'", i, detail);
			}
		}
	tap_is(undetected, 0, "zstd %d: every changed byte of %zu is "
	       "detected", level, len);
	tap_is(unexplained, 0, "zstd %d: and named with record and byte",
	       level);
	for (size_t cut = 0; cut < len; cut++) {
		int err = read_all(s, cut, NULL, 0, 0);

		cut_ok += err == REC_E_TRUNC;
		cut_bad += err >= 0;
	}
	tap_is(cut_bad, 0, "zstd %d: no truncation passes", level);
	tap_is(cut_ok, (int)len, "zstd %d: every truncation is REC_E_TRUNC",
	       level);
	free(s);
}

static void test_reader_errors(void)
{
	size_t len;
	unsigned char *s = small_stream(&len, 0), *two;
	char detail[1024];
	int err;

	err = read_all(s, len, detail, sizeof(detail), 100);
	tap_is(err, REC_E_TOOBIG, "a payload over max_data is refused");
	tap_ok(strstr(detail, "mem: record 1 at byte ") == detail ||
	       strstr(detail, "mem: record 3 at byte ") == detail,
	       "naming the record: %s", detail);

	s[len - 70] ^= 0x10; /* the last data record's payload */
	err = read_all(s, len, detail, sizeof(detail), 0);
	s[len - 70] ^= 0x10;
	tap_is(err, REC_E_CRC, "a flipped payload bit is a checksum error");
	tap_ok(strstr(detail, ": checksum mismatch (stored 0x") != NULL &&
	       strstr(detail, ", computed 0x") != NULL,
	       "saying both checksums: %s", detail);

	two = malloc(2 * len);
	memcpy(two, s, len);
	memcpy(two + len, s, len);
	err = read_all(two, 2 * len, detail, sizeof(detail), 0);
	tap_is(err, REC_E_TRAILING, "two streams run together are refused");
	tap_ok(strstr(detail, "another stream follows") != NULL, "saying "
	       "so: %s", detail);
	err = read_all(two, len + 1, detail, sizeof(detail), 0);
	tap_is(err, REC_E_TRAILING, "one byte after the trailer is refused");
	free(two);

	s[6] = REC_FORMAT_VERSION + 1; /* the header record's version */
	err = read_all(s, len, detail, sizeof(detail), 0);
	tap_is(err, REC_E_VERSION, "a newer version is refused");
	tap_ok(strstr(detail, ": format version 7 is newer than this "
		      "reader's version 6") != NULL,
	       "naming both versions: %s", detail);
	free(s);

	err = read_all((const unsigned char *)"", 0, detail, sizeof(detail),
		       0);
	tap_is(err, REC_E_TRUNC, "empty input is truncated");
	err = read_all((const unsigned char *)"RIFF....WAVEfmt garbage here",
		       28, detail, sizeof(detail), 0);
	tap_is(err, REC_E_MAGIC, "garbage is not a stream");
}

/* Byte offset of record k of a well-framed stream in memory. */
static size_t rec_at(const unsigned char *s, size_t len, size_t k)
{
	size_t p = 0;

	while (k-- > 0 && p + REC_HDR_SIZE <= len)
		p += REC_HDR_SIZE + (size_t)le32(s + p + 8) + le32(s + p + 12);
	return p;
}

/* Recomputes every record's CRC and the trailer's stream checksum after
 * fields were changed on purpose, so that only the change is wrong. */
static void restamp(unsigned char *s, size_t len)
{
	uint32_t stream = 0, crc;
	unsigned char le[4];

	for (size_t p = 0; p + REC_HDR_SIZE <= len;) {
		size_t n = REC_HDR_SIZE + (size_t)le32(s + p + 8) +
			   le32(s + p + 12);

		if (s[p + 4] == REC_T_TRAILER)
			put_le32(s + p + REC_HDR_SIZE + 24, stream);
		memset(s + p + 20, 0, 4);
		crc = crc32c(0, s + p, n);
		put_le32(s + p + 20, crc);
		if (s[p + 4] != REC_T_TRAILER) {
			put_le32(le, crc);
			stream = crc32c(stream, le, 4);
		}
		p += n;
	}
}

/* The stream of the test header, t[0], t[1] and a trailer, in memory (*len
 * bytes); frees the items. */
static unsigned char *two_record_stream(struct titem t[2], size_t *len)
{
	rec_header *h = test_header();
	rec_writer *w = NULL;
	int fd = temp_fd();
	unsigned char *s;

	rec_writer_open(&w, fd, h, NULL);
	if (rec_write(w, &t[0].it) || rec_write(w, &t[1].it) ||
	    rec_writer_finish(w) != REC_OK)
		exit(99);
	rec_writer_close(w);
	rec_header_free(h);
	free_items(t, 2);
	s = fd_bytes(fd, len);
	close(fd);
	return s;
}

/* A stream: header, a windows record (clip 0, segments 0..2, 80 s16
 * frames, 40 every 20, key of 4 bytes), an audio record (clip 0,
 * segment 4, key of 10 bytes), trailer. */
static unsigned char *windows_stream(size_t *len)
{
	struct titem t[2];

	titem_windows(&t[0], REC_S16, 0, 0, 80, 1, 40, 20, 3, 0, 4);
	titem_make(&t[1], REC_T_AUDIO, REC_S16, 0, 0, 10, 1, 10);
	t[1].it.segment = 4;
	return two_record_stream(t, len);
}

/* One change to a copy of s (then restamped: the CRCs are right), read
 * to its end: the code and the reason. */
struct patch {
	int rec;          /* record number */
	size_t at;        /* byte offset in the record */
	int width;        /* 1 or 4 bytes */
	uint32_t value;
	int err;          /* what reading to the end gives */
	const char *why;  /* the reason, NULL for REC_END */
	int fault;        /* the record refused minus rec */
};

static void check_patch(const unsigned char *s, size_t len,
			const struct patch *pt)
{
	unsigned char *c = malloc(len);
	char detail[1024], where[64];
	size_t p = rec_at(s, len, (size_t)pt->rec) + pt->at;
	int err;

	memcpy(c, s, len);
	if (pt->width == 1)
		c[p] = (unsigned char)pt->value;
	else
		put_le32(c + p, pt->value);
	restamp(c, len);
	err = read_all(c, len, detail, sizeof(detail), 0);
	snprintf(where, sizeof(where), "mem: record %d at byte %zu: ",
		 pt->rec + pt->fault, rec_at(s, len,
					     (size_t)(pt->rec + pt->fault)));
	tap_is(err, pt->err, "reader%s: %s", g_ra ? " (read ahead)" : "",
	       pt->why ? pt->why : "accepted");
	if (pt->why)
		tap_ok(strncmp(detail, where, strlen(where)) == 0 &&
		       strstr(detail, pt->why) != NULL, "at the record, "
		       "saying why: %s", detail);
	free(c);
}

/* The reader's side of windows records: version rules, each description
 * rule, metadata length, the order rule over a windows record's range. */
static void test_windows_reader(void)
{
	/* in record 1: 24 header bytes, 48 fixed, a 4-byte key, then
	 * win_len, win_hop, n_windows, win_flags */
	enum { W = 24 + 48 + 4 };
	static const struct patch patches[] = {
		{ 1, 6, 1, 1, REC_E_FORMAT, "a windows record marked format "
		  "version 1 (windows records are version 2)", 0 },
		{ 1, 6, 1, 7, REC_E_VERSION, "format version 7 is newer than "
		  "this reader's version 6", 0 },
		{ 1, 6, 1, 6, REC_END, NULL, 0 },  /* windows of version 6 */
		{ 1, 6, 1, 5, REC_END, NULL, 0 },  /* windows of version 5 */
		{ 1, 6, 1, 4, REC_END, NULL, 0 },  /* windows of version 4 */
		{ 1, 6, 1, 3, REC_END, NULL, 0 },  /* windows of version 3 */
		{ 0, 6, 1, 2, REC_END, NULL, 0 },  /* header of version 2 */
		{ 2, 6, 1, 2, REC_END, NULL, 0 },  /* audio of version 2 */
		{ 3, 6, 1, 2, REC_END, NULL, 0 },  /* trailer of version 2 */
		{ 1, W, 4, 0, REC_E_FORMAT, "window length 0, hop 20 and 3 "
		  "windows (none may be 0)", 0 },
		{ 1, W + 4, 4, 0, REC_E_FORMAT, "window length 40, hop 0", 0 },
		{ 1, W + 8, 4, 0, REC_E_FORMAT, "and 0 windows", 0 },
		{ 1, W + 12, 4, 4, REC_E_FORMAT, "unknown windows flags 0x4",
		  0 },
		{ 1, W + 8, 4, 4, REC_E_FORMAT, "4 windows of 40 every 20 do "
		  "not fit 80 samples (and the pad flag is clear)", 0 },
		{ 1, W + 12, 4, REC_WIN_PAD, REC_END, NULL, 0 },
		{ 1, 24 + 24, 4, UINT32_MAX - 1, REC_E_FORMAT, "3 windows from "
		  "segment 4294967294 run past segment index 2^32 - 1", 0 },
		{ 1, 24 + 24, 4, UINT32_MAX - 2, REC_E_ORDER, "clip 0 "
		  "segment 4 after clip 0 segment 4294967295", 1 },
		{ 1, 24 + 38, 1, 20, REC_E_FORMAT, "metadata length 68 is not "
		  "48 + key length 20 + 16", 0 },
		{ 2, 24 + 24, 4, 2, REC_E_ORDER, "clip 0 segment 2 after "
		  "clip 0 segment 2 (records must be in clip and segment "
		  "order)", 0 },
		{ 2, 24 + 24, 4, 3, REC_END, NULL, 0 },
		{ 2, 4, 1, REC_T_WINDOWS, REC_E_FORMAT, "a windows record "
		  "marked format version 1", 0 },
	};
	static const struct patch padded[] = {
		{ 1, W + 8, 4, 4, REC_END, NULL, 0 },
		{ 1, W + 8, 4, 5, REC_E_FORMAT, "5 windows of 40 every 20 do "
		  "not fit 80 samples", 0 },
	};
	size_t len;
	unsigned char *s = windows_stream(&len), *sp = malloc(len);

	tap_is(read_all(s, len, NULL, 0, 0), REC_END, "the windows stream "
	       "reads%s", g_ra ? " (read ahead)" : "");
	for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++)
		check_patch(s, len, &patches[i]);
	/* With the pad flag: a 4th window running past the samples is
	 * padded, a 5th would start past them. */
	memcpy(sp, s, len);
	put_le32(sp + rec_at(s, len, 1) + W + 12, REC_WIN_PAD);
	restamp(sp, len);
	check_patch(sp, len, &padded[0]);
	check_patch(sp, len, &padded[1]);
	free(sp);
	/* an audio record turned into a windows record of version 2: its
	 * metadata lacks the window fields */
	{
		unsigned char *c = malloc(len);
		char detail[1024];
		size_t p = rec_at(s, len, 2);

		memcpy(c, s, len);
		c[p + 4] = REC_T_WINDOWS;
		c[p + 6] = 2;
		restamp(c, len);
		tap_is(read_all(c, len, detail, sizeof(detail), 0),
		       REC_E_FORMAT, "audio metadata under type windows");
		tap_ok(strstr(detail, "metadata length 58 is not 48 + key "
			      "length 10 + 16") != NULL, "saying so: %s",
		       detail);
		free(c);
	}
	free(s);
}

/* Every changed byte (bits 0, 1 and 7 flipped) and every cut of the
 * stream s is detected; s is freed. */
static void test_every_byte(unsigned char *s, size_t len, const char *what)
{
	static const unsigned char masks[] = { 0x01, 0x02, 0x80 };
	int undetected = 0, cut_bad = 0;

	for (size_t i = 0; i < len; i++)
		for (size_t m = 0; m < sizeof(masks); m++) {
			s[i] ^= masks[m];
			undetected += read_all(s, len, NULL, 0, 0) >= 0;
			s[i] ^= masks[m];
		}
	for (size_t cut = 0; cut < len; cut++)
		cut_bad += read_all(s, cut, NULL, 0, 0) != REC_E_TRUNC;
	tap_is(undetected, 0, "%s: every changed byte of %zu is detected%s",
	       what, len, g_ra ? " (read ahead)" : "");
	tap_is(cut_bad, 0, "%s: every cut is REC_E_TRUNC", what);
	free(s);
}

/* A stream of items in pieces: header; clip 0 in 3 audio pieces of 10
 * s16 samples (key of 4 bytes, label -1, split 0, 16000 Hz; clip_samples
 * 0, then 30); clip 1 in 2 features pieces of 8 f32 mels by 2 and 1
 * frames (offsets 0 and 320), cut short by a skipped record (offset and
 * clip_samples 480); trailer (record 7). */
static unsigned char *pieces_stream(size_t *len)
{
	struct titem t[6];
	rec_header *h = test_header();
	rec_writer *w = NULL;
	int fd = temp_fd(), err;
	unsigned char *s;

	titem_piece(&t[0], REC_T_AUDIO, REC_S16, 0, 0, 10, REC_ITEM_MORE, 0,
		    4);
	titem_piece(&t[1], REC_T_AUDIO, REC_S16, 0, 10, 10,
		    REC_ITEM_MORE | REC_ITEM_CONT, 30, 4);
	titem_piece(&t[2], REC_T_AUDIO, REC_S16, 0, 20, 10, REC_ITEM_CONT,
		    30, 4);
	titem_piece(&t[3], REC_T_FEATURES, REC_F32, 1, 0, 2, REC_ITEM_MORE,
		    0, 4);
	titem_piece(&t[4], REC_T_FEATURES, REC_F32, 1, 320, 1,
		    REC_ITEM_MORE | REC_ITEM_CONT, 0, 4);
	titem_piece(&t[5], REC_T_SKIPPED, 0, 1, 480, 0, 0, 480, 4);
	err = rec_writer_open(&w, fd, h, NULL);
	for (int i = 0; i < 6 && !err; i++)
		err = rec_write(w, &t[i].it);
	if (err || rec_writer_finish(w) != REC_OK)
		exit(99);
	rec_writer_close(w);
	rec_header_free(h);
	free_items(t, 6);
	s = fd_bytes(fd, len);
	close(fd);
	return s;
}

/* A copy of s with one field changed and the CRCs made right again. */
static unsigned char *patched(const unsigned char *s, size_t len, int rec,
			      size_t at, uint32_t value)
{
	unsigned char *c = malloc(len);

	memcpy(c, s, len);
	put_le32(c + rec_at(s, len, (size_t)rec) + at, value);
	restamp(c, len);
	return c;
}

/* The reader's side of pieces: each flag rule, each field a piece must
 * repeat, offsets, clip_samples, the cut-short skipped record, a piece
 * flagged more before the trailer. */
static void test_pieces_reader(void)
{
	enum { M = 24 }; /* where the metadata starts in a record */
	static const struct patch patches[] = {
		{ 2, 5, 1, 0, REC_E_ORDER, "audio record of clip 0 segment 0 "
		  "after a piece of clip 0 segment 0 flagged more (a piece "
		  "flagged cont or a skipped record of that clip and segment "
		  "must follow)", 0 },
		{ 1, 5, 1, REC_F_MORE | REC_F_CONT, REC_E_ORDER, "a piece "
		  "flagged cont (clip 0 segment 0) without a piece flagged "
		  "more before it", 0 },
		{ 1, 5, 1, REC_F_CONT, REC_E_FORMAT, "the last piece of an "
		  "item with clip_samples 0", 0 }, /* (before the order) */
		{ 3, 5, 1, REC_F_MORE | REC_F_CONT, REC_E_ORDER, "features "
		  "record of clip 1 segment 0 after a piece of clip 0 segment "
		  "0 flagged more", 1 },
		{ 2, M + 28, 4, 5, REC_E_ORDER, "a piece flagged cont whose "
		  "label (5) differs from the piece before (-1)", 0 },
		{ 2, M + 32, 4, 8000, REC_E_ORDER, "whose sample_rate (8000) "
		  "differs from the piece before (16000)", 0 },
		{ 2, M + 36, 1, 3, REC_E_ORDER, "whose split (3) differs from "
		  "the piece before (0)", 0 },
		{ 2, M + 37, 1, REC_F16, REC_E_ORDER, "whose dtype (f16) "
		  "differs from the piece before (s16)", 0 },
		{ 2, M + 48, 1, 'z', REC_E_ORDER, "a piece flagged cont whose "
		  "key differs from the piece before", 0 },
		{ 5, 4, 1, REC_T_AUDIO, REC_E_ORDER, "whose type (audio) "
		  "differs from the piece before (features)", 0 },
		{ 2, M + 8, 4, 11, REC_E_ORDER, "a piece flagged cont at offset "
		  "11, not where the piece before ends (0 + 10)", 0 },
		{ 2, M + 8, 4, 9, REC_E_ORDER, "at offset 9, not where the "
		  "piece before ends (0 + 10)", 0 },
		{ 5, M + 8, 4, 0, REC_E_ORDER, "a piece flagged cont at offset "
		  "0, not after the piece before (0)", 0 },
		{ 5, M + 8, 4, 1, REC_END, NULL, 0 }, /* (the hop is unknown) */
		{ 2, M + 16, 4, 0, REC_END, NULL, 0 }, /* length not known */
		{ 1, M + 16, 4, 30, REC_END, NULL, 0 }, /* known at once */
		{ 1, M + 16, 4, 29, REC_E_ORDER, "whose clip_samples (30) "
		  "differs from the piece before (29)", 1 },
		{ 3, M + 16, 4, 31, REC_E_ORDER, "whose clip_samples (31) "
		  "differs from the piece before (30)", 0 },
		{ 3, M + 16, 4, 0, REC_E_FORMAT, "the last piece of an item "
		  "with clip_samples 0 (it gives the clip's length)", 0 },
		{ 4, M + 24, 4, 1, REC_E_ORDER, "features piece flagged cont of "
		  "clip 1 segment 0 after a piece of clip 1 segment 1 flagged "
		  "more", 1 },
		{ 6, M + 24, 4, 1, REC_E_ORDER, "skipped record of clip 1 "
		  "segment 1 after a piece of clip 1 segment 0 flagged more",
		  0 },
		{ 6, M, 4, 2, REC_E_ORDER, "skipped record of clip 2 segment 0 "
		  "after a piece of clip 1 segment 0 flagged more", 0 },
		{ 1, 6, 1, 2, REC_E_FORMAT, "the more flag in a record marked "
		  "format version 2 (pieces are version 3)", 0 },
		{ 2, 6, 1, 1, REC_E_FORMAT, "the more and cont flags in a "
		  "record marked format version 1", 0 },
		{ 3, 6, 1, 2, REC_E_FORMAT, "the cont flag in a record marked "
		  "format version 2", 0 },
		{ 0, 5, 1, REC_F_ZSTD, REC_E_FORMAT, "a header record with "
		  "flags 0x01 (header and trailer records have flags 0)", 0 },
		{ 7, 5, 1, REC_F_CONT, REC_E_FORMAT, "a trailer record with "
		  "flags 0x04 (header and trailer records have flags 0)", 0 },
		{ 6, 5, 1, REC_F_MORE, REC_E_FORMAT, "the more flag on a "
		  "skipped record (only audio and features records come in "
		  "pieces)", 0 },
		{ 6, 5, 1, 0x10, REC_E_FORMAT, "unknown flags 0x10", 0 },
		{ 0, 6, 1, 3, REC_END, NULL, 0 }, /* a header of version 3 */
	};
	/* dims changed in pairs that keep the payload's size */
	static const struct patch dims[] = {
		{ 2, M + 44, 4, 2, REC_E_ORDER, "a piece flagged cont whose "
		  "dim1 (2) differs from the piece before (1)", 0 },
		{ 5, M + 44, 4, 2, REC_E_ORDER, "a piece flagged cont whose "
		  "dim0 (4) differs from the piece before (8)", 0 },
	};
	size_t len, p6, p7, n7;
	unsigned char *s = pieces_stream(&len), *c;
	char detail[1024];

	tap_is(read_all(s, len, NULL, 0, 0), REC_END, "the pieces stream "
	       "reads%s", g_ra ? " (read ahead)" : "");
	for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++)
		check_patch(s, len, &patches[i]);
	c = patched(s, len, 2, M + 40, 5);
	check_patch(c, len, &dims[0]);
	free(c);
	c = patched(s, len, 5, M + 40, 4);
	check_patch(c, len, &dims[1]);
	free(c);
	/* the skipped record left out, the trailer's counts made to
	 * match: the stream ends after a piece flagged more */
	p6 = rec_at(s, len, 6);
	p7 = rec_at(s, len, 7);
	n7 = len - p7;
	c = malloc(len);
	memcpy(c, s, p6);
	memcpy(c + p6, s + p7, n7);
	put_le32(c + p6 + 24, 5);      /* n_records */
	put_le32(c + p6 + 32, 5);      /* n_items */
	put_le32(c + p6 + 40, 0);      /* n_skipped */
	restamp(c, p6 + n7);
	tap_is(read_all(c, p6 + n7, detail, sizeof(detail), 0), REC_E_ORDER,
	       "a trailer after a piece flagged more is refused");
	tap_ok(strstr(detail, ": record 6 at byte ") != NULL &&
	       strstr(detail, ": the stream ends after a piece of clip 1 "
		      "segment 0 flagged more (its item goes on)") != NULL,
	       "at the trailer, saying why: %s", detail);
	free(c);
	free(s);
}

/* A stream: header, a features-windows record (clip 0, segments 0..2,
 * 3 windows of 4 mels x 2 frames of f32, windows of 40 every 20, key of
 * 4 bytes), a features record (clip 0, segment 4, 4 x 2, key of 10
 * bytes), trailer. */
static unsigned char *fwindows_stream(size_t *len)
{
	struct titem t[2];

	titem_fwindows(&t[0], REC_F32, 0, 0, 4, 2, 40, 20, 3, 0, 4);
	titem_make(&t[1], REC_T_FEATURES, REC_F32, 0, 0, 4, 2, 10);
	t[1].it.segment = 4;
	return two_record_stream(t, len);
}

/* The reader's side of features-windows records: what it hands out
 * (the fields, and each window as rec_window() gives it), the version
 * rule, each field's rule, flags, metadata length, the order rule. */
static void test_fwindows_reader(void)
{
	enum { F = 24 + 48 + 4 }; /* the window fields of record 1 */
	static const struct patch patches[] = {
		{ 1, 6, 1, 5, REC_E_FORMAT, "a features-windows record "
		  "marked format version 5 (features-windows records are "
		  "version 6)", 0 },
		{ 1, 6, 1, 7, REC_E_VERSION, "format version 7 is newer than "
		  "this reader's version 6", 0 },
		{ 1, F, 4, 0, REC_E_FORMAT, "features-windows record with "
		  "window length 0, hop 20 and 3 windows (none may be 0)", 0 },
		{ 1, F + 4, 4, 0, REC_E_FORMAT, "window length 40, hop 0", 0 },
		{ 1, F + 8, 4, 4, REC_E_FORMAT, "payload of 96 bytes does not "
		  "match 4 windows of 4x2 f32", 0 },
		{ 1, F + 8, 4, 0, REC_E_FORMAT, "does not match 0 windows", 0 },
		{ 1, F + 12, 4, 2, REC_E_FORMAT, "unknown windows flags 0x2",
		  0 },
		{ 1, F + 12, 4, REC_WIN_PAD, REC_END, NULL, 0 },
		{ 1, 24 + 24, 4, UINT32_MAX - 1, REC_E_FORMAT, "3 windows from "
		  "segment 4294967294 run past segment index 2^32 - 1", 0 },
		{ 1, 5, 1, REC_F_MORE, REC_E_FORMAT, "the more flag on a "
		  "features-windows record (only audio and features records "
		  "come in pieces)", 0 },
		{ 1, 5, 1, REC_F_SHARED, REC_E_FORMAT, "the shared flag on a "
		  "record type whose payload is never shared", 0 },
		{ 1, 24 + 38, 1, 20, REC_E_FORMAT, "metadata length 68 is not "
		  "48 + key length 20 + 16", 0 },
		{ 2, 24 + 24, 4, 2, REC_E_ORDER, "clip 0 segment 2 after "
		  "clip 0 segment 2 (records must be in clip and segment "
		  "order)", 0 },
		{ 2, 24 + 24, 4, 3, REC_END, NULL, 0 },
	};
	struct titem t;
	size_t len;
	unsigned char *s = fwindows_stream(&len);
	int fd = temp_fd(), err, same = 1;
	rec_reader *r = NULL;
	rec_item it, win;

	titem_fwindows(&t, REC_F32, 0, 0, 4, 2, 40, 20, 3, 0, 4);
	if (write(fd, s, len) != (ssize_t)len)
		exit(99);
	lseek(fd, 0, SEEK_SET);
	rec_reader_open(&r, fd, &(rec_reader_opts){ .name = "mem",
						    .read_ahead = g_ra });
	err = rec_read(r, &it);
	tap_ok(err == REC_OK && it.type == REC_T_FWINDOWS &&
	       it.dim0 == 4 && it.dim1 == 2 && it.n_windows == 3 &&
	       it.win_len == 40 && it.win_hop == 20 && it.segment == 0 &&
	       it.data_len == 96 && rec_item_last_segment(&it) == 2 &&
	       memcmp(it.data, t.data, 96) == 0, "a features-windows record "
	       "reads back whole%s", g_ra ? " (read ahead)" : "");
	for (uint32_t i = 0; err == REC_OK && i < 3; i++)
		same &= rec_window(&it, i, &win, NULL) == REC_OK &&
			win.type == REC_T_FEATURES && win.dim0 == 4 &&
			win.dim1 == 2 && win.segment == i &&
			win.offset == 7 + 20 * i && win.data_len == 32 &&
			win.n_windows == 0 && win.win_len == 0 &&
			win.data == (const char *)it.data + 32 * i;
	tap_ok(err == REC_OK && same && rec_window(&it, 3, &win, NULL) ==
	       REC_E_INVAL, "its windows are the features records they "
	       "stand for, matrix by matrix");
	rec_reader_close(r);
	close(fd);
	free_items(&t, 1);
	for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++)
		check_patch(s, len, &patches[i]);
	free(s);
}

/* The writer refuses a features-windows record that breaks a rule, and
 * marks the ones it writes version 6. */
static void test_fwindows_writer(void)
{
	struct titem t;
	rec_header *h = test_header();
	rec_writer *w = NULL;
	int fd = temp_fd(), err;
	size_t len;
	unsigned char *s;

	titem_fwindows(&t, REC_F16, 1, 5, 3, 1, 8, 8, 4, 0, 2);
	rec_writer_open(&w, fd, h, NULL);
	t.it.n_windows = 5;
	err = rec_write(w, &t.it);
	tap_ok(err == REC_E_INVAL && strstr(rec_writer_detail(w), "does not "
	       "match 5 windows of 3x1 f16"), "the writer refuses a payload "
	       "of the wrong size: %s", rec_writer_detail(w));
	rec_writer_close(w);
	close(fd);
	fd = temp_fd();
	w = NULL;
	t.it.n_windows = 4;
	rec_writer_open(&w, fd, h, NULL);
	err = rec_write(w, &t.it);
	if (err == REC_OK)
		err = rec_writer_finish(w);
	rec_writer_close(w);
	s = fd_bytes(fd, &len);
	tap_ok(err == REC_OK && s[rec_at(s, len, 1) + 4] == REC_T_FWINDOWS &&
	       s[rec_at(s, len, 1) + 6] == 6 && s[rec_at(s, len, 0) + 6] == 1,
	       "it writes a valid one marked version 6 (the header stays 1)");
	free(s);
	close(fd);
	rec_header_free(h);
	free_items(&t, 1);
}

/* The reader's tests of pieces (run once plainly, once reading ahead). */
static void test_pieces_reads(void)
{
	size_t len;
	unsigned char *s;

	test_pieces_round_trip(0, 0, 0);
	test_pieces_round_trip(3, 0, 0);
	test_pieces_reader();
	s = pieces_stream(&len);
	test_every_byte(s, len, "pieces stream");
}

/* The reader's windows tests (run once plainly, once reading ahead). */
static void test_windows_reads(void)
{
	size_t len;
	unsigned char *s;

	test_windows_round_trip(0, 0, 0);
	test_windows_round_trip(3, 0, 0);
	test_windows_reader();
	s = windows_stream(&len);
	test_every_byte(s, len, "windows stream");
	test_fwindows_reader();
	s = fwindows_stream(&len);
	test_every_byte(s, len, "features-windows stream");
}

/* A child dribbles a stream into a pipe in small random pieces; the
 * reader must put records together across any boundaries. */
static void test_slow_pipe(void)
{
	int fd = temp_fd(), p[2], status;
	struct titem t[300];
	size_t n = make_items(t, 290, 2);
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_reader *r = NULL;
	rec_item it;
	size_t i = 0;
	int bad = 0, err;
	pid_t pid;

	rec_writer_open(&w, fd, h, &(rec_writer_opts){ .zstd_level = 1 });
	for (size_t k = 0; k < n; k++)
		rec_write(w, &t[k].it);
	rec_writer_finish(w);
	rec_writer_close(w);
	if (pipe(p) < 0)
		exit(99);
	pid = fork();
	if (pid == 0) {
		static unsigned char buf[40000];
		ssize_t got;

		close(p[0]);
		lseek(fd, 0, SEEK_SET);
		while ((got = read(fd, buf, 1 + rng() % sizeof(buf))) > 0)
			if (write(p[1], buf, (size_t)got) != got)
				_exit(1);
		_exit(0);
	}
	close(p[1]);
	err = rec_reader_open(&r, p[0], &(rec_reader_opts){
				      .read_ahead = g_ra });
	while (err == REC_OK && (err = rec_read(r, &it)) == REC_OK)
		bad += i >= n || !items_equal(&it, &t[i++].it);
	tap_is(err, REC_END, "a stream dribbled through a pipe reads to its "
	       "end%s", g_ra ? " (read ahead)" : "");
	if (err != REC_END)
		tap_diag("%s", rec_reader_detail(r));
	tap_is(bad, 0, "with every record equal");
	tap_is_u64(i, n, "and all %zu of them", n);
	waitpid(pid, &status, 0);
	rec_reader_close(r);
	rec_header_free(h);
	free_items(t, n);
	close(p[0]);
	close(fd);
}

/* A reader that reads ahead is closed while its thread waits on a pipe
 * whose writer neither writes nor closes: the close must not hang. */
static void test_close_while_waiting(void)
{
	int fd = temp_fd(), p[2];
	struct titem t[300];
	size_t n = make_items(t, 290, 0);
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_reader *r = NULL;
	rec_item it;
	static unsigned char buf[4096];
	ssize_t got;
	int err;

	rec_writer_open(&w, fd, h, NULL);
	for (size_t k = 0; k < n; k++)
		rec_write(w, &t[k].it);
	rec_writer_finish(w);
	rec_writer_close(w);
	if (pipe(p) < 0)
		exit(99);
	/* the first 4 KiB of the stream, then silence */
	lseek(fd, 0, SEEK_SET);
	got = read(fd, buf, sizeof(buf));
	if (got <= 0 || write(p[1], buf, (size_t)got) != got)
		exit(99);
	alarm(20); /* a hang fails the test by SIGALRM */
	err = rec_reader_open(&r, p[0], &(rec_reader_opts){ .read_ahead = 1 });
	if (err == REC_OK)
		err = rec_read(r, &it);
	tap_is(err, REC_OK, "read ahead: the first record of a stalled pipe");
	rec_reader_close(r);
	alarm(0);
	tap_ok(1, "read ahead: closing while the thread waits returns");
	rec_header_free(h);
	free_items(t, n);
	close(p[0]);
	close(p[1]);
	close(fd);
}

/* The reader's tests once more with reading ahead. */
static void test_read_ahead(void)
{
	g_ra = 1;
	test_round_trip(0, 0);
	test_round_trip(3, 0);
	test_round_trip(1, 70000);
	g_ua = 1;
	test_round_trip(0, 0);
	g_ua = 0;
	test_corruption(0);
	test_corruption(3);
	test_reader_errors();
	test_windows_reads();
	test_pieces_reads();
	test_slow_pipe();
	test_close_while_waiting();
	g_ra = 0;
}

/* The reader's tests; with --read-ahead, the pass through its thread. */
int main(int argc, char **argv)
{
	int pass = pass_option(argc, argv, "--read-ahead");

	if (pass < 0)
		return 2;
	if (pass) {
		test_read_ahead();
		return tap_done();
	}
	test_corruption(0);
	test_corruption(3);
	test_reader_errors();
	test_windows_reads();
	test_fwindows_writer();
	test_pieces_reads();
	test_slow_pipe();
	return tap_done();
}
