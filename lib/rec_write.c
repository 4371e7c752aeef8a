/*
 * rec_write.c - the writer of record streams (formats/record.md):
 * gathers records in a large buffer and writes it in one call, checking
 * each record as a reader would.
 *
 * Streams carry gigabytes: payloads larger than the buffer go to
 * writev(2) beside it instead of being copied, a producer may compute a
 * payload in place (rec_write_reserve/commit), each record's CRC is
 * computed once (or combined from a payload CRC the caller has), and with
 * write_behind the buffers go to a thread of the writer's own
 * (writebehind.h). Reserved payloads start 16-byte aligned and move into
 * place at commit, a copy of bytes just touched.
 */
#include "rec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <zstd.h>

#include "crc32c.h"
#include "rec_int.h"
#include "rec_write_int.h"
#include "writebehind.h"
#include "xio.h"

int wr_fail(rec_writer *w, int err, const char *fmt, ...)
{
	char reason[REASON_SIZE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	snprintf(w->detail, sizeof(w->detail), "%s: record %" PRIu64 ": %s",
		 w->name ? w->name : "output", w->nrec, reason);
	return err;
}

/* A failed write leaves a partial stream: every later call fails too. */
static int wr_io(rec_writer *w, int neg_errno)
{
	snprintf(w->detail, sizeof(w->detail), "%s: write error: %s",
		 w->name ? w->name : "output", strerror(-neg_errno));
	w->state = neg_errno == -EPIPE ? REC_E_EPIPE : REC_E_IO;
	return w->state;
}

int wr_flush(rec_writer *w)
{
	int e;

	w->shm.pending = 0;
	if (w->len == 0)
		return w->wb && (e = wb_status(w->wb, NULL)) ? wr_io(w, e)
		       : REC_OK;
	if (w->wb) {
		e = wb_submit(w->wb, w->len, &w->t_wait);
		w->buf = wb_buf(w->wb, &w->cap);
	} else {
		double t0 = mono_now();

		e = xio_write_all(w->fd, w->buf, w->len);
		w->t_wait += mono_now() - t0;
	}
	w->len = 0;
	return e ? wr_io(w, e) : REC_OK;
}

/* wr_flush, and with write-behind also waits until all is written. */
static int wr_flush_all(rec_writer *w)
{
	int e = wr_flush(w);

	double t0;

	if (e || w->wb == NULL)
		return e;
	t0 = mono_now();
	e = wb_drain(w->wb);
	w->t_wait += mono_now() - t0;
	return e ? wr_io(w, e) : REC_OK;
}

/* Fills in the record header at p (24 bytes) for the metadata after it
 * and the payload at data, computes the CRC, updates the stream CRC. */
static void wr_seal(rec_writer *w, unsigned char *p, struct rhdr *h,
		    const void *data)
{
	unsigned char le[4];
	uint32_t crc;

	h->version = rec_version(h->type, h->flags);
	h->reserved = 0;
	h->crc = 0;
	rhdr_put(p, h);
	crc = crc32c(0, p, REC_HDR_SIZE + (size_t)h->meta_len);
	if (w->have_data_crc && !(h->flags & REC_F_ZSTD))
		crc = crc32c_combine(crc, w->data_crc, h->data_len);
	else
		crc = crc32c(crc, data, h->data_len);
	put32(p + 20, crc);
	w->bytes += REC_HDR_SIZE + (uint64_t)h->meta_len + h->data_len;
	if (h->type == REC_T_RING) /* outside the count and the checksum */
		return;
	w->inline_bytes += REC_HDR_SIZE + (uint64_t)h->meta_len + h->data_len;
	if (h->type != REC_T_TRAILER) {
		put32(le, crc);
		w->stream_crc = crc32c(w->stream_crc, le, 4);
	}
	w->nrec++;
}

/* Writes the buffer and a payload beside it in one writev(2) call: for
 * payloads larger than the buffer, which are not copied. */
static int wr_flush_with(rec_writer *w, const void *data, size_t len)
{
	struct iovec iov[2] = {
		{ .iov_base = w->buf, .iov_len = w->len },
		{ .iov_base = (void *)data, .iov_len = len },
	};
	double t0;
	int err;

	if (w->wb) {
		/* the payload is the caller's: written before return */
		if ((err = wr_flush_all(w)))
			return err;
		iov[0].iov_len = 0;
	}
	t0 = mono_now();
	err = xio_writev_all(w->fd, iov, 2);
	w->t_wait += mono_now() - t0;
	w->len = 0;
	if (w->wb && !err)
		wb_wrote(w->wb, len);
	return err ? wr_io(w, err) : REC_OK;
}

/* Makes the buffer being filled at least cap bytes, keeping its
 * contents. */
int wr_grow(rec_writer *w, size_t cap)
{
	unsigned char *nb;

	if (w->wb) {
		nb = wb_grow(w->wb, w->len, &cap);
	} else if ((nb = malloc(cap)) != NULL) {
		memcpy(nb, w->buf, w->len);
		free(w->buf);
	}
	if (nb == NULL)
		return wr_fail(w, REC_E_NOMEM, "out of memory");
	w->buf = nb;
	w->cap = cap;
	return REC_OK;
}

/* Writes the metadata of the data record it, item_meta_size(it) bytes,
 * at p. */
void item_meta_put(unsigned char *p, const rec_item *it)
{
	put64(p, it->clip);
	put64(p + 8, it->offset);
	put64(p + 16, it->clip_samples);
	put32(p + 24, it->segment);
	put32(p + 28, (uint32_t)it->label);
	put32(p + 32, it->sample_rate);
	p[36] = (unsigned char)it->split;
	p[37] = (unsigned char)it->dtype;
	put16(p + 38, (uint16_t)it->key_len);
	put32(p + 40, it->dim0);
	put32(p + 44, it->dim1);
	memcpy(p + 48, it->key, it->key_len);
	if (item_has_windows(it->type)) {
		p += 48 + it->key_len;
		put32(p, it->win_len);
		put32(p + 4, it->win_hop);
		put32(p + 8, it->n_windows);
		put32(p + 12, it->win_flags);
	}
}

/*
 * Appends a record: its header and metadata (it's fields for a data
 * record, else the meta_len bytes at meta) go into the buffer; its stored
 * payload, data_len bytes at data, is copied after them when the record
 * fits in the buffer, else written from where it is.
 */
int wr_emit(rec_writer *w, struct rhdr *h, const rec_item *it,
		   const void *meta, const void *data)
{
	size_t head = REC_HDR_SIZE + (size_t)h->meta_len;
	size_t total = head + h->data_len;
	unsigned char *p;
	int err;

	if (total > w->cap - w->len && (err = wr_flush(w)))
		return err;
	/* A head larger than a buffer: a large stream header, or a long key
	 * in a small buffer. */
	if (head > w->cap && (err = wr_grow(w, head)))
		return err;
	p = w->buf + w->len;
	if (it)
		item_meta_put(p + REC_HDR_SIZE, it);
	else if (h->meta_len)
		memcpy(p + REC_HDR_SIZE, meta, h->meta_len);
	if (total > w->cap - w->len) {
		wr_seal(w, p, h, data);
		w->len += head;
		return wr_flush_with(w, data, h->data_len);
	}
	if (h->data_len)
		memcpy(p + head, data, h->data_len);
	wr_seal(w, p, h, p + head);
	w->len += total;
	return REC_OK;
}

/* Compresses src into zbuf; returns the size, or 0 when it is not worth
 * it (no smaller) or failed, in which case the payload is stored raw. */
static size_t wr_compress(rec_writer *w, const void *src, size_t len)
{
	size_t bound = ZSTD_compressBound(len), n;

	/* One context for the whole stream: creating one per record would
	 * cost more than compressing a small payload. The frame records its
	 * content size, which readers check against raw_len. */
	if (w->cctx == NULL) {
		w->cctx = ZSTD_createCCtx();
		if (w->cctx == NULL)
			return 0;
		if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx,
				ZSTD_c_compressionLevel, w->level)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx,
				ZSTD_c_contentSizeFlag, 1))) {
			ZSTD_freeCCtx(w->cctx);
			w->cctx = NULL;
			return 0;
		}
	}
	if (w->zcap < bound) {
		unsigned char *nb = realloc(w->zbuf, bound);

		if (nb == NULL)
			return 0;
		w->zbuf = nb;
		w->zcap = bound;
	}
	n = ZSTD_compress2(w->cctx, w->zbuf, w->zcap, src, len);
	if (ZSTD_isError(n) || n >= len)
		return 0;
	return n;
}

/* Checks an item as the reader will, so that a bad record is refused
 * where it is made rather than where it is read. */
static int wr_check_item(rec_writer *w, const rec_item *it, const void *data,
			 size_t data_len)
{
	char why[256];
	const char *bad;

	if (w->state)
		return w->state;
	if (w->finished)
		return wr_fail(w, REC_E_INVAL, "record after the trailer");
	if (it == NULL)
		return wr_fail(w, REC_E_INVAL, "no record");
	if (it->type != REC_T_AUDIO && it->type != REC_T_FEATURES &&
	    it->type != REC_T_SKIPPED && it->type != REC_T_WINDOWS &&
	    it->type != REC_T_SOURCE && it->type != REC_T_FWINDOWS)
		return wr_fail(w, REC_E_INVAL, "invalid record type %d",
			       it->type);
	if (it->key_len > MAX_KEY || (it->key_len && it->key == NULL))
		return wr_fail(w, REC_E_INVAL, "key of %zu bytes (at most "
			       "%u)", it->key_len, MAX_KEY);
	if (data_len > UINT32_MAX)
		return wr_fail(w, REC_E_TOOBIG, "payload of %zu bytes (at "
			       "most 4 GiB - 1)", data_len);
	bad = rec_item_check(it, data_len, why, sizeof(why));
	if (bad == NULL && it->type == REC_T_SOURCE)
		bad = data || !data_len ? rec_source_pairs_check(data,
				data_len, why, sizeof(why)) : "no payload";
	if (bad)
		return wr_fail(w, REC_E_INVAL, "%s", bad);
	if (it->type == REC_T_SOURCE) {
		if ((bad = rec_piece_flags_refusal(it->type, it->flags, why,
						   sizeof(why))) ||
		    (bad = rec_source_place(&w->order, it, why, sizeof(why))))
			return wr_fail(w, REC_E_INVAL, "%s", bad);
	} else if (rec_order_pieces(&w->order, it)) {
		if (rec_piece_check(&w->order, it, &bad, why, sizeof(why)))
			return wr_fail(w, REC_E_INVAL, "%s", bad);
		if (rec_piece_room(&w->order, it))
			return wr_fail(w, REC_E_NOMEM, "out of memory");
	} else if ((bad = rec_order_after(&w->order, it, why, sizeof(why)))) {
		return wr_fail(w, REC_E_INVAL, "%s", bad);
	}
	return REC_OK;
}

void wr_count(rec_writer *w, const rec_item *it)
{
	w->ndata++;
	if (it->type == REC_T_SKIPPED)
		w->nskipped++;
	else if (it->type != REC_T_SOURCE)
		w->nitems++;
	if (it->type == REC_T_SOURCE)
		rec_source_note(&w->order, it);
	else if (rec_order_pieces(&w->order, it))
		rec_piece_note(&w->order, it);
	else
		rec_order_note(&w->order, it);
	w->key_hint = item_meta_size(it) - REC_ITEM_META_SIZE;
}

/* Appends a data record with its payload at data (uncompressed). */
int wr_item(rec_writer *w, const rec_item *it, const void *data,
		   size_t data_len)
{
	struct rhdr h = { 0 };
	size_t zlen = 0;
	int err;

	if (wr_shm_wants(w, it->type, data_len) &&
	    (err = wr_shared(w, it, data, data_len)) <= 0)
		return err;
	h.type = (unsigned)it->type;
	h.flags = it->flags;
	h.meta_len = (uint32_t)item_meta_size(it);
	h.raw_len = h.data_len = (uint32_t)data_len;
	if (w->level > 0 && data_len > 0)
		zlen = wr_compress(w, data, data_len);
	if (zlen) {
		h.flags |= REC_F_ZSTD;
		h.data_len = (uint32_t)zlen;
		data = w->zbuf;
	}
	err = wr_emit(w, &h, it, NULL, data);
	if (err == REC_OK)
		wr_count(w, it);
	return err;
}

/* Starts writing behind: the buffers are the ring's from now on. Zero
 * copy only into a pipe. */
static int wr_behind(rec_writer *w, const rec_writer_opts *opts)
{
	struct stat st;
	int zc = opts->zero_copy && fstat(w->fd, &st) == 0 &&
		 S_ISFIFO(st.st_mode) ? opts->zero_copy : 0;
	int e = wb_new(&w->wb, w->fd, w->cap, zc);

	if (e)
		return wr_fail(w, e == -ENOMEM ? REC_E_NOMEM : REC_E_IO,
			       "cannot start writing behind: %s",
			       strerror(-e));
	w->buf = wb_buf(w->wb, &w->cap);
	return REC_OK;
}

int rec_writer_open(rec_writer **out, int fd, const rec_header *hdr,
		    const rec_writer_opts *opts)
{
	rec_writer *w;
	struct rhdr h = { 0 };
	unsigned char *meta = NULL;
	int behind = opts && opts->write_behind;
	size_t msize;
	int err;

	if (out == NULL)
		return REC_E_INVAL;
	*out = w = calloc(1, sizeof(*w));
	if (w == NULL)
		return REC_E_NOMEM;
	w->fd = fd;
	w->shm.own = -1;
	pthread_mutex_init(&w->shm.mu, NULL);
	w->name = strdup(opts && opts->name ? opts->name : "output");
	w->level = opts ? opts->zstd_level : 0;
	w->cap = opts && opts->buffer_size ? opts->buffer_size
		 : DEFAULT_BUFFER;
	if (w->cap < 4096)
		w->cap = 4096;
	if (!behind)
		w->buf = malloc(w->cap);
	w->key_hint = 64;
	if (w->name == NULL || (!behind && w->buf == NULL)) {
		err = wr_fail(w, REC_E_NOMEM, "out of memory");
		goto out;
	}
	if (hdr == NULL || w->level < 0 || w->level > ZSTD_maxCLevel()) {
		err = wr_fail(w, REC_E_INVAL, "%s", hdr ? "invalid zstd level"
			      : "no header");
		goto out;
	}
	msize = rec_header_meta_size(hdr);
	if (msize > REC_MAX_META) {
		err = wr_fail(w, REC_E_TOOBIG, "header of %zu bytes over the "
			      "cap of %u", msize, REC_MAX_META);
		goto out;
	}
	meta = malloc(msize ? msize : 1);
	if (meta == NULL) {
		err = wr_fail(w, REC_E_NOMEM, "out of memory");
		goto out;
	}
	rec_header_serialise(hdr, meta);
	xio_grow_pipe(fd);
	wr_shm_init(w, opts);
	if (behind && (err = wr_behind(w, opts)))
		goto out;
	h.type = REC_T_HEADER;
	h.meta_len = (uint32_t)msize;
	err = wr_emit(w, &h, NULL, meta, NULL);
out:
	if (err)
		w->state = err; /* no header: nothing may follow */
	free(meta);
	return err;
}

int rec_write(rec_writer *w, const rec_item *it)
{
	int err;

	if (w == NULL)
		return REC_E_INVAL;
	if (w->reserved)
		return wr_fail(w, REC_E_INVAL, "rec_write() during a "
			       "reservation");
	if ((err = wr_check_item(w, it, it ? it->data : NULL,
				 it ? it->data_len : 0)))
		return err;
	if (it->data_len && it->data == NULL)
		return wr_fail(w, REC_E_INVAL, "no payload");
	return wr_item(w, it, it->data, it->data_len);
}

int rec_write_crc(rec_writer *w, const rec_item *it, uint32_t data_crc)
{
	int err;

	if (w == NULL)
		return REC_E_INVAL;
	w->have_data_crc = 1;
	w->data_crc = data_crc;
	err = rec_write(w, it);
	w->have_data_crc = 0;
	return err;
}

/*
 * A reserved payload goes into the output buffer where the record will be
 * when it fits, else into a scratch buffer. Its place is a guess: after
 * the metadata of a key as long as the previous one, rounded up to 16
 * bytes so that the caller may store any element type, even with SIMD.
 * Commit moves the payload to the record's real place unless it is there
 * already: a copy of bytes still in cache, far cheaper than the caller
 * building the payload elsewhere and rec_write() copying it. On the
 * shared-memory path the payload goes in the ring at once, where it stays.
 */
int rec_write_reserve(rec_writer *w, size_t data_len, void **payload)
{
	size_t worst = REC_HDR_SIZE + REC_ITEM_META_SIZE + MAX_KEY +
		       REC_WINDOWS_META_SIZE + (PAYLOAD_ALIGN - 1) + data_len;
	int err;

	if (w == NULL || payload == NULL)
		return REC_E_INVAL;
	if (w->state)
		return w->state;
	if (w->reserved || w->finished)
		return wr_fail(w, REC_E_INVAL, "reservation %s",
			       w->finished ? "after the trailer"
			       : "while one is pending");
	if (data_len > UINT32_MAX)
		return wr_fail(w, REC_E_TOOBIG, "payload of %zu bytes (at "
			       "most 4 GiB - 1)", data_len);
	w->res_shared = 0;
	if ((err = wr_reserve_shared(w, data_len)) <= 0) {
		if (err)
			return err;
		w->reserved = 1;
		w->res_len = data_len;
		*payload = w->res_ptr;
		return REC_OK;
	}
	if (w->level == 0 && worst <= w->cap && worst > w->cap - w->len &&
	    (err = wr_flush(w)))
		return err;
	/* (a flush moves to the next buffer, which may be smaller: one
	 * that held a large header is larger than the others) */
	if (w->level == 0 && worst <= w->cap - w->len) {
		w->res_ptr = w->buf + ALIGN_UP(w->len + REC_HDR_SIZE +
					       REC_ITEM_META_SIZE +
					       w->key_hint);
	} else {
		if (w->scap < data_len || w->scratch == NULL) {
			unsigned char *nb = realloc(w->scratch,
						    data_len ? data_len : 1);

			if (nb == NULL)
				return wr_fail(w, REC_E_NOMEM, "out of memory "
					       "for %zu bytes", data_len);
			w->scratch = nb;
			w->scap = data_len ? data_len : 1;
		}
		w->res_ptr = w->scratch;
	}
	w->reserved = 1;
	w->res_len = data_len;
	*payload = w->res_ptr;
	return REC_OK;
}

int rec_write_commit(rec_writer *w, const rec_item *it)
{
	struct rhdr h = { 0 };
	unsigned char *p, *dst;
	int err;

	if (w == NULL)
		return REC_E_INVAL;
	if (!w->reserved)
		return wr_fail(w, REC_E_INVAL, "commit without a reservation");
	w->reserved = 0; /* whatever happens: a refused record is dropped */
	err = wr_check_item(w, it, w->res_ptr, w->res_len);
	if (w->res_shared)
		return wr_commit_shared(w, it, err);
	if (err)
		return err;
	if (w->res_ptr == w->scratch)
		return wr_item(w, it, w->scratch, w->res_len);
	/* In the buffer: put the head before the payload, moving the
	 * payload when the key length differs from the guess. */
	p = w->buf + w->len;
	dst = p + REC_HDR_SIZE + item_meta_size(it);
	if (dst != w->res_ptr)
		memmove(dst, w->res_ptr, w->res_len);
	h.type = (unsigned)it->type;
	h.flags = it->flags;
	h.meta_len = (uint32_t)item_meta_size(it);
	h.raw_len = h.data_len = (uint32_t)w->res_len;
	item_meta_put(p + REC_HDR_SIZE, it);
	wr_seal(w, p, &h, dst);
	w->len += REC_HDR_SIZE + h.meta_len + w->res_len;
	wr_count(w, it);
	return REC_OK;
}

int rec_writer_flush(rec_writer *w)
{
	if (w == NULL)
		return REC_E_INVAL;
	if (w->state)
		return w->state;
	if (w->reserved)
		return wr_fail(w, REC_E_INVAL, "flush during a reservation");
	return wr_flush_all(w);
}

int rec_writer_finish(rec_writer *w)
{
	struct rhdr h = { 0 };
	unsigned char meta[TRAILER_META];
	char why[256];
	const char *bad;
	int err;

	if (w == NULL)
		return REC_E_INVAL;
	if (w->state)
		return w->state;
	if (w->reserved || w->finished)
		return wr_fail(w, REC_E_INVAL, "%s", w->finished
			       ? "trailer written twice"
			       : "finish during a reservation");
	if ((bad = rec_piece_end_check(&w->order, why, sizeof(why))))
		return wr_fail(w, REC_E_INVAL, "%s", bad);
	put64(meta, w->ndata);
	put64(meta + 8, w->nitems);
	put64(meta + 16, w->nskipped);
	put32(meta + 24, w->stream_crc);
	put32(meta + 28, 0);
	h.type = REC_T_TRAILER;
	h.meta_len = TRAILER_META;
	err = wr_emit(w, &h, NULL, meta, NULL);
	if (err)
		return err;
	w->finished = 1;
	return wr_flush_all(w);
}

uint64_t rec_writer_spliced(const rec_writer *w)
{
	uint64_t n = 0;

	if (w && w->wb)
		wb_status(w->wb, &n);
	return n;
}

void rec_writer_zero_copy_why(const rec_writer *w, char *buf, size_t n)
{
	buf[0] = '\0';
	if (w && w->wb)
		wb_zc_why(w->wb, buf, n);
}

int rec_writer_reader(const rec_writer *w, char *buf, size_t n)
{
	buf[0] = '\0';
	if (w && w->shm.reader_name[0])
		snprintf(buf, n, "%s", w->shm.reader_name);
	else if (w && w->wb)
		wb_reader(w->wb, buf, n);
	return buf[0] != '\0';
}

uint64_t rec_writer_count(const rec_writer *w)
{
	return w ? w->ndata : 0;
}

uint64_t rec_writer_bytes(const rec_writer *w)
{
	return w ? w->bytes : 0;
}

uint64_t rec_writer_inline_bytes(const rec_writer *w)
{
	return w ? w->inline_bytes : 0;
}

double rec_writer_wait(const rec_writer *w)
{
	return w ? w->t_wait : 0.0;
}

const char *rec_writer_detail(const rec_writer *w)
{
	return w ? w->detail : "";
}

void rec_writer_close(rec_writer *w)
{
	if (w == NULL)
		return;
	if (w->wb)
		wb_free(w->wb); /* waits for what is queued, frees w->buf */
	else
		free(w->buf);
	free(w->name);
	free(w->zbuf);
	free(w->scratch);
	if (w->shm.own >= 0)
		shmring_destroy(w->shm.rings[w->shm.own].ring);
	pthread_mutex_destroy(&w->shm.mu);
	ZSTD_freeCCtx(w->cctx);
	rec_order_free(&w->order);
	free(w);
}
