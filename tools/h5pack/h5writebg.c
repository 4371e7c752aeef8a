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
 * not a group's last) goes to a writing thread with its buffers, the
 * group takes a spare set in their place, and the two overlap. One chunk
 * at a time, in the order filled: the library sees the calls one thread
 * would make, in the same order, so the file is the same.
 *
 * While a chunk is with the writing thread, that thread owns the HDF5
 * library (a library built without thread safety takes one caller at a
 * time), the group's datasets, and the statistics (the chunk's are counted
 * beside its write: h5statsbg.c). This thread calls write_bg_wait() before
 * it calls the library or counts statistics itself: h5out_add() does for
 * every record but a row of the fixed layout, and so do the functions a
 * row's way may reach the library through (make_group(), flush_group(),
 * table_flush(), a clip's n_samples in the file) and h5out_finish(),
 * h5out_add_stats(), h5out_close(); append_rows(), which every write of
 * rows and tables goes through, refuses a call that breaks the rule, as
 * an internal error (write_bg_owner()). Nothing else changes hands: the
 * group's count of rows is this thread's, moved on when the chunk is
 * handed over, and the writing thread reads only the job.
 *
 * A failure on the writing thread is reported by the next
 * write_bg_wait(), with the library's cause. When the thread or the
 * spare buffers cannot be had, the chunk is written here, as before.
 */
#include <pthread.h>
#include <stdlib.h>

#include "../common/prog.h"
#include "h5out_priv.h"

/* A chunk of rows: the features and the per-row columns. */
struct rowbuf {
	unsigned char *features;
	int32_t *label, *clip, *segment;
	int64_t *offset;
};

/* Set on the writing thread: it owns the library while it writes. */
static _Thread_local int on_writing_thread;

struct write_bg {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t go;      /* a job came, or quit */
	pthread_cond_t done;    /* the job was written */
	h5out *h;
	/* the job: n rows at row `at` of g, from b */
	struct group *g;
	hsize_t at;
	size_t n;
	struct rowbuf b;        /* the job's, else the spare set */
	int pending;            /* handed over, not yet written */
	int failed;             /* the job's write failed */
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

/* The job's write: the features with their statistics counted beside,
 * then the columns; what write_features() and write_columns() do with a
 * group's own buffers. */
static int write_job(struct write_bg *w)
{
	h5out *h = w->h;
	struct group *g = w->g;
	int err;

	stats_rows_begin(h, g, w->b.features, w->n);
	err = append_rows(h, g->d_features, h->ftype, h->rank, w->at, w->n,
			  w->b.features);
	stats_rows_end(h);
	return err ||
	       append_rows(h, g->d_label, H5T_NATIVE_INT32, 1, w->at, w->n,
			   w->b.label) ||
	       append_rows(h, g->d_clip, H5T_NATIVE_INT32, 1, w->at, w->n,
			   w->b.clip) ||
	       append_rows(h, g->d_segment, H5T_NATIVE_INT32, 1, w->at, w->n,
			   w->b.segment) ||
	       append_rows(h, g->d_offset, H5T_NATIVE_INT64, 1, w->at, w->n,
			   w->b.offset) ? -1 : 0;
}

static void *write_main(void *arg)
{
	struct write_bg *w = arg;

	on_writing_thread = 1;
	/* a thread-safe library keeps a stack of errors per thread */
	h5_catch_errors();
	pthread_mutex_lock(&w->lock);
	for (;;) {
		double t0;
		int err;

		while (!w->pending && !w->quit)
			pthread_cond_wait(&w->go, &w->lock);
		if (!w->pending)
			break;
		pthread_mutex_unlock(&w->lock);
		t0 = prog_now();
		err = write_job(w);
		pthread_mutex_lock(&w->lock);
		w->t_write += prog_now() - t0;
		w->failed = err;
		w->pending = 0;
		pthread_cond_signal(&w->done);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void write_bg_free(struct write_bg *w)
{
	rowbuf_free(&w->b);
	pthread_cond_destroy(&w->done);
	pthread_cond_destroy(&w->go);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* The thread and its spare buffers, sized like g's (every group's are
 * alike: a chunk of rows), made at the first full chunk; NULL when they
 * cannot be. */
static struct write_bg *write_bg(h5out *h, const struct group *g)
{
	struct write_bg *w;
	size_t cap = g->cap;

	if (h->wbg || h->wbg_failed)
		return h->wbg;
	h->wbg_failed = 1;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	w->h = h;
	w->b.features = malloc(cap * h->row_bytes);
	w->b.label = malloc(cap * sizeof(int32_t));
	w->b.clip = malloc(cap * sizeof(int32_t));
	w->b.segment = malloc(cap * sizeof(int32_t));
	w->b.offset = malloc(cap * sizeof(int64_t));
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->go, NULL);
	pthread_cond_init(&w->done, NULL);
	if (!w->b.features || !w->b.label || !w->b.clip || !w->b.segment ||
	    !w->b.offset ||
	    pthread_create(&w->thread, NULL, write_main, w) != 0) {
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

	if (h->o.ragged || h->pool || !h->o.write_thread || g->n != g->cap ||
	    !h->row_bytes)
		return 1;
	w = write_bg(h, g);
	if (w == NULL)
		return 1;
	pthread_mutex_lock(&w->lock);
	/* (write_bg_wait() came first: no job is pending) */
	rowbuf_swap(&w->b, g);
	w->g = g;
	w->at = g->rows;
	w->n = g->n;
	w->pending = 1;
	h->wbg_busy = 1;
	pthread_cond_signal(&w->go);
	pthread_mutex_unlock(&w->lock);
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
		return 0;
	t0 = prog_now();
	pthread_mutex_lock(&w->lock);
	while (w->pending)
		pthread_cond_wait(&w->done, &w->lock);
	failed = w->failed;
	pthread_mutex_unlock(&w->lock);
	h->wbg_busy = 0;
	h->t_write += prog_now() - t0;
	return failed ? h5_fail(h, "write rows") : 0;
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
	w->quit = 1; /* (a job handed over is written first) */
	pthread_cond_signal(&w->go);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	h->t_bg_write += w->t_write;
	write_bg_free(w);
	h->wbg = NULL;
	h->wbg_busy = 0;
}
