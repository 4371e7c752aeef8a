/*
 * gpumel - the log-mel spectrogram of every clip or segment of a melpipe
 * record stream, on the GPU (gpumel-cuda.so) or on the CPU (FFTW3f).
 *
 * Three threads keep the pipes and the compute busy at once:
 *   reader:  rec_read() -> samples packed into batches (the backend's
 *            buffers), record metadata copied into the batch
 *   compute: (this thread) submits batches to the backend, up to its
 *            depth in flight, and collects them in order
 *   writer:  the finished batches' records -> rec_write()
 * The batches circulate through three bounded queues (free -> ready ->
 * done -> free), so memory stays flat and records leave in input order.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/half.h"
#include "../../lib/rec.h"
#include "../common/prog.h"
#include "backend.h"
#include "gpumel_opts.h"

#define CUDA_SO "gpumel-cuda.so"
#define SO_PATH_MAX (PATH_MAX + 64)
#define DEFAULT_BATCH_RECS (1u << 18) /* chosen from the data */
#define MAX_BATCH_BYTES (1ul << 30)
/* Input bytes per batch when the data choose: measured on an H200 host
 * with 1 KiB records, 2-16 MiB batches pack 2-3 times faster than 32-64
 * MiB ones (the batches stay in the CPU's caches), and the GPU does not
 * need more per launch. */
#define BATCH_BYTES (8u << 20)
#define WRITE_BUFFER (4u << 20)

/* ------------------------------------------------------------------ */
/* Batches and queues */

/* One record leaving in a batch, in stream order. */
struct entry {
	uint64_t clip, offset, clip_samples;
	uint32_t segment, sample_rate;
	int32_t label;
	int split;
	int skipped;           /* leaves as a skipped record (text: reason) */
	size_t rec;            /* computed: index in the batch's mel_rec[] */
	size_t key_off, key_len, text_off, text_len; /* in the arena */
};

struct hbatch {
	mel_batch mb;
	int allocated;         /* mb holds the backend's buffers */
	struct entry *ent;
	size_t n_ent, cap_ent;
	char *arena;           /* keys and reasons */
	size_t arena_len, arena_cap;
	size_t in_used;        /* elements of mb.in in use */
	uint64_t out_used;     /* elements of mb.out in use */
	int done;              /* computed (or nothing to compute) */
	/* A request from the reader to the compute thread to grow mb. */
	int resize;
	size_t want_in, want_out, want_recs;
};

struct queue {
	struct hbatch **v;
	size_t cap, head, len;
	int closed;            /* the producer is done */
	pthread_cond_t cond;
};

struct stats {
	uint64_t audio, skipped_in, skipped_here; /* reader */
	uint64_t features, skipped_out;           /* writer */
	double t_reader;                          /* reader, all */
	double t_out_blocked, t_alloc;            /* reader, waiting */
	double t_compute, t_starved;              /* compute */
	double t_write;                           /* writer */
};

struct loop {
	pthread_mutex_t mu;    /* the queues, abort, resize */
	pthread_cond_t resized;
	struct queue free_q, ready_q, done_q;
	atomic_int abort;      /* set under mu, read anywhere */
	char err[1024];

	mel_params p;
	mel_backend *be;
	rec_reader *rd;
	rec_writer *wr;
	size_t out_size;
	struct hbatch *hb;
	size_t n_hb;
	int sized;             /* the batches have the size from the data */
	size_t target_in;      /* input bytes per batch */
	size_t batch_recs;     /* --batch */
	size_t cap_in, cap_out, cap_recs; /* batch size chosen from data */
	void *pad;             /* reader: a padded window, taken alone */
	size_t pad_cap;
	struct stats st;
};

/* Stops every thread; the first message wins. */
static void loop_fail(struct loop *lp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void loop_fail(struct loop *lp, const char *fmt, ...)
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

static void q_push(struct loop *lp, struct queue *q, struct hbatch *hb)
{
	pthread_mutex_lock(&lp->mu);
	/* cap is the number of batches: a push never waits */
	q->v[(q->head + q->len) % q->cap] = hb;
	q->len++;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&lp->mu);
}

static void q_close(struct loop *lp, struct queue *q)
{
	pthread_mutex_lock(&lp->mu);
	q->closed = 1;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&lp->mu);
}

/* The next batch; NULL once the queue is closed and empty, or on abort.
 * With wait == 0, NULL also when it is empty now. */
static struct hbatch *q_pop(struct loop *lp, struct queue *q, int wait)
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

/* Read without the lock: checked once per record by the reader. */
static int aborted(struct loop *lp)
{
	return atomic_load_explicit(&lp->abort, memory_order_acquire);
}

/* Doubles *cap until it holds need elements of size sz. */
static int grow(void **v, size_t *cap, size_t need, size_t sz)
{
	size_t n = *cap ? *cap : 64;
	void *nv;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	nv = realloc(*v, n * sz);
	if (!nv)
		return -1;
	*v = nv;
	*cap = n;
	return 0;
}

static void hb_reset(struct hbatch *hb)
{
	hb->n_ent = 0;
	hb->arena_len = 0;
	hb->in_used = 0;
	hb->out_used = 0;
	hb->done = 0;
	hb->mb.n = 0;
}

/* ------------------------------------------------------------------ */
/* Reader thread */

/* Copies len bytes into the batch's arena; returns their offset. */
static int arena_add(struct loop *lp, struct hbatch *hb, const void *s,
		     size_t len, size_t *off)
{
	if (grow((void **)&hb->arena, &hb->arena_cap, hb->arena_len + len + 1,
		 1) < 0) {
		loop_fail(lp, "out of memory for record keys");
		return -1;
	}
	*off = hb->arena_len;
	if (len)
		memcpy(hb->arena + hb->arena_len, s, len);
	hb->arena[hb->arena_len + len] = '\0';
	hb->arena_len += len + 1;
	return 0;
}

/* Appends an entry for it (metadata copied: it dies at the next read).
 * key_off: where an earlier entry of this batch keeps the same key, or
 * SIZE_MAX to copy it into the arena. */
static struct entry *add_entry_key(struct loop *lp, struct hbatch *hb,
				   const rec_item *it, size_t key_off)
{
	struct entry *e;

	if (grow((void **)&hb->ent, &hb->cap_ent, hb->n_ent + 1,
		 sizeof(*hb->ent)) < 0) {
		loop_fail(lp, "out of memory for record metadata");
		return NULL;
	}
	e = &hb->ent[hb->n_ent];
	memset(e, 0, sizeof(*e));
	e->clip = it->clip;
	e->offset = it->offset;
	e->clip_samples = it->clip_samples;
	e->segment = it->segment;
	e->sample_rate = it->sample_rate;
	e->label = it->label;
	e->split = it->split;
	e->key_len = it->key_len;
	e->key_off = key_off;
	if (key_off == SIZE_MAX &&
	    arena_add(lp, hb, it->key, it->key_len, &e->key_off) < 0)
		return NULL;
	hb->n_ent++;
	return e;
}

static struct entry *add_entry(struct loop *lp, struct hbatch *hb,
			       const rec_item *it)
{
	return add_entry_key(lp, hb, it, SIZE_MAX);
}

static int add_skipped(struct loop *lp, struct hbatch *hb, const rec_item *it,
		       const char *reason, size_t len)
{
	struct entry *e = add_entry(lp, hb, it);

	if (!e)
		return -1;
	e->skipped = 1;
	e->text_len = len;
	return arena_add(lp, hb, reason, len, &e->text_off);
}

/* Hands hb to the compute thread to be (re)allocated with at least the
 * given capacities and waits for it. -1 on abort. */
static int request_resize(struct loop *lp, struct hbatch *hb, size_t in,
			  size_t out, size_t recs)
{
	double t0;
	int ok;

	hb->want_in = in;
	hb->want_out = out;
	hb->want_recs = recs;
	hb->resize = 1;
	t0 = prog_now();
	q_push(lp, &lp->ready_q, hb);
	pthread_mutex_lock(&lp->mu);
	while (hb->resize && !lp->abort)
		pthread_cond_wait(&lp->resized, &lp->mu);
	ok = !lp->abort;
	pthread_mutex_unlock(&lp->mu);
	lp->st.t_alloc += prog_now() - t0;
	return ok ? 0 : -1;
}

static size_t max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* The batch size, from the first record (in bytes of samples, out bytes
 * of features, in nrecs computed records: the windows of a windows
 * record): about target_in bytes of samples (or --batch computed
 * records), records of that size. */
static void choose_sizes(struct loop *lp, size_t in, size_t out,
			 size_t nrecs)
{
	size_t k;

	if (lp->batch_recs) {
		/* --batch: that many records, unless they are huge */
		size_t per = max_sz((in + out) / nrecs, 1);

		k = MAX_BATCH_BYTES / per;
		k = max_sz(1, k < lp->batch_recs ? k : lp->batch_recs);
		lp->cap_recs = max_sz(lp->batch_recs, nrecs);
		lp->cap_in = max_sz(k * in / nrecs, in);
		lp->cap_out = max_sz(k * out / nrecs, out);
		return;
	}
	lp->cap_in = max_sz(lp->target_in, in);
	k = lp->cap_in / max_sz(in, 1);
	/* records vary in length: room for more, shorter ones */
	lp->cap_recs = k * nrecs * 2 + 16;
	if (lp->cap_recs > DEFAULT_BATCH_RECS)
		lp->cap_recs = max_sz(DEFAULT_BATCH_RECS, nrecs);
	lp->cap_out = max_sz(out, (k + k / 4 + 1) * out);
}

/* The next free batch, empty, with room for a record of in + out bytes
 * and nrecs computed records (0, 0, 0: any). NULL on abort. */
static struct hbatch *get_batch(struct loop *lp, size_t in, size_t out,
				size_t nrecs)
{
	double t0 = prog_now();
	struct hbatch *hb = q_pop(lp, &lp->free_q, 1);
	mel_batch *b;

	lp->st.t_out_blocked += prog_now() - t0;
	if (!hb)
		return NULL;
	hb_reset(hb);
	b = &hb->mb;
	if ((in || out) && (!hb->allocated || b->in_cap < in ||
			    b->out_cap < out || b->cap_recs < nrecs ||
			    b->cap_recs < lp->cap_recs ||
			    b->in_cap < lp->cap_in || b->out_cap < lp->cap_out))
		if (request_resize(lp, hb, max_sz(in, lp->cap_in),
				   max_sz(out, lp->cap_out),
				   max_sz(nrecs, lp->cap_recs)) < 0)
			return NULL;
	return hb;
}

/* Passes the current batch on (if it holds anything). */
static void flush_batch(struct loop *lp, struct hbatch **cur)
{
	if (*cur && (*cur)->n_ent)
		q_push(lp, &lp->ready_q, *cur);
	else if (*cur)
		q_push(lp, &lp->free_q, *cur);
	*cur = NULL;
}

static int is_finite_f32(const float *x, size_t n, size_t *bad)
{
	uint32_t u;

	for (size_t i = 0; i < n; i++) {
		memcpy(&u, &x[i], sizeof(u));
		if ((u & 0x7f800000u) == 0x7f800000u) {
			*bad = i;
			return 0;
		}
	}
	return 1;
}

/* f16 or bf16 samples at src (the reader hands payloads out where they
 * are: maybe at an odd address) to floats. */
static void halves_to_f32(float *dst, const void *src, size_t n, int dtype)
{
	const unsigned char *p = src;
	uint16_t u;

	if ((uintptr_t)src % 2 == 0 && dtype == REC_F16) {
		half_to_f32_array(dst, src, n);
		return;
	}
	if ((uintptr_t)src % 2 == 0) {
		bf16_to_f32_array(dst, src, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(&u, p + 2 * i, sizeof(u));
		dst[i] = dtype == REC_F16 ? half_to_f32(u) : bf16_to_f32(u);
	}
}

/* Copies (converts) the samples of it to dst: s16 stays s16, the rest
 * becomes f32. Returns 0, or -1 (reason set) when a sample is not
 * finite. */
static int copy_samples(void *dst, const rec_item *it, char *reason,
			size_t rlen)
{
	size_t n = it->dim0, bad;

	switch (it->dtype) {
	case REC_S16:
		memcpy(dst, it->data, n * 2);
		return 0;
	case REC_F32:
		memcpy(dst, it->data, n * 4);
		break;
	case REC_F16:
	case REC_BF16:
		halves_to_f32(dst, it->data, n, it->dtype);
		break;
	}
	if (is_finite_f32(dst, n, &bad))
		return 0;
	snprintf(reason, rlen, "sample %zu is not a finite number", bad);
	return -1;
}

/* Why an audio record cannot be computed, or NULL. */
static const char *unusable(const struct loop *lp, const rec_item *it,
			    uint64_t nf, char *buf, size_t len)
{
	if (it->dim1 != 1)
		snprintf(buf, len, "%" PRIu32 " channels: gpumel takes mono "
			 "audio", it->dim1);
	else if (it->sample_rate != lp->p.sample_rate)
		snprintf(buf, len, "sample rate %" PRIu32 " Hz differs from "
			 "the stream's %g Hz", it->sample_rate,
			 lp->p.sample_rate);
	else if (it->dtype < REC_S16 || it->dtype > REC_BF16)
		snprintf(buf, len, "unknown sample type %d", it->dtype);
	else if (nf == 0 && it->dim0 == 0)
		snprintf(buf, len, "no samples");
	else if (nf == 0)
		snprintf(buf, len, "too short: %" PRIu32 " samples give no "
			 "frame of n_fft %" PRIu32 " without --center",
			 it->dim0, lp->p.n_fft);
	else
		return NULL;
	return buf;
}

/* Prints a key with control bytes escaped, so a warning stays one line. */
static void warn_skip(const rec_item *it, const char *reason)
{
	char key[512];
	size_t j = 0;

	for (size_t i = 0; i < it->key_len && j + 5 < sizeof(key); i++) {
		unsigned char ch = (unsigned char)it->key[i];

		if (ch < 0x20 || ch == 0x7f)
			j += (size_t)snprintf(key + j, sizeof(key) - j,
					      "\\x%02x", ch);
		else
			key[j++] = (char)ch;
	}
	key[j] = '\0';
	prog_warn("'%s': %s, skipped", key, reason);
}

/* Makes *cur a batch where n samples of dtype dt, giving nrecs computed
 * records of nf frames in all, fit. -1 on abort. */
static int make_room(struct loop *lp, struct hbatch **cur, int dt, size_t n,
		     uint64_t nf, size_t nrecs)
{
	size_t isz = dt == REC_S16 ? 2 : 4;
	size_t in = n * isz, out = nf * lp->p.n_mels * lp->out_size;
	struct hbatch *hb = *cur;

	if (!lp->cap_in)
		choose_sizes(lp, in, out, nrecs);
	if (hb && hb->mb.n && hb->mb.in_dtype != dt)
		flush_batch(lp, cur);
	hb = *cur;
	if (hb && hb->allocated && nrecs <= hb->mb.cap_recs - hb->mb.n &&
	    (hb->in_used + n) * isz <= hb->mb.in_cap &&
	    (hb->out_used + nf * lp->p.n_mels) * lp->out_size <= hb->mb.out_cap)
		return 0;
	flush_batch(lp, cur);
	*cur = get_batch(lp, in, out, nrecs);
	return *cur ? 0 : -1;
}

/* Puts a usable audio record into a batch: 0, -1 on abort, 1 when a
 * sample turns out not to be finite (reason set). */
static int place_audio(struct loop *lp, struct hbatch **cur,
		       const rec_item *it, uint64_t nf, char *reason,
		       size_t rlen)
{
	int dt = it->dtype == REC_S16 ? REC_S16 : REC_F32;
	size_t isz = dt == REC_S16 ? 2 : 4;
	struct hbatch *hb;
	struct entry *e;
	mel_rec *r;

	if (make_room(lp, cur, dt, it->dim0, nf, 1) < 0)
		return -1;
	hb = *cur;
	if (copy_samples((char *)hb->mb.in + hb->in_used * isz, it, reason,
			 rlen) < 0)
		return 1;
	hb->mb.in_dtype = dt;
	r = &hb->mb.rec[hb->mb.n];
	r->in_off = hb->in_used;
	r->n_samples = it->dim0;
	r->n_frames = (uint32_t)nf;
	r->out_off = hb->out_used;
	e = add_entry(lp, hb, it);
	if (!e)
		return -1;
	e->rec = hb->mb.n++;
	hb->in_used += it->dim0;
	hb->out_used += nf * lp->p.n_mels;
	return 0;
}

/* An audio record: into a batch, or a skipped record naming why. */
static int add_audio(struct loop *lp, struct hbatch **cur, const rec_item *it)
{
	char reason[256];
	uint64_t nf = mel_n_frames(&lp->p, it->dim0);
	const char *why = unusable(lp, it, nf, reason, sizeof(reason));
	int r;

	lp->st.audio++;
	if (!why) {
		r = place_audio(lp, cur, it, nf, reason, sizeof(reason));
		if (r <= 0)
			return r;
		why = reason;
	}
	warn_skip(it, why);
	lp->st.skipped_here++;
	if (!*cur && !(*cur = get_batch(lp, 0, 0, 0)))
		return -1;
	return add_skipped(lp, *cur, it, why, strlen(why));
}

/* What add_windows_one_by_one() hands each window. */
struct one_args {
	struct loop *lp;
	struct hbatch **cur;
};

static int add_one(const rec_item *win, void *arg)
{
	struct one_args *a = arg;

	return add_audio(a->lp, a->cur, win) < 0 ? 1 : 0;
}

/* The windows of a windows record, one at a time, as audio records: for
 * records whose windows cannot all be computed (each gets its own verdict,
 * exactly as if segment had copied them). */
static int add_windows_one_by_one(struct loop *lp, struct hbatch **cur,
				  const rec_item *it)
{
	struct one_args a = { lp, cur };
	int err = rec_each_window(it, &lp->pad, &lp->pad_cap, add_one, &a);

	if (err < 0) /* (1: add_audio failed and said why) */
		loop_fail(lp, "record %" PRIu64 " ('%.*s'): %s",
			  rec_reader_count(lp->rd), (int)it->key_len, it->key,
			  rec_strerror(err));
	return err ? -1 : 0;
}

/*
 * A windows record: its samples go into a batch once (and zeros after
 * them for a padded last window), each window becomes a computed record
 * pointing into them. Windows that cannot be computed (wrong rate, too
 * short, a sample that is not finite) take the one-by-one path, which
 * gives each window the verdict a copied window would get.
 */
static int add_windows(struct loop *lp, struct hbatch **cur,
		       const rec_item *it)
{
	int dt = it->dtype == REC_S16 ? REC_S16 : REC_F32;
	size_t isz = dt == REC_S16 ? 2 : 4;
	uint64_t span = (uint64_t)(it->n_windows - 1) * it->win_hop +
			it->win_len;
	uint64_t n = span > it->dim0 ? span : it->dim0;
	uint64_t nf = mel_n_frames(&lp->p, it->win_len);
	size_t key_off = SIZE_MAX;
	char reason[256];
	rec_item probe = *it;
	struct hbatch *hb;

	probe.dim0 = it->win_len;
	/* a record too big for one batch goes window by window too */
	if (unusable(lp, &probe, nf, reason, sizeof(reason)) ||
	    n > MAX_BATCH_BYTES / isz || it->n_windows > DEFAULT_BATCH_RECS ||
	    nf * it->n_windows > MAX_BATCH_BYTES / lp->out_size / lp->p.n_mels)
		return add_windows_one_by_one(lp, cur, it);
	if (make_room(lp, cur, dt, n, nf * it->n_windows, it->n_windows) < 0)
		return -1;
	hb = *cur;
	if (copy_samples((char *)hb->mb.in + hb->in_used * isz, it, reason,
			 sizeof(reason)) < 0)
		return add_windows_one_by_one(lp, cur, it);
	memset((char *)hb->mb.in + (hb->in_used + it->dim0) * isz, 0,
	       (n - it->dim0) * isz);
	hb->mb.in_dtype = dt;
	lp->st.audio += it->n_windows;
	for (uint32_t i = 0; i < it->n_windows; i++) {
		mel_rec *r = &hb->mb.rec[hb->mb.n];
		rec_item win = *it;
		struct entry *e;

		r->in_off = hb->in_used + (uint64_t)i * it->win_hop;
		r->n_samples = it->win_len;
		r->n_frames = (uint32_t)nf;
		r->out_off = hb->out_used;
		win.offset = it->offset + (uint64_t)i * it->win_hop;
		win.segment = it->segment + i;
		e = add_entry_key(lp, hb, &win, key_off);
		if (!e)
			return -1;
		key_off = e->key_off;
		e->rec = hb->mb.n++;
		hb->out_used += nf * lp->p.n_mels;
	}
	hb->in_used += n;
	return 0;
}

static int add_record(struct loop *lp, struct hbatch **cur, const rec_item *it)
{
	switch (it->type) {
	case REC_T_AUDIO:
		return add_audio(lp, cur, it);
	case REC_T_WINDOWS:
		return add_windows(lp, cur, it);
	case REC_T_SKIPPED:
		lp->st.skipped_in++;
		if (!*cur && !(*cur = get_batch(lp, 0, 0, 0)))
			return -1;
		return add_skipped(lp, *cur, it, it->data, it->data_len);
	default:
		loop_fail(lp, "record %" PRIu64 " ('%.*s') is a %s record: "
			  "gpumel reads audio streams",
			  rec_reader_count(lp->rd), (int)it->key_len, it->key,
			  it->type == REC_T_FEATURES ? "features" : "unknown");
		return -1;
	}
}

static void *reader_main(void *arg)
{
	struct loop *lp = arg;
	struct hbatch *cur = NULL;
	double t0 = prog_now();
	rec_item it;

	for (;;) {
		int err = rec_read(lp->rd, &it);

		if (err == REC_END)
			break;
		if (err < 0) {
			loop_fail(lp, "%s", rec_reader_detail(lp->rd)[0] ?
				  rec_reader_detail(lp->rd) :
				  rec_strerror(err));
			break;
		}
		err = add_record(lp, &cur, &it);
		if (err < 0 || aborted(lp))
			break;
	}
	if (!aborted(lp))
		flush_batch(lp, &cur);
	lp->st.t_reader = prog_now() - t0;
	q_close(lp, &lp->ready_q);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Writer thread */

static int write_entry(struct loop *lp, const struct hbatch *hb,
		       const struct entry *e)
{
	rec_item it = {
		.clip = e->clip, .offset = e->offset,
		.clip_samples = e->clip_samples, .segment = e->segment,
		.label = e->label, .sample_rate = e->sample_rate,
		.split = e->split, .key = hb->arena + e->key_off,
		.key_len = e->key_len,
	};

	if (e->skipped) {
		it.type = REC_T_SKIPPED;
		it.data = hb->arena + e->text_off;
		it.data_len = e->text_len;
		lp->st.skipped_out++;
	} else {
		const mel_rec *r = &hb->mb.rec[e->rec];

		it.type = REC_T_FEATURES;
		it.dtype = lp->p.out_dtype;
		it.dim0 = lp->p.n_mels;
		it.dim1 = r->n_frames;
		it.data = (const char *)hb->mb.out + r->out_off * lp->out_size;
		it.data_len = (size_t)lp->p.n_mels * r->n_frames *
			      lp->out_size;
		lp->st.features++;
	}
	return rec_write(lp->wr, &it);
}

static void *writer_main(void *arg)
{
	struct loop *lp = arg;
	struct hbatch *hb;
	int err = 0;

	while (!err && (hb = q_pop(lp, &lp->done_q, 1))) {
		double t0 = prog_now();

		for (size_t i = 0; i < hb->n_ent && !err; i++)
			err = write_entry(lp, hb, &hb->ent[i]);
		lp->st.t_write += prog_now() - t0;
		q_push(lp, &lp->free_q, hb);
	}
	if (!err && !aborted(lp)) {
		double t0 = prog_now();

		err = rec_writer_finish(lp->wr);
		lp->st.t_write += prog_now() - t0;
	}
	if (err)
		loop_fail(lp, "%s", rec_writer_detail(lp->wr)[0] ?
			  rec_writer_detail(lp->wr) : rec_strerror(err));
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
 * Gives the free batches the size chosen from the data now, while the
 * reader fills the first one, rather than one at a time when it asks
 * (pinned memory takes milliseconds to allocate).
 */
static void alloc_free_batches(struct loop *lp)
{
	struct hbatch *hb;

	/* one at a time, so that the reader can take each when it is
	 * ready; n_hb pops see every batch in the queue once */
	for (size_t i = 0; i < lp->n_hb; i++) {
		hb = q_pop(lp, &lp->free_q, 0);
		if (!hb)
			break;
		if (!hb->allocated || hb->mb.in_cap < lp->cap_in ||
		    hb->mb.out_cap < lp->cap_out ||
		    hb->mb.cap_recs < lp->cap_recs)
			alloc_batch(lp, hb, lp->cap_in, lp->cap_out,
				    lp->cap_recs);
		q_push(lp, &lp->free_q, hb);
	}
}

/* Serves the reader's request to grow hb (the first one also sizes the
 * other batches). */
static void do_resize(struct loop *lp, struct hbatch *hb)
{
	alloc_batch(lp, hb, hb->want_in, hb->want_out, hb->want_recs);
	pthread_mutex_lock(&lp->mu);
	hb->resize = 0;
	pthread_cond_broadcast(&lp->resized);
	pthread_mutex_unlock(&lp->mu);
	if (!lp->sized) {
		lp->sized = 1;
		alloc_free_batches(lp);
	}
}

/* Waits for the oldest batch in flight. */
static int collect(struct loop *lp, int *inflight)
{
	mel_batch *done = NULL;
	double t0 = prog_now();
	int err = lp->be->wait(lp->be, &done);

	lp->st.t_compute += prog_now() - t0;
	if (err < 0 || !done) {
		loop_fail(lp, "%s", err < 0 ? lp->be->err :
			  "backend lost a batch");
		return -1;
	}
	((struct hbatch *)done->user)->done = 1;
	(*inflight)--;
	return 0;
}

static int submit(struct loop *lp, struct hbatch *hb, int *inflight)
{
	double t0 = prog_now();
	int err = lp->be->submit(lp->be, &hb->mb);

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
 * finished batch never waits for the next one to be read.
 */
static int compute_loop(struct loop *lp, struct pending *pq)
{
	int inflight = 0;

	for (;;) {
		struct hbatch *hb = NULL;

		pend_forward(lp, pq);
		if (inflight < lp->be->depth)
			hb = q_pop(lp, &lp->ready_q, 0);
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
/* Setup */

static int loop_init(struct loop *lp, size_t n_hb)
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

static void loop_free(struct loop *lp)
{
	struct queue *qs[] = { &lp->free_q, &lp->ready_q, &lp->done_q };

	for (size_t i = 0; lp->hb && i < lp->n_hb; i++) {
		if (lp->hb[i].allocated)
			lp->be->batch_free(lp->be, &lp->hb[i].mb);
		free(lp->hb[i].ent);
		free(lp->hb[i].arena);
	}
	free(lp->hb);
	free(lp->pad);
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
static int run_loop(struct loop *lp)
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

/* ------------------------------------------------------------------ */
/* Backends */

/* Where gpumel-cuda.so should be: beside the program, or in
 * ../lib/melpipe/ from it (an installed tree). */
static int cuda_so_paths(char paths[2][SO_PATH_MAX])
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(paths[0], SO_PATH_MAX, "%s/%s", exe, CUDA_SO);
	snprintf(paths[1], SO_PATH_MAX, "%s/../lib/melpipe/%s", exe, CUDA_SO);
	return 0;
}

/* Loads gpumel-cuda.so into *dl; -1 with why in err. */
static int load_cuda_so(void **dl, char *err, size_t errlen)
{
	char paths[2][SO_PATH_MAX];
	int i;

	if (cuda_so_paths(paths) < 0) {
		snprintf(err, errlen, "cannot find the program's folder "
			 "to look for %s", CUDA_SO);
		return -1;
	}
	for (i = 0; i < 2 && access(paths[i], F_OK); i++)
		;
	if (i == 2) {
		snprintf(err, errlen, "%s not found in '%.200s' nor '%.200s'",
			 CUDA_SO, paths[0], paths[1]);
		return -1;
	}
	*dl = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
	if (!*dl) {
		snprintf(err, errlen, "%s", dlerror());
		return -1;
	}
	return 0;
}

/*
 * The CUDA driver's start and a device's context take 0.2-0.3 s, which
 * gpumel would otherwise spend after the stream's header has come, with
 * the stages upstream stalled on full pipes: a thread loads
 * gpumel-cuda.so and starts both (mel_cuda_warm) as soon as gpumel runs.
 */
struct warm {
	pthread_t thread;
	int started;           /* the thread runs or ran, not joined */
	int device;            /* --device cuda:N, -1: the first */
	void *dl;              /* gpumel-cuda.so, for open_cuda() */
	int failed;            /* loading failed: why in err */
	char err[512];
	double t0, t1;         /* the thread's start and end */
};

static void *warm_main(void *arg)
{
	struct warm *w = arg;
	mel_cuda_warm_fn fn;
	void *sym;

	if (load_cuda_so(&w->dl, w->err, sizeof(w->err)) < 0) {
		w->failed = 1;
	} else if ((sym = dlsym(w->dl, MEL_CUDA_WARM_SYMBOL))) {
		memcpy(&fn, &sym, sizeof(fn));
		fn(w->device);
	}
	w->t1 = prog_now();
	return NULL;
}

/* Starts the warm-up; where no thread can start, open_cuda() loads the
 * backend itself. */
static void warm_start(struct warm *w, int device)
{
	w->device = device;
	w->t0 = prog_now();
	w->started = pthread_create(&w->thread, NULL, warm_main, w) == 0;
}

static void warm_join(struct warm *w)
{
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = 0;
}

/* Opens the CUDA backend from the warmed-up gpumel-cuda.so (loading it
 * now when there was no warm-up); -1 with why in err. */
static int open_cuda(const struct options *o, const mel_params *p,
		     const mel_fb *fb, struct warm *w, void **dl,
		     mel_backend **be, char *err, size_t errlen)
{
	mel_cuda_open_fn fn;
	void *sym;

	warm_join(w);
	if (w->failed) {
		snprintf(err, errlen, "%s", w->err);
		return -1;
	}
	if (w->dl) {
		*dl = w->dl;
		w->dl = NULL;
	} else if (load_cuda_so(dl, err, errlen) < 0) {
		return -1;
	}
	sym = dlsym(*dl, MEL_CUDA_OPEN_SYMBOL);
	if (!sym) {
		snprintf(err, errlen, "%s has no symbol %s", CUDA_SO,
			 MEL_CUDA_OPEN_SYMBOL);
		return -1;
	}
	memcpy(&fn, &sym, sizeof(fn));
	return fn(p, fb, o->cuda_index, o->batch, be, err, errlen);
}

/* The backend that --device asks for; NULL after a message. */
static mel_backend *open_backend(const struct options *o,
				 const mel_params *p, const mel_fb *fb,
				 struct warm *w, void **dl)
{
	char err[512] = "";
	mel_backend *be = NULL;

	if (o->device != DEV_CPU) {
		if (open_cuda(o, p, fb, w, dl, &be, err, sizeof(err)) == 0)
			return be;
		if (be)
			be->destroy(be);
		if (*dl)
			dlclose(*dl);
		*dl = NULL;
		if (o->device == DEV_CUDA && o->cuda_index < 0) {
			prog_err("no usable GPU for --device cuda: %s", err);
			return NULL;
		}
		if (o->device == DEV_CUDA) {
			prog_err("no usable GPU for --device cuda:%d: %s",
				 o->cuda_index, err);
			return NULL;
		}
		prog_warn("no usable GPU (%s); using the CPU backend", err);
	}
	if (mel_cpu_open(p, fb, o->jobs, &be, err, sizeof(err)) < 0) {
		prog_err("%s", err);
		return NULL;
	}
	return be;
}

/* ------------------------------------------------------------------ */
/* Streams */

/* The stream's sample rate from its header; -1 after a message. */
static int stream_rate(const rec_header *h, const char *name, double *sr)
{
	const char *kind = rec_header_get(h, "kind");
	const char *rate = rec_header_get(h, "sample_rate");
	char *end;

	if (!kind || strcmp(kind, "audio")) {
		prog_err("%s: stream kind is '%s', gpumel reads 'audio' "
			 "streams", name, kind ? kind : "(none)");
		return -1;
	}
	if (!rate) {
		prog_err("%s: the stream header has no sample_rate", name);
		return -1;
	}
	errno = 0;
	*sr = strtod(rate, &end);
	if (errno || end == rate || *end || !(*sr > 0) || *sr > 1e7) {
		prog_err("%s: invalid sample_rate '%s' in the stream header",
			 name, rate);
		return -1;
	}
	return 0;
}

/* The output header: the input's pairs, kind and dtype, every mel
 * parameter, our producer and provenance entry. NULL: out of memory. */
static rec_header *output_header(const rec_header *in, const mel_params *p,
				 int argc, char **argv)
{
	rec_header *h = rec_header_dup(in);
	int e = 0;

	if (!h)
		return NULL;
	e |= rec_header_set(h, "producer", "gpumel " MELPIPE_VERSION);
	e |= rec_header_set(h, "kind", "features");
	e |= rec_header_set(h, "dtype", rec_dtype_name(p->out_dtype));
	e |= gpumel_header_params(h, p);
	e |= rec_header_add_stage(h, "gpumel", MELPIPE_VERSION, argc, argv);
	if (e) {
		rec_header_free(h);
		return NULL;
	}
	return h;
}

static void warn_empty_filters(const mel_fb *fb, const mel_params *p)
{
	uint32_t n = 0;

	for (uint32_t m = 0; m < fb->n_mels; m++)
		n += fb->count[m] == 0;
	if (n)
		prog_warn("%" PRIu32 " of %" PRIu32 " mel filters are empty "
			  "(no FFT bin between their edges: too many mels "
			  "for n_fft %" PRIu32 "); they give amin", n,
			  fb->n_mels, p->n_fft);
}

static void human_bytes(char *buf, size_t n, uint64_t b)
{
	if (b >= 10ull << 30)
		snprintf(buf, n, "%.1f GB", (double)b / 1e9);
	else if (b >= 10ull << 20)
		snprintf(buf, n, "%.1f MB", (double)b / 1e6);
	else
		snprintf(buf, n, "%" PRIu64 " bytes", b);
}

static void report(const struct loop *lp, double t_total)
{
	const struct stats *st = &lp->st;
	char in_b[32], out_b[32];

	if (prog_verbosity > 0) {
		human_bytes(in_b, sizeof(in_b), rec_reader_offset(lp->rd));
		human_bytes(out_b, sizeof(out_b), rec_writer_bytes(lp->wr));
		prog_info("%s: read %" PRIu64 " records (%s), wrote %" PRIu64
			  " records (%s) in %.2f s", lp->be->name,
			  rec_reader_count(lp->rd), in_b,
			  rec_writer_count(lp->wr), out_b, t_total);
		prog_info("waiting for input %.2f s, computing %.2f s, "
			  "waiting on output %.2f s (reader, compute and "
			  "writer threads overlap; compute idle %.2f s)",
			  rec_reader_wait(lp->rd), st->t_compute,
			  rec_writer_wait(lp->wr), st->t_starved);
		prog_info("reader: %.2f s, of which waiting for input %.2f s, "
			  "for a free batch %.2f s, for its allocation %.2f s; "
			  "writer: %.2f s, of which waiting on output %.2f s",
			  st->t_reader, rec_reader_wait(lp->rd),
			  st->t_out_blocked, st->t_alloc, st->t_write,
			  rec_writer_wait(lp->wr));
		prog_report_spliced(rec_writer_bytes(lp->wr),
				    rec_writer_spliced(lp->wr));
	}
	prog_warn("done %" PRIu64 ", skipped %" PRIu64 " (%" PRIu64
		  " here, %" PRIu64 " from upstream)", st->features,
		  st->skipped_out, st->skipped_here, st->skipped_in);
}

/* Everything that the run holds, for one cleanup path. */
struct run {
	int in_fd, out_fd;
	rec_reader *rd;
	rec_writer *wr;
	rec_header *oh;
	mel_fb *fb;
	mel_backend *be;
	void *dl;
	struct warm warm;
	struct loop lp;
};

static int open_streams(struct run *r, const struct options *o,
			mel_params *p)
{
	rec_reader_opts ro = { .name = o->input ? o->input : "stdin",
			       .read_ahead = 1, .unaligned = 1 };
	double sr;
	int err;

	r->out_fd = prog_open_output(o->output);
	if (r->out_fd < 0)
		return -1;
	r->in_fd = prog_open_input(o->input);
	if (r->in_fd < 0)
		return -1;
	/* after the checks that exit (a terminal): not while the warm-up
	 * may be inside the CUDA runtime */
	if (o->device != DEV_CPU)
		warm_start(&r->warm, o->cuda_index);
	err = rec_reader_open(&r->rd, r->in_fd, &ro);
	if (err) {
		prog_err("%s", rec_reader_detail(r->rd)[0] ?
			 rec_reader_detail(r->rd) : rec_strerror(err));
		return -1;
	}
	if (stream_rate(rec_reader_header(r->rd), ro.name, &sr) < 0 ||
	    gpumel_resolve_rate(o, p, sr) < 0)
		return -1;
	return 0;
}

static int open_compute(struct run *r, const struct options *o,
			const mel_params *p)
{
	if (mel_fb_build(p, &r->fb) < 0) {
		prog_err("out of memory for the mel filterbank");
		return -1;
	}
	double t0 = prog_now();

	warn_empty_filters(r->fb, p);
	r->be = open_backend(o, p, r->fb, &r->warm, &r->dl);
	if (!r->be)
		return -1;
	if (r->warm.t1 > r->warm.t0 && r->dl)
		prog_info("backend %s (started in %.2f s from gpumel's own "
			  "start; the CUDA driver and context took %.2f s, "
			  "%.2f s of it before the stream's header came)",
			  r->be->name, prog_now() - r->warm.t0,
			  r->warm.t1 - r->warm.t0,
			  t0 < r->warm.t0 ? 0.0 :
			  (t0 < r->warm.t1 ? t0 : r->warm.t1) - r->warm.t0);
	else
		prog_info("backend %s (started in %.2f s)", r->be->name,
			  prog_now() - t0);
	return 0;
}

static int open_writer(struct run *r, const struct options *o,
		       const mel_params *p, int argc, char **argv)
{
	rec_writer_opts wo = { .buffer_size = WRITE_BUFFER,
			       .name = o->output ? o->output : "stdout",
			       .write_behind = 1,
			       .zero_copy = prog_zero_copy() };
	int err;

	r->oh = output_header(rec_reader_header(r->rd), p, argc, argv);
	if (!r->oh) {
		prog_err("out of memory for the stream header");
		return -1;
	}
	err = rec_writer_open(&r->wr, r->out_fd, r->oh, &wo);
	if (err) {
		prog_err("%s", rec_writer_detail(r->wr)[0] ?
			 rec_writer_detail(r->wr) : rec_strerror(err));
		return -1;
	}
	return 0;
}

static int run_stream(struct run *r, const struct options *o,
		      const mel_params *p)
{
	struct loop *lp = &r->lp;
	double t0 = prog_now();

	lp->p = *p;
	lp->be = r->be;
	lp->rd = r->rd;
	lp->wr = r->wr;
	lp->out_size = rec_dtype_size(p->out_dtype);
	lp->batch_recs = o->batch;
	lp->target_in = BATCH_BYTES;
	if (loop_init(lp, (size_t)r->be->depth + 3) < 0) {
		prog_err("out of memory for the batches");
		return -1;
	}
	if (run_loop(lp) < 0) {
		prog_err("%s", lp->err);
		/* the other threads may still be running: see run_loop() */
		exit(EXIT_FAIL);
	}
	report(lp, prog_now() - t0);
	return 0;
}

/*
 * Closes the output as soon as the trailer is out: the next stage waits
 * for end of input, and freeing the GPU's pinned batches and its context
 * (at exit) takes a while. Exits after a message when close fails.
 */
static void close_output(struct run *r)
{
	rec_writer_close(r->wr);
	r->wr = NULL;
	if (r->out_fd >= 0 && close(r->out_fd) < 0) {
		prog_err("error closing the output: %s", strerror(errno));
		exit(EXIT_FAIL);
	}
	r->out_fd = -1;
}

static void run_close(struct run *r)
{
	/* not while the warm-up thread may be inside the CUDA runtime */
	warm_join(&r->warm);
	if (r->warm.dl)
		dlclose(r->warm.dl);
	if (r->lp.hb)
		loop_free(&r->lp);
	rec_writer_close(r->wr);
	rec_reader_close(r->rd);
	rec_header_free(r->oh);
	if (r->be)
		r->be->destroy(r->be);
	if (r->dl)
		dlclose(r->dl);
	mel_fb_free(r->fb);
	if (r->in_fd > STDIN_FILENO)
		close(r->in_fd);
	if (r->out_fd > STDOUT_FILENO && close(r->out_fd) < 0) {
		prog_err("error closing the output: %s", strerror(errno));
		exit(EXIT_FAIL);
	}
}

/*
 * gpumel [OPTIONS] [FILE]: reads an audio record stream, writes a
 * features stream with the mel spectrogram of every audio record.
 */
int main(int argc, char **argv)
{
	struct options o;
	struct run r = { .in_fd = -1, .out_fd = -1 };
	mel_params p;
	int ret = EXIT_FAIL;

	prog_init("gpumel");
	gpumel_parse_args(argc, argv, &o);
	gpumel_resolve(&o, &p);
	if (open_streams(&r, &o, &p) < 0 || open_compute(&r, &o, &p) < 0 ||
	    open_writer(&r, &o, &p, argc, argv) < 0 ||
	    run_stream(&r, &o, &p) < 0)
		goto out;
	close_output(&r);
	ret = EXIT_OK;
out:
	run_close(&r);
	return ret;
}
