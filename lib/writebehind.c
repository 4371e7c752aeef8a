/*
 * writebehind.c - the writing thread of writebehind.h, its ring of
 * buffers and the checks that make zero copy safe.
 *
 * n buffers in a ring: the caller fills one, hands it to the thread when
 * it is full and goes on in the next free one; the thread writes them in
 * order. With zero copy a buffer handed to the pipe by reference stays
 * out of use (WB_INPIPE) until the pipe's count of unread bytes shows
 * that the reader is past its end.
 */
#include "writebehind.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "buildid.h"
#include "rec_int.h"
#include "rec_shm.h"
#include "xio.h"

#define WB_SLOTS_MAX 6
#define WB_SLOTS 3      /* without zero copy */
#define WB_SLOTS_ZC 6   /* with: two or three may sit in the pipe */
#define ZC_CHECKS 12    /* reader checks: at buffers 0, 1, 2, 4, ... */
/* A buffer filled to less than a quarter of its size is copied even
 * where vmsplice is allowed: a spliced buffer stays out of use until the
 * reader is past it, found by looking at the pipe now and then, while
 * write(2) frees it at once for the cost of a copy of a few kilobytes.
 * The record writer hands over such short buffers when the payloads go
 * by shared memory (a flush every megabyte of payload is a few kilobytes
 * of stream): spliced, they kept every stage of the 10-second job
 * waiting on its output (docs/BENCHMARKS.md). */
#define ZC_SHORT(len, cap) ((len) < (cap) / 4)

enum { WB_FREE, WB_QUEUED, WB_INPIPE };

/* The programs whose reading makes vmsplice safe: every stage reads its
 * input with read(2) through this library (rec_suite_progs). A reader
 * must run one of them, and carry this build's id (buildid.h): the id
 * says the program was built from these very sources, wherever it lies
 * (it replaces the rule of the same folder, which let a program rebuilt
 * since, or of another build copied there, pass, and refused this build
 * copied elsewhere); the names keep out the other binaries of the build,
 * test helpers and benches, which carry the id too but may read their
 * pipe otherwise. */

struct writebehind {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int n;                  /* slots in the ring */
	unsigned char *mem[WB_SLOTS_MAX];
	size_t cap[WB_SLOTS_MAX], len[WB_SLOTS_MAX];
	uint64_t end[WB_SLOTS_MAX]; /* WB_INPIPE: stream position after it */
	int state[WB_SLOTS_MAX];
	int cur;                /* the slot the caller fills */
	int queued;             /* slots waiting or being written */
	int err;                /* first write error, -errno */
	int stop, started, fd;
	int zc;                 /* 0 off, 1 when the readers allow, 2 on */
	int mapped;             /* mem[] from mmap: munmap them */
	int zc_on;              /* vmsplice in use */
	unsigned zc_checks;     /* reader checks done */
	int short_said;         /* zc_why says buffers were short */
	char reader[80];        /* the pipe's reader once zc_on, or "" */
	char zc_why[160];       /* why not vmsplice, "" if nothing refused:
				   the last reader check, or the system */
	uint64_t nbuf;          /* buffers written */
	uint64_t nlong;         /* of them not ZC_SHORT */
	uint64_t pos;           /* bytes handed to fd */
	uint64_t spliced;       /* of them with vmsplice */
};

/* Buffers: mmap'ed ones for vmsplice, whose pages a pipe may still hold
 * when the ring is done with them (munmap leaves them to the pipe, free
 * would hand them to the next malloc), else malloc'ed. Sizes are rounded
 * up to whole pages in the first case; *cap says the size. */
static unsigned char *wb_buf_alloc(int mapped, size_t *cap)
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

static void wb_buf_free(int mapped, unsigned char *p, size_t cap)
{
	if (!mapped)
		free(p);
	else if (p)
		munmap(p, cap);
}

/* Keeps why vmsplice is not used, for -v (under the lock: the caller's
 * thread may ask while this one writes). */
static void wb_set_why(struct writebehind *wb, const char *why)
{
	pthread_mutex_lock(&wb->mu);
	snprintf(wb->zc_why, sizeof(wb->zc_why), "%s", why);
	pthread_mutex_unlock(&wb->mu);
}

/* Whether to vmsplice the next buffer that is not short (ZC_SHORT),
 * number nlong of them: checks the pipe's readers at such buffers 0, 1,
 * 2, 4, 8, ... (a reader may not have started its program yet at first)
 * until they pass or ZC_CHECKS checks failed. */
static int wb_zero_copy(struct writebehind *wb)
{
	uint64_t k = wb->nlong++;
	char why[sizeof(wb->zc_why)];
	long reader;

	if (wb->zc_on || wb->zc == 0)
		return wb->zc_on;
	if (wb->zc == 2)
		return wb->zc_on = 1;
	if (wb->zc_checks >= ZC_CHECKS || (k > 2 && (k & (k - 1))))
		return 0;
	wb->zc_checks++;
	wb->zc_on = buildid_pipe_readers(wb->fd, rec_suite_progs, why,
					 sizeof(why), &reader) == 1;
	wb_set_why(wb, why);
	if (reader) {
		char name[sizeof(wb->reader)];

		buildid_pid_name(reader, name, sizeof(name));
		pthread_mutex_lock(&wb->mu);
		memcpy(wb->reader, name, sizeof(name));
		pthread_mutex_unlock(&wb->mu);
	}
	return wb->zc_on;
}

/* A short buffer goes by write(2): until a reader check says otherwise,
 * that is why nothing was spliced. */
static void wb_short(struct writebehind *wb)
{
	if (wb->zc == 0 || wb->zc_on || wb->zc_checks || wb->short_said)
		return;
	wb->short_said = 1;
	wb_set_why(wb, "every buffer so far was short (under a quarter "
		   "full), and a copy costs less than vmsplice's wait for "
		   "the reader");
}

/* vmsplices slot i; where the system refuses vmsplice itself (a
 * sandbox, an old kernel), writes the rest and the stream goes on
 * without zero copy (*zc = 0 when nothing of slot i is in the pipe by
 * reference). */
static int wb_splice(struct writebehind *wb, int i, int *zc)
{
	char why[sizeof(wb->zc_why)];
	size_t done;
	int e = xio_vmsplice_all(wb->fd, wb->mem[i], wb->len[i], &done);

	if (e != -EINVAL && e != -ENOSYS && e != -EOPNOTSUPP)
		return e;
	snprintf(why, sizeof(why), "vmsplice refused by the system: %s",
		 strerror(-e));
	wb_set_why(wb, why);
	wb->zc = 0;
	wb->zc_on = 0;
	*zc = done > 0;
	return xio_write_all(wb->fd, wb->mem[i] + done, wb->len[i] - done);
}

static void *wb_main(void *arg)
{
	struct writebehind *wb = arg;

	for (int i = 0;; i = (i + 1) % wb->n) {
		int err, e = 0, zc = 0, short_buf;

		pthread_mutex_lock(&wb->mu);
		while (wb->state[i] != WB_QUEUED && !wb->stop)
			pthread_cond_wait(&wb->cond, &wb->mu);
		if (wb->state[i] != WB_QUEUED) { /* stop, nothing left */
			pthread_mutex_unlock(&wb->mu);
			return NULL;
		}
		err = wb->err;
		pthread_mutex_unlock(&wb->mu);
		short_buf = wb->zc == 1 && ZC_SHORT(wb->len[i], wb->cap[i]);
		if (!err && short_buf)
			wb_short(wb);
		if (!err && !short_buf && (zc = wb_zero_copy(wb)))
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

int wb_drain(struct writebehind *wb)
{
	int err;

	pthread_mutex_lock(&wb->mu);
	while (wb->queued)
		pthread_cond_wait(&wb->cond, &wb->mu);
	err = wb->err;
	pthread_mutex_unlock(&wb->mu);
	return err;
}

void wb_free(struct writebehind *wb)
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
		wb_buf_free(wb->mapped, wb->mem[i], wb->cap[i]);
	free(wb);
}

int wb_new(struct writebehind **out, int fd, size_t cap, int zc)
{
	struct writebehind *wb = calloc(1, sizeof(*wb));
	int e;

	*out = NULL;
	if (wb == NULL)
		return -ENOMEM;
	wb->fd = fd;
	wb->zc = zc;
	wb->mapped = zc != 0;
	wb->n = zc ? WB_SLOTS_ZC : WB_SLOTS;
	pthread_mutex_init(&wb->mu, NULL);
	pthread_cond_init(&wb->cond, NULL);
	for (int i = 0; i < wb->n; i++) {
		wb->cap[i] = cap;
		if ((wb->mem[i] = wb_buf_alloc(wb->mapped, &wb->cap[i])) ==
		    NULL) {
			wb_free(wb);
			return -ENOMEM;
		}
	}
	if ((e = pthread_create(&wb->thread, NULL, wb_main, wb))) {
		wb_free(wb);
		return -e;
	}
	wb->started = 1;
	*out = wb;
	return 0;
}

unsigned char *wb_buf(struct writebehind *wb, size_t *cap)
{
	*cap = wb->cap[wb->cur];
	return wb->mem[wb->cur];
}

unsigned char *wb_grow(struct writebehind *wb, size_t len, size_t *cap)
{
	unsigned char *nb = wb_buf_alloc(wb->mapped, cap);

	if (nb == NULL)
		return NULL;
	memcpy(nb, wb->mem[wb->cur], len);
	wb_buf_free(wb->mapped, wb->mem[wb->cur], wb->cap[wb->cur]);
	wb->mem[wb->cur] = nb;
	wb->cap[wb->cur] = *cap;
	return nb;
}

int wb_submit(struct writebehind *wb, size_t len, double *waited)
{
	int next = (wb->cur + 1) % wb->n, err;

	pthread_mutex_lock(&wb->mu);
	wb->len[wb->cur] = len;
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
		*waited += mono_now() - t0;
	}
	err = wb->err;
	pthread_mutex_unlock(&wb->mu);
	wb->cur = next;
	return err;
}

int wb_status(struct writebehind *wb, uint64_t *spliced)
{
	int err;

	pthread_mutex_lock(&wb->mu);
	err = wb->err;
	if (spliced)
		*spliced = wb->spliced;
	pthread_mutex_unlock(&wb->mu);
	return err;
}

void wb_zc_why(struct writebehind *wb, char *buf, size_t n)
{
	if (n == 0)
		return;
	pthread_mutex_lock(&wb->mu);
	snprintf(buf, n, "%s", wb->zc_why);
	pthread_mutex_unlock(&wb->mu);
}

void wb_reader(struct writebehind *wb, char *buf, size_t n)
{
	if (n == 0)
		return;
	pthread_mutex_lock(&wb->mu);
	snprintf(buf, n, "%s", wb->reader);
	pthread_mutex_unlock(&wb->mu);
}

void wb_wrote(struct writebehind *wb, size_t len)
{
	pthread_mutex_lock(&wb->mu);
	wb->pos += len;
	pthread_mutex_unlock(&wb->mu);
}
