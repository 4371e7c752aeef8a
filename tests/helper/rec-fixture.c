/*
 * rec-fixture.c - the shared fixtures of the record stream unit tests
 * (rec-fixture.h).
 */
#include "rec-fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/crc32c.h"
#include "tap.h"
#include "xorshift.h"

int g_ra, g_ua, g_wb, g_plain;

int pass_option(int argc, char **argv, const char *option)
{
	if (argc == 1)
		return 0;
	if (argc == 2 && strcmp(argv[1], option) == 0)
		return 1;
	fprintf(stderr, "usage: %s [%s]\n", argv[0], option);
	return -1;
}

static uint64_t rng_state = 0x243f6a8885a308d3ull;

uint64_t rng(void)
{
	return xorshift64(&rng_state);
}

void titem_make(struct titem *t, int type, int dtype, uint64_t clip,
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

void titem_windows(struct titem *t, int dtype, uint64_t clip,
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

void titem_fwindows(struct titem *t, int dtype, uint64_t clip,
		    uint32_t seg, uint32_t dim0, uint32_t dim1,
		    uint32_t len, uint32_t hop, uint32_t n,
		    uint32_t flags, size_t key_len)
{
	/* n matrices' worth of payload, then the per-window shape */
	titem_make(t, REC_T_FWINDOWS, dtype, clip, 0, dim0, dim1 * n,
		   key_len);
	t->it.dim1 = dim1;
	t->it.segment = seg;
	t->it.offset = 1000 * clip + 7;
	t->it.win_len = len;
	t->it.win_hop = hop;
	t->it.n_windows = n;
	t->it.win_flags = flags;
}

void titem_piece(struct titem *t, int type, int dtype, uint64_t clip,
		 uint64_t offset, uint32_t n, uint32_t flags,
		 uint64_t clip_samples, size_t key_len)
{
	if (type == REC_T_AUDIO)
		titem_make(t, type, dtype, clip, offset, n, 1, key_len);
	else
		titem_make(t, type, dtype, clip, offset, 8, n, key_len);
	t->it.segment = 0;
	t->it.flags = flags;
	t->it.clip_samples = clip_samples;
}

size_t make_items(struct titem *t, size_t max, int big)
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

void free_items(struct titem *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(t[i].data);
}

rec_header *test_header(void)
{
	rec_header *h = rec_header_new();

	rec_header_add(h, "producer", "test-rec 0.1.0");
	rec_header_add(h, "kind", "audio");
	rec_header_add(h, "label", "yes");
	rec_header_add(h, "label", "no");
	rec_header_add(h, "note", "tab\there, newline\nthere, \xff bytes");
	return h;
}

int temp_fd(void)
{
	FILE *f = tmpfile();

	if (f == NULL) {
		perror("tmpfile");
		exit(99);
	}
	return dup(fileno(f)); /* f itself is never closed: it is removed */
}

int items_equal(const rec_item *a, const rec_item *b)
{
	return a->type == b->type && a->flags == b->flags &&
	       a->clip == b->clip &&
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

void check_stream(int fd, const struct titem *want, size_t n,
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

uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> 8 * i);
}

unsigned char *fd_bytes(int fd, size_t *len)
{
	off_t size = lseek(fd, 0, SEEK_END);
	unsigned char *buf = malloc(size > 0 ? (size_t)size : 1);

	if (buf == NULL || pread(fd, buf, (size_t)size, 0) != size)
		exit(99);
	*len = (size_t)size;
	return buf;
}

unsigned char *small_stream(size_t *len, int level)
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
