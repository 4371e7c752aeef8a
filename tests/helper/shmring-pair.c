/*
 * shmring-pair.c - test-shmring's runs of a writer and a reader: two
 * processes, two threads on one mapping, a reader killed while it holds
 * slots, a reader of another user.
 *
 * The writer sends each payload's reference down a pipe once a reader
 * has acknowledged the ring, and the payload itself after its message
 * when the ring is full or too small, as a stage will. The reader checks
 * every payload, holds back a random number of them and releases them in
 * a random order, now and then passing one on as a forwarding stage does
 * (hold, then release its own).
 */
#include "shmring-pair.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/xio.h"
#include "shmring-fixture.h"
#include "tap.h"

#define MSG_END UINT64_MAX
#define MSG_STOP (UINT64_MAX - 1)
#define HOLD_MAX 12

/* What goes through the pipe: a reference, or a payload inline after. */
struct msg {
	uint64_t k, off, len;
	uint32_t slot, shared;
};

struct writer {
	struct shmring *ring;
	int out;
	uint64_t seed, n;
	size_t big;             /* pay_len's big */
	uint64_t last;          /* MSG_END or MSG_STOP */
	unsigned char *buf;
	/* results */
	uint64_t shared, inlined, full, too_big, bytes;
	int err;
	struct { uint64_t k, off, len; } in_slot[256]; /* the last per slot */
};

static void *writer_main(void *arg)
{
	struct writer *wr = arg;

	for (uint64_t k = 0; k < wr->n && !wr->err; k++) {
		size_t len = pay_len(wr->seed, k, wr->big);
		struct msg m = { .k = k, .len = len };
		void *ptr;
		int e = -1;

		/* references only once a reader acknowledged */
		if (shmring_acked(wr->ring))
			e = shmring_alloc(wr->ring, len, &m.slot, &m.off, &ptr);
		if (e == 0) {
			pay_fill(wr->seed, k, ptr, len);
			m.shared = 1;
			wr->shared++;
			wr->bytes += len;
			if (m.slot < 256) {
				wr->in_slot[m.slot].k = k;
				wr->in_slot[m.slot].off = m.off;
				wr->in_slot[m.slot].len = len;
			}
			wr->err = xio_write_all(wr->out, &m, sizeof(m));
			continue;
		}
		wr->full += e == SHMRING_E_FULL;
		wr->too_big += e == SHMRING_E_TOOBIG;
		if (e != -1 && e != SHMRING_E_FULL && e != SHMRING_E_TOOBIG) {
			wr->err = e;
			break;
		}
		pay_fill(wr->seed, k, wr->buf, len);
		wr->inlined++;
		if (!(wr->err = xio_write_all(wr->out, &m, sizeof(m))))
			wr->err = xio_write_all(wr->out, wr->buf, len);
	}
	if (!wr->err)
		wr->err = xio_write_all(wr->out, &(struct msg){ .k = wr->last },
					sizeof(struct msg));
	return NULL;
}

struct held {
	uint64_t k, off, len;
	uint32_t slot;
};

struct reader {
	struct shmring *ring;   /* at, hold, release through it */
	int in, back;           /* back: MSG_STOP's answer, the pool size */
	uint64_t seed, rng;
	unsigned hold_min, hold_max;
	unsigned char *buf;
	struct held pool[HOLD_MAX + 2];
	unsigned n_pool;
	/* results */
	struct reader_res {
		uint64_t got, shared, inlined;
		uint64_t bad_at, bad_content, bad_call, bad_stream;
	} res;
};

/* Releases pool entry i after checking its payload once more: a byte
 * written over while it was held shows here. */
static void reader_drop(struct reader *rd, unsigned i)
{
	struct held *h = &rd->pool[i];
	const unsigned char *p = shmring_at(rd->ring, h->slot, h->off, h->len);

	if (p == NULL)
		rd->res.bad_at++;
	else if (!pay_ok(rd->seed, h->k, p, h->len))
		rd->res.bad_content++;
	rd->res.bad_call += shmring_release(rd->ring, h->slot) != 0;
	*h = rd->pool[--rd->n_pool];
}

static void reader_stop(struct reader *rd)
{
	uint32_t n = rd->n_pool;

	if (write(rd->back, &n, sizeof(n)) != sizeof(n))
		_exit(5);
	for (;;)
		pause();
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct msg m = { .k = 0 };

	while (xio_read_full(rd->in, &m, sizeof(m)) == sizeof(m)) {
		if (m.k == MSG_END)
			break;
		if (m.k == MSG_STOP)
			reader_stop(rd);
		rd->res.got++;
		if (m.shared) {
			const unsigned char *p = shmring_at(rd->ring, m.slot,
							   m.off, m.len);

			rd->res.shared++;
			if (p == NULL) {
				rd->res.bad_at++;
			} else {
				rd->res.bad_content += !pay_ok(rd->seed, m.k,
							       p, m.len);
				/* now and then as a stage passing it on:
				 * hold for the next, release our own */
				if (rng_next(&rd->rng) % 8 == 0)
					rd->res.bad_call +=
						shmring_hold(rd->ring, m.slot)
						!= 0 ||
						shmring_release(rd->ring,
								m.slot) != 0;
				rd->pool[rd->n_pool++] = (struct held){
					m.k, m.off, m.len, m.slot };
			}
		} else {
			rd->res.inlined++;
			if (xio_read_full(rd->in, rd->buf, m.len) !=
			    (ssize_t)m.len) {
				rd->res.bad_stream++;
				break;
			}
			rd->res.bad_content += !pay_ok(rd->seed, m.k, rd->buf,
						       m.len);
		}
		/* hold back a random number, release a random choice */
		unsigned keep = rd->hold_min + (unsigned)(rng_next(&rd->rng) %
				(rd->hold_max - rd->hold_min + 1));

		while (rd->n_pool > keep)
			reader_drop(rd, (unsigned)(rng_next(&rd->rng) %
						   rd->n_pool));
	}
	if (m.k != MSG_END)
		rd->res.bad_stream++;
	while (rd->n_pool > 0)
		reader_drop(rd, rd->n_pool - 1);
	return NULL;
}

/* The checks after a run: the reader got everything, intact; every slot
 * came back; the counters agree; the whole ring is free. */
static void check_run(const char *what, struct shmring *w,
		      const struct writer *wr, const struct reader_res *res,
		      uint64_t bytes, uint32_t slots)
{
	struct shmring_stats st;
	uint32_t held = 0;
	struct ref r[256];
	int bad = 0;

	tap_is(wr->err, 0, "%s: the writer wrote every message", what);
	tap_is_u64(res->got, wr->n, "%s: the reader got every payload", what);
	tap_ok(res->shared == wr->shared && res->inlined == wr->inlined,
	       "%s: %llu by reference, %llu inline (%llu refused as full, "
	       "%llu too big)", what, (unsigned long long)res->shared,
	       (unsigned long long)res->inlined, (unsigned long long)wr->full,
	       (unsigned long long)wr->too_big);
	tap_ok(wr->shared > wr->n / 2, "%s: most by reference", what);
	tap_ok(res->bad_at == 0 && res->bad_content == 0,
	       "%s: every reference resolved, every payload intact when read "
	       "and when released (%llu, %llu bad)", what,
	       (unsigned long long)res->bad_at,
	       (unsigned long long)res->bad_content);
	tap_ok(res->bad_call == 0 && res->bad_stream == 0,
	       "%s: holds and releases accepted, the stream whole", what);
	for (uint32_t s = 0; s < slots; s++)
		held += shmring_refs(w, s) != 0;
	tap_is(held, 0, "%s: every slot came back", what);
	shmring_stats(w, &st);
	tap_ok(st.allocs == wr->shared && st.bytes == wr->bytes &&
	       st.full_slots + st.full_bytes == wr->full &&
	       st.too_big == wr->too_big, "%s: the counters agree", what);
	tap_ok(take(w, bytes, &r[0]) == 0 && r[0].off == 0 &&
	       shmring_release(w, r[0].slot) == 0, "%s: the whole data area "
	       "is free", what);
	for (uint32_t s = 0; s < slots; s++)
		bad += take(w, 64, &r[s]) != 0;
	for (uint32_t s = 0; s < slots; s++)
		shmring_release(w, r[s].slot);
	tap_is(bad, 0, "%s: and every slot", what);
}

enum { RUN_BYTES = 262144, RUN_SLOTS = 32 };

static void setup_writer(struct writer *wr, struct shmring *w, int out,
			 uint64_t n, uint64_t last)
{
	memset(wr, 0, sizeof(*wr));
	wr->ring = w;
	wr->out = out;
	wr->seed = 2026;
	wr->n = n;
	wr->big = RUN_BYTES;
	wr->last = last;
	wr->buf = malloc(RUN_BYTES + 4096);
	if (wr->buf == NULL)
		exit(99);
}

static void setup_reader(struct reader *rd, struct shmring *r, int in,
			 unsigned hold_min)
{
	memset(rd, 0, sizeof(*rd));
	rd->ring = r;
	rd->in = in;
	rd->back = -1;
	rd->seed = 2026;
	rd->rng = 77;
	rd->hold_min = hold_min;
	rd->hold_max = HOLD_MAX;
	rd->buf = malloc(RUN_BYTES + 4096);
	if (rd->buf == NULL)
		exit(99);
}

/* The child of a two-process run: closes the fd it inherited, attaches
 * through /proc/PARENT/fd/N and reads; its results go up res_fd. */
static void child_reader(int fd, int in, int res_fd, int back,
			 unsigned hold_min)
{
	struct shmring *r;
	struct reader rd;
	int e;

	close(fd);
	e = shmring_attach(&r, getppid(), fd, RUN_BYTES, RUN_SLOTS, g_id);
	if (e) {
		fprintf(stderr, "child: %s\n", shmring_detail(r));
		_exit(3);
	}
	setup_reader(&rd, r, in, hold_min);
	rd.back = back;
	reader_main(&rd);
	if (write(res_fd, &rd.res, sizeof(rd.res)) != sizeof(rd.res))
		_exit(4);
	_exit(0);
}

int run_procs(uint64_t n)
{
	struct shmring *w;
	struct writer wr;
	struct reader_res res;
	int msg[2], back[2], shm0 = shm_names(), st;
	pid_t pid;

	w = mk(&(struct kind){ "memfd", shmring_create }, RUN_BYTES,
	       RUN_SLOTS);
	if (pipe(msg) < 0 || pipe(back) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		close(msg[1]);
		close(back[0]);
		child_reader(shmring_fd(w), msg[0], back[1], -1, 0);
	}
	close(msg[0]);
	close(back[1]);
	setup_writer(&wr, w, msg[1], n, MSG_END);
	writer_main(&wr);
	close(msg[1]);
	memset(&res, 0, sizeof(res));
	tap_ok(xio_read_full(back[0], &res, sizeof(res)) == sizeof(res),
	       "procs: the reader's results");
	close(back[0]);
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "procs: the reader "
	       "attached and ended well (status %d)", st);
	tap_is(shmring_acked(w), pid, "procs: acknowledged with its pid");
	check_run("procs", w, &wr, &res, RUN_BYTES, RUN_SLOTS);
	shmring_destroy(w);
	tap_ok(ring_fds() == 0 && ring_maps() == 0 && shm_names() <= shm0,
	       "procs: no fd, mapping or /dev/shm name of a ring left");
	free(wr.buf);
	return 0;
}

/* The reader thread attaches through /proc/self/fd for the
 * acknowledgement, then reads through the writer's own mapping, so that
 * ThreadSanitizer sees both sides of each byte. */
static void *thread_reader(void *arg)
{
	struct reader *rd = arg;
	struct shmring *r;
	int e = shmring_attach(&r, getpid(), shmring_fd(rd->ring), RUN_BYTES,
			       RUN_SLOTS, g_id);

	if (e)
		rd->res.bad_stream++;
	reader_main(rd);
	shmring_detach(r);
	return NULL;
}

int run_threads(uint64_t n)
{
	struct shmring *w;
	struct writer wr;
	struct reader rd;
	pthread_t tw, tr;
	int msg[2];

	w = mk(&(struct kind){ "memfd", shmring_create }, RUN_BYTES,
	       RUN_SLOTS);
	if (pipe(msg) < 0)
		return 1;
	setup_writer(&wr, w, msg[1], n, MSG_END);
	setup_reader(&rd, w, msg[0], 0);
	if (pthread_create(&tr, NULL, thread_reader, &rd) ||
	    pthread_create(&tw, NULL, writer_main, &wr))
		return 1;
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	close(msg[0]);
	close(msg[1]);
	tap_is(shmring_acked(w), getpid(), "threads: acknowledged");
	check_run("threads", w, &wr, &rd.res, RUN_BYTES, RUN_SLOTS);
	shmring_destroy(w);
	tap_ok(ring_fds() == 0 && ring_maps() == 0,
	       "threads: no fd or mapping of a ring left");
	free(wr.buf);
	free(rd.buf);
	return 0;
}

/* The reader killed while it holds slots: the writer goes on, never
 * hands those slots or their bytes out again, refuses at once when the
 * rest is used up; nothing of the ring is left afterwards. */
int run_kill(void)
{
	struct shmring *w;
	struct writer wr;
	struct held stuck[RUN_SLOTS];
	uint32_t n_pool = 0, n_stuck = 0;
	int msg[2], back[2], shm0 = shm_names(), st;
	int bad_place = 0, bad_content = 0, run_full = 0, fulls = 0;
	double waited = 0;
	pid_t pid;

	w = mk(&(struct kind){ "memfd", shmring_create }, RUN_BYTES,
	       RUN_SLOTS);
	if (pipe(msg) < 0 || pipe(back) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		close(msg[1]);
		close(back[0]);
		child_reader(shmring_fd(w), msg[0], -1, back[1], 2);
	}
	close(msg[0]);
	close(back[1]);
	setup_writer(&wr, w, msg[1], 400, MSG_STOP);
	writer_main(&wr);
	st = xio_read_full(back[0], &n_pool, sizeof(n_pool)) ==
	     sizeof(n_pool);
	tap_ok(st, "kill: the reader stopped, holding %u slots", n_pool);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	tap_ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	       "kill: the reader was killed");
	tap_is(xio_write_all(msg[1], &(struct msg){ .k = 0 },
			     sizeof(struct msg)), -EPIPE,
	       "kill: the pipe says so");
	for (uint32_t s = 0; s < RUN_SLOTS; s++)
		if (shmring_refs(w, s)) {
			stuck[n_stuck].slot = s;
			stuck[n_stuck].k = wr.in_slot[s].k;
			stuck[n_stuck].off = wr.in_slot[s].off;
			stuck[n_stuck].len = wr.in_slot[s].len;
			n_stuck++;
		}
	tap_ok(n_stuck == n_pool && n_stuck >= 2, "kill: the slots it held "
	       "are still held (%u)", n_stuck);
	for (int i = 0; i < 4 * RUN_SLOTS + 1000; i++) {
		struct ref r;
		double t0 = now();
		int e = take(w, pay_len(5, (uint64_t)i, 8192), &r);
		double t = now() - t0;

		if (e) {
			waited += t;
			fulls++;
			run_full = e == SHMRING_E_FULL ? run_full + 1 : 0;
			continue;
		}
		run_full = 0;
		for (uint32_t j = 0; j < n_stuck; j++) {
			const struct held *h = &stuck[j];

			bad_place += r.slot == h->slot ||
				     (r.len && h->len && r.off < h->off +
				      h->len && h->off < r.off + r.len);
		}
		memset(r.ptr, 0xa5, r.len);
		shmring_release(w, r.slot); /* as if read */
	}
	tap_is(bad_place, 0, "kill: no slot or byte it held given out again");
	tap_ok(run_full >= 1000, "kill: then refused as full, every time "
	       "(the last %d)", run_full);
	tap_ok(waited < 0.5, "kill: %d refusals, none waiting (%.6f s in all)",
	       fulls, waited);
	for (uint32_t j = 0; j < n_stuck; j++) {
		const struct held *h = &stuck[j];
		const unsigned char *p = shmring_at(w, h->slot, h->off, h->len);

		bad_content += p == NULL || !pay_ok(wr.seed, h->k, p, h->len) ||
			       shmring_refs(w, h->slot) != 1;
	}
	tap_is(bad_content, 0, "kill: the held payloads intact, still held");
	close(msg[1]);
	close(back[0]);
	shmring_destroy(w);
	tap_ok(ring_fds() == 0 && ring_maps() == 0 && shm_names() <= shm0,
	       "kill: no fd, mapping or /dev/shm name of a ring left");
	tap_ok(kill(pid, 0) < 0 && errno == ESRCH, "kill: the reader is gone");
	free(wr.buf);
	return 0;
}

/* Another user cannot open the ring, by /proc/PID/fd or by attaching. */
int run_user(void)
{
	struct shmring *w, *r;
	int fd, st;
	pid_t pid;

	if (geteuid() != 0) {
		tap_ok(1, "user: another user cannot open the ring # skip "
		       "not root");
		return 0;
	}
	w = mk(&(struct kind){ "memfd", shmring_create }, 4096, 4);
	fd = shmring_fd(w);
	pid = fork();
	if (pid == 0) { /* the same user: the control */
		close(fd);
		_exit(shmring_attach(&r, getppid(), fd, 4096, 4, g_id) ? 1 : 0);
	}
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	       shmring_acked(w) == pid,
	       "user: a child of the same user attaches");
	pid = fork();
	if (pid == 0) {
		char path[64];
		int e, ro, rw;

		close(fd);
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
		    setuid(65534) < 0)
			_exit(9);
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getppid(),
			 fd);
		ro = open(path, O_RDONLY);
		rw = open(path, O_RDWR);
		e = shmring_attach(&r, getppid(), fd, 4096, 4, g_id);
		_exit(ro >= 0 || rw >= 0 ? 1 : e != -EACCES ? 2 : 0);
	}
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "user: uid 65534 can "
	       "neither open /proc/PID/fd/N nor attach (status %d)", st);
	tap_ok(!shmring_attached(w, pid), "user: and left no "
	       "acknowledgement");
	shmring_destroy(w);
	return 0;
}
