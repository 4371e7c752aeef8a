/*
 * rec_int.h - what lib/rec_*.c, readahead.c and writebehind.c share
 * privately: the format's little-endian fields, sizes and caps, the fixed
 * record header as a struct, and the item rules that the reader and the
 * writer both apply. Not for tools/: their interface is rec.h.
 *
 * The helpers here run for every record on both sides, so they are static
 * inline: splitting the library into files must not add a call per record.
 */
#ifndef MELPIPE_REC_INT_H
#define MELPIPE_REC_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "rec.h"

#define DEFAULT_BUFFER (1u << 20) /* reader's and writer's buffer */
#define MAX_KEY 0xffffu           /* key_len is a 16-bit field */
#define TRAILER_META 32u
#define DETAIL_SIZE 1024
#define REASON_SIZE 512
#define PAYLOAD_ALIGN 16u         /* of payloads handed out, for typed access */
#define ALIGN_UP(n) (((n) + PAYLOAD_ALIGN - 1) & ~(size_t)(PAYLOAD_ALIGN - 1))

/* Seconds on the monotonic clock, for the wait timers. */
static inline double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ */
/* Little-endian fields */

static inline uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* ------------------------------------------------------------------ */
/* The fixed record header (REC_HDR_SIZE bytes) */

struct rhdr {
	unsigned type, flags, version, reserved;
	uint32_t meta_len, data_len, raw_len, crc;
};

static inline void rhdr_put(unsigned char *p, const struct rhdr *h)
{
	memcpy(p, REC_MAGIC, 4);
	p[4] = (unsigned char)h->type;
	p[5] = (unsigned char)h->flags;
	p[6] = (unsigned char)h->version;
	p[7] = (unsigned char)h->reserved;
	put32(p + 8, h->meta_len);
	put32(p + 12, h->data_len);
	put32(p + 16, h->raw_len);
	put32(p + 20, h->crc);
}

static inline void rhdr_get(const unsigned char *p, struct rhdr *h)
{
	h->type = p[4];
	h->flags = p[5];
	h->version = p[6];
	h->reserved = p[7];
	h->meta_len = get32(p + 8);
	h->data_len = get32(p + 12);
	h->raw_len = get32(p + 16);
	h->crc = get32(p + 20);
}

/* The version byte of a record: the lowest format version that defines
 * it (formats/record.md). */
static inline unsigned rec_version(unsigned type, unsigned flags)
{
	return type == REC_T_FWINDOWS ? 6
	       : type == REC_T_RING || (flags & REC_F_SHARED) ? 5
	       : type == REC_T_SOURCE ? 4
	       : flags & (REC_F_MORE | REC_F_CONT) ? 3
	       : type == REC_T_WINDOWS ? 2 : 1;
}

/* Whether a record of this type may carry its payload in a ring. */
static inline int rec_shareable(int type)
{
	return type == REC_T_AUDIO || type == REC_T_WINDOWS ||
	       type == REC_T_FEATURES;
}

/* Whether this library's writer puts such a payload in a ring: samples
 * only. Features stay in the stream: by reference the one thread of
 * their reader (h5pack) would hash them, which its reading thread does
 * for a pipe (docs/BENCHMARKS.md, the keyword-spotting job). */
static inline int rec_sends_shared(int type)
{
	return type == REC_T_AUDIO || type == REC_T_WINDOWS;
}

/* The reader's table of rings, for a writer passing references on
 * (rec_read_shm.c; struct shm_rd is in rec_shm.h). */
struct shm_rd;
struct shm_rd *rec_reader_shm_rd(rec_reader *r);

/* ------------------------------------------------------------------ */
/* Names (rec_names.c) and header pairs (rec_header.c) */

/* "audio", "windows", ...; "unknown" for a type the format lacks. */
const char *rec_type_name(int type);

/* 1 when the len bytes at k are a valid header key: [a-z0-9_]+. */
int rec_key_valid(const char *k, size_t len);

/* Appends a pair of len-delimited strings (they need not be terminated)
 * to h. Returns REC_OK or REC_E_NOMEM. */
int rec_header_append(rec_header *h, const char *k, size_t klen,
		      const char *v, size_t vlen);

/* Bytes of h's pairs serialised as the header record's metadata. */
size_t rec_header_meta_size(const rec_header *h);

/* Writes those rec_header_meta_size(h) bytes to p. */
void rec_header_serialise(const rec_header *h, unsigned char *p);

/* ------------------------------------------------------------------ */
/* Item rules (rec_item.c) */

/* Whether records of this type carry window fields. */
static inline int item_has_windows(int type)
{
	return type == REC_T_WINDOWS || type == REC_T_FWINDOWS;
}

/* Bytes of a data record's metadata: the fixed part, the key, and for a
 * windows or features-windows record its window fields. */
static inline size_t item_meta_size(const rec_item *it)
{
	return REC_ITEM_META_SIZE + it->key_len +
	       (item_has_windows(it->type) ? REC_WINDOWS_META_SIZE : 0);
}

/* rec_item_last_segment(), for the per-record paths. */
static inline uint32_t item_last_segment(const rec_item *it)
{
	if (item_has_windows(it->type) && it->n_windows > 0)
		return it->segment + (it->n_windows - 1);
	return it->segment;
}

/*
 * The rules a data record's fields must follow, apart from lengths and
 * the rules of pieces (rec_piece_check()): returns NULL when it is fine,
 * else the reason (written into buf when it needs numbers). data_len is
 * the uncompressed payload length.
 */
const char *rec_item_check(const rec_item *it, uint64_t data_len,
			   char *buf, size_t size);

/* The reason why (clip, segment) of it may not follow (pclip, pseg),
 * written into buf; only for a record that may not. */
const char *rec_order_refusal(uint64_t pclip, uint32_t pseg,
			      const rec_item *it, char *buf, size_t size);

struct rec_order;

/* Source records (rec_source.c, format version 4). The rules of a
 * source record's payload, its pairs (after rec_item_check(), which
 * checks its fields): NULL or the reason. */
const char *rec_source_pairs_check(const void *data, size_t len, char *buf,
				   size_t size);
/* Why the source record it may not come here, after the records o
 * describes (REC_E_ORDER), or NULL. */
const char *rec_source_place(const struct rec_order *o, const rec_item *it,
			     char *buf, size_t size);
/* Makes the source record it, accepted, the record before the next. */
void rec_source_note(struct rec_order *o, const rec_item *it);
/* For the data record right after a source record: why it may not come
 * there (it is not of the source's clip), or NULL. */
const char *rec_source_next(const struct rec_order *o, const rec_item *it,
			    char *buf, size_t size);

/* ------------------------------------------------------------------ */
/* The order of records (rec_item.c) and the pieces of items (rec_piece.c) */

/*
 * What the order rules need of the records before, kept by the reader
 * and by the writer: the clip and last segment of the record before and,
 * while an item goes on in pieces (that record was flagged more), its
 * fields, which the next piece must repeat.
 */
struct rec_order {
	int have_prev;
	uint64_t clip;
	uint32_t segment;     /* the last segment the record before occupies */
	int source;           /* the record before is a source record */
	uint64_t source_clip; /* then its clip (clip and segment stay those
				 of the data record before it) */
	int open;             /* it was a piece flagged more */
	rec_item piece;       /* then its fields, key pointing at key */
	char *key;            /* MAX_KEY + 1 bytes, from the first piece on */
};

/* Records of one clip are consecutive with increasing segment index,
 * clips come in increasing order. (Not offset: windows of overlapping
 * parent windows, from two segment stages in a row, go back in offset.)
 * NULL when it may follow the record before, else the reason. For a
 * record that is neither a piece nor after one flagged more (the others
 * go to rec_piece_check()). */
static inline const char *rec_order_after(const struct rec_order *o,
					  const rec_item *it, char *buf,
					  size_t size)
{
	if (o->source)
		return rec_source_next(o, it, buf, size);
	if (!o->have_prev || it->clip > o->clip ||
	    (it->clip == o->clip && it->segment > o->segment))
		return NULL;
	return rec_order_refusal(o->clip, o->segment, it, buf, size);
}

/* Makes it, accepted, the record before the next; for the same records
 * as rec_order_after() (the others go to rec_piece_note()). */
static inline void rec_order_note(struct rec_order *o, const rec_item *it)
{
	o->have_prev = 1;
	o->source = 0;
	o->clip = it->clip;
	o->segment = item_last_segment(it);
}

/* 1 when rec_piece_check() and rec_piece_note() take it: a piece, or a
 * record after one flagged more. */
static inline int rec_order_pieces(const struct rec_order *o,
				   const rec_item *it)
{
	return (o->open | it->flags) != 0;
}

/* "the more flag", "the cont flag" or "the more and cont flags", as
 * flags has them. */
const char *rec_piece_flag_names(uint32_t flags);

/* The reason why the piece flags of a record of type may not be there
 * (bits other than more and cont, or a type that does not come in
 * pieces), written into buf; NULL when they may. */
const char *rec_piece_flags_refusal(int type, uint32_t flags, char *buf,
				    size_t size);

/* For a record rec_order_pieces() takes, after rec_item_check(): the
 * rules of a piece's own fields (REC_E_FORMAT), then of its place after
 * the records before (REC_E_ORDER), with *why the reason; REC_OK when it
 * may follow them. Flags that may not be there are REC_E_FORMAT. */
int rec_piece_check(const struct rec_order *o, const rec_item *it,
		    const char **why, char *buf, size_t size);

/* Makes room in o to keep the key of it when it is flagged more: REC_OK
 * or REC_E_NOMEM. After it, rec_piece_note() cannot fail. */
int rec_piece_room(struct rec_order *o, const rec_item *it);

/* rec_order_note() for a record rec_order_pieces() takes. */
void rec_piece_note(struct rec_order *o, const rec_item *it);

/* The reason why the stream may not end here (an item's pieces go on),
 * written into buf; NULL when it may. */
const char *rec_piece_end_check(const struct rec_order *o, char *buf,
				size_t size);

/* Frees what o holds; o may be used again. */
void rec_order_free(struct rec_order *o);

#endif
