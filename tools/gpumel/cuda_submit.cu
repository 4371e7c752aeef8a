/*
 * cuda_submit.cu - a batch's work. submit checks the records against the
 * batch's buffers, builds the frame tables and enqueues on the batch's
 * stream:
 *
 *   H2D records + frame tables + samples -> kernels -> D2H features -> event
 *
 * and returns; wait blocks on the oldest batch's event (blocking sync: the
 * CPU core is left to the pipe threads).
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
 * Also the benchmark hook, which reruns a batch's kernels alone.
 */
#include <stdlib.h>
#include <string.h>

#include "../../lib/rec.h"
#include "cuda_backend.h"

/* The parts of a batch's work (enqueue_work). W_CRC: the payloads' CRCs,
 * computed where they landed and copied back to h_crc. */
enum { W_IN = 1, W_COMPUTE = 2, W_OUT = 4, W_ALL = 7, W_CRC = 8 };

static int bad_record(cu_ctx *c, size_t r, const mel_rec *R,
		      const char *what)
{
	cu_set_err(c, "batch record %zu (%u samples at %llu, %u frames at "
		"%llu): %s", r, R->n_samples, (unsigned long long)R->in_off,
		R->n_frames, (unsigned long long)R->out_off, what);
	return -1;
}

/* The batch's copies from outside h_in (sorted, apart, inside in) and
 * its payload checks (inside in), kept for enqueue_work; *end: the bytes
 * of in they reach, which the copy in covers (a windows record's payload
 * may run past its last window). */
static int check_copies(cu_ctx *c, cu_batch *cb, const mel_batch *b,
			uint64_t *end)
{
	uint64_t at = 0;

	*end = 0;
	if (b->n_crc > cb->cap_recs || (b->n_crc && b->crc != cb->h_crc)) {
		cu_set_err(c, "batch payload checks (%zu) are not what "
			"batch_alloc gave", b->n_crc);
		return -1;
	}
	for (size_t i = 0; i < b->n_copy; i++) {
		const mel_copy *k = &b->copy[i];

		if (k->off < at || k->off > cb->in_cap ||
		    k->bytes > cb->in_cap - k->off || !k->src) {
			cu_set_err(c, "batch copy %zu (%llu bytes to %llu) "
				"overlaps the one before or leaves the batch",
				i, (unsigned long long)k->bytes,
				(unsigned long long)k->off);
			return -1;
		}
		at = *end = k->off + k->bytes;
	}
	for (size_t i = 0; i < b->n_crc; i++) {
		const mel_crc *k = &b->crc[i];

		if (k->off > cb->in_cap || k->len > cb->in_cap - k->off) {
			cu_set_err(c, "payload check %zu (%llu bytes at %llu) "
				"outside the batch's samples", i,
				(unsigned long long)k->len,
				(unsigned long long)k->off);
			return -1;
		}
		if (k->off + k->len > *end)
			*end = k->off + k->len;
	}
	cb->copy = b->copy;
	cb->n_copy = b->n_copy;
	cb->n_crc = b->n_crc;
	return 0;
}

/* Checks every record against the buffers (the kernels trust them), builds
 * the frame tables and the batch's shape. */
static int prepare(cu_ctx *c, cu_batch *cb, const mel_batch *b)
{
	size_t esz = cu_dtype_size(b->in_dtype);
	uint64_t in_elems, out_elems, F = 0, in_end = 0, out_end = 0;
	uint64_t copies_end;
	uint32_t *base = cb->h_tab, *frec = cb->h_tab + b->n;

	if (b->in_dtype != REC_S16 && b->in_dtype != REC_F32) {
		cu_set_err(c, "batch input type %d: the CUDA backend takes s16 "
			"or f32", b->in_dtype);
		return -1;
	}
	if (b->rec != cb->h_rec || b->out != cb->h_out || b->n > cb->cap_recs) {
		cu_set_err(c, "batch buffers or record count (%zu) are not "
			"what batch_alloc gave", b->n);
		return -1;
	}
	in_elems = cb->in_cap / esz;
	out_elems = cb->out_cap / c->out_size;
	if (check_copies(c, cb, b, &copies_end) < 0)
		return -1;
	for (size_t r = 0; r < b->n; r++) {
		const mel_rec *R = &b->rec[r];
		uint64_t cells = (uint64_t)mel_n_rows(&c->p) * R->n_frames;

		if (R->n_frames != mel_rec_frames(&c->p, R))
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
	cb->shape.in_bytes = in_end * esz > copies_end ? in_end * esz
							: copies_end;
	cb->shape.out_bytes = out_end * c->out_size;
	/* a batch with copies from outside h_in (or CRCs) runs its input
	 * directly, so that the graph holds what every batch repeats */
	cb->shape.parts = cb->n_copy || cb->n_crc ? W_COMPUTE | W_OUT : W_ALL;
	if (!c->fused && F && cu_ensure_plans(c, cb, (uint32_t)F) < 0)
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
	if (mel_clamps(p))
		a->rec_key = cb->d_key;
	/* fbank scales the samples itself (md_kaldi_frame) */
	a->win = cb->shape.in_dtype == REC_S16 && p->feature != MEL_FEAT_FBANK ?
		 c->d_win16 : c->d_win32;
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
	mel_kargs a, m;

	kernel_args(c, cb, &a);
	if (c->p.n_mfcc) {
		/* the bands, in float, to the scratch; the DCT below */
		m = a;
		a.out = cb->d_bands;
		a.out_dtype = REC_F32;
		a.bands = a.n_bands;
	}
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
		cufftHandle h = cb->plan[cu_plan_index(cb, nf)];

		a.f0 = f0;
		a.nf = nf;
		if (cu_ok(c, mel_cuda_launch_frames(&a, s),
			  "launching the frames kernel (%u frames)", nf) < 0 ||
		    cu_fft_ok(c, cufftExecR2C(h, cb->d_frames,
					      (cufftComplex *)cb->d_spec),
			      "cufftExecR2C (%u-point, %u frames)", a.n_fft,
			      nf) < 0 ||
		    cu_ok(c, mel_cuda_launch_mel(&a, s),
			  "launching the mel kernel (%u frames)", nf) < 0)
			return -1;
	}
	if (c->p.n_mfcc) {
		m.bandsp = cb->d_bands;
		m.dct = c->d_dct;
		return cu_ok(c, mel_cuda_launch_dct(&m, F, s),
			     "launching the MFCC kernel (%u frames)", F);
	}
	if (a.rec_key && cu_ok(c, mel_cuda_launch_clamp(&a, F, s),
			       "launching the top_db kernel (%u frames)", F) <
				 0)
		return -1;
	return 0;
}

static int h2d(cu_ctx *c, cu_batch *cb, uint64_t off, const void *src,
	       uint64_t bytes, const char *what)
{
	return cu_ok(c, cudaMemcpyAsync((char *)cb->d_in + off, src, bytes,
					cudaMemcpyHostToDevice, cb->stream),
		     "cudaMemcpyAsync (%s, %llu bytes)", what,
		     (unsigned long long)bytes);
}

/* Room for n parts of a batched copy. */
static int copy_parts(cu_ctx *c, cu_batch *cb, size_t n)
{
	void **d;
	const void **s;
	size_t *l;

	if (n <= cb->cp_cap)
		return 0;
	d = (void **)realloc(cb->cp_dst, n * sizeof(*d));
	if (d)
		cb->cp_dst = d;
	s = (const void **)realloc(cb->cp_src, n * sizeof(*s));
	if (s)
		cb->cp_src = s;
	l = (size_t *)realloc(cb->cp_len, n * sizeof(*l));
	if (l)
		cb->cp_len = l;
	if (!d || !s || !l) {
		cu_set_err(c, "out of memory for a batch's copies (%zu)", n);
		return -1;
	}
	cb->cp_cap = n;
	return 0;
}

static void add_part(cu_batch *cb, size_t *n, uint64_t off, const void *src,
		     uint64_t bytes)
{
	cb->cp_dst[*n] = (char *)cb->d_in + off;
	cb->cp_src[*n] = src;
	cb->cp_len[*n] = bytes;
	(*n)++;
}

/*
 * The samples to the device: h_in's, and the copies' from outside it
 * (registered rings: DMA) where they go, h_in's bytes between them. Many
 * parts go as one cudaMemcpyBatchAsync (payloads that are not neighbours
 * in their ring, as a decoding thread's leases, are one part each: tens
 * of thousands a run, a call each would cost the CPU microseconds each).
 */
static int copy_samples(cu_ctx *c, cu_batch *cb)
{
	uint64_t at = 0, end = cb->shape.in_bytes; /* covers the copies */
	struct cudaMemcpyAttributes attr;
	size_t n = 0, idx = 0;

	if (cb->n_copy == 0)
		return h2d(c, cb, 0, cb->h_in, end, "samples");
	if (copy_parts(c, cb, 2 * cb->n_copy + 1) < 0)
		return -1;
	for (size_t i = 0; i < cb->n_copy; i++) {
		const mel_copy *k = &cb->copy[i];

		if (k->off > at)
			add_part(cb, &n, at, (char *)cb->h_in + at,
				 k->off - at);
		add_part(cb, &n, k->off, k->src, k->bytes);
		at = k->off + k->bytes;
	}
	if (at < end)
		add_part(cb, &n, at, (char *)cb->h_in + at, end - at);
	if (n == 1)
		return cu_ok(c, cudaMemcpyAsync(cb->cp_dst[0], cb->cp_src[0],
						cb->cp_len[0],
						cudaMemcpyHostToDevice,
						cb->stream),
			     "cudaMemcpyAsync (samples from shared memory, "
			     "%zu bytes)", cb->cp_len[0]);
	memset(&attr, 0, sizeof(attr));
	/* the sources stay as they are until the batch is done */
	attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	attr.srcLocHint.type = cudaMemLocationTypeHost;
	attr.dstLocHint.type = cudaMemLocationTypeDevice;
	attr.dstLocHint.id = c->dev;
	return cu_ok(c, cudaMemcpyBatchAsync(cb->cp_dst, cb->cp_src,
					     cb->cp_len, n, &attr, &idx, 1,
					     cb->stream),
		     "cudaMemcpyBatchAsync (samples, %zu parts, %llu bytes)",
		     n, (unsigned long long)end);
}

/* The payloads' CRC32C on the device, back in h_crc for the host. */
static int check_payloads(cu_ctx *c, cu_batch *cb)
{
	size_t bytes = cb->n_crc * sizeof(mel_crc);
	cudaStream_t s = cb->stream;

	if (cu_ok(c, cudaMemcpyAsync(cb->d_crc, cb->h_crc, bytes,
				     cudaMemcpyHostToDevice, s),
		  "cudaMemcpyAsync (payload checks, %zu bytes)", bytes) < 0 ||
	    cu_ok(c, mel_cuda_launch_crc32c((const unsigned char *)cb->d_in,
					    cb->d_crc, (uint32_t)cb->n_crc, s),
		  "launching the CRC32C kernel (%zu payloads)", cb->n_crc) <
		    0 ||
	    cu_ok(c, cudaMemcpyAsync(cb->h_crc, cb->d_crc, bytes,
				     cudaMemcpyDeviceToHost, s),
		  "cudaMemcpyAsync (payload checks back, %zu bytes)", bytes) <
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
	if ((what & W_IN) && sh->in_bytes && copy_samples(c, cb) < 0)
		return -1;
	if ((what & W_CRC) && cb->n_crc && check_payloads(c, cb) < 0)
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
	       x->out_bytes == y->out_bytes && x->parts == y->parts;
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
	ok = enqueue_work(c, cb, cb->shape.parts) == 0;
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
	int direct = W_ALL & ~cb->shape.parts;

	/* what the graph does not hold, first: the input, the CRCs */
	if (direct && enqueue_work(c, cb, direct | W_CRC) < 0)
		return -1;
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
	return enqueue_work(c, cb, cb->shape.parts);
}

int cu_submit(mel_backend *be, mel_batch *b)
{
	cu_ctx *c = (cu_ctx *)be->ctx;
	cu_batch *cb;

	if (cu_select_device(c) < 0)
		return -1;
	if (c->count == CU_DEPTH) {
		cu_set_err(c, "submit: %d batches already in flight", CU_DEPTH);
		return -1;
	}
	cb = cu_find_batch(c, b);
	if (!cb || cb->in_flight) {
		cu_set_err(c, "submit: %s", cb ? "batch already in flight" :
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

int cu_wait(mel_backend *be, mel_batch **done)
{
	cu_ctx *c = (cu_ctx *)be->ctx;
	cu_batch *cb;

	*done = NULL;
	if (!c->count)
		return 0;
	if (cu_select_device(c) < 0)
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

/* The benchmark hook (see cuda_mel.h). */
CU_EXPORT int mel_cuda_time_kernels(mel_backend *be, mel_batch *b, int reps,
				    float *ms)
{
	cu_ctx *c = (cu_ctx *)be->ctx;
	cudaEvent_t *ev = NULL;
	cu_batch *cb;
	int made = 0, ret = -1;

	if (cu_select_device(c) < 0)
		return -1;
	cb = cu_find_batch(c, b);
	if (reps < 1 || !cb || !cb->submitted || cb->in_flight) {
		cu_set_err(c, "time: the batch must have been submitted and "
			"waited for, reps >= 1");
		return -1;
	}
	ev = (cudaEvent_t *)calloc((size_t)reps + 1, sizeof(*ev));
	if (!ev) {
		cu_set_err(c, "time: out of memory");
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
