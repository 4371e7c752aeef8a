/*
 * readahead.h - a thread that reads a file descriptor ahead of its
 * consumer into a ring of large chunks, so that the read(2) copies
 * overlap the consumer's work: the record reader's read_ahead option.
 *
 * The thread reads into the chunks in stream order; the consumer takes
 * them in the same order (ra_take) and gives each back (ra_release) once
 * it is done with its bytes, which it may parse where they landed. Before
 * each chunk's bytes there are RA_HEAD bytes of room, where the consumer
 * may put the unconsumed end of the chunk before (a partial record), so
 * that the record continues in one piece.
 *
 * While the consumer is the slower side, the thread also follows the
 * records' framing and checksums each record as its bytes arrive, still
 * in this core's cache; the consumer then looks the CRC up instead of
 * computing it (ra_crcs_find). The thread follows lengths only while
 * headers look sound (magic, caps): after anything odd it stops, and the
 * consumer computes the CRCs itself, reaching the same verdicts.
 *
 * Errors are values: -errno from ra_new(), a chunk's err for a failed
 * read. Nothing here prints or exits.
 */
#ifndef MELPIPE_READAHEAD_H
#define MELPIPE_READAHEAD_H

#include <stddef.h>
#include <stdint.h>

#define RA_HEAD (1u << 20)  /* room before a chunk for a partial record */
#define RA_CHUNK (1u << 20) /* the most one read(2) into a chunk brings */

/* A record's CRC as the reading thread computed it: the record at stream
 * offset off, total bytes long (header included). */
struct ra_crc {
	uint64_t off;
	uint32_t total, crc;
};

/* CRCs in stream order: entries [head, n) are still to be looked up.
 * All zero is an empty queue. */
struct ra_crcs {
	struct ra_crc *v;
	size_t n, cap, head;
};

/* Appends one entry. Returns 0, or -1 when out of memory (the queue is
 * unchanged). */
int ra_crcs_push(struct ra_crcs *c, uint64_t off, uint32_t total,
		 uint32_t crc);

/* Appends the entries of from still to be looked up to to, in order,
 * until one finds no memory: the records left out are checksummed by the
 * consumer instead. */
void ra_crcs_append(struct ra_crcs *to, const struct ra_crcs *from);

/* Frees the entries; c is an empty queue again. Accepts an empty one. */
void ra_crcs_free(struct ra_crcs *c);

/* The CRC the reading thread computed for the record at stream offset off,
 * total bytes long, when it framed the same record (same offset, same
 * length): 1 and *crc set, else 0. Entries before off are dropped: the
 * consumer asks in stream order. Once per record, hence inline. */
static inline int ra_crcs_find(struct ra_crcs *c, uint64_t off,
			       uint64_t total, uint32_t *crc)
{
	while (c->head < c->n && c->v[c->head].off < off)
		c->head++;
	if (c->head == c->n || c->v[c->head].off != off ||
	    c->v[c->head].total != total)
		return 0;
	*crc = c->v[c->head++].crc;
	if (c->head == c->n)
		c->head = c->n = 0;
	return 1;
}

/* A chunk lent to the consumer by ra_take(). */
struct ra_chunk {
	unsigned char *mem;   /* RA_HEAD bytes of room, then len bytes read;
				 the consumer may write anywhere in it */
	size_t len;
	int err;              /* errno of a failed read: the last chunk */
	int eof;              /* end of input: the last chunk (len 0) */
	const struct ra_crcs *crcs; /* of the records that end in it */
	int slot;             /* what to give to ra_release() */
};

struct readahead;

/* Starts the reading thread on fd (not closed here; it must stay open
 * until ra_free()). max_data is the payload cap: a record header over it
 * stops the thread's framing. Returns 0 and sets *out, or -errno. */
int ra_new(struct readahead **out, int fd, uint64_t max_data);

/* Waits for the next chunk in stream order and lends it to the caller
 * until ra_release(ra, c->slot); adds the seconds it waited to *waited.
 * After a chunk with err or eof the thread has stopped: take no more. */
void ra_take(struct readahead *ra, struct ra_chunk *c, double *waited);

/* Gives a chunk back to the thread, which may then read into it again.
 * A slot below 0 (none) is ignored. */
void ra_release(struct readahead *ra, int slot);

/* Stops the thread, even while it waits on a pipe that neither brings
 * bytes nor closes, and frees everything; accepts NULL. */
void ra_free(struct readahead *ra);

#endif
