/*
 * cuda_crc_check.cu - the CRC hook gpumel-cuda.so exports for
 * gpumel-cuda-bench --crc (cuda_mel.h): runs mel_cuda_launch_crc32c on
 * payloads the caller has in host memory, so that the kernel is checked
 * against lib/crc32c.c and timed without a backend around it. Host code:
 * the mock runtime's .so has it too, over the kernel's CPU emulation.
 */
#include <stdio.h>

#include "cuda_backend.h"

/* 0 when e is cudaSuccess, else -1 with "WHAT failed: reason" in err. */
static int crc_ok(cudaError_t e, char *err, size_t errlen, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	snprintf(err, errlen, "%s failed: %s", what, cudaGetErrorString(e));
	return -1;
}

CU_EXPORT int mel_cuda_crc32c_check(const void *host, size_t bytes,
				    mel_crc *checks, uint32_t n, int reps,
				    float *ms, char *err, size_t errlen)
{
	void *d_in = NULL, *d_chk = NULL;
	size_t chk_bytes = (size_t)n * sizeof(*checks);
	cudaStream_t s = NULL;
	cudaEvent_t ev[2] = { NULL, NULL };
	int ret = -1;

	if (reps < 1) {
		snprintf(err, errlen, "crc check: reps must be 1 or more");
		return -1;
	}
	if (crc_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), err,
		   errlen, "cudaStreamCreateWithFlags") < 0 ||
	    crc_ok(cudaEventCreate(&ev[0]), err, errlen,
		   "cudaEventCreate") < 0 ||
	    crc_ok(cudaEventCreate(&ev[1]), err, errlen,
		   "cudaEventCreate") < 0 ||
	    crc_ok(cudaMalloc(&d_in, bytes ? bytes : 1), err, errlen,
		   "cudaMalloc (payloads)") < 0 ||
	    crc_ok(cudaMalloc(&d_chk, chk_bytes ? chk_bytes : 1), err, errlen,
		   "cudaMalloc (checks)") < 0 ||
	    crc_ok(cudaMemcpyAsync(d_in, host, bytes, cudaMemcpyHostToDevice,
				   s), err, errlen, "cudaMemcpyAsync (payloads)")
	    < 0 ||
	    crc_ok(cudaMemcpyAsync(d_chk, checks, chk_bytes,
				   cudaMemcpyHostToDevice, s), err, errlen,
		   "cudaMemcpyAsync (checks)") < 0)
		goto out;
	for (int i = 0; i < reps; i++)
		if (crc_ok(cudaEventRecord(ev[0], s), err, errlen,
			   "cudaEventRecord") < 0 ||
		    crc_ok(mel_cuda_launch_crc32c((const unsigned char *)d_in,
						  (mel_crc *)d_chk, n, s),
			   err, errlen, "mel_cuda_launch_crc32c") < 0 ||
		    crc_ok(cudaEventRecord(ev[1], s), err, errlen,
			   "cudaEventRecord") < 0 ||
		    crc_ok(cudaEventSynchronize(ev[1]), err, errlen,
			   "cudaEventSynchronize (the CRC kernels)") < 0 ||
		    crc_ok(cudaEventElapsedTime(&ms[i], ev[0], ev[1]), err,
			   errlen, "cudaEventElapsedTime") < 0)
			goto out;
	if (crc_ok(cudaMemcpyAsync(checks, d_chk, chk_bytes,
				   cudaMemcpyDeviceToHost, s), err, errlen,
		   "cudaMemcpyAsync (checks back)") < 0 ||
	    crc_ok(cudaStreamSynchronize(s), err, errlen,
		   "cudaStreamSynchronize") < 0)
		goto out;
	ret = 0;
out:
	/* the stream's work first, then the memory it uses */
	if (s) {
		cudaStreamSynchronize(s);
		cudaStreamDestroy(s);
	}
	for (int i = 0; i < 2; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	cudaFree(d_in);
	cudaFree(d_chk);
	return ret;
}
