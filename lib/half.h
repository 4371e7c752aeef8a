/*
 * half.h - conversions between binary32 floats and the 16-bit element
 * types of formats/record.md: f16 (IEEE 754 binary16) and bf16 (the upper
 * half of a binary32).
 *
 * Every conversion to 16 bits rounds to nearest, ties to even; NaN stays
 * NaN in both directions (made quiet; the sign and as much payload as
 * fits are kept), infinities stay infinities, subnormals are produced and
 * read exactly, the sign of zero is kept. Conversions to float are exact
 * for every value but NaN. The functions do not touch the floating-point
 * environment and never print or fail. The array versions use the CPU's
 * F16C instructions when it has them, with identical results.
 * Values are host-order uint16_t bit patterns; the record format is
 * little-endian, as is every host melpipe builds on.
 */
#ifndef MELPIPE_HALF_H
#define MELPIPE_HALF_H

#include <stddef.h>
#include <stdint.h>

/* binary32 -> binary16. Values of magnitude 65520 and above (the halfway
 * point past the largest finite f16, 65504) become infinity; magnitudes
 * at or below 2^-25 become (signed) zero. */
uint16_t half_from_f32(float f);
/* binary16 -> binary32, exact (every f16 is a float; NaNs come out
 * quiet). */
float half_to_f32(uint16_t h);

/* binary32 -> bf16: the upper 16 bits after rounding the lower 16 to
 * nearest even; finite values near FLT_MAX may round to infinity. */
uint16_t bf16_from_f32(float f);
/* bf16 -> binary32, exact (the bits shifted into the upper half). */
float bf16_to_f32(uint16_t b);

/*
 * Array versions: n elements from src to dst, exactly as the scalar
 * functions element by element. src and dst must not overlap. Neither
 * needs any alignment beyond its element type's.
 */
void half_from_f32_array(uint16_t *dst, const float *src, size_t n);
void half_to_f32_array(float *dst, const uint16_t *src, size_t n);
void bf16_from_f32_array(uint16_t *dst, const float *src, size_t n);
void bf16_to_f32_array(float *dst, const uint16_t *src, size_t n);

#endif
