/*
 * rec_write_int.h - what the record writer's files share privately:
 * rec_write.c (records into the buffer, the buffer to the output) and
 * rec_write_shm.c (payloads in shared memory, formats/record.md version
 * 5). Not for tools/: their interface is rec.h.
 */
#ifndef MELPIPE_REC_WRITE_INT_H
#define MELPIPE_REC_WRITE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "rec.h"
#include "rec_int.h"
#include "rec_shm.h"

struct writebehind;

struct rec_writer {
	int fd;
	char *name;
	int level;

	unsigned char *buf;     /* records not yet written */
	size_t cap, len;
	ZSTD_CCtx *cctx;
	unsigned char *zbuf;    /* compressed payloads */
	size_t zcap;
	unsigned char *scratch; /* reserved payloads kept outside buf */
	size_t scap;

	/* rec_write_reserve() state: payload at res_ptr, res_len bytes */
	int reserved;
	unsigned char *res_ptr;
	size_t res_len;
	size_t key_hint;        /* last metadata length past the fixed part
				   (key, window fields): where to put a
				   payload */

	uint64_t nrec;          /* records written, header included */
	uint64_t ndata, nitems, nskipped, bytes;
	uint64_t inline_bytes;  /* rec_writer_inline_bytes() */
	uint32_t stream_crc;
	struct rec_order order; /* what the order rules need */
	int finished;
	int state;              /* REC_OK or sticky error */
	char detail[DETAIL_SIZE];
	struct writebehind *wb; /* NULL: write(2) in wr_flush, and buf is
				   the writer's; else buf is the ring's */
	int have_data_crc;      /* rec_write_crc(): the payload's CRC is */
	uint32_t data_crc;      /* known, the record's needs no pass */
	double t_wait;          /* rec_writer_wait() */

	/* the shared-memory path (rec_shm.h) */
	struct shm_wr shm;
	rec_reader *link;       /* rec_writer_link() */
	rec_lease *lease;       /* the lease rec_write_leased() writes */
	int res_shared;         /* the reservation is in the own ring */
	uint32_t res_slot;
	uint64_t res_off;
};


/* rec_write.c */

/* Sets the detail "NAME: record N: reason"; returns err. */
__attribute__((format(printf, 3, 4)))
int wr_fail(rec_writer *w, int err, const char *fmt, ...);
/* Hands the buffer to the output (or its writing thread). */
int wr_flush(rec_writer *w);
/* Makes the buffer being filled at least cap bytes. */
int wr_grow(rec_writer *w, size_t cap);
/* The metadata of the data record it at p. */
void item_meta_put(unsigned char *p, const rec_item *it);
/* Appends a record: its header, its metadata (it's, or meta_len bytes
 * at meta) and its payload at data. */
int wr_emit(rec_writer *w, struct rhdr *h, const rec_item *it,
	    const void *meta, const void *data);
/* Counts an accepted data or source record and notes its order. */
void wr_count(rec_writer *w, const rec_item *it);
/* Appends a data record with its payload at data (uncompressed). */
int wr_item(rec_writer *w, const rec_item *it, const void *data,
	    size_t data_len);

/* rec_write_shm.c */

/* The shared-memory path's state from the writer's options. */
void wr_shm_init(rec_writer *w, const rec_writer_opts *opts);
/* Whether a payload of len bytes of a record of this type may try the
 * shared path. */
int wr_shm_wants(const rec_writer *w, int type, size_t len);
/* Sends the payload of it by reference when it can: REC_OK when it went
 * so, 1 when it goes inline, or an error. */
int wr_shared(rec_writer *w, const rec_item *it, const void *data,
	      size_t len);
/* A reservation in the writer's own ring: REC_OK with res_ptr set, 1
 * when it goes in the buffer, or an error. */
int wr_reserve_shared(rec_writer *w, size_t data_len);
/* Commits that reservation (err: the item's check). */
int wr_commit_shared(rec_writer *w, const rec_item *it, int err);

#endif
