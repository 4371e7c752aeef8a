/*
 * cuda_batch.cu - a batch of the CUDA backend and everything its work
 * touches: pinned host buffers (what the host loop fills and reads),
 * device buffers of the same capacities, a stream and an event (and on the
 * cuFFT path the scratch and plans of cuda_plan.cu). batch_alloc makes
 * them, batch_free frees them; the backend's list of batches lets submit
 * find a batch from the host loop's mel_batch.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

void cu_free_batch(cu_ctx *c, cu_batch *cb)
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
			cu_fft_ok(c, cufftDestroy(cb->plan[i]), "cufftDestroy");
	cu_dev_free(c, cb->d_work);
	cu_dev_free(c, cb->d_spec);
	cu_dev_free(c, cb->d_frames);
	cu_dev_free(c, cb->d_key);
	cu_dev_free(c, cb->d_bands);
	cu_dev_free(c, cb->d_tab);
	cu_dev_free(c, cb->d_rec);
	cu_dev_free(c, cb->d_out);
	cu_dev_free(c, cb->d_in);
	cu_dev_free(c, cb->d_crc);
	cu_host_free(c, cb->h_crc);
	cu_host_free(c, cb->h_tab);
	cu_host_free(c, cb->h_rec);
	cu_host_free(c, cb->h_out);
	cu_host_free(c, cb->h_in);
	if (cb->have_event)
		cu_ok(c, cudaEventDestroy(cb->done), "cudaEventDestroy");
	if (cb->have_stream)
		cu_ok(c, cudaStreamDestroy(cb->stream), "cudaStreamDestroy");
	free(cb->cp_dst);
	free(cb->cp_src);
	free(cb->cp_len);
	free(cb);
}

cu_batch *cu_find_batch(cu_ctx *c, const mel_batch *b)
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
	 * synchronised by cu_free_batch) */
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

/* Frames a batch of these capacities can hold: every frame needs n_rows
 * (mel_n_rows) output elements of its own. (Not bounded by the input: windows of one
 * clip may share samples, so a batch's frames can cover its samples many
 * times over.) */
static uint32_t batch_max_frames(const cu_ctx *c, size_t out_cap)
{
	uint64_t mf = (uint64_t)out_cap / c->out_size / mel_n_rows(&c->p);

	if (mf > 0x7fffffffu)
		mf = 0x7fffffffu;
	return mf ? (uint32_t)mf : 1;
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
	if (cu_host_alloc(c, &cb->h_in, cb->in_cap, "batch samples") < 0 ||
	    cu_host_alloc(c, &cb->h_out, cb->out_cap, "batch features") < 0 ||
	    cu_host_alloc(c, (void **)&cb->h_rec, recs, "batch records") < 0 ||
	    cu_host_alloc(c, (void **)&cb->h_tab, tab, "frame tables") < 0 ||
	    cu_host_alloc(c, (void **)&cb->h_crc, cb->cap_recs *
			  sizeof(mel_crc), "payload checks") < 0)
		return -1;
	if (cu_dev_alloc(c, &cb->d_in, cb->in_cap, "batch samples") < 0 ||
	    cu_dev_alloc(c, &cb->d_out, cb->out_cap, "batch features") < 0 ||
	    cu_dev_alloc(c, (void **)&cb->d_rec, recs, "batch records") < 0 ||
	    cu_dev_alloc(c, (void **)&cb->d_tab, tab, "frame tables") < 0 ||
	    cu_dev_alloc(c, (void **)&cb->d_key,
			 cb->cap_recs * sizeof(uint32_t), "record maxima") < 0 ||
	    cu_dev_alloc(c, (void **)&cb->d_crc,
			 cb->cap_recs * sizeof(mel_crc), "payload checks") < 0)
		return -1;
	/* defined contents for gaps between records, should a host loop
	 * leave any, that the copy out would carry; on the batch's stream,
	 * which does not wait for the legacy default stream */
	if (cu_ok(c, cudaMemsetAsync(cb->d_out, 0, cb->out_cap, cb->stream),
		  "cudaMemsetAsync (batch features)") < 0)
		return -1;
	if (!c->fused && cu_alloc_scratch(c, cb) < 0)
		return -1;
	if (c->p.n_mfcc &&
	    cu_dev_alloc(c, (void **)&cb->d_bands, (size_t)cb->max_frames *
			 mel_n_bands(&c->p) * sizeof(float), "MFCC bands") < 0)
		return -1;
	return 0;
}

int cu_batch_alloc(mel_backend *be, mel_batch *b, size_t in_cap,
		   size_t out_cap, size_t cap_recs)
{
	cu_ctx *c = (cu_ctx *)be->ctx;
	char why[sizeof(be->err)];
	cu_batch *cb;

	if (cu_select_device(c) < 0)
		return -1;
	if (!cap_recs) {
		cu_set_err(c, "batch_alloc: a batch of 0 records");
		return -1;
	}
	cb = (cu_batch *)calloc(1, sizeof(*cb));
	if (!cb) {
		cu_set_err(c, "batch_alloc: out of memory");
		return -1;
	}
	cb->in_cap = in_cap ? in_cap : 1;
	cb->out_cap = out_cap ? out_cap : 1;
	cb->cap_recs = cap_recs;
	cb->max_frames = batch_max_frames(c, cb->out_cap);
	if (alloc_buffers(c, cb) < 0) {
		/* keep the reason: the frees may note failures of their own */
		memcpy(why, be->err, sizeof(why));
		cu_free_batch(c, cb);
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
	b->crc = cb->h_crc;
	b->n_crc = 0;
	return 0;
}

void cu_batch_free(mel_backend *be, mel_batch *b)
{
	cu_ctx *c;
	cu_batch *cb;

	if (!be || !b)
		return;
	c = (cu_ctx *)be->ctx;
	cb = cu_find_batch(c, b);
	if (!cb)
		return;
	cu_select_device(c);
	unlink_batch(c, cb);
	cu_free_batch(c, cb);
	b->in = b->out = NULL;
	b->rec = NULL;
	b->crc = NULL;
	b->n_crc = 0;
	b->in_cap = b->out_cap = b->cap_recs = b->n = 0;
}
