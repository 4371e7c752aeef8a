/*
 * test-rec-shm - unit tests of the shared-memory path of record streams
 * (formats/record.md, version 5; lib/rec_shm.c, rec_read.c, rec_write.c):
 *
 *   test-rec-shm unit   one process, a writer and a reader on a pipe:
 *                       the offer, payloads by reference (rec_write,
 *                       reserve and commit), small payloads and skipped
 *                       records inline, the trailer the same as an
 *                       inline stream's, a payload changed in the ring
 *                       caught by its CRC, forged references refused, a
 *                       reader that does not attach; a reader that
 *                       defers payload CRCs to its caller and holds
 *                       payloads past the next read
 *   test-rec-shm full   a writer faster than its reader (another
 *                       process): the ring fills, payloads go inline
 *                       while it is full, every record arrives intact
 *   test-rec-shm corrupt  writes a stream of 16 kHz audio records to
 *                       standard output, offering a ring to the stage of
 *                       this build that reads it, and changes one byte of
 *                       the first payload that goes by reference after
 *                       its record is made, before the reader can see it:
 *                       a reader must refuse it (gpumel: on the GPU)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/crc32c.h"
#include "../../lib/rec.h"
#include "../../lib/shmring.h"
#include "tap.h"

#define BIG 8192u         /* a payload that goes by reference */

static rec_header *test_header(void)
{
	rec_header *h = rec_header_new();

	if (h == NULL || rec_header_add(h, "kind", "audio"))
		exit(2);
	return h;
}

/* An audio record of clip with n s16 samples at data, filled from seed. */
static rec_item audio(uint64_t clip, int16_t *data, uint32_t n,
		      unsigned seed)
{
	rec_item it = { 0 };

	for (uint32_t i = 0; i < n; i++)
		data[i] = (int16_t)(i * 31u + seed * 977u);
	it.type = REC_T_AUDIO;
	it.clip = clip;
	it.clip_samples = n;
	it.label = -1;
	it.sample_rate = 16000;
	it.dtype = REC_S16;
	it.dim0 = n;
	it.dim1 = 1;
	it.key = "a.wav";
	it.key_len = 5;
	it.data = data;
	it.data_len = (size_t)n * 2;
	return it;
}

static void make_pipe(int p[2])
{
	if (pipe(p) != 0) {
		perror("pipe");
		exit(2);
	}
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
}

/* Reads what the pipe holds now, without waiting (up to cap bytes). */
static size_t drain(int fd, unsigned char *buf, size_t cap)
{
	int fl = fcntl(fd, F_GETFL);
	size_t len = 0;
	ssize_t n;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	fcntl(fd, F_SETFL, fl);
	return len;
}

/* The offset of the first record flagged shared in buf, or 0. */
static size_t find_shared(const unsigned char *buf, size_t len)
{
	size_t pos = 0;

	while (pos + 24 <= len) {
		uint32_t meta, data;

		memcpy(&meta, buf + pos + 8, 4);
		memcpy(&data, buf + pos + 12, 4);
		if (buf[pos + 5] & REC_F_SHARED)
			return pos;
		pos += 24 + (size_t)meta + data;
	}
	return 0;
}

/* The trailer of a stream of the same items written to a file, without
 * the shared path. */
static rec_trailer inline_trailer(const rec_item *items, size_t n)
{
	FILE *f = tmpfile();
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_reader *r = NULL;
	rec_trailer t = { 0 };
	rec_item it;

	if (f == NULL || rec_writer_open(&w, fileno(f), h, NULL))
		exit(2);
	for (size_t i = 0; i < n; i++)
		if (rec_write(w, &items[i]))
			exit(2);
	if (rec_writer_finish(w))
		exit(2);
	rec_writer_close(w);
	lseek(fileno(f), 0, SEEK_SET);
	if (rec_reader_open(&r, fileno(f), NULL))
		exit(2);
	while (rec_read(r, &it) == REC_OK)
		;
	if (rec_reader_trailer(r))
		t = *rec_reader_trailer(r);
	rec_reader_close(r);
	rec_header_free(h);
	fclose(f);
	return t;
}

static void test_round_trip(void)
{
	static int16_t a[BIG / 2], b[BIG / 2], c[BIG / 2], d[100];
	rec_writer_opts wo = { .shm = 2, .name = "pipe" };
	rec_reader_opts ro = { .shm = 1, .name = "pipe" };
	rec_item items[5], it;
	rec_writer *w = NULL;
	rec_reader *r = NULL;
	rec_header *h = test_header();
	rec_shm_report rep;
	rec_trailer want;
	int p[2], err;
	void *res;

	make_pipe(p);
	items[0] = audio(0, a, BIG / 2, 1);
	items[1] = audio(1, b, BIG / 2, 2);
	items[2] = audio(2, c, BIG / 2, 3);
	items[3] = audio(3, d, 100, 4);
	items[4] = items[3];
	items[4].type = REC_T_SKIPPED;
	items[4].clip = 4;
	items[4].dtype = 0;
	items[4].dim0 = items[4].dim1 = 0;
	items[4].data = "unreadable";
	items[4].data_len = 10;

	err = rec_writer_open(&w, p[1], h, &wo);
	tap_is(err, REC_OK, "writer opens on a pipe");
	rec_writer_flush(w);
	err = rec_reader_open(&r, p[0], &ro);
	tap_is(err, REC_OK, "reader opens: %s", rec_reader_detail(r));

	/* the first payload: the ring is offered, the payload inline */
	err = rec_write(w, &items[0]);
	rec_writer_flush(w);
	rec_writer_shm(w, &rep);
	tap_ok(err == REC_OK && rep.records == 0,
	       "before the reader attached, a payload goes inline");
	err = rec_read(r, &it);
	tap_ok(err == REC_OK && it.data_len == BIG &&
	       !memcmp(it.data, a, BIG), "and arrives whole");
	rec_reader_shm(r, &rep);
	tap_ok(rep.records == 0 && rep.why[0] == '\0',
	       "the reader attached the ring offered (%s)", rep.why);

	/* now by reference */
	err = rec_write(w, &items[1]);
	rec_writer_flush(w);
	rec_writer_shm(w, &rep);
	tap_ok(err == REC_OK && rep.records == 1 && rep.bytes == BIG,
	       "once attached, a payload goes in the ring (%llu)",
	       (unsigned long long)rep.records);
	err = rec_read(r, &it);
	tap_ok(err == REC_OK && it.data_len == BIG && it.data != (void *)b &&
	       !memcmp(it.data, b, BIG), "and is read there, intact");
	rec_reader_shm(r, &rep);
	tap_ok(rep.records == 1 && rep.bytes == BIG,
	       "the reader counts it");
	tap_ok((uintptr_t)it.data % 16 == 0, "its payload is aligned");

	/* reserve and commit: written in the ring in place */
	err = rec_write_reserve(w, BIG, &res);
	if (err == REC_OK)
		memcpy(res, c, BIG);
	err = err ? err : rec_write_commit(w, &items[2]);
	rec_writer_flush(w);
	err = err ? err : rec_read(r, &it);
	tap_ok(err == REC_OK && !memcmp(it.data, c, BIG) &&
	       !memcmp((const char *)it.data + BIG - 8, (char *)res + BIG - 8,
		       8), "a payload reserved in the ring arrives");

	/* small payloads and skipped records stay inline */
	err = rec_write(w, &items[3]);
	err = err ? err : rec_write(w, &items[4]);
	err = err ? err : rec_writer_finish(w);
	tap_is(err, REC_OK, "small and skipped records, then the trailer");
	rec_writer_shm(w, &rep);
	tap_is_u64(rep.records, 2, "of them none by reference");
	err = rec_read(r, &it);
	tap_ok(err == REC_OK && it.data_len == 200 &&
	       !memcmp(it.data, d, 200), "the small one arrives");
	err = err ? err : rec_read(r, &it);
	tap_ok(err == REC_OK && it.type == REC_T_SKIPPED, "the skipped one");
	close(p[1]); /* the end of input after the trailer */
	p[1] = -1;
	err = err ? err : rec_read(r, &it);
	tap_is(err, REC_END, "the trailer checks: %s", rec_reader_detail(r));
	want = inline_trailer(items, 5);
	tap_ok(rec_reader_trailer(r) &&
	       rec_reader_trailer(r)->checksum == want.checksum &&
	       rec_reader_trailer(r)->n_records == want.n_records,
	       "the trailer is the one of the same stream inline");
	rec_reader_close(r);
	rec_writer_close(w);
	rec_header_free(h);
	close(p[0]);
}

/* Feeds a stream header, a ring record and then rec to a fresh reader
 * whose header comes from the writer's stream (head, hlen) and returns
 * rec_read's result with the detail in detail. */
static int read_forged(const unsigned char *head, size_t hlen,
		       const unsigned char *rec, size_t rlen, int shm,
		       char *detail, size_t n)
{
	rec_reader_opts ro = { .shm = shm };
	rec_reader *r = NULL;
	rec_item it;
	int p[2], err;

	make_pipe(p);
	if (write(p[1], head, hlen) != (ssize_t)hlen ||
	    write(p[1], rec, rlen) != (ssize_t)rlen)
		exit(2);
	close(p[1]);
	err = rec_reader_open(&r, p[0], &ro);
	if (err == REC_OK)
		err = rec_read(r, &it);
	snprintf(detail, n, "%s", rec_reader_detail(r));
	rec_reader_close(r);
	close(p[0]);
	return err;
}

static void test_broken(void)
{
	rec_writer_opts wo = { .shm = 2, .name = "pipe" };
	rec_reader_opts ro = { .shm = 1, .name = "pipe" };
	static unsigned char head[1 << 16], buf[1 << 16];
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_reader *r = NULL;
	unsigned char forged[256];
	char detail[512];
	size_t hlen, len, at, rlen;
	void *ptr = NULL;
	rec_item it;
	int p[2], q[2], err;

	/* the writer writes into p; the header, the ring record and clip
	 * 0 are copied to q for r, and clip 1's bytes are kept to forge */
	make_pipe(p);
	make_pipe(q);
	if (rec_writer_open(&w, p[1], h, &wo) || rec_writer_flush(w))
		exit(2);
	{
		static int16_t a[BIG / 2];
		rec_item ia = audio(0, a, BIG / 2, 5);

		if (rec_write(w, &ia) || rec_writer_flush(w))
			exit(2);
	}
	hlen = drain(p[0], head, sizeof(head));
	if (write(q[1], head, hlen) != (ssize_t)hlen)
		exit(2);
	if (rec_reader_open(&r, q[0], &ro) || rec_read(r, &it))
		exit(2);
	{
		static int16_t b[BIG / 2];
		rec_item ib = audio(1, b, BIG / 2, 6);

		if (rec_write_reserve(w, BIG, &ptr))
			exit(2);
		memcpy(ptr, b, BIG);
		if (rec_write_commit(w, &ib) || rec_writer_flush(w))
			exit(2);
	}
	len = drain(p[0], buf, sizeof(buf));
	at = find_shared(buf, len);
	tap_ok(len > 24 && len < sizeof(forged) && at == 0 &&
	       (buf[5] & REC_F_SHARED) && buf[6] == 5,
	       "the record by reference is %zu bytes, version 5", len);
	if (len == 0 || len >= sizeof(forged))
		goto out;
	rlen = len;

	/* the header without clip 0 (which the reader of forged records
	 * need not see): header record and ring record only */
	{
		size_t pos = 0, keep = 0;

		while (pos + 24 <= hlen) {
			uint32_t meta, data;

			memcpy(&meta, head + pos + 8, 4);
			memcpy(&data, head + pos + 12, 4);
			if (head[pos + 4] == REC_T_HEADER ||
			    head[pos + 4] == REC_T_RING)
				keep = pos + 24 + meta + data;
			pos += 24 + (size_t)meta + data;
		}
		hlen = keep;
	}

	/* a payload changed in the ring after it was sent */
	((unsigned char *)ptr)[100] ^= 1;
	if (write(q[1], buf, rlen) != (ssize_t)rlen)
		exit(2);
	err = rec_read(r, &it);
	tap_is(err, REC_E_CRC, "a payload changed in the ring is refused");
	tap_ok(strstr(rec_reader_detail(r), "checksum mismatch of a payload "
		      "in shared memory") != NULL, "saying so: %s",
	       rec_reader_detail(r));
	((unsigned char *)ptr)[100] ^= 1;

	/* the same record, read again by a reader of its own: good */
	err = read_forged(head, hlen, buf, rlen, 1, detail, sizeof(detail));
	tap_is(err, REC_OK, "the record itself is good: %s", detail);

	/* forged references (the CRC covers the payload, not the
	 * reference: only the checks of the reference catch these) */
	memcpy(forged, buf, rlen);
	forged[rlen - 16] = 7; /* ring id */
	err = read_forged(head, hlen, forged, rlen, 1, detail,
			  sizeof(detail));
	tap_ok(err == REC_E_FORMAT && strstr(detail, "reference to ring 7, "
					      "which no ring record offered"),
	       "a reference to a ring never offered: %s", detail);
	memcpy(forged, buf, rlen);
	forged[rlen - 12] ^= 1; /* slot */
	err = read_forged(head, hlen, forged, rlen, 1, detail,
			  sizeof(detail));
	tap_ok(err == REC_E_FORMAT && strstr(detail, "which is not a payload "
					      "in use"),
	       "a reference to a free slot: %s", detail);
	memcpy(forged, buf, rlen);
	forged[rlen - 8] ^= 64; /* offset */
	err = read_forged(head, hlen, forged, rlen, 1, detail,
			  sizeof(detail));
	tap_ok(err == REC_E_FORMAT && strstr(detail, "which is not a payload "
					      "in use"),
	       "a reference past its slot's payload: %s", detail);
	err = read_forged(head, hlen, buf, rlen, 0, detail, sizeof(detail));
	tap_ok(err == REC_E_FORMAT && strstr(detail, "which this reader did "
					      "not attach"),
	       "a reference where the reader did not attach: %s", detail);
	memcpy(forged, buf, rlen);
	forged[6] = 4; /* version */
	err = read_forged(head, hlen, forged, rlen, 1, detail,
			  sizeof(detail));
	tap_ok(err == REC_E_FORMAT && strstr(detail, "the shared flag in a "
					      "record marked format version "
					      "below 5"),
	       "the shared flag in a version-4 record: %s", detail);
out:
	rec_reader_close(r);
	rec_writer_close(w);
	rec_header_free(h);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* A reader that does not take offers: everything inline, and each side
 * says why. */
static void test_refused(void)
{
	static int16_t a[BIG / 2];
	rec_writer_opts wo = { .shm = 2 };
	rec_reader_opts ro = { .shm = 0 };
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_reader *r = NULL;
	rec_shm_report rep;
	rec_item it;
	int p[2], err = 0;

	make_pipe(p);
	if (rec_writer_open(&w, p[1], h, &wo) || rec_writer_flush(w) ||
	    rec_reader_open(&r, p[0], &ro))
		exit(2);
	for (unsigned i = 0; i < 4 && !err; i++) {
		rec_item ia = audio(i, a, BIG / 2, i);

		err = rec_write(w, &ia);
		err = err ? err : rec_writer_flush(w);
		err = err ? err : rec_read(r, &it);
		if (!err && memcmp(it.data, a, BIG))
			err = -100;
	}
	tap_is(err, 0, "a reader that does not attach reads every payload");
	rec_writer_shm(w, &rep);
	tap_ok(rep.records == 0 && strstr(rep.why, "the reader did not "
					  "attach"), "the writer: %s",
	       rep.why);
	rec_reader_shm(r, &rep);
	tap_ok(rep.records == 0 && strstr(rep.why, "turned off"),
	       "the reader: %s", rep.why);
	rec_reader_close(r);
	rec_writer_close(w);
	rec_header_free(h);
	close(p[0]);
	close(p[1]);
}

/* A writer (shm on) and a reader deferring payload CRCs on a pipe; the
 * reader has read clip 0 (inline: the ring is attached). */
static void deferred_pair(int p[2], rec_writer **w, rec_reader **r)
{
	static int16_t a[BIG / 2];
	rec_writer_opts wo = { .shm = 2, .name = "pipe" };
	rec_reader_opts ro = { .shm = 1, .defer_shm_crc = 1, .name = "pipe" };
	rec_header *h = test_header();
	rec_item ia = audio(0, a, BIG / 2, 1), it;

	make_pipe(p);
	if (rec_writer_open(w, p[1], h, &wo) || rec_writer_flush(*w) ||
	    rec_reader_open(r, p[0], &ro) || rec_write(*w, &ia) ||
	    rec_writer_flush(*w) || rec_read(*r, &it))
		exit(2);
	rec_header_free(h);
}

/* Clip clip by reference, written in the ring in place: *ptr is where. */
static int write_reserved(rec_writer *w, uint64_t clip, int16_t *b,
			  void **ptr)
{
	rec_item ib = audio(clip, b, BIG / 2, (unsigned)clip + 7);

	if (rec_write_reserve(w, BIG, ptr))
		return -1;
	memcpy(*ptr, b, BIG);
	return rec_write_commit(w, &ib) || rec_writer_flush(w) ? -1 : 0;
}

/* Whether the payload at h is still in use in its ring. */
static int hold_in_use(const rec_hold *h)
{
	uint64_t bytes;
	const char *base = rec_hold_area(h, &bytes);

	return shmring_within(h->ring, h->slot,
			      (uint64_t)((const char *)h->ptr - base),
			      h->len) != NULL;
}

/* Leases: room in the writer's ring that another thread fills, written
 * from there by reference without a copy. */
static void test_lease(void)
{
	static int16_t b[BIG / 2], c[BIG / 2];
	rec_writer *w = NULL;
	rec_reader *r = NULL;
	rec_lease l, l2;
	rec_shm_report rep;
	uint32_t want = 0;
	rec_item it, ic;
	void *pb;
	int p[2], err;

	deferred_pair(p, &w, &r);
	tap_ok(rec_writer_lease(w, BIG, &l) == 1 && l.ptr == NULL,
	       "lease: none before the writing thread knows the ring is "
	       "attached");
	if (write_reserved(w, 1, b, &pb) || rec_read(r, &it) ||
	    !rec_reader_take_crc(r, &want))
		exit(2);
	tap_ok(rec_writer_lease(w, 1024, &l) == 1,
	       "none for a payload that would go inline");
	tap_ok(rec_writer_lease(w, BIG, &l) == 0 && l.ptr && l.len == BIG,
	       "a lease of %u bytes once it is", BIG);
	ic = audio(2, c, BIG / 2, 9);
	memcpy(l.ptr, c, BIG);
	ic.data = l.ptr;
	err = rec_write_leased(w, &ic, crc32c(0, c, BIG), &l);
	err = err ? err : rec_writer_flush(w);
	tap_ok(err == REC_OK && l.ptr == NULL, "written from the lease, "
	       "which is used up");
	err = rec_read(r, &it);
	tap_ok(err == REC_OK && rec_reader_take_crc(r, &want) &&
	       want == crc32c(0, c, BIG) && !memcmp(it.data, c, BIG),
	       "the reader gets it by reference, its CRC the one given");
	rec_writer_shm(w, &rep);
	tap_ok(rep.leased == 1 && rep.records == 2,
	       "the report counts it (%llu of %llu)",
	       (unsigned long long)rep.leased,
	       (unsigned long long)rep.records);

	/* at most half the ring (64 MiB) is lent; a dropped lease goes
	 * back */
	tap_ok(rec_writer_lease(w, (size_t)20 << 20, &l) == 0 &&
	       rec_writer_lease(w, (size_t)20 << 20, &l2) == 1,
	       "leases hold at most half the ring");
	rec_lease_drop(w, &l);
	tap_ok(l.ptr == NULL && rec_writer_lease(w, (size_t)20 << 20, &l2) == 0,
	       "a dropped lease gives its room back");
	rec_lease_drop(w, &l2);
	rec_lease_drop(w, &l2); /* twice: a no-op */

	/* a lease written as another payload: refused, given back */
	tap_ok(rec_writer_lease(w, BIG, &l) == 0, "one more lease");
	ic = audio(3, c, BIG / 2, 9);
	err = rec_write_leased(w, &ic, crc32c(0, c, BIG), &l);
	tap_ok(err == REC_E_INVAL && l.ptr == NULL,
	       "written as another payload: refused and given back");
	rec_reader_close(r);
	rec_writer_close(w);
	close(p[0]);
	close(p[1]);
}

static void test_deferred(void)
{
	static int16_t b[BIG / 2], c[BIG / 2], d[BIG / 2];
	rec_writer *w = NULL;
	rec_reader *r = NULL;
	rec_hold hold = { 0 }, h2 = { 0 }, was;
	uint32_t want = 0;
	void *pb, *pc, *pd; /* the writer's mapping of the ring */
	rec_item it;
	int p[2], err;

	deferred_pair(p, &w, &r);
	tap_ok(!rec_reader_take_crc(r, &want),
	       "deferred: an inline payload's CRC was checked by the reader");
	if (write_reserved(w, 1, b, &pb) || write_reserved(w, 2, c, &pc))
		exit(2);
	err = rec_read(r, &it);
	err = err ? err : !rec_reader_take_crc(r, &want);
	tap_ok(err == REC_OK && !memcmp(it.data, b, BIG) &&
	       want == crc32c(0, b, BIG), "a payload by reference hands its "
	       "CRC (0x%08x) to the caller", want);
	tap_ok(rec_reader_hold(r, &hold) && hold.ptr == it.data &&
	       hold.len == BIG,
	       "and can be held");
	tap_ok(!rec_reader_hold(r, &was), "once");
	err = rec_read(r, &it);
	tap_ok(err == REC_OK && !memcmp(it.data, c, BIG) && hold_in_use(&hold) &&
	       !memcmp(hold.ptr, b, BIG),
	       "the held payload stays in use past the next read");
	h2 = hold;
	rec_hold_release(&hold);
	tap_ok(!hold_in_use(&h2), "released, its slot is free");
	rec_hold_release(&hold); /* twice: a no-op */

	/* a payload changed in the ring: the caller's check finds it */
	if (write_reserved(w, 3, d, &pd))
		exit(2);
	((unsigned char *)pd)[7] ^= 1;
	err = rec_read(r, &it);
	tap_is(err, REC_OK, "deferred: a changed payload is handed out");
	err = rec_reader_check_crc(r);
	tap_ok(err == REC_E_CRC && strstr(rec_reader_detail(r), "must be"),
	       "and refused when checked: %s", rec_reader_detail(r));
	rec_reader_close(r);
	rec_writer_close(w);
	close(p[0]);
	close(p[1]);

	/* one whose CRC the caller does not take is checked next read */
	deferred_pair(p, &w, &r);
	if (write_reserved(w, 1, b, &pb) || write_reserved(w, 2, c, &pc))
		exit(2);
	((unsigned char *)pb)[BIG - 1] ^= 0x80;
	err = rec_read(r, &it);
	err = err ? err : rec_read(r, &it);
	tap_ok(err == REC_E_CRC && strstr(rec_reader_detail(r),
					  "checksum mismatch"),
	       "a CRC not taken is checked at the next read: %s",
	       rec_reader_detail(r));
	rec_reader_close(r);
	rec_writer_close(w);
	close(p[0]);
	close(p[1]);
}

/* payloads of 512 KiB, 200 of them: 100 MiB through a ring of 8 MiB,
 * to a reader that takes 1 ms a record and stops for 300 ms at record
 * FULL_STOP. The stop, not the pace, makes the ring full: a reader that
 * frees a slot a millisecond frees one within the writer's wait, and
 * on a loaded machine the writer never counted the ring full. */
#define FULL_N 200u
#define FULL_SAMPLES (256u << 10)
#define FULL_STOP 10u
#define FULL_RING (8u << 20)

static int full_reader(int fd)
{
	static int16_t want[FULL_SAMPLES];
	rec_reader_opts ro = { .shm = 1, .read_ahead = 1 };
	struct timespec ms = { 0, 1000000 }, stop = { 0, 300000000 };
	rec_reader *r = NULL;
	rec_shm_report rep;
	rec_item it;
	unsigned n = 0;
	int err;

	if (rec_reader_open(&r, fd, &ro))
		return 3;
	while ((err = rec_read(r, &it)) == REC_OK) {
		audio(n, want, FULL_SAMPLES, n);
		if (it.clip != n || it.data_len != sizeof(want) ||
		    memcmp(it.data, want, sizeof(want)))
			return 4;
		n++;
		nanosleep(n == FULL_STOP ? &stop : &ms, NULL);
	}
	rec_reader_shm(r, &rep);
	if (err != REC_END || n != FULL_N)
		return 5;
	printf("# reader: %llu of %u by reference\n",
	       (unsigned long long)rep.records, n);
	rec_reader_close(r);
	return rep.records > 0 ? 0 : 6;
}

static void test_full(void)
{
	static int16_t a[FULL_SAMPLES];
	rec_writer_opts wo = { .shm = 2, .write_behind = 1,
			       .shm_bytes = FULL_RING };
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_shm_report rep;
	int p[2], st, err = 0;
	pid_t pid;

	make_pipe(p);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		_exit(full_reader(p[0]));
	}
	close(p[0]);
	if (rec_writer_open(&w, p[1], h, &wo))
		exit(2);
	for (unsigned i = 0; i < FULL_N && !err; i++) {
		rec_item ia = audio(i, a, FULL_SAMPLES, i);

		err = rec_write(w, &ia);
	}
	err = err ? err : rec_writer_finish(w);
	tap_is(err, REC_OK, "100 MiB written: %s", rec_writer_detail(w));
	rec_writer_shm(w, &rep);
	tap_ok(rep.records > 0 && rep.full > 0 && rep.waits > 0,
	       "by reference %llu, inline while full %llu, waits %llu",
	       (unsigned long long)rep.records,
	       (unsigned long long)rep.full, (unsigned long long)rep.waits);
	rec_writer_close(w);
	close(p[1]);
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the reader got every record intact (status %d)",
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	rec_header_free(h);
}

/* test-rec-shm corrupt: see the top of the file. */
static int corrupt_writer(void)
{
	static int16_t a[BIG / 2];
	/* shm 1: only a stage of this build (not a shell that runs one)
	 * is offered the ring */
	rec_writer_opts wo = { .shm = 1, .name = "stdout" };
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_shm_report rep;
	uint64_t refs = 0;
	int flipped = 0;

	if (rec_header_add(h, "sample_rate", "16000") ||
	    rec_writer_open(&w, STDOUT_FILENO, h, &wo) || rec_writer_flush(w))
		return 2;
	for (unsigned i = 0; i < 4000 && (!flipped || i < 600); i++) {
		rec_item ia = audio(i, a, BIG / 2, i);
		void *ptr;

		/* rec_write until references go (it offers the ring), then
		 * one made in place in the ring, changed once it is made */
		if (!refs && rec_write(w, &ia))
			return 3;
		if (refs && (rec_write_reserve(w, BIG, &ptr) ||
			     (memcpy(ptr, a, BIG), rec_write_commit(w, &ia))))
			return 3;
		rec_writer_shm(w, &rep);
		if (refs && !flipped && rep.records > refs) {
			((unsigned char *)ptr)[4321] ^= 0x10;
			flipped = 1;
			fprintf(stderr, "test-rec-shm: clip %u changed in the "
				"ring\n", i);
		}
		refs = rep.records;
		if (rec_writer_flush(w))
			return 0; /* the reader stopped: expected */
		/* a reader may read ahead megabytes before it attaches:
		 * slowly, until it does */
		if (!refs && i >= 8)
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	if (!flipped) {
		fprintf(stderr, "test-rec-shm: no reference went: %s\n", rep.why);
		return 4;
	}
	rec_writer_finish(w);
	rec_writer_close(w);
	rec_header_free(h);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 2 && !strcmp(argv[1], "unit")) {
		test_round_trip();
		test_broken();
		test_refused();
		test_deferred();
		test_lease();
	} else if (argc == 2 && !strcmp(argv[1], "full")) {
		test_full();
	} else if (argc == 2 && !strcmp(argv[1], "corrupt")) {
		return corrupt_writer();
	} else {
		fprintf(stderr, "usage: test-rec-shm unit|full|corrupt\n");
		return 2;
	}
	return tap_done();
}
