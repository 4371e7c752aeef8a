/*
 * test-rec - unit tests of lib/rec: header key/values, provenance
 * quoting, write/read round trips of every record type and element type
 * with and without zstd, payloads larger than the writer's buffer,
 * reserve/commit, the writer's refusals, the reader's caps, detection of
 * every single-byte corruption and truncation, EPIPE, slow pipes; windows
 * records (format version 2): round trips, version bytes, refusals by
 * writer and reader, the order rule over their segment ranges,
 * rec_window(); the writer's zero copy (vmsplice into a pipe) with slow
 * readers, files, large headers and a reader that goes away.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/crc32c.h"
#include "../../lib/rec.h"
#include "tap.h"

/* ------------------------------------------------------------------ */
/* Fixtures */

static uint64_t rng_state = 0x243f6a8885a308d3ull;
/* Readers read ahead in a thread of their own (the second pass). */
static int g_ra;
/* ... and hand payloads out where they are (unaligned). */
static int g_ua;
/* Writers write behind in a thread of their own (the third pass). */
static int g_wb;
/* check_stream: the stream was written without zstd (every payload's CRC
 * can be derived by the reader) */
static int g_plain;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A test item with its payload owned here. */
struct titem {
	rec_item it;
	char key[80];
	unsigned char *data;
};

static void titem_make(struct titem *t, int type, int dtype, uint64_t clip,
		       uint64_t offset, uint32_t dim0, uint32_t dim1,
		       size_t key_len)
{
	size_t n;

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < key_len && i < sizeof(t->key) - 1; i++)
		t->key[i] = (char)('a' + (clip + i) % 26);
	t->key[key_len] = '\0';
	t->it.type = type;
	t->it.clip = clip;
	t->it.offset = offset;
	t->it.clip_samples = 16000 + clip;
	t->it.segment = (uint32_t)(offset / 100);
	t->it.label = (int32_t)(clip % 3) - 1;
	t->it.sample_rate = 16000;
	t->it.split = (int)(clip % 4);
	t->it.key = t->key;
	t->it.key_len = key_len;
	if (type == REC_T_SKIPPED) {
		n = (size_t)snprintf(NULL, 0, "reason for %llu",
				     (unsigned long long)clip);
		t->data = malloc(n + 1);
		snprintf((char *)t->data, n + 1, "reason for %llu",
			 (unsigned long long)clip);
	} else {
		t->it.dtype = dtype;
		t->it.dim0 = dim0;
		t->it.dim1 = dim1;
		n = (size_t)dim0 * dim1 * rec_dtype_size(dtype);
		t->data = malloc(n ? n : 1);
		/* compressible but not constant */
		for (size_t i = 0; i < n; i++)
			t->data[i] = (unsigned char)(i % 251 < 128 ? i % 7
						     : rng());
	}
	t->it.data = t->data;
	t->it.data_len = n;
}

static rec_header *test_header(void)
{
	rec_header *h = rec_header_new();

	rec_header_add(h, "producer", "test-rec 0.1.0");
	rec_header_add(h, "kind", "audio");
	rec_header_add(h, "label", "yes");
	rec_header_add(h, "label", "no");
	rec_header_add(h, "note", "tab\there, newline\nthere, \xff bytes");
	return h;
}

/* A temporary file to write a stream to and read it back from. */
static int temp_fd(void)
{
	FILE *f = tmpfile();

	if (f == NULL) {
		perror("tmpfile");
		exit(99);
	}
	return dup(fileno(f)); /* f itself is never closed: it is removed */
}

static int items_equal(const rec_item *a, const rec_item *b)
{
	return a->type == b->type && a->clip == b->clip &&
	       a->offset == b->offset && a->clip_samples == b->clip_samples &&
	       a->segment == b->segment && a->label == b->label &&
	       a->sample_rate == b->sample_rate && a->split == b->split &&
	       a->dtype == b->dtype && a->dim0 == b->dim0 &&
	       a->dim1 == b->dim1 && a->key_len == b->key_len &&
	       a->win_len == b->win_len && a->win_hop == b->win_hop &&
	       a->n_windows == b->n_windows && a->win_flags == b->win_flags &&
	       memcmp(a->key, b->key, a->key_len) == 0 &&
	       a->key[a->key_len] == '\0' && a->data_len == b->data_len &&
	       (a->data_len == 0 || memcmp(a->data, b->data, a->data_len) == 0);
}

/* Reads the whole stream at fd (from its start) and compares it with
 * the n expected items. */
static void check_stream(int fd, const struct titem *want, size_t n,
			 const char *what)
{
	rec_reader *r = NULL;
	rec_item it;
	size_t i = 0;
	uint32_t crc;
	int err, bad = 0, misaligned = 0;
	size_t crc_known = 0, crc_wrong = 0;
	off_t size = lseek(fd, 0, SEEK_END);

	lseek(fd, 0, SEEK_SET);
	err = rec_reader_open(&r, fd, &(rec_reader_opts){
				      .name = what, .read_ahead = g_ra,
				      .unaligned = g_ua, .data_crc = 1 });
	if (!tap_is(err, 0, "%s: open", what)) {
		tap_diag("%s", rec_reader_detail(r));
		rec_reader_close(r);
		return;
	}
	tap_is_str(rec_header_get(rec_reader_header(r), "note"),
		   "tab\there, newline\nthere, \xff bytes",
		   "%s: header value with control bytes survives", what);
	while ((err = rec_read(r, &it)) == REC_OK) {
		size_t a = rec_dtype_size(it.dtype);

		if (i >= n || !items_equal(&it, &want[i].it)) {
			if (!bad)
				tap_diag("first difference at item %zu", i);
			bad++;
		}
		if (a && (uintptr_t)it.data % 16)
			misaligned++;
		if (rec_reader_data_crc(r, &crc)) {
			crc_known++;
			crc_wrong += crc != crc32c(0, it.data, it.data_len);
		}
		i++;
	}
	tap_is(err, REC_END, "%s: ends with REC_END", what);
	if (err != REC_END)
		tap_diag("%s", rec_reader_detail(r));
	tap_is(bad, 0, "%s: every field and payload equal", what);
	tap_is_u64(crc_wrong, 0, "%s: rec_reader_data_crc() is each payload's "
		   "CRC32C (%zu known)", what, crc_known);
	if (g_plain)
		tap_is_u64(crc_known, n, "%s: and known for every uncompressed "
			   "payload", what);
	if (g_ua)
		tap_ok(misaligned > 0, "%s: unaligned: payloads left where "
		       "they are (%d not aligned)", what, misaligned);
	else
		tap_is(misaligned, 0, "%s: payloads aligned to 16 bytes",
		       what);
	tap_is_u64(i, n, "%s: item count", what);
	tap_is_u64(rec_reader_count(r), n, "%s: rec_reader_count", what);
	tap_is_u64(rec_reader_offset(r), (uint64_t)size,
		   "%s: rec_reader_offset is the stream size", what);
	if (err == REC_END) {
		const rec_trailer *t = rec_reader_trailer(r);

		tap_is_u64(t->n_records, n, "%s: trailer n_records", what);
	}
	tap_is(rec_read(r, &it), err, "%s: the end is sticky", what);
	rec_reader_close(r);
}

/* ------------------------------------------------------------------ */
/* Names and header */

static void test_names(void)
{
	int distinct = 1;

	for (int a = REC_E_INVAL; a <= REC_END; a++)
		for (int b = a + 1; b <= REC_END; b++)
			distinct &= strcmp(rec_strerror(a),
					   rec_strerror(b)) != 0;
	tap_ok(distinct, "every error code has its own text");
	tap_is_str(rec_strerror(REC_E_CRC), "checksum mismatch",
		   "REC_E_CRC text");
	tap_ok(rec_strerror(-1000) != NULL, "unknown code has a text");
	tap_is(rec_dtype_size(REC_S16), 2, "s16 size");
	tap_is(rec_dtype_size(REC_F32), 4, "f32 size");
	tap_is(rec_dtype_size(REC_F16), 2, "f16 size");
	tap_is(rec_dtype_size(REC_BF16), 2, "bf16 size");
	tap_is(rec_dtype_size(0), 0, "dtype 0 has no size");
	tap_is(rec_dtype_size(5), 0, "dtype 5 has no size");
	for (int d = REC_S16; d <= REC_BF16; d++)
		tap_is(rec_dtype_parse(rec_dtype_name(d)), d,
		       "dtype %s parses back", rec_dtype_name(d));
	tap_is(rec_dtype_parse("f64"), 0, "f64 is unknown");
	tap_is(rec_dtype_parse(NULL), 0, "NULL dtype name is unknown");
	tap_ok(rec_dtype_name(9) == NULL, "dtype 9 has no name");
	tap_is_str(rec_split_name(REC_SPLIT_VALIDATION), "validation",
		   "split name");
	tap_ok(rec_split_name(4) == NULL && rec_split_name(-1) == NULL,
	       "splits out of range have no name");
}

static void test_header_api(void)
{
	rec_header *h = rec_header_new(), *d;
	const char *k, *v;

	tap_is(rec_header_add(h, "label", "a"), 0, "add");
	rec_header_add(h, "kind", "audio");
	rec_header_add(h, "label", "b");
	rec_header_add(h, "label", "c");
	tap_is(rec_header_len(h), 4, "four pairs");
	tap_is(rec_header_count(h, "label"), 3, "three labels");
	tap_is_str(rec_header_get(h, "label"), "a", "get gives the first");
	tap_is_str(rec_header_get_nth(h, "label", 2), "c", "nth");
	tap_ok(rec_header_get_nth(h, "label", 3) == NULL, "nth past the end");
	tap_ok(rec_header_get(h, "nothing") == NULL, "missing key");
	tap_is(rec_header_add(h, "Bad", "x"), REC_E_INVAL, "upper case key "
	       "refused");
	tap_is(rec_header_add(h, "", "x"), REC_E_INVAL, "empty key refused");
	tap_is(rec_header_add(h, "a-b", "x"), REC_E_INVAL, "'-' in key "
	       "refused");
	tap_is(rec_header_add(h, "ok_1", ""), 0, "empty value allowed");

	d = rec_header_dup(h);
	tap_is(rec_header_set(h, "label", "z"), 0, "set");
	tap_is(rec_header_count(h, "label"), 1, "set leaves one pair");
	rec_header_entry(h, 0, &k, &v);
	tap_ok(strcmp(k, "label") == 0 && strcmp(v, "z") == 0,
	       "set replaces the first pair in place");
	rec_header_entry(h, 1, &k, &v);
	tap_is_str(k, "kind", "the order of the others is kept");
	rec_header_entry(h, 99, &k, &v);
	tap_ok(k == NULL && v == NULL, "entry past the end gives NULLs");
	tap_is(rec_header_count(d, "label"), 3, "dup is a deep copy");

	rec_header_set_u64(h, "clips", UINT64_MAX);
	tap_is_str(rec_header_get(h, "clips"), "18446744073709551615",
		   "set_u64");
	rec_header_set_double(h, "fmax", 0.1);
	tap_ok(strtod(rec_header_get(h, "fmax"), NULL) == 0.1,
	       "set_double survives a round trip");
	rec_header_set_double(h, "fmax", 8000);
	tap_is_str(rec_header_get(h, "fmax"), "8000", "set_double of 8000");
	rec_header_del(h, "fmax");
	tap_ok(rec_header_get(h, "fmax") == NULL, "del");
	rec_header_del(d, "label");
	tap_is(rec_header_len(d), 2, "del removes every repeat");
	tap_is(rec_header_set(NULL, "a", "b"), REC_E_INVAL, "set on NULL");
	rec_header_free(h);
	rec_header_free(d);
	rec_header_free(NULL);
	tap_ok(rec_header_len(NULL) == 0, "NULL header is empty");
}

static void test_add_stage(void)
{
	static const char *const args[] = {
		"wavcat", "--rate", "4096", "DATA dir/", "it's", "", "a=b,c",
		"x;y", "$HOME", "-j8", "tab\there", "@list.txt", "100%",
		"~user", "*.wav"
	};
	enum { argc = sizeof(args) / sizeof(args[0]) };
	char *argv[argc];
	rec_header *h = rec_header_new();

	for (int i = 0; i < argc; i++)
		argv[i] = strdup(args[i]);

	tap_is(rec_header_add_stage(h, "wavcat", "0.1.0", argc, argv), 0,
	       "add_stage");
	tap_is_str(rec_header_get(h, "stage"),
		   "wavcat 0.1.0\twavcat --rate 4096 'DATA dir/' 'it'\\''s' "
		   "'' a=b,c 'x;y' '$HOME' -j8 'tab\there' @list.txt 100% "
		   "'~user' '*.wav'",
		   "stage entry quotes what a shell would change");
	tap_is(rec_header_add_stage(h, "segment", "0.1.0", 0, NULL), 0,
	       "add_stage without arguments");
	tap_is_str(rec_header_get_nth(h, "stage", 1), "segment 0.1.0\t",
		   "a second stage is appended");
	rec_header_free(h);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

/* ------------------------------------------------------------------ */
/* Round trips */

/* Items of every type and dtype, keys of 0..20 bytes (every payload
 * alignment), an empty payload, with big one payload of 3 MB, with big 2
 * also a tiny one and one of 12 MB (reading ahead, a record longer than a
 * chunk is gathered in a growing buffer; through a slow pipe, partial
 * records move from chunk to chunk). */
static size_t make_items(struct titem *t, size_t max, int big)
{
	size_t n = 0;
	uint64_t clip = 0;

	for (int d = REC_S16; d <= REC_BF16; d++)
		for (size_t k = 0; k <= 20 && n + 3 < max; k++) {
			titem_make(&t[n++], REC_T_AUDIO, d, clip, 0,
				   (uint32_t)(100 + k), 1, k);
			titem_make(&t[n++], REC_T_FEATURES, d, clip, 100,
				   32, (uint32_t)(1 + k), k);
			clip++;
			titem_make(&t[n++], REC_T_SKIPPED, 0, clip++, 0, 0,
				   0, k);
		}
	titem_make(&t[n++], REC_T_AUDIO, REC_F32, clip++, 0, 0, 1, 5);
	if (big)
		titem_make(&t[n++], REC_T_AUDIO, REC_S16, clip++, 0,
			   1500000, 1, 9);
	if (big > 1) {
		titem_make(&t[n++], REC_T_AUDIO, REC_S16, clip++, 0, 7, 1, 3);
		titem_make(&t[n++], REC_T_AUDIO, REC_S16, clip++, 0,
			   6000000, 1, 4);
	}
	titem_make(&t[n++], REC_T_FEATURES, REC_F16, clip++, 0, 64, 3, 1);
	return n;
}

static void free_items(struct titem *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(t[i].data);
}

static void test_round_trip(int level, size_t bufsize)
{
	struct titem t[300];
	size_t n = make_items(t, 290, 1);
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_writer_opts o = { .zstd_level = level, .buffer_size = bufsize,
			      .write_behind = g_wb };
	char what[64];
	int fd = temp_fd(), err = 0;

	snprintf(what, sizeof(what), "zstd %d, buffer %zu", level, bufsize);
	err = rec_writer_open(&w, fd, h, &o);
	for (size_t i = 0; i < n && !err; i++)
		err = rec_write(w, &t[i].it);
	if (!err)
		err = rec_writer_finish(w);
	tap_is(err, 0, "%s: write %zu records", what, n);
	if (err)
		tap_diag("%s", rec_writer_detail(w));
	tap_is_u64(rec_writer_count(w), n, "%s: writer count", what);
	tap_is_u64(rec_writer_bytes(w), (uint64_t)lseek(fd, 0, SEEK_END),
		   "%s: writer bytes equal the file size", what);
	g_plain = level == 0;
	check_stream(fd, t, n, what);
	g_plain = 0;
	rec_writer_close(w);
	rec_header_free(h);
	free_items(t, n);
	close(fd);
}

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

/* ------------------------------------------------------------------ */
/* Refusals */

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

/* ------------------------------------------------------------------ */
/* Corruption */

/* A small valid stream in memory. */
static unsigned char *small_stream(size_t *len, int level)
{
	struct titem t[3];
	rec_header *h = test_header();
	rec_writer *w = NULL;
	int fd = temp_fd();
	unsigned char *buf;
	off_t size;

	rec_writer_open(&w, fd, h, &(rec_writer_opts){ .zstd_level = level });
	titem_make(&t[0], REC_T_AUDIO, REC_S16, 0, 0, 64, 1, 5);
	titem_make(&t[1], REC_T_SKIPPED, 0, 1, 0, 0, 0, 3);
	titem_make(&t[2], REC_T_FEATURES, REC_F32, 2, 0, 4, 8, 7);
	for (int i = 0; i < 3; i++)
		rec_write(w, &t[i].it);
	rec_writer_finish(w);
	rec_writer_close(w);
	rec_header_free(h);
	free_items(t, 3);
	size = lseek(fd, 0, SEEK_END);
	buf = malloc((size_t)size);
	if (pread(fd, buf, (size_t)size, 0) != size)
		exit(99);
	close(fd);
	*len = (size_t)size;
	return buf;
}

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

	s[6] = 3; /* the header record's version */
	err = read_all(s, len, detail, sizeof(detail), 0);
	tap_is(err, REC_E_VERSION, "a newer version is refused");
	tap_ok(strstr(detail, ": format version 3 is newer than this "
		      "reader's version 2") != NULL,
	       "naming both versions: %s", detail);
	free(s);

	err = read_all((const unsigned char *)"", 0, detail, sizeof(detail),
		       0);
	tap_is(err, REC_E_TRUNC, "empty input is truncated");
	err = read_all((const unsigned char *)"RIFF....WAVEfmt garbage here",
		       28, detail, sizeof(detail), 0);
	tap_is(err, REC_E_MAGIC, "garbage is not a stream");
}

/* ------------------------------------------------------------------ */
/* Windows records (format version 2) */

/* A windows record of dim0 x dim1 samples of dtype describing n windows
 * of len frames every hop, from segment seg. */
static void titem_windows(struct titem *t, int dtype, uint64_t clip,
			  uint32_t seg, uint32_t dim0, uint32_t dim1,
			  uint32_t len, uint32_t hop, uint32_t n,
			  uint32_t flags, size_t key_len)
{
	titem_make(t, REC_T_WINDOWS, dtype, clip, 0, dim0, dim1, key_len);
	t->it.segment = seg;
	t->it.offset = 1000 * clip + 7;
	t->it.win_len = len;
	t->it.win_hop = hop;
	t->it.n_windows = n;
	t->it.win_flags = flags;
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

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> 8 * i);
}

/* The whole file at fd. */
static unsigned char *fd_bytes(int fd, size_t *len)
{
	off_t size = lseek(fd, 0, SEEK_END);
	unsigned char *buf = malloc(size > 0 ? (size_t)size : 1);

	if (buf == NULL || pread(fd, buf, (size_t)size, 0) != size)
		exit(99);
	*len = (size_t)size;
	return buf;
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

/* In the bytes: windows records carry version 2, every other record
 * (header and trailer too) version 1; the trailer counts windows records
 * as items. */
static void check_windows_bytes(int fd, const struct titem *t, size_t n,
				const char *what)
{
	size_t len, nwin = 0, v2 = 0, other = 0, v1 = 0, p = 0, last = 0;
	unsigned char *s = fd_bytes(fd, &len);
	uint64_t items = 0, skipped = 0;

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
	for (size_t i = 0; i < n; i++) {
		skipped += t[i].it.type == REC_T_SKIPPED;
		items += t[i].it.type != REC_T_SKIPPED;
	}
	tap_ok(nwin > 0 && v2 == nwin, "%s: %zu windows records, %zu with "
	       "version byte 2", what, nwin, v2);
	tap_ok(v1 == other, "%s: the %zu others with version byte 1 (%zu)",
	       what, other, v1);
	if (!tap_ok(last + REC_HDR_SIZE + 32 <= len &&
		    s[last + 4] == REC_T_TRAILER, "%s: a trailer last", what)) {
		free(s);
		return;
	}
	tap_is_u64(le32(s + last + 24) | (uint64_t)le32(s + last + 28) << 32,
		   n, "%s: trailer n_records", what);
	tap_is_u64(le32(s + last + 32) | (uint64_t)le32(s + last + 36) << 32,
		   items, "%s: trailer n_items counts audio, windows and "
		   "features records", what);
	tap_is_u64(le32(s + last + 40) | (uint64_t)le32(s + last + 44) << 32,
		   skipped, "%s: trailer n_skipped", what);
	free(s);
}

/* Writes make_windows_items() with rec_write, or alternately with
 * reserve/commit, and reads them back. */
static void test_windows_round_trip(int level, size_t bufsize, int reserve)
{
	struct titem t[64];
	size_t n = make_windows_items(t);
	rec_header *h = test_header();
	rec_writer *w = NULL;
	rec_writer_opts o = { .zstd_level = level, .buffer_size = bufsize,
			      .write_behind = g_wb };
	char what[80];
	int fd = temp_fd(), err, misaligned = 0;

	snprintf(what, sizeof(what), "windows%s, zstd %d, buffer %zu",
		 reserve ? " reserved" : "", level, bufsize);
	err = rec_writer_open(&w, fd, h, &o);
	for (size_t i = 0; i < n && !err; i++) {
		void *p;

		if (!reserve || i % 2) {
			err = rec_write(w, &t[i].it);
			continue;
		}
		err = rec_write_reserve(w, t[i].it.data_len, &p);
		if (err)
			break;
		misaligned += (uintptr_t)p % 16 != 0;
		memcpy(p, t[i].data, t[i].it.data_len);
		err = rec_write_commit(w, &t[i].it);
	}
	if (!err)
		err = rec_writer_finish(w);
	tap_is(err, 0, "%s: write %zu records", what, n);
	if (err)
		tap_diag("%s", rec_writer_detail(w));
	tap_is(misaligned, 0, "%s: reserved payloads aligned", what);
	tap_is_u64(rec_writer_bytes(w), (uint64_t)lseek(fd, 0, SEEK_END),
		   "%s: writer bytes equal the file size", what);
	check_stream(fd, t, n, what);
	check_windows_bytes(fd, t, n, what);
	check_windows_expand(fd, t, n, what);
	rec_writer_close(w);
	rec_header_free(h);
	free_items(t, n);
	close(fd);
}

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

/* A stream: header, a windows record (clip 0, segments 0..2, 80 s16
 * frames, 40 every 20, key of 4 bytes), an audio record (clip 0,
 * segment 4, key of 10 bytes), trailer. */
static unsigned char *windows_stream(size_t *len)
{
	struct titem t[2];
	rec_header *h = test_header();
	rec_writer *w = NULL;
	int fd = temp_fd();
	unsigned char *s;

	titem_windows(&t[0], REC_S16, 0, 0, 80, 1, 40, 20, 3, 0, 4);
	titem_make(&t[1], REC_T_AUDIO, REC_S16, 0, 0, 10, 1, 10);
	t[1].it.segment = 4;
	rec_writer_open(&w, fd, h, NULL);
	rec_write(w, &t[0].it);
	rec_write(w, &t[1].it);
	if (rec_writer_finish(w) != REC_OK)
		exit(99);
	rec_writer_close(w);
	rec_header_free(h);
	free_items(t, 2);
	s = fd_bytes(fd, len);
	close(fd);
	return s;
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
		{ 1, 6, 1, 3, REC_E_VERSION, "format version 3 is newer than "
		  "this reader's version 2", 0 },
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

/* Every changed byte and every cut of a stream with a windows record is
 * detected. */
static void test_windows_corruption(void)
{
	size_t len;
	unsigned char *s = windows_stream(&len);
	int undetected = 0, cut_bad = 0;

	for (size_t i = 0; i < len; i++)
		for (int m = 0; m < 2; m++) {
			unsigned char mask = m ? 0x80 : 0x01;

			s[i] ^= mask;
			undetected += read_all(s, len, NULL, 0, 0) >= 0;
			s[i] ^= mask;
		}
	for (size_t cut = 0; cut < len; cut++)
		cut_bad += read_all(s, cut, NULL, 0, 0) != REC_E_TRUNC;
	tap_is(undetected, 0, "windows stream: every changed byte of %zu is "
	       "detected%s", len, g_ra ? " (read ahead)" : "");
	tap_is(cut_bad, 0, "windows stream: every cut is REC_E_TRUNC");
	free(s);
}

/* The reader's windows tests (run once plainly, once reading ahead). */
static void test_windows_reads(void)
{
	test_windows_round_trip(0, 0, 0);
	test_windows_round_trip(3, 0, 0);
	test_windows_reader();
	test_windows_corruption();
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

/* ------------------------------------------------------------------ */
/* Pipes */

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
	test_slow_pipe();
	test_close_while_waiting();
	g_ra = 0;
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

/* ------------------------------------------------------------------ */
/* Zero copy: the writer hands full buffers to a pipe with vmsplice(2),
 * so the pipe holds the writer's pages until they are read. A buffer
 * filled again too early changes bytes the reader has yet to read; the
 * streams here make every such change visible. */

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

int main(void)
{
	test_names();
	test_header_api();
	test_add_stage();
	test_writes();
	test_empty_stream();
	test_writer_refusals();
	test_corruption(0);
	test_corruption(3);
	test_reader_errors();
	test_version_1_streams();
	test_rec_window();
	test_each_window();
	test_windows_writes();
	test_windows_refusals();
	test_windows_reads();
	test_epipe();
	test_slow_pipe();
	test_read_ahead();
	test_write_behind();
	test_zero_copy();
	return tap_done();
}
