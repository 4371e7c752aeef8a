/*
 * test-writebehind - unit tests of lib/writebehind.c's zero copy: the
 * writer hands full buffers to a pipe with vmsplice(2), so the pipe holds
 * the writer's pages until they are read. A buffer filled again too early
 * changes bytes the reader has yet to read; the streams here make every
 * such change visible. Through pipes read slowly (by a reader of ours,
 * reading ahead or not, or copied in small pieces), into files, with
 * headers larger than a buffer, and with readers that go away.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "../../lib/writebehind.h"
#include "rec-fixture.h"
#include "tap.h"

#define ZC_RECORDS 400
#define ZC_MAX_SAMPLES 700000u

/* Only small records: all go through the writer's buffers. */
static int g_zc_small;

/* The run in progress, named when it hangs. */
static const char *volatile g_zc_run = "";

/* SIGALRM: a run hung. Says which and ends the test (write and _exit
 * being safe in a signal handler). */
static void zc_hung(int sig)
{
	const char *piece[] = { "Bail out! hung: ", g_zc_run, "\n" };

	(void)sig;
	for (int i = 0; i < 3; i++)
		if (write(1, piece[i], strlen(piece[i])) < 0)
			break;
	_exit(1);
}

/* Starts a run that may hang if the writer is wrong: after 120 s (far
 * more than any run takes, sanitizers included) zc_hung() ends it. */
static void zc_start(const char *what)
{
	g_zc_run = what;
	signal(SIGALRM, zc_hung);
	alarm(120);
}

static void zc_end(void)
{
	alarm(0);
	signal(SIGALRM, SIG_DFL);
}

/* Samples of record k. The first half of a stream: small and about 80
 * KiB, which fill the writer's buffers; the second adds records over 1
 * MiB, more than a buffer, whose payloads go beside it with writev. (A
 * write larger than the pipe returns only once the reader has read all
 * before it: runs of those alone would hide a buffer reused too early.) */
static uint32_t zc_samples(uint64_t k)
{
	if (g_zc_small || k % 3 == 0)
		return 1u + (uint32_t)(k % 300);
	if (k >= ZC_RECORDS / 2 && k % 10 == 9)
		return 600000u + (uint32_t)k;
	if (k < ZC_RECORDS / 2 || k % 3 == 1)
		return 40960u + (uint32_t)k;
	return 1u + (uint32_t)(k % 300);
}

/* Sample j of record k: every sample depends on k (the multiplier is odd),
 * so two records differ at every place they share. */
static void zc_fill(uint64_t k, unsigned char *p, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++) {
		uint16_t v = (uint16_t)(k * 0x9e37u + j * 0x2f1u + (j >> 12));

		p[2 * j] = (unsigned char)v;
		p[2 * j + 1] = (unsigned char)(v >> 8);
	}
}

/* Record k's fields (its payload is filled by the caller). */
static void zc_item(uint64_t k, rec_item *it, char *key, size_t key_size)
{
	memset(it, 0, sizeof(*it));
	it->key_len = (size_t)snprintf(key, key_size, "zc/%llu",
				       (unsigned long long)k);
	it->key = key;
	it->type = REC_T_AUDIO;
	it->clip = k;
	it->clip_samples = zc_samples(k);
	it->label = (int32_t)(k % 5);
	it->sample_rate = 16000;
	it->split = (int)(k % 4);
	it->dtype = REC_S16;
	it->dim0 = zc_samples(k);
	it->dim1 = 1;
	it->data_len = (size_t)it->dim0 * 2;
}

/* A reader of a zero-copy stream: what it found, for the main thread to
 * report (TAP output comes from the main thread only). */
struct zc_read {
	int fd;
	int read_ahead;
	int slow;               /* pause every few records */
	size_t stop_after;      /* 0, or close after this many records */
	size_t n_pairs;         /* header pairs "pN" to expect */
	size_t got, bad, bad_header;
	int err;
	char detail[512];
};

static void zc_pause(void)
{
	nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}

/* Reads the stream at z->fd and compares each record with zc_item() and
 * zc_fill(); closes z->fd. */
static void *zc_read_main(void *arg)
{
	struct zc_read *z = arg;
	unsigned char *want = malloc(2 * (size_t)ZC_MAX_SAMPLES);
	rec_reader *r = NULL;
	rec_item it, w;
	char key[32], pair[32];

	if (want == NULL)
		exit(99);
	z->err = rec_reader_open(&r, z->fd, &(rec_reader_opts){
					 .name = "zc pipe",
					 .read_ahead = z->read_ahead });
	for (size_t i = 0; z->err == REC_OK && i < z->n_pairs; i++) {
		snprintf(pair, sizeof(pair), "p%zu", i);
		z->bad_header += rec_header_count(rec_reader_header(r), pair)
				 != 1;
	}
	while (z->err == REC_OK && (z->err = rec_read(r, &it)) == REC_OK) {
		zc_item(z->got, &w, key, sizeof(key));
		zc_fill(z->got, want, w.dim0);
		w.data = want;
		z->bad += !items_equal(&it, &w);
		z->got++;
		if (z->slow && z->got % 5 == 0)
			zc_pause();
		if (z->stop_after && z->got == z->stop_after)
			break;
	}
	snprintf(z->detail, sizeof(z->detail), "%s", rec_reader_detail(r));
	rec_reader_close(r);
	/* Done, failed or going away: a writer on a pipe must not wait on
	 * a reader that is gone. */
	close(z->fd);
	free(want);
	return NULL;
}

/* A slower reader still: copies the pipe into a file in pieces of 1 to
 * 40000 bytes with a pause after most, so that it is in the middle of one
 * of the writer's buffers most of the time. */
struct zc_dribble {
	int in, out;
	int err;
};

static void *zc_dribble_main(void *arg)
{
	struct zc_dribble *d = arg;
	static unsigned char buf[40000];
	ssize_t got;
	size_t i = 0;

	while ((got = read(d->in, buf, 1 + rng() % sizeof(buf))) > 0) {
		if (write(d->out, buf, (size_t)got) != got) {
			d->err = errno ? errno : EIO;
			break;
		}
		if (i++ % 4 != 3)
			nanosleep(&(struct timespec){ .tv_nsec = 100000 },
				  NULL);
	}
	if (got < 0)
		d->err = errno;
	close(d->in); /* the writer must not wait on a reader that failed */
	return NULL;
}

/* The writer's side of a zero-copy run. */
struct zc_write {
	int err;
	uint64_t bytes, spliced, count;
	char detail[512];
};

/* A header with n_pairs pairs "pN" besides the usual ones. */
static rec_header *zc_header(size_t n_pairs)
{
	rec_header *h = test_header();
	char key[32], value[64];

	for (size_t i = 0; i < n_pairs; i++) {
		snprintf(key, sizeof(key), "p%zu", i);
		snprintf(value, sizeof(value), "value of pair %zu, padded to "
			 "take some room", i);
		rec_header_add(h, key, value);
	}
	return h;
}

/* Writes n records into fd with zero_copy zc: every fourth through
 * rec_write_reserve/commit, the others through rec_write. Stops at the
 * first error; fills *out. */
static void zc_write_stream(int fd, int zc, size_t bufsize, size_t n,
			    size_t n_pairs, struct zc_write *out)
{
	rec_header *h = zc_header(n_pairs);
	unsigned char *data = malloc(2 * (size_t)ZC_MAX_SAMPLES);
	rec_writer *w = NULL;
	rec_item it;
	char key[32];
	int err;

	if (data == NULL)
		exit(99);
	err = rec_writer_open(&w, fd, h, &(rec_writer_opts){
				      .buffer_size = bufsize,
				      .name = "zc output",
				      .write_behind = 1, .zero_copy = zc });
	for (size_t k = 0; k < n && err == REC_OK; k++) {
		void *p;

		zc_item(k, &it, key, sizeof(key));
		if (k % 4 == 2) {
			err = rec_write_reserve(w, it.data_len, &p);
			if (err == REC_OK) {
				zc_fill(k, p, it.dim0);
				err = rec_write_commit(w, &it);
			}
		} else {
			zc_fill(k, data, it.dim0);
			it.data = data;
			err = rec_write(w, &it);
		}
	}
	if (err == REC_OK)
		err = rec_writer_finish(w);
	out->err = err;
	out->bytes = rec_writer_bytes(w);
	out->spliced = rec_writer_spliced(w);
	out->count = rec_writer_count(w);
	snprintf(out->detail, sizeof(out->detail), "%s",
		 rec_writer_detail(w));
	rec_writer_close(w);
	rec_header_free(h);
	free(data);
}

static void zc_check_read(const struct zc_read *z, size_t n,
			  const char *what)
{
	tap_is(z->err, REC_END, "%s: the reader reads to the end", what);
	if (z->err != REC_END)
		tap_diag("%s", z->detail);
	tap_is_u64(z->got, n, "%s: every record", what);
	tap_is_u64(z->bad, 0, "%s: every field and payload equal", what);
	tap_is_u64(z->bad_header, 0, "%s: every header pair", what);
}

static void zc_check_write(const struct zc_write *o, size_t n, int spliced,
			   const char *what)
{
	tap_is(o->err, 0, "%s: write %zu records", what, n);
	if (o->err)
		tap_diag("%s", o->detail);
	tap_is_u64(o->count, n, "%s: writer count", what);
	if (spliced)
		tap_ok(o->spliced > 0 && o->spliced <= o->bytes, "%s: %llu of "
		       "%llu bytes handed over with vmsplice", what,
		       (unsigned long long)o->spliced,
		       (unsigned long long)o->bytes);
	else
		tap_is_u64(o->spliced, 0, "%s: nothing spliced", what);
}

/* Writes the test stream with zero_copy zc into a pipe whose read end
 * (*reader_fd) a thread running fn(arg) reads, and waits for both. */
static void zc_through_pipe(void *(*fn)(void *), void *arg, int *reader_fd,
			    int zc, size_t bufsize, size_t n_pairs,
			    struct zc_write *o, const char *what)
{
	pthread_t t;
	int p[2];

	if (pipe(p) < 0)
		exit(99);
	*reader_fd = p[0];
	zc_start(what);
	if (pthread_create(&t, NULL, fn, arg))
		exit(99);
	zc_write_stream(p[1], zc, bufsize, ZC_RECORDS, n_pairs, o);
	close(p[1]);
	pthread_join(t, NULL);
	zc_end();
}

/* zc into a pipe read by a thread of ours (a slow one: see struct
 * zc_read); n_pairs extra header pairs. */
static void zc_pipe_run(int zc, int read_ahead, size_t bufsize,
			size_t n_pairs, const char *what)
{
	struct zc_read z = { .read_ahead = read_ahead, .slow = 1,
			     .n_pairs = n_pairs };
	struct zc_write o;

	zc_through_pipe(zc_read_main, &z, &z.fd, zc, bufsize, n_pairs, &o,
			what);
	zc_check_write(&o, ZC_RECORDS, zc == 2, what);
	zc_check_read(&z, ZC_RECORDS, what);
}

/* zc into a pipe copied to a file by a dribbling thread, then read. */
static void zc_dribble_run(int zc, size_t bufsize, const char *what)
{
	struct zc_dribble d = { .out = temp_fd() };
	struct zc_read z = { 0 };
	struct zc_write o;

	zc_through_pipe(zc_dribble_main, &d, &d.in, zc, bufsize, 0, &o,
			what);
	tap_is(d.err, 0, "%s: the copy of the pipe", what);
	zc_check_write(&o, ZC_RECORDS, zc == 2, what);
	lseek(d.out, 0, SEEK_SET);
	z.fd = d.out;
	zc_read_main(&z);
	zc_check_read(&z, ZC_RECORDS, what);
}

/* zc into a regular file: nothing to splice into, the stream as without. */
static void zc_file_run(int zc, size_t bufsize, const char *what)
{
	struct zc_read z = { .fd = temp_fd() };
	struct zc_write o;

	zc_write_stream(z.fd, zc, bufsize, ZC_RECORDS, 0, &o);
	zc_check_write(&o, ZC_RECORDS, 0, what);
	tap_is_u64(o.bytes, (uint64_t)lseek(z.fd, 0, SEEK_END),
		   "%s: writer bytes equal the file size", what);
	lseek(z.fd, 0, SEEK_SET);
	zc_read_main(&z);
	zc_check_read(&z, ZC_RECORDS, what);
}

/* Bytes in the pipe fd not read yet, -1 on failure. */
static long zc_unread(int fd)
{
	int n;

	return ioctl(fd, FIONREAD, &n) < 0 ? -1 : n;
}

/* Closes the read end of the pipe at z->fd, never having read from it,
 * once the writer has stopped filling it: blocked on a full pipe, or
 * waiting for one of its buffers to be read. */
static void *zc_close_later(void *arg)
{
	struct zc_read *z = arg;
	long before = -1, now;

	for (;;) {
		nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
		now = zc_unread(z->fd);
		if (now < 0 || (now > 0 && now == before))
			break;
		before = now;
	}
	close(z->fd);
	return NULL;
}

/* The reader reads stop_after records (0: none, not even the header) and
 * closes its end; with small buffers every buffer of the ring fits in the
 * pipe, so the writer may be waiting for one to be read when the reader
 * goes. The writer must fail with REC_E_EPIPE and close without a hang. */
static void zc_reader_gone(size_t bufsize, size_t stop_after,
			   const char *what)
{
	struct zc_read z = { .slow = 1, .stop_after = stop_after };
	struct zc_write o;
	pthread_t t;
	int p[2];

	signal(SIGPIPE, SIG_IGN);
	if (pipe(p) < 0)
		exit(99);
	z.fd = p[0];
	zc_start(what);
	if (stop_after) {
		if (pthread_create(&t, NULL, zc_read_main, &z))
			exit(99);
	} else {
		if (pthread_create(&t, NULL, zc_close_later, &z))
			exit(99);
	}
	zc_write_stream(p[1], 2, bufsize, 100000, 0, &o);
	pthread_join(t, NULL);
	zc_end();
	tap_is(o.err, REC_E_EPIPE, "%s: the writer fails with REC_E_EPIPE",
	       what);
	tap_ok(strstr(o.detail, "Broken pipe") != NULL, "%s: detail: %s",
	       what, o.detail);
	tap_ok(1, "%s: and closes without a hang", what);
	close(p[1]);
}

/* Zero copy (rec_writer_opts.zero_copy) through pipes read slowly, into
 * files, with a header larger than the buffer, and a reader that goes. */
static void test_zero_copy(void)
{
	zc_pipe_run(2, 0, 0, 0, "zero copy 2, slow reader");
	zc_pipe_run(2, 1, 0, 0, "zero copy 2, slow reader reading ahead");
	zc_dribble_run(2, 0, "zero copy 2, dribbling reader");
	zc_pipe_run(2, 0, 65536, 0, "zero copy 2, 64 KiB buffers, slow reader");
	zc_dribble_run(2, 65536, "zero copy 2, 64 KiB buffers, dribbling "
		       "reader");
	zc_pipe_run(1, 1, 0, 0, "zero copy 1, read by this test, not a "
		    "suite program");
	zc_pipe_run(1, 0, 0, 0, "zero copy 1, read by this test without "
		    "reading ahead");
	zc_file_run(1, 0, "zero copy 1 into a file");
	zc_file_run(2, 0, "zero copy 2 into a file");
	zc_file_run(2, 4096, "zero copy 2 into a file, 4 KiB buffers");
	zc_pipe_run(2, 0, 4096, 3000, "zero copy 2, 4 KiB buffers, header "
		    "of 3000 pairs");
	zc_pipe_run(2, 1, 65536, 15000, "zero copy 2, 64 KiB buffers, "
		    "header of 15000 pairs, reading ahead");
	zc_pipe_run(1, 0, 4096, 3000, "zero copy 1, 4 KiB buffers, header "
		    "of 3000 pairs");
	zc_pipe_run(0, 0, 4096, 3000, "zero copy 0 (writing behind), 4 KiB "
		    "buffers, header of 3000 pairs");
	zc_reader_gone(4096, 0, "zero copy 2, 4 KiB buffers, reader gone "
		       "unread, records larger than the buffer");
	g_zc_small = 1;
	zc_reader_gone(4096, 0, "zero copy 2, 4 KiB buffers, small records, "
		       "reader gone unread");
	g_zc_small = 0;
	zc_reader_gone(0, 20, "zero copy 2, reader gone after 20 records");
	zc_reader_gone(4096, 20, "zero copy 2, 4 KiB buffers, reader gone "
		       "after 20 records");
}

/* Drains the pipe at *arg, counting its bytes into arg[1]. */
static void *drain_main(void *arg)
{
	long *a = arg;
	char buf[65536];
	ssize_t n;

	while ((n = read((int)a[0], buf, sizeof(buf))) > 0)
		a[1] += n;
	return NULL;
}

/* zc 1 copies a buffer filled to less than a quarter, and says so while
 * nothing else was found: the reader check runs at full buffers only. */
static void test_short_buffers(void)
{
	struct writebehind *wb;
	long drained[2] = { 0, 0 };
	unsigned char *b;
	uint64_t spliced = 1;
	size_t cap;
	char why[256];
	pthread_t t;
	int p[2];

	if (pipe(p) < 0 || wb_new(&wb, p[1], 65536, 1) != 0)
		exit(99);
	drained[0] = p[0];
	if (pthread_create(&t, NULL, drain_main, drained))
		exit(99);
	for (int i = 0; i < 10; i++) {
		b = wb_buf(wb, &cap);
		memset(b, i, cap / 4 - 1);
		tap_is(wb_submit(wb, cap / 4 - 1, &(double){ 0 }), 0,
		       "short buffer %d submitted", i);
	}
	tap_is(wb_drain(wb), 0, "short buffers written");
	wb_status(wb, &spliced);
	tap_is_u64(spliced, 0, "short buffers: none spliced");
	wb_zc_why(wb, why, sizeof(why));
	tap_ok(strstr(why, "short") != NULL, "short buffers: why says so: "
	       "%s", why);
	b = wb_buf(wb, &cap);
	memset(b, 1, cap);
	tap_is(wb_submit(wb, cap, &(double){ 0 }), 0, "a full buffer");
	tap_is(wb_drain(wb), 0, "the full buffer written");
	wb_zc_why(wb, why, sizeof(why));
	tap_ok(strstr(why, "short") == NULL && why[0] != '\0',
	       "a full buffer: the reader is checked: %s", why);
	wb_free(wb);
	close(p[1]);
	pthread_join(t, NULL);
	close(p[0]);
	tap_is_u64((uint64_t)drained[1], 10 * (cap / 4 - 1) + cap,
		   "the reader got every byte");
}

int main(void)
{
	/* a reader that fails closes its end: the writer's EPIPE then
	 * shows as a failed check rather than as this test's death */
	signal(SIGPIPE, SIG_IGN);
	test_zero_copy();
	test_short_buffers();
	return tap_done();
}
