/*
 * rec.c - reader and writer of melpipe record streams (formats/record.md).
 *
 * Streams carry gigabytes, so both sides work on large buffers: the reader
 * fills a buffer of 1 MiB or more with few read(2) calls and hands out
 * pointers into it; the writer gathers records in its buffer and writes
 * it in one call, and passes payloads larger than the buffer to writev(2)
 * beside it instead of copying them. Each record's CRC is computed once
 * on each side.
 *
 * The format has no padding, so a payload can start at any byte. Typed
 * access to a misaligned array is undefined behaviour (UBSan traps it),
 * so payloads are handed out 16-byte aligned: the reader moves a payload
 * back by up to 15 bytes over its own, already parsed, metadata; reserved
 * payloads start aligned and move into place at commit. Both moves are
 * within bytes just touched, cheap next to the pipe's own copy.
 */
#include "rec.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "crc32c.h"
#include "rec_int.h"
#include "xio.h"

#define MIN_READ (64u << 10)    /* never read(2) into less room than this */
/* Read-ahead: RA_SLOTS buffers of RA_HEAD + RA_CHUNK bytes; the thread
 * reads into the last RA_CHUNK, and the unconsumed end of the buffer
 * before (a partial record) is copied into the RA_HEAD before it. */
#define RA_SLOTS 4
#define RA_HEAD (1u << 20)
#define RA_CHUNK (1u << 20)

/* ------------------------------------------------------------------ */
/* Item metadata */

static void item_meta_put(unsigned char *p, const rec_item *it)
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
	if (it->type == REC_T_WINDOWS) {
		p += 48 + it->key_len;
		put32(p, it->win_len);
		put32(p + 4, it->win_hop);
		put32(p + 8, it->n_windows);
		put32(p + 12, it->win_flags);
	}
}

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

/* ------------------------------------------------------------------ */
/* Reader */

/* A record's CRC as the reading thread computed it: the record at stream
 * offset off, total bytes long (header included). */
struct ra_crc {
	uint64_t off;
	uint32_t total, crc;
};

struct ra_crcs {
	struct ra_crc *v;
	size_t n, cap, head;  /* entries [head, n) */
};

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
	unsigned char *own;   /* buf when it is not a read-ahead slot */
	size_t own_cap;
	struct readahead *ra; /* NULL: read(2) in rd_fill */
	int ra_cur;           /* the slot buf is in, -1: own */
	struct ra_crcs crcs;  /* CRCs from the reading thread, in order */
	double t_wait;        /* rec_reader_wait() */

	uint64_t nrec;        /* records consumed, header included */
	uint64_t ndata, nitems, nskipped;
	uint32_t stream_crc;
	int have_prev;
	uint64_t prev_clip;
	uint32_t prev_segment;

	rec_header *hdr;
	rec_trailer trailer;
	ZSTD_DCtx *dctx;
	unsigned char *zbuf;  /* decompressed payloads */
	size_t zcap;
	char *key;            /* the current key, NUL-terminated */

	int state;            /* REC_OK, or sticky REC_END / error */
	char detail[DETAIL_SIZE];
};

/* Sets the sticky error and its sentence: "NAME: record N at byte B:
 * reason". Returns err. */
__attribute__((format(printf, 3, 4)))
static int rd_fail(rec_reader *r, int err, const char *fmt, ...)
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

/* ------------------------------------------------------------------ */
/* Read-ahead
 *
 * A thread reads fd into a ring of RA_SLOTS buffers, each read(2) into a
 * free slot's chunk, in stream order; the consumer takes the slots in the
 * same order. Each slot is EMPTY (the thread may fill it), FULL (read,
 * waiting) or INUSE (the consumer's buf: records are parsed and handed
 * out where the bytes landed). When the consumer runs out of bytes it
 * takes the next FULL slot, copies its partial record (at most RA_HEAD
 * bytes) in front of the new chunk, and frees the old slot; a record that
 * does not fit that way is gathered in the reader's own buffer.
 */

enum { RA_EMPTY, RA_FULL, RA_INUSE };

struct ra_slot {
	unsigned char *mem;   /* RA_HEAD + RA_CHUNK bytes */
	size_t len;           /* bytes read into mem + RA_HEAD */
	int state;
	int err;              /* errno of a failed read: the last slot */
	int eof;              /* end of input: the last slot */
	struct ra_crcs crcs;  /* records that end in this slot's bytes */
};

struct readahead {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct ra_slot slot[RA_SLOTS];
	int next;             /* the slot the consumer takes next */
	int stop;             /* set by rec_reader_close() */
	int wake;             /* eventfd that interrupts the poll */
	int fd, regular;      /* a regular file's read(2) never waits long */
	int started;
	/* Framing done by the reading thread, which checksums each record
	 * while its bytes are still in this core's cache; the consumer then
	 * compares (rd_check_crc). It follows lengths only while headers
	 * look sound (magic, caps): after anything odd it stops, and the
	 * consumer computes the CRCs itself, reaching the same verdicts. */
	uint64_t max_data;
	uint64_t rec_off;     /* stream offset of the record being framed */
	unsigned char hdr[REC_HDR_SIZE];
	size_t hdr_have;
	uint64_t left;        /* its bytes after the header still to come */
	uint32_t total, crc;
	int crc_ok;           /* crc covers the record so far */
	int lost;             /* framing given up */
	int waiting;          /* the consumer waits for a slot (under mu) */
};

/* Waits until fd can be read or the reader is closed; 0 to read, -1 to
 * stop. Regular files are always readable. */
static int ra_wait_input(struct readahead *ra)
{
	struct pollfd p[2] = { { .fd = ra->fd, .events = POLLIN },
			       { .fd = ra->wake, .events = POLLIN } };

	if (ra->regular)
		return 0;
	for (;;) {
		int n = poll(p, 2, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[1].revents)
			return -1;
		/* POLLHUP or POLLERR too: read(2) tells what happened */
		return 0;
	}
}

static int crcs_push(struct ra_crcs *c, uint64_t off, uint32_t total,
		     uint32_t crc)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		struct ra_crc *v;

		if (c->head > 0) {
			memmove(c->v, c->v + c->head,
				(c->n - c->head) * sizeof(*c->v));
			c->n -= c->head;
			c->head = 0;
		}
		if (c->n == c->cap) {
			v = realloc(c->v, cap * sizeof(*v));
			if (v == NULL)
				return -1;
			c->v = v;
			c->cap = cap;
		}
	}
	c->v[c->n++] = (struct ra_crc){ .off = off, .total = total,
					.crc = crc };
	return 0;
}

/* Frames the n bytes just read (at p) and, with sum, checksums the
 * records that end in them into s->crcs. Without sum the records are only
 * followed (the consumer waits: the checksums are better computed there,
 * in parallel, than here, in its way). */
static void ra_frame(struct readahead *ra, struct ra_slot *s,
		     const unsigned char *p, size_t n, int sum)
{
	while (n > 0 && !ra->lost) {
		size_t k;

		if (ra->hdr_have < REC_HDR_SIZE) {
			unsigned char z[REC_HDR_SIZE];
			uint32_t meta, data;

			k = REC_HDR_SIZE - ra->hdr_have;
			k = k < n ? k : n;
			memcpy(ra->hdr + ra->hdr_have, p, k);
			ra->hdr_have += k;
			p += k;
			n -= k;
			if (ra->hdr_have < REC_HDR_SIZE)
				break;
			meta = get32(ra->hdr + 8);
			data = get32(ra->hdr + 12);
			if (memcmp(ra->hdr, REC_MAGIC, 4) != 0 ||
			    meta > REC_MAX_META || data > ra->max_data) {
				ra->lost = 1;
				break;
			}
			ra->left = (uint64_t)meta + data;
			ra->total = REC_HDR_SIZE + meta + data;
			ra->crc_ok = sum;
			if (sum) {
				memcpy(z, ra->hdr, REC_HDR_SIZE);
				memset(z + 20, 0, 4);
				ra->crc = crc32c(0, z, REC_HDR_SIZE);
			}
		}
		k = ra->left < n ? (size_t)ra->left : n;
		if (ra->crc_ok && sum)
			ra->crc = crc32c(ra->crc, p, k);
		else
			ra->crc_ok = 0;
		p += k;
		n -= k;
		ra->left -= k;
		if (ra->left == 0) {
			if (ra->crc_ok && crcs_push(&s->crcs, ra->rec_off,
						    ra->total, ra->crc) < 0)
				ra->lost = 1;
			ra->rec_off += ra->total;
			ra->hdr_have = 0;
		}
	}
}

static void *ra_main(void *arg)
{
	struct readahead *ra = arg;

	for (int i = 0;; i = (i + 1) % RA_SLOTS) {
		struct ra_slot *s = &ra->slot[i];
		ssize_t got;

		int stop;

		pthread_mutex_lock(&ra->mu);
		while (s->state != RA_EMPTY && !ra->stop)
			pthread_cond_wait(&ra->cond, &ra->mu);
		stop = ra->stop;
		pthread_mutex_unlock(&ra->mu);
		if (stop || ra_wait_input(ra) < 0)
			return NULL;
		got = xio_read_some(ra->fd, s->mem + RA_HEAD, RA_CHUNK);
		s->crcs.n = s->crcs.head = 0;
		if (got > 0) {
			int sum;

			/* Sum here only while the consumer has a full slot
			 * still to take: then it is the slower side and this
			 * thread's time is free; else it would wait for us. */
			pthread_mutex_lock(&ra->mu);
			sum = 0;
			for (int j = 0; j < RA_SLOTS; j++)
				sum |= ra->slot[j].state == RA_FULL;
			sum = sum && !ra->waiting;
			pthread_mutex_unlock(&ra->mu);
			ra_frame(ra, s, s->mem + RA_HEAD, (size_t)got, sum);
		}
		pthread_mutex_lock(&ra->mu);
		s->len = got > 0 ? (size_t)got : 0;
		s->err = got < 0 ? (int)-got : 0;
		s->eof = got == 0;
		s->state = RA_FULL;
		pthread_cond_broadcast(&ra->cond);
		pthread_mutex_unlock(&ra->mu);
		if (got <= 0)
			return NULL;
	}
}

static void ra_free(struct readahead *ra)
{
	if (ra == NULL)
		return;
	if (ra->started) {
		uint64_t one = 1;

		pthread_mutex_lock(&ra->mu);
		ra->stop = 1;
		pthread_cond_broadcast(&ra->cond);
		pthread_mutex_unlock(&ra->mu);
		if (write(ra->wake, &one, sizeof(one)) < 0) {
			/* an eventfd write fails only on overflow: the thread
			 * is awake already */
		}
		pthread_join(ra->thread, NULL);
	}
	if (ra->wake >= 0)
		close(ra->wake);
	pthread_cond_destroy(&ra->cond);
	pthread_mutex_destroy(&ra->mu);
	for (int i = 0; i < RA_SLOTS; i++) {
		free(ra->slot[i].mem);
		free(ra->slot[i].crcs.v);
	}
	free(ra);
}

/* Starts the read-ahead thread on fd; NULL with errno set on failure. */
static struct readahead *ra_new(int fd, uint64_t max_data)
{
	struct readahead *ra = calloc(1, sizeof(*ra));
	struct stat st;
	int e;

	if (ra == NULL)
		return NULL;
	ra->fd = fd;
	ra->max_data = max_data;
	ra->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	ra->wake = eventfd(0, EFD_CLOEXEC);
	pthread_mutex_init(&ra->mu, NULL);
	pthread_cond_init(&ra->cond, NULL);
	for (int i = 0; i < RA_SLOTS; i++)
		if ((ra->slot[i].mem = malloc(RA_HEAD + RA_CHUNK)) == NULL)
			goto fail;
	if (ra->wake < 0)
		goto fail;
	if ((e = pthread_create(&ra->thread, NULL, ra_main, ra))) {
		errno = e;
		goto fail;
	}
	ra->started = 1;
	return ra;
fail:
	e = errno;
	ra_free(ra);
	errno = e;
	return NULL;
}

/* Waits for the next slot in stream order and makes it the consumer's. */
static struct ra_slot *ra_take(struct readahead *ra, int *idx,
			       double *waited)
{
	struct ra_slot *s = &ra->slot[ra->next];

	pthread_mutex_lock(&ra->mu);
	if (s->state != RA_FULL) {
		double t0 = mono_now();

		ra->waiting = 1;
		while (s->state != RA_FULL)
			pthread_cond_wait(&ra->cond, &ra->mu);
		ra->waiting = 0;
		*waited += mono_now() - t0;
	}
	s->state = RA_INUSE;
	pthread_mutex_unlock(&ra->mu);
	*idx = ra->next;
	ra->next = (ra->next + 1) % RA_SLOTS;
	return s;
}

static void ra_release(struct readahead *ra, int idx)
{
	if (idx < 0)
		return;
	pthread_mutex_lock(&ra->mu);
	ra->slot[idx].state = RA_EMPTY;
	pthread_cond_broadcast(&ra->cond);
	pthread_mutex_unlock(&ra->mu);
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
		int idx, err;
		struct ra_slot *s = ra_take(r->ra, &idx, &r->t_wait);

		for (size_t i = s->crcs.head; i < s->crcs.n; i++)
			if (crcs_push(&r->crcs, s->crcs.v[i].off,
				      s->crcs.v[i].total, s->crcs.v[i].crc))
				break; /* no memory: computed here instead */

		if (s->err || s->eof) {
			ra_release(r->ra, idx);
			if (s->err)
				return rd_io_fail(r, -s->err);
			r->eof = 1;
			break;
		}
		if (left <= RA_HEAD && n <= RA_HEAD + RA_CHUNK &&
		    (left + s->len >= n || left <= s->len)) {
			/* the common case: continue in the new chunk. A
			 * record that still lacks bytes moves on again, but
			 * only while the bytes moved are no more than those
			 * that came (a slow pipe's small reads would copy a
			 * long record over and over); else it is gathered. */
			memcpy(s->mem + RA_HEAD - left, r->buf + r->pos, left);
			ra_release(r->ra, r->ra_cur);
			r->ra_cur = idx;
			r->buf = s->mem;
			r->cap = RA_HEAD + RA_CHUNK;
			r->pos = RA_HEAD - left;
			r->end = RA_HEAD + s->len;
			continue;
		}
		/* gather: own buffer, doubling as bytes arrive */
		size_t want = left + s->len;

		if (r->ra_cur >= 0 || r->own_cap < want ||
		    r->own_cap - r->end < s->len) {
			size_t cap = r->own_cap;

			while (cap < want)
				cap *= 2;
			if ((err = rd_to_own(r, cap)) != REC_OK) {
				ra_release(r->ra, idx);
				return err;
			}
		}
		memcpy(r->buf + r->end, s->mem + RA_HEAD, s->len);
		r->end += s->len;
		ra_release(r->ra, idx);
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

/* Checks the fixed header of the record at buf + pos, in the order the
 * spec gives: magic, version, type (and the version it needs), flags,
 * lengths against the caps. */
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
	if (h->type < REC_T_HEADER || h->type > REC_T_WINDOWS)
		return rd_fail(r, REC_E_FORMAT, "unknown record type %u",
			       h->type);
	if (h->type == REC_T_WINDOWS && h->version < 2)
		return rd_fail(r, REC_E_FORMAT, "a windows record marked "
			       "format version %u (windows records are "
			       "version 2)", h->version);
	if (h->flags & ~REC_F_ZSTD)
		return rd_fail(r, REC_E_FORMAT, "unknown flags 0x%02x",
			       h->flags);
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
	if (!(h->flags & REC_F_ZSTD) && h->raw_len != h->data_len)
		return rd_fail(r, REC_E_FORMAT, "raw length %" PRIu32
			       " differs from stored length %" PRIu32
			       " in an uncompressed record", h->raw_len,
			       h->data_len);
	return REC_OK;
}

/* The CRC the reading thread computed for the record at r->off, when it
 * framed the same record (same offset, same length): 1 and *crc set. */
static int ra_crc(rec_reader *r, const struct rhdr *h, uint32_t *crc)
{
	struct ra_crcs *c = &r->crcs;
	uint64_t total = REC_HDR_SIZE + (uint64_t)h->meta_len + h->data_len;

	while (c->head < c->n && c->v[c->head].off < r->off)
		c->head++;
	if (c->head == c->n || c->v[c->head].off != r->off ||
	    c->v[c->head].total != total)
		return 0;
	*crc = c->v[c->head++].crc;
	if (c->head == c->n)
		c->head = c->n = 0;
	return 1;
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

static int rd_check_crc(rec_reader *r, const struct rhdr *h)
{
	const unsigned char *p = r->buf + r->pos;
	uint32_t crc, hm = 0; /* hm: CRC of the header and the metadata */
	int have_hm = 0;

	r->have_data_crc = 0;
	if (!ra_crc(r, h, &crc)) {
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

static int rd_check_trailer(rec_reader *r, const unsigned char *meta,
			    const struct rhdr *h)
{
	rec_trailer *t = &r->trailer;

	if (h->meta_len != TRAILER_META || h->data_len != 0 ||
	    h->raw_len != 0)
		return rd_fail(r, REC_E_FORMAT, "trailer with %" PRIu32
			       " bytes of metadata and %" PRIu32 " of "
			       "payload (must be %u and 0)", h->meta_len,
			       h->raw_len, TRAILER_META);
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

/* Checks a data record's metadata and fills *it (but for data). */
static int rd_check_item(rec_reader *r, const unsigned char *meta,
			 const struct rhdr *h, rec_item *it)
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
	item_meta_get(meta, it);
	if (h->meta_len != item_meta_size(it))
		return rd_fail(r, REC_E_FORMAT, "metadata length %" PRIu32
			       " is not 48 + key length %zu%s", h->meta_len,
			       it->key_len, it->type == REC_T_WINDOWS ?
			       " + 16" : "");
	it->key = (const char *)meta + REC_ITEM_META_SIZE;
	if (it->type == REC_T_WINDOWS) {
		const unsigned char *wf = meta + REC_ITEM_META_SIZE +
					  it->key_len;

		it->win_len = get32(wf);
		it->win_hop = get32(wf + 4);
		it->n_windows = get32(wf + 8);
		it->win_flags = get32(wf + 12);
	}
	bad = rec_item_check(it, h->raw_len, why, sizeof(why));
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

	if (mis == 0 || it->type == REC_T_SKIPPED)
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

/* Reports why the input ended before a whole record header: a few bytes
 * of garbage are not a record stream rather than a truncated one. */
static int rd_short_header(rec_reader *r)
{
	size_t n = r->end - r->pos;

	if (memcmp(r->buf + r->pos, REC_MAGIC, n < 4 ? n : 4) != 0)
		return rd_bad_magic(r, n);
	if (r->end == r->pos && r->nrec == 0)
		return rd_fail(r, REC_E_TRUNC, "empty input (no header "
			       "record)");
	if (r->end == r->pos)
		return rd_fail(r, REC_E_TRUNC, "input ended before the trailer "
			       "(after %" PRIu64 " data records)", r->ndata);
	return rd_fail(r, REC_E_TRUNC, "input ended inside a record header "
		       "(%zu of %u bytes)", r->end - r->pos, REC_HDR_SIZE);
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
	if (st == 1)
		return rd_fail(r, REC_E_TRUNC, "input ended inside the record "
			       "(%zu of %zu bytes)", r->end - r->pos, total);
	if ((st = rd_check_crc(r, h)))
		return st;
	*meta = r->buf + r->pos + REC_HDR_SIZE;
	*data = *meta + h->meta_len;
	if (h->flags & REC_F_ZSTD)
		return rd_decompress(r, h, data);
	return REC_OK;
}

/* Checks a data record against the one before it and completes *it. */
static int rd_accept_item(rec_reader *r, const struct rhdr *h,
			  const unsigned char *data, rec_item *it)
{
	char why[256];
	const char *bad = rec_order_check(r->have_prev, r->prev_clip,
					  r->prev_segment, it, why,
					  sizeof(why));

	if (bad)
		return rd_fail(r, REC_E_ORDER, "%s", bad);
	/* The key is small: copy it out to terminate it, since the payload
	 * follows it in the buffer. */
	memcpy(r->key, it->key, it->key_len);
	r->key[it->key_len] = '\0';
	it->key = r->key;
	it->data_len = h->raw_len;
	it->data = data == r->zbuf || r->unaligned ? data
		   : rd_align(it, (unsigned char *)data);
	r->have_prev = 1;
	r->prev_clip = it->clip;
	r->prev_segment = item_last_segment(it);
	r->ndata++;
	if (h->type == REC_T_SKIPPED)
		r->nskipped++;
	else
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

	if ((err = rd_frame(r, &h, &meta, &data)))
		return err;
	/* Where a record may be is checked before what it holds. */
	if (r->nrec == 0 && h.type != REC_T_HEADER)
		return rd_fail(r, REC_E_ORDER, "the first record is of type "
			       "%s, not a header", rec_type_name((int)h.type));
	if (r->nrec > 0 && h.type == REC_T_HEADER)
		return rd_fail(r, REC_E_ORDER, "a second header record");
	if (h.type == REC_T_HEADER)
		err = rd_parse_header(r, meta, &h);
	else if (h.type == REC_T_TRAILER)
		err = rd_check_trailer(r, meta, &h);
	else if (!(err = rd_check_item(r, meta, &h, it)))
		err = rd_accept_item(r, &h, data, it);
	if (err)
		return err;
	if (h.type != REC_T_TRAILER) {
		put32(le, h.crc);
		r->stream_crc = crc32c(r->stream_crc, le, 4);
	}
	r->pos += REC_HDR_SIZE + (size_t)h.meta_len + h.data_len;
	r->off += REC_HDR_SIZE + (uint64_t)h.meta_len + h.data_len;
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
	    (r->ra = ra_new(fd, r->max_data)) == NULL)
		return rd_fail(r, errno == ENOMEM ? REC_E_NOMEM : REC_E_IO,
			       "cannot start reading ahead: %s",
			       strerror(errno));
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
	ra_free(r->ra);
	free(r->crcs.v);
	free(r->name_buf);
	free(r->own);
	free(r->key);
	free(r->zbuf);
	ZSTD_freeDCtx(r->dctx);
	rec_header_free(r->hdr);
	free(r);
}

/* ------------------------------------------------------------------ */
/* Writer */

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
	uint32_t stream_crc;
	int have_prev;
	uint64_t prev_clip;
	uint32_t prev_segment;
	int finished;
	int state;              /* REC_OK or sticky error */
	char detail[DETAIL_SIZE];
	struct writebehind *wb; /* NULL: write(2) in wr_flush */
	int mapped;             /* buffers come from mmap (zero copy) */
	int have_data_crc;      /* rec_write_crc(): the payload's CRC is */
	uint32_t data_crc;      /* known, the record's needs no pass */
	double t_wait;          /* rec_writer_wait() */
};

/* Output buffers: mmap'ed ones for vmsplice, whose pages a pipe may still
 * hold when the writer is done with them (munmap leaves them to the pipe,
 * free would hand them to the next malloc), else malloc'ed. Sizes are
 * rounded up to whole pages in the first case; *cap says the size. */
static unsigned char *wr_buf_alloc(int mapped, size_t *cap)
{
	void *p;

	if (!mapped)
		return malloc(*cap);
	*cap = (*cap + 4095) & ~(size_t)4095;
	/* populated now: the ring's memory is the same from the first
	 * record, however much of it a short stream would touch */
	p = mmap(NULL, *cap, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void wr_buf_free(int mapped, unsigned char *p, size_t cap)
{
	if (!mapped)
		free(p);
	else if (p)
		munmap(p, cap);
}

/* ------------------------------------------------------------------ */
/* Write-behind
 *
 * n buffers in a ring: the caller fills one (w->buf), hands it to the
 * thread when it is full and goes on in the next free one; the thread
 * writes them in order. The first write error is kept and every later
 * buffer dropped; the caller sees the error at its next flush.
 *
 * Zero copy: when the output is a pipe whose readers are this suite's
 * programs, which read(2) what they get, the thread hands buffers to the
 * pipe with vmsplice(2) instead of write(2): the pipe then holds our
 * pages, not a copy, so a buffer stays out of use (WB_INPIPE) until the
 * reader has read past its end, which the pipe's count of unread bytes
 * tells. A pipe moves about 3 GB/s with write(2) and read(2), 10 GB/s
 * with vmsplice(2) and read(2) (../shared/MEASUREMENTS.md).
 */

#define WB_SLOTS_MAX 6
#define WB_SLOTS 3      /* without zero copy */
#define WB_SLOTS_ZC 6   /* with: two or three may sit in the pipe */
#define ZC_CHECKS 12    /* reader checks: at buffers 0, 1, 2, 4, ... */

enum { WB_FREE, WB_QUEUED, WB_INPIPE };

/* The programs whose reading makes vmsplice safe: every stage reads its
 * input with read(2) through this library. */
static const char *const suite_progs[] = {
	"wavcat", "segment", "gpumel", "h5pack", "recdump", NULL
};

struct writebehind {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int n;                  /* slots in the ring */
	unsigned char *mem[WB_SLOTS_MAX];
	size_t cap[WB_SLOTS_MAX], len[WB_SLOTS_MAX];
	uint64_t end[WB_SLOTS_MAX]; /* WB_INPIPE: stream position after it */
	int state[WB_SLOTS_MAX];
	int cur;                /* the slot w->buf is */
	int queued;             /* slots waiting or being written */
	int err;                /* first write error, -errno */
	int stop, started, fd;
	int zc;                 /* 0 off, 1 when the readers allow, 2 on */
	int mapped;             /* mem[] from mmap: munmap them */
	int zc_on;              /* vmsplice in use */
	unsigned zc_checks;     /* reader checks done */
	uint64_t nbuf;          /* buffers written */
	uint64_t pos;           /* bytes handed to fd */
	uint64_t spliced;       /* of them with vmsplice */
};

/* Whether to vmsplice buffer number nbuf: checks the pipe's readers at
 * buffers 0, 1, 2, 4, 8, ... (a reader may not have started its program
 * yet at first) until they pass or ZC_CHECKS checks failed. */
static int wb_zero_copy(struct writebehind *wb)
{
	uint64_t k = wb->nbuf;

	if (wb->zc_on || wb->zc == 0)
		return wb->zc_on;
	if (wb->zc == 2)
		return wb->zc_on = 1;
	if (wb->zc_checks >= ZC_CHECKS || (k > 2 && (k & (k - 1))))
		return 0;
	wb->zc_checks++;
	return wb->zc_on = xio_pipe_readers_are(wb->fd, suite_progs) == 1;
}

/* vmsplices slot i; where the system refuses vmsplice itself (a
 * sandbox, an old kernel), writes the rest and the stream goes on
 * without zero copy (*zc = 0 when nothing of slot i is in the pipe by
 * reference). */
static int wb_splice(struct writebehind *wb, int i, int *zc)
{
	size_t done;
	int e = xio_vmsplice_all(wb->fd, wb->mem[i], wb->len[i], &done);

	if (e != -EINVAL && e != -ENOSYS && e != -EOPNOTSUPP)
		return e;
	wb->zc = 0;
	wb->zc_on = 0;
	*zc = done > 0;
	return xio_write_all(wb->fd, wb->mem[i] + done, wb->len[i] - done);
}

static void *wb_main(void *arg)
{
	struct writebehind *wb = arg;

	for (int i = 0;; i = (i + 1) % wb->n) {
		int err, e = 0, zc = 0;

		pthread_mutex_lock(&wb->mu);
		while (wb->state[i] != WB_QUEUED && !wb->stop)
			pthread_cond_wait(&wb->cond, &wb->mu);
		if (wb->state[i] != WB_QUEUED) { /* stop, nothing left */
			pthread_mutex_unlock(&wb->mu);
			return NULL;
		}
		err = wb->err;
		pthread_mutex_unlock(&wb->mu);
		if (!err && (zc = wb_zero_copy(wb)))
			e = wb_splice(wb, i, &zc);
		else if (!err)
			e = xio_write_all(wb->fd, wb->mem[i], wb->len[i]);
		pthread_mutex_lock(&wb->mu);
		if (e && !wb->err)
			wb->err = e;
		wb->nbuf++;
		wb->pos += wb->len[i];
		wb->state[i] = WB_FREE;
		if (zc && !e) {
			wb->spliced += wb->len[i];
			wb->end[i] = wb->pos;
			wb->state[i] = WB_INPIPE;
		}
		wb->queued--;
		pthread_cond_broadcast(&wb->cond);
		pthread_mutex_unlock(&wb->mu);
	}
}

/* Called with wb->mu held, slot i in the pipe: waits until the reader has
 * read past its end (or the output failed: nothing will read it then),
 * and frees it. The unread count includes a vmsplice still under way
 * whose bytes pos does not count yet, so the estimate of what was read
 * errs on the safe side. */
static void wb_wait_read(struct writebehind *wb, int i)
{
	long nap = 20000; /* ns, doubled up to 1 ms while nothing moves */
	long last = -1;

	while (wb->state[i] == WB_INPIPE) {
		long unread = xio_pipe_unread(wb->fd);
		struct pollfd pfd = { .fd = wb->fd, .events = POLLOUT };

		if (last >= 0 && unread < last)
			nap = 20000; /* the reader moves: look again soon */
		last = unread;
		/* unread may exceed pos while a vmsplice is under way */
		if (wb->err || unread < 0 || (wb->pos >= (uint64_t)unread &&
		    wb->pos - (uint64_t)unread >= wb->end[i])) {
			wb->state[i] = WB_FREE;
			break;
		}
		pthread_mutex_unlock(&wb->mu);
		/* A full pipe wakes us when the reader takes something;
		 * otherwise the reader is inside our buffer: look again
		 * soon. A reader gone (POLLERR) reads nothing more: the
		 * error the next write would get. */
		if (poll(&pfd, 1, 0) == 0) {
			poll(&pfd, 1, 10);
		} else if (!(pfd.revents & (POLLERR | POLLHUP))) {
			nanosleep(&(struct timespec){ .tv_nsec = nap }, NULL);
			nap = nap < 500000 ? nap * 2 : 1000000;
		}
		pthread_mutex_lock(&wb->mu);
		if ((pfd.revents & (POLLERR | POLLHUP)) && !wb->err)
			wb->err = -EPIPE;
	}
}

/* Waits until every queued buffer is written; the first error or 0. */
static int wb_drain(struct writebehind *wb)
{
	int err;

	pthread_mutex_lock(&wb->mu);
	while (wb->queued)
		pthread_cond_wait(&wb->cond, &wb->mu);
	err = wb->err;
	pthread_mutex_unlock(&wb->mu);
	return err;
}

static void wb_free(struct writebehind *wb)
{
	if (wb == NULL)
		return;
	if (wb->started) {
		wb_drain(wb);
		pthread_mutex_lock(&wb->mu);
		wb->stop = 1;
		pthread_cond_broadcast(&wb->cond);
		pthread_mutex_unlock(&wb->mu);
		pthread_join(wb->thread, NULL);
	}
	pthread_cond_destroy(&wb->cond);
	pthread_mutex_destroy(&wb->mu);
	for (int i = 0; i < wb->n; i++)
		wr_buf_free(wb->mapped, wb->mem[i], wb->cap[i]);
	free(wb);
}

/* The ring, with w->buf as its first slot; NULL with errno on failure.
 * zc: see struct writebehind (w->buf is mmap'ed when it is not 0). */
static struct writebehind *wb_new(rec_writer *w, int zc)
{
	struct writebehind *wb = calloc(1, sizeof(*wb));
	int e;

	if (wb == NULL)
		return NULL;
	wb->fd = w->fd;
	wb->zc = zc;
	wb->mapped = zc != 0;
	wb->n = zc ? WB_SLOTS_ZC : WB_SLOTS;
	pthread_mutex_init(&wb->mu, NULL);
	pthread_cond_init(&wb->cond, NULL);
	for (int i = 1; i < wb->n; i++) {
		wb->cap[i] = w->cap;
		if ((wb->mem[i] = wr_buf_alloc(wb->mapped, &wb->cap[i])) ==
		    NULL) {
			wb_free(wb);
			errno = ENOMEM;
			return NULL;
		}
	}
	if ((e = pthread_create(&wb->thread, NULL, wb_main, wb))) {
		wb_free(wb);
		errno = e;
		return NULL;
	}
	wb->started = 1;
	wb->mem[0] = w->buf;    /* the ring owns it from now on */
	wb->cap[0] = w->cap;
	return wb;
}

/* Queues w->buf and makes the next free slot w->buf. */
static int wb_submit(rec_writer *w)
{
	struct writebehind *wb = w->wb;
	int next = (wb->cur + 1) % wb->n, err;

	pthread_mutex_lock(&wb->mu);
	wb->mem[wb->cur] = w->buf; /* a header may have grown it */
	wb->cap[wb->cur] = w->cap;
	wb->len[wb->cur] = w->len;
	wb->state[wb->cur] = WB_QUEUED;
	wb->queued++;
	pthread_cond_broadcast(&wb->cond);
	if (wb->state[next] != WB_FREE) {
		double t0 = mono_now();

		while (wb->state[next] != WB_FREE) {
			if (wb->state[next] == WB_INPIPE)
				wb_wait_read(wb, next);
			else
				pthread_cond_wait(&wb->cond, &wb->mu);
		}
		w->t_wait += mono_now() - t0;
	}
	err = wb->err;
	pthread_mutex_unlock(&wb->mu);
	wb->cur = next;
	w->buf = wb->mem[next];
	w->cap = wb->cap[next];
	w->len = 0;
	return err;
}

__attribute__((format(printf, 3, 4)))
static int wr_fail(rec_writer *w, int err, const char *fmt, ...)
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

static int wr_flush(rec_writer *w)
{
	int e;

	if (w->len == 0)
		return w->wb && (e = w->wb->err) ? wr_io(w, e) : REC_OK;
	if (w->wb) {
		e = wb_submit(w);
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

	h->version = h->type == REC_T_WINDOWS ? 2 : 1;
	h->reserved = 0;
	h->crc = 0;
	rhdr_put(p, h);
	crc = crc32c(0, p, REC_HDR_SIZE + (size_t)h->meta_len);
	if (w->have_data_crc && !(h->flags & REC_F_ZSTD))
		crc = crc32c_combine(crc, w->data_crc, h->data_len);
	else
		crc = crc32c(crc, data, h->data_len);
	put32(p + 20, crc);
	if (h->type != REC_T_TRAILER) {
		put32(le, crc);
		w->stream_crc = crc32c(w->stream_crc, le, 4);
	}
	w->bytes += REC_HDR_SIZE + (uint64_t)h->meta_len + h->data_len;
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
	if (w->wb && !err) {
		/* in the pipe after the buffers: counted, so that what the
		 * reader has read is not underestimated */
		pthread_mutex_lock(&w->wb->mu);
		w->wb->pos += len;
		pthread_mutex_unlock(&w->wb->mu);
	}
	return err ? wr_io(w, err) : REC_OK;
}

/*
 * Appends a record: its header and metadata (it's fields for a data
 * record, else the meta_len bytes at meta) go into the buffer; its stored
 * payload, data_len bytes at data, is copied after them when the record
 * fits in the buffer, else written from where it is.
 */
static int wr_emit(rec_writer *w, struct rhdr *h, const rec_item *it,
		   const void *meta, const void *data)
{
	size_t head = REC_HDR_SIZE + (size_t)h->meta_len;
	size_t total = head + h->data_len;
	unsigned char *p;
	int err;

	if (total > w->cap - w->len && (err = wr_flush(w)))
		return err;
	if (head > w->cap) {
		/* Only a stream header bigger than the buffer gets here. */
		size_t ncap = head;
		unsigned char *nb = wr_buf_alloc(w->mapped, &ncap);

		if (nb == NULL)
			return wr_fail(w, REC_E_NOMEM, "out of memory");
		memcpy(nb, w->buf, w->len);
		wr_buf_free(w->mapped, w->buf, w->cap);
		w->buf = nb;
		w->cap = ncap;
	}
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
static int wr_check_item(rec_writer *w, const rec_item *it, size_t data_len)
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
	    it->type != REC_T_SKIPPED && it->type != REC_T_WINDOWS)
		return wr_fail(w, REC_E_INVAL, "invalid record type %d",
			       it->type);
	if (it->key_len > MAX_KEY || (it->key_len && it->key == NULL))
		return wr_fail(w, REC_E_INVAL, "key of %zu bytes (at most "
			       "%u)", it->key_len, MAX_KEY);
	if (data_len > UINT32_MAX)
		return wr_fail(w, REC_E_TOOBIG, "payload of %zu bytes (at "
			       "most 4 GiB - 1)", data_len);
	bad = rec_item_check(it, data_len, why, sizeof(why));
	if (!bad)
		bad = rec_order_check(w->have_prev, w->prev_clip,
				      w->prev_segment, it, why, sizeof(why));
	if (bad)
		return wr_fail(w, REC_E_INVAL, "%s", bad);
	return REC_OK;
}

static void wr_count(rec_writer *w, const rec_item *it)
{
	w->ndata++;
	if (it->type == REC_T_SKIPPED)
		w->nskipped++;
	else
		w->nitems++;
	w->have_prev = 1;
	w->prev_clip = it->clip;
	w->prev_segment = item_last_segment(it);
	w->key_hint = item_meta_size(it) - REC_ITEM_META_SIZE;
}

/* Appends a data record with its payload at data (uncompressed). */
static int wr_item(rec_writer *w, const rec_item *it, const void *data,
		   size_t data_len)
{
	struct rhdr h = { 0 };
	size_t zlen = 0;
	int err;

	h.type = (unsigned)it->type;
	h.meta_len = (uint32_t)item_meta_size(it);
	h.raw_len = h.data_len = (uint32_t)data_len;
	if (w->level > 0 && data_len > 0)
		zlen = wr_compress(w, data, data_len);
	if (zlen) {
		h.flags = REC_F_ZSTD;
		h.data_len = (uint32_t)zlen;
		data = w->zbuf;
	}
	err = wr_emit(w, &h, it, NULL, data);
	if (err == REC_OK)
		wr_count(w, it);
	return err;
}

int rec_writer_open(rec_writer **out, int fd, const rec_header *hdr,
		    const rec_writer_opts *opts)
{
	rec_writer *w;
	struct rhdr h = { 0 };
	unsigned char *meta = NULL;
	struct stat st;
	size_t msize;
	int err;

	if (out == NULL)
		return REC_E_INVAL;
	*out = w = calloc(1, sizeof(*w));
	if (w == NULL)
		return REC_E_NOMEM;
	w->fd = fd;
	w->name = strdup(opts && opts->name ? opts->name : "output");
	w->level = opts ? opts->zstd_level : 0;
	w->cap = opts && opts->buffer_size ? opts->buffer_size
		 : DEFAULT_BUFFER;
	if (w->cap < 4096)
		w->cap = 4096;
	w->mapped = opts && opts->write_behind && opts->zero_copy &&
		    fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
	w->buf = wr_buf_alloc(w->mapped, &w->cap);
	w->key_hint = 64;
	if (w->name == NULL || w->buf == NULL) {
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
	if (opts && opts->write_behind &&
	    (w->wb = wb_new(w, w->mapped ? opts->zero_copy : 0)) == NULL) {
		err = wr_fail(w, errno == ENOMEM ? REC_E_NOMEM : REC_E_IO,
			      "cannot start writing behind: %s",
			      strerror(errno));
		goto out;
	}
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
	if ((err = wr_check_item(w, it, it ? it->data_len : 0)))
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
 * building the payload elsewhere and rec_write() copying it.
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
	err = wr_check_item(w, it, w->res_len);
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
	int err;

	if (w == NULL)
		return REC_E_INVAL;
	if (w->state)
		return w->state;
	if (w->reserved || w->finished)
		return wr_fail(w, REC_E_INVAL, "%s", w->finished
			       ? "trailer written twice"
			       : "finish during a reservation");
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

	if (w && w->wb) {
		pthread_mutex_lock(&w->wb->mu);
		n = w->wb->spliced;
		pthread_mutex_unlock(&w->wb->mu);
	}
	return n;
}

uint64_t rec_writer_count(const rec_writer *w)
{
	return w ? w->ndata : 0;
}

uint64_t rec_writer_bytes(const rec_writer *w)
{
	return w ? w->bytes : 0;
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
	if (w->wb) {
		w->wb->mem[w->wb->cur] = w->buf;
		w->wb->cap[w->wb->cur] = w->cap;
		wb_free(w->wb); /* waits for what is queued, frees w->buf */
	} else {
		wr_buf_free(w->mapped, w->buf, w->cap);
	}
	free(w->name);
	free(w->zbuf);
	free(w->scratch);
	ZSTD_freeCCtx(w->cctx);
	free(w);
}
