/*
 * cuda_mock.cu - the part of the CUDA runtime and of cuFFT that the CUDA
 * backend uses, implemented on the CPU, so that the backend's host code
 * (the files tools/gpumel/cuda_backend.h lists: checks, frame tables,
 * chunks, plans, graphs, the queue of batches) runs and is tested where
 * there is no GPU.
 * Built with the host compiler into gpumel-cuda-mock.so, a test helper
 * that gpumel and gpumel-cuda-bench load like the real backend (t6000);
 * never installed.
 *
 * Faithful where it matters to the host code:
 * - streams are queues: work runs only when something waits for it
 *   (cudaEventSynchronize, cudaStreamSynchronize, cudaDeviceSynchronize),
 *   so a host that reads results before waiting reads stale data;
 * - device memory comes filled with 0xff (NaN), so output nobody wrote
 *   and input nobody copied show;
 * - kernels run through tools/gpumel/bench/cuda_emu.h (the kernels' own
 *   arithmetic), cuFFT's R2C in float64; a launch of no frames is refused
 *   as on a GPU;
 * - a plan made without auto allocation needs a work area; stream capture
 *   records the work, a graph launch replays it.
 * MELPIPE_MOCK_LOSE_AT=N makes the GPU fall off the bus at the N-th wait
 * (cudaEventSynchronize, cudaStreamSynchronize, cudaDeviceSynchronize,
 * from 1): that wait and every later wait, copy, launch and graph launch
 * fail with cudaErrorLaunchFailure, sticky as a lost context is.
 * MELPIPE_MOCK_FAIL_MALLOC=N makes the N-th cudaMalloc (from 1) fail with
 * cudaErrorMemoryAllocation; MELPIPE_MOCK_FAIL_REGISTER=1 every
 * cudaHostRegister; MELPIPE_MOCK_DEVICES=N (default 1) sets the
 * device count (0: cudaErrorNoDevice); MELPIPE_MOCK_STATS=1 prints on
 * stderr at exit how many graphs were captured and launched, cuFFT plans
 * made and run, kernels run, host memory registered and unregistered,
 * batched copies (cudaMemcpyBatchAsync) made.
 *
 * Calls come from one thread at a time, as the backend makes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cufft.h>

#include "../../tools/gpumel/bench/cuda_emu.h"

enum op_kind { OP_COPY, OP_SET, OP_FUSED, OP_FRAMES, OP_MEL, OP_CLAMP,
	       OP_DCT, OP_R2C, OP_EVENT, OP_CRC };

struct op {
	int kind;
	void *dst;
	const void *src;
	size_t n;               /* bytes (copy, set); rows (R2C) */
	int value;              /* set */
	uint32_t fft_n;         /* R2C */
	uint32_t frames;        /* clamp */
	mel_kargs a;            /* kernels */
	cudaEvent_t ev;         /* event */
};

struct oplist {
	struct op *v;
	size_t n, cap;
};

struct CUstream_st {
	struct oplist q;        /* enqueued, not yet run */
	struct oplist cap;      /* recorded by a capture */
	int capturing;
	struct CUstream_st *next;
};

struct CUevent_st {
	int done;
};

struct CUgraph_st {
	struct oplist ops;
};

struct CUgraphExec_st {
	struct oplist ops;
};

#define MOCK_PLANS 1024

struct plan {
	int used, made, autoalloc;
	uint32_t n;
	long long rows;
	size_t ws;
	void *work;
	cudaStream_t stream;
};

static struct CUstream_st *streams;
static struct plan plans[MOCK_PLANS];
static cudaError_t last_err;
static long mallocs;
/* what ran, for MELPIPE_MOCK_STATS */
static long n_graph_launches, n_captures, n_plans, n_r2c, n_kernels;
static long n_registered, n_unregistered, n_batched;

static void print_stats(void)
{
	fprintf(stderr, "cuda mock: %ld captures, %ld graph launches, %ld "
		"plans, %ld r2c, %ld kernels, %ld host registrations, %ld "
		"undone, %ld batched copies\n", n_captures, n_graph_launches,
		n_plans, n_r2c, n_kernels, n_registered, n_unregistered,
		n_batched);
}

__attribute__((constructor)) static void mock_init(void)
{
	const char *e = getenv("MELPIPE_MOCK_STATS");

	if (e && *e == '1')
		atexit(print_stats);
}

static cudaError_t fail(cudaError_t e)
{
	last_err = e;
	return e;
}

/* MELPIPE_MOCK_LOSE_AT: whether the device is gone; a wait counts. */
static int lost;
static long waits;

static int gone(int is_wait)
{
	const char *e = getenv("MELPIPE_MOCK_LOSE_AT");

	if (!lost && is_wait && e && ++waits >= atol(e))
		lost = 1;
	return lost;
}

static void push(struct oplist *l, const struct op *o)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = (struct op *)realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v) {
			fprintf(stderr, "cuda mock: out of memory\n");
			abort();
		}
	}
	l->v[l->n++] = *o;
}

static void run_crc(const struct op *o);

static void run_op(const struct op *o)
{
	switch (o->kind) {
	case OP_COPY: memcpy(o->dst, o->src, o->n); break;
	case OP_SET: memset(o->dst, o->value, o->n); break;
	case OP_FUSED: emu_fused(o->a); n_kernels++; break;
	case OP_FRAMES: emu_frames(o->a); n_kernels++; break;
	case OP_MEL: emu_mel(o->a); n_kernels++; break;
	case OP_CLAMP: emu_clamp(o->a, o->frames); n_kernels++; break;
	case OP_DCT: emu_dct(o->a, o->frames); n_kernels++; break;
	case OP_R2C:
		emu_r2c(o->fft_n, o->n, (const float *)o->src, (float *)o->dst);
		n_r2c++;
		break;
	case OP_EVENT: o->ev->done = 1; break;
	case OP_CRC: run_crc(o); n_kernels++; break;
	}
}

/* Runs the stream's queue up to and including the record of ev (all of
 * it when ev is NULL). */
static void run_stream(cudaStream_t s, cudaEvent_t ev)
{
	size_t i = 0;

	while (i < s->q.n) {
		const struct op *o = &s->q.v[i++];

		run_op(o);
		if (ev && o->kind == OP_EVENT && o->ev == ev)
			break;
	}
	memmove(s->q.v, s->q.v + i, (s->q.n - i) * sizeof(*s->q.v));
	s->q.n -= i;
}

static cudaError_t enqueue(cudaStream_t s, const struct op *o)
{
	if (!s) {
		run_op(o);
		return cudaSuccess;
	}
	push(s->capturing ? &s->cap : &s->q, o);
	return cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* Runtime: devices and errors */

static int n_devices(void)
{
	const char *e = getenv("MELPIPE_MOCK_DEVICES");

	return e ? atoi(e) : 1;
}

extern "C" cudaError_t cudaGetDeviceCount(int *count)
{
	*count = n_devices();
	return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

extern "C" cudaError_t cudaSetDevice(int device)
{
	return device >= 0 && device < n_devices() ? cudaSuccess :
						     fail(cudaErrorInvalidDevice);
}

extern "C" cudaError_t cudaDeviceGetAttribute(int *value,
					      enum cudaDeviceAttr attr,
					      int device)
{
	/* MELPIPE_MOCK_EXCLUSIVE=1: a device in exclusive-process mode */
	const char *x = getenv("MELPIPE_MOCK_EXCLUSIVE");

	*value = attr == cudaDevAttrComputeMode && x && !strcmp(x, "1") ?
		 (int)cudaComputeModeExclusiveProcess : 0;
	return device < n_devices() ? cudaSuccess :
				      fail(cudaErrorInvalidDevice);
}

extern "C" cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop,
					       int device)
{
	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "Mock GPU %d (CPU)", device);
	prop->major = 9;
	return device < n_devices() ? cudaSuccess :
				      fail(cudaErrorInvalidDevice);
}

extern "C" cudaError_t cudaGetLastError(void)
{
	cudaError_t e = last_err;

	last_err = cudaSuccess;
	return e;
}

extern "C" const char *cudaGetErrorString(cudaError_t e)
{
	switch (e) {
	case cudaSuccess: return "no error";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorNoDevice: return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice: return "invalid device ordinal";
	case cudaErrorInvalidConfiguration:
		return "invalid configuration argument";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorLaunchFailure: return "unspecified launch failure";
	default: return "mock CUDA error";
	}
}

extern "C" cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
	*free_b = (size_t)1 << 30;
	*total = (size_t)80 << 30;
	return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceSynchronize(void)
{
	if (gone(1))
		return fail(cudaErrorLaunchFailure);
	for (cudaStream_t s = streams; s; s = s->next)
		run_stream(s, NULL);
	return cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* Memory */

extern "C" cudaError_t cudaMalloc(void **p, size_t n)
{
	const char *e = getenv("MELPIPE_MOCK_FAIL_MALLOC");

	*p = NULL;
	if (e && ++mallocs == atol(e))
		return fail(cudaErrorMemoryAllocation);
	*p = malloc(n ? n : 1);
	if (!*p)
		return fail(cudaErrorMemoryAllocation);
	memset(*p, 0xff, n);
	return cudaSuccess;
}

extern "C" cudaError_t cudaFree(void *p)
{
	free(p);
	return cudaSuccess;
}

extern "C" cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
	(void)flags;
	*p = malloc(n ? n : 1);
	if (!*p)
		return fail(cudaErrorMemoryAllocation);
	memset(*p, 0xff, n);
	return cudaSuccess;
}

extern "C" cudaError_t cudaFreeHost(void *p)
{
	free(p);
	return cudaSuccess;
}

/* MELPIPE_MOCK_FAIL_REGISTER=1: cudaHostRegister fails as where
 * RLIMIT_MEMLOCK is too low (cudaErrorMemoryAllocation). */
extern "C" cudaError_t cudaHostRegister(void *p, size_t n, unsigned int flags)
{
	const char *e = getenv("MELPIPE_MOCK_FAIL_REGISTER");

	(void)flags;
	if (!p || !n)
		return fail(cudaErrorInvalidValue);
	if (e && *e == '1')
		return fail(cudaErrorMemoryAllocation);
	n_registered++;
	return cudaSuccess;
}

extern "C" cudaError_t cudaHostUnregister(void *p)
{
	if (!p)
		return fail(cudaErrorInvalidValue);
	n_unregistered++;
	return cudaSuccess;
}

extern "C" cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
				  enum cudaMemcpyKind kind)
{
	(void)kind;
	memcpy(dst, src, n);
	return cudaSuccess;
}

extern "C" cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
				       enum cudaMemcpyKind kind,
				       cudaStream_t s)
{
	struct op o = {};

	if (gone(0))
		return fail(cudaErrorLaunchFailure);

	(void)kind;
	o.kind = OP_COPY;
	o.dst = dst;
	o.src = src;
	o.n = n;
	return enqueue(s, &o);
}

/* As the runtime: every copy needs attributes, the first naming copy 0,
 * each with a source access order; the copies run in stream order. */
extern "C" cudaError_t cudaMemcpyBatchAsync(void *const *dsts,
					    const void *const *srcs,
					    const size_t *sizes, size_t count,
					    struct cudaMemcpyAttributes *attrs,
					    size_t *attrsIdxs, size_t numAttrs,
					    cudaStream_t s)
{
	if (gone(0))
		return fail(cudaErrorLaunchFailure);
	if (count == 0 || !dsts || !srcs || !sizes || !attrs || !attrsIdxs ||
	    numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0)
		return fail(cudaErrorInvalidValue);
	for (size_t i = 0; i < numAttrs; i++)
		if (attrs[i].srcAccessOrder == cudaMemcpySrcAccessOrderInvalid)
			return fail(cudaErrorInvalidValue);
	n_batched++;
	for (size_t i = 0; i < count; i++) {
		cudaError_t e = cudaMemcpyAsync(dsts[i], srcs[i], sizes[i],
						cudaMemcpyHostToDevice, s);

		if (e != cudaSuccess)
			return e;
	}
	return cudaSuccess;
}

extern "C" cudaError_t cudaMemsetAsync(void *dst, int value, size_t n,
				       cudaStream_t s)
{
	struct op o = {};

	o.kind = OP_SET;
	o.dst = dst;
	o.value = value;
	o.n = n;
	return enqueue(s, &o);
}

/* ------------------------------------------------------------------ */
/* Streams, events, graphs */

extern "C" cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s,
						 unsigned int flags)
{
	(void)flags;
	*s = (cudaStream_t)calloc(1, sizeof(**s));
	if (!*s)
		return fail(cudaErrorMemoryAllocation);
	(*s)->next = streams;
	streams = *s;
	return cudaSuccess;
}

extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	if (gone(1))
		return fail(cudaErrorLaunchFailure);
	if (s->capturing)
		return fail(cudaErrorStreamCaptureUnsupported);
	run_stream(s, NULL);
	return cudaSuccess;
}

extern "C" cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	cudaStream_t *pp = &streams;

	run_stream(s, NULL);
	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp)
		*pp = s->next;
	free(s->q.v);
	free(s->cap.v);
	free(s);
	return cudaSuccess;
}

extern "C" cudaError_t cudaStreamBeginCapture(cudaStream_t s,
					      enum cudaStreamCaptureMode mode)
{
	(void)mode;
	if (s->capturing)
		return fail(cudaErrorIllegalState);
	s->capturing = 1;
	s->cap.n = 0;
	return cudaSuccess;
}

extern "C" cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
	if (!s->capturing)
		return fail(cudaErrorIllegalState);
	s->capturing = 0;
	*g = (cudaGraph_t)calloc(1, sizeof(**g));
	if (!*g)
		return fail(cudaErrorMemoryAllocation);
	for (size_t i = 0; i < s->cap.n; i++)
		push(&(*g)->ops, &s->cap.v[i]);
	s->cap.n = 0;
	n_captures++;
	return cudaSuccess;
}

extern "C" cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x,
					    cudaGraph_t g,
					    unsigned long long flags)
{
	(void)flags;
	*x = (cudaGraphExec_t)calloc(1, sizeof(**x));
	if (!*x)
		return fail(cudaErrorMemoryAllocation);
	for (size_t i = 0; i < g->ops.n; i++)
		push(&(*x)->ops, &g->ops.v[i]);
	return cudaSuccess;
}

extern "C" cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s)
{
	if (gone(0))
		return fail(cudaErrorLaunchFailure);
	for (size_t i = 0; i < x->ops.n; i++)
		enqueue(s, &x->ops.v[i]);
	n_graph_launches++;
	return cudaSuccess;
}

extern "C" cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
	free(g->ops.v);
	free(g);
	return cudaSuccess;
}

extern "C" cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
	free(x->ops.v);
	free(x);
	return cudaSuccess;
}

extern "C" cudaError_t cudaEventCreate(cudaEvent_t *ev)
{
	*ev = (cudaEvent_t)calloc(1, sizeof(**ev));
	return *ev ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

extern "C" cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev,
						unsigned int flags)
{
	(void)flags;
	return cudaEventCreate(ev);
}

extern "C" cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s)
{
	struct op o = {};

	if (s && s->capturing)
		return fail(cudaErrorStreamCaptureUnsupported);
	ev->done = 0;
	o.kind = OP_EVENT;
	o.ev = ev;
	return enqueue(s, &o);
}

extern "C" cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
	if (gone(1))
		return fail(cudaErrorLaunchFailure);
	for (cudaStream_t s = streams; s && !ev->done; s = s->next)
		for (size_t i = 0; i < s->q.n; i++)
			if (s->q.v[i].kind == OP_EVENT && s->q.v[i].ev == ev) {
				run_stream(s, ev);
				break;
			}
	return ev->done ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

extern "C" cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a,
					    cudaEvent_t b)
{
	*ms = 0.5f;
	return a->done && b->done ? cudaSuccess :
				    fail(cudaErrorNotReady);
}

extern "C" cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
	free(ev);
	return cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* The kernels (cuda_mel.h's launchers) */

static cudaError_t launch(int kind, const mel_kargs *a, uint32_t frames,
			  cudaStream_t s)
{
	struct op o = {};

	if ((kind == OP_CLAMP || kind == OP_DCT ? frames : a->nf) == 0)
		return fail(cudaErrorInvalidConfiguration);
	if (gone(0))
		return fail(cudaErrorLaunchFailure);
	o.kind = kind;
	o.a = *a;
	o.frames = frames;
	return enqueue(s, &o);
}

extern "C" cudaError_t mel_cuda_launch_fused(const mel_kargs *a,
					     cudaStream_t s)
{
	if (!mel_cuda_fused_ok(a->n_fft))
		return fail(cudaErrorInvalidValue);
	return launch(OP_FUSED, a, 0, s);
}

extern "C" cudaError_t mel_cuda_launch_frames(const mel_kargs *a,
					      cudaStream_t s)
{
	return launch(OP_FRAMES, a, 0, s);
}

extern "C" cudaError_t mel_cuda_launch_mel(const mel_kargs *a, cudaStream_t s)
{
	return launch(OP_MEL, a, 0, s);
}

extern "C" cudaError_t mel_cuda_launch_clamp(const mel_kargs *a,
					     uint32_t n_frames, cudaStream_t s)
{
	return launch(OP_CLAMP, a, n_frames, s);
}

extern "C" cudaError_t mel_cuda_launch_dct(const mel_kargs *a,
					   uint32_t n_frames, cudaStream_t s)
{
	return launch(OP_DCT, a, n_frames, s);
}

extern "C" cudaError_t mel_cuda_kernels_check(void)
{
	return cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* cuFFT */

static struct plan *plan_of(cufftHandle h)
{
	return h >= 0 && h < MOCK_PLANS && plans[h].used ? &plans[h] : NULL;
}

extern "C" cufftResult cufftCreate(cufftHandle *h)
{
	for (int i = 0; i < MOCK_PLANS; i++)
		if (!plans[i].used) {
			memset(&plans[i], 0, sizeof(plans[i]));
			plans[i].used = 1;
			plans[i].autoalloc = 1;
			*h = i;
			return CUFFT_SUCCESS;
		}
	return CUFFT_ALLOC_FAILED;
}

extern "C" cufftResult cufftSetAutoAllocation(cufftHandle h, int on)
{
	struct plan *p = plan_of(h);

	if (!p || p->made)
		return CUFFT_INVALID_PLAN;
	p->autoalloc = on;
	return CUFFT_SUCCESS;
}

/* 1-D out-of-place R2C with the basic layout only: what the backend
 * asks for. It claims a work area of 64 bytes a row so that the backend's
 * work-area code runs. */
extern "C" cufftResult cufftMakePlanMany64(cufftHandle h, int rank,
					   long long *n, long long *inembed,
					   long long istride, long long idist,
					   long long *onembed,
					   long long ostride, long long odist,
					   cufftType type, long long batch,
					   size_t *ws)
{
	struct plan *p = plan_of(h);
	long long bins = n[0] / 2 + 1;

	if (!p || p->made)
		return CUFFT_INVALID_PLAN;
	if (rank != 1 || type != CUFFT_R2C || batch < 1 || n[0] < 1 ||
	    istride != 1 || ostride != 1 || idist != n[0] || odist != bins ||
	    (inembed && inembed[0] != n[0]) || (onembed && onembed[0] != bins))
		return CUFFT_INVALID_VALUE;
	p->n = (uint32_t)n[0];
	p->rows = batch;
	p->ws = (size_t)batch * 64;
	p->made = 1;
	n_plans++;
	*ws = p->ws;
	return CUFFT_SUCCESS;
}

extern "C" cufftResult cufftSetStream(cufftHandle h, cudaStream_t s)
{
	struct plan *p = plan_of(h);

	if (!p)
		return CUFFT_INVALID_PLAN;
	p->stream = s;
	return CUFFT_SUCCESS;
}

extern "C" cufftResult cufftSetWorkArea(cufftHandle h, void *work)
{
	struct plan *p = plan_of(h);

	if (!p)
		return CUFFT_INVALID_PLAN;
	p->work = work;
	return CUFFT_SUCCESS;
}

extern "C" cufftResult cufftExecR2C(cufftHandle h, cufftReal *in,
				    cufftComplex *out)
{
	struct plan *p = plan_of(h);
	struct op o = {};

	if (!p || !p->made)
		return CUFFT_INVALID_PLAN;
	if (!p->autoalloc && p->ws && !p->work)
		return CUFFT_NO_WORKSPACE;
	o.kind = OP_R2C;
	o.src = in;
	o.dst = out;
	o.n = (size_t)p->rows;
	o.fft_n = p->n;
	enqueue(p->stream, &o);
	return CUFFT_SUCCESS;
}

extern "C" cufftResult cufftDestroy(cufftHandle h)
{
	struct plan *p = plan_of(h);

	if (!p)
		return CUFFT_INVALID_PLAN;
	p->used = 0;
	return CUFFT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* The CRC kernels (cuda_mel.h's mel_cuda_launch_crc32c): run through
 * emu_crc32c, the kernel's own split and arithmetic (cuda_crc_dev.h), when
 * something waits. src: the payloads' base; dst: the checks; n: their
 * count. */

static void run_crc(const struct op *o)
{
	emu_crc32c((const unsigned char *)o->src, (mel_crc *)o->dst,
		   (uint32_t)o->n);
}

extern "C" cudaError_t mel_cuda_launch_crc32c(const unsigned char *base,
					      mel_crc *checks, uint32_t n,
					      cudaStream_t s)
{
	struct op o = {};

	if (n == 0)
		return cudaSuccess;
	if (gone(0))
		return fail(cudaErrorLaunchFailure);
	o.kind = OP_CRC;
	o.src = base;
	o.dst = checks;
	o.n = n;
	return enqueue(s, &o);
}
