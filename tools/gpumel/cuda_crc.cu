/*
 * cuda_crc.cu - the CRC32C of the payloads of a batch, checked on the GPU
 * (mel_cuda_launch_crc32c, cuda_mel.h): payloads copied from a shared
 * ring straight to the device are checked there, not in a CPU pass.
 *
 *   k_crc_zero  got = 0 for every check
 *   k_crc       blocks of MEL_CRC_T threads over (payload, segment)
 *               pairs: the x index strides over payloads, the y index over
 *               each one's 256 KiB segments, so that a long payload is
 *               spread over gridDim.y blocks; each segment's value is
 *               XORed into got (cuda_crc_dev.h has the arithmetic and the
 *               split)
 *
 * The tables (12 KiB) are built at compile time, and copied from global
 * to shared memory by each block that has work; blocks with none (most
 * of the y > 0 ones, where payloads are short) leave after one look at
 * their payloads' lengths.
 */
#include "cuda_crc_dev.h"

static __device__ const mel_crc_tab crc_tab = mel_crc_tab_make();

/* Blocks of the grid: enough x blocks for a few waves of resident ones,
 * and y blocks up to CRC_GRID blocks in all (at most CRC_MAX_Y). */
#define CRC_WAVES 2
#define CRC_GRID 65536u
#define CRC_MAX_Y 1024u

__global__ void k_crc_zero(mel_crc *checks, uint32_t n)
{
	for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += gridDim.x * blockDim.x)
		checks[i].got = 0;
}

/* Whether any payload of this block has a segment for its y index. */
static __device__ bool has_work(const unsigned char *base,
				const mel_crc *checks, uint32_t n)
{
	int need = 0;

	if (blockIdx.y == 0)
		return blockIdx.x < n;
	for (uint64_t i = blockIdx.x + (uint64_t)threadIdx.x * gridDim.x;
	     i < n; i += (uint64_t)MEL_CRC_T * gridDim.x) {
		mc_geom g = mc_geom_of(base, checks[i].off, checks[i].len);

		need |= g.nseg > blockIdx.y;
	}
	return __syncthreads_or(need);
}

/* The XOR of the block's values v: every thread calls it; thread 0 gets
 * the result. red[] holds a value per warp. */
static __device__ uint32_t block_xor(uint32_t v, uint32_t *red)
{
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v ^= __shfl_xor_sync(0xffffffffu, v, o);
	if (lane == 0)
		red[warp] = v;
	__syncthreads();
	v = 0;
	if (threadIdx.x == 0)
#pragma unroll
		for (int w = 0; w < MEL_CRC_T / 32; w++)
			v ^= red[w];
	/* red is reused by the next segment */
	__syncthreads();
	return v;
}

/* x^(8 n) mod P, made by the 32 lanes of warp 0 (one multiply each, then
 * five of the product's tree); every lane of the warp gets it. */
static __device__ uint32_t warp_xpow8(uint64_t n)
{
	uint32_t f = mc_factor(crc_tab.x2n, n, threadIdx.x % 32);

#pragma unroll
	for (int o = 1; o < 32; o <<= 1)
		f = mc_mul(f, __shfl_xor_sync(0xffffffffu, f, o));
	return f;
}

/* 8 blocks an SM: 64 registers a thread, which it needs without spilling
 * (asking for more blocks spilled the loop's state). */
__global__ void __launch_bounds__(MEL_CRC_T, 8)
	k_crc(const unsigned char *base, mel_crc *checks, uint32_t n)
{
	__shared__ __align__(16) uint32_t t[MC_TABS * 256];
	__shared__ uint32_t red[MEL_CRC_T / 32];
	const uint32_t j = threadIdx.x;
	uint32_t lane;

	if (!has_work(base, checks, n))
		return;
	lane = crc_tab.lane[j];
	for (uint32_t i = j; i < MC_TABS * 256 / 4; i += MEL_CRC_T)
		((uint4 *)t)[i] = ((const uint4 *)crc_tab.tab)[i];
	__syncthreads();
	for (uint32_t i = blockIdx.x; i < n; i += gridDim.x) {
		mc_geom g = mc_geom_of(base, checks[i].off, checks[i].len);

		for (uint64_t k = blockIdx.y; k < g.nseg; k += gridDim.y) {
			uint32_t r = g.m ? mc_part(t, lane, &g, k, j) : 0;

			r = block_xor(r, red);
			if (k + 1 < g.nseg) {
				/* warp 0: the shift over the bytes after */
				if (j < 32) {
					uint32_t x = warp_xpow8(mc_after(&g,
									 k));

					if (j == 0)
						atomicXor(&checks[i].got,
							  mc_mul(x, r));
				}
			} else if (j == 0) {
				atomicXor(&checks[i].got, mc_last(t, &g, r));
			}
		}
	}
}

extern "C" cudaError_t mel_cuda_launch_crc32c(const unsigned char *base,
					      mel_crc *checks, uint32_t n,
					      cudaStream_t s)
{
	int dev = 0, sms = 0, per_sm = 0;
	unsigned int gx, gy;
	cudaError_t e;

	if (n == 0)
		return cudaSuccess;
	if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
	    (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
					dev)) != cudaSuccess ||
	    (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_crc,
							       MEL_CRC_T, 0))
	    != cudaSuccess)
		return e;
	gx = (unsigned int)(CRC_WAVES * (sms > 0 ? sms : 1) *
			    (per_sm > 0 ? per_sm : 1));
	gx = n < gx ? n : gx;
	gy = CRC_GRID / gx;
	gy = gy < 1 ? 1 : gy > CRC_MAX_Y ? CRC_MAX_Y : gy;
	k_crc_zero<<<(n + MEL_BLOCK - 1) / MEL_BLOCK, MEL_BLOCK, 0, s>>>(checks,
								       n);
	k_crc<<<dim3(gx, gy), MEL_CRC_T, 0, s>>>(base, checks, n);
	return cudaGetLastError();
}
