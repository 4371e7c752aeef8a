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
 *
 * The hand-over takes no lock while nobody sleeps: the caller publishes
 * a clip by moving `submitted`, a decoder claims one by moving `next`
 * (compare and swap), and marks it decoded in its slot's `done`; the
 * lock and the condition variables are for sleeping and waking only.
 * With 16 decoders the lock, taken five times a clip, was a tenth of
 * the writing thread's time on the GPU hosts, and mostly waiting for
 * it. A sleeper and the thread that would wake it each store what they
 * wait for or publish, then read the other's (both sequentially
 * consistent), so that one of them always sees the other: a decoder
 * counts itself in n_waiting and then reads `submitted`, the caller moves
 * `submitted` and then reads n_waiting; the caller sets caller_waits and
 * then reads `done`, a decoder sets `done` and then reads caller_waits.
 * The sleeper checks again under the lock before it sleeps, so a
 * decoder the caller has seen asleep gets the signal. The caller wakes
 * decoders for the clips it hands in (pool_wake()), but counts on those
 * awake for their share, and one of them may be waiting for the caller
 * to write a piece: what guarantees progress is that before the caller
 * waits itself it wakes a sleeper for every clip untaken (pool_wait()),
 * and the decoder of the clip it waits for took it before any later one.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../common/prog.h"
#include "wavcat.h"

/* A slot's buffer larger than this is freed once written, so that one
 * clip of a large piece does not keep its memory for the rest of the
 * run. The piece buffer, used by long clips only, is always freed. */
#define SLOT_KEEP_MAX (16u << 20)

/* Clips handed in for each decoder the caller wakes (pool_wake()): a
 * decoder awake takes clips until none is left (or its clip's pieces
 * wait for the caller), so one woken for every few clips keeps the
 * window full, and the caller, whose time bounds the run, pays for fewer
 * wakes (a system call, and microseconds of it in a virtual machine).
 * Woken for each clip as its slot came free, decoders were woken for
 * nearly every clip, and those wakes were most of the caller's time.
 * Waking none while all sleep, until this many wait, was slower: a
 * decoder must be woken as soon as clips wait (docs/BENCHMARKS.md has
 * what each way measured). */
#define WAKE_CLIPS 4

struct slot {
	struct job job;
	_Atomic int done;        /* decoded, not yet released */
	_Atomic int piece_ready; /* job.piece holds a piece not yet
				    written (set and cleared under the
				    lock) */
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
	pthread_mutex_t lock;      /* for sleeping and waking only */
	pthread_cond_t can_take;   /* a clip was submitted, or stop */
	_Atomic size_t n_waiting;  /* threads asleep on can_take, or about
				      to be */
	pthread_cond_t finished;   /* a clip was decoded, or a piece
				      handed on */
	_Atomic int caller_waits;  /* the caller sleeps on finished */
	pool_annotate_fn annotate; /* run by the decoders, or NULL */
	void *annotate_ctx;
	_Atomic uint64_t submitted; /* clips handed in by the caller */
	_Atomic uint64_t next;      /* next clip to hand out */
	_Atomic uint64_t released;  /* clips the caller is done with */
	_Atomic int stop;
	double t_wait;
	uint64_t wakes;             /* decoders woken by the caller */
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
	/* (the caller reads it without the lock: published by the store) */
	atomic_store(&s->piece_ready, 1);
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

/* Whether clips wait that no decoder has taken. */
static int untaken(struct pool *p)
{
	return atomic_load(&p->next) < atomic_load(&p->submitted);
}

/* Claims the next clip for a decoder, sleeping while there is none:
 * 1 with its number in *i, or 0 to stop. */
static int claim(struct pool *p, uint64_t *i)
{
	uint64_t n;

	for (;;) {
		if (atomic_load(&p->stop))
			return 0;
		n = atomic_load(&p->next);
		if (n < atomic_load(&p->submitted)) {
			if (atomic_compare_exchange_weak(&p->next, &n, n + 1)) {
				/* none decoded once pool_stop() has begun */
				*i = n;
				return !atomic_load(&p->stop);
			}
			continue;
		}
		pthread_mutex_lock(&p->lock);
		atomic_fetch_add(&p->n_waiting, 1);
		while (!p->stop && !untaken(p))
			pthread_cond_wait(&p->can_take, &p->lock);
		atomic_fetch_sub(&p->n_waiting, 1);
		pthread_mutex_unlock(&p->lock);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->p;
	struct slot *s;
	uint64_t i;

	while (claim(p, &i)) {
		s = &p->slots[i % p->window];
		w->slot = s;
		w->index = i;
		if (p->annotate)
			p->annotate(p->annotate_ctx, &s->job.clip);
		decode_clip(w, &s->job);
		atomic_store(&s->done, 1);
		if (atomic_load(&p->caller_waits) && i == p->released) {
			pthread_mutex_lock(&p->lock);
			pthread_cond_signal(&p->finished);
			pthread_mutex_unlock(&p->lock);
		}
	}
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
	atomic_init(&p->n_waiting, 0);
	atomic_init(&p->caller_waits, 0);
	atomic_init(&p->submitted, 0);
	atomic_init(&p->next, 0);
	atomic_init(&p->released, 0);
	atomic_init(&p->stop, 0);
	p->slots = calloc(window, sizeof(*p->slots));
	for (i = 0; p->slots && i < window; i++) {
		atomic_init(&p->slots[i].done, 0);
		atomic_init(&p->slots[i].piece_ready, 0);
		pthread_cond_init(&p->slots[i].taken, NULL);
	}
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

size_t pool_room(const struct pool *p)
{
	/* Only the caller changes submitted and released. */
	return p->window -
	       (size_t)(atomic_load_explicit(&p->submitted,
					     memory_order_relaxed) -
			atomic_load_explicit(&p->released,
					     memory_order_relaxed));
}

int pool_has_room(const struct pool *p)
{
	return pool_room(p) > 0;
}

int pool_submit(struct pool *p, const struct clip *c)
{
	uint64_t n = atomic_load_explicit(&p->submitted, memory_order_relaxed);
	struct slot *s = &p->slots[n % p->window];

	/* The slot is free: no thread touches it until submitted moves. */
	if (inputs_keep_clip(c, &s->job.buf, &s->job.cap, &s->job.clip))
		return -1;
	atomic_store(&p->submitted, n + 1);
	return 0;
}

void pool_wake(struct pool *p)
{
	uint64_t queued = atomic_load(&p->submitted) - atomic_load(&p->next);
	size_t sleeping = atomic_load(&p->n_waiting);
	size_t awake = p->n_workers - sleeping;
	size_t want = (size_t)((queued + WAKE_CLIPS - 1) / WAKE_CLIPS);

	/* A decoder that is awake looks at the queue before it sleeps (it
	 * counts itself in n_waiting, then reads submitted, which moved
	 * before n_waiting was read here), so clips left for it are never
	 * forgotten: the ones awake are counted on for their share. */
	want = want > awake ? want - awake : 0;
	if (want > sleeping)
		want = sleeping;
	if (want == 0)
		return;
	pthread_mutex_lock(&p->lock);
	for (size_t k = 0; k < want; k++)
		pthread_cond_signal(&p->can_take);
	pthread_mutex_unlock(&p->lock);
	p->wakes += want;
}

/* Whether clip i's slot has a piece ready (*piece 1) or the clip's end
 * (*piece 0). `done` first: once it is seen, a piece handed on before it
 * is seen too. */
static int ready(struct slot *s, int *piece)
{
	int done = atomic_load(&s->done);

	*piece = atomic_load(&s->piece_ready);
	return *piece || done;
}

struct job *pool_wait(struct pool *p, uint64_t i, int *piece)
{
	struct slot *s = &p->slots[i % p->window];
	double t0;

	if (ready(s, piece))
		return &s->job;
	t0 = prog_now();
	pthread_mutex_lock(&p->lock);
	atomic_store(&p->caller_waits, 1);
	/* about to wait while clips are untaken, and the decoders awake may
	 * be busy with long ones: a sleeping decoder for each (this thread
	 * blocks anyway, so the calls cost it nothing) */
	if (!ready(s, piece))
		for (uint64_t q = p->submitted - p->next, k = 0;
		     k < q && k < p->n_waiting; k++, p->wakes++)
			pthread_cond_signal(&p->can_take);
	/* a piece handed on before the clip ended comes first */
	while (!ready(s, piece))
		pthread_cond_wait(&p->finished, &p->lock);
	atomic_store(&p->caller_waits, 0);
	pthread_mutex_unlock(&p->lock);
	p->t_wait += prog_now() - t0;
	return &s->job;
}

void pool_piece_done(struct pool *p, uint64_t i)
{
	struct slot *s = &p->slots[i % p->window];

	pthread_mutex_lock(&p->lock);
	atomic_store(&s->piece_ready, 0);
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
	atomic_store_explicit(&s->done, 0, memory_order_relaxed);
	/* (the slot is reused only by a later pool_submit, on this thread) */
	atomic_store(&p->released, i + 1);
}

uint64_t pool_wakes(const struct pool *p)
{
	return p ? p->wakes : 0;
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
