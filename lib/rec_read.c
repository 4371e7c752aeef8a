/*
 * rec_read.c - the reader of record streams (formats/record.md): takes
 * the input in large blocks, frames and checks each record in the order
 * the spec gives, and hands out pointers into its buffer. Here: the
 * handle (open, close, the accessors), the filling of the buffer, and the
 * framing of each record up to what it holds; the checks of a record's
 * fixed header, CRC and compression and of the stream's header and
 * trailer are in rec_read_check.c, a data record's metadata, order and
 * alignment in rec_read_item.c, payloads by reference in rec_read_shm.c.
 *
 * Streams carry gigabytes, so the reader fills a buffer of 1 MiB or more
 * with few read(2) calls, or takes the chunks a reading thread of its own
 * filled (readahead.h), and each record's CRC is computed once. The
 * format has no padding, so a payload can start at any byte; typed access
 * to a misaligned array is undefined behaviour (UBSan traps it), so
 * payloads are handed out 16-byte aligned: the reader moves a payload
 * back by up to 15 bytes over its own, already parsed, metadata, bytes
 * just touched, cheap next to the pipe's own copy.
 */
#include "rec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "crc32c.h"
#include "readahead.h"
#include "rec_int.h"
#include "rec_read_int.h"
#include "rec_shm.h"
#include "xio.h"

#define MIN_READ (64u << 10)    /* never read(2) into less room than this */

/* Sets the sticky error and its sentence: "NAME: record N at byte B:
 * reason". Returns err. */
int rd_fail(rec_reader *r, int err, const char *fmt, ...)
{
	char reason[REASON_SIZE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	snprintf(r->detail, sizeof(r->detail), "%s: record %" PRIu64
		 " at byte %" PRIu64 ": %s", r->name, r->nrec, r->off,
		 reason);
	r->state = err;
	return err;
}

static int rd_io_fail(rec_reader *r, int neg_errno)
{
	return rd_fail(r, REC_E_IO, "read error: %s", strerror(-neg_errno));
}

/* Grows the own buffer (not current: buf is left alone). */
static int rd_grow_own(rec_reader *r, size_t cap)
{
	unsigned char *nb = realloc(r->own, cap);

	if (nb == NULL)
		return rd_fail(r, REC_E_NOMEM, "out of memory for a buffer "
			       "of %zu bytes", cap);
	r->own = nb;
	r->own_cap = cap;
	return REC_OK;
}

/* Grows the own buffer when it is the current one. */
static int rd_grow(rec_reader *r, size_t cap)
{
	int err = rd_grow_own(r, cap);

	if (err == REC_OK) {
		r->buf = r->own;
		r->cap = r->own_cap;
	}
	return err;
}

/* Makes the reader's own buffer current, holding the unconsumed bytes,
 * with room for at least need bytes. */
static int rd_to_own(rec_reader *r, size_t need)
{
	size_t left = r->end - r->pos;

	if (r->ra_cur < 0 && r->pos > 0) {
		memmove(r->own, r->own + r->pos, left);
	} else if (r->ra_cur >= 0) {
		if (r->own_cap < need && rd_grow_own(r, need) < 0)
			return REC_E_NOMEM;
		memcpy(r->own, r->buf + r->pos, left);
		ra_release(r->ra, r->ra_cur);
		r->ra_cur = -1;
	}
	if (r->own_cap < need && rd_grow_own(r, need) < 0)
		return REC_E_NOMEM;
	r->buf = r->own;
	r->cap = r->own_cap;
	r->pos = 0;
	r->end = left;
	return REC_OK;
}

/*
 * rd_fill with read-ahead: takes slots until n bytes are unconsumed. A
 * partial record of at most RA_HEAD bytes moves in front of the next
 * chunk; a longer one is gathered in the own buffer, which grows as
 * bytes arrive (never to a corrupt length at once).
 */
static int rd_fill_ra(rec_reader *r, size_t n)
{
	while (r->end - r->pos < n && !r->eof) {
		size_t left = r->end - r->pos;
		struct ra_chunk c;
		int err;

		ra_take(r->ra, &c, &r->t_wait);
		ra_crcs_append(&r->crcs, c.crcs);
		if (c.err || c.eof) {
			ra_release(r->ra, c.slot);
			if (c.err)
				return rd_io_fail(r, -c.err);
			r->eof = 1;
			break;
		}
		if (left <= RA_HEAD && n <= RA_HEAD + RA_CHUNK &&
		    (left + c.len >= n || left <= c.len)) {
			/* the common case: continue in the new chunk. A
			 * record that still lacks bytes moves on again, but
			 * only while the bytes moved are no more than those
			 * that came (a slow pipe's small reads would copy a
			 * long record over and over); else it is gathered. */
			memcpy(c.mem + RA_HEAD - left, r->buf + r->pos, left);
			ra_release(r->ra, r->ra_cur);
			r->ra_cur = c.slot;
			r->buf = c.mem;
			r->cap = RA_HEAD + RA_CHUNK;
			r->pos = RA_HEAD - left;
			r->end = RA_HEAD + c.len;
			continue;
		}
		/* gather: own buffer, doubling as bytes arrive */
		size_t want = left + c.len;

		if (r->ra_cur >= 0 || r->own_cap < want ||
		    r->own_cap - r->end < c.len) {
			size_t cap = r->own_cap;

			while (cap < want)
				cap *= 2;
			if ((err = rd_to_own(r, cap)) != REC_OK) {
				ra_release(r->ra, c.slot);
				return err;
			}
		}
		memcpy(r->buf + r->end, c.mem + RA_HEAD, c.len);
		r->end += c.len;
		ra_release(r->ra, c.slot);
	}
	return r->end - r->pos >= n ? REC_OK : 1;
}

/*
 * Makes at least n unconsumed bytes available at buf + pos, reading in
 * large blocks. Returns REC_OK, 1 when the input ended first (end - pos
 * then tells how many there are), or an error.
 */
static int rd_fill(rec_reader *r, size_t n)
{
	if (r->end - r->pos >= n)
		return REC_OK;
	if (r->ra)
		return rd_fill_ra(r, n);
	/* Move what is left to the front when the room after it is short. */
	if (r->cap - r->pos < n || r->cap - r->end < MIN_READ) {
		memmove(r->buf, r->buf + r->pos, r->end - r->pos);
		r->end -= r->pos;
		r->pos = 0;
	}
	while (r->end - r->pos < n && !r->eof) {
		ssize_t got;

		/* Grow by doubling as bytes arrive rather than to n at once,
		 * so that a corrupt length on a short input costs memory in
		 * proportion to the input, not to the length (pos is 0
		 * here: the room after pos was short, so it was moved). */
		if (r->end == r->cap) {
			size_t want = r->cap <= n / 2 ? 2 * r->cap : n;
			int err = rd_grow(r, want);

			if (err)
				return err;
		}
		double t0 = mono_now();

		got = xio_read_some(r->fd, r->buf + r->end, r->cap - r->end);
		r->t_wait += mono_now() - t0;
		if (got < 0)
			return rd_io_fail(r, (int)got);
		if (got == 0)
			r->eof = 1;
		r->end += (size_t)got;
	}
	return r->end - r->pos >= n ? REC_OK : 1;
}

/* After the trailer: the input must end here. */
static int rd_expect_eof(rec_reader *r)
{
	int st = rd_fill(r, 1);

	if (st < 0)
		return st;
	if (st == 0) {
		const unsigned char *p = r->buf + r->pos;
		int another = r->end - r->pos >= 4 &&
			      memcmp(p, REC_MAGIC, 4) == 0;

		return rd_fail(r, REC_E_TRAILING, "data after the trailer%s",
			       another ? " (another stream follows: streams "
			       "run together are not merged)" : "");
	}
	r->state = REC_END;
	return REC_END;
}

/*
 * The input ended before the stream did (what: how). From a pipe that is
 * the stage before stopping, killed or failing, which a format error alone
 * does not say: the reason names it, by the header's producer (the
 * program that wrote the stream), so that a stage after a killed one
 * points at the culprit. A file is said as it is.
 */
static int rd_truncated(rec_reader *r, const char *what)
{
	const char *prod = r->hdr ? rec_header_get(r->hdr, "producer") : NULL;
	struct stat st;
	char who[64] = "";

	if (fstat(r->fd, &st) != 0 || !S_ISFIFO(st.st_mode))
		return rd_fail(r, REC_E_TRUNC, "%s", what);
	if (prod && *prod)
		snprintf(who, sizeof(who), ", %.*s,", (int)strcspn(prod, " "),
			 prod);
	return rd_fail(r, REC_E_TRUNC, "%s: the stream stopped short, most "
		       "likely because the stage before%s stopped (killed, or "
		       "failed with its own message)", what, who);
}

/* Reports why the input ended before a whole record header: a few bytes
 * of garbage are not a record stream rather than a truncated one. */
static int rd_short_header(rec_reader *r)
{
	size_t n = r->end - r->pos;
	char what[128];

	if (memcmp(r->buf + r->pos, REC_MAGIC, n < 4 ? n : 4) != 0)
		return rd_bad_magic(r, n);
	if (r->end == r->pos && r->nrec == 0)
		return rd_fail(r, REC_E_TRUNC, "empty input (no header "
			       "record)");
	if (r->end == r->pos)
		snprintf(what, sizeof(what), "input ended before the trailer "
			 "(after %" PRIu64 " data %s)", r->ndata,
			 r->ndata == 1 ? "record" : "records");
	else
		snprintf(what, sizeof(what), "input ended inside a record "
			 "header (%zu of %u bytes)", r->end - r->pos,
			 REC_HDR_SIZE);
	return rd_truncated(r, what);
}

/*
 * Reads the next record into the buffer and checks its framing: header
 * fields, lengths, CRC, decompression. On success *meta and *data point
 * at its metadata and (uncompressed) payload; the record stays unconsumed.
 */
static int rd_frame(rec_reader *r, struct rhdr *h, unsigned char **meta,
		    const unsigned char **data)
{
	size_t total;
	int st;

	st = rd_fill(r, REC_HDR_SIZE);
	if (st)
		return st < 0 ? st : rd_short_header(r);
	rhdr_get(r->buf + r->pos, h);
	if ((st = rd_check_rhdr(r, h)))
		return st;
	total = REC_HDR_SIZE + (size_t)h->meta_len + h->data_len;
	st = rd_fill(r, total);
	if (st < 0)
		return st;
	if (st == 1) {
		char what[128];

		snprintf(what, sizeof(what), "input ended inside the record "
			 "(%zu of %zu bytes)", r->end - r->pos, total);
		return rd_truncated(r, what);
	}
	*meta = r->buf + r->pos + REC_HDR_SIZE;
	*data = *meta + h->meta_len;
	if (h->flags & REC_F_SHARED)
		return rd_shared(r, h, data);
	if ((st = rd_check_crc(r, h)))
		return st;
	if (h->flags & REC_F_ZSTD)
		return rd_decompress(r, h, data);
	return REC_OK;
}

/*
 * Reads, checks and consumes one record: the header (its pairs go to
 * r->hdr), a data record (into *it) or the trailer, after which the input
 * must end (REC_END).
 */
static int rd_record(rec_reader *r, rec_item *it)
{
	struct rhdr h = { 0 };
	unsigned char *meta = NULL, le[4];
	const unsigned char *data = NULL;
	int err;

	/* the record handed out before: its slot, its deferred CRC */
	if ((err = rd_shared_done(r)))
		return err;
again:
	if ((err = rd_frame(r, &h, &meta, &data)))
		return err;
	/* Where a record may be is checked before what it holds. */
	if (r->nrec == 0 && h.type != REC_T_HEADER)
		return rd_fail(r, REC_E_ORDER, "the first record is of type "
			       "%s, not a header", rec_type_name((int)h.type));
	if (r->nrec > 0 && h.type == REC_T_HEADER)
		return rd_fail(r, REC_E_ORDER, "a second header record");
	if (h.type == REC_T_RING) {
		if ((err = rd_ring(r, meta, &h)))
			return err;
		r->pos += REC_HDR_SIZE + (size_t)h.meta_len;
		r->off += REC_HDR_SIZE + (uint64_t)h.meta_len;
		goto again;
	}
	if (h.type == REC_T_TRAILER) {
		char why[256];
		const char *bad = rec_piece_end_check(&r->order, why,
						      sizeof(why));

		if (bad)
			return rd_fail(r, REC_E_ORDER, "%s", bad);
	}
	if (h.type == REC_T_HEADER)
		err = rd_parse_header(r, meta, &h);
	else if (h.type == REC_T_TRAILER)
		err = rd_check_trailer(r, meta, &h);
	else if (!(err = rd_check_item(r, meta, data, &h, it)))
		err = rd_accept_item(r, &h, data, it);
	if (err)
		return err;
	if (h.type != REC_T_TRAILER) {
		put32(le, h.crc);
		r->stream_crc = crc32c(r->stream_crc, le, 4);
	}
	r->pos += REC_HDR_SIZE + (size_t)h.meta_len + h.data_len;
	r->off += REC_HDR_SIZE + (uint64_t)h.meta_len + h.data_len;
	r->inline_bytes += REC_HDR_SIZE + (uint64_t)h.meta_len +
			   (h.flags & REC_F_SHARED ? h.raw_len : h.data_len);
	r->nrec++;
	if (h.type == REC_T_TRAILER)
		return rd_expect_eof(r);
	return REC_OK;
}

int rec_reader_open(rec_reader **out, int fd, const rec_reader_opts *opts)
{
	rec_reader *r;
	const char *name = opts && opts->name ? opts->name : "input";
	rec_item it;
	int e;

	if (out == NULL)
		return REC_E_INVAL;
	*out = r = calloc(1, sizeof(*r));
	if (r == NULL)
		return REC_E_NOMEM;
	r->fd = fd;
	r->max_data = opts && opts->max_data ? opts->max_data
		      : REC_DEFAULT_MAX_DATA;
	r->unaligned = opts && opts->unaligned;
	r->want_data_crc = opts && opts->data_crc;
	r->defer_crc = opts && opts->shm && opts->defer_shm_crc;
	r->shm.on = opts && opts->shm;
	r->name_buf = strdup(name);
	r->name = r->name_buf ? r->name_buf : "input";
	r->ra_cur = -1;
	r->own_cap = r->cap = DEFAULT_BUFFER;
	r->own = r->buf = malloc(r->cap);
	r->key = malloc(MAX_KEY + 1);
	if (r->name_buf == NULL || r->buf == NULL || r->key == NULL)
		return rd_fail(r, REC_E_NOMEM, "out of memory");
	xio_grow_pipe(fd);
	if (opts && opts->read_ahead &&
	    (e = ra_new(&r->ra, fd, r->max_data)) != 0)
		return rd_fail(r, e == -ENOMEM ? REC_E_NOMEM : REC_E_IO,
			       "cannot start reading ahead: %s", strerror(-e));
	/* it receives a data record that comes first, to be refused. */
	return rd_record(r, &it);
}

const rec_header *rec_reader_header(const rec_reader *r)
{
	return r ? r->hdr : NULL;
}

int rec_read(rec_reader *r, rec_item *it)
{
	if (r == NULL || it == NULL)
		return REC_E_INVAL;
	if (r->state != REC_OK)
		return r->state;
	return rd_record(r, it);
}

const rec_trailer *rec_reader_trailer(const rec_reader *r)
{
	return r && r->state == REC_END ? &r->trailer : NULL;
}

uint64_t rec_reader_offset(const rec_reader *r)
{
	return r ? r->off : 0;
}

uint64_t rec_reader_inline_bytes(const rec_reader *r)
{
	return r ? r->inline_bytes : 0;
}

uint64_t rec_reader_count(const rec_reader *r)
{
	return r ? r->ndata : 0;
}

int rec_reader_data_crc(const rec_reader *r, uint32_t *crc)
{
	if (r == NULL || crc == NULL || r->state || !r->have_data_crc)
		return 0;
	*crc = r->data_crc;
	return 1;
}

double rec_reader_wait(const rec_reader *r)
{
	return r ? r->t_wait : 0.0;
}

const char *rec_reader_detail(const rec_reader *r)
{
	return r ? r->detail : "";
}

void rec_reader_close(rec_reader *r)
{
	if (r == NULL)
		return;
	shm_rd_free(&r->shm);
	ra_free(r->ra);
	ra_crcs_free(&r->crcs);
	free(r->name_buf);
	free(r->own);
	free(r->key);
	free(r->zbuf);
	ZSTD_freeDCtx(r->dctx);
	rec_header_free(r->hdr);
	rec_order_free(&r->order);
	free(r);
}
