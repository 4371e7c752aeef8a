/*
 * rec_read_int.h - what the record reader's files share privately:
 * rec_read.c (the handle, the buffer, framing), rec_read_check.c (a
 * record's fixed header, CRC and compression; the header and trailer
 * records), rec_read_item.c (data records) and rec_read_shm.c (payloads
 * by reference, formats/record.md version 5). Not for tools/: their
 * interface is rec.h.
 */
#ifndef MELPIPE_REC_READ_INT_H
#define MELPIPE_REC_READ_INT_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "readahead.h"
#include "rec.h"
#include "rec_int.h"
#include "rec_shm.h"

struct rec_reader {
	int fd;
	const char *name;     /* name_buf, or a constant when out of memory */
	char *name_buf;
	uint64_t max_data;
	int unaligned;        /* hand payloads out where they are */
	int want_data_crc;    /* derive each payload's CRC (data_crc) */
	int have_data_crc;    /* data_crc is the last record's */
	uint32_t data_crc;

	unsigned char *buf;   /* bytes [pos, end) are read, not consumed */
	size_t cap, pos, end;
	int eof;
	uint64_t off;         /* stream offset of buf[pos] */
	uint64_t inline_bytes; /* rec_reader_inline_bytes() */
	unsigned char *own;   /* buf when it is not a read-ahead slot */
	size_t own_cap;
	struct readahead *ra; /* NULL: read(2) in rd_fill */
	int ra_cur;           /* the slot buf is in, -1: own */
	struct ra_crcs crcs;  /* CRCs from the reading thread, in order */
	double t_wait;        /* rec_reader_wait() */

	uint64_t nrec;        /* records consumed, header included */
	uint64_t ndata, nitems, nskipped;
	uint32_t stream_crc;
	struct rec_order order; /* what the order rules need */

	rec_header *hdr;
	rec_trailer trailer;
	ZSTD_DCtx *dctx;
	unsigned char *zbuf;  /* decompressed payloads */
	size_t zcap;
	char *key;            /* the current key, NUL-terminated */

	int state;            /* REC_OK, or sticky REC_END / error */
	char detail[DETAIL_SIZE];
	struct shm_rd shm;    /* rings offered (rec_shm.h) */
	int shared;           /* the record being read came by reference */
	int defer_crc;        /* defer_shm_crc: a payload by reference is
				 not hashed here */
	int crc_due;          /* the last record's payload is not checked
				 yet: crc_want, at due_ptr (due_len bytes)
				 in ring due_ring's slot due_slot */
	uint32_t crc_want, due_ring, due_slot;
	const unsigned char *due_ptr;
	uint64_t due_len;
};

/* rec_read.c */

/* Sets the sticky error and its sentence: "NAME: record N at byte B:
 * reason". Returns err. */
__attribute__((format(printf, 3, 4)))
int rd_fail(rec_reader *r, int err, const char *fmt, ...);

/* rec_read_check.c: each returns REC_OK, else the error (set by
 * rd_fail). */

/* The record at pos does not start with the magic (n bytes are shown):
 * REC_E_MAGIC. */
int rd_bad_magic(rec_reader *r, size_t n);
/* The fixed header h of the record at buf + pos, in the spec's order:
 * magic, version, type, flags, the reserved byte, lengths. */
int rd_check_rhdr(rec_reader *r, const struct rhdr *h);
/* The CRC of the whole record at buf + pos (the reading thread's when it
 * has it); with want_data_crc, the payload's CRC derived into data_crc. */
int rd_check_crc(rec_reader *r, const struct rhdr *h);
/* Decompresses a zstd payload into zbuf; *data then points at it. */
int rd_decompress(rec_reader *r, const struct rhdr *h,
		  const unsigned char **data);
/* The header record (its metadata at meta): its pairs, kept in r->hdr. */
int rd_parse_header(rec_reader *r, const unsigned char *meta,
		    const struct rhdr *h);
/* A record of fixed metadata and no payload (what: "ring record"):
 * REC_OK, else the error. */
int rd_fixed_size(rec_reader *r, const struct rhdr *h, const char *what,
		  uint32_t meta_len);
/* The trailer (its metadata at meta), into r->trailer: its counts and
 * checksum against the records read. */
int rd_check_trailer(rec_reader *r, const unsigned char *meta,
		     const struct rhdr *h);

/* rec_read_item.c */

/* Checks a data or source record's metadata (and a source record's
 * pairs, at data) and fills *it (but for data). */
int rd_check_item(rec_reader *r, const unsigned char *meta,
		  const unsigned char *data, const struct rhdr *h,
		  rec_item *it);
/* Checks a data record against the one before it (order, pieces) and
 * completes *it: its key terminated, its payload aligned, the counts. */
int rd_accept_item(rec_reader *r, const struct rhdr *h,
		   const unsigned char *data, rec_item *it);

/* rec_read_shm.c */

/* A shared record's payload (h: its header, at r->buf + r->pos): resolves
 * the reference and checks the record's CRC where the payload lies, or
 * with defer_crc leaves the payload's for the caller; *data points there. */
int rd_shared(rec_reader *r, const struct rhdr *h, const unsigned char **data);
/* A payload in a ring as the caller may take it: where it lies, or
 * copied to an aligned buffer. NULL when out of memory. */
const void *rd_shared_align(rec_reader *r, const rec_item *it,
			    const unsigned char *data);
/* A ring record, its metadata at meta: checked, its ring attached. */
int rd_ring(rec_reader *r, const unsigned char *meta, const struct rhdr *h);
/* Before the next record: a deferred payload CRC the caller did not take
 * is checked now (REC_OK or the error), and the payload's slot released. */
int rd_shared_done(rec_reader *r);

#endif
