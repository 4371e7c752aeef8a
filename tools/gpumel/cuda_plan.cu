/*
 * cuda_plan.cu - the cuFFT path of a batch: its frames run in chunks
 * through scratch memory of about CU_SCRATCH_BYTES (frames, then spectra),
 * each chunk through the plan for the smallest multiple of a granule of
 * frames that holds it, so that a batch needs CU_PLANS plans at most
 * whatever its frame counts; plans are made when first needed, before any
 * work is enqueued, and share one work area, since only one runs at a
 * time on the batch's stream.
 */
#include <stdlib.h>

#include "cuda_backend.h"

/* The scratch is cleared once, on the batch's stream, so that the frames a
 * partial chunk's plan reads past the end are defined. */
int cu_alloc_scratch(cu_ctx *c, cu_batch *cb)
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
	if (cu_dev_alloc(c, (void **)&cb->d_frames, fb,
			 "cuFFT input frames") < 0 ||
	    cu_dev_alloc(c, (void **)&cb->d_spec, sb,
			 "cuFFT output spectra") < 0)
		return -1;
	if (cu_ok(c, cudaMemsetAsync(cb->d_frames, 0, fb, cb->stream),
		  "cudaMemsetAsync (frames)") < 0 ||
	    cu_ok(c, cudaMemsetAsync(cb->d_spec, 0, sb, cb->stream),
		  "cudaMemsetAsync (spectra)") < 0)
		return -1;
	return 0;
}

/* the smallest granule multiple that holds nf frames */
int cu_plan_index(const cu_batch *cb, uint32_t nf)
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
	cu_dev_free(c, cb->d_work);
	cb->d_work = NULL;
	cb->work_cap = 0;
	if (cu_dev_alloc(c, &cb->d_work, ws, "the cuFFT work area") < 0)
		return -1;
	cb->work_cap = ws;
	for (int i = 0; i < CU_PLANS; i++)
		if (cb->have_plan[i] &&
		    cu_fft_ok(c, cufftSetWorkArea(cb->plan[i], cb->d_work),
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
	if (cu_fft_ok(c, cufftCreate(&h), "cufftCreate") < 0)
		return -1;
	if (cu_fft_ok(c, cufftSetAutoAllocation(h, 0),
		      "cufftSetAutoAllocation") < 0 ||
	    cu_fft_ok(c, cufftMakePlanMany64(h, 1, &n, &n, 1, n, &bins, 1,
					     bins, CUFFT_R2C, frames, &ws),
		      "cufftMakePlanMany64 (%lld-point R2C, %lld frames)", n,
		      frames) < 0 ||
	    cu_fft_ok(c, cufftSetStream(h, cb->stream), "cufftSetStream") < 0)
		goto out;
	if (ws > cb->work_cap && grow_work(c, cb, ws) < 0)
		goto out;
	if (ws && cu_fft_ok(c, cufftSetWorkArea(h, cb->d_work),
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

int cu_ensure_plans(cu_ctx *c, cu_batch *cb, uint32_t F)
{
	if (F >= cb->chunk && ensure_plan(c, cb, CU_PLANS - 1) < 0)
		return -1;
	if (F % cb->chunk &&
	    ensure_plan(c, cb, cu_plan_index(cb, F % cb->chunk)) < 0)
		return -1;
	return 0;
}
