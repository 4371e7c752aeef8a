/*
 * cuda_backend.h - what the host files of gpumel's CUDA backend share: the
 * state of the backend and of each batch, and the functions one file
 * gives the others, each named cu_*. The files:
 *
 *   cuda_backend.cu   opening: parameters, device and context, constants;
 *                     mel_cuda_open, mel_cuda_warm, destroy
 *   cuda_error.cu     errors: the sentences in be->err, lost contexts
 *   cuda_memory.cu    device and pinned memory, named in its errors
 *   cuda_batch.cu     a batch's buffers, stream and event: batch_alloc,
 *                     batch_free
 *   cuda_plan.cu      the cuFFT path: chunks, scratch, plans, work area
 *   cuda_submit.cu    a batch's work on its stream, CUDA graphs, submit,
 *                     wait, and the benchmark hook mel_cuda_time_kernels
 *
 * (the kernels are in cuda_kernels.cu, behind cuda_mel.h). C++ compiled by
 * nvcc for gpumel-cuda.so, and by the host compiler for the mock runtime's
 * .so (tests/helper/cuda_mock.cu); included only by these files.
 */
#ifndef MELPIPE_GPUMEL_CUDA_BACKEND_H
#define MELPIPE_GPUMEL_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <cufft.h>

#include "cuda_mel.h"

/* The entry points gpumel-cuda.so exports; everything else is hidden. */
#define CU_EXPORT extern "C" __attribute__((visibility("default")))

#define CU_DEPTH 3                    /* batches in flight */
#define CU_PLANS 8                    /* cuFFT plans per batch: chunk / 8
					 granules */
#define CU_SCRATCH_BYTES (32u << 20)  /* cuFFT path: frames + spectra of
					 one chunk, about an L2's worth */

/* What a submitted batch holds; two equal shapes run the same work. */
typedef struct cu_shape {
	int in_dtype;
	size_t n;              /* records */
	uint32_t frames;
	size_t in_bytes;       /* samples to copy in */
	size_t out_bytes;      /* features to copy out */
	int parts;             /* what the graph of this shape holds (W_*) */
} cu_shape;

typedef struct cu_batch {
	struct cu_batch *next;
	mel_batch *cur;        /* as submitted: what wait() returns */
	/* pinned host buffers, handed to the host loop */
	void *h_in, *h_out;
	mel_rec *h_rec;
	uint32_t *h_tab;       /* frame_base[n], then frame_rec[frames] */
	mel_crc *h_crc;        /* payloads to check: cap_recs of them */
	/* as submitted: the copies from outside h_in, the payloads to check */
	const mel_copy *copy;
	size_t n_copy, n_crc;
	/* copy_samples's one batched copy: where each part goes, from, and
	 * its bytes (2 n_copy + 1 at most), grown as needed */
	void **cp_dst;
	const void **cp_src;
	size_t *cp_len;
	size_t cp_cap;
	/* device buffers */
	void *d_in, *d_out;
	mel_rec *d_rec;
	uint32_t *d_tab, *d_key;
	mel_crc *d_crc;
	float *d_frames, *d_spec; /* cuFFT path: one chunk of frames */
	float *d_bands;        /* MFCC: max_frames frames of n_bands */
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
	float *d_dct;          /* MFCC: [n_mfcc][n_mels] (mel_dct_build) */
	cu_batch *batches;
	cu_batch *fifo[CU_DEPTH]; /* in flight, oldest at head */
	int head, count;
} cu_ctx;

/* ------------------------------------------------------------------ */
/* cuda_backend.cu */

/* Makes the backend's device current in this thread: 0 or -1 (err set).
 * Every entry point calls it first, as the current device is per thread. */
int cu_select_device(cu_ctx *c);
/* Bytes of an element of a rec_dtype, 0 for an unknown one. */
size_t cu_dtype_size(int dtype);

/* ------------------------------------------------------------------ */
/* cuda_error.cu */

/* Formats the backend's last error (be->err). */
void cu_set_err(cu_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * 0 when e is cudaSuccess; else -1 with "DEVICE: WHAT failed: reason" in
 * err, WHAT formatted from fmt (no DEVICE before try_device has read its
 * name). An error that broke the context says so: "DEVICE: the GPU
 * stopped working: WHAT failed: reason (the CUDA context is lost: ...)".
 */
int cu_ok(cu_ctx *c, cudaError_t e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same for a cuFFT result, which does not say whether the context is
 * lost: the runtime is asked. */
int cu_fft_ok(cu_ctx *c, cufftResult r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------ */
/* cuda_memory.cu: 0 or -1 (err set, naming what the memory was for) */

/* bytes of device memory (1 for 0), *p NULL on failure. */
int cu_dev_alloc(cu_ctx *c, void **p, size_t bytes, const char *what);
/* bytes of pinned host memory (1 for 0), *p NULL on failure. */
int cu_host_alloc(cu_ctx *c, void **p, size_t bytes, const char *what);
/* Free on teardown (NULL is nothing): a failure is noted in err, as
 * nobody waits for it. */
void cu_dev_free(cu_ctx *c, void *p);
void cu_host_free(cu_ctx *c, void *p);
/* Device memory *d holding a copy of the bytes at h (pageable memory: the
 * copy may still be on its way; cudaDeviceSynchronize ends it). */
int cu_upload(cu_ctx *c, void **d, const void *h, size_t bytes,
	      const char *what);

/* ------------------------------------------------------------------ */
/* cuda_batch.cu */

/* backend.h's batch_alloc and batch_free. */
int cu_batch_alloc(mel_backend *be, mel_batch *b, size_t in_cap,
		   size_t out_cap, size_t cap_recs);
void cu_batch_free(mel_backend *be, mel_batch *b);
/* The batch whose host buffers b holds, or NULL. */
cu_batch *cu_find_batch(cu_ctx *c, const mel_batch *b);
/* Waits for cb's stream, then frees everything cb holds, and cb; accepts
 * NULL. cb must be off c->batches. */
void cu_free_batch(cu_ctx *c, cu_batch *cb);

/* ------------------------------------------------------------------ */
/* cuda_plan.cu */

/* cuFFT path: sets the batch's chunk of frames and allocates the chunk's
 * scratch (frames and spectra, cleared on the batch's stream); no plan is
 * made yet. */
int cu_alloc_scratch(cu_ctx *c, cu_batch *cb);
/* The index of the plan for a chunk of nf frames (1 <= nf <= chunk). */
int cu_plan_index(const cu_batch *cb, uint32_t nf);
/* Makes the plans a batch of F frames needs that the batch lacks. Never
 * inside a capture: it may synchronise the stream. */
int cu_ensure_plans(cu_ctx *c, cu_batch *cb, uint32_t F);

/* ------------------------------------------------------------------ */
/* cuda_submit.cu */

/* backend.h's submit and wait. */
int cu_submit(mel_backend *be, mel_batch *b);
int cu_wait(mel_backend *be, mel_batch **done);

#endif
