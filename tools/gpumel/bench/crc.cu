/*
 * crc.cu - --crc: the backend's CRC32C kernel (mel_cuda_launch_crc32c,
 * through the .so's CRC hook) against lib/crc32c.c, on groups of payloads
 * of random bytes, each group one launch: every length up to 300 bytes,
 * lengths around the kernel's chunk, step and segment sizes, a mixed batch
 * of 5,000 payloads, a few MiB, 64 MiB, at every even offset modulo 16;
 * then a timed batch of 80 KiB payloads laid end to end (the 10-second
 * job's ring: 40,000 of them, 3.3 GB), its throughput from CUDA events.
 * One line a group: "PASS crc ..." or "FAIL crc ...".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lib is C, and its headers say nothing of C++ */
extern "C" {
#include "../../../lib/crc32c.h"
}
#include "../cuda_crc_dev.h"
#include "bench.h"

/* A group: its payloads' places in one buffer of end bytes. */
struct crc_set {
	mel_crc *chk;
	uint32_t n, cap;
	size_t end;
};

/* Adds a payload of len bytes at offset off (at or after s->end). */
static void place_at(struct crc_set *s, uint64_t off, uint64_t len)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->chk = (mel_crc *)realloc(s->chk, s->cap * sizeof(*s->chk));
		if (!s->chk)
			die("out of memory");
	}
	s->chk[s->n].off = off;
	s->chk[s->n].len = len;
	s->chk[s->n].want = 0;
	s->chk[s->n].got = 0;
	s->n++;
	s->end = off + len;
}

/* Adds a payload of len bytes at the next offset that is mis modulo 16,
 * after gap bytes or more that belong to no payload (random, like the
 * payloads: a kernel that read them would be wrong). */
static void place(struct crc_set *s, uint64_t len, uint32_t mis, size_t gap)
{
	place_at(s, (s->end + gap + 15) / 16 * 16 + mis, len);
}

static void fill_random(unsigned char *p, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t v = rnd();

		memcpy(p + i, &v, 8);
	}
	for (; i < n; i++)
		p[i] = (unsigned char)rnd();
}

/*
 * Runs group s through the hook (reps timed runs) and compares every got
 * with lib's CRC, and off, len and want with what was sent. Prints the
 * group's line; returns 1 when it failed. *med_ms: the median run.
 */
static int run_set(struct so *so, struct crc_set *s, const char *name,
		   int reps, float *med_ms)
{
	size_t bytes = s->end + 16;
	unsigned char *buf = (unsigned char *)xmalloc(bytes);
	mel_crc *sent = (mel_crc *)xmalloc(s->n * sizeof(*sent));
	float *ms = (float *)xcalloc((size_t)reps, sizeof(*ms));
	char err[512] = "";
	uint64_t total = 0;
	uint32_t bad = 0, first = 0;

	fill_random(buf, bytes);
	for (uint32_t i = 0; i < s->n; i++) {
		s->chk[i].want = crc32c(0, buf + s->chk[i].off,
					(size_t)s->chk[i].len);
		s->chk[i].got = ~s->chk[i].want;
		total += s->chk[i].len;
	}
	memcpy(sent, s->chk, s->n * sizeof(*sent));
	if (so->crc(buf, bytes, s->chk, s->n, reps, ms, err, sizeof(err)) <
	    0) {
		printf("FAIL crc %s: %s\n", name, err);
		bad = 1;
		goto out;
	}
	for (uint32_t i = 0; i < s->n; i++) {
		const mel_crc *c = &s->chk[i], *w = &sent[i];

		if (c->got == c->want && c->off == w->off &&
		    c->len == w->len && c->want == w->want)
			continue;
		if (!bad++)
			first = i;
	}
	if (bad) {
		const mel_crc *c = &s->chk[first], *w = &sent[first];

		printf("FAIL crc %s: %u of %u payloads wrong, the first: "
		       "payload %u (off %llu, len %llu): got 0x%08x, want "
		       "0x%08x%s\n", name, bad, s->n, first,
		       (unsigned long long)w->off, (unsigned long long)w->len,
		       c->got, w->want,
		       c->off != w->off || c->len != w->len ||
		       c->want != w->want ? " (off, len or want changed)" :
		       "");
		goto out;
	}
	*med_ms = median(ms, reps);
	printf("PASS crc %s: %u payloads, %llu bytes\n", name, s->n,
	       (unsigned long long)total);
out:
	fflush(stdout);
	free(buf);
	free(sent);
	free(ms);
	free(s->chk);
	memset(s, 0, sizeof(*s));
	return bad != 0;
}

int run_crc(struct so *so, size_t timed_payloads, int reps)
{
	static const uint32_t mis4[] = { 0, 2, 6, 14 };
	static const int near[] = { -18, -16, -14, -2, -1, 0, 1, 2, 15, 16,
				    17 };
	const uint64_t seg_bytes = MEL_CRC_SEG * MEL_CRC_W;
	struct crc_set s = {};
	float med = 0.0f;
	int fail = 0;

	if (!so->crc)
		die("'%s' has no %s", so->path, MEL_CUDA_CRC_SYMBOL);
	rnd_seed(20);
	/* every length to 300 at every even offset modulo 16 */
	for (uint32_t len = 0; len <= 300; len++)
		for (uint32_t mis = 0; mis < 16; mis += 2)
			place(&s, len, mis, len % 5);
	fail |= run_set(so, &s, "lengths 0..300, offsets 0..14 mod 16", 1,
			&med);

	/* around a thread's steps (the first two, the loads by four) and
	 * the segments */
	for (int k = 1; k <= 9; k++)
		for (int d : near)
			for (uint32_t mis : mis4)
				place(&s, (uint64_t)(k * MEL_CRC_TILE + d), mis,
				      3);
	for (uint64_t k = 1; k <= 2; k++)
		for (int d : near)
			for (uint32_t mis : mis4)
				place(&s, k * seg_bytes + d, mis, 3);
	fail |= run_set(so, &s, "lengths around steps and segments", 1,
			&med);

	/* a batch: 80 KiB and 32 KiB clips, and short ones */
	for (uint32_t i = 0; i < 5000; i++) {
		uint64_t len = i % 4 == 0 ? 81920 : i % 4 == 1 ? 32768 :
			       rnd_range(0, 20000);

		place(&s, len, 2 * rnd_range(0, 7), rnd_range(0, 40));
	}
	fail |= run_set(so, &s, "5000 payloads in one launch", 1, &med);

	place(&s, 1u << 20, 2, 0);
	place(&s, (3u << 20) + 7, 14, 5);
	place(&s, (5u << 20) + 6, 6, 1);
	fail |= run_set(so, &s, "1 to 5 MiB", 1, &med);

	place(&s, (64u << 20) + 13, 6, 0);
	fail |= run_set(so, &s, "64 MiB", 1, &med);

	/* the timed batch: end to end from offset 2 */
	for (size_t i = 0; i < timed_payloads; i++)
		place_at(&s, 2 + i * 81920, 81920);
	if (!run_set(so, &s, "timed batch of 80 KiB payloads", reps, &med))
		printf("     crc timed: %zu x 80 KiB, median of %d: %.3f ms, "
		       "%.1f GB/s\n", timed_payloads, reps, med,
		       med > 0.0f ? (double)timed_payloads * 81920.0 /
				    (med * 1e6) : 0.0);
	else
		fail = 1;
	return fail;
}
