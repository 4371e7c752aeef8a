/*
 * loop.c - gpumel's thread loop: the queues the batches circulate
 * through, the compute loop (the main thread, driving the backend) and the
 * writer thread (see loop.h).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rec.h"
#include "../common/prog.h"
#include "loop.h"

/* ------------------------------------------------------------------ */
/* Queues */

void loop_fail(struct loop *lp, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&lp->mu);
	if (!lp->abort) {
		lp->abort = 1;
		va_start(ap, fmt);
		vsnprintf(lp->err, sizeof(lp->err), fmt, ap);
		va_end(ap);
		pthread_cond_broadcast(&lp->free_q.cond);
		pthread_cond_broadcast(&lp->ready_q.cond);
		pthread_cond_broadcast(&lp->done_q.cond);
		pthread_cond_broadcast(&lp->resized);
	}
	pthread_mutex_unlock(&lp->mu);
}

void q_push(struct loop *lp, struct queue *q, struct hbatch *hb)
{
	pthread_mutex_lock(&lp->mu);
	/* cap is the number of batches: a push never waits */
	q->v[(q->head + q->len) % q->cap] = hb;
	q->len++;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&lp->mu);
}

void q_close(struct loop *lp, struct queue *q)
{
	pthread_mutex_lock(&lp->mu);
	q->closed = 1;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&lp->mu);
}

/* Whether q was closed (no batch will be pushed to it any more). */
static int q_closed(struct loop *lp, struct queue *q)
{
	int closed;

	pthread_mutex_lock(&lp->mu);
	closed = q->closed;
	pthread_mutex_unlock(&lp->mu);
	return closed;
}

struct hbatch *q_pop(struct loop *lp, struct queue *q, int wait)
{
	struct hbatch *hb = NULL;

	pthread_mutex_lock(&lp->mu);
	while (wait && !q->len && !q->closed && !lp->abort)
		pthread_cond_wait(&q->cond, &lp->mu);
	if (q->len && !lp->abort) {
		hb = q->v[q->head];
		q->head = (q->head + 1) % q->cap;
		q->len--;
	}
	pthread_mutex_unlock(&lp->mu);
	return hb;
}

/* ------------------------------------------------------------------ */
/* Writer thread */

/* The fields of the record entry e leaves as, but its type and
 * payload. */
static rec_item entry_item(const struct hbatch *hb, const struct entry *e)
{
	return (rec_item){
		.clip = e->clip, .offset = e->offset,
		.clip_samples = e->clip_samples, .segment = e->segment,
		.label = e->label, .sample_rate = e->sample_rate,
		.split = e->split, .key = hb->arena + e->key_off,
		.key_len = e->key_len, .flags = e->flags,
	};
}

static int write_entry(struct loop *lp, const struct hbatch *hb,
		       const struct entry *e)
{
	rec_item it = entry_item(hb, e);

	if (e->skipped == ENTRY_SOURCE) {
		it.type = REC_T_SOURCE;
		it.data = hb->arena + e->text_off;
		it.data_len = e->text_len;
	} else if (e->skipped) {
		it.type = REC_T_SKIPPED;
		it.data = hb->arena + e->text_off;
		it.data_len = e->text_len;
		lp->st.skipped_out++;
	} else {
		const mel_rec *r = &hb->mb.rec[e->rec];

		it.type = REC_T_FEATURES;
		it.dtype = lp->p.out_dtype;
		it.dim0 = mel_n_rows(&lp->p);
		it.dim1 = r->n_frames;
		it.data = (const char *)hb->mb.out + r->out_off * lp->out_size;
		it.data_len = (size_t)it.dim0 * r->n_frames *
			      lp->out_size;
		/* an item in pieces counts once, at its end */
		lp->st.features += !(e->flags & REC_ITEM_MORE);
	}
	return rec_write(lp->wr, &it);
}

/* The windows of one windows record computed in one batch (entries
 * e[0] .. e[n_win - 1], their features one after the other) as one
 * features-windows record; 1 when they are not all that (then they go
 * one by one), else rec_write()'s result. */
static int write_fwindows(struct loop *lp, const struct hbatch *hb,
			  const struct entry *e)
{
	const mel_rec *r = &hb->mb.rec[e->rec];
	uint32_t rows = mel_n_rows(&lp->p);
	uint64_t per = (uint64_t)rows * r->n_frames;
	rec_item it = entry_item(hb, e);

	for (uint32_t j = 1; j < e->n_win; j++) {
		const mel_rec *q = &hb->mb.rec[e[j].rec];

		if (e[j].skipped || e[j].n_win || q->n_frames != r->n_frames ||
		    q->out_off != r->out_off + j * per)
			return 1;
	}
	it.type = REC_T_FWINDOWS;
	it.dtype = lp->p.out_dtype;
	it.dim0 = rows;
	it.dim1 = r->n_frames;
	it.win_len = e->win_len;
	it.win_hop = e->win_hop;
	it.n_windows = e->n_win;
	it.win_flags = e->win_flags;
	it.data = (const char *)hb->mb.out + r->out_off * lp->out_size;
	it.data_len = (size_t)(per * e->n_win) * lp->out_size;
	lp->st.features += e->n_win;
	lp->st.fwindows++;
	return rec_write(lp->wr, &it);
}

static void *writer_main(void *arg)
{
	struct loop *lp = arg;
	struct hbatch *hb;
	int err = 0;

	while (!err && (hb = q_pop(lp, &lp->done_q, 1))) {
		double t0 = prog_now();

		for (size_t i = 0; i < hb->n_ent && !err; i++) {
			const struct entry *e = &hb->ent[i];

			if (e->n_win > 1 && !e->skipped &&
			    i + e->n_win <= hb->n_ent &&
			    (err = write_fwindows(lp, hb, e)) != 1) {
				i += e->n_win - 1;
				continue;
			}
			err = write_entry(lp, hb, e);
		}
		lp->st.t_write += prog_now() - t0;
		q_push(lp, &lp->free_q, hb);
	}
	if (!err && !aborted(lp)) {
		double t0 = prog_now();

		err = rec_writer_finish(lp->wr);
		lp->st.t_write += prog_now() - t0;
	}
	if (err) {
		char why[512];

		prog_write_why(why, sizeof(why), lp->out_path, lp->wr, err);
		loop_fail(lp, "%s", why);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Compute thread */

/* Batches in input order, submitted or with nothing to compute. */
struct pending {
	struct hbatch **v;
	size_t cap, head, len;
};

static void pend_push(struct pending *pq, struct hbatch *hb)
{
	pq->v[(pq->head + pq->len) % pq->cap] = hb;
	pq->len++;
}

/* Sends the finished batches at the front to the writer, in order. */
static void pend_forward(struct loop *lp, struct pending *pq)
{
	while (pq->len && pq->v[pq->head]->done) {
		q_push(lp, &lp->done_q, pq->v[pq->head]);
		pq->head = (pq->head + 1) % pq->cap;
		pq->len--;
	}
}

/* (Re)allocates hb's buffers with the backend; -1 after loop_fail(). */
static int alloc_batch(struct loop *lp, struct hbatch *hb, size_t in,
		       size_t out, size_t recs)
{
	mel_backend *be = lp->be;
	int err;

	if (hb->allocated)
		be->batch_free(be, &hb->mb);
	hb->allocated = 0;
	err = be->batch_alloc(be, &hb->mb, in, out, recs);
	hb->allocated = err == 0;
	hb->mb.user = hb;
	hb->mb.n = 0;
	if (err)
		loop_fail(lp, "%s", be->err);
	return err ? -1 : 0;
}

/*
 * Gives one free batch that lacks it the size chosen from the data: 1
 * when it allocated one, 0 when no free batch needed it. The compute
 * loop calls it when it has nothing to submit, so that the reader seldom
 * has to ask and yet the first batch goes to the GPU without waiting for
 * the others' allocations (pinned memory takes milliseconds a batch, and
 * the first batch comes right after the CUDA start, with the stages
 * upstream waiting on it).
 */
static int alloc_free_batch(struct loop *lp)
{
	struct hbatch *hb;
	int done = 0;

	/* n_hb pops see every batch in the queue once; one taken at a
	 * time, so that the reader can take the others meanwhile */
	for (size_t i = 0; i < lp->n_hb && !done; i++) {
		hb = q_pop(lp, &lp->free_q, 0);
		if (!hb)
			break;
		if (!hb->allocated || hb->mb.in_cap < lp->cap_in ||
		    hb->mb.out_cap < lp->cap_out ||
		    hb->mb.cap_recs < lp->cap_recs) {
			alloc_batch(lp, hb, lp->cap_in, lp->cap_out,
				    lp->cap_recs);
			done = 1;
		}
		q_push(lp, &lp->free_q, hb);
	}
	return done;
}

/* Serves the reader's request to grow hb (after the first one, the other
 * batches get the size as the compute loop has time: alloc_free_batch()). */
static void do_resize(struct loop *lp, struct hbatch *hb)
{
	alloc_batch(lp, hb, hb->want_in, hb->want_out, hb->want_recs);
	pthread_mutex_lock(&lp->mu);
	hb->resize = 0;
	pthread_cond_broadcast(&lp->resized);
	pthread_mutex_unlock(&lp->mu);
	if (!lp->sized) {
		lp->sized = 1;
		lp->grow = 1;
	}
}

/* Releases the slots of the payloads hb took from the rings. */
static void release_holds(struct hbatch *hb)
{
	for (size_t i = 0; i < hb->n_hold; i++)
		rec_hold_release(&hb->hold[i]);
	hb->n_hold = 0;
}

/* The CRCs the backend computed of the payloads hb took from the rings,
 * against those the records carry: 0, or -1 after loop_fail() naming the
 * first payload that differs (changed in the ring after it was sent). */
static int check_crcs(struct loop *lp, struct hbatch *hb)
{
	const mel_batch *b = &hb->mb;

	for (size_t i = 0; i < b->n_crc; i++) {
		const mel_crc *k = &b->crc[i];
		const struct entry *e = &hb->ent[hb->crc_ent[i]];

		if (k->got == k->want)
			continue;
		loop_fail(lp, "clip %" PRIu64 " ('%.*s'): checksum mismatch of "
			  "a payload in shared memory, %" PRIu64 " bytes "
			  "(its CRC32C must be 0x%08" PRIx32 ", the %s computed "
			  "0x%08" PRIx32 "): changed after it was sent",
			  e->clip, (int)e->key_len, hb->arena + e->key_off,
			  k->len, k->want, lp->be->name, k->got);
		return -1;
	}
	return 0;
}

/* Waits for the oldest batch in flight. */
static int collect(struct loop *lp, int *inflight)
{
	mel_batch *done = NULL;
	double t0 = prog_now();
	int err = lp->be->wait(lp->be, &done);
	struct hbatch *hb;

	lp->st.t_compute += prog_now() - t0;
	if (err < 0 || !done) {
		loop_fail(lp, "%s", err < 0 ? lp->be->err :
			  "backend lost a batch");
		return -1;
	}
	hb = done->user;
	release_holds(hb);
	if (check_crcs(lp, hb) < 0)
		return -1;
	hb->done = 1;
	(*inflight)--;
	return 0;
}

/* Whether the ring area p (bytes) is registered with the backend,
 * registering it the first time. */
static int registered(struct loop *lp, const void *p, uint64_t bytes)
{
	unsigned i;

	for (i = 0; i < lp->n_reg; i++)
		if (lp->reg[i].p == p)
			return lp->reg[i].ok;
	if (i == DMA_AREAS)
		return 0;
	lp->reg[i].p = p;
	lp->reg[i].ok = lp->be->host_register(lp->be, p, bytes) == 0;
	if (!lp->reg[i].ok)
		snprintf(lp->reg_why, sizeof(lp->reg_why), "%s", lp->be->err);
	lp->n_reg++;
	return lp->reg[i].ok;
}

/* The copies of hb's payloads from the rings: left to the backend when
 * every ring it uses is registered with it, else made here (the GPU
 * still checks the CRCs where the samples land). */
static void place_copies(struct loop *lp, struct hbatch *hb)
{
	mel_batch *b = &hb->mb;
	int all = 1;

	for (unsigned i = 0; i < hb->n_area; i++)
		all &= registered(lp, hb->area[i], hb->area_bytes[i]);
	if (all)
		return;
	for (size_t i = 0; i < b->n_copy; i++) {
		memcpy((char *)b->in + b->copy[i].off, b->copy[i].src,
		       b->copy[i].bytes);
		lp->st.dma_host += b->copy[i].bytes;
	}
	b->n_copy = 0;
}

static int submit(struct loop *lp, struct hbatch *hb, int *inflight)
{
	double t0 = prog_now();
	int err;

	if (hb->mb.n_copy)
		place_copies(lp, hb);
	err = lp->be->submit(lp->be, &hb->mb);

	lp->st.t_compute += prog_now() - t0;
	if (err < 0) {
		loop_fail(lp, "%s", lp->be->err);
		return -1;
	}
	(*inflight)++;
	return 0;
}

/*
 * Submits batches as they come, up to the backend's depth in flight, and
 * collects the oldest whenever there is nothing new to submit, so that a
 * finished batch never waits for the next one to be read (only, once a
 * run, for the other batches' allocation).
 */
static int compute_loop(struct loop *lp, struct pending *pq)
{
	int inflight = 0;

	for (;;) {
		struct hbatch *hb = NULL;

		pend_forward(lp, pq);
		if (inflight < lp->be->depth)
			hb = q_pop(lp, &lp->ready_q, 0);
		/* nothing to submit, the input not at its end: size a free
		 * batch (a batch in flight is collected after; the batches
		 * are sized once a run) */
		if (!hb && lp->grow && !aborted(lp) &&
		    !q_closed(lp, &lp->ready_q) &&
		    (lp->grow = alloc_free_batch(lp)))
			continue;
		if (!hb && inflight > 0) {
			if (collect(lp, &inflight) < 0)
				return -1;
			continue;
		}
		if (!hb) {
			double t0 = prog_now();

			hb = q_pop(lp, &lp->ready_q, 1);
			lp->st.t_starved += prog_now() - t0;
		}
		if (!hb)
			return aborted(lp) ? -1 : 0;
		if (hb->resize) {
			do_resize(lp, hb);
			continue;
		}
		pend_push(pq, hb);
		if (hb->mb.n == 0)
			hb->done = 1;
		else if (submit(lp, hb, &inflight) < 0)
			return -1;
	}
}

/* ------------------------------------------------------------------ */
/* Setup and the run */

int loop_init(struct loop *lp, size_t n_hb)
{
	struct queue *qs[] = { &lp->free_q, &lp->ready_q, &lp->done_q };

	pthread_mutex_init(&lp->mu, NULL);
	pthread_cond_init(&lp->resized, NULL);
	lp->n_hb = n_hb;
	lp->hb = calloc(n_hb, sizeof(*lp->hb));
	if (!lp->hb)
		return -1;
	for (size_t i = 0; i < 3; i++) {
		qs[i]->cap = n_hb;
		qs[i]->v = calloc(n_hb, sizeof(*qs[i]->v));
		pthread_cond_init(&qs[i]->cond, NULL);
		if (!qs[i]->v)
			return -1;
	}
	for (size_t i = 0; i < n_hb; i++) {
		lp->hb[i].mb.user = &lp->hb[i];
		q_push(lp, &lp->free_q, &lp->hb[i]);
	}
	return 0;
}

void loop_unregister(struct loop *lp)
{
	for (size_t i = 0; lp->hb && i < lp->n_hb; i++)
		release_holds(&lp->hb[i]);
	/* before the reader unmaps the rings */
	for (unsigned i = 0; i < lp->n_reg; i++)
		if (lp->reg[i].ok)
			lp->be->host_unregister(lp->be, lp->reg[i].p);
	lp->n_reg = 0;
}

void loop_free(struct loop *lp)
{
	struct queue *qs[] = { &lp->free_q, &lp->ready_q, &lp->done_q };

	loop_unregister(lp);
	for (size_t i = 0; lp->hb && i < lp->n_hb; i++) {
		if (lp->hb[i].allocated)
			lp->be->batch_free(lp->be, &lp->hb[i].mb);
		free(lp->hb[i].ent);
		free(lp->hb[i].arena);
		free(lp->hb[i].hold);
		free(lp->hb[i].mb.copy);
		free(lp->hb[i].crc_ent);
	}
	free(lp->hb);
	free(lp->pad);
	pieces_free(&lp->pc);
	for (size_t i = 0; i < 3; i++) {
		free(qs[i]->v);
		pthread_cond_destroy(&qs[i]->cond);
	}
	pthread_cond_destroy(&lp->resized);
	pthread_mutex_destroy(&lp->mu);
}

/*
 * Runs the three threads over the whole stream: 0, or -1 after an error
 * (in lp->err). After an error the reader or the writer may be blocked in
 * read(2) or write(2) on a stalled pipe, so they are not joined: the
 * caller exits without freeing what they use.
 */
int run_loop(struct loop *lp)
{
	struct pending pq = { .cap = lp->n_hb };
	pthread_t rd, wr;
	int e, ret;

	pq.v = calloc(pq.cap, sizeof(*pq.v));
	if (!pq.v) {
		loop_fail(lp, "out of memory");
		return -1;
	}
	if ((e = pthread_create(&rd, NULL, reader_main, lp)) ||
	    (e = pthread_create(&wr, NULL, writer_main, lp))) {
		loop_fail(lp, "cannot start a thread: %s", strerror(e));
		free(pq.v);
		return -1;
	}
	ret = compute_loop(lp, &pq);
	if (ret == 0) {
		pend_forward(lp, &pq);
		q_close(lp, &lp->done_q);
		pthread_join(wr, NULL);
		pthread_join(rd, NULL);
	}
	free(pq.v);
	return ret < 0 || aborted(lp) ? -1 : 0;
}
