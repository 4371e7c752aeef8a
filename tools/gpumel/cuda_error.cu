/*
 * cuda_error.cu - the CUDA backend's errors: one sentence in be->err naming
 * the device, the call that failed and why, and saying so when the error
 * has broken the CUDA context for good (a GPU lost mid-run), since gpumel
 * must then stop rather than retry or fall back.
 */
#include <stdarg.h>
#include <stdio.h>

#include "cuda_backend.h"

void cu_set_err(cu_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->be->err, sizeof(c->be->err), fmt, ap);
	va_end(ap);
}

/*
 * Whether e leaves the device's context broken for good: driver_types.h
 * says of each that "any further CUDA work will return the same error" and
 * the process must restart to use CUDA (the "sticky" errors), or the
 * hardware failed under the work (uncorrectable ECC or NVLink errors). Not
 * here, as the header does not call them sticky: cudaErrorUnknown,
 * cudaErrorNoDevice, cudaErrorDevicesUnavailable (busy),
 * cudaErrorSystemNotReady (start-up), cudaErrorStreamCaptureInvalidated
 * (an earlier error ended a capture), cudaErrorDeviceUninitialized and
 * cudaErrorContextIsDestroyed (no context current).
 */
static int context_lost(cudaError_t e)
{
	switch (e) {
	case cudaErrorECCUncorrectable:
	case cudaErrorNvlinkUncorrectable:
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchTimeout:
	case cudaErrorAssert:
	case cudaErrorHardwareStackError:
	case cudaErrorIllegalInstruction:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorLaunchFailure:
	/* in the CUDA 13 headers; older ones may lack them */
#if CUDART_VERSION >= 13000
	case cudaErrorContained:
	case cudaErrorTensorMemoryLeak:
	case cudaErrorExternalDevice:
#endif
		return 1;
	default:
		return 0;
	}
}

int cu_ok(cu_ctx *c, cudaError_t e, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	int lost;

	if (e == cudaSuccess)
		return 0;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	lost = context_lost(e);
	cu_set_err(c, "%s%s%s%s failed: %s%s", c->where, *c->where ? ": " : "",
		lost ? "the GPU stopped working: " : "", what,
		cudaGetErrorString(e),
		lost ? " (the CUDA context is lost: this process cannot use "
		       "the GPU any more)" : "");
	return -1;
}

static const char *cufft_str(cufftResult r)
{
	switch (r) {
	case CUFFT_SUCCESS: return "success";
	case CUFFT_INVALID_PLAN: return "invalid plan (CUFFT_INVALID_PLAN)";
	case CUFFT_ALLOC_FAILED:
		return "out of GPU memory (CUFFT_ALLOC_FAILED)";
	case CUFFT_INVALID_TYPE: return "invalid type (CUFFT_INVALID_TYPE)";
	case CUFFT_INVALID_VALUE:
		return "invalid value (CUFFT_INVALID_VALUE)";
	case CUFFT_INTERNAL_ERROR:
		return "cuFFT internal error (CUFFT_INTERNAL_ERROR)";
	case CUFFT_EXEC_FAILED:
		return "execution failed on the GPU (CUFFT_EXEC_FAILED)";
	case CUFFT_SETUP_FAILED:
		return "cuFFT library failed to initialise (CUFFT_SETUP_FAILED)";
	case CUFFT_INVALID_SIZE:
		return "unsupported transform size (CUFFT_INVALID_SIZE)";
	case CUFFT_UNALIGNED_DATA:
		return "unaligned data (CUFFT_UNALIGNED_DATA)";
	case CUFFT_INVALID_DEVICE:
		return "invalid device (CUFFT_INVALID_DEVICE)";
	case CUFFT_NO_WORKSPACE:
		return "no work area set (CUFFT_NO_WORKSPACE)";
	case CUFFT_NOT_IMPLEMENTED:
		return "not implemented (CUFFT_NOT_IMPLEMENTED)";
	case CUFFT_NOT_SUPPORTED:
		return "not supported (CUFFT_NOT_SUPPORTED)";
	case CUFFT_MISSING_DEPENDENCY:
		return "missing dependency (CUFFT_MISSING_DEPENDENCY)";
	case CUFFT_NVRTC_FAILURE: return "NVRTC failure (CUFFT_NVRTC_FAILURE)";
	case CUFFT_NVJITLINK_FAILURE:
		return "nvJitLink failure (CUFFT_NVJITLINK_FAILURE)";
	case CUFFT_NVSHMEM_FAILURE:
		return "NVSHMEM failure (CUFFT_NVSHMEM_FAILURE)";
	}
	return "unknown cuFFT error";
}

int cu_fft_ok(cu_ctx *c, cufftResult r, const char *fmt, ...)
{
	char what[256];
	size_t fr, tot;
	cudaError_t e;
	va_list ap;

	if (r == CUFFT_SUCCESS)
		return 0;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* cuFFT's result does not say whether the context is gone; a runtime
	 * call that does not wait does (a lost context fails every call) */
	e = cudaMemGetInfo(&fr, &tot);
	if (context_lost(e)) {
		cu_set_err(c, "%s%sthe GPU stopped working: %s failed: %s "
			"(cufftResult %d), and the CUDA runtime says: %s (the "
			"CUDA context is lost: this process cannot use the GPU "
			"any more)", c->where, *c->where ? ": " : "", what,
			cufft_str(r), (int)r, cudaGetErrorString(e));
		return -1;
	}
	cu_set_err(c, "%s%s%s failed: %s (cufftResult %d)", c->where,
		*c->where ? ": " : "", what, cufft_str(r), (int)r);
	return -1;
}
