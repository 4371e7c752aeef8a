/*
 * rec-fixture.h - what the unit tests of lib/'s record streams share
 * (test-rec-*.c, test-writebehind.c): test items with their payloads, a
 * test header, streams written to temporary files and read back field by
 * field, and the switches of the passes that repeat tests through the
 * reading and writing threads.
 */
#ifndef MELPIPE_REC_FIXTURE_H
#define MELPIPE_REC_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/rec.h"

/* Readers read ahead in a thread of their own (test-rec-read
 * --read-ahead). */
extern int g_ra;
/* ... and hand payloads out where they are (unaligned). */
extern int g_ua;
/* Writers write behind in a thread of their own (test-rec-write
 * --write-behind). */
extern int g_wb;
/* check_stream: the stream was written without zstd (every payload's CRC
 * can be derived by the reader) */
extern int g_plain;

/* For a helper that runs its tests plainly or, given option, through a
 * thread (its pass): 0 without arguments, 1 with option alone, -1 after
 * a usage line on stderr for anything else. */
int pass_option(int argc, char **argv, const char *option);

/* A deterministic pseudo-random number (xorshift). */
uint64_t rng(void);

/* A test item with its payload owned here. */
struct titem {
	rec_item it;
	char key[80];
	unsigned char *data;
};

/* An item of type and dtype, dim0 x dim1, with a key of key_len letters
 * and a payload that is compressible but not constant (a skipped record's
 * is its reason). */
void titem_make(struct titem *t, int type, int dtype, uint64_t clip,
		uint64_t offset, uint32_t dim0, uint32_t dim1,
		size_t key_len);

/* A windows record of dim0 x dim1 samples of dtype describing n windows
 * of len frames every hop, from segment seg. */
void titem_windows(struct titem *t, int dtype, uint64_t clip,
		   uint32_t seg, uint32_t dim0, uint32_t dim1, uint32_t len,
		   uint32_t hop, uint32_t n, uint32_t flags, size_t key_len);

/* A features-windows record: n windows' features of dim0 x dim1 of
 * dtype (n matrices), for windows of len frames every hop, from segment
 * seg. */
void titem_fwindows(struct titem *t, int dtype, uint64_t clip,
		    uint32_t seg, uint32_t dim0, uint32_t dim1, uint32_t len,
		    uint32_t hop, uint32_t n, uint32_t flags, size_t key_len);

/* A piece (flags REC_ITEM_MORE, REC_ITEM_CONT) of segment 0 of clip:
 * an audio piece of n samples, or a features piece of 8 mels by n
 * frames, at offset, with clip_samples. Pieces of one clip made with the
 * same key_len have the same key, label and split. */
void titem_piece(struct titem *t, int type, int dtype, uint64_t clip,
		 uint64_t offset, uint32_t n, uint32_t flags,
		 uint64_t clip_samples, size_t key_len);

/* Items of every type and dtype, keys of 0..20 bytes (every payload
 * alignment), an empty payload, with big one payload of 3 MB, with big 2
 * also a tiny one and one of 12 MB (reading ahead, a record longer than a
 * chunk is gathered in a growing buffer; through a slow pipe, partial
 * records move from chunk to chunk). At most max items; returns how many. */
size_t make_items(struct titem *t, size_t max, int big);

/* Frees the payloads of n items. */
void free_items(struct titem *t, size_t n);

/* A header with repeated keys and a value with control bytes. */
rec_header *test_header(void);

/* A temporary file to write a stream to and read it back from. */
int temp_fd(void);

/* Whether a (as read) equals b in every field, key and payload. */
int items_equal(const rec_item *a, const rec_item *b);

/* Reads the whole stream at fd (from its start) and compares it with
 * the n expected items. */
void check_stream(int fd, const struct titem *want, size_t n,
		  const char *what);

/* Little-endian fields of a stream in memory. */
uint32_t le32(const unsigned char *p);
void put_le32(unsigned char *p, uint32_t v);

/* The whole file at fd. */
unsigned char *fd_bytes(int fd, size_t *len);

/* A small valid stream in memory: header, audio, skipped and features
 * records, trailer. */
unsigned char *small_stream(size_t *len, int level);

#endif
