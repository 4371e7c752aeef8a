/*
 * rec_read_check.c - the reader's checks of what every record and the
 * stream's two ends must be (formats/record.md): a record's fixed header
 * (magic, version, type, flags, the reserved byte, lengths against the
 * caps), its CRC (or the one the reading thread computed), a zstd
 * payload's frame and length as it is decompressed, the header record's
 * pairs and the trailer's counts and stream checksum. Each refusal is an
 * error code and a sentence, through rd_fail().
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "crc32c.h"
#include "readahead.h"
#include "rec.h"
#include "rec_int.h"
#include "rec_read_int.h"
#include "rec_shm.h"

/* The record at pos does not start with the magic (n bytes are shown). */
int rd_bad_magic(rec_reader *r, size_t n)
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
int rd_check_rhdr(rec_reader *r, const struct rhdr *h)
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

int rd_check_crc(rec_reader *r, const struct rhdr *h)
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
int rd_decompress(rec_reader *r, const struct rhdr *h,
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
int rd_parse_header(rec_reader *r, const unsigned char *meta,
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

int rd_check_trailer(rec_reader *r, const unsigned char *meta,
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
