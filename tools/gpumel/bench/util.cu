/*
 * util.cu - gpumel-cuda-bench's small helpers: dying with a message,
 * allocation that cannot fail, the clock, reproducible random numbers,
 * reading an output element, the median of timings.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../cuda_mel_dev.h"
#include "bench.h"

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory (%zu bytes)", n * size);
	return p;
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64*, reproducible from --seed */
#define RNG_START 0x9e3779b97f4a7c15ull

static uint64_t rng_state = RNG_START;

void rnd_seed(uint64_t seed)
{
	rng_state = RNG_START ^ seed;
}

uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

double rndu(void)
{
	return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0);
}

uint32_t rnd_range(uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(rnd() % ((uint64_t)hi - lo + 1));
}

size_t out_size(int dtype)
{
	return dtype == REC_F32 ? 4 : 2;
}

float out_value(const void *out, int dtype, uint64_t i)
{
	if (dtype == REC_F32)
		return ((const float *)out)[i];
	if (dtype == REC_F16)
		return __half2float(((const __half *)out)[i]);
	uint16_t b = ((const uint16_t *)out)[i];

	return md_bits_float((uint32_t)b << 16);
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

float median(float *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_float);
	return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}
