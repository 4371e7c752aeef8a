/*
 * h5statsbg.c - a full chunk's statistics counted on threads of their
 * own while this thread writes the chunk.
 *
 * A chunk written through the library (no compression threads, or a
 * group's last chunk) has its statistics counted (h5stats.c) and is
 * written (H5Dwrite: the kernel's copy into the page cache) by h5pack's
 * one writing thread, which bounds a pipeline whose features are many
 * (the keyword-spotting job's). Both only read the chunk, so they can
 * run at once: stats_rows_begin() hands the chunk to the statistics
 * threads, the write goes on here, and stats_rows_end() waits for the
 * count before the buffer is filled again.
 *
 * One thread counting the keyword-spotting job's 418 million values took
 * longer than the write beside it (docs/BENCHMARKS.md), so rows of
 * features [n_mels][n_frames] are counted by up to STATS_THREADS threads,
 * each its own bins of every row: a bin's sums are its own, added in the
 * order of the rows, so the sums are the ones a single thread makes, to
 * the last bit, for any number of threads. Other rows (frames of one
 * row each, audio) are counted by one thread, as before: the layout is
 * the run's, so that is the only thread started. One chunk at a time,
 * in the order written.
 *
 * Nothing else touches a group's statistics between begin and end (its
 * other callers run on this thread, outside that span). Threads that
 * cannot be started are done without (the first: the count is made on
 * this thread, in the same order).
 */
#include <pthread.h>
#include <stdlib.h>

#include "h5out_priv.h"

/* The most statistics threads: four count the keyword-spotting job's
 * chunks in less time than their writes take (H200 host). */
#define STATS_THREADS 4

struct stats_bg {
	pthread_mutex_t lock;
	pthread_cond_t go;      /* a job came, or quit */
	pthread_cond_t done;    /* a thread finished its part */
	h5out *h;
	struct group *g;        /* the job: rows at p of g */
	const void *p;
	size_t rows;
	int by_bins;            /* each thread its bins (else the first) */
	unsigned long job;      /* jobs handed in so far */
	unsigned busy;          /* threads still counting the job */
	int quit;
	unsigned n;             /* threads started */
	struct stats_worker {
		struct stats_bg *b;
		pthread_t thread;
		unsigned i;
	} w[STATS_THREADS];
};

/* Thread i's part of the job: its share of the bins, or the whole job
 * for the first thread when the rows are not counted by bins. */
static void count_part(struct stats_bg *b, unsigned i)
{
	size_t width = b->g->st.width;

	if (b->by_bins)
		stats_rows_bins(b->h, b->g, b->p, b->rows,
				width * i / b->n, width * (i + 1) / b->n);
	else if (i == 0)
		stats_rows(b->h, b->g, b->p, b->rows);
}

static void *stats_main(void *arg)
{
	struct stats_worker *w = arg;
	struct stats_bg *b = w->b;
	unsigned long seen = 0;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		while (b->job == seen && !b->quit)
			pthread_cond_wait(&b->go, &b->lock);
		if (b->job == seen)
			break;
		seen = b->job;
		pthread_mutex_unlock(&b->lock);
		count_part(b, w->i);
		pthread_mutex_lock(&b->lock);
		if (--b->busy == 0)
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

/* Threads counting statistics for -j N: half of N, 1 to STATS_THREADS
 * (N is at most 8 by default: 4 on a host of 8 CPUs or more). */
static unsigned stats_threads(const h5out *h)
{
	size_t n = h->o.jobs / 2;

	return n < 1 ? 1 : n > STATS_THREADS ? STATS_THREADS : (unsigned)n;
}

/* The threads, started at the first chunk (g's: the layout is the
 * run's); NULL when none can be. */
static struct stats_bg *stats_bg(h5out *h, const struct group *g)
{
	struct stats_bg *b;
	unsigned want;

	if (h->sbg || h->sbg_failed)
		return h->sbg;
	want = stats_by_bins(h, g) ? stats_threads(h) : 1;
	b = calloc(1, sizeof(*b));
	if (b == NULL) {
		h->sbg_failed = 1;
		return NULL;
	}
	b->h = h;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->go, NULL);
	pthread_cond_init(&b->done, NULL);
	for (unsigned i = 0; i < want; i++) {
		b->w[i].b = b;
		b->w[i].i = i;
		if (pthread_create(&b->w[i].thread, NULL, stats_main,
				   &b->w[i]) != 0)
			break;
		b->n++;
	}
	if (b->n == 0) {
		stats_bg_free(b);
		h->sbg_failed = 1;
		return NULL;
	}
	h->sbg = b;
	h->sbg_threads = b->n;
	return b;
}

void stats_rows_begin(h5out *h, struct group *g, const void *p,
		      size_t rows)
{
	struct stats_bg *b;

	if (!stats_counted(h, g) || !rows)
		return;
	b = stats_bg(h, g);
	if (b == NULL) {
		stats_rows(h, g, p, rows);
		return;
	}
	pthread_mutex_lock(&b->lock);
	b->g = g;
	b->p = p;
	b->rows = rows;
	b->by_bins = stats_by_bins(h, g);
	b->busy = b->n;
	b->job++;
	pthread_cond_broadcast(&b->go);
	pthread_mutex_unlock(&b->lock);
}

void stats_rows_end(h5out *h)
{
	struct stats_bg *b = h->sbg;

	if (b == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	while (b->busy)
		pthread_cond_wait(&b->done, &b->lock);
	if (b->by_bins) {
		stats_rows_counted(h, b->g, b->rows);
		b->by_bins = 0;
	}
	pthread_mutex_unlock(&b->lock);
}

void stats_bg_stop(h5out *h)
{
	struct stats_bg *b = h->sbg;

	if (b == NULL)
		return;
	pthread_mutex_lock(&b->lock);
	b->quit = 1; /* (a job handed in is counted first) */
	pthread_cond_broadcast(&b->go);
	pthread_mutex_unlock(&b->lock);
	for (unsigned i = 0; i < b->n; i++)
		pthread_join(b->w[i].thread, NULL);
	stats_bg_free(b);
	h->sbg = NULL;
}
