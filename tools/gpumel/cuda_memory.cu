/*
 * cuda_memory.cu - the CUDA backend's device and pinned host memory, whose
 * errors name what the memory was for and, when the GPU is out of memory,
 * how much it had left: gpumel's user sees that sentence, and another
 * process holding the memory is a common cause.
 */
#include "cuda_backend.h"

int cu_dev_alloc(cu_ctx *c, void **p, size_t bytes, const char *what)
{
	cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
	size_t free_b = 0, total_b = 0;

	if (e == cudaSuccess)
		return 0;
	*p = NULL;
	if (e != cudaErrorMemoryAllocation)
		return cu_ok(c, e, "cudaMalloc (%zu bytes for %s)", bytes,
			     what);
	/* not sticky: clear it so that the next launch check does not see
	 * it, then say how much there was */
	(void)cudaGetLastError();
	if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
		free_b = total_b = 0;
	cu_set_err(c, "%s%sout of GPU memory: cudaMalloc of %zu bytes for %s "
		"failed (%zu MiB free of %zu MiB)", c->where,
		*c->where ? ": " : "", bytes, what, free_b >> 20,
		total_b >> 20);
	return -1;
}

int cu_host_alloc(cu_ctx *c, void **p, size_t bytes, const char *what)
{
	cudaError_t e = cudaHostAlloc(p, bytes ? bytes : 1,
				      cudaHostAllocDefault);

	if (e == cudaSuccess)
		return 0;
	*p = NULL;
	return cu_ok(c, e, "cudaHostAlloc (%zu bytes of pinned memory for %s)",
		     bytes, what);
}

void cu_dev_free(cu_ctx *c, void *p)
{
	if (p)
		cu_ok(c, cudaFree(p), "cudaFree");
}

void cu_host_free(cu_ctx *c, void *p)
{
	if (p)
		cu_ok(c, cudaFreeHost(p), "cudaFreeHost");
}

int cu_upload(cu_ctx *c, void **d, const void *h, size_t bytes,
	      const char *what)
{
	if (cu_dev_alloc(c, d, bytes, what) < 0)
		return -1;
	if (!bytes)
		return 0;
	return cu_ok(c, cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice),
		     "cudaMemcpy (%s, %zu bytes)", what, bytes);
}
