/*
 * gpumel - the log-mel spectrogram of every clip or segment of a melpipe
 * record stream, on the GPU (gpumel-cuda.so) or on the CPU (FFTW3f).
 *
 * This file wires the parts together: the options (gpumel_opts.c), the
 * streams' headers, the backend (gpumel-cuda.so through cuda_load.c, or
 * cpu_backend.c), and the three threads that keep the pipes and the
 * compute busy at once (loop.h: pack.c reads and packs the records,
 * loop.c computes the batches and writes them out).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "../common/notstream.h"
#include "../common/prog.h"
#include "backend.h"
#include "cuda_load.h"
#include "detach.h"
#include "gpumel_opts.h"
#include "loop.h"

#define WRITE_BUFFER (4u << 20)

/* The stream's sample rate from its header; -1 after a message. */
static int stream_rate(const rec_header *h, const char *name, double *sr)
{
	const char *kind = rec_header_get(h, "kind");
	const char *rate = rec_header_get(h, "sample_rate");
	char *end;

	if (!kind || strcmp(kind, "audio")) {
		prog_err("%s: stream kind is '%s', gpumel reads 'audio' "
			 "streams", name, kind ? kind : "(none)");
		return -1;
	}
	if (!rate) {
		prog_err("%s: the stream header has no sample_rate", name);
		return -1;
	}
	errno = 0;
	*sr = strtod(rate, &end);
	if (errno || end == rate || *end || !(*sr > 0) || *sr > 1e7) {
		prog_err("%s: invalid sample_rate '%s' in the stream header",
			 name, rate);
		return -1;
	}
	return 0;
}

/* The output header: the input's pairs, kind and dtype, every mel
 * parameter, our producer and provenance entry. NULL: out of memory. */
static rec_header *output_header(const rec_header *in, const mel_params *p,
				 int argc, char **argv)
{
	rec_header *h = rec_header_dup(in);
	int e = 0;

	if (!h)
		return NULL;
	e |= rec_header_set(h, "producer", "gpumel " MELPIPE_VERSION);
	e |= rec_header_set(h, "kind", "features");
	e |= rec_header_set(h, "dtype", rec_dtype_name(p->out_dtype));
	e |= gpumel_header_params(h, p);
	e |= rec_header_add_stage(h, "gpumel", MELPIPE_VERSION, argc, argv);
	if (e) {
		rec_header_free(h);
		return NULL;
	}
	return h;
}

static void warn_empty_filters(const mel_fb *fb, const mel_params *p)
{
	uint32_t n = 0;

	for (uint32_t m = 0; m < fb->n_mels; m++)
		n += fb->count[m] == 0;
	if (n)
		prog_warn("%" PRIu32 " of %" PRIu32 " mel filters are empty "
			  "(no FFT bin between their edges: too many mels "
			  "for n_fft %" PRIu32 "); they give amin", n,
			  fb->n_mels, p->n_fft);
}

/* What an item of the input is, for the closing line: a window where
 * segment cut the clips (its header's segment_len), else a clip. */
static const char *item_name(const struct loop *lp, uint64_t n)
{
	int windows = rec_header_get(rec_reader_header(lp->rd),
				     "segment_len") != NULL;

	return windows ? prog_plural(n, "window", "windows")
		       : prog_plural(n, "clip", "clips");
}

/* -v: where the payloads that came by reference went to the device
 * from, and who checked their CRCs. */
static void report_dma(const struct loop *lp)
{
	const struct stats *st = &lp->st;
	char b[32], h[32];

	if (!lp->dma || !st->dma)
		return;
	if (st->dma_early)
		prog_info("shared memory: %" PRIu64 " %s passed on before "
			  "%s full, holding a quarter of a ring",
			  st->dma_early, prog_plural(st->dma_early, "batch",
						     "batches"),
			  prog_plural(st->dma_early, "it was", "they were"));
	prog_human_bytes(b, sizeof(b), st->dma_bytes);
	prog_human_bytes(h, sizeof(h), st->dma_host);
	if (!st->dma_host)
		prog_info("shared memory to the GPU: %" PRIu64 " %s (%s) "
			  "copied from the rings by DMA in %" PRIu64 " %s, "
			  "%s checked on the GPU", st->dma,
			  prog_plural(st->dma, "payload", "payloads"), b,
			  st->dma_copies,
			  prog_plural(st->dma_copies, "copy", "copies"),
			  prog_plural(st->dma, "its CRC", "their CRCs"));
	else
		prog_info("shared memory to the GPU: %" PRIu64 " %s (%s),"
			  " %s of them copied by the CPU (%s), %s checked on "
			  "the GPU", st->dma,
			  prog_plural(st->dma, "payload", "payloads"), b, h,
			  lp->reg_why,
			  prog_plural(st->dma, "its CRC", "their CRCs"));
}

static void report(const struct loop *lp, double t_total,
		   const struct detach *d)
{
	const struct stats *st = &lp->st;
	char in_b[32], out_b[32];

	if (prog_verbosity > 0) {
		prog_human_bytes(in_b, sizeof(in_b),
				 rec_reader_inline_bytes(lp->rd));
		prog_human_bytes(out_b, sizeof(out_b),
				 rec_writer_inline_bytes(lp->wr));
		prog_info("%s: read %" PRIu64 " %s (%s), wrote %" PRIu64
			  " %s (%s) in %.2f s", lp->be->name,
			  rec_reader_count(lp->rd),
			  prog_plural(rec_reader_count(lp->rd), "record",
				      "records"), in_b,
			  rec_writer_count(lp->wr),
			  prog_plural(rec_writer_count(lp->wr), "record",
				      "records"), out_b, t_total);
		if (st->fwindows)
			prog_info("output: the features of %" PRIu64 " windows "
				  "in %" PRIu64 " features-windows records (a "
				  "windows record's in one; format version 6)",
				  st->features, st->fwindows);
		prog_info("waiting for input %.2f s, computing %.2f s, "
			  "waiting on output %.2f s (reader, compute and "
			  "writer threads overlap; compute idle %.2f s)",
			  rec_reader_wait(lp->rd), st->t_compute,
			  rec_writer_wait(lp->wr), st->t_starved);
		prog_info("reader: %.2f s, of which waiting for input %.2f s, "
			  "for a free batch %.2f s, for its allocation %.2f s; "
			  "writer: %.2f s, of which waiting on output %.2f s",
			  st->t_reader, st->t_reader_in,
			  st->t_out_blocked, st->t_alloc, st->t_write,
			  rec_writer_wait(lp->wr));
		prog_report_spliced(lp->wr);
		prog_report_shm_in(lp->rd);
		report_dma(lp);
		/* said where the path could apply: a pipe, the path on */
		if (prog_output_is_pipe() && prog_shm())
			prog_info("output: features in the stream, not in "
				  "shared memory: shared memory carries "
				  "samples only (audio and windows records)");
		detach_note(d, lp->be->name, lp->be->exclusive);
	}
	prog_warn("done %" PRIu64 " %s, skipped %" PRIu64 " (%" PRIu64
		  " here, %" PRIu64 " from upstream)", st->features,
		  item_name(lp, st->features), st->skipped_out,
		  st->skipped_here, st->skipped_in);
}

/* Everything that the run holds, for one cleanup path. */
struct run {
	int in_fd, out_fd;
	rec_reader *rd;
	rec_writer *wr;
	rec_header *oh;
	mel_fb *fb;
	mel_backend *be;
	void *dl;
	struct cuda_warm warm;
	struct loop lp;
};

static int open_streams(struct run *r, const struct options *o,
			mel_params *p)
{
	/* the GPU checks the CRCs of payloads in shared memory where it
	 * copies them to (a CPU backend's are checked as they are packed) */
	rec_reader_opts ro = { .name = o->input ? o->input : "stdin",
			       .read_ahead = 1, .unaligned = 1,
			       .shm = prog_shm(),
			       .defer_shm_crc = o->device != DEV_CPU };
	double sr;
	int err;

	r->out_fd = prog_open_output(o->output);
	if (r->out_fd < 0)
		return -1;
	r->in_fd = prog_open_input(o->input);
	if (r->in_fd < 0)
		return -1;
	/* after the checks that exit (a terminal): not while the warm-up
	 * may be inside the CUDA runtime */
	if (o->device != DEV_CPU)
		cuda_warm_start(&r->warm, o->cuda_index);
	err = rec_reader_open(&r->rd, r->in_fd, &ro);
	if (err) {
		prog_open_failed(r->rd, err, r->in_fd);
		return -1;
	}
	if (stream_rate(rec_reader_header(r->rd), ro.name, &sr) < 0 ||
	    gpumel_resolve_rate(o, p, sr) < 0)
		return -1;
	return 0;
}

/* The backend that --device asks for; NULL after a message. */
static mel_backend *open_backend(const struct options *o,
				 const mel_params *p, const mel_fb *fb,
				 struct cuda_warm *w, void **dl)
{
	char err[512] = "";
	mel_backend *be = NULL;
	int rc;

	if (o->device != DEV_CPU) {
		rc = cuda_open(p, fb, o->cuda_index, o->batch, w, dl, &be, err,
			       sizeof(err));
		if (rc == 0)
			return be;
		if (o->device == DEV_CUDA && o->cuda_index < 0) {
			prog_err("no usable GPU for --device cuda: %s", err);
			return NULL;
		}
		if (o->device == DEV_CUDA) {
			prog_err("no usable GPU for --device cuda:%d: %s",
				 o->cuda_index, err);
			return NULL;
		}
		if (rc == CUDA_NO_DRIVER)
			prog_warn("%s; using the CPU", err);
		else
			prog_warn("no usable GPU (%s); using the CPU backend",
				  err);
	}
	if (mel_cpu_open(p, fb, o->jobs, &be, err, sizeof(err)) < 0) {
		prog_err("%s", err);
		return NULL;
	}
	return be;
}

static int open_compute(struct run *r, const struct options *o,
			const mel_params *p)
{
	if (mel_fb_build(p, &r->fb) < 0) {
		prog_err("out of memory for the mel filterbank");
		return -1;
	}
	double t0 = prog_now();

	warn_empty_filters(r->fb, p);
	r->be = open_backend(o, p, r->fb, &r->warm, &r->dl);
	if (!r->be)
		return -1;
	if (r->warm.t1 > r->warm.t0 && r->dl)
		prog_info("backend %s (started in %.2f s from gpumel's own "
			  "start; the CUDA driver and context took %.2f s, "
			  "%.2f s of it before the stream's header came)",
			  r->be->name, prog_now() - r->warm.t0,
			  r->warm.t1 - r->warm.t0,
			  t0 < r->warm.t0 ? 0.0 :
			  (t0 < r->warm.t1 ? t0 : r->warm.t1) - r->warm.t0);
	else
		prog_info("backend %s (started in %.2f s)", r->be->name,
			  prog_now() - t0);
	return 0;
}

static int open_writer(struct run *r, const struct options *o,
		       const mel_params *p, int argc, char **argv)
{
	rec_writer_opts wo = { .buffer_size = WRITE_BUFFER,
			       .name = prog_output_name(o->output),
			       .write_behind = 1,
			       .zero_copy = prog_zero_copy(),
			       /* features go in the pipe: by reference
				* h5pack's one thread would hash them, where
				* its reading thread does for the pipe
				* (docs/BENCHMARKS.md, the keyword-spotting
				* job); the shared path is for the samples */
			       .shm = 0 };
	int err;

	r->oh = output_header(rec_reader_header(r->rd), p, argc, argv);
	if (!r->oh) {
		prog_err("out of memory for the stream header");
		return -1;
	}
	err = rec_writer_open(&r->wr, r->out_fd, r->oh, &wo);
	if (err)
		return prog_write_failed(o->output, r->wr, err);
	return 0;
}

static int run_stream(struct run *r, const struct options *o,
		      const mel_params *p, const struct detach *d)
{
	struct loop *lp = &r->lp;
	double t0 = prog_now();

	lp->p = *p;
	lp->be = r->be;
	lp->rd = r->rd;
	lp->wr = r->wr;
	lp->out_path = o->output;
	lp->out_size = rec_dtype_size(p->out_dtype);
	lp->batch_recs = o->batch;
	lp->target_in = BATCH_BYTES;
	lp->dma = r->be->copies;
	if (loop_init(lp, (size_t)r->be->depth + 3) < 0) {
		prog_err("out of memory for the batches");
		return -1;
	}
	if (run_loop(lp) < 0) {
		prog_err("%s", lp->err);
		/* the other threads may still be running: see run_loop() */
		exit(EXIT_FAIL);
	}
	report(lp, prog_now() - t0, d);
	return 0;
}

/*
 * Closes the output as soon as the trailer is out (and puts -o FILE in
 * place): the next stage waits for end of input, and freeing the GPU's
 * pinned batches and its context (at exit) takes a while. Exits after a
 * message when that fails.
 */
static void close_output(struct run *r, const struct options *o)
{
	int fd = r->out_fd;

	rec_writer_close(r->wr);
	r->wr = NULL;
	r->out_fd = -1;
	if (prog_commit_output(fd, o->output) < 0)
		exit(EXIT_FAIL);
}

/* On success, when detached (detach.h): gives back the rings' slots and
 * mappings, which the stages upstream and their memory wait for, and
 * lets the waiting process exit; the GPU is released after. Not for a
 * device that admits one process at a time: the waiting process then
 * ends with this one, once the device is free for the next. */
static void run_release(struct run *r, struct detach *d, int status)
{
	if (!detach_active(d) || r->be->exclusive)
		return;
	if (r->lp.hb)
		loop_unregister(&r->lp);
	rec_reader_close(r->rd);
	r->rd = NULL;
	detach_release(d, status);
}

static void run_close(struct run *r)
{
	/* not while the warm-up thread may be inside the CUDA runtime */
	cuda_warm_close(&r->warm);
	if (r->lp.hb)
		loop_free(&r->lp);
	rec_writer_close(r->wr);
	rec_reader_close(r->rd);
	rec_header_free(r->oh);
	if (r->be)
		r->be->destroy(r->be);
	cuda_unload(r->dl);
	mel_fb_free(r->fb);
	if (r->in_fd > STDIN_FILENO)
		close(r->in_fd);
	prog_abort_output(r->out_fd);
}

/*
 * gpumel [OPTIONS] [FILE]: reads an audio record stream, writes a
 * features stream with the mel spectrogram of every audio record.
 */
int main(int argc, char **argv)
{
	struct options o;
	struct run r = { .in_fd = -1, .out_fd = -1 };
	struct detach d;
	mel_params p;
	int ret = EXIT_FAIL;

	prog_init("gpumel");
	gpumel_parse_args(argc, argv, &o);
	gpumel_resolve(&o, &p);
	/* before any thread: the GPU's warm-up starts in open_streams() */
	detach_start(&d, o.device != DEV_CPU);
	if (open_streams(&r, &o, &p) < 0 || open_compute(&r, &o, &p) < 0 ||
	    open_writer(&r, &o, &p, argc, argv) < 0 ||
	    run_stream(&r, &o, &p, &d) < 0)
		goto out;
	close_output(&r, &o);
	ret = EXIT_OK;
	run_release(&r, &d, ret);
out:
	run_close(&r);
	return ret;
}
