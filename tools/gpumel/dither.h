/*
 * dither.h - the noise of fbank's --dither, one function of (seed, clip,
 * frame, sample) with no state, so that a frame's noise is the same for
 * any -j, either backend, any batch and any sharding or pieces of the
 * stream: a splitmix64 hash of the four (the frame named by the clip
 * sample where it starts) gives two uniforms, Box-Muller a standard
 * normal deviate, computed in float64.
 *
 * Plain C, included by C and by .cu files alike (there the function is
 * __host__ __device__).
 */
#ifndef MELPIPE_GPUMEL_DITHER_H
#define MELPIPE_GPUMEL_DITHER_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define MEL_DITHER_FN static inline __host__ __device__
#else
#define MEL_DITHER_FN static inline
#endif

/* splitmix64's finaliser: a bijection of 64-bit words that mixes every
 * bit into every other. */
MEL_DITHER_FN uint64_t mel_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * The standard normal deviate for sample i of the frame of clip clip that
 * starts at clip sample pos (negative in the padding before the clip):
 *   h = mix(mix(mix(mix(seed + 0x9e3779b97f4a7c15) ^ clip) ^ pos) ^ i),
 *   u1 = ((h >> 11) + 1) 2^-53 in (0, 1],
 *   u2 = (mix(h ^ 0xd1b54a32d192ed03) >> 11) 2^-53 in [0, 1),
 *   sqrt(-2 ln u1) cos(2 pi u2).
 */
MEL_DITHER_FN double mel_dither_noise(uint64_t seed, uint64_t clip,
				      int64_t pos, uint32_t i)
{
	const double two53 = 1.0 / 9007199254740992.0;
	uint64_t h = mel_mix64(seed + 0x9e3779b97f4a7c15ull);
	double u1, u2;

	h = mel_mix64(h ^ clip);
	h = mel_mix64(h ^ (uint64_t)pos);
	h = mel_mix64(h ^ (uint64_t)i);
	u1 = (double)((h >> 11) + 1) * two53;
	u2 = (double)(mel_mix64(h ^ 0xd1b54a32d192ed03ull) >> 11) * two53;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

#endif
