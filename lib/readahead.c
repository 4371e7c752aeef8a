/*
 * readahead.c - the reading thread of readahead.h and its ring of chunks.
 *
 * A thread reads fd into a ring of RA_SLOTS buffers, each read(2) into a
 * free slot's chunk, in stream order; the consumer takes the slots in the
 * same order. Each slot is EMPTY (the thread may fill it), FULL (read,
 * waiting) or INUSE (lent to the consumer, who parses records where the
 * bytes landed and moves a partial record in front of the next chunk).
 */
#include "readahead.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "rec_int.h"
#include "xio.h"

#define RA_SLOTS 4

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
	int stop;             /* set by ra_free() */
	int wake;             /* eventfd that interrupts the poll */
	int fd, regular;      /* a regular file's read(2) never waits long */
	int started;
	/* The thread's framing of the records (see readahead.h) */
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

/* Waits until fd can be read or ra_free() stops the thread; 0 to read, -1 to
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

int ra_crcs_push(struct ra_crcs *c, uint64_t off, uint32_t total,
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

void ra_crcs_append(struct ra_crcs *to, const struct ra_crcs *from)
{
	for (size_t i = from->head; i < from->n; i++)
		if (ra_crcs_push(to, from->v[i].off, from->v[i].total,
				 from->v[i].crc))
			break;
}

void ra_crcs_free(struct ra_crcs *c)
{
	free(c->v);
	*c = (struct ra_crcs){ 0 };
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
			if (ra->crc_ok && ra_crcs_push(&s->crcs, ra->rec_off,
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

void ra_free(struct readahead *ra)
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
		ra_crcs_free(&ra->slot[i].crcs);
	}
	free(ra);
}

int ra_new(struct readahead **out, int fd, uint64_t max_data)
{
	struct readahead *ra = calloc(1, sizeof(*ra));
	struct stat st;
	int e;

	*out = NULL;
	if (ra == NULL)
		return -ENOMEM;
	ra->fd = fd;
	ra->max_data = max_data;
	ra->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	ra->wake = eventfd(0, EFD_CLOEXEC);
	e = ra->wake < 0 ? errno : 0;
	pthread_mutex_init(&ra->mu, NULL);
	pthread_cond_init(&ra->cond, NULL);
	for (int i = 0; i < RA_SLOTS; i++)
		if ((ra->slot[i].mem = malloc(RA_HEAD + RA_CHUNK)) == NULL) {
			e = ENOMEM;
			goto fail;
		}
	if (e || (e = pthread_create(&ra->thread, NULL, ra_main, ra)))
		goto fail;
	ra->started = 1;
	*out = ra;
	return 0;
fail:
	ra_free(ra);
	return -e;
}

void ra_take(struct readahead *ra, struct ra_chunk *c, double *waited)
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
	*c = (struct ra_chunk){ .mem = s->mem, .len = s->len, .err = s->err,
				.eof = s->eof, .crcs = &s->crcs,
				.slot = ra->next };
	ra->next = (ra->next + 1) % RA_SLOTS;
}

void ra_release(struct readahead *ra, int slot)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&ra->mu);
	ra->slot[slot].state = RA_EMPTY;
	pthread_cond_broadcast(&ra->cond);
	pthread_mutex_unlock(&ra->mu);
}
