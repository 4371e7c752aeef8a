/*
 * half.c - float <-> f16 / bf16 with integer arithmetic only, so the
 * results are exact and independent of the FPU's rounding mode and of
 * compiler flags.
 */
#include "half.h"

#include <string.h>

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Rounds v >> s to nearest, ties to even (1 <= s <= 31). */
static uint32_t shift_rne(uint32_t v, unsigned s)
{
	uint32_t q = v >> s, rem = v & ((1u << s) - 1), halfway = 1u << (s - 1);

	if (rem > halfway || (rem == halfway && (q & 1)))
		q++;
	return q;
}

uint16_t half_from_f32(float f)
{
	uint32_t x = f32_bits(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);

	x &= 0x7fffffff;
	if (x > 0x7f800000) /* NaN: keep the top payload bits, force quiet */
		return sign | 0x7e00 | (uint16_t)((x >> 13) & 0x3ff);
	if (x >= 0x477ff000) /* >= 65520 (and inf): infinity */
		return sign | 0x7c00;
	if (x >= 0x38800000) /* normal f16: rebias the exponent by 112 */
		return sign | (uint16_t)shift_rne(x - 0x38000000, 13);
	if (x <= 0x33000000) /* <= 2^-25: half the smallest subnormal */
		return sign;
	/* Subnormal f16: value = m * 2^(e-150), in units of 2^-24 that is
	 * m >> (126 - e); rounding up may give 0x400, the smallest normal,
	 * which is the right encoding. */
	unsigned e = x >> 23;
	uint32_t m = (x & 0x7fffff) | 0x800000;

	return sign | (uint16_t)shift_rne(m, 126 - e);
}

float half_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;

	if (e == 0x1f && m == 0)
		return bits_f32(sign | 0x7f800000);
	if (e == 0x1f) /* NaN: made quiet, as F16C does; payload kept */
		return bits_f32(sign | 0x7fc00000 | (m << 13));
	if (e != 0)
		return bits_f32(sign | ((e + 112) << 23) | (m << 13));
	if (m == 0)
		return bits_f32(sign);
	/* Subnormal: normalise. m * 2^-24 with m < 1024. */
	e = 113;
	while (!(m & 0x400)) {
		m <<= 1;
		e--;
	}
	return bits_f32(sign | (e << 23) | ((m & 0x3ff) << 13));
}

uint16_t bf16_from_f32(float f)
{
	uint32_t x = f32_bits(f);

	if ((x & 0x7fffffff) > 0x7f800000) /* NaN: keep it NaN when the
					      payload is all in the low half */
		return (uint16_t)((x >> 16) | 0x0040);
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float bf16_to_f32(uint16_t b)
{
	return bits_f32((uint32_t)b << 16);
}

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * F16C converts 8 values per instruction with the same results as the
 * scalar code: round to nearest even (immediate 0), NaNs made quiet with
 * their sign and top payload bits, subnormals exact. Used when the CPU
 * has it; the tests compare both paths.
 */
__attribute__((target("avx,f16c")))
static size_t f16c_from_f32(uint16_t *dst, const float *src, size_t n)
{
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(src + i);

		_mm_storeu_si128((__m128i *)(void *)(dst + i),
				 _mm256_cvtps_ph(v, 0));
	}
	return i;
}

__attribute__((target("avx,f16c")))
static size_t f16c_to_f32(float *dst, const uint16_t *src, size_t n)
{
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(const void *)
					    (src + i));

		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
	}
	return i;
}

static int have_f16c(void)
{
	return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
}
#else
static size_t f16c_from_f32(uint16_t *dst, const float *src, size_t n)
{
	(void)dst, (void)src, (void)n;
	return 0;
}

static size_t f16c_to_f32(float *dst, const uint16_t *src, size_t n)
{
	(void)dst, (void)src, (void)n;
	return 0;
}

static int have_f16c(void)
{
	return 0;
}
#endif

void half_from_f32_array(uint16_t *dst, const float *src, size_t n)
{
	size_t i = have_f16c() ? f16c_from_f32(dst, src, n) : 0;

	for (; i < n; i++)
		dst[i] = half_from_f32(src[i]);
}

void half_to_f32_array(float *dst, const uint16_t *src, size_t n)
{
	size_t i = have_f16c() ? f16c_to_f32(dst, src, n) : 0;

	for (; i < n; i++)
		dst[i] = half_to_f32(src[i]);
}

void bf16_from_f32_array(uint16_t *dst, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = bf16_from_f32(src[i]);
}

void bf16_to_f32_array(float *dst, const uint16_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = bf16_to_f32(src[i]);
}
