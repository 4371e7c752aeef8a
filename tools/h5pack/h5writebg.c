/*
 * h5writebg.c - a group's full chunk of rows written on a thread of its
 * own while this thread fills the next one.
 *
 * h5pack's one thread copies each record's row into its group's chunk
 * buffers ("working" in h5pack -v: the pipe, the checksum, the copy) and
 * writes a full chunk with the library ("writing": the features'
 * H5Dwrite, which is the kernel's copy into the page cache, and the four
 * per-row columns). A stream of many features, the keyword-spotting
 * job's, is bound by the sum of the two. Here a full chunk (uncompressed,
 * not a group's last nor its first, which makes its datasets) goes into
 * the writing thread's queue with its buffers, the group takes the free
 * place's buffers instead, and the two overlap. The thread writes the
 * chunks one at a time, in the order filled: the library sees the calls
 * one thread would make, in the same order, so the file is the same.
 *
 * While chunks are with the writing thread, that thread owns the HDF5
 * library (a library built without thread safety takes one caller at a
 * time), the group's datasets, and the statistics (the chunk's are counted
 * beside its write: h5statsbg.c). This thread calls write_bg_wait() before
 * it calls the library or counts statistics itself: the functions a
 * record's way may reach the library through do (make_group(),
 * flush_group(), table_flush(), a clip's n_samples in the file), and so
 * do h5out_finish(), h5out_add_stats() and h5out_close(). The functions
 * that call the library on this thread check the rule
 * (write_bg_owner()): append_rows(), which every write of rows and
 * tables goes through, new_group() (every group, a table's too),
 * make_row_datasets() and clamp_block() refuse a call that breaks it,
 * as an internal error (set_clip_samples() waits just before its
 * write). Nothing else changes hands: the group's count of
 * rows is this thread's, moved on when the chunk is handed over, and the
 * writing thread reads only the job.
 *
 * A failure on the writing thread is reported by the next
 * write_bg_start() or write_bg_wait(), with the library's cause, once;
 * both fail from then on, and the chunks after it are dropped (the file
 * is not kept). When the thread or the queue's buffers cannot be had, the
 * chunks are written on this thread. The queue holds WRITE_DEPTH chunks
 * of rows: 4 MiB with 1 MiB chunks.
 */
#include <pthread.h>
#include <stdlib.h>

#include "../common/prog.h"
#include "h5out_priv.h"

/* Chunks handed over and not yet written, at most: with one, the thread
 * waited, at every chunk, for this one to wake and hand it the next. */
#define WRITE_DEPTH 4

/* A chunk of rows: the features and the per-row columns. */
struct rowbuf {
	unsigned char *features;
	int32_t *label, *clip, *segment;
	int64_t *offset;
};

/* A place in the queue: n rows at row `at` of g, from b. Its buffers
 * stay with it: handing a chunk over swaps them with the group's. */
struct job {
	struct group *g;
	hsize_t at;
	size_t n;
	struct rowbuf b;
};

/* Set on the writing thread: it owns the library while it writes. */
static _Thread_local int on_writing_thread;

struct write_bg {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t go;      /* a job came, or quit */
	pthread_cond_t done;    /* a job was written */
	h5out *h;
	struct job q[WRITE_DEPTH]; /* the jobs: pending from head on */
	unsigned head, pending;
	int failed;             /* a write failed: the rest are dropped */
	int quit;
	double t_write;         /* seconds writing, on the thread */
};

static void rowbuf_swap(struct rowbuf *b, struct group *g)
{
	struct rowbuf t = *b;

	b->features = g->features;
	b->label = g->label;
	b->clip = g->clip;
	b->segment = g->segment;
	b->offset = g->offset;
	g->features = t.features;
	g->label = t.label;
	g->clip = t.clip;
	g->segment = t.segment;
	g->offset = t.offset;
}

static void rowbuf_free(struct rowbuf *b)
{
	free(b->features);
	free(b->label);
	free(b->clip);
	free(b->segment);
	free(b->offset);
}

static int rowbuf_alloc(struct rowbuf *b, size_t cap, size_t row_bytes)
{
	b->features = malloc(cap * row_bytes);
	b->label = malloc(cap * sizeof(int32_t));
	b->clip = malloc(cap * sizeof(int32_t));
	b->segment = malloc(cap * sizeof(int32_t));
	b->offset = malloc(cap * sizeof(int64_t));
	return b->features && b->label && b->clip && b->segment && b->offset
	       ? 0 : -1;
}

/* The job's write: the features (their statistics counted beside),
 * then the columns, as flush_group() writes a group's own buffers. */
static int write_job(h5out *h, const struct job *j)
{
	return append_features(h, j->g, j->at, j->n, j->b.features) ||
	       append_columns(h, j->g, j->at, j->n, j->b.label, j->b.clip,
			      j->b.segment, j->b.offset) ? -1 : 0;
}

static void *write_main(void *arg)
{
	struct write_bg *w = arg;

	on_writing_thread = 1;
	/* a thread-safe library keeps a stack of errors per thread */
	h5_catch_errors();
	pthread_mutex_lock(&w->lock);
	for (;;) {
		const struct job *j;
		double t0;
		int err = 0;

		while (!w->pending && !w->quit)
			pthread_cond_wait(&w->go, &w->lock);
		if (!w->pending)
			break;
		/* this thread alone touches q[head] until it is popped */
		j = &w->q[w->head];
		if (!w->failed) {
			pthread_mutex_unlock(&w->lock);
			t0 = prog_now();
			err = write_job(w->h, j);
			pthread_mutex_lock(&w->lock);
			w->t_write += prog_now() - t0;
		}
		w->failed |= err;
		w->head = (w->head + 1) % WRITE_DEPTH;
		w->pending--;
		pthread_cond_signal(&w->done);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void write_bg_free(struct write_bg *w)
{
	for (int i = 0; i < WRITE_DEPTH; i++)
		rowbuf_free(&w->q[i].b);
	pthread_cond_destroy(&w->done);
	pthread_cond_destroy(&w->go);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* The thread and the queue's buffers, sized like g's (every group's are
 * alike: a chunk of rows), made at the first full chunk; NULL when they
 * cannot be. */
static struct write_bg *write_bg(h5out *h, const struct group *g)
{
	struct write_bg *w;
	int ok = 1;

	if (h->wbg || h->wbg_failed)
		return h->wbg;
	h->wbg_failed = 1;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	w->h = h;
	for (int i = 0; i < WRITE_DEPTH; i++)
		ok &= rowbuf_alloc(&w->q[i].b, g->cap, h->row_bytes) == 0;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->go, NULL);
	pthread_cond_init(&w->done, NULL);
	if (!ok || pthread_create(&w->thread, NULL, write_main, w) != 0) {
		write_bg_free(w);
		return NULL;
	}
	h->wbg_failed = 0;
	h->wbg = w;
	return w;
}

int write_bg_start(h5out *h, struct group *g)
{
	struct write_bg *w;
	struct job *j;
	double t0;
	int failed;

	if (h->o.ragged || h->pool || !h->o.write_thread || g->n != g->cap ||
	    !h->row_bytes || g->d_features < 0)
		return 1;
	w = write_bg(h, g);
	if (w == NULL)
		return 1;
	t0 = prog_now();
	pthread_mutex_lock(&w->lock);
	while (w->pending == WRITE_DEPTH)
		pthread_cond_wait(&w->done, &w->lock);
	failed = w->failed;
	if (!failed) {
		/* a free place: its buffers were written, or never used */
		j = &w->q[(w->head + w->pending) % WRITE_DEPTH];
		rowbuf_swap(&j->b, g);
		j->g = g;
		j->at = g->rows;
		j->n = g->n;
		w->pending++;
		h->wbg_busy = 1;
		pthread_cond_signal(&w->go);
	}
	pthread_mutex_unlock(&w->lock);
	h->t_write += prog_now() - t0;
	if (failed) {
		write_bg_wait(h); /* (says why) */
		return -1;
	}
	g->rows += g->n;
	g->n = 0;
	return 0;
}

int write_bg_wait(h5out *h)
{
	struct write_bg *w = h->wbg;
	double t0;
	int failed;

	if (!h->wbg_busy)
		return h->wbg_said ? -1 : 0;
	t0 = prog_now();
	pthread_mutex_lock(&w->lock);
	while (w->pending)
		pthread_cond_wait(&w->done, &w->lock);
	failed = w->failed;
	pthread_mutex_unlock(&w->lock);
	h->wbg_busy = 0;
	h->t_write += prog_now() - t0;
	if (!failed)
		return 0;
	/* said once; every later call fails too */
	h->wbg_said = 1;
	return h5_fail(h, "write rows");
}

int write_bg_owner(const h5out *h)
{
	if (on_writing_thread || !h->wbg_busy)
		return 1;
	prog_err("internal error: h5pack called the HDF5 library while its "
		 "writing thread held it");
	return 0;
}

void write_bg_stop(h5out *h)
{
	struct write_bg *w = h->wbg;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->lock);
	w->quit = 1; /* (the chunks handed over are written first, but
			after a failure) */
	pthread_cond_signal(&w->go);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	h->t_bg_write += w->t_write;
	write_bg_free(w);
	h->wbg = NULL;
	h->wbg_busy = 0;
}
