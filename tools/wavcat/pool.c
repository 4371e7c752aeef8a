/*
 * pool.c - decoder threads feeding an ordered writer. The caller hands
 * the clips in, in order, each copied into slot i % window (the list it
 * reads them from reuses its buffers); whichever thread is free decodes
 * it there, and the caller takes the slots back in clip order. A thread
 * never runs more than window clips ahead of the caller, so memory stays
 * flat however slow the output is, and the output order is the input
 * order for any number of threads.
 *
 * A clip longer than a piece is handed on a piece at a time: its thread
 * puts the full piece in the slot's piece buffer and goes on decoding
 * into the other; when that one fills too, it waits until the caller has
 * written the piece before (pool_piece_done()). A slot holds at most two
 * pieces so, whatever the clip's length, and while the caller writes a
 * long clip the other threads decode the clips after it, up to the
 * window. No thread waits on anything but the caller, and the caller
 * only waits on the clip it writes, whose thread took it before any
 * later clip: every wait ends.
 */
#include <pthread.h>
#include <stdlib.h>

#include "../common/prog.h"
#include "wavcat.h"

/* A slot's buffer larger than this is freed once written, so that one
 * clip of a large piece does not keep its memory for the rest of the
 * run. The piece buffer, used by long clips only, is always freed. */
#define SLOT_KEEP_MAX (16u << 20)

/* Clips waiting for a decoder before the caller wakes a sleeping one,
 * while another decoder is awake (it takes them as it finishes its clip).
 * Waking a thread costs the caller a system call and the thread's CPU an
 * interrupt, microseconds in a virtual machine: done for every clip, it
 * was most of the writing thread's time for short clips. */
#define WAKE_QUEUED 4

struct slot {
	struct job job;
	int done;                /* decoded, not yet released */
	int piece_ready;         /* job.piece holds a piece not yet
				    written */
	pthread_cond_t taken;    /* the piece was written, or stop */
};

struct worker {
	struct pool *p;
	struct decoder *dec;
	pthread_t thread;
	int started;
	struct slot *slot;       /* the clip being decoded, for */
	uint64_t index;          /* hand_piece() */
};

struct pool {
	struct slot *slots;
	size_t window;
	struct worker *workers;
	size_t n_workers;
	pthread_mutex_t lock;
	pthread_cond_t can_take;   /* a slot was released, or stop */
	size_t n_waiting;          /* threads waiting on can_take */
	pthread_cond_t finished;   /* a clip was decoded, or a piece
				      handed on */
	pool_annotate_fn annotate; /* run by the decoders, or NULL */
	void *annotate_ctx;
	uint64_t submitted;        /* clips handed in by the caller */
	uint64_t next;             /* next clip to hand out */
	uint64_t released;         /* clips the caller is done with */
	int stop;
	double t_wait;
};

/* The decoder's emit(): puts the full piece in out in the slot's piece
 * buffer, once the caller has written the one before, and gives out the
 * buffer that one was in. */
static int hand_piece(void *arg, struct decoded *out)
{
	struct worker *w = arg;
	struct pool *p = w->p;
	struct slot *s = w->slot;
	struct decoded *pc = &s->job.piece;
	void *data;
	size_t cap;

	pthread_mutex_lock(&p->lock);
	while (s->piece_ready && !p->stop)
		pthread_cond_wait(&s->taken, &p->lock);
	if (p->stop) {
		pthread_mutex_unlock(&p->lock);
		return -1;
	}
	data = pc->data;
	cap = pc->cap;
	*pc = *out;
	out->data = data;
	out->cap = cap;
	s->piece_ready = 1;
	if (w->index == p->released)
		pthread_cond_signal(&p->finished);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* Decodes the job's clip (or copies the reason known beforehand). */
static void decode_clip(struct worker *w, struct job *j)
{
	struct decoded *out = &j->out;

	if (j->clip.skip != NULL) {
		out->status = DEC_SKIP;
		out->n = 0;
		out->offset = 0;
		out->clip_samples = 0;
		out->clipped = 0;
		out->fitted = 0;
		out->source_len = 0;
		snprintf(out->reason, sizeof(out->reason), "%s", j->clip.skip);
		return;
	}
	decoder_run(w->dec, j->clip.path, out, hand_piece, w);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->p;
	struct slot *s;
	uint64_t i;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && p->next >= p->submitted) {
			p->n_waiting++;
			pthread_cond_wait(&p->can_take, &p->lock);
			p->n_waiting--;
		}
		if (p->stop)
			break;
		i = p->next++;
		s = &p->slots[i % p->window];
		w->slot = s;
		w->index = i;
		pthread_mutex_unlock(&p->lock);
		if (p->annotate)
			p->annotate(p->annotate_ctx, &s->job.clip);
		decode_clip(w, &s->job);
		pthread_mutex_lock(&p->lock);
		s->done = 1;
		if (i == p->released)
			pthread_cond_signal(&p->finished);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int pool_start(struct pool **out, const struct decode_cfg *cfg,
	       size_t n_threads, size_t window, pool_annotate_fn annotate,
	       void *ctx)
{
	struct pool *p = calloc(1, sizeof(*p));
	size_t i;

	*out = NULL;
	if (p == NULL)
		return -1;
	p->window = window;
	p->annotate = annotate;
	p->annotate_ctx = ctx;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->can_take, NULL);
	pthread_cond_init(&p->finished, NULL);
	p->slots = calloc(window, sizeof(*p->slots));
	for (i = 0; p->slots && i < window; i++)
		pthread_cond_init(&p->slots[i].taken, NULL);
	p->workers = calloc(n_threads, sizeof(*p->workers));
	if (p->slots == NULL || p->workers == NULL)
		goto fail;
	for (i = 0; i < n_threads; i++) {
		struct worker *w = &p->workers[i];

		w->p = p;
		w->dec = decoder_new(cfg);
		p->n_workers = i + 1;
		if (w->dec == NULL ||
		    pthread_create(&w->thread, NULL, worker_main, w) != 0)
			goto fail;
		w->started = 1;
	}
	*out = p;
	return 0;
fail:
	pool_stop(p, NULL, NULL, NULL, NULL);
	return -1;
}

int pool_has_room(const struct pool *p)
{
	/* Only the caller changes submitted and released. */
	return p->submitted < p->released + p->window;
}

int pool_submit(struct pool *p, const struct clip *c)
{
	struct slot *s = &p->slots[p->submitted % p->window];

	/* The slot is free: no thread touches it until submitted moves. */
	if (inputs_keep_clip(c, &s->job.buf, &s->job.cap, &s->job.clip))
		return -1;
	pthread_mutex_lock(&p->lock);
	p->submitted++;
	/* a decoder that is awake looks at the queue before it sleeps (under
	 * the lock), so clips left for it are never forgotten */
	if (p->n_waiting && (p->n_waiting == p->n_workers ||
			     p->submitted - p->next >= WAKE_QUEUED))
		pthread_cond_signal(&p->can_take);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

struct job *pool_wait(struct pool *p, uint64_t i, int *piece)
{
	struct slot *s = &p->slots[i % p->window];
	double t0 = prog_now();

	pthread_mutex_lock(&p->lock);
	/* about to wait while clips are untaken, and the decoders awake may
	 * be busy with long ones: a sleeping decoder for each (this thread
	 * blocks anyway, so the calls cost it nothing) */
	if (!s->done && !s->piece_ready)
		for (uint64_t q = p->submitted - p->next, k = 0;
		     k < q && k < p->n_waiting; k++)
			pthread_cond_signal(&p->can_take);
	while (!s->done && !s->piece_ready)
		pthread_cond_wait(&p->finished, &p->lock);
	/* a piece handed on before the clip ended comes first */
	*piece = s->piece_ready;
	pthread_mutex_unlock(&p->lock);
	p->t_wait += prog_now() - t0;
	return &s->job;
}

void pool_piece_done(struct pool *p, uint64_t i)
{
	struct slot *s = &p->slots[i % p->window];

	pthread_mutex_lock(&p->lock);
	s->piece_ready = 0;
	pthread_cond_signal(&s->taken);
	pthread_mutex_unlock(&p->lock);
}

void pool_release(struct pool *p, uint64_t i)
{
	struct slot *s = &p->slots[i % p->window];

	if (s->job.out.cap > SLOT_KEEP_MAX) {
		free(s->job.out.data);
		s->job.out.data = NULL;
		s->job.out.cap = 0;
	}
	free(s->job.piece.data);
	s->job.piece.data = NULL;
	s->job.piece.cap = 0;
	pthread_mutex_lock(&p->lock);
	s->done = 0;
	p->released = i + 1;
	pthread_mutex_unlock(&p->lock);
}

void pool_stop(struct pool *p, double *t_read, double *t_resample,
	       double *t_emit, double *t_wait)
{
	double r, x, e;
	size_t i;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->can_take);
	for (i = 0; p->slots && i < p->window; i++)
		pthread_cond_broadcast(&p->slots[i].taken);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->n_workers; i++) {
		struct worker *w = &p->workers[i];

		if (w->started)
			pthread_join(w->thread, NULL);
		if (w->dec && t_read) {
			decoder_times(w->dec, &r, &x, &e);
			*t_read += r;
			*t_resample += x;
			*t_emit += e;
		}
		decoder_free(w->dec);
	}
	if (t_wait)
		*t_wait += p->t_wait;
	for (i = 0; p->slots && i < p->window; i++) {
		free(p->slots[i].job.out.data);
		free(p->slots[i].job.piece.data);
		free(p->slots[i].job.buf);
		pthread_cond_destroy(&p->slots[i].taken);
	}
	free(p->slots);
	free(p->workers);
	pthread_cond_destroy(&p->can_take);
	pthread_cond_destroy(&p->finished);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
