/*
 * shmring-fixture.c - what the parts of test-shmring share: payloads,
 * rings made loudly, and what this process holds of rings.
 */
#include "shmring-fixture.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const uint8_t g_id[16] = "melpipe-test-id";

/* ---------------------------------------------------------------- */
/* Payloads and randomness */

uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15u;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
	return x ^ (x >> 31);
}

uint64_t rng_next(uint64_t *s)
{
	return mix64((*s)++);
}

/* The bytes of payload k: a word of the generator per 8 bytes. Plain
 * loads and stores, no memcpy or memcmp of a length only known at run
 * time: gcc expands those after ThreadSanitizer's instrumentation, which
 * would not see them. */
void pay_fill(uint64_t seed, uint64_t k, unsigned char *p, size_t len)
{
	uint64_t base = mix64(seed ^ mix64(k));

	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = mix64(base + i);

		if (len - i >= 8)
			memcpy(p + i, &w, 8);
		else
			for (size_t j = i; j < len; j++, w >>= 8)
				p[j] = (unsigned char)w;
	}
}

int pay_ok(uint64_t seed, uint64_t k, const unsigned char *p,
		  size_t len)
{
	uint64_t base = mix64(seed ^ mix64(k));

	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = mix64(base + i), got;

		if (len - i >= 8) {
			memcpy(&got, p + i, 8);
			if (got != w)
				return 0;
			continue;
		}
		for (size_t j = i; j < len; j++, w >>= 8)
			if (p[j] != (unsigned char)w)
				return 0;
	}
	return 1;
}

/* The length of payload k: empty, small, middling, up to big, and one in
 * 64 past big (larger than the ring when big is its size). */
size_t pay_len(uint64_t seed, uint64_t k, size_t big)
{
	uint64_t m = mix64(seed * 3 + k);
	uint64_t v = m >> 8;

	switch (m % 64) {
	case 0: return big + 1 + v % 4096;
	case 1: case 2: case 3: case 4: case 5: case 6: case 7: return 0;
	}
	switch (m % 8) {
	case 0: return v % (big / 2 + 1);
	case 1: case 2: case 3: return v % 256;
	}
	return v % 16384;
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- */
/* What a process has of rings: fds, mappings, /dev/shm */

/* Open fds of ours that are a ring's memfd. */
int ring_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[300], link[300];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			continue;
		link[len] = '\0';
		n += strstr(link, "memfd:melpipe-ring") != NULL;
	}
	closedir(d);
	return n;
}

/* Mappings of ours of a ring's memfd. */
int ring_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:melpipe-ring") != NULL;
	fclose(f);
	return n;
}

/* Names in /dev/shm that look like a ring's ("melpipe" or "ring" in
 * them): a ring made with shm_open would leave one. */
int shm_names(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += strstr(e->d_name, "melpipe") || strstr(e->d_name, "ring");
	closedir(d);
	return n;
}

/* ---------------------------------------------------------------- */
/* One process */

struct shmring *mk(const struct kind *kd, uint64_t bytes,
			  uint32_t slots)
{
	struct shmring *w;
	int e = kd->create(&w, bytes, slots, g_id);

	if (e) {
		printf("Bail out! %s ring of %llu bytes: %s (%s)\n", kd->name,
		       (unsigned long long)bytes, shmring_strerror(e),
		       shmring_detail(w));
		exit(1);
	}
	return w;
}

int take(struct shmring *w, size_t len, struct ref *r)
{
	r->len = len;
	return shmring_alloc(w, len, &r->slot, &r->off, &r->ptr);
}
