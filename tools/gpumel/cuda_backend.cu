/*
 * cuda_backend.cu - gpumel's CUDA backend, built into gpumel-cuda.so, which
 * gpumel loads with dlopen (see backend.h). Exports mel_cuda_open and the
 * benchmark hook mel_cuda_time_kernels; everything else is hidden.
 *
 * Each batch owns everything its work touches: pinned host buffers (what
 * the host loop fills and reads), device buffers of the same capacities, a
 * stream, an event, cuFFT plans and a CUDA graph. A submitted batch's work
 * is enqueued on its stream at once and submit returns:
 *
 *   H2D records + frame tables + samples -> kernels -> D2H features -> event
 *
 * so with up to CU_DEPTH batches in flight the copy in of one batch, the
 * kernels of another and the copy out of a third run at the same time.
 * wait() blocks on the oldest batch's event (blocking sync: the CPU core is
 * left to the pipe threads).
 *
 * CUDA graphs: when a batch is submitted with the shape (records, frames,
 * bytes, input type) it had the time before, its whole work is captured
 * into a graph once and from then on replayed with one cudaGraphLaunch.
 * With fixed-size records (segment's windows) every full batch has the same
 * shape, so the steady state runs on graphs and only the last batch of a
 * stream runs the direct launches. The graph reads the batch's pinned
 * buffers at replay time, so new contents need no update. A failed capture
 * turns graphs off and the direct launches go on.
 *
 * Calls come from one thread at a time (gpumel's compute thread); every
 * entry point makes the backend's device current first, since the current
 * device is per thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cufft.h>

#include "../../lib/rec.h"
#include "cuda_mel.h"

#define CU_EXPORT extern "C" __attribute__((visibility("default")))

#define CU_DEPTH 3                    /* batches in flight */
#define CU_PLANS 8                    /* cuFFT plans per batch: chunk / 8
					 granules */
#define CU_SCRATCH_BYTES (32u << 20)  /* cuFFT path: frames + spectra of
					 one chunk, about an L2's worth */
#define CU_MAX_FFT (1u << 28)

/* What a submitted batch holds; two equal shapes run the same work. */
typedef struct cu_shape {
	int in_dtype;
	size_t n;              /* records */
	uint32_t frames;
	size_t in_bytes;       /* samples to copy in */
	size_t out_bytes;      /* features to copy out */
} cu_shape;

typedef struct cu_batch {
	struct cu_batch *next;
	mel_batch *cur;        /* as submitted: what wait() returns */
	/* pinned host buffers, handed to the host loop */
	void *h_in, *h_out;
	mel_rec *h_rec;
	uint32_t *h_tab;       /* frame_base[n], then frame_rec[frames] */
	/* device buffers */
	void *d_in, *d_out;
	mel_rec *d_rec;
	uint32_t *d_tab, *d_key;
	float *d_frames, *d_spec; /* cuFFT path: one chunk of frames */
	void *d_work;          /* cuFFT work area, shared by the plans */
	size_t work_cap;
	cufftHandle plan[CU_PLANS]; /* plan i: (i + 1) * granule frames */
	int have_plan[CU_PLANS];
	size_t in_cap, out_cap, cap_recs;
	uint32_t max_frames;
	uint32_t granule, chunk; /* cuFFT path: chunk = CU_PLANS * granule */
	cudaStream_t stream;
	cudaEvent_t done;
	int have_stream, have_event;
	cudaGraphExec_t gexec; /* graph of the whole work for gshape */
	cu_shape gshape, last, shape;
	int have_last;
	int submitted;         /* shape and device contents are valid */
	int in_flight;
} cu_batch;

typedef struct cu_ctx {
	mel_backend *be;
	mel_params p;
	int dev;
	char where[128];       /* "cuda:0 (NAME)": the device errors name */
	int fused;             /* the FFT path: fused kernel or cuFFT */
	int graphs;
	size_t out_size;
	float *d_win32, *d_win16, *d_tw;
	uint32_t *d_fbt_tile, *d_fbt_mel; /* the filterbank (mel_tiles) */
	float *d_fbt_w;
	cu_batch *batches;
	cu_batch *fifo[CU_DEPTH]; /* in flight, oldest at head */
	int head, count;
} cu_ctx;

enum { W_IN = 1, W_COMPUTE = 2, W_OUT = 4, W_ALL = 7 };

/* ------------------------------------------------------------------ */
/* Errors */

static void set_err(cu_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_err(cu_ctx *c, const char *fmt, ...)
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

/*
 * 0 on success; else -1 with "DEVICE: WHAT failed: reason" in err (no
 * DEVICE before try_device has read its name). An error that broke the
 * context says so: "DEVICE: the GPU stopped working: WHAT failed: reason
 * (the CUDA context is lost: ...)".
 */
static int cu_ok(cu_ctx *c, cudaError_t e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int cu_ok(cu_ctx *c, cudaError_t e, const char *fmt, ...)
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
	set_err(c, "%s%s%s%s failed: %s%s", c->where, *c->where ? ": " : "",
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

static int fft_ok(cu_ctx *c, cufftResult r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fft_ok(cu_ctx *c, cufftResult r, const char *fmt, ...)
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
		set_err(c, "%s%sthe GPU stopped working: %s failed: %s "
			"(cufftResult %d), and the CUDA runtime says: %s (the "
			"CUDA context is lost: this process cannot use the GPU "
			"any more)", c->where, *c->where ? ": " : "", what,
			cufft_str(r), (int)r, cudaGetErrorString(e));
		return -1;
	}
	set_err(c, "%s%s%s failed: %s (cufftResult %d)", c->where,
		*c->where ? ": " : "", what, cufft_str(r), (int)r);
	return -1;
}

/* Bytes of an element (lib/rec_item.c is not linked into the .so). */
static size_t dtype_size(int dtype)
{
	return dtype == REC_S16 || dtype == REC_F16 || dtype == REC_BF16 ? 2 :
	       dtype == REC_F32 ? 4 : 0;
}

/* Makes the backend's device current in this thread. */
static int select_device(cu_ctx *c)
{
	return cu_ok(c, cudaSetDevice(c->dev), "cudaSetDevice(%d)", c->dev);
}

/* ------------------------------------------------------------------ */
/* Memory */

static int dev_alloc(cu_ctx *c, void **p, size_t bytes, const char *what)
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
	set_err(c, "%s%sout of GPU memory: cudaMalloc of %zu bytes for %s "
		"failed (%zu MiB free of %zu MiB)", c->where,
		*c->where ? ": " : "", bytes, what, free_b >> 20,
		total_b >> 20);
	return -1;
}

static int host_alloc(cu_ctx *c, void **p, size_t bytes, const char *what)
{
	cudaError_t e = cudaHostAlloc(p, bytes ? bytes : 1,
				      cudaHostAllocDefault);

	if (e == cudaSuccess)
		return 0;
	*p = NULL;
	return cu_ok(c, e, "cudaHostAlloc (%zu bytes of pinned memory for %s)",
		     bytes, what);
}

/* Frees on teardown: a failure is noted in err (nobody waits for it). */
static void dev_free(cu_ctx *c, void *p)
{
	if (p)
		cu_ok(c, cudaFree(p), "cudaFree");
}

static void host_free(cu_ctx *c, void *p)
{
	if (p)
		cu_ok(c, cudaFreeHost(p), "cudaFreeHost");
}

static int upload(cu_ctx *c, void **d, const void *h, size_t bytes,
		  const char *what)
{
	if (dev_alloc(c, d, bytes, what) < 0)
		return -1;
	if (!bytes)
		return 0;
	return cu_ok(c, cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice),
		     "cudaMemcpy (%s, %zu bytes)", what, bytes);
}

/* ------------------------------------------------------------------ */
/* Batches */

static void free_batch(cu_ctx *c, cu_batch *cb)
{
	if (!cb)
		return;
	if (cb->have_stream)
		cu_ok(c, cudaStreamSynchronize(cb->stream),
		      "cudaStreamSynchronize (freeing a batch)");
	if (cb->gexec)
		cu_ok(c, cudaGraphExecDestroy(cb->gexec),
		      "cudaGraphExecDestroy");
	for (int i = 0; i < CU_PLANS; i++)
		if (cb->have_plan[i])
			fft_ok(c, cufftDestroy(cb->plan[i]), "cufftDestroy");
	dev_free(c, cb->d_work);
	dev_free(c, cb->d_spec);
	dev_free(c, cb->d_frames);
	dev_free(c, cb->d_key);
	dev_free(c, cb->d_tab);
	dev_free(c, cb->d_rec);
	dev_free(c, cb->d_out);
	dev_free(c, cb->d_in);
	host_free(c, cb->h_tab);
	host_free(c, cb->h_rec);
	host_free(c, cb->h_out);
	host_free(c, cb->h_in);
	if (cb->have_event)
		cu_ok(c, cudaEventDestroy(cb->done), "cudaEventDestroy");
	if (cb->have_stream)
		cu_ok(c, cudaStreamDestroy(cb->stream), "cudaStreamDestroy");
	free(cb);
}

static cu_batch *find_batch(cu_ctx *c, const mel_batch *b)
{
	for (cu_batch *cb = c->batches; cb; cb = cb->next)
		if (b->in && cb->h_in == b->in)
			return cb;
	return NULL;
}

static void unlink_batch(cu_ctx *c, cu_batch *cb)
{
	cu_batch **pp = &c->batches;
	cu_batch *keep[CU_DEPTH];
	int n = 0;

	while (*pp && *pp != cb)
		pp = &(*pp)->next;
	if (*pp)
		*pp = cb->next;
	/* an in-flight batch being freed leaves the queue (its stream is
	 * synchronised by free_batch) */
	for (int i = 0; i < c->count; i++) {
		cu_batch *x = c->fifo[(c->head + i) % CU_DEPTH];

		if (x != cb)
			keep[n++] = x;
	}
	for (int i = 0; i < n; i++)
		c->fifo[i] = keep[i];
	c->head = 0;
	c->count = n;
}

/* Frames a batch of these capacities can hold: every frame needs n_mels
 * output elements of its own. (Not bounded by the input: windows of one
 * clip may share samples, so a batch's frames can cover its samples many
 * times over.) */
static uint32_t batch_max_frames(const cu_ctx *c, size_t out_cap)
{
	uint64_t mf = (uint64_t)out_cap / c->out_size / c->p.n_mels;

	if (mf > 0x7fffffffu)
		mf = 0x7fffffffu;
	return mf ? (uint32_t)mf : 1;
}

/* cuFFT path: the chunk of frames one plan runs, its scratch buffers
 * (cleared once, on the batch's stream, so that the frames a partial
 * chunk's plan reads past the end are defined), and an empty plan cache. */
static int alloc_scratch(cu_ctx *c, cu_batch *cb)
{
	size_t n = c->p.n_fft, bins = n / 2 + 1;
	size_t per_frame = n * sizeof(float) + bins * 2 * sizeof(float);
	size_t want = CU_SCRATCH_BYTES / per_frame;
	const char *e = getenv(MEL_CUDA_ENV_CHUNK);
	size_t fb, sb;

	if (e && atol(e) > 0)
		want = (size_t)atol(e);
	if (want < CU_PLANS)
		want = CU_PLANS;
	if (want > cb->max_frames)
		want = cb->max_frames;
	cb->granule = (uint32_t)((want + CU_PLANS - 1) / CU_PLANS);
	cb->chunk = cb->granule * CU_PLANS;
	fb = (size_t)cb->chunk * n * sizeof(float);
	sb = (size_t)cb->chunk * bins * 2 * sizeof(float);
	if (dev_alloc(c, (void **)&cb->d_frames, fb, "cuFFT input frames") <
		    0 ||
	    dev_alloc(c, (void **)&cb->d_spec, sb, "cuFFT output spectra") < 0)
		return -1;
	if (cu_ok(c, cudaMemsetAsync(cb->d_frames, 0, fb, cb->stream),
		  "cudaMemsetAsync (frames)") < 0 ||
	    cu_ok(c, cudaMemsetAsync(cb->d_spec, 0, sb, cb->stream),
		  "cudaMemsetAsync (spectra)") < 0)
		return -1;
	return 0;
}

static int alloc_buffers(cu_ctx *c, cu_batch *cb)
{
	size_t tab = ((size_t)cb->cap_recs + cb->max_frames) * sizeof(uint32_t);
	size_t recs = cb->cap_recs * sizeof(mel_rec);

	if (cu_ok(c, cudaStreamCreateWithFlags(&cb->stream,
					       cudaStreamNonBlocking),
		  "cudaStreamCreateWithFlags") < 0)
		return -1;
	cb->have_stream = 1;
	if (cu_ok(c, cudaEventCreateWithFlags(&cb->done,
					      cudaEventDisableTiming |
						      cudaEventBlockingSync),
		  "cudaEventCreateWithFlags") < 0)
		return -1;
	cb->have_event = 1;
	if (host_alloc(c, &cb->h_in, cb->in_cap, "batch samples") < 0 ||
	    host_alloc(c, &cb->h_out, cb->out_cap, "batch features") < 0 ||
	    host_alloc(c, (void **)&cb->h_rec, recs, "batch records") < 0 ||
	    host_alloc(c, (void **)&cb->h_tab, tab, "frame tables") < 0)
		return -1;
	if (dev_alloc(c, &cb->d_in, cb->in_cap, "batch samples") < 0 ||
	    dev_alloc(c, &cb->d_out, cb->out_cap, "batch features") < 0 ||
	    dev_alloc(c, (void **)&cb->d_rec, recs, "batch records") < 0 ||
	    dev_alloc(c, (void **)&cb->d_tab, tab, "frame tables") < 0 ||
	    dev_alloc(c, (void **)&cb->d_key, cb->cap_recs * sizeof(uint32_t),
		      "record maxima") < 0)
		return -1;
	/* defined contents for gaps between records, should a host loop
	 * leave any, that the copy out would carry; on the batch's stream,
	 * which does not wait for the legacy default stream */
	if (cu_ok(c, cudaMemsetAsync(cb->d_out, 0, cb->out_cap, cb->stream),
		  "cudaMemsetAsync (batch features)") < 0)
		return -1;
	if (!c->fused && alloc_scratch(c, cb) < 0)
		return -1;
	return 0;
}

static int cu_batch_alloc(mel_backend *be, mel_batch *b, size_t in_cap,
			  size_t out_cap, size_t cap_recs)
{
	cu_ctx *c = (cu_ctx *)be->ctx;
	char why[sizeof(be->err)];
	cu_batch *cb;

	if (select_device(c) < 0)
		return -1;
	if (!cap_recs) {
		set_err(c, "batch_alloc: a batch of 0 records");
		return -1;
	}
	cb = (cu_batch *)calloc(1, sizeof(*cb));
	if (!cb) {
		set_err(c, "batch_alloc: out of memory");
		return -1;
	}
	cb->in_cap = in_cap ? in_cap : 1;
	cb->out_cap = out_cap ? out_cap : 1;
	cb->cap_recs = cap_recs;
	cb->max_frames = batch_max_frames(c, cb->out_cap);
	if (alloc_buffers(c, cb) < 0) {
		/* keep the reason: the frees may note failures of their own */
		memcpy(why, be->err, sizeof(why));
		free_batch(c, cb);
		memcpy(be->err, why, sizeof(why));
		return -1;
	}
	cb->next = c->batches;
	c->batches = cb;
	b->in = cb->h_in;
	b->in_cap = cb->in_cap;
	b->out = cb->h_out;
	b->out_cap = cb->out_cap;
	b->rec = cb->h_rec;
	b->cap_recs = cap_recs;
	b->n = 0;
	return 0;
}

static void cu_batch_free(mel_backend *be, mel_batch *b)
{
	cu_ctx *c;
	cu_batch *cb;

	if (!be || !b)
		return;
	c = (cu_ctx *)be->ctx;
	cb = find_batch(c, b);
	if (!cb)
		return;
	select_device(c);
	unlink_batch(c, cb);
	free_batch(c, cb);
	b->in = b->out = NULL;
	b->rec = NULL;
	b->in_cap = b->out_cap = b->cap_recs = b->n = 0;
}

/* ------------------------------------------------------------------ */
/* cuFFT plans */

/* The plan for a chunk of nf frames (1 <= nf <= chunk): the smallest
 * granule multiple that holds them. */
static int plan_index(const cu_batch *cb, uint32_t nf)
{
	return (int)((nf + cb->granule - 1) / cb->granule) - 1;
}

/* Gives every plan a work area of at least ws bytes. The old area may be
 * in use by work already enqueued, and a captured graph holds its address:
 * drain the stream, drop the graph. */
static int grow_work(cu_ctx *c, cu_batch *cb, size_t ws)
{
	if (cu_ok(c, cudaStreamSynchronize(cb->stream),
		  "cudaStreamSynchronize (growing the cuFFT work area)") < 0)
		return -1;
	if (cb->gexec) {
		if (cu_ok(c, cudaGraphExecDestroy(cb->gexec),
			  "cudaGraphExecDestroy") < 0)
			return -1;
		cb->gexec = NULL;
	}
	dev_free(c, cb->d_work);
	cb->d_work = NULL;
	cb->work_cap = 0;
	if (dev_alloc(c, &cb->d_work, ws, "the cuFFT work area") < 0)
		return -1;
	cb->work_cap = ws;
	for (int i = 0; i < CU_PLANS; i++)
		if (cb->have_plan[i] &&
		    fft_ok(c, cufftSetWorkArea(cb->plan[i], cb->d_work),
			   "cufftSetWorkArea") < 0)
			return -1;
	return 0;
}

static int ensure_plan(cu_ctx *c, cu_batch *cb, int gi)
{
	long long n = c->p.n_fft, bins = n / 2 + 1;
	long long frames = (long long)(gi + 1) * cb->granule;
	cufftHandle h;
	size_t ws = 0;
	int ret = -1;

	if (cb->have_plan[gi])
		return 0;
	if (fft_ok(c, cufftCreate(&h), "cufftCreate") < 0)
		return -1;
	if (fft_ok(c, cufftSetAutoAllocation(h, 0),
		   "cufftSetAutoAllocation") < 0 ||
	    fft_ok(c, cufftMakePlanMany64(h, 1, &n, &n, 1, n, &bins, 1, bins,
					  CUFFT_R2C, frames, &ws),
		   "cufftMakePlanMany64 (%lld-point R2C, %lld frames)", n,
		   frames) < 0 ||
	    fft_ok(c, cufftSetStream(h, cb->stream), "cufftSetStream") < 0)
		goto out;
	if (ws > cb->work_cap && grow_work(c, cb, ws) < 0)
		goto out;
	if (ws && fft_ok(c, cufftSetWorkArea(h, cb->d_work),
			 "cufftSetWorkArea") < 0)
		goto out;
	cb->plan[gi] = h;
	cb->have_plan[gi] = 1;
	ret = 0;
out:
	if (ret)
		cufftDestroy(h);
	return ret;
}

/* Plans for the chunks of a batch of F frames: full chunks, then the
 * rest. Made before any work is enqueued (never inside a capture). */
static int ensure_plans(cu_ctx *c, cu_batch *cb, uint32_t F)
{
	if (F >= cb->chunk && ensure_plan(c, cb, CU_PLANS - 1) < 0)
		return -1;
	if (F % cb->chunk && ensure_plan(c, cb, plan_index(cb, F % cb->chunk))
		    < 0)
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Submitting */

static int bad_record(cu_ctx *c, size_t r, const mel_rec *R,
		      const char *what)
{
	set_err(c, "batch record %zu (%u samples at %llu, %u frames at "
		"%llu): %s", r, R->n_samples, (unsigned long long)R->in_off,
		R->n_frames, (unsigned long long)R->out_off, what);
	return -1;
}

/* Checks every record against the buffers (the kernels trust them), builds
 * the frame tables and the batch's shape. */
static int prepare(cu_ctx *c, cu_batch *cb, const mel_batch *b)
{
	size_t esz = dtype_size(b->in_dtype);
	uint64_t in_elems, out_elems, F = 0, in_end = 0, out_end = 0;
	uint32_t *base = cb->h_tab, *frec = cb->h_tab + b->n;

	if (b->in_dtype != REC_S16 && b->in_dtype != REC_F32) {
		set_err(c, "batch input type %d: the CUDA backend takes s16 "
			"or f32", b->in_dtype);
		return -1;
	}
	if (b->rec != cb->h_rec || b->out != cb->h_out || b->n > cb->cap_recs) {
		set_err(c, "batch buffers or record count (%zu) are not what "
			"batch_alloc gave", b->n);
		return -1;
	}
	in_elems = cb->in_cap / esz;
	out_elems = cb->out_cap / c->out_size;
	for (size_t r = 0; r < b->n; r++) {
		const mel_rec *R = &b->rec[r];
		uint64_t cells = (uint64_t)c->p.n_mels * R->n_frames;

		if (R->n_frames != mel_n_frames(&c->p, R->n_samples))
			return bad_record(c, r, R, "wrong frame count");
		if (R->in_off > in_elems || R->n_samples > in_elems - R->in_off)
			return bad_record(c, r, R, "samples outside the batch");
		if (R->out_off > out_elems || cells > out_elems - R->out_off)
			return bad_record(c, r, R, "matrix outside the batch");
		if (R->n_frames > cb->max_frames - F)
			return bad_record(c, r, R, "more frames than the batch "
					  "was allocated for");
		F += R->n_frames;
		if (R->in_off + R->n_samples > in_end)
			in_end = R->in_off + R->n_samples;
		if (R->out_off + cells > out_end)
			out_end = R->out_off + cells;
	}
	/* F <= max_frames: the tables fit in cap_recs + max_frames */
	mel_cuda_tables(b->rec, b->n, base, frec);
	cb->shape.in_dtype = b->in_dtype;
	cb->shape.n = b->n;
	cb->shape.frames = (uint32_t)F;
	cb->shape.in_bytes = in_end * esz;
	cb->shape.out_bytes = out_end * c->out_size;
	if (!c->fused && F && ensure_plans(c, cb, (uint32_t)F) < 0)
		return -1;
	return 0;
}

static void kernel_args(const cu_ctx *c, const cu_batch *cb, mel_kargs *a)
{
	const mel_params *p = &c->p;

	memset(a, 0, sizeof(*a));
	a->in = cb->d_in;
	a->out = cb->d_out;
	a->rec = cb->d_rec;
	a->frame_base = cb->d_tab;
	a->frame_rec = cb->d_tab + cb->shape.n;
	if (mel_cuda_clamps(p))
		a->rec_key = cb->d_key;
	a->win = cb->shape.in_dtype == REC_S16 ? c->d_win16 : c->d_win32;
	a->tw = c->d_tw;
	a->fbt_tile = c->d_fbt_tile;
	a->fbt_mel = c->d_fbt_mel;
	a->fbt_w = c->d_fbt_w;
	a->frames = cb->d_frames;
	a->spec = cb->d_spec;
	mel_cuda_scalars(a, p, cb->shape.in_dtype);
}

/* The kernels of the batch (its samples and tables on the device). */
static int compute(cu_ctx *c, cu_batch *cb)
{
	const uint32_t F = cb->shape.frames;
	cudaStream_t s = cb->stream;
	mel_kargs a;

	kernel_args(c, cb, &a);
	if (a.rec_key &&
	    cu_ok(c, cudaMemsetAsync(cb->d_key, 0, cb->shape.n *
				     sizeof(uint32_t), s),
		  "cudaMemsetAsync (record maxima)") < 0)
		return -1;
	if (c->fused) {
		a.f0 = 0;
		a.nf = F;
		if (cu_ok(c, mel_cuda_launch_fused(&a, s),
			  "launching the fused kernel (%u-point, %u frames)",
			  a.n_fft, F) < 0)
			return -1;
	}
	for (uint32_t f0 = 0; !c->fused && f0 < F; f0 += cb->chunk) {
		uint32_t nf = F - f0 < cb->chunk ? F - f0 : cb->chunk;
		cufftHandle h = cb->plan[plan_index(cb, nf)];

		a.f0 = f0;
		a.nf = nf;
		if (cu_ok(c, mel_cuda_launch_frames(&a, s),
			  "launching the frames kernel (%u frames)", nf) < 0 ||
		    fft_ok(c, cufftExecR2C(h, cb->d_frames,
					   (cufftComplex *)cb->d_spec),
			   "cufftExecR2C (%u-point, %u frames)", a.n_fft, nf) <
			    0 ||
		    cu_ok(c, mel_cuda_launch_mel(&a, s),
			  "launching the mel kernel (%u frames)", nf) < 0)
			return -1;
	}
	if (a.rec_key && cu_ok(c, mel_cuda_launch_clamp(&a, F, s),
			       "launching the top_db kernel (%u frames)", F) <
				 0)
		return -1;
	return 0;
}

/* Enqueues the parts of the batch's work named by what on its stream. */
static int enqueue_work(cu_ctx *c, cu_batch *cb, int what)
{
	const cu_shape *sh = &cb->shape;
	cudaStream_t s = cb->stream;
	size_t tab = (sh->n + sh->frames) * sizeof(uint32_t);

	if ((what & W_IN) && sh->n &&
	    (cu_ok(c, cudaMemcpyAsync(cb->d_rec, cb->h_rec,
				      sh->n * sizeof(mel_rec),
				      cudaMemcpyHostToDevice, s),
		   "cudaMemcpyAsync (records, %zu bytes)",
		   sh->n * sizeof(mel_rec)) < 0 ||
	     cu_ok(c, cudaMemcpyAsync(cb->d_tab, cb->h_tab, tab,
				      cudaMemcpyHostToDevice, s),
		   "cudaMemcpyAsync (frame tables, %zu bytes)", tab) < 0))
		return -1;
	if ((what & W_IN) && sh->in_bytes &&
	    cu_ok(c, cudaMemcpyAsync(cb->d_in, cb->h_in, sh->in_bytes,
				     cudaMemcpyHostToDevice, s),
		  "cudaMemcpyAsync (samples, %zu bytes)", sh->in_bytes) < 0)
		return -1;
	if ((what & W_COMPUTE) && sh->frames && compute(c, cb) < 0)
		return -1;
	if ((what & W_OUT) && sh->out_bytes &&
	    cu_ok(c, cudaMemcpyAsync(cb->h_out, cb->d_out, sh->out_bytes,
				     cudaMemcpyDeviceToHost, s),
		  "cudaMemcpyAsync (features, %zu bytes)", sh->out_bytes) < 0)
		return -1;
	return 0;
}

static int same_shape(const cu_shape *x, const cu_shape *y)
{
	return x->in_dtype == y->in_dtype && x->n == y->n &&
	       x->frames == y->frames && x->in_bytes == y->in_bytes &&
	       x->out_bytes == y->out_bytes;
}

/* Captures the batch's whole work into cb->gexec. On failure graphs are
 * turned off for the backend (a capture that fails once will again) and
 * the error left behind is cleared; the caller runs the work directly. */
static int capture(cu_ctx *c, cu_batch *cb)
{
	cudaGraph_t g = NULL;
	cudaGraphExec_t x = NULL;
	int ok;

	if (cudaStreamBeginCapture(cb->stream,
				   cudaStreamCaptureModeThreadLocal) !=
	    cudaSuccess)
		goto fail;
	ok = enqueue_work(c, cb, W_ALL) == 0;
	if (cudaStreamEndCapture(cb->stream, &g) != cudaSuccess || !ok || !g)
		goto fail;
	if (cudaGraphInstantiate(&x, g, 0) != cudaSuccess)
		goto fail;
	cu_ok(c, cudaGraphDestroy(g), "cudaGraphDestroy");
	if (cb->gexec)
		cu_ok(c, cudaGraphExecDestroy(cb->gexec),
		      "cudaGraphExecDestroy");
	cb->gexec = x;
	cb->gshape = cb->shape;
	return 0;
fail:
	if (g)
		cudaGraphDestroy(g);
	(void)cudaGetLastError();
	c->graphs = 0;
	return -1;
}

/* Enqueues the batch's work: the graph when it has this shape, a new
 * graph when the shape repeats, else direct launches. */
static int run_batch(cu_ctx *c, cu_batch *cb)
{
	if (c->graphs) {
		int repeat = cb->have_last && same_shape(&cb->last, &cb->shape);

		cb->last = cb->shape;
		cb->have_last = 1;
		if (cb->gexec && same_shape(&cb->gshape, &cb->shape))
			return cu_ok(c, cudaGraphLaunch(cb->gexec, cb->stream),
				     "cudaGraphLaunch");
		if (repeat && capture(c, cb) == 0)
			return cu_ok(c, cudaGraphLaunch(cb->gexec, cb->stream),
				     "cudaGraphLaunch");
	}
	return enqueue_work(c, cb, W_ALL);
}

static int cu_submit(mel_backend *be, mel_batch *b)
{
	cu_ctx *c = (cu_ctx *)be->ctx;
	cu_batch *cb;

	if (select_device(c) < 0)
		return -1;
	if (c->count == CU_DEPTH) {
		set_err(c, "submit: %d batches already in flight", CU_DEPTH);
		return -1;
	}
	cb = find_batch(c, b);
	if (!cb || cb->in_flight) {
		set_err(c, "submit: %s", cb ? "batch already in flight" :
			"batch not allocated by this backend");
		return -1;
	}
	cb->submitted = 0;
	if (prepare(c, cb, b) < 0 || run_batch(c, cb) < 0)
		return -1;
	if (cu_ok(c, cudaEventRecord(cb->done, cb->stream),
		  "cudaEventRecord") < 0)
		return -1;
	cb->cur = b;
	cb->in_flight = 1;
	cb->submitted = 1;
	c->fifo[(c->head + c->count) % CU_DEPTH] = cb;
	c->count++;
	return 0;
}

static int cu_wait(mel_backend *be, mel_batch **done)
{
	cu_ctx *c = (cu_ctx *)be->ctx;
	cu_batch *cb;

	*done = NULL;
	if (!c->count)
		return 0;
	if (select_device(c) < 0)
		return -1;
	cb = c->fifo[c->head];
	c->head = (c->head + 1) % CU_DEPTH;
	c->count--;
	cb->in_flight = 0;
	/* errors of the kernels and copies surface here */
	if (cu_ok(c, cudaEventSynchronize(cb->done),
		  "GPU work of a batch (%zu records, %u frames): "
		  "cudaEventSynchronize", cb->shape.n, cb->shape.frames) < 0) {
		cb->submitted = 0;
		return -1;
	}
	*done = cb->cur;
	return 0;
}

static void cu_destroy(mel_backend *be)
{
	cu_ctx *c;

	if (!be)
		return;
	c = (cu_ctx *)be->ctx;
	if (c) {
		if (c->dev >= 0)
			select_device(c);
		while (c->batches) {
			cu_batch *cb = c->batches;

			c->batches = cb->next;
			free_batch(c, cb);
		}
		dev_free(c, c->d_win32);
		dev_free(c, c->d_win16);
		dev_free(c, c->d_tw);
		dev_free(c, c->d_fbt_tile);
		dev_free(c, c->d_fbt_mel);
		dev_free(c, c->d_fbt_w);
		free(c);
	}
	free(be);
}

/* ------------------------------------------------------------------ */
/* Opening */

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
	else if (p->window != MEL_WIN_HANN && p->window != MEL_WIN_HAMMING &&
		 p->window != MEL_WIN_RECT)
		bad = "unknown window";
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
		set_err(c, "%s: gpumel-cuda.so has no code for compute "
			"capability %d.%d: cudaFuncGetAttributes failed: %s",
			c->where, prop->major, prop->minor,
			cudaGetErrorString(e));
		return -1;
	}
	if (e == cudaErrorUnsupportedPtxVersion) {
		set_err(c, "%s: the NVIDIA driver cannot compile "
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
		set_err(c, "%s: the device is in prohibited compute mode",
			c->where);
		return -1;
	}
	if (cu_ok(c, cudaSetDevice(d), "cudaSetDevice(%d)", d) < 0 ||
	    cu_ok(c, cudaFree(0), "creating a context: cudaFree(0)") < 0 ||
	    check_kernels(c, &prop) < 0)
		return -1;
	c->dev = d;
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
		set_err(c, "no CUDA device found");
		return -1;
	}
	if (device >= n) {
		set_err(c, "CUDA device %d does not exist (%d found)", device,
			n);
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
		set_err(c, "CUDA backend: out of memory");
		return -1;
	}
	mel_cuda_twiddles(c->p.n_fft, tw);
	ret = upload(c, (void **)&c->d_tw, tw, bytes, "the twiddles");
	free(tw);
	return ret;
}

/* The filterbank in the kernels' tiles (mel_cuda_tiles_build). */
static int upload_filterbank(cu_ctx *c, const mel_fb *fb)
{
	mel_tiles t;
	int ret = -1;

	if (mel_cuda_tiles_build(fb, &t) < 0) {
		set_err(c, "CUDA backend: cannot build the filterbank tiles "
			"(%u mels of %u bins): out of memory or over 2^32 "
			"weights", fb->n_mels, fb->n_bins);
		return -1;
	}
	if (upload(c, (void **)&c->d_fbt_tile, t.tile, 2 * (size_t)t.n_tiles *
		   sizeof(uint32_t), "the filterbank") < 0 ||
	    upload(c, (void **)&c->d_fbt_mel, t.mel, 4 * (size_t)fb->n_mels *
		   sizeof(uint32_t), "the filterbank") < 0 ||
	    upload(c, (void **)&c->d_fbt_w, t.w, (size_t)t.n_w * sizeof(float),
		   "the filterbank") < 0)
		goto out;
	ret = 0;
out:
	mel_cuda_tiles_free(&t);
	return ret;
}

/* The window (both scalings), the twiddles and the filterbank, once. */
static int upload_constants(cu_ctx *c, const mel_fb *fb)
{
	uint32_t n = c->p.n_fft;
	double *w64 = (double *)malloc(n * sizeof(double));
	float *w32 = (float *)malloc(n * sizeof(float));
	float *w16 = (float *)malloc(n * sizeof(float));
	int ret = -1;

	if (!w64 || !w32 || !w16) {
		set_err(c, "CUDA backend: out of memory");
		goto out;
	}
	mel_window_build(&c->p, w64);
	mel_cuda_windows(w64, n, w32, w16);
	if (upload(c, (void **)&c->d_win32, w32, n * sizeof(float),
		   "the window") < 0 ||
	    upload(c, (void **)&c->d_win16, w16, n * sizeof(float),
		   "the window") < 0)
		goto out;
	if (c->fused && upload_twiddles(c) < 0)
		goto out;
	if (upload_filterbank(c, fb) < 0)
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

/* MELPIPE_CUDA_FFT: auto (default), fused or cufft. */
static int choose_path(cu_ctx *c)
{
	const char *e = getenv(MEL_CUDA_ENV_FFT);
	int ok = mel_cuda_fused_ok(c->p.n_fft);

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
	if (!strcmp(e, "fused"))
		set_err(c, "%s=fused: the fused kernel needs n_fft a power of "
			"two in %u..%u, not %u", MEL_CUDA_ENV_FFT, MEL_FUSED_MIN,
			MEL_FUSED_MAX, c->p.n_fft);
	else
		set_err(c, "%s='%s': use auto, fused or cufft", MEL_CUDA_ENV_FFT,
			e);
	return -1;
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
	c->out_size = dtype_size(p->out_dtype);
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

/* The benchmark hook (see cuda_mel.h). */
CU_EXPORT int mel_cuda_time_kernels(mel_backend *be, mel_batch *b, int reps,
				    float *ms)
{
	cu_ctx *c = (cu_ctx *)be->ctx;
	cudaEvent_t *ev = NULL;
	cu_batch *cb;
	int made = 0, ret = -1;

	if (select_device(c) < 0)
		return -1;
	cb = find_batch(c, b);
	if (reps < 1 || !cb || !cb->submitted || cb->in_flight) {
		set_err(c, "time: the batch must have been submitted and "
			"waited for, reps >= 1");
		return -1;
	}
	ev = (cudaEvent_t *)calloc((size_t)reps + 1, sizeof(*ev));
	if (!ev) {
		set_err(c, "time: out of memory");
		return -1;
	}
	for (; made <= reps; made++)
		if (cu_ok(c, cudaEventCreate(&ev[made]), "cudaEventCreate") < 0)
			goto out;
	if (cu_ok(c, cudaEventRecord(ev[0], cb->stream), "cudaEventRecord") <
	    0)
		goto out;
	for (int i = 0; i < reps; i++)
		if (enqueue_work(c, cb, W_COMPUTE) < 0 ||
		    cu_ok(c, cudaEventRecord(ev[i + 1], cb->stream),
			  "cudaEventRecord") < 0)
			goto out;
	if (cu_ok(c, cudaEventSynchronize(ev[reps]),
		  "cudaEventSynchronize (timed kernels)") < 0)
		goto out;
	for (int i = 0; i < reps; i++)
		if (cu_ok(c, cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]),
			  "cudaEventElapsedTime") < 0)
			goto out;
	ret = 0;
out:
	for (int i = 0; i < made; i++)
		cudaEventDestroy(ev[i]);
	free(ev);
	return ret;
}
