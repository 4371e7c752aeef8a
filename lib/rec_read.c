/*
 * rec_read.c - the reader of record streams (formats/record.md): takes
 * the input in large blocks, frames and checks each record in the order
 * the spec gives, and hands out pointers into its buffer.
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

/* The record at pos does not start with the magic (n bytes are shown). */
static int rd_bad_magic(rec_reader *r, size_t n)
{
	const unsigned char *p = r->buf + r->pos;
	char hex[16] = "";
	size_t len = 0;

	for (size_t i = 0; i < n && i < 4; i++)
		len += (size_t)snprintf(hex + len, sizeof(hex) - len, "%s%02x",
					i ? " " : "", p[i]);
	return rd_fail(r, REC_E_MAGIC, "bad magic %s (not a record stream, "
		       "or framing lost)", hex);
}

/* The flags a record may carry: none in header and trailer records, zstd
 * in data records, and from version 3 on the piece flags in audio and
 * features records. (A table, so that the check is one branch.) */
static unsigned allowed_flags(const struct rhdr *h)
{
	static const unsigned char by_type[REC_T_FWINDOWS + 1] = {
		[REC_T_AUDIO] = REC_F_ZSTD | REC_F_MORE | REC_F_CONT |
				REC_F_SHARED,
		[REC_T_FEATURES] = REC_F_ZSTD | REC_F_MORE | REC_F_CONT |
				   REC_F_SHARED,
		[REC_T_SKIPPED] = REC_F_ZSTD,
		[REC_T_WINDOWS] = REC_F_ZSTD | REC_F_SHARED,
		[REC_T_SOURCE] = REC_F_ZSTD,
		[REC_T_FWINDOWS] = REC_F_ZSTD,
	};
	unsigned by_version = h->version >= 5 ? 0xffu
			      : h->version >= 3 ? 0xffu & ~REC_F_SHARED
			      : REC_F_ZSTD;

	return by_type[h->type] & by_version;
}

/* Why the flags of h are not allowed_flags(h), in the spec's order:
 * unknown bits, any flag on a header or trailer, piece flags on a type
 * that has no pieces, piece flags in a record of a version before 3. */
static int rd_bad_flags(rec_reader *r, const struct rhdr *h)
{
	char why[256];
	const char *bad;

	if (h->flags & ~(REC_F_ZSTD | REC_F_MORE | REC_F_CONT | REC_F_SHARED))
		return rd_fail(r, REC_E_FORMAT, "unknown flags 0x%02x",
			       h->flags);
	if (h->type == REC_T_HEADER || h->type == REC_T_TRAILER ||
	    h->type == REC_T_RING)
		return rd_fail(r, REC_E_FORMAT, "a %s record with flags "
			       "0x%02x (%s records have flags 0)",
			       rec_type_name((int)h->type), h->flags,
			       h->type == REC_T_RING ? "ring"
			       : "header and trailer");
	if (h->flags & REC_F_SHARED)
		return rd_fail(r, REC_E_FORMAT, "the shared flag %s",
			       !rec_shareable((int)h->type)
			       ? "on a record type whose payload is never "
				 "shared" : "in a record marked format "
				 "version below 5");
	bad = rec_piece_flags_refusal((int)h->type, h->flags & ~REC_F_ZSTD,
				      why, sizeof(why));
	if (bad)
		return rd_fail(r, REC_E_FORMAT, "%s", bad);
	return rd_fail(r, REC_E_FORMAT, "%s in a record marked format "
		       "version %u (pieces are version 3)",
		       rec_piece_flag_names(h->flags), h->version);
}

/* Checks the fixed header of the record at buf + pos, in the order the
 * spec gives: magic, version, type (and the version it needs), flags,
 * the reserved byte, lengths against the caps. */
static int rd_check_rhdr(rec_reader *r, const struct rhdr *h)
{
	const unsigned char *p = r->buf + r->pos;

	if (memcmp(p, REC_MAGIC, 4) != 0)
		return rd_bad_magic(r, 4);
	if (h->version > REC_FORMAT_VERSION)
		return rd_fail(r, REC_E_VERSION, "format version %u is newer "
			       "than this reader's version %u", h->version,
			       REC_FORMAT_VERSION);
	if (h->version == 0)
		return rd_fail(r, REC_E_FORMAT, "invalid format version 0");
	if (h->type < REC_T_HEADER || h->type > REC_T_FWINDOWS)
		return rd_fail(r, REC_E_FORMAT, "unknown record type %u",
			       h->type);
	if (h->type == REC_T_FWINDOWS && h->version < 6)
		return rd_fail(r, REC_E_FORMAT, "a features-windows record "
			       "marked format version %u (features-windows "
			       "records are version 6)", h->version);
	if (h->type == REC_T_RING && h->version < 5)
		return rd_fail(r, REC_E_FORMAT, "a ring record marked format "
			       "version %u (ring records are version 5)",
			       h->version);
	if (h->type == REC_T_WINDOWS && h->version < 2)
		return rd_fail(r, REC_E_FORMAT, "a windows record marked "
			       "format version %u (windows records are "
			       "version 2)", h->version);
	if (h->type == REC_T_SOURCE && h->version < 4)
		return rd_fail(r, REC_E_FORMAT, "a source record marked "
			       "format version %u (source records are "
			       "version 4)", h->version);
	if (h->flags & ~allowed_flags(h))
		return rd_bad_flags(r, h);
	if (h->reserved != 0)
		return rd_fail(r, REC_E_FORMAT, "reserved byte is 0x%02x, "
			       "not 0", h->reserved);
	if (h->meta_len > REC_MAX_META)
		return rd_fail(r, REC_E_TOOBIG, "metadata length %" PRIu32
			       " over the cap of %u", h->meta_len,
			       REC_MAX_META);
	if (h->data_len > r->max_data)
		return rd_fail(r, REC_E_TOOBIG, "payload length %" PRIu32
			       " over the cap of %" PRIu64, h->data_len,
			       r->max_data);
	if (h->raw_len > r->max_data)
		return rd_fail(r, REC_E_TOOBIG, "raw payload length %" PRIu32
			       " over the cap of %" PRIu64, h->raw_len,
			       r->max_data);
	if (h->flags & REC_F_SHARED) {
		if (h->flags & REC_F_ZSTD)
			return rd_fail(r, REC_E_FORMAT, "a shared record "
				       "flagged zstd (shared payloads are "
				       "raw)");
		if (h->data_len != SHM_REF_SIZE)
			return rd_fail(r, REC_E_FORMAT, "a shared record with "
				       "%" PRIu32 " bytes of reference (must "
				       "be %u)", h->data_len, SHM_REF_SIZE);
		return REC_OK;
	}
	if (!(h->flags & REC_F_ZSTD) && h->raw_len != h->data_len)
		return rd_fail(r, REC_E_FORMAT, "raw length %" PRIu32
			       " differs from stored length %" PRIu32
			       " in an uncompressed record", h->raw_len,
			       h->data_len);
	return REC_OK;
}

/* The CRC the reading thread computed for the record at r->off, when it
 * framed the same record (same offset, same length): 1 and *crc set. */
/* The CRC32C of a record's header (its crc field taken as 0) and its
 * metadata, at p. */
static uint32_t head_meta_crc(const unsigned char *p, uint32_t meta_len)
{
	unsigned char head[REC_HDR_SIZE];

	memcpy(head, p, REC_HDR_SIZE);
	memset(head + 20, 0, 4);
	return crc32c(crc32c(0, head, REC_HDR_SIZE), p + REC_HDR_SIZE,
		      meta_len);
}

static int rd_check_crc(rec_reader *r, const struct rhdr *h)
{
	const unsigned char *p = r->buf + r->pos;
	uint32_t crc, hm = 0; /* hm: CRC of the header and the metadata */
	int have_hm = 0;

	r->have_data_crc = 0;
	if (!ra_crcs_find(&r->crcs, r->off, REC_HDR_SIZE +
			  (uint64_t)h->meta_len + h->data_len, &crc)) {
		hm = head_meta_crc(p, h->meta_len);
		have_hm = 1;
		crc = crc32c(hm, p + REC_HDR_SIZE + h->meta_len, h->data_len);
	}
	if (crc != h->crc)
		return rd_fail(r, REC_E_CRC, "checksum mismatch (stored "
			       "0x%08" PRIx32 ", computed 0x%08" PRIx32 ")",
			       h->crc, crc);
	if (r->want_data_crc && !(h->flags & REC_F_ZSTD)) {
		if (!have_hm)
			hm = head_meta_crc(p, h->meta_len);
		/* crc = hm * x^(8 data_len) + payload's CRC (mod P) */
		r->data_crc = crc ^ crc32c_combine(hm, 0, h->data_len);
		r->have_data_crc = 1;
	}
	return REC_OK;
}

/* Decompresses a zstd payload into zbuf; *data then points at it. */
static int rd_decompress(rec_reader *r, const struct rhdr *h,
			 const unsigned char **data)
{
	const unsigned char *src = *data;
	size_t fsize, got;

	if (r->dctx == NULL && (r->dctx = ZSTD_createDCtx()) == NULL)
		return rd_fail(r, REC_E_NOMEM, "out of memory for zstd");
	if (r->zcap < h->raw_len || r->zbuf == NULL) {
		size_t cap = h->raw_len ? h->raw_len : 1;
		unsigned char *nb = realloc(r->zbuf, cap);

		if (nb == NULL)
			return rd_fail(r, REC_E_NOMEM, "out of memory for a "
				       "payload of %" PRIu32 " bytes",
				       h->raw_len);
		r->zbuf = nb;
		r->zcap = cap;
	}
	fsize = ZSTD_findFrameCompressedSize(src, h->data_len);
	if (ZSTD_isError(fsize))
		return rd_fail(r, REC_E_ZSTD, "compressed payload is not a "
			       "zstd frame: %s", ZSTD_getErrorName(fsize));
	if (fsize != h->data_len)
		return rd_fail(r, REC_E_ZSTD, "compressed payload has %zu "
			       "bytes after its zstd frame",
			       h->data_len - fsize);
	got = ZSTD_decompressDCtx(r->dctx, r->zbuf, h->raw_len, src,
				  h->data_len);
	if (ZSTD_isError(got))
		return rd_fail(r, REC_E_ZSTD, "payload does not decompress to "
			       "%" PRIu32 " bytes: %s", h->raw_len,
			       ZSTD_getErrorName(got));
	if (got != h->raw_len)
		return rd_fail(r, REC_E_ZSTD, "payload decompresses to %zu "
			       "bytes, raw length says %" PRIu32, got,
			       h->raw_len);
	*data = r->zbuf;
	return REC_OK;
}

/* Walks the NUL-separated pairs of a header's metadata: checks them and,
 * when into is not NULL, appends them to it. */
static int rd_pairs(rec_reader *r, const unsigned char *meta, size_t len,
		    rec_header *into)
{
	const char *p = (const char *)meta, *end = p + len;
	size_t npairs = 0;

	while (p < end) {
		const char *k = p, *v;
		size_t kl = strlen(k), vl;

		if (!rec_key_valid(k, kl))
			return rd_fail(r, REC_E_FORMAT, "header pair %zu has "
				       "an invalid key (not [a-z0-9_]+)",
				       npairs);
		v = k + kl + 1;
		if (v >= end)
			return rd_fail(r, REC_E_FORMAT, "header key '%s' has "
				       "no value", k);
		vl = strlen(v);
		if (into && rec_header_append(into, k, kl, v, vl))
			return rd_fail(r, REC_E_NOMEM, "out of memory");
		p = v + vl + 1;
		npairs++;
	}
	return REC_OK;
}

/* Checks the header record (the first record) and keeps its pairs. */
static int rd_parse_header(rec_reader *r, const unsigned char *meta,
			   const struct rhdr *h)
{
	int err;

	if (h->data_len != 0 || h->raw_len != 0)
		return rd_fail(r, REC_E_FORMAT, "header record with a payload "
			       "of %" PRIu32 " bytes", h->raw_len);
	if (h->meta_len && meta[h->meta_len - 1] != '\0')
		return rd_fail(r, REC_E_FORMAT, "header metadata does not end "
			       "with a NUL");
	if ((err = rd_pairs(r, meta, h->meta_len, NULL)))
		return err;
	r->hdr = rec_header_new();
	if (r->hdr == NULL)
		return rd_fail(r, REC_E_NOMEM, "out of memory");
	return rd_pairs(r, meta, h->meta_len, r->hdr);
}

/* A record of exactly meta_len bytes of metadata and no payload (the
 * trailer, a ring record): REC_OK, or the refusal naming it as what. */
int rd_fixed_size(rec_reader *r, const struct rhdr *h, const char *what,
		  uint32_t meta_len)
{
	if (h->meta_len == meta_len && h->data_len == 0 && h->raw_len == 0)
		return REC_OK;
	return rd_fail(r, REC_E_FORMAT, "%s with %" PRIu32 " bytes of "
		       "metadata and %" PRIu32 " of payload (must be %" PRIu32
		       " and 0)", what, h->meta_len, h->raw_len, meta_len);
}

static int rd_check_trailer(rec_reader *r, const unsigned char *meta,
			    const struct rhdr *h)
{
	rec_trailer *t = &r->trailer;

	if (rd_fixed_size(r, h, "trailer", TRAILER_META))
		return r->state;
	t->n_records = get64(meta);
	t->n_items = get64(meta + 8);
	t->n_skipped = get64(meta + 16);
	t->checksum = get32(meta + 24);
	if (get32(meta + 28) != 0)
		return rd_fail(r, REC_E_FORMAT, "trailer reserved field is "
			       "not 0");
	if (t->n_records != r->ndata || t->n_items != r->nitems ||
	    t->n_skipped != r->nskipped)
		return rd_fail(r, REC_E_FORMAT, "trailer counts %" PRIu64
			       " records (%" PRIu64 " items, %" PRIu64
			       " skipped), the stream has %" PRIu64 " (%"
			       PRIu64 ", %" PRIu64 ")", t->n_records,
			       t->n_items, t->n_skipped, r->ndata,
			       r->nitems, r->nskipped);
	if (t->checksum != r->stream_crc)
		return rd_fail(r, REC_E_CRC, "stream checksum mismatch "
			       "(stored 0x%08" PRIx32 ", computed 0x%08"
			       PRIx32 "): records missing, duplicated or "
			       "reordered", t->checksum, r->stream_crc);
	return REC_OK;
}

/* The fixed part of a data record's metadata (REC_ITEM_META_SIZE bytes
 * at p) into *it. */
static void item_meta_get(const unsigned char *p, rec_item *it)
{
	it->clip = get64(p);
	it->offset = get64(p + 8);
	it->clip_samples = get64(p + 16);
	it->segment = get32(p + 24);
	it->label = (int32_t)get32(p + 28);
	it->sample_rate = get32(p + 32);
	it->split = p[36];
	it->dtype = p[37];
	it->key_len = get16(p + 38);
	it->dim0 = get32(p + 40);
	it->dim1 = get32(p + 44);
}

/* Checks a data or source record's metadata (and a source record's
 * pairs, at data) and fills *it (but for data). */
static int rd_check_item(rec_reader *r, const unsigned char *meta,
			 const unsigned char *data, const struct rhdr *h,
			 rec_item *it)
{
	char why[256];
	const char *bad;

	if (h->meta_len < REC_ITEM_META_SIZE)
		return rd_fail(r, REC_E_FORMAT, "%s record with %" PRIu32
			       " bytes of metadata (at least %u)",
			       rec_type_name((int)h->type), h->meta_len,
			       REC_ITEM_META_SIZE);
	memset(it, 0, sizeof(*it));
	it->type = (int)h->type;
	it->flags = h->flags & (REC_F_MORE | REC_F_CONT);
	item_meta_get(meta, it);
	if (h->meta_len != item_meta_size(it))
		return rd_fail(r, REC_E_FORMAT, "metadata length %" PRIu32
			       " is not 48 + key length %zu%s", h->meta_len,
			       it->key_len, item_has_windows(it->type) ?
			       " + 16" : "");
	it->key = (const char *)meta + REC_ITEM_META_SIZE;
	if (item_has_windows(it->type)) {
		const unsigned char *wf = meta + REC_ITEM_META_SIZE +
					  it->key_len;

		it->win_len = get32(wf);
		it->win_hop = get32(wf + 4);
		it->n_windows = get32(wf + 8);
		it->win_flags = get32(wf + 12);
	}
	bad = rec_item_check(it, h->raw_len, why, sizeof(why));
	if (bad == NULL && it->type == REC_T_SOURCE)
		bad = rec_source_pairs_check(data, h->raw_len, why,
					     sizeof(why));
	if (bad)
		return rd_fail(r, REC_E_FORMAT, "%s", bad);
	return REC_OK;
}

/*
 * Moves a payload back by up to 15 bytes onto the metadata before it
 * (already parsed and copied) so that it is aligned to 16 bytes: the
 * stream has no padding, and typed access to a misaligned array is
 * undefined behaviour. Skipped records' reasons are text and stay put.
 */
static const unsigned char *rd_align(const rec_item *it, unsigned char *data)
{
	size_t mis = (uintptr_t)data % PAYLOAD_ALIGN;

	if (mis == 0 || it->type == REC_T_SKIPPED || it->type == REC_T_SOURCE)
		return data;
	memmove(data - mis, data, it->data_len);
	return data - mis;
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

/* The checks of a piece, or of the record after one flagged more, and
 * the order's note of it. */
static int rd_piece(rec_reader *r, const rec_item *it)
{
	char why[256];
	const char *bad;
	int err = rec_piece_check(&r->order, it, &bad, why, sizeof(why));

	if (err)
		return rd_fail(r, err, "%s", bad);
	if (rec_piece_room(&r->order, it))
		return rd_fail(r, REC_E_NOMEM, "out of memory");
	rec_piece_note(&r->order, it);
	return REC_OK;
}

/* Checks a data record against the one before it and completes *it. */
static int rd_accept_item(rec_reader *r, const struct rhdr *h,
			  const unsigned char *data, rec_item *it)
{
	char why[256];
	const char *bad;
	int err;

	if (it->type == REC_T_SOURCE) {
		if ((bad = rec_source_place(&r->order, it, why, sizeof(why))))
			return rd_fail(r, REC_E_ORDER, "%s", bad);
		rec_source_note(&r->order, it);
	} else if (rec_order_pieces(&r->order, it)) {
		if ((err = rd_piece(r, it)))
			return err;
	} else if ((bad = rec_order_after(&r->order, it, why, sizeof(why)))) {
		return rd_fail(r, REC_E_ORDER, "%s", bad);
	} else {
		rec_order_note(&r->order, it);
	}
	/* The key is small: copy it out to terminate it, since the payload
	 * follows it in the buffer. */
	memcpy(r->key, it->key, it->key_len);
	r->key[it->key_len] = '\0';
	it->key = r->key;
	it->data_len = h->raw_len;
	if (r->shared)
		it->data = rd_shared_align(r, it, data);
	else
		it->data = data == r->zbuf || r->unaligned ? data
			   : rd_align(it, (unsigned char *)data);
	if (it->data == NULL)
		return rd_fail(r, REC_E_NOMEM, "out of memory for a payload "
			       "of %zu bytes", it->data_len);
	r->ndata++;
	if (h->type == REC_T_SKIPPED)
		r->nskipped++;
	else if (h->type != REC_T_SOURCE)
		r->nitems++;
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
