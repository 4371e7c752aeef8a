/*
 * cuda_backend.cu - gpumel's CUDA backend, built into gpumel-cuda.so, which
 * gpumel loads with dlopen (see backend.h): opening it (the parameters,
 * the device and its context, the constant tables on the device) and
 * closing it. Exports mel_cuda_open, mel_cuda_warm and the benchmark hook
 * mel_cuda_time_kernels (cuda_submit.cu); everything else is hidden.
 *
 * Each batch owns everything its work touches (cuda_batch.cu), so with up
 * to CU_DEPTH batches in flight the copy in of one batch, the kernels of
 * another and the copy out of a third run at the same time
 * (cuda_submit.cu).
 *
 * Calls come from one thread at a time (gpumel's compute thread); every
 * entry point makes the backend's device current first, since the current
 * device is per thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rec.h"
#include "cuda_backend.h"

#define CU_MAX_FFT (1u << 28)

/* rec_dtype_size's answer: lib/rec_item.c is not linked into the .so. */
size_t cu_dtype_size(int dtype)
{
	return dtype == REC_S16 || dtype == REC_F16 || dtype == REC_BF16 ? 2 :
	       dtype == REC_F32 ? 4 : 0;
}

int cu_select_device(cu_ctx *c)
{
	return cu_ok(c, cudaSetDevice(c->dev), "cudaSetDevice(%d)", c->dev);
}

static void cu_destroy(mel_backend *be)
{
	cu_ctx *c;

	if (!be)
		return;
	c = (cu_ctx *)be->ctx;
	if (c) {
		if (c->dev >= 0)
			cu_select_device(c);
		while (c->batches) {
			cu_batch *cb = c->batches;

			c->batches = cb->next;
			cu_free_batch(c, cb);
		}
		cu_dev_free(c, c->d_win32);
		cu_dev_free(c, c->d_win16);
		cu_dev_free(c, c->d_tw);
		cu_dev_free(c, c->d_fbt_tile);
		cu_dev_free(c, c->d_fbt_mel);
		cu_dev_free(c, c->d_fbt_w);
		cu_dev_free(c, c->d_dct);
		free(c);
	}
	free(be);
}

/* Checks what the kernels rely on: -1 with a sentence in msg otherwise. */
static int check_params(const mel_params *p, const mel_fb *fb, char *msg,
			size_t len)
{
	const char *bad = NULL;

	if (p->n_fft < 2 || p->n_fft > CU_MAX_FFT)
		bad = "n_fft out of range";
	else if (p->win_length < 1 || p->win_length > p->n_fft)
		bad = "win_length outside 1..n_fft";
	else if (p->hop_length < 1)
		bad = "hop_length is 0";
	else if (p->n_mels < 1)
		bad = "n_mels is 0";
	else if (p->n_mfcc > p->n_mels)
		bad = "more MFCCs than mels";
	else if (p->window < MEL_WIN_HANN || p->window > MEL_WIN_BLACKMAN)
		bad = "unknown window";
	else if (p->feature != MEL_FEAT_MEL && p->feature != MEL_FEAT_FBANK)
		bad = "unknown feature";
	else if (p->center && p->pad_mode != MEL_PAD_REFLECT &&
		 p->pad_mode != MEL_PAD_CONSTANT)
		bad = "unknown pad mode";
	else if (p->power != 1 && p->power != 2)
		bad = "power is neither 1 nor 2";
	else if (p->log != MEL_LOG_NONE && p->log != MEL_LOG_DB &&
		 p->log != MEL_LOG_LN)
		bad = "unknown log";
	else if (p->out_dtype != REC_F32 && p->out_dtype != REC_F16 &&
		 p->out_dtype != REC_BF16)
		bad = "output type is not f32, f16 or bf16";
	else if (!fb || fb->n_mels != p->n_mels ||
		 fb->n_bins != p->n_fft / 2 + 1)
		bad = "filterbank does not match the parameters";
	for (uint32_t m = 0; !bad && m < fb->n_mels; m++)
		if (fb->first[m] > fb->n_bins ||
		    fb->count[m] > fb->n_bins - fb->first[m] ||
		    fb->off[m] > fb->n_weights ||
		    fb->count[m] > fb->n_weights - fb->off[m])
			bad = "filterbank filter outside its bins or weights";
	if (bad)
		snprintf(msg, len, "CUDA backend: %s", bad);
	return bad ? -1 : 0;
}

/* Checks that gpumel-cuda.so's kernels load on the current device. Only
 * two errors mean that it has no code for the device; any other is said as
 * it is (a GPU failing here says so, as everywhere). */
static int check_kernels(cu_ctx *c, const cudaDeviceProp *prop)
{
	cudaError_t e = mel_cuda_kernels_check();

	if (e == cudaErrorInvalidDeviceFunction ||
	    e == cudaErrorNoKernelImageForDevice) {
		cu_set_err(c, "%s: gpumel-cuda.so has no code for compute "
			"capability %d.%d: cudaFuncGetAttributes failed: %s",
			c->where, prop->major, prop->minor,
			cudaGetErrorString(e));
		return -1;
	}
	if (e == cudaErrorUnsupportedPtxVersion) {
		cu_set_err(c, "%s: the NVIDIA driver cannot compile "
			"gpumel-cuda.so's code for compute capability %d.%d: "
			"cudaFuncGetAttributes failed: %s (the driver is older "
			"than the CUDA %d.%d that built it: update the driver)",
			c->where, prop->major, prop->minor,
			cudaGetErrorString(e), CUDART_VERSION / 1000,
			CUDART_VERSION % 1000 / 10);
		return -1;
	}
	return cu_ok(c, e, "loading gpumel-cuda.so's kernels: "
		     "cudaFuncGetAttributes");
}

/* Makes device d current with a context, if it can run our kernels; from
 * its properties on, errors name it (c->where). */
static int try_device(cu_ctx *c, int d)
{
	cudaDeviceProp prop;
	int mode = 0;

	/* a failure on an earlier device may have left its error behind */
	(void)cudaGetLastError();
	c->where[0] = '\0';
	if (cu_ok(c, cudaGetDeviceProperties(&prop, d),
		  "cudaGetDeviceProperties (CUDA device %d)", d) < 0)
		return -1;
	snprintf(c->where, sizeof(c->where), "cuda:%d (%.80s)", d, prop.name);
	if (cu_ok(c, cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, d),
		  "cudaDeviceGetAttribute (compute mode)") < 0)
		return -1;
	if (mode == cudaComputeModeProhibited) {
		cu_set_err(c, "%s: the device is in prohibited compute mode",
			c->where);
		return -1;
	}
	if (cu_ok(c, cudaSetDevice(d), "cudaSetDevice(%d)", d) < 0 ||
	    cu_ok(c, cudaFree(0), "creating a context: cudaFree(0)") < 0 ||
	    check_kernels(c, &prop) < 0)
		return -1;
	c->dev = d;
	c->be->exclusive = mode == cudaComputeModeExclusiveProcess;
	snprintf(c->be->name, sizeof(c->be->name), "cuda:%d: %.80s (%s)", d,
		 prop.name, c->fused ? "fused fft" : "cufft");
	return 0;
}

static int pick_device(cu_ctx *c, int device)
{
	int n = 0;

	if (cu_ok(c, cudaGetDeviceCount(&n), "cudaGetDeviceCount") < 0)
		return -1;
	if (n < 1) {
		cu_set_err(c, "no CUDA device found");
		return -1;
	}
	if (device >= n) {
		cu_set_err(c, "CUDA device %d does not exist (%d found)",
			device, n);
		return -1;
	}
	if (device >= 0)
		return try_device(c, device);
	for (int d = 0; d < n; d++)
		if (try_device(c, d) == 0)
			return 0;
	return -1;
}

/* The fused kernel's twiddle tables (mel_cuda_twiddles). */
static int upload_twiddles(cu_ctx *c)
{
	size_t bytes = 2 * (size_t)mel_cuda_twiddles_len(c->p.n_fft) *
		       sizeof(float);
	float *tw = (float *)malloc(bytes);
	int ret;

	if (!tw) {
		cu_set_err(c, "CUDA backend: out of memory");
		return -1;
	}
	mel_cuda_twiddles(c->p.n_fft, tw);
	ret = cu_upload(c, (void **)&c->d_tw, tw, bytes, "the twiddles");
	free(tw);
	return ret;
}

/* The filterbank in the kernels' tiles (mel_cuda_tiles_build). */
static int upload_filterbank(cu_ctx *c, const mel_fb *fb)
{
	mel_tiles t;
	int ret = -1;

	if (mel_cuda_tiles_build(fb, &t) < 0) {
		cu_set_err(c, "CUDA backend: cannot build the filterbank tiles "
			"(%u mels of %u bins): out of memory or over 2^32 "
			"weights", fb->n_mels, fb->n_bins);
		return -1;
	}
	if (cu_upload(c, (void **)&c->d_fbt_tile, t.tile,
		      2 * (size_t)t.n_tiles * sizeof(uint32_t),
		      "the filterbank") < 0 ||
	    cu_upload(c, (void **)&c->d_fbt_mel, t.mel,
		      4 * (size_t)fb->n_mels * sizeof(uint32_t),
		      "the filterbank") < 0 ||
	    cu_upload(c, (void **)&c->d_fbt_w, t.w,
		      (size_t)t.n_w * sizeof(float), "the filterbank") < 0)
		goto out;
	ret = 0;
out:
	mel_cuda_tiles_free(&t);
	return ret;
}

/* MFCC's matrix, in float. */
static int upload_dct(cu_ctx *c)
{
	size_t n = (size_t)c->p.n_mfcc * c->p.n_mels;
	double *d64;
	float *d32;
	int ret = -1;

	if (!n)
		return 0;
	d64 = (double *)malloc(n * sizeof(double));
	d32 = (float *)malloc(n * sizeof(float));
	if (!d64 || !d32) {
		cu_set_err(c, "CUDA backend: out of memory");
		goto out;
	}
	mel_dct_build(&c->p, d64);
	for (size_t i = 0; i < n; i++)
		d32[i] = (float)d64[i];
	ret = cu_upload(c, (void **)&c->d_dct, d32, n * sizeof(float),
			"the MFCC matrix");
out:
	free(d32);
	free(d64);
	return ret;
}

/* The window (both scalings), the twiddles, the filterbank and MFCC's
 * matrix, once. */
static int upload_constants(cu_ctx *c, const mel_fb *fb)
{
	uint32_t n = c->p.n_fft;
	double *w64 = (double *)malloc(n * sizeof(double));
	float *w32 = (float *)malloc(n * sizeof(float));
	float *w16 = (float *)malloc(n * sizeof(float));
	int ret = -1;

	if (!w64 || !w32 || !w16) {
		cu_set_err(c, "CUDA backend: out of memory");
		goto out;
	}
	mel_window_build(&c->p, w64);
	mel_cuda_windows(w64, n, w32, w16);
	if (cu_upload(c, (void **)&c->d_win32, w32, n * sizeof(float),
		      "the window") < 0 ||
	    cu_upload(c, (void **)&c->d_win16, w16, n * sizeof(float),
		      "the window") < 0)
		goto out;
	if (c->fused && upload_twiddles(c) < 0)
		goto out;
	if (upload_filterbank(c, fb) < 0 || upload_dct(c) < 0)
		goto out;
	/* cudaMemcpy from pageable memory may return before the data is on
	 * the device, and the batches' streams do not wait for the legacy
	 * default stream: finish here */
	if (cu_ok(c, cudaDeviceSynchronize(),
		  "cudaDeviceSynchronize (uploading constants)") < 0)
		goto out;
	ret = 0;
out:
	free(w16);
	free(w32);
	free(w64);
	return ret;
}

/* MELPIPE_CUDA_FFT: auto (default), fused or cufft. fbank's frames run
 * on the cuFFT path only (k_kaldi_frames). */
static int choose_path(cu_ctx *c)
{
	const char *e = getenv(MEL_CUDA_ENV_FFT);
	int ok = mel_cuda_fused_ok(c->p.n_fft) &&
		 (c->p.feature == MEL_FEAT_MEL ||
		  mel_cuda_fused_fbank_ok(c->p.n_fft));

	if (!e || !*e || !strcmp(e, "auto")) {
		c->fused = ok;
		return 0;
	}
	if (!strcmp(e, "cufft")) {
		c->fused = 0;
		return 0;
	}
	if (!strcmp(e, "fused") && ok) {
		c->fused = 1;
		return 0;
	}
	if (!strcmp(e, "fused") && c->p.feature != MEL_FEAT_MEL &&
	    mel_cuda_fused_ok(c->p.n_fft))
		cu_set_err(c, "%s=fused: fbank takes the fused kernel for "
			"n_fft 256 and more, not %u", MEL_CUDA_ENV_FFT,
			c->p.n_fft);
	else if (!strcmp(e, "fused"))
		cu_set_err(c, "%s=fused: the fused kernel needs n_fft a power "
			"of two in %u..%u, not %u", MEL_CUDA_ENV_FFT,
			MEL_FUSED_MIN, MEL_FUSED_MAX, c->p.n_fft);
	else
		cu_set_err(c, "%s='%s': use auto, fused or cufft",
			MEL_CUDA_ENV_FFT, e);
	return -1;
}

/* Rings of shared memory that batches copy payloads from (backend.h):
 * pinned where they are, so that the copies are DMA from them. */
static int cu_host_register(mel_backend *be, const void *p, size_t len)
{
	cu_ctx *c = (cu_ctx *)be->ctx;

	if (cu_select_device(c) < 0)
		return -1;
	return cu_ok(c, cudaHostRegister((void *)p, len,
					 cudaHostRegisterDefault),
		     "cudaHostRegister of a ring of shared memory (%zu "
		     "bytes)", len);
}

static void cu_host_unregister(mel_backend *be, const void *p)
{
	cu_ctx *c = (cu_ctx *)be->ctx;

	if (cu_select_device(c) == 0)
		cu_ok(c, cudaHostUnregister((void *)p),
		      "cudaHostUnregister of a ring of shared memory");
}

/*
 * The CUDA backend (see backend.h). batch_hint is not used: gpumel sizes
 * its batches itself and the backend sizes everything from batch_alloc.
 */
CU_EXPORT int mel_cuda_open(const mel_params *p, const mel_fb *fb, int device,
			    size_t batch_hint, mel_backend **out, char *err,
			    size_t errlen)
{
	mel_backend *be = NULL;
	cu_ctx *c = NULL;
	const char *g;

	(void)batch_hint;
	*out = NULL;
	if (check_params(p, fb, err, errlen) < 0)
		return -1;
	be = (mel_backend *)calloc(1, sizeof(*be));
	c = (cu_ctx *)calloc(1, sizeof(*c));
	if (!be || !c) {
		snprintf(err, errlen, "CUDA backend: out of memory");
		free(be);
		free(c);
		return -1;
	}
	be->ctx = c;
	c->be = be;
	c->p = *p;
	c->dev = -1;
	c->out_size = cu_dtype_size(p->out_dtype);
	g = getenv(MEL_CUDA_ENV_GRAPH);
	c->graphs = !(g && !strcmp(g, "0"));
	if (choose_path(c) < 0 || pick_device(c, device) < 0 ||
	    upload_constants(c, fb) < 0) {
		snprintf(err, errlen, "%s", be->err);
		cu_destroy(be);
		return -1;
	}
	be->depth = CU_DEPTH;
	be->batch_alloc = cu_batch_alloc;
	be->batch_free = cu_batch_free;
	be->submit = cu_submit;
	be->wait = cu_wait;
	be->destroy = cu_destroy;
	be->copies = 1;
	be->host_register = cu_host_register;
	be->host_unregister = cu_host_unregister;
	*out = be;
	return 0;
}

/* See backend.h. cudaFree(0) is the runtime's way to make the context. */
CU_EXPORT void mel_cuda_warm(int device)
{
	if (cudaSetDevice(device < 0 ? 0 : device) == cudaSuccess)
		(void)cudaFree(0);
	(void)cudaGetLastError();
}
