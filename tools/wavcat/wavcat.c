/*
 * wavcat - decode audio files into a melpipe audio record stream.
 *
 * Finds the clips named by its arguments (files, folders walked
 * recursively, lists of paths), sorts them by key, labels them and puts
 * them in splits, then decodes them on -j threads (mono, resampled,
 * padded or trimmed) and writes one record per clip, in order, on
 * standard output; a clip longer than --piece-samples as several, its
 * pieces, so that memory stays bounded whatever its length. An input
 * that cannot be used is reported and written as a skipped record, so
 * that every input is accounted for.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "../common/opts.h"
#include "../common/prog.h"
#include "wavcat.h"
#include "wavcat_opts.h"

/* Everything one run holds, for a single cleanup path. */
struct run {
	struct options o;
	struct clip_list cl;
	struct label_table lt;
	struct splitter sp;
	struct decode_cfg cfg;
	_Atomic(rec_writer *) lease_w; /* cfg.lease_to's: w once open */
	char *rate_from;         /* the clip that set the rate */
	uint64_t n_probed;       /* clips found unusable and warned about
				    while looking for the rate */
	char *first_bad;         /* --strict: the first of them, and why */
	char splits[64];
	int fd;
	rec_header *h;
	rec_writer *w;
	struct pool *pool;
	uint64_t submitted;     /* clips handed to the pool */
	uint64_t n_own;          /* the clips of this shard (all: cl.n) */
	uint64_t listed;         /* clips read from the list so far */
	uint64_t n_ok, n_skipped, clipped;
	uint64_t n_trimmed, n_padded; /* of n_ok, to --duration/--samples */
	uint64_t n_pieced, n_pieces, n_cut; /* clips in pieces, their
					       pieces, clips cut short */
	uint64_t n_samples;      /* samples written */
	double t0, t_read, t_resample, t_emit, t_wait, t_write;
	double t_feed;          /* handing clips to the pool */
	double t_job, t_header; /* the fingerprint took; the header was
				   written at (from the start) */
	uint64_t feed_batch;    /* free slots before feed() hands clips in */
	size_t window;          /* clips in flight at most (pool_window()) */
	uint64_t wakes;         /* of a sleeping decoder (pool_wakes()) */
};
/* Opens the output: -o FILE or standard output, never a terminal. */
static int open_output(struct run *r)
{
	r->fd = prog_open_output(r->o.co.output);
	if (r->fd < 0)
		return -1;
	if (r->o.co.output == NULL) {
		/* The records go to a copy of descriptor 1, and 1 itself
		 * becomes stderr: a codec library that prints to stdout
		 * (libsndfile 1.2's SDS reader does, per bad block) would
		 * otherwise write into the middle of the stream. */
		r->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (r->fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			prog_err("unable to set up standard output: %s",
				 strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Finds the inputs, their labels and splits. */
static int gather(struct run *r, int argc, char **argv)
{
	int i;

	r->cl.null_sep = r->o.null_sep;
	if ((r->o.root && inputs_set_root(&r->cl, r->o.root)) ||
	    inputs_set_excludes(&r->cl, r->o.excludes, r->o.n_excludes,
				r->o.include_underscore))
		return -1;
	for (i = optind; i < argc; i++)
		if (inputs_add_arg(&r->cl, argv[i]))
			return -1;
	if (inputs_finish(&r->cl))
		return -1;
	if (r->cl.n == 0) {
		prog_err("no audio files found in the inputs");
		return -1;
	}
	r->n_own = shard_clips(&r->o.shard, r->cl.n);
	if (r->o.no_labels)
		labels_none(&r->lt);
	else if (r->o.labels_file ? labels_from_file(&r->cl, r->o.labels_file,
						     &r->lt)
				  : labels_from_folders(&r->cl, &r->lt))
		return -1;
	return split_assign(&r->cl, &r->o.split, &r->sp, r->splits,
			    sizeof(r->splits));
}

/* Says why clip i, probed for the rate, is unusable: warned, and not
 * again when its record is written; under --strict the run stops at its
 * record (the first one), so only the first reason is kept, for when
 * none is usable. A shard says nothing of the other shards' clips: their
 * own shards do. */
static int probe_unusable(struct run *r, uint64_t i, const struct clip *c,
			  const char *why)
{
	char q[512];

	r->n_probed = i + 1;
	if (i % r->o.shard.n != r->o.shard.k)
		return 0;
	if (!r->o.strict) {
		prog_warn("'%s': %s", quote_name_buf(q, sizeof(q), c->path),
			  why);
		return 0;
	}
	if (r->first_bad == NULL &&
	    asprintf(&r->first_bad, "'%s': %s",
		     quote_name_buf(q, sizeof(q), c->path), why) < 0) {
		r->first_bad = NULL;
		prog_err("out of memory");
		return -1;
	}
	return 0;
}

/* The output rate: --rate, or the rate of the first clip that gives
 * samples as the run would decode it (the same sample type, trimming and
 * pieces: a long clip, or one cut short after some pieces, sets the rate
 * too). The first of the whole job, whatever its shard, so that every
 * shard finds the same rate. */
static int choose_rate(struct run *r)
{
	struct decode_cfg like = r->cfg;
	const char *see = r->o.strict ? "" : " (see above)";
	char q[512], why[256];
	struct clip c;
	uint64_t i;
	int got;

	if (r->o.rate) {
		r->cfg.rate = r->o.rate;
		r->cfg.resample = 1;
		return 0;
	}
	like.duration = r->o.samples;
	if (inputs_rewind(&r->cl))
		return -1;
	for (i = 0; (got = inputs_next(&r->cl, &c)) > 0; i++) {
		if (c.skip == NULL &&
		    decode_probe_rate(c.path, &like, r->o.duration_s,
				      &r->cfg.rate, why, sizeof(why)) == 0)
			break;
		if (probe_unusable(r, i, &c, c.skip ? c.skip : why))
			return -1;
	}
	if (got < 0)
		return -1;
	if (got == 0) {
		if (r->first_bad)
			prog_err("%s", r->first_bad);
		if (r->cl.n == 1)
			prog_err("no usable input: the only input is "
				 "unusable%s", see);
		else
			prog_err("no usable input: all %llu inputs are "
				 "unusable%s", (unsigned long long)r->cl.n, see);
		return -1;
	}
	r->rate_from = strdup(c.path);
	if (r->rate_from == NULL) {
		prog_err("out of memory");
		return -1;
	}
	r->cfg.rate_from = r->rate_from;
	prog_info("sample rate %lu Hz, from '%s'", (unsigned long)r->cfg.rate,
		  quote_name_buf(q, sizeof(q), c.path));
	return 0;
}

/* Sets what the decoders do: rate, length, sample type. */
static int configure(struct run *r)
{
	const struct options *o = &r->o;

	r->cfg.dtype = o->dtype;
	r->cfg.piece_samples = o->piece_samples;
	if (choose_rate(r))
		return -1;
	if (o->samples) {
		r->cfg.duration = o->samples;
	} else if (o->duration_s > 0) {
		r->cfg.duration = decode_seconds(o->duration_s, r->cfg.rate);
		if (r->cfg.duration == 0)
			prog_usage_error("--duration %g is less than one "
					 "sample at %lu Hz", o->duration_s,
					 (unsigned long)r->cfg.rate);
	}
	return 0;
}

static int header_add_u64(rec_header *h, const char *key, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return rec_header_add(h, key, buf);
}

/* The stream header (formats/record.md). */
static int make_header(struct run *r, int argc, char **argv)
{
	rec_header *h = rec_header_new();
	int err = 0;
	size_t i;

	r->h = h;
	if (h == NULL)
		return -1;
	err |= rec_header_add(h, "producer", "wavcat " MELPIPE_VERSION);
	err |= rec_header_add_stage(h, "wavcat", MELPIPE_VERSION, argc, argv);
	err |= rec_header_add(h, "kind", "audio");
	err |= header_add_u64(h, "sample_rate", r->cfg.rate);
	err |= rec_header_add(h, "dtype", rec_dtype_name(r->cfg.dtype));
	if (r->cfg.duration)
		err |= header_add_u64(h, "duration", r->cfg.duration);
	for (i = 0; i < r->lt.n; i++)
		err |= rec_header_add(h, "label", r->lt.names[i]);
	err |= rec_header_add(h, "splits", r->splits);
	err |= header_add_u64(h, "clips", r->cl.n);
	if (r->o.shard_given) {
		char v[32];

		snprintf(v, sizeof(v), "%lu/%lu", (unsigned long)r->o.shard.k,
			 (unsigned long)r->o.shard.n);
		err |= rec_header_add(h, "shard", v);
	}
	return err ? -1 : 0;
}

/* Ends the header with the job's fingerprint, which every stream of the
 * job carries, sharded or not, so that mergers can tell the shards of
 * one job from those of another: one more pass over the inputs. */
static int add_job(struct run *r)
{
	char hex[41];
	double t0 = prog_now();

	if (shard_job(&r->cl, &r->lt, &r->sp, r->h, hex))
		return -1;
	r->t_job = prog_now() - t0;
	if (rec_header_add(r->h, "job", hex)) {
		prog_err("out of memory");
		return -1;
	}
	return 0;
}

static int open_writer(struct run *r)
{
	rec_writer_opts wo = { .zstd_level = r->o.zstd,
			       .name = prog_output_name(r->o.co.output),
			       .write_behind = 1,
			       .zero_copy = prog_zero_copy(),
			       .shm = prog_shm(),
			       .shm_bytes = prog_shm_bytes() };
	int err = rec_writer_open(&r->w, r->fd, r->h, &wo);

	/* the header out now, not with the first buffer of records: every
	 * stage after this one waits for it */
	if (!err)
		err = rec_writer_flush(r->w);
	if (err)
		return prog_write_failed(r->o.co.output, r->w, err);
	r->t_header = prog_now() - r->t0;
	if (wo.shm)
		atomic_store_explicit(&r->lease_w, r->w, memory_order_release);
	return 0;
}

/* A record of clip c (number i): the fields every record of it has. */
static rec_item clip_item(const struct run *r, uint64_t i,
			  const struct clip *c)
{
	rec_item it = {
		.clip = i,
		.label = c->label,
		.sample_rate = r->cfg.rate,
		.split = c->split,
		.key = c->key,
		.key_len = strlen(c->key),
	};

	return it;
}

/* Writes it: with its payload's CRC when crc is known, from the
 * output's ring when l is a lease there (the samples a decoder copied:
 * it->data must be l->ptr). */
static int put(struct run *r, const rec_item *it, const uint32_t *crc,
	       rec_lease *l)
{
	double t0 = prog_now();
	int err = l ? rec_write_leased(r->w, it, *crc, l)
		  : crc ? rec_write_crc(r->w, it, *crc) : rec_write(r->w, it);

	r->t_write += prog_now() - t0;
	if (err)
		return prog_write_failed(r->o.co.output, r->w, err);
	return 0;
}

/* Writes samples d of clip c (number i) as an audio record: the whole
 * clip (flags 0) or a piece of it. */
static int put_samples(struct run *r, uint64_t i, const struct clip *c,
		       struct decoded *d, uint32_t flags)
{
	rec_item it = clip_item(r, i, c);

	it.type = REC_T_AUDIO;
	it.flags = flags;
	it.dtype = r->cfg.dtype;
	it.offset = d->offset;
	it.clip_samples = d->clip_samples;
	it.dim0 = (uint32_t)d->n;
	it.dim1 = 1;
	it.data = d->data;
	it.data_len = (size_t)d->n * rec_dtype_size(r->cfg.dtype);
	r->clipped += d->clipped;
	r->n_samples += d->n;
	if (d->lease.ptr)
		it.data = d->lease.ptr;
	return put(r, &it, &d->crc, d->lease.ptr ? &d->lease : NULL);
}

/* Writes the source record of clip c (number i), the file as d says
 * libsndfile found it, before the clip's first record: none when the
 * file could not be opened. */
static int put_source(struct run *r, uint64_t i, const struct clip *c,
		      const struct decoded *d)
{
	rec_item it = clip_item(r, i, c);

	if (d->source_len == 0)
		return 0;
	it.type = REC_T_SOURCE;
	it.sample_rate = 0;
	it.data = d->source;
	it.data_len = d->source_len;
	return put(r, &it, NULL, NULL);
}

/* Writes the skipped record of clip c (number i) that says why: the
 * clip itself, or the end of one cut short after kept samples. */
static int put_skipped(struct run *r, uint64_t i, const struct clip *c,
		       struct decoded *d)
{
	rec_item it = clip_item(r, i, c);
	uint64_t kept = d->offset + d->n;
	char q[1024];

	quote_name_buf(q, sizeof(q), c->path);
	if (d->status == DEC_FATAL || r->o.strict) {
		prog_err("'%s': %s", q, d->reason);
		return -1;
	}
	if (i >= r->n_probed) /* else warned by choose_rate() */
		prog_warn("'%s': %s", q, d->reason);
	/* A clip cut short: what was decoded since its last piece (or the
	 * clip's samples, when none was handed on) goes as one more piece;
	 * the skipped record then ends the item. */
	if (d->n > 0 && put_samples(r, i, c, d, REC_ITEM_MORE |
				    (d->offset > 0 ? REC_ITEM_CONT : 0)))
		return -1;
	r->n_pieces += d->offset > 0 && d->n > 0;
	r->n_cut += kept > 0;
	it.type = REC_T_SKIPPED;
	it.offset = kept;
	it.clip_samples = it.offset;
	it.data = d->reason;
	it.data_len = strlen(d->reason);
	r->n_skipped++;
	return put(r, &it, NULL, NULL);
}

/* Writes the shard's clip number n (the n-th handed to the pool) in
 * order: its pieces as they come, then its end (the whole clip, its last
 * piece, or why it was skipped), and frees its slot. Returns 0, or -1
 * when the run must stop (the slot is then left to pool_stop(): its
 * decoder may still be at work). */
static int write_clip(struct run *r, uint64_t n)
{
	uint64_t i = shard_clip_index(&r->o.shard, n); /* the job's index */
	struct job *j;
	uint32_t flags;
	int piece, err;

	for (;;) {
		j = pool_wait(r->pool, n, &piece);
		if (!piece)
			break;
		flags = REC_ITEM_MORE | (j->piece.offset ? REC_ITEM_CONT : 0);
		r->n_pieced += j->piece.offset == 0;
		r->n_pieces++;
		err = j->piece.offset ? 0 : put_source(r, i, &j->clip,
						       &j->piece);
		if (!err)
			err = put_samples(r, i, &j->clip, &j->piece, flags);
		pool_piece_done(r->pool, n);
		if (err)
			return -1;
	}
	/* a clip in one record, or skipped whole: its source first */
	if (j->out.offset == 0 && put_source(r, i, &j->clip, &j->out)) {
		err = -1;
	} else if (j->out.status != DEC_OK) {
		err = put_skipped(r, i, &j->clip, &j->out);
	} else {
		r->n_ok++;
		r->n_trimmed += j->out.fitted < 0;
		r->n_padded += j->out.fitted > 0;
		r->n_pieces += j->out.offset > 0;
		err = put_samples(r, i, &j->clip, &j->out,
				  j->out.offset ? REC_ITEM_CONT : 0);
	}
	rec_lease_drop(r->w, &j->out.lease); /* (when not written) */
	pool_release(r->pool, n);
	return err;
}

/* The decoder threads: --jobs, or fewer where the shard has fewer
 * clips. */
static size_t threads(const struct run *r)
{
	return r->o.co.jobs < r->n_own ? r->o.co.jobs : (size_t)r->n_own;
}

/* A clip's label and split, given in the decoder threads (pool.c). */
static void annotate(void *arg, struct clip *c)
{
	const struct run *r = arg;

	c->label = labels_of(&r->lt, c);
	c->split = (uint8_t)split_of(&r->sp, c);
}

/* The shard's next clip, the job's clip number want, into *c: the
 * clips of other shards before it are read from the list, never opened.
 * 1, or 0 or -1 as inputs_next(). */
static int next_own(struct run *r, uint64_t want, struct clip *c)
{
	int got;

	while ((got = inputs_next(&r->cl, c)) > 0)
		if (r->listed++ == want)
			return 1;
	return got;
}

/* Hands the pool the shard's clips after the last one handed in, while
 * it has room: once a batch's worth of slots is free (or all the clips
 * left), so that a decoder woken for them finds several (pool.c,
 * WAKE_CLIPS) rather than one a wake. Clip `submitted` is always handed
 * in before the thread waits for it: with none in the pool every slot
 * is free, and the window is four batches. */
static int feed(struct run *r)
{
	uint64_t left = r->n_own - r->submitted;
	double t0;
	struct clip c;
	int got;

	if (left == 0 || pool_room(r->pool) < (left < r->feed_batch ?
					       left : r->feed_batch))
		return 0;
	t0 = prog_now();
	while (r->submitted < r->n_own && pool_has_room(r->pool)) {
		got = next_own(r, shard_clip_index(&r->o.shard, r->submitted),
			       &c);
		if (got <= 0) {
			if (got == 0)
				prog_err("the list of inputs ended after %llu "
					 "of %llu", (unsigned long long)
					 r->listed, (unsigned long long)
					 r->cl.n);
			return -1;
		}
		if (pool_submit(r->pool, &c)) {
			prog_err("out of memory");
			return -1;
		}
		r->submitted++;
	}
	pool_wake(r->pool);
	r->t_feed += prog_now() - t0;
	return 0;
}

/* Bytes the buffers of the clips in the pool's window may hold when the
 * clips are all of one size: 16 MiB, 256 of the keyword-spotting job's
 * (32,000 bytes of samples in a 64 KiB buffer). */
#define WINDOW_BYTES ((uint64_t)16 << 20)

/*
 * Clips handed to the decoders and not yet written, at most: four a
 * decoder, and where --duration or --samples makes every clip one size,
 * up to sixteen a decoder while their buffers hold at most WINDOW_BYTES
 * (a slot keeps its buffer from clip to clip). With four a decoder, the
 * keyword-spotting job's decoders, faster than the thread writing the
 * records, ran out of clips and slept so often that waking them and
 * waiting for them were 0.3 of its 0.5 s; sixteen took 0.81 -> 0.73 s
 * off its pipeline on an H200 host (docs/BENCHMARKS.md). Clips of any
 * length keep four a decoder: a window's memory is its clips'.
 */
static size_t pool_window(const struct run *r, size_t jobs)
{
	size_t window = 4 * jobs + 4, most = 16 * jobs + 4;
	uint64_t fit;

	if (r->cfg.duration == 0 || r->cfg.duration > r->cfg.piece_samples)
		return window;
	fit = WINDOW_BYTES / decode_buffer_bytes(&r->cfg, r->cfg.duration);
	if (fit > window)
		window = fit < most ? (size_t)fit : most;
	return window;
}

/* Starts decoding the shard's clips (every clip of a whole run) on the
 * pool, the first window of them, before the output opens: the job's
 * fingerprint, which the stream's header carries, takes another pass
 * over the list, as long as the first clips take to decode. */
static int start_decoding(struct run *r)
{
	size_t jobs = threads(r), window = pool_window(r, jobs);

	if (r->n_own == 0) /* a shard may hold no clip: a valid stream */
		return 0;
	if (inputs_rewind(&r->cl))
		return -1;
	r->listed = 0;
	r->cfg.lease_to = &r->lease_w;
	r->window = window;
	r->feed_batch = window / 4; /* a quarter of the window */
	if (pool_start(&r->pool, &r->cfg, jobs, window, annotate, r)) {
		prog_err("unable to start %zu decoder threads", jobs);
		return -1;
	}
	return feed(r);
}

/* Decodes the rest of the clips and writes the records in order. */
static int decode_and_write(struct run *r)
{
	uint64_t i;
	int err = 0;

	for (i = 0; i < r->n_own && !err; i++) {
		err = feed(r);
		if (err)
			break;
		err = write_clip(r, i);
	}
	r->wakes = pool_wakes(r->pool);
	pool_stop(r->pool, &r->t_read, &r->t_resample, &r->t_emit,
		  &r->t_wait);
	r->pool = NULL;
	return err;
}

static int finish(struct run *r)
{
	double t0 = prog_now();
	int err = rec_writer_finish(r->w);

	r->t_write += prog_now() - t0;
	if (err)
		return prog_write_failed(r->o.co.output, r->w, err);
	err = prog_commit_output(r->fd, r->o.co.output);
	r->fd = -1;
	return err ? -1 : 0;
}

/* With --duration or --samples, how many clips it changed, for the
 * summary: " (3 trimmed and 2 padded to 1 s)"; else "". */
static void fit_note(const struct run *r, char *buf, size_t n)
{
	if (r->o.samples)
		snprintf(buf, n, " (%llu trimmed and %llu padded to %llu "
			 "%s)", (unsigned long long)r->n_trimmed,
			 (unsigned long long)r->n_padded,
			 (unsigned long long)r->o.samples,
			 prog_plural(r->o.samples, "sample", "samples"));
	else if (r->o.duration_s > 0)
		snprintf(buf, n, " (%llu trimmed and %llu padded to %g s)",
			 (unsigned long long)r->n_trimmed,
			 (unsigned long long)r->n_padded, r->o.duration_s);
	else
		buf[0] = '\0';
}

static void report(const struct run *r)
{
	char fit[128];

	if (r->o.shard_given)
		prog_info("shard %lu/%lu: %llu of the job's %llu %s",
			  (unsigned long)r->o.shard.k,
			  (unsigned long)r->o.shard.n,
			  (unsigned long long)r->n_own,
			  (unsigned long long)r->cl.n,
			  prog_plural(r->cl.n, "clip", "clips"));
	fit_note(r, fit, sizeof(fit));
	/* a clip cut short is in the stream (and in its skipped records):
	 * counted apart from both */
	if (r->n_cut)
		prog_warn("done %llu %s whole%s and %llu cut short (kept up to "
			  "the failure), skipped %llu",
			  (unsigned long long)r->n_ok,
			  prog_plural(r->n_ok, "clip", "clips"), fit,
			  (unsigned long long)r->n_cut,
			  (unsigned long long)(r->n_skipped - r->n_cut));
	else
		prog_warn("done %llu %s%s, skipped %llu",
			  (unsigned long long)r->n_ok,
			  prog_plural(r->n_ok, "clip", "clips"), fit,
			  (unsigned long long)r->n_skipped);
	prog_info("%llu %s, %llu %s in %.2f s",
		  (unsigned long long)rec_writer_count(r->w),
		  prog_plural(rec_writer_count(r->w), "record", "records"),
		  (unsigned long long)rec_writer_inline_bytes(r->w),
		  prog_plural(rec_writer_inline_bytes(r->w), "byte", "bytes"),
		  prog_now() - r->t0);
	/* the stages after this one wait for the header: what it waited
	 * for is most of a short run's time */
	prog_info("header written at %.2f s (the job's fingerprint took "
		  "%.2f s)", r->t_header, r->t_job);
	prog_info("%llu %s; %llu %s longer than %llu %s in %llu %s",
		  (unsigned long long)r->n_samples,
		  prog_plural(r->n_samples, "sample", "samples"),
		  (unsigned long long)r->n_pieced,
		  prog_plural(r->n_pieced, "clip", "clips"),
		  (unsigned long long)r->cfg.piece_samples,
		  prog_plural(r->cfg.piece_samples, "sample", "samples"),
		  (unsigned long long)r->n_pieces,
		  prog_plural(r->n_pieces, "piece", "pieces"));
	prog_info("threads (%zu, %zu clips in flight at most): reading and "
		  "decoding %.2f s, resampling "
		  "%.2f s, handing on pieces %.2f s; handing clips to them "
		  "%.2f s (waking one %llu %s), waiting for them %.2f s, "
		  "writing output %.2f s (of which waiting on output %.2f s)",
		  threads(r), r->window, r->t_read,
		  r->t_resample, r->t_emit, r->t_feed,
		  (unsigned long long)r->wakes,
		  prog_plural(r->wakes, "time", "times"), r->t_wait,
		  r->t_write, rec_writer_wait(r->w));
	prog_report_spliced(r->w);
	prog_report_shm_out(r->w);
	if (r->cfg.dtype == REC_S16)
		prog_info("%llu %s clipped to 16 bits",
			  (unsigned long long)r->clipped,
			  prog_plural(r->clipped, "sample", "samples"));
}

static void cleanup(struct run *r)
{
	pool_stop(r->pool, NULL, NULL, NULL, NULL);
	rec_writer_close(r->w);
	rec_header_free(r->h);
	labels_free(&r->lt);
	split_free(&r->sp);
	inputs_free(&r->cl);
	free(r->rate_from);
	free(r->first_bad);
	free(r->o.excludes);
	prog_abort_output(r->fd);
}

int main(int argc, char **argv)
{
	struct run r = { .fd = -1 };
	int failed = 1;

	prog_init("wavcat");
	r.t0 = prog_now();
	parse_options(argc, argv, &r.o);
	if (r.o.co.output == NULL)
		prog_refuse_tty(STDOUT_FILENO);
	inputs_init(&r.cl, r.o.sort_buffer, NULL);
	if (gather(&r, argc, argv) || configure(&r) || open_output(&r))
		goto out;
	prog_info("%llu %s, %zu %s, splits %s, %lu Hz, %s%s; "
		  "listed in %.2f s", (unsigned long long)r.cl.n,
		  prog_plural(r.cl.n, "input", "inputs"), r.lt.n,
		  prog_plural(r.lt.n, "label", "labels"), r.splits,
		  (unsigned long)r.cfg.rate, rec_dtype_name(r.cfg.dtype),
		  r.cfg.resample ? "" : " (not resampled)",
		  prog_now() - r.t0);
	if (make_header(&r, argc, argv)) {
		prog_err("out of memory");
		goto out;
	}
	if (start_decoding(&r) || add_job(&r) || open_writer(&r) ||
	    decode_and_write(&r) || finish(&r))
		goto out;
	report(&r);
	failed = 0;
out:
	cleanup(&r);
	return failed ? EXIT_FAIL : EXIT_OK;
}
