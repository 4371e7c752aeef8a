/*
 * test-half - unit tests of lib/half: f16 and bf16 conversions against
 * references computed from the definitions in double precision: every
 * one of the 65536 f16 and bf16 values, every rounding tie and its
 * neighbours, a sweep over the binary32 range, and the special values.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/half.h"
#include "tap.h"

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* The value of a finite f16 from its definition. */
static double f16_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);

	return (h & 0x8000) ? -v : v;
}

/* Nearest f16 to a finite non-negative f, ties to even: binary search of
 * the ordered finite values, 65536 standing for infinity. */
static uint16_t f16_ref_pos(double f)
{
	unsigned lo = 0, hi = 0x7c00; /* val(lo) <= f < val(hi) */
	double dl, dh;

	if (f >= 65536.0)
		return 0x7c00;
	while (hi - lo > 1) {
		unsigned mid = (lo + hi) / 2;

		if (f16_value((uint16_t)mid) <= f)
			lo = mid;
		else
			hi = mid;
	}
	dl = f - f16_value((uint16_t)lo);
	dh = (hi == 0x7c00 ? 65536.0 : f16_value((uint16_t)hi)) - f;
	if (dl < dh || (dl == dh && !(lo & 1)))
		return (uint16_t)lo;
	return (uint16_t)hi;
}

static uint16_t f16_ref(float f)
{
	uint16_t sign = signbit(f) ? 0x8000 : 0;

	if (isinf(f))
		return sign | 0x7c00;
	return sign | f16_ref_pos(fabs((double)f));
}

static int is_f16_nan(uint16_t h)
{
	return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

static void test_f16_all_values(void)
{
	int bad_val = 0, bad_trip = 0, bad_nan = 0;

	for (uint32_t h = 0; h < 65536; h++) {
		float f = half_to_f32((uint16_t)h);

		if (is_f16_nan((uint16_t)h)) {
			/* NaN stays NaN, sign and payload kept, made quiet */
			bad_nan += !isnan(f) || !(bits(f) & 0x400000) ||
				   (bits(f) >> 31) != (h >> 15) ||
				   (bits(f) >> 13 & 0x1ff) != (h & 0x1ff) ||
				   half_from_f32(f) != (h | 0x200);
			continue;
		}
		if ((h & 0x7fff) == 0x7c00)
			bad_val += !isinf(f) || !!signbit(f) != !!(h & 0x8000);
		else
			bad_val += (double)f != f16_value((uint16_t)h) ||
				   !!signbit(f) != !!(h & 0x8000);
		bad_trip += half_from_f32(f) != h;
	}
	tap_is(bad_val, 0, "f16 -> f32 is exact for all 63488 non-NaN "
	       "values");
	tap_is(bad_trip, 0, "f16 -> f32 -> f16 gives back every non-NaN "
	       "value");
	tap_is(bad_nan, 0, "every f16 NaN stays NaN with its sign and "
	       "payload");
}

/* Midpoints between neighbouring f16 values (ties) and the floats just
 * below and above each, for every finite f16 and both signs. */
static void test_f16_ties(void)
{
	int bad = 0, n = 0;

	for (uint32_t h = 0; h < 0x7c00; h++) {
		double mid = h == 0x7bff ? 65520.0
			     : (f16_value((uint16_t)h) +
				f16_value((uint16_t)(h + 1))) / 2;
		float m = (float)mid; /* exact: 12 significant bits */
		float probes[3] = { m, nextafterf(m, 0),
				    nextafterf(m, INFINITY) };

		for (int i = 0; i < 3; i++)
			for (int s = 0; s < 2; s++) {
				float f = s ? -probes[i] : probes[i];

				bad += half_from_f32(f) != f16_ref(f);
				n++;
			}
	}
	tap_is(bad, 0, "f32 -> f16 rounds every tie to even and its "
	       "neighbours to nearest (%d cases)", n);
	tap_is(half_from_f32(1.0f + ldexpf(1, -11)), 0x3c00,
	       "1 + 2^-11 rounds down to 1 (tie, even)");
	tap_is(half_from_f32(1.0f + 3 * ldexpf(1, -11)), 0x3c02,
	       "1 + 3*2^-11 rounds up to 1 + 2^-9 (tie, even)");
}

/* Every 127th binary32 bit pattern (all exponents, both signs). */
static void test_f16_sweep(void)
{
	int bad = 0, n = 0;

	for (uint64_t u = 0; u < 0x100000000ull; u += 127) {
		float f = from_bits((uint32_t)u);

		if (isnan(f)) {
			bad += !is_f16_nan(half_from_f32(f));
		} else {
			bad += half_from_f32(f) != f16_ref(f);
		}
		n++;
	}
	tap_is(bad, 0, "f32 -> f16 equals the reference over %d floats", n);
}

static void test_f16_special(void)
{
	tap_is(half_from_f32(0.0f), 0x0000, "+0");
	tap_is(half_from_f32(-0.0f), 0x8000, "-0 keeps its sign");
	tap_is(half_from_f32(INFINITY), 0x7c00, "+inf");
	tap_is(half_from_f32(-INFINITY), 0xfc00, "-inf");
	tap_is(half_from_f32(65504.0f), 0x7bff, "65504 is the largest f16");
	tap_is(half_from_f32(65519.996f), 0x7bff, "65519.996 rounds down");
	tap_is(half_from_f32(65520.0f), 0x7c00, "65520 overflows to inf");
	tap_is(half_from_f32(FLT_MAX), 0x7c00, "FLT_MAX overflows to inf");
	tap_is(half_from_f32(-FLT_MAX), 0xfc00, "-FLT_MAX gives -inf");
	tap_is(half_from_f32(ldexpf(1, -14)), 0x0400, "2^-14 smallest normal");
	tap_is(half_from_f32(ldexpf(1, -24)), 0x0001, "2^-24 smallest "
	       "subnormal");
	tap_is(half_from_f32(ldexpf(1, -25)), 0x0000, "2^-25 ties to 0");
	tap_is(half_from_f32(nextafterf(ldexpf(1, -25), 1)), 0x0001,
	       "just above 2^-25 rounds to the smallest subnormal");
	tap_is(half_from_f32(3 * ldexpf(1, -25)), 0x0002,
	       "3*2^-25 ties to even 2*2^-24");
	tap_is(half_from_f32(ldexpf(0x3ff, -24) + ldexpf(1, -25)), 0x0400,
	       "largest subnormal + half an ulp rounds to the smallest "
	       "normal");
	tap_is(half_from_f32(FLT_TRUE_MIN), 0x0000, "float denormals go to "
	       "0");
	tap_ok(is_f16_nan(half_from_f32(from_bits(0x7f800001))),
	       "a signalling NaN with payload only in low bits stays NaN");
	tap_is(half_from_f32(from_bits(0xffc00000)), 0xfe00, "-qNaN");
	tap_is(half_from_f32(-1.5f), 0xbe00, "-1.5");
	tap_is(half_from_f32(0.333333343f), 0x3555, "1/3");
}

/* bf16: the value of the upper half, rounding by the definition. */
static uint16_t bf16_ref(float f)
{
	uint32_t lo = bits(f) & 0xffff0000u;
	double a = fabs((double)f), vl = fabs((double)from_bits(lo)), vh, dl,
	       dh;

	if (isinf(f))
		return (uint16_t)(lo >> 16);
	/* the next magnitude up; past FLT_MAX that is 2^128 (infinity) */
	vh = (lo & 0x7fffffff) == 0x7f7f0000u ? ldexp(1, 128)
	     : fabs((double)from_bits(lo + 0x10000));
	dl = a - vl;
	dh = vh - a;
	if (dl < dh || (dl == dh && !((lo >> 16) & 1)))
		return (uint16_t)(lo >> 16);
	return (uint16_t)((lo + 0x10000) >> 16);
}

static void test_bf16(void)
{
	int bad_trip = 0, bad_ties = 0, bad_sweep = 0, bad_nan = 0;

	for (uint32_t b = 0; b < 65536; b++) {
		float f = bf16_to_f32((uint16_t)b);

		if (isnan(f)) {
			bad_nan += !isnan(bf16_to_f32(bf16_from_f32(f)));
			continue;
		}
		bad_trip += bits(f) != b << 16 || bf16_from_f32(f) != b;
		for (int d = -1; d <= 1; d++) {
			float t = from_bits((b << 16 | 0x8000) + (uint32_t)d);

			if (!isnan(t))
				bad_ties += bf16_from_f32(t) != bf16_ref(t);
		}
	}
	for (uint64_t u = 0; u < 0x100000000ull; u += 127) {
		float f = from_bits((uint32_t)u);

		if (isnan(f))
			bad_nan += !isnan(bf16_to_f32(bf16_from_f32(f)));
		else
			bad_sweep += bf16_from_f32(f) != bf16_ref(f);
	}
	tap_is(bad_trip, 0, "bf16 -> f32 -> bf16 gives back every value");
	tap_is(bad_ties, 0, "f32 -> bf16 rounds ties to even, neighbours to "
	       "nearest");
	tap_is(bad_sweep, 0, "f32 -> bf16 equals the reference over a sweep");
	tap_is(bad_nan, 0, "NaN stays NaN, whatever its payload");
	tap_is(bf16_from_f32(from_bits(0x3f808000)), 0x3f80, "1 + 2^-8 ties "
	       "down to even");
	tap_is(bf16_from_f32(from_bits(0x3f818000)), 0x3f82, "tie rounds up "
	       "to even");
	tap_is(bf16_from_f32(FLT_MAX), 0x7f80, "FLT_MAX rounds to inf");
	tap_is(bf16_from_f32(-0.0f), 0x8000, "-0 keeps its sign");
	tap_is(bf16_from_f32(from_bits(0x7f800001)) & 0x7f80, 0x7f80,
	       "sNaN with a low payload keeps an all-ones exponent");
	tap_ok(isnan(bf16_to_f32(bf16_from_f32(from_bits(0x7f800001)))),
	       "and is still NaN");
}

/* The array functions (F16C where the CPU has it) against the scalar
 * ones, over a sweep of binary32 bit patterns (NaNs, subnormals, ties
 * included) and every f16 value, at lengths that leave scalar tails. */
static void test_arrays(void)
{
	enum { N = 1 << 20 };
	float *f = malloc(N * sizeof(*f)), *back = malloc(N * sizeof(*back));
	uint16_t *h = malloc(N * sizeof(*h));
	int bad16 = 0, badb = 0, badback = 0;

	for (uint64_t base = 0; base < 0x100000000ull;
	     base += (uint64_t)N * 4093) {
		size_t n = N - (size_t)(base % 13);

		for (size_t i = 0; i < n; i++)
			f[i] = from_bits((uint32_t)(base + i * 4093));
		half_from_f32_array(h, f, n);
		for (size_t i = 0; i < n; i++)
			bad16 += h[i] != half_from_f32(f[i]);
		bf16_from_f32_array(h, f, n);
		for (size_t i = 0; i < n; i++)
			badb += h[i] != bf16_from_f32(f[i]);
	}
	for (uint32_t i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	half_to_f32_array(back, h, 65536 - 3);
	for (uint32_t i = 0; i < 65536 - 3; i++)
		badback += bits(back[i]) != bits(half_to_f32(h[i]));
	bf16_to_f32_array(back, h, 65536 - 5);
	for (uint32_t i = 0; i < 65536 - 5; i++)
		badback += bits(back[i]) != bits(bf16_to_f32(h[i]));
	tap_is(bad16, 0, "f32 -> f16 arrays equal the scalar conversion");
	tap_is(badb, 0, "f32 -> bf16 arrays equal the scalar conversion");
	tap_is(badback, 0, "f16/bf16 -> f32 arrays equal the scalar "
	       "conversion for every value");
	free(f);
	free(back);
	free(h);
}

int main(void)
{
	test_f16_all_values();
	test_f16_ties();
	test_f16_sweep();
	test_f16_special();
	test_bf16();
	test_arrays();
	return tap_done();
}
