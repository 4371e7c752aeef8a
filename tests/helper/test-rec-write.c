/*
 * test-rec-write - unit tests of lib/rec_write.c: round trips of every
 * record type and element type with and without zstd, payloads larger
 * than the writer's buffer, reserve/commit, the writer's refusals, the
 * version bytes of a stream without windows records, windows records
 * written with rec_write and reserve/commit, items in pieces, EPIPE. With
 * --write-behind the round trips and EPIPE run again through the writing
 * thread (lib/writebehind.c).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "rec-fixture.h"
#include "rec-round-trip.h"
#include "tap.h"

/* Payloads computed in place, with keys longer and shorter than the one
 * before (the writer guesses the key length), mixed with rec_write. */
static void test_reserve(int level, size_t bufsize)
{
	struct titem t[64];
	size_t n = 0;
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_writer_opts o = { .zstd_level = level, .buffer_size = bufsize,
			      .write_behind = g_wb };
	static const size_t keys[] = { 3, 3, 0, 70, 70, 1, 64, 65, 63, 2 };
	char what[80];
	int fd = temp_fd(), err, misaligned = 0;

	snprintf(what, sizeof(what), "reserve, zstd %d, buffer %zu", level,
		 bufsize);
	err = rec_writer_open(&w, fd, h, &o);
	for (size_t i = 0; i < 40 && !err; i++) {
		size_t k = keys[i % 10];
		uint32_t dim0 = i == 17 ? 800000 : (uint32_t)(50 + i);
		void *p;

		titem_make(&t[n], i % 5 == 4 ? REC_T_SKIPPED : REC_T_AUDIO,
			   REC_S16, i, 0, dim0, 1, k);
		if (i % 7 == 6) {
			err = rec_write(w, &t[n].it);
		} else {
			err = rec_write_reserve(w, t[n].it.data_len, &p);
			misaligned += (uintptr_t)p % 16 != 0;
			if (!err) {
				memcpy(p, t[n].data, t[n].it.data_len);
				err = rec_write_commit(w, &t[n].it);
			}
		}
		n++;
	}
	if (!err)
		err = rec_writer_finish(w);
	tap_is(err, 0, "%s: write", what);
	if (err)
		tap_diag("%s", rec_writer_detail(w));
	tap_is(misaligned, 0, "%s: reserved payloads aligned to 16 bytes",
	       what);
	check_stream(fd, t, n, what);
	rec_writer_close(w);
	rec_header_free(h);
	free_items(t, n);
	close(fd);
}

static void test_empty_stream(void)
{
	rec_header *h = rec_header_new();
	rec_writer *w = NULL;
	rec_reader *r = NULL;
	rec_item it;
	int fd = temp_fd();

	tap_is(rec_writer_open(&w, fd, h, NULL), 0, "open with no pairs");
	tap_is(rec_writer_finish(w), 0, "finish with no records");
	tap_is(rec_writer_finish(w), REC_E_INVAL, "a second finish is "
	       "refused");
	tap_is(rec_write(w, &(rec_item){ .type = REC_T_SKIPPED }),
	       REC_E_INVAL, "a record after the trailer is refused");
	lseek(fd, 0, SEEK_SET);
	tap_is(rec_reader_open(&r, fd, NULL), 0, "read it back");
	tap_is(rec_header_len(rec_reader_header(r)), 0, "no pairs");
	tap_is(rec_read(r, &it), REC_END, "no records");
	tap_is_u64(rec_reader_offset(r), 24 + 24 + 32, "header and trailer "
		   "only");
	rec_reader_close(r);
	rec_writer_close(w);
	rec_header_free(h);
	close(fd);
}

static void test_writer_refusals(void)
{
	struct titem a, b;
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_item bad;
	int fd = temp_fd();

	rec_writer_open(&w, fd, h, NULL);
	titem_make(&a, REC_T_AUDIO, REC_S16, 5, 0, 10, 1, 4);
	titem_make(&b, REC_T_AUDIO, REC_S16, 5, 100, 10, 1, 4);
	bad = a.it;
	bad.data_len = 19;
	tap_is(rec_write(w, &bad), REC_E_INVAL, "payload length not "
	       "dim0*dim1*size refused");
	tap_ok(strstr(rec_writer_detail(w), "does not match") != NULL,
	       "and explained: %s", rec_writer_detail(w));
	bad = a.it;
	bad.dtype = 7;
	tap_is(rec_write(w, &bad), REC_E_INVAL, "unknown dtype refused");
	bad = a.it;
	bad.split = 4;
	tap_is(rec_write(w, &bad), REC_E_INVAL, "split 4 refused");
	bad = a.it;
	bad.type = REC_T_HEADER;
	tap_is(rec_write(w, &bad), REC_E_INVAL, "type header refused");
	bad = a.it;
	bad.key_len = 70000;
	tap_is(rec_write(w, &bad), REC_E_INVAL, "key over 65535 bytes "
	       "refused");
	bad = a.it;
	bad.key = "a\0b";
	bad.key_len = 3;
	tap_is(rec_write(w, &bad), REC_E_INVAL, "key with a NUL refused");
	bad = a.it;
	bad.type = REC_T_SKIPPED;
	tap_is(rec_write(w, &bad), REC_E_INVAL, "skipped record with a dtype "
	       "refused");
	bad = a.it;
	bad.dim0 = 0x80000000u;
	bad.dim1 = 0x80000000u;
	tap_is(rec_write(w, &bad), REC_E_INVAL, "overflowing dims refused");
	tap_is(rec_write(w, &b.it), 0, "a good record after refusals");
	tap_is(rec_write(w, &a.it), REC_E_INVAL, "offset going back refused");
	a.it.clip = 4;
	tap_is(rec_write(w, &a.it), REC_E_INVAL, "clip going back refused");
	tap_is(rec_write(w, &b.it), REC_E_INVAL, "same clip and offset "
	       "refused");
	tap_is(rec_write_commit(w, &b.it), REC_E_INVAL, "commit without "
	       "reserve refused");
	{
		void *p;

		tap_is(rec_write_reserve(w, 20, &p), 0, "reserve");
		tap_is(rec_write_reserve(w, 20, &p), REC_E_INVAL, "a second "
		       "reserve before commit refused");
		tap_is(rec_writer_flush(w), REC_E_INVAL, "flush during a "
		       "reservation refused");
		tap_is(rec_write_commit(w, &a.it), REC_E_INVAL, "a bad "
		       "commit is refused");
		tap_is(rec_write_reserve(w, 20, &p), 0, "and drops the "
		       "reservation");
		tap_is(rec_write_commit(w, &(rec_item){ .type = 0 }),
		       REC_E_INVAL, "a second bad commit too");
	}
	tap_is(rec_writer_finish(w), 0, "finish");
	check_stream(fd, &b, 1, "after refusals");
	rec_writer_close(w);
	free(a.data);
	free(b.data);

	/* A header over the 1 MiB metadata cap. */
	{
		char *big = malloc(1 << 20);

		memset(big, 'x', (1 << 20) - 1);
		big[(1 << 20) - 1] = '\0';
		rec_header_add(h, "big", big);
		tap_is(rec_writer_open(&w, fd, h, NULL), REC_E_TOOBIG,
		       "a header over 1 MiB is refused");
		tap_is(rec_write(w, &b.it), REC_E_TOOBIG, "and the writer "
		       "stays failed");
		rec_writer_close(w);
		free(big);
	}
	tap_is(rec_writer_open(&w, fd, NULL, NULL), REC_E_INVAL,
	       "no header refused");
	rec_writer_close(w);
	rec_writer_close(NULL);
	rec_header_free(h);
	close(fd);
}

/* A stream without windows records is version 1 throughout, as before. */
static void test_version_1_streams(void)
{
	size_t len, p = 0;
	unsigned char *s = small_stream(&len, 0);
	int n = 0, v1 = 0;

	while (p + REC_HDR_SIZE <= len) {
		n++;
		v1 += s[p + 6] == 1;
		p += REC_HDR_SIZE + (size_t)le32(s + p + 8) + le32(s + p + 12);
	}
	tap_ok(n == 5 && v1 == n, "no windows records: all %d records of "
	       "version 1", n);
	free(s);
}

/* The writer's (run once plainly, once writing behind). */
static void test_windows_writes(void)
{
	test_windows_round_trip(0, 4096, 0);
	test_windows_round_trip(0, 0, 1);
	test_windows_round_trip(0, 4096, 1);
	test_windows_round_trip(0, 100000, 1);
	test_windows_round_trip(5, 0, 1);
}

/* The reader went away: the writer gets REC_E_EPIPE, not a signal. */
static void test_epipe(void)
{
	int p[2], err = 0;
	rec_header *h = test_header();
	rec_writer *w = NULL;
	struct titem t;

	signal(SIGPIPE, SIG_IGN);
	if (pipe(p) < 0)
		exit(99);
	close(p[0]);
	titem_make(&t, REC_T_AUDIO, REC_S16, 0, 0, 10000, 1, 3);
	err = rec_writer_open(&w, p[1], h, &(rec_writer_opts){
				      .write_behind = g_wb });
	for (uint64_t i = 0; i < 1000 && !err; i++) {
		t.it.clip = i;
		err = rec_write(w, &t.it);
	}
	if (!err)
		err = rec_writer_finish(w);
	tap_is(err, REC_E_EPIPE, "a closed pipe gives REC_E_EPIPE%s",
	       g_wb ? " (write behind)" : "");
	tap_ok(strstr(rec_writer_detail(w), "Broken pipe") != NULL,
	       "detail: %s", rec_writer_detail(w));
	tap_is(rec_write(w, &t.it), REC_E_EPIPE, "and stays failed");
	rec_writer_close(w);
	rec_header_free(h);
	free(t.data);
	close(p[1]);
}

/* Round trips through rec_write and rec_write_reserve, raw and zstd, with
 * buffers smaller and larger than the records. */
static void test_writes(void)
{
	test_round_trip(0, 0);
	test_round_trip(0, 4096);
	test_round_trip(3, 0);
	test_round_trip(1, 70000);
	test_reserve(0, 0);
	test_reserve(0, 4096);
	test_reserve(0, 100000);
	test_reserve(5, 0);
	test_pieces_round_trip(0, 0, 0);
	test_pieces_round_trip(0, 4096, 1);
	test_pieces_round_trip(0, 100000, 1);
	test_pieces_round_trip(3, 0, 1);
}

/* The writer's tests once more with writing behind. */
static void test_write_behind(void)
{
	g_wb = 1;
	test_writes();
	test_windows_writes();
	test_epipe();
	g_wb = 0;
}

/* The writer's tests; with --write-behind, the pass through its
 * thread. */
int main(int argc, char **argv)
{
	int pass = pass_option(argc, argv, "--write-behind");

	if (pass < 0)
		return 2;
	if (pass) {
		test_write_behind();
		return tap_done();
	}
	test_writes();
	test_empty_stream();
	test_writer_refusals();
	test_version_1_streams();
	test_windows_writes();
	test_epipe();
	return tap_done();
}
