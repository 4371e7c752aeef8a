/*
 * h5statsbg.c - a full chunk's statistics counted on a thread of their
 * own while this thread writes the chunk.
 *
 * A chunk written through the library (no compression threads, or a
 * group's last chunk) has its statistics counted (h5stats.c) and is
 * written (H5Dwrite: the kernel's copy into the page cache) by h5pack's
 * one writing thread, which bounds a pipeline whose features are many
 * (the keyword-spotting job's). Both only read the chunk, so they can
 * run at once: stats_rows_begin() hands the chunk to the statistics
 * thread, the write goes on here, and stats_rows_end() waits for the
 * count before the buffer is filled again. One chunk at a time, in the
 * order written, so the sums are the ones a single thread makes, to the
 * last bit: the statistics do not depend on whether this thread ran.
 *
 * Nothing else touches a group's statistics between begin and end (its
 * other callers run on this thread, outside that span). When the thread
 * cannot be started the count is made on this thread, in the same order.
 */
#include <pthread.h>
#include <stdlib.h>

#include "h5out_priv.h"

struct stats_bg {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t go;      /* a job came, or quit */
	pthread_cond_t done;    /* the job was counted */
	h5out *h;
	struct group *g;        /* the job: rows at p of g */
	const void *p;
	size_t rows;
	int pending;
	int quit;
};

static void *stats_main(void *arg)
{
	struct stats_bg *b = arg;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		while (!b->pending && !b->quit)
			pthread_cond_wait(&b->go, &b->lock);
		if (!b->pending)
			break;
		pthread_mutex_unlock(&b->lock);
		stats_rows(b->h, b->g, b->p, b->rows);
		pthread_mutex_lock(&b->lock);
		b->pending = 0;
		pthread_cond_signal(&b->done);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

static void stats_bg_free(struct stats_bg *b)
{
	pthread_cond_destroy(&b->done);
	pthread_cond_destroy(&b->go);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* The thread, started at the first chunk; NULL when it cannot be. */
static struct stats_bg *stats_bg(h5out *h)
{
	struct stats_bg *b;

	if (h->sbg || h->sbg_failed)
		return h->sbg;
	b = calloc(1, sizeof(*b));
	if (b == NULL) {
		h->sbg_failed = 1;
		return NULL;
	}
	b->h = h;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->go, NULL);
	pthread_cond_init(&b->done, NULL);
	if (pthread_create(&b->thread, NULL, stats_main, b) != 0) {
		stats_bg_free(b);
		h->sbg_failed = 1;
		return NULL;
	}
	h->sbg = b;
	return b;
}

void stats_rows_begin(h5out *h, struct group *g, const void *p,
		      size_t rows)
{
	struct stats_bg *b;

	if (!stats_counted(h, g) || !rows)
		return;
	b = stats_bg(h);
	if (b == NULL) {
		stats_rows(h, g, p, rows);
		return;
	}
	pthread_mutex_lock(&b->lock);
	b->g = g;
	b->p = p;
	b->rows = rows;
	b->pending = 1;
	pthread_cond_signal(&b->go);
	pthread_mutex_unlock(&b->lock);
}

void stats_rows_end(h5out *h)
{
	struct stats_bg *b = h->sbg;

	if (b == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->done, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

void stats_bg_stop(h5out *h)
{
	struct stats_bg *b = h->sbg;

	if (b == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	b->quit = 1; /* (a job handed in is counted first) */
	pthread_cond_signal(&b->go);
	pthread_mutex_unlock(&b->lock);
	pthread_join(b->thread, NULL);
	stats_bg_free(b);
	h->sbg = NULL;
}
