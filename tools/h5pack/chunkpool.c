/*
 * chunkpool.c - whole chunks shuffled and compressed in worker threads
 * (see chunkpool.h).
 *
 * Slots form a ring of depth: the caller fills slot submitted % depth and
 * releases slot released % depth; a worker takes the next slot handed in
 * and not yet taken. Each slot owns an input buffer (swapped with the
 * caller's at submit) and an output buffer of the compressor's bound, each
 * worker a buffer to shuffle into, all allocated at start: nothing is
 * allocated per chunk, and the memory is a function of the options only.
 */
#include "chunkpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "../common/prog.h"
#include "h5out.h"

struct slot {
	unsigned char *in, *out;
	size_t in_len;
	int done;            /* compressed (under mu); cleared at submit */
	struct chunk_job job;
};

struct worker {
	struct chunkpool *p;
	pthread_t thread;
	ZSTD_CCtx *zc;       /* zstd only */
	unsigned char *shuf; /* chunk_bytes */
	double t_work;
};

struct chunkpool {
	int method;
	int level;
	size_t esize, chunk_bytes, out_cap;
	struct slot *slots;
	size_t depth;
	struct worker *workers;
	size_t n_workers;        /* started */
	size_t cap_workers;      /* allocated */
	pthread_mutex_t mu;
	pthread_cond_t work;     /* a slot was queued, or stop */
	pthread_cond_t done;     /* a slot was compressed */
	uint64_t submitted, taken, released;
	int stop;
};

/* HDF5's shuffle filter (H5Zshuffle.c): byte j of element i goes to
 * j * n + i; the bytes after the last whole element stay at the end. A
 * type of one byte, or a single element, is left as it is. */
static void shuffle(unsigned char *dst, const unsigned char *src,
		    size_t len, size_t esize)
{
	size_t n = len / esize;

	if (esize <= 1 || n <= 1) {
		memcpy(dst, src, len);
		return;
	}
	if (esize == 2) {
		unsigned char *lo = dst, *hi = dst + n;

		for (size_t i = 0; i < n; i++) {
			lo[i] = src[2 * i];
			hi[i] = src[2 * i + 1];
		}
	} else {
		for (size_t j = 0; j < esize; j++)
			for (size_t i = 0; i < n; i++)
				dst[j * n + i] = src[i * esize + j];
	}
	memcpy(dst + n * esize, src + n * esize, len - n * esize);
}

/* What the filters make of the slot's chunk: deflate as H5Zdeflate.c does
 * (compress2 at the level), zstd as zstd_filter.c does (ZSTD_compress at
 * the level, a frame that records its size). */
static void compress_slot(struct chunkpool *p, struct worker *w,
			  struct slot *s)
{
	struct chunk_job *j = &s->job;

	shuffle(w->shuf, s->in, s->in_len, p->esize);
	if (p->method == H5OUT_GZIP) {
		uLongf n = (uLongf)p->out_cap;
		int e = compress2(s->out, &n, w->shuf, (uLong)s->in_len,
				  p->level);

		if (e != Z_OK) {
			j->err = e == Z_MEM_ERROR ? "zlib: out of memory" :
				 e == Z_BUF_ERROR ? "zlib: output buffer too small" :
				 "zlib: compress2 failed (bad level)";
			return;
		}
		j->out_len = (size_t)n;
	} else {
		size_t n = ZSTD_compressCCtx(w->zc, s->out, p->out_cap, w->shuf,
					     s->in_len, p->level);

		if (ZSTD_isError(n)) {
			j->err = ZSTD_getErrorName(n);
			return;
		}
		j->out_len = n;
	}
	j->out = s->out;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct chunkpool *p = w->p;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct slot *s;
		double t0;

		while (!p->stop && p->taken == p->submitted)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->stop)
			break;
		s = &p->slots[p->taken++ % p->depth];
		pthread_mutex_unlock(&p->mu);
		t0 = prog_now();
		compress_slot(p, w, s);
		w->t_work += prog_now() - t0;
		pthread_mutex_lock(&p->mu);
		s->done = 1;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct chunkpool *chunkpool_start(int method, unsigned level, size_t esize,
				  size_t chunk_bytes, size_t threads,
				  size_t depth)
{
	struct chunkpool *p = calloc(1, sizeof(*p));
	int e = ENOMEM;

	if (!p)
		return NULL;
	p->method = method;
	p->level = (int)level;
	p->esize = esize;
	p->chunk_bytes = chunk_bytes;
	p->out_cap = method == H5OUT_GZIP ?
		     (size_t)compressBound((uLong)chunk_bytes) :
		     ZSTD_compressBound(chunk_bytes);
	p->depth = depth < threads ? threads : depth;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	p->slots = calloc(p->depth, sizeof(*p->slots));
	p->workers = calloc(threads, sizeof(*p->workers));
	if (!p->slots || !p->workers)
		goto fail;
	p->cap_workers = threads;
	for (size_t i = 0; i < p->depth; i++) {
		struct slot *s = &p->slots[i];

		s->in = malloc(chunk_bytes);
		s->out = malloc(p->out_cap);
		if (!s->in || !s->out)
			goto fail;
	}
	for (size_t i = 0; i < threads; i++) {
		struct worker *w = &p->workers[i];

		w->p = p;
		if (!(w->shuf = malloc(chunk_bytes)) ||
		    (method == H5OUT_ZSTD && !(w->zc = ZSTD_createCCtx())))
			goto fail;
		if ((e = pthread_create(&w->thread, NULL, worker_main, w))) {
			if (i > 0)
				break; /* a thread limit: go on with fewer */
			goto fail;
		}
		p->n_workers = i + 1;
		e = ENOMEM;
	}
	return p;
fail:
	chunkpool_stop(p);
	errno = e;
	return NULL;
}

int chunkpool_full(const struct chunkpool *p)
{
	/* only the caller moves submitted and released */
	return p->submitted - p->released == p->depth;
}

size_t chunkpool_pending(const struct chunkpool *p)
{
	return (size_t)(p->submitted - p->released);
}

void chunkpool_submit(struct chunkpool *p, unsigned char **buf, size_t len,
		      int tag, uint64_t at)
{
	struct slot *s = &p->slots[p->submitted % p->depth];
	unsigned char *t = s->in;

	/* the slot is free: no worker looks at it until submitted moves */
	s->in = *buf;
	*buf = t;
	s->in_len = len;
	s->job = (struct chunk_job){ .tag = tag, .at = at };
	pthread_mutex_lock(&p->mu);
	s->done = 0;
	p->submitted++;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->mu);
}

const struct chunk_job *chunkpool_oldest(struct chunkpool *p)
{
	struct slot *s = &p->slots[p->released % p->depth];

	if (p->released == p->submitted)
		return NULL;
	pthread_mutex_lock(&p->mu);
	while (!s->done)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	return &s->job;
}

void chunkpool_release(struct chunkpool *p)
{
	/* only the caller reads released; the slot is the workers' again
	 * once chunkpool_submit() moves submitted, under mu */
	p->released++;
}

void chunkpool_stop(struct chunkpool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < p->n_workers; i++)
		pthread_join(p->workers[i].thread, NULL);
	for (size_t i = 0; p->workers && i < p->cap_workers; i++) {
		ZSTD_freeCCtx(p->workers[i].zc);
		free(p->workers[i].shuf);
	}
	for (size_t i = 0; p->slots && i < p->depth; i++) {
		free(p->slots[i].in);
		free(p->slots[i].out);
	}
	free(p->slots);
	free(p->workers);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

size_t chunkpool_threads(const struct chunkpool *p)
{
	return p->n_workers;
}

double chunkpool_work_time(const struct chunkpool *p)
{
	double t = 0;

	for (size_t i = 0; p && i < p->n_workers; i++)
		t += p->workers[i].t_work;
	return t;
}
