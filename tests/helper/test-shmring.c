/*
 * test-shmring - unit tests of lib/shmring.c, the shared ring of payloads.
 *
 *   test-shmring unit      one process: allocation, wrap-around, oldest
 *                          first reclaim, full rings, at()'s bounds,
 *                          hold/release, and attach's refusals (on the
 *                          memfd ring, and on a private one where no file
 *                          is needed)
 *   test-shmring procs [N] a writer and a reader process (forked, the
 *                          reader attached through /proc/PARENT/fd/N)
 *                          passing N random payloads (default 20000)
 *   test-shmring threads [N]
 *                          the same with a writer and a reader thread on
 *                          one mapping (for ThreadSanitizer, which sees
 *                          no other process)
 *   test-shmring kill      the reader SIGKILLed while it holds slots
 *   test-shmring user      another user cannot open the ring (as root)
 *
 * Payload k is a function of (seed, k) (pay_fill), so the reader checks
 * each one without being told its bytes; it checks them again right
 * before releasing them, which shows any payload overwritten while still
 * held. TAP on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shmring-fixture.h"
#include "shmring-pair.h"
#include "tap.h"

static const uint8_t g_other_id[16] = "melpipe-other-i";

/* SIGALRM: a run hung (alloc waiting, a reader stuck). */
static void hung(int sig)
{
	static const char msg[] = "Bail out! hung\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

/* ---------------------------------------------------------------- */
/* One process */

static uint64_t up64(uint64_t v)
{
	return (v + 63) / 64 * 64;
}

static void test_args(const struct kind *kd)
{
	struct shmring *w;
	int e;

	e = kd->create(&w, 0, 4, g_id);
	tap_is(e, -EINVAL, "%s: 0 data bytes refused", kd->name);
	tap_ok(strlen(shmring_detail(w)) > 0, "%s: with a detail: %s",
	       kd->name, shmring_detail(w));
	shmring_destroy(w);
	e = kd->create(&w, 4096 + 32, 4, g_id);
	tap_is(e, -EINVAL, "%s: data bytes not a multiple of 64 refused",
	       kd->name);
	shmring_destroy(w);
	e = kd->create(&w, 4096, 0, g_id);
	tap_is(e, -EINVAL, "%s: 0 slots refused", kd->name);
	shmring_destroy(w);
}

/* Payloads one after the other: slot k, each at the end of the one
 * before rounded up to 64 bytes, at data + off. */
static void test_sequence(const struct kind *kd)
{
	static const size_t lens[] = { 100, 1, 0, 64, 65, 300, 0, 0, 4000 };
	struct shmring *w = mk(kd, 8192, 16);
	uint64_t bytes, want_off = 0, total = 0;
	unsigned char *data = shmring_data(w, &bytes);
	struct shmring_stats st;
	int bad = 0;

	tap_is_u64(bytes, 8192, "%s: data area of the size asked", kd->name);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		struct ref r;
		int e = take(w, lens[k], &r);

		if (e || r.slot != k || r.off != want_off ||
		    r.ptr != data + want_off ||
		    (uintptr_t)r.ptr % SHMRING_ALIGN ||
		    shmring_refs(w, r.slot) != 1 ||
		    shmring_at(w, r.slot, r.off, r.len) != r.ptr) {
			tap_diag("payload %zu of %zu bytes: %s, slot %u off "
				 "%llu (want %zu, %llu)", k, lens[k],
				 shmring_strerror(e), r.slot,
				 (unsigned long long)r.off, k,
				 (unsigned long long)want_off);
			bad++;
		}
		want_off += up64(lens[k]);
		total += lens[k];
	}
	tap_is(bad, 0, "%s: slots in order, payloads contiguous, 64-byte "
	       "aligned, refs 1", kd->name);
	shmring_stats(w, &st);
	tap_ok(st.allocs == 9 && st.bytes == total && st.full_slots == 0 &&
	       st.full_bytes == 0 && st.too_big == 0,
	       "%s: counted: %llu allocations, %llu bytes", kd->name,
	       (unsigned long long)st.allocs, (unsigned long long)st.bytes);
	shmring_destroy(w);
}

/* The head wraps to offset 0 when the end is too short, and only over
 * bytes that came back. */
static void test_wrap(const struct kind *kd)
{
	struct shmring *w = mk(kd, 4096, 16);
	struct shmring_stats st;
	struct ref a, b, c, d, e;

	take(w, 1024, &a);
	take(w, 2048, &b);
	take(w, 512, &c); /* 512 bytes left at the end */
	tap_ok(a.off == 0 && b.off == 1024 && c.off == 3072,
	       "%s: three payloads from the start", kd->name);
	tap_is(take(w, 1024, &d), SHMRING_E_FULL,
	       "%s: no wrap over a payload still held", kd->name);
	shmring_release(w, a.slot);
	tap_is(take(w, 1024, &d), 0, "%s: wraps once the start came back",
	       kd->name);
	tap_is_u64(d.off, 0, "%s: to offset 0, not the 512 bytes at the end",
		   kd->name);
	tap_is(take(w, 512, &e), SHMRING_E_FULL,
	       "%s: the bytes after it are still held", kd->name);
	shmring_release(w, b.slot);
	tap_is(take(w, 512, &e), 0, "%s: and come back in turn", kd->name);
	tap_is_u64(e.off, 1024, "%s: right after the wrapped payload",
		   kd->name);
	shmring_stats(w, &st);
	tap_ok(st.full_bytes == 2 && st.full_slots == 0,
	       "%s: refusals counted as full of bytes", kd->name);
	shmring_destroy(w);
}

/* Out of order: slots released after an older one still held wait for
 * it, bytes and slots alike. */
static void test_order(const struct kind *kd)
{
	struct shmring *w = mk(kd, 4096, 16);
	struct shmring *s = mk(kd, 4096, 4);
	struct ref a, b, c, x, y, z, r[4];
	int e;

	take(w, 1024, &a);
	take(w, 1024, &b);
	take(w, 1024, &c);
	shmring_release(w, b.slot);
	shmring_release(w, c.slot);
	e = take(w, 1024, &x);
	tap_ok(e == 0 && x.off == 3072, "%s: the head goes on past released "
	       "slots", kd->name);
	tap_is(take(w, 1024, &y), SHMRING_E_FULL, "%s: bytes released after "
	       "a held payload are not reused before it", kd->name);
	shmring_release(w, a.slot);
	e = take(w, 2048, &y);
	tap_ok(e == 0 && y.off == 0, "%s: once it comes back, all three "
	       "do (2048 bytes at 0)", kd->name);
	e = take(w, 1024, &z);
	tap_ok(e == 0 && z.off == 2048, "%s: and the third's too", kd->name);

	for (int i = 0; i < 4; i++)
		take(s, 64, &r[i]);
	for (int i = 1; i < 4; i++)
		shmring_release(s, r[i].slot);
	tap_is(take(s, 64, &x), SHMRING_E_FULL, "%s: slots released after a "
	       "held slot are not reused before it", kd->name);
	shmring_release(s, r[0].slot);
	e = take(s, 64, &x);
	tap_ok(e == 0 && x.slot == 0, "%s: then slot 0 again", kd->name);
	e = take(s, 64, &y);
	tap_ok(e == 0 && y.slot == 1, "%s: then slot 1", kd->name);
	shmring_destroy(w);
	shmring_destroy(s);
}

/* Full: of slots, of bytes, too big; never a wait. */
static void test_full(const struct kind *kd)
{
	struct shmring *w = mk(kd, 4096, 8);
	struct shmring_stats st;
	struct ref r[8], x;
	double t0, t;
	int bad = 0;

	for (int i = 0; i < 8; i++)
		bad += take(w, 64, &r[i]) != 0;
	tap_is(bad, 0, "%s: 8 slots taken", kd->name);
	t0 = now();
	for (int i = 0; i < 1000; i++)
		bad += take(w, 64, &x) != SHMRING_E_FULL;
	t = now() - t0;
	tap_is(bad, 0, "%s: the 9th and 999 more refused as full", kd->name);
	tap_ok(t < 0.5, "%s: at once (1000 refusals in %.6f s)", kd->name, t);
	for (int i = 0; i < 8; i++)
		shmring_release(w, r[i].slot);
	tap_is(take(w, 4096, &x), 0, "%s: all back: the whole data area in "
	       "one payload", kd->name);
	tap_is(take(w, 0, &r[0]), 0, "%s: an empty payload still fits",
	       kd->name);
	tap_is(take(w, 64, &r[1]), SHMRING_E_FULL, "%s: 64 bytes do not",
	       kd->name);
	tap_is(take(w, 4097, &r[1]), SHMRING_E_TOOBIG,
	       "%s: more than the data area: too big", kd->name);
	tap_is(take(w, (size_t)UINT32_MAX + 1, &r[1]), SHMRING_E_TOOBIG,
	       "%s: more than a slot's length: too big", kd->name);
	shmring_release(w, x.slot);
	shmring_release(w, r[0].slot);
	shmring_stats(w, &st);
	tap_ok(st.full_slots == 1000 && st.full_bytes == 1 && st.too_big == 2
	       && st.allocs == 10 && st.bytes == 8 * 64 + 4096,
	       "%s: counted: %llu full of slots, %llu of bytes, %llu too big",
	       kd->name, (unsigned long long)st.full_slots,
	       (unsigned long long)st.full_bytes,
	       (unsigned long long)st.too_big);
	/* the head in the middle, everything back: starts at 0 again */
	take(w, 1000, &x);
	take(w, 64, &r[0]);
	shmring_release(w, x.slot);
	shmring_release(w, r[0].slot);
	tap_ok(take(w, 4096, &x) == 0 && x.off == 0, "%s: an empty ring "
	       "starts again at 0", kd->name);
	shmring_close(w);
	tap_is(take(w, 0, &x), SHMRING_E_CLOSED, "%s: closed: no allocation",
	       kd->name);
	tap_ok(shmring_closed(w), "%s: and says so", kd->name);
	shmring_destroy(w);
}

/* Every bad reference is refused by at(). */
static void test_at(const struct kind *kd)
{
	struct shmring *w = mk(kd, 4096, 8);
	struct ref a, b, c;
	void *p;

	take(w, 100, &a);
	take(w, 300, &b); /* off 128 */
	tap_ok(shmring_at(w, b.slot, b.off, b.len) == b.ptr,
	       "%s: a good reference resolves", kd->name);
	tap_ok(!shmring_at(w, 8, b.off, b.len) &&
	       !shmring_at(w, UINT32_MAX, b.off, b.len),
	       "%s: slot out of range", kd->name);
	tap_ok(!shmring_at(w, a.slot, b.off, b.len),
	       "%s: another slot's payload", kd->name);
	tap_ok(!shmring_at(w, b.slot, b.off + 64, b.len) &&
	       !shmring_at(w, b.slot, b.off - 64, b.len),
	       "%s: offset not the slot's", kd->name);
	tap_ok(!shmring_at(w, b.slot, b.off, b.len + 1) &&
	       !shmring_at(w, b.slot, b.off, b.len - 1) &&
	       !shmring_at(w, b.slot, b.off, 0),
	       "%s: length not the slot's", kd->name);
	tap_ok(!shmring_at(w, b.slot, UINT64_MAX - 10, 300) &&
	       !shmring_at(w, b.slot, b.off, UINT64_MAX - 64) &&
	       !shmring_at(w, b.slot, 4096, 0) &&
	       !shmring_at(w, b.slot, 4096 - 64, 128),
	       "%s: offset + length past the data area, overflowing or not",
	       kd->name);
	shmring_release(w, a.slot);
	tap_ok(!shmring_at(w, a.slot, a.off, a.len), "%s: a released slot",
	       kd->name);
	shmring_release(w, b.slot);
	/* a reference to slot 0's old payload, after slot 0 is reused */
	{
		struct shmring *s = mk(kd, 4096, 2);
		struct ref r0, r1, r2;

		take(s, 100, &r0);
		take(s, 100, &r1);
		shmring_release(s, r0.slot);
		take(s, 200, &r2); /* slot 0 again, at 256 */
		tap_ok(r2.slot == r0.slot && r2.off != r0.off &&
		       !shmring_at(s, r0.slot, r0.off, r0.len) &&
		       shmring_at(s, r2.slot, r2.off, r2.len) == r2.ptr,
		       "%s: a stale reference to a reused slot", kd->name);
		shmring_destroy(s);
	}
	take(w, 64, &c);
	p = shmring_at(w, c.slot, c.off, c.len);
	tap_ok(p == c.ptr, "%s: a new slot resolves", kd->name);
	shmring_destroy(w);
}

static void test_refs(const struct kind *kd)
{
	struct shmring *w = mk(kd, 4096, 8);
	struct ref a;

	tap_is(shmring_hold(w, 3), SHMRING_E_REF, "%s: hold of a free slot",
	       kd->name);
	tap_is(shmring_release(w, 3), SHMRING_E_REF,
	       "%s: release of a free slot", kd->name);
	tap_ok(shmring_hold(w, 8) == SHMRING_E_REF &&
	       shmring_release(w, 8) == SHMRING_E_REF,
	       "%s: slot out of range", kd->name);
	take(w, 64, &a);
	tap_is(shmring_hold(w, a.slot), 0, "%s: hold of a slot in use",
	       kd->name);
	tap_is(shmring_refs(w, a.slot), 2, "%s: two references", kd->name);
	shmring_release(w, a.slot);
	tap_ok(shmring_at(w, a.slot, a.off, a.len) == a.ptr,
	       "%s: one released, it still resolves", kd->name);
	shmring_release(w, a.slot);
	tap_ok(shmring_refs(w, a.slot) == 0 &&
	       !shmring_at(w, a.slot, a.off, a.len),
	       "%s: both released: free", kd->name);
	tap_is(shmring_release(w, a.slot), SHMRING_E_REF,
	       "%s: a third release refused", kd->name);
	tap_is(shmring_hold(w, a.slot), SHMRING_E_REF,
	       "%s: so is a hold now", kd->name);
	shmring_destroy(w);
}

/* Random allocations, releases in any order, holds: no payload held is
 * ever written over, no slot held given out, no region overlapping a
 * held one, and the counters agree. */
static void test_random(const struct kind *kd)
{
	enum { SLOTS = 32, STEPS = 20000 };
	const uint64_t bytes = 65536;
	struct shmring *w = mk(kd, bytes, SLOTS);
	struct { struct ref r; uint64_t k; int refs; } live[SLOTS];
	uint64_t s = 42, allocs = 0, sum = 0, full = 0, big = 0;
	struct shmring_stats st;
	int n = 0, bad_place = 0, bad_content = 0, bad_call = 0;
	struct ref r;

	for (uint64_t k = 0; k < STEPS; k++) {
		uint64_t m = rng_next(&s);

		if (m % 16 < 7 && n > 0) { /* release one, any of them */
			int i = (int)((m >> 8) % (unsigned)n);

			bad_content += !pay_ok(7, live[i].k, live[i].r.ptr,
					       live[i].r.len);
			bad_call += shmring_release(w, live[i].r.slot) != 0;
			if (--live[i].refs == 0)
				live[i] = live[--n];
			continue;
		}
		if (m % 16 < 9 && n > 0) { /* a stage passes one on */
			int i = (int)((m >> 8) % (unsigned)n);

			bad_call += shmring_hold(w, live[i].r.slot) != 0;
			live[i].refs++;
			continue;
		}
		int e = take(w, pay_len(9, k, bytes), &r);

		if (e == SHMRING_E_FULL || e == SHMRING_E_TOOBIG) {
			full += e == SHMRING_E_FULL;
			big += e == SHMRING_E_TOOBIG;
			continue;
		}
		if (e) {
			bad_call++;
			continue;
		}
		for (int i = 0; i < n; i++) {
			uint64_t a0 = live[i].r.off, a1 = a0 + live[i].r.len;

			bad_place += live[i].r.slot == r.slot ||
				     (r.len && live[i].r.len &&
				      r.off < a1 && a0 < r.off + r.len);
		}
		bad_place += r.off + r.len > bytes || r.off % 64;
		pay_fill(7, k, r.ptr, r.len);
		allocs++;
		sum += r.len;
		live[n].r = r;
		live[n].k = k;
		live[n].refs = 1;
		n++;
	}
	tap_is(bad_place, 0, "%s: random run: nothing given out over a payload "
	       "or slot held", kd->name);
	tap_is(bad_content, 0, "%s: every payload intact until released",
	       kd->name);
	tap_is(bad_call, 0, "%s: every hold and release accepted", kd->name);
	tap_ok(full > 100 && allocs > 1000 && big > 10, "%s: %llu payloads, "
	       "%llu refused as full, %llu too big", kd->name,
	       (unsigned long long)allocs, (unsigned long long)full,
	       (unsigned long long)big);
	shmring_stats(w, &st);
	tap_ok(st.allocs == allocs && st.bytes == sum &&
	       st.full_slots + st.full_bytes == full && st.too_big == big,
	       "%s: the counters agree", kd->name);
	while (n > 0) {
		while (live[n - 1].refs-- > 0)
			shmring_release(w, live[n - 1].r.slot);
		n--;
	}
	tap_ok(take(w, bytes, &r) == 0 && r.off == 0,
	       "%s: all released: the whole ring is free", kd->name);
	shmring_destroy(w);
}

static void test_strerror(void)
{
	static const int codes[] = {
		SHMRING_E_FULL, SHMRING_E_TOOBIG, SHMRING_E_CLOSED,
		SHMRING_E_SIZE, SHMRING_E_NOTRING, SHMRING_E_VERSION,
		SHMRING_E_BUILD, SHMRING_E_LAYOUT, SHMRING_E_SEALS,
		SHMRING_E_READERS, SHMRING_E_REF, -ENOENT, -EACCES
	};
	const size_t n = sizeof(codes) / sizeof(codes[0]);
	int bad = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			bad += strcmp(shmring_strerror(codes[i]),
				      shmring_strerror(codes[j])) == 0;
	tap_is(bad, 0, "every code has a text of its own");
}

/* ---------------------------------------------------------------- */
/* The memfd and attaching */

/* The size the header's layout gives: a page, the table in pages, data. */
static uint64_t file_size(uint64_t bytes, uint32_t slots)
{
	return 4096 + ((uint64_t)slots * 16 + 4095) / 4096 * 4096 + bytes;
}

static void test_memfd(void)
{
	struct shmring *w, *p;
	struct stat st;
	int fd, seals;

	w = mk(&(struct kind){ "memfd", shmring_create }, 65536, 100);
	fd = shmring_fd(w);
	tap_ok(fd >= 0 && fstat(fd, &st) == 0, "memfd: an fd");
	tap_ok((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, "memfd: close-on-exec");
	tap_is(st.st_mode & 07777, 0600, "memfd: mode 0600");
	tap_is_u64((uint64_t)st.st_size, file_size(65536, 100),
		   "memfd: control page, table, data");
	seals = fcntl(fd, F_GET_SEALS);
	tap_ok(seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW)
	       && (seals & F_SEAL_SEAL), "memfd: sealed: shrink, grow, seal");
	tap_ok(ftruncate(fd, 4096) < 0 && errno == EPERM &&
	       ftruncate(fd, (off_t)file_size(65536, 100) * 2) < 0,
	       "memfd: cannot shrink or grow");
	tap_is(shmring_acked(w), 0, "memfd: no reader yet");
	shmring_destroy(w);
	shmring_create_private(&p, 4096, 4, g_id);
	tap_is(shmring_fd(p), -1, "private: no fd");
	shmring_destroy(p);
}

/* A memfd of size bytes with the given seals, its first len bytes from
 * head. */
static int plain_memfd(uint64_t size, int seal, const void *head, size_t len)
{
	int fd = memfd_create("not-a-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    (len && pwrite(fd, head, len, 0) != (ssize_t)len) ||
	    (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)) {
		printf("Bail out! memfd: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

/* A pid that no process has: a child's, reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void test_attach(void)
{
	const uint64_t bytes = 65536;
	struct shmring *w, *r;
	pid_t me = getpid();
	unsigned char ctl[4096];
	char want[200];
	struct ref a;
	int fd, e, pfd;

	w = mk(&(struct kind){ "memfd", shmring_create }, bytes, 8);
	fd = shmring_fd(w);
	take(w, 1000, &a);
	pay_fill(1, 1, a.ptr, a.len);

	e = shmring_attach(&r, me, fd, bytes, 8, g_other_id);
	snprintf(want, sizeof(want), "ring of pid %d fd %d: built by another "
		 "build of melpipe", (int)me, fd);
	tap_is(e, SHMRING_E_BUILD, "attach: another build id refused");
	tap_is_str(shmring_detail(r), want, "attach: and said so");
	shmring_detach(r);
	tap_is(shmring_acked(w), 0, "attach: no acknowledgement from it");

	e = shmring_attach(&r, me, fd, bytes * 2, 8, g_id);
	tap_is(e, SHMRING_E_SIZE, "attach: another size refused");
	tap_ok(strstr(shmring_detail(r), "bytes, not the") != NULL,
	       "attach: %s", shmring_detail(r));
	shmring_detach(r);
	e = shmring_attach(&r, me, fd, bytes, 16, g_id); /* same file size */
	tap_is(e, SHMRING_E_LAYOUT, "attach: another slot count refused");
	shmring_detach(r);
	e = shmring_attach_fd(&r, fd, me + 1, bytes, 8, g_id);
	tap_is(e, SHMRING_E_LAYOUT, "attach: another writer pid refused");
	shmring_detach(r);

	pfd = plain_memfd(file_size(bytes, 8), 0, NULL, 0);
	e = shmring_attach_fd(&r, pfd, 0, bytes, 8, g_id);
	tap_is(e, SHMRING_E_SEALS, "attach: a plain memfd of the size, "
	       "unsealed, refused");
	tap_ok(strstr(shmring_detail(r), "not sealed") != NULL, "attach: %s",
	       shmring_detail(r));
	shmring_detach(r);
	close(pfd);
	pfd = plain_memfd(file_size(bytes, 8), 1, NULL, 0);
	e = shmring_attach_fd(&r, pfd, 0, bytes, 8, g_id);
	tap_is(e, SHMRING_E_NOTRING, "attach: sealed zeros refused");
	snprintf(want, sizeof(want), "ring fd %d: not a melpipe ring", pfd);
	tap_is_str(shmring_detail(r), want, "attach: and said so");
	shmring_detach(r);
	close(pfd);
	/* the ring's control page with another layout version */
	tap_ok(pread(fd, ctl, sizeof(ctl), 0) == (ssize_t)sizeof(ctl),
	       "attach: the control page read");
	ctl[8]++; /* the version, after the 8 bytes of magic */
	pfd = plain_memfd(file_size(bytes, 8), 1, ctl, sizeof(ctl));
	e = shmring_attach_fd(&r, pfd, 0, bytes, 8, g_id);
	tap_is(e, SHMRING_E_VERSION, "attach: another layout version refused");
	shmring_detach(r);
	ctl[8]--;
	close(pfd);
	pfd = plain_memfd(file_size(bytes, 8), 0, ctl, sizeof(ctl));
	e = shmring_attach_fd(&r, pfd, 0, bytes, 8, g_id);
	tap_is(e, SHMRING_E_SEALS, "attach: a copy of the ring, unsealed, "
	       "refused");
	shmring_detach(r);
	close(pfd);

	e = shmring_attach(&r, dead_pid(), fd, bytes, 8, g_id);
	tap_is(e, -ENOENT, "attach: a pid that does not exist");
	tap_ok(strstr(shmring_detail(r), "cannot open /proc/") != NULL,
	       "attach: %s", shmring_detail(r));
	shmring_detach(r);
	e = shmring_attach(&r, me, 999, bytes, 8, g_id);
	tap_is(e, -ENOENT, "attach: an fd that does not exist");
	shmring_detach(r);
	tap_is(shmring_acked(w), 0, "attach: no acknowledgement from any");

	e = shmring_attach(&r, me, fd, bytes, 8, g_id);
	tap_is(e, 0, "attach: through /proc/self/fd");
	tap_is_str(shmring_detail(r), "", "attach: no detail");
	tap_ok(shmring_acked(w) == me && shmring_acked(r) == me &&
	       shmring_attached(w, me) && !shmring_attached(w, me + 1),
	       "attach: acknowledged with our pid");
	tap_is(ring_fds(), 1, "attach: the reader keeps no fd of its own");
	{
		unsigned char *p = shmring_at(r, a.slot, a.off, a.len);

		tap_ok(p && p != a.ptr && pay_ok(1, 1, p, a.len),
		       "attach: the payload through the reader's mapping");
		tap_is(shmring_alloc(r, 64, &a.slot, &a.off, &a.ptr), -EINVAL,
		       "attach: a reader does not allocate");
	}
	{
		/* a slot entry {off, len, refs} that points past the data
		 * (the table is shared: a broken process may write it) */
		struct { uint64_t off; uint32_t len, refs; } bad = {
			bytes - 64, 128, 1 };

		tap_ok(pwrite(fd, &bad, sizeof(bad), 4096 + 5 * 16) ==
		       (ssize_t)sizeof(bad) &&
		       shmring_refs(r, 5) == 1 &&
		       !shmring_at(r, 5, bytes - 64, 128),
		       "attach: a slot entry past the data area refused");
	}
	tap_is(shmring_release(r, 0), 0, "attach: the reader releases");
	tap_is(shmring_refs(w, 0), 0, "attach: and the writer sees it");
	shmring_close(w);
	tap_ok(shmring_closed(r), "attach: the reader sees the writer close");
	shmring_detach(r);
	shmring_destroy(w);
	tap_ok(ring_fds() == 0 && ring_maps() == 0,
	       "attach: no fd or mapping of a ring left");
}

/* SHMRING_MAX_READERS processes attach; the next is refused. */
static void test_readers(void)
{
	struct shmring *w, *r;
	int fd, ok = 0, full = 0;

	w = mk(&(struct kind){ "memfd", shmring_create }, 4096, 4);
	fd = shmring_fd(w);
	for (unsigned i = 0; i <= SHMRING_MAX_READERS; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			int e = shmring_attach(&r, getppid(), fd, 4096, 4,
					       g_id);

			_exit(e == 0 ? 0 : e == SHMRING_E_READERS ? 3 : 4);
		}
		waitpid(pid, &st, 0);
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
		      shmring_attached(w, pid);
		full += WIFEXITED(st) && WEXITSTATUS(st) == 3;
	}
	tap_ok(ok == SHMRING_MAX_READERS && full == 1, "%d readers attach, "
	       "the next is refused", ok);
	tap_is(shmring_attach(&r, getpid(), fd, 4096, 4, g_id),
	       SHMRING_E_READERS, "and so are we");
	shmring_detach(r);
	shmring_destroy(w);
}

/* A reader's mapping outlives the writer's ring. */
static void test_writer_gone(void)
{
	struct shmring *w, *r;
	struct ref a;
	unsigned char *p;

	w = mk(&(struct kind){ "memfd", shmring_create }, 4096, 4);
	take(w, 500, &a);
	pay_fill(3, 3, a.ptr, a.len);
	shmring_attach(&r, getpid(), shmring_fd(w), 4096, 4, g_id);
	shmring_destroy(w);
	p = shmring_at(r, a.slot, a.off, a.len);
	tap_ok(p && pay_ok(3, 3, p, a.len), "writer gone: the reader still "
	       "reads the payload");
	tap_ok(shmring_closed(r), "writer gone: closed");
	tap_ok(ring_fds() == 0 && ring_maps() == 1,
	       "writer gone: the reader's mapping is all that is left");
	shmring_detach(r);
	tap_is(ring_maps(), 0, "writer gone: and then nothing");
}

static int run_unit(void)
{
	static const struct kind kinds[] = {
		{ "memfd", shmring_create },
		{ "private", shmring_create_private },
	};

	for (size_t i = 0; i < 2; i++) {
		test_args(&kinds[i]);
		test_sequence(&kinds[i]);
		test_wrap(&kinds[i]);
		test_order(&kinds[i]);
		test_full(&kinds[i]);
		test_at(&kinds[i]);
		test_refs(&kinds[i]);
		test_random(&kinds[i]);
	}
	test_strerror();
	test_memfd();
	test_attach();
	test_readers();
	test_writer_gone();
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "unit";
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 20000;

	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, hung);
	alarm(300);
	if (strcmp(what, "unit") == 0)
		run_unit();
	else if (strcmp(what, "procs") == 0)
		run_procs(n);
	else if (strcmp(what, "threads") == 0)
		run_threads(n);
	else if (strcmp(what, "kill") == 0)
		run_kill();
	else if (strcmp(what, "user") == 0)
		run_user();
	else {
		fprintf(stderr, "usage: test-shmring "
			"unit|procs [N]|threads [N]|kill|user\n");
		return 2;
	}
	return tap_done();
}
