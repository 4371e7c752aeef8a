/*
 * recmerge - merge the shard streams of one job into the whole stream.
 *
 * A job cut into N shards (wavcat --shard K/N, each shard through its
 * own stages, perhaps on other hosts) comes back together here: the
 * shards' headers are checked to agree (formats/record.md, Shard
 * streams) before anything is written, then their records are
 * interleaved in clip order, clip i from shard i mod N, each clip's
 * records as its shard gave them (windows, pieces and skipped records
 * included), into one stream with one trailer. The output is the stream
 * the job run whole gives, but for its header, which keeps each shard's
 * stages as shard_stage pairs.
 *
 * Memory is the N readers' and the writer's buffers: records are passed
 * on as they come (merge.c). A stream that breaks or ends without its
 * trailer fails the merge, and the output gets no trailer.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/opts.h"
#include "../common/notstream.h"
#include "../common/prog.h"
#include "recmerge.h"

struct options {
	int zstd;               /* zstd level of the output; 0: raw */
	char **inputs;          /* the streams as given */
	size_t n_inputs;
	struct prog_common co;  /* -o (NULL: stdout); no -j */
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... STREAM...\n"
"Merge the shard streams of one job into the stream of the whole job.\n"
"\n"
"A job cut into N shards (wavcat --shard K/N, shard K holding the clips\n"
"whose index is K modulo N) is merged back here: give every shard's\n"
"stream, in any order, as a file, a fifo, a process substitution or '-'\n"
"for standard input (once). The stream of the whole job goes to standard\n"
"output: the clips in index order, each clip's records (windows, items in\n"
"pieces, skipped records) as its shard gave them, checked as they pass.\n"
"Shards are read in turn, so memory stays the same for any number of\n"
"clips, and a slow shard holds the merge up only around its own clips.\n"
"\n"
"Every header is checked before anything is written. Refused: a stream\n"
"that is not a shard, shards of another job (job), of another number of\n"
"shards or clips, or run with other parameters (any header pair but\n"
"producer, stage and shard), a shard given twice and a missing one. A\n"
"shard that lacks one of its clips or holds another's, and a stream that\n"
"breaks or ends without its trailer, fail the merge: the output then has\n"
"no trailer (and -o FILE is not written). The output's header is shard\n"
"0's without shard; each shard's stage entries become shard_stage pairs.\n"
"\n"
"Payloads are checked and passed on as they are read; the output stores\n"
"them raw unless --zstd compresses them again.\n"
"\n"
"Options:\n"
"  -o, --output=FILE  write the stream to FILE instead of standard output\n"
"      --zstd=LEVEL   compress payloads with zstd, LEVEL 1..19 (default:\n"
"                     raw, whatever the shards stored)\n"
"  -q, --quiet        no summary line\n"
"  -v, --verbose      report, per shard, records, bytes and the time spent\n"
"                     waiting for it, and the shard waited for most\n"
"  -h, --help         show this help and exit\n"
"  -V, --version      show the version and exit\n"
"\n",
		prog_name);
	prog_usage_env(f, NULL);
	fputs(
"Exit status: 0 merged, 1 failure (shards that do not make up one job, a\n"
"bad or cut input stream, a write error), 2 usage error.\n"
"\n"
"Examples:\n"
"  recmerge <(ssh a 'wavcat --shard 0/2 DATA/ | segment --len 16000') \\\n"
"           <(ssh b 'wavcat --shard 1/2 DATA/ | segment --len 16000') |\n"
"  gpumel --n-mels 40 | h5pack -o out.h5\n"
"\n"
"  recmerge -o clips.rec shard-*.rec\n", f);
}

static void parse_args(int argc, char **argv, struct options *o)
{
	enum { OPT_ZSTD = 256 };
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "zstd", required_argument, NULL, OPT_ZSTD },
		{ NULL, 0, NULL, 0 }
	};
	int c, stdin_seen = 0;

	while ((c = prog_getopt(argc, argv, "ho:qVv", longopts)) != -1) {
		if (prog_common_opt(c, optarg, &o->co, usage))
			continue;
		if (c == OPT_ZSTD)
			o->zstd = (int)prog_arg_u64("--zstd", optarg, 1, 19);
		else /* '?': prog_getopt has said what */
			prog_usage_hint();
	}
	if (optind == argc)
		prog_usage_error("no stream to merge: give every shard's");
	o->inputs = argv + optind;
	o->n_inputs = (size_t)(argc - optind);
	for (size_t i = 0; i < o->n_inputs; i++)
		if (!strcmp(o->inputs[i], "-") && stdin_seen++)
			prog_usage_error("'-' (standard input) given twice");
}

/* Opens every stream, then reads each header in command-line order.
 * All are open before any header is waited for: a fifo's writer blocks
 * in open(2) until it has a reader, and producers that feed each other
 * (one source through tee) must all be running. */
static int open_shards(const struct options *o, struct shard *s)
{
	for (size_t i = 0; i < o->n_inputs; i++) {
		int is_stdin = !strcmp(o->inputs[i], "-");

		s[i].name = is_stdin ? "stdin" : o->inputs[i];
		s[i].fd = prog_open_input(is_stdin ? NULL : o->inputs[i]);
		if (s[i].fd < 0)
			return -1;
	}
	for (size_t i = 0; i < o->n_inputs; i++) {
		rec_reader_opts ro = { .name = s[i].name, .read_ahead = 1,
				       .data_crc = 1, .shm = prog_shm() };

		int err = rec_reader_open(&s[i].r, s[i].fd, &ro);

		if (err) {
			prog_open_failed(s[i].r, err, s[i].fd);
			return -1;
		}
	}
	return 0;
}

static void close_shards(struct shard *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		rec_reader_close(s[i].r);
		if (s[i].fd > STDIN_FILENO)
			close(s[i].fd);
	}
	free(s);
}

/* -v: per shard what was read and how long the merge waited for it. */
static void report_shards(const struct job *job)
{
	const struct shard *most = NULL;
	char b[32];

	for (uint32_t k = 0; k < job->n; k++) {
		const struct shard *s = job->by_k[k];
		double t = rec_reader_wait(s->r);

		prog_human_bytes(b, sizeof(b), rec_reader_inline_bytes(s->r));
		prog_info("shard %" PRIu32 "/%" PRIu32 " '%s': %" PRIu64
			  " %s, %" PRIu64 " %s (%s); waited %.2f s for it", k,
			  job->n, s->name, s->clips,
			  prog_plural(s->clips, "clip", "clips"),
			  rec_reader_count(s->r),
			  prog_plural(rec_reader_count(s->r), "record",
				      "records"), b, t);
		if (!most || t > rec_reader_wait(most->r))
			most = s;
	}
	prog_info("waited most for shard %" PRIu32 "/%" PRIu32 " '%s': "
		  "%.2f s", most->k, job->n, most->name,
		  rec_reader_wait(most->r));
}

static void report(const struct job *job, const rec_writer *w,
		   const struct merge_stats *st, double t_total)
{
	char out_b[32];

	if (prog_verbosity > 0) {
		report_shards(job);
		prog_human_bytes(out_b, sizeof(out_b),
				 rec_writer_inline_bytes(w));
		prog_info("wrote %" PRIu64 " %s (%s) in %.2f s; waiting on "
			  "output %.2f s", rec_writer_count(w),
			  prog_plural(rec_writer_count(w), "record", "records"),
			  out_b, t_total, rec_writer_wait(w));
		prog_report_spliced(w);
		prog_report_shm_out(w);
	}
	prog_warn("done: %" PRIu64 " %s from %" PRIu32 " %s in %" PRIu64
		  " %s, skipped %" PRIu64, job->clips,
		  prog_plural(job->clips, "clip", "clips"), job->n,
		  prog_plural(job->n, "shard", "shards"), st->records,
		  prog_plural(st->records, "record", "records"), st->skipped);
}


/* Checks every header, then opens the output and merges; the trailer
 * only when every shard was whole. */
static int run(const struct options *o, int argc, char **argv)
{
	rec_writer_opts wo = { .zstd_level = o->zstd,
			       .name = prog_output_name(o->co.output),
			       .write_behind = 1,
			       .zero_copy = prog_zero_copy(),
			       .shm = prog_shm(),
			       .shm_bytes = prog_shm_bytes() };
	struct shard *s = calloc(o->n_inputs, sizeof(*s));
	struct job job = { 0 };
	struct merge_stats st = { 0 };
	rec_writer *w = NULL;
	rec_header *h = NULL;
	double t_start = prog_now();
	int out_fd = -1, ret = EXIT_FAIL, err;

	if (!s) {
		prog_err("out of memory");
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < o->n_inputs; i++)
		s[i].fd = -1;
	if (open_shards(o, s) || shards_check(s, o->n_inputs, &job))
		goto out;
	job.output = o->co.output;
	h = shards_output_header(&job, argc, argv);
	if (!h)
		goto out;
	out_fd = prog_open_output(o->co.output);
	if (out_fd < 0)
		goto out;
	err = rec_writer_open(&w, out_fd, h, &wo);
	if (err) {
		prog_write_failed(o->co.output, w, err);
		goto out;
	}
	if (merge_clips(&job, w, &st))
		goto out;
	err = rec_writer_finish(w);
	if (err) {
		prog_write_failed(o->co.output, w, err);
		goto out;
	}
	err = prog_commit_output(out_fd, o->co.output);
	out_fd = -1;
	if (err)
		goto out;
	report(&job, w, &st, prog_now() - t_start);
	ret = EXIT_OK;
out:
	rec_writer_close(w);
	rec_header_free(h);
	prog_abort_output(out_fd);
	close_shards(s, o->n_inputs);
	free(job.by_k);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };

	prog_init("recmerge");
	parse_args(argc, argv, &o);
	if (!o.co.output)
		prog_refuse_tty(STDOUT_FILENO);
	return run(&o, argc, argv);
}
