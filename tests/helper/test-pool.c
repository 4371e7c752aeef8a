/*
 * test-pool - wavcat's pool of decoder threads (tools/wavcat/pool.c),
 * with a decoder of its own: the hand-over of clips and pieces between
 * the caller and the threads, which takes no lock while nobody sleeps.
 * Built plain and under ThreadSanitizer (test-pool-tsan); t1010 runs it.
 *
 *   test-pool order N   N clips through pools of 1 to 16 threads and
 *                       windows of 1 to 68 slots, at random paces: each
 *                       clip decoded once, its pieces and its end in
 *                       order, every sample where it belongs
 *   test-pool stop      pool_stop() while threads wait to hand on
 *                       pieces, decode, or sleep: it returns
 *
 * The decoder here makes a clip from its name ("LENGTH/INDEX"): LENGTH
 * samples, each a function of the clip and its place, handed on a
 * piece at a time as wavcat's sink does (a piece goes once a sample
 * after it comes). Timing is shuffled with short sleeps on both sides,
 * so that the threads run out of clips, sleep and are woken, and the
 * caller waits for them, as well as the other way round.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../tools/common/prog.h"
#include "../../tools/wavcat/wavcat.h"
#include "tap.h"

#define PIECE 64               /* samples a piece */
#define MAX_CLIPS 100000

static _Atomic unsigned decoded[MAX_CLIPS]; /* decoder_run() calls a clip */

struct decoder {
	unsigned seed;
};

/* The pool's clock (tools/common/prog.c, not linked here). */
double prog_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

/* A pause of up to max_us microseconds, one time in `one_in`. */
static void maybe_nap(unsigned *s, unsigned one_in, unsigned max_us)
{
	if (rnd(s) % one_in == 0) {
		struct timespec t = { 0, (long)(rnd(s) % max_us) * 1000 };

		nanosleep(&t, NULL);
	}
}

/* Sample k of clip i. */
static int16_t sample(uint64_t i, uint64_t k)
{
	return (int16_t)((i * 2654435761u + k * 40503u) >> 7);
}

struct decoder *decoder_new(const struct decode_cfg *cfg)
{
	static _Atomic unsigned seeds = 1;
	struct decoder *d = calloc(1, sizeof(*d));

	(void)cfg;
	if (d)
		d->seed = atomic_fetch_add(&seeds, 7919);
	return d;
}

void decoder_free(struct decoder *d)
{
	free(d);
}

void decoder_times(const struct decoder *d, double *t_read,
		   double *t_resample, double *t_emit)
{
	(void)d;
	*t_read = *t_resample = *t_emit = 0;
}

static int room(struct decoded *out)
{
	void *p;

	if (out->cap >= PIECE * sizeof(int16_t))
		return 0;
	p = realloc(out->data, PIECE * sizeof(int16_t));
	if (p == NULL)
		return -1;
	out->data = p;
	out->cap = PIECE * sizeof(int16_t);
	return 0;
}

void decoder_run(struct decoder *d, const char *path, struct decoded *out,
		 decode_emit_fn emit, void *ctx)
{
	unsigned long long len, i;
	uint64_t k;

	out->status = DEC_OK;
	out->n = out->offset = out->clip_samples = out->clipped = 0;
	out->fitted = 0;
	out->source_len = 0;
	out->reason[0] = '\0';
	if (sscanf(path, "%llu/%llu", &len, &i) != 2 || i >= MAX_CLIPS) {
		out->status = DEC_FATAL;
		snprintf(out->reason, sizeof(out->reason), "bad name");
		return;
	}
	atomic_fetch_add(&decoded[i], 1);
	if (strstr(path, "/slow")) {
		struct timespec t = { 0, 1000000 };

		nanosleep(&t, NULL);
	}
	maybe_nap(&d->seed, 8, 200);
	for (k = 0; k < len; k++) {
		if (out->n == PIECE) {
			if (emit == NULL || emit(ctx, out)) {
				out->status = DEC_FATAL;
				snprintf(out->reason, sizeof(out->reason),
					 "stopped");
				return;
			}
			out->offset += out->n;
			out->n = 0;
			maybe_nap(&d->seed, 4, 100);
		}
		if (room(out)) {
			out->status = DEC_FATAL;
			return;
		}
		((int16_t *)out->data)[out->n++] = sample(i, k);
	}
	out->clip_samples = len;
}

/* The decoders' annotation: the clip's number as its label. */
static void annotate(void *ctx, struct clip *c)
{
	unsigned long long len, i;

	(void)ctx;
	if (sscanf(c->key, "%llu/%llu", &len, &i) == 2)
		c->label = (int32_t)i;
}

/* Clip i's length: none, within a piece, or several pieces; a few are
 * known unusable before decoding (skip). */
static uint64_t clip_len(uint64_t i, const char **skip)
{
	unsigned s = (unsigned)(i * 7919u + 17u);

	*skip = rnd(&s) % 20 == 0 ? "not a regular file" : NULL;
	switch (rnd(&s) % 4) {
	case 0:
		return rnd(&s) % (PIECE + 1);
	case 1:
		return PIECE;
	default:
		return rnd(&s) % (5 * PIECE);
	}
}

/* Hands clip n to the pool. */
static int submit(struct pool *p, uint64_t n)
{
	char name[64];
	struct clip c = { 0 };
	uint64_t len = clip_len(n, &c.skip);

	snprintf(name, sizeof(name), "%llu/%llu", (unsigned long long)len,
		 (unsigned long long)n);
	c.path = c.key = name;
	c.label = -1;
	return pool_submit(p, &c);
}

/* Whether d holds clip i's samples from its offset on. */
static int samples_ok(const struct decoded *d, uint64_t i)
{
	for (uint64_t k = 0; k < d->n; k++)
		if (((const int16_t *)d->data)[k] != sample(i, d->offset + k))
			return 0;
	return 1;
}

/* One pool: n clips in, in order, checked as they come out. Returns the
 * number of faults, with the first described. */
static int run_order(size_t threads, size_t window, uint64_t n,
		     unsigned seed)
{
	struct pool *p;
	uint64_t submitted = 0, i, at, batch = 1;
	int bad = 0, piece;

	memset(decoded, 0, sizeof(decoded));
	if (pool_start(&p, NULL, threads, window, annotate, NULL)) {
		tap_diag("pool_start failed");
		return 1;
	}
	for (i = 0; i < n && !bad; i++) {
		const char *skip;
		uint64_t len = clip_len(i, &skip);
		struct job *j;

		/* in batches, as wavcat's feed(): once `batch` slots are
		 * free (or the clips left), then the sleepers woken; the
		 * batch varies from one slot to the whole window */
		if (submitted < n &&
		    pool_room(p) >= (n - submitted < batch ? n - submitted
							  : batch)) {
			while (submitted < n && pool_has_room(p))
				if (submit(p, submitted++)) {
					tap_diag("out of memory");
					bad++;
				}
			pool_wake(p);
			batch = 1 + rand_r(&seed) % window;
		}
		maybe_nap(&seed, 16, 300); /* the threads run out of clips */
		at = 0;
		for (;;) {
			j = pool_wait(p, i, &piece);
			if (!piece)
				break;
			if (skip || j->piece.offset != at ||
			    j->piece.n != PIECE || !samples_ok(&j->piece, i)) {
				tap_diag("clip %llu: a wrong piece at %llu",
					 (unsigned long long)i,
					 (unsigned long long)at);
				bad++;
			}
			at += j->piece.n;
			maybe_nap(&seed, 8, 100); /* its thread waits */
			pool_piece_done(p, i);
		}
		if (skip) {
			if (j->out.status != DEC_SKIP ||
			    strcmp(j->out.reason, skip) != 0) {
				tap_diag("clip %llu: not skipped",
					 (unsigned long long)i);
				bad++;
			}
		} else if (j->out.status != DEC_OK || j->out.offset != at ||
			   at + j->out.n != len || j->out.clip_samples != len ||
			   (len > 0 && j->out.n == 0) ||
			   !samples_ok(&j->out, i) ||
			   atomic_load(&decoded[i]) != 1 ||
			   j->clip.label != (int32_t)i) {
			tap_diag("clip %llu (%llu samples): status %d, %llu "
				 "samples from %llu, decoded %u times, "
				 "label %d", (unsigned long long)i,
				 (unsigned long long)len, j->out.status,
				 (unsigned long long)j->out.n,
				 (unsigned long long)j->out.offset,
				 atomic_load(&decoded[i]),
				 (int)j->clip.label);
			bad++;
		}
		pool_release(p, i);
	}
	pool_stop(p, NULL, NULL, NULL, NULL);
	return bad;
}

static void test_order(uint64_t n)
{
	static const size_t cfg[][2] = {
		{ 1, 1 }, { 1, 3 }, { 2, 1 }, { 2, 2 }, { 3, 7 },
		{ 4, 20 }, { 8, 12 }, { 16, 68 }, { 16, 2 },
	};

	for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++)
		tap_is(run_order(cfg[c][0], cfg[c][1], n, (unsigned)c + 1), 0,
		       "%llu clips, %zu threads, a window of %zu: in order, "
		       "each decoded once, every sample in place",
		       (unsigned long long)n, cfg[c][0], cfg[c][1]);
}

/* A new pool of threads and window slots, full of clips of len samples
 * named "LEN/INDEX" then tail; NULL (said) when it cannot be. */
static struct pool *full_pool(size_t threads, size_t window, int len,
			      const char *tail)
{
	struct pool *p;
	struct clip c = { 0 };
	char name[64];

	memset(decoded, 0, sizeof(decoded));
	if (pool_start(&p, NULL, threads, window, NULL, NULL)) {
		tap_diag("pool_start failed");
		return NULL;
	}
	for (uint64_t i = 0; pool_has_room(p); i++) {
		snprintf(name, sizeof(name), "%d/%llu%s", len,
			 (unsigned long long)i, tail);
		c.path = c.key = name;
		if (pool_submit(p, &c)) {
			tap_diag("out of memory");
			pool_stop(p, NULL, NULL, NULL, NULL);
			return NULL;
		}
	}
	pool_wake(p);
	return p;
}

/* Stops pools whose threads wait to hand on pieces (every clip long,
 * none of their pieces taken but the first clip's first), decode or
 * sleep: pool_stop() returns (alarm() fails the test otherwise). Then
 * pools of short clips that take a millisecond each: once pool_stop()
 * has begun, the threads end with the clip they decode; none claims
 * another of those waiting. */
static void test_stop(void)
{
	int bad = 0, piece;

	for (int round = 0; round < 20 && !bad; round++) {
		size_t threads = 1 + (size_t)round % 8;
		struct pool *p = full_pool(threads, 2 * threads, 4 * PIECE, "");

		if (p == NULL) {
			bad++;
			break;
		}
		if (round % 2)
			(void)pool_wait(p, 0, &piece);
		if (round % 4 == 3) { /* the rest asleep */
			struct timespec t = { 0, 2000000 };

			nanosleep(&t, NULL);
		}
		pool_stop(p, NULL, NULL, NULL, NULL);
	}
	tap_is(bad, 0, "pool_stop() returns while threads wait to hand on "
	       "pieces, decode or sleep (20 pools)");

	bad = 0;
	for (int round = 0; round < 10; round++) {
		size_t threads = 2 + (size_t)round % 4, window = 8 * threads;
		struct pool *p = full_pool(threads, window, PIECE / 2, "/slow");
		unsigned before = 0, after = 0;
		uint64_t i;

		if (p == NULL) {
			bad++;
			break;
		}
		(void)pool_wait(p, 0, &piece);
		for (i = 0; i < window; i++)
			before += atomic_load(&decoded[i]);
		pool_stop(p, NULL, NULL, NULL, NULL);
		for (i = 0; i < window; i++)
			after += atomic_load(&decoded[i]);
		if (after > before + threads) {
			tap_diag("%zu threads: %u clips begun before "
				 "pool_stop(), %u after it", threads, before,
				 after);
			bad++;
		}
	}
	tap_is(bad, 0, "after pool_stop() the threads end with the clip "
	       "they decode (10 pools of short clips)");
}

int main(int argc, char **argv)
{
	alarm(120); /* a lost wake-up hangs: fail instead */
	if (argc >= 2 && strcmp(argv[1], "order") == 0)
		test_order(argc >= 3 ? strtoull(argv[2], NULL, 10) : 2000);
	else if (argc >= 2 && strcmp(argv[1], "stop") == 0)
		test_stop();
	else {
		fprintf(stderr, "usage: test-pool order [N] | stop\n");
		return 2;
	}
	return tap_done();
}
