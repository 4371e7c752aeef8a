/*
 * h5pack - turn a melpipe features (or audio) stream into one HDF5 dataset
 * file laid out as formats/hdf5.md specifies.
 *
 * Rows are grouped by split, buffered and written in large chunked writes,
 * optionally compressed (gzip, or zstd through our own registration of
 * HDF5 filter 32015). The file is written under a temporary name in the
 * target's folder and renamed into place only after the stream's trailer
 * has been read and verified and the file closed and synced: a dataset at
 * the target's path is always complete (see outfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <hdf5.h>
#include <inttypes.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/opt.h"
#include "../../lib/rec.h"
#include "../common/opts.h"
#include "../common/notstream.h"
#include "../common/prog.h"
#include "../common/shards.h"
#include "h5merge.h"
#include "h5out.h"
#include "../common/outfile.h"
#include "zstd_filter.h"

#define PROGRESS_EVERY 64       /* records between looks at the clock */
/* Input bytes between writeback kicks. Counted in records (65,536) it
 * was 10 MB of the 10-second job's small rows but 500 MB of 1 s clips'
 * features, which then waited for the final sync. */
#define WRITEBACK_EVERY (16u << 20)
#define PROGRESS_INTERVAL 0.1   /* seconds between redraws */
#define MAX_DEFAULT_JOBS 8
#define H5ZSTD_PLUGIN "libh5zstd.so" /* tools/h5pack/build.mk */

struct options {
	struct prog_common co;  /* -o (required), -j (0: the default) */
	const char *input;      /* NULL: stdin */
	int merge;              /* --merge: inputs are shard files */
	char **files;           /* --merge: the shard files */
	size_t n_files;
	int no_clobber;
	int compress;           /* enum h5out_compress */
	unsigned level;
	size_t chunk_bytes;
};

struct progress {
	int on;
	double start, last;
	uint64_t expected;      /* clips, 0 when the header does not say */
	double part;            /* how far into the clip being read the
				   last record starts (0 to 1), where its
				   clip_samples says: one long clip's
				   progress is its samples' */
};

/* Compression threads unless --jobs says: zstd's default level makes
 * about 0.3-0.5 GB/s a thread, and the stream brings features at a few
 * hundred MB/s to 1 GB/s, so a few threads are plenty; more only hold
 * more chunks in memory (two per thread). */
static size_t default_jobs(void)
{
	size_t n = prog_cpus();

	return n > MAX_DEFAULT_JOBS ? MAX_DEFAULT_JOBS : n;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s -o OUT.h5 [OPTIONS] [FILE]\n"
"  or:  %s --merge -o OUT.h5 [OPTIONS] SHARD.h5...\n"
"Write a melpipe stream of features (or audio) as one HDF5 dataset file.\n"
"\n"
"Reads the stream from FILE (or standard input, also for '-'). The file has\n"
"a group per split (training, validation, testing; 'all' when the stream\n"
"has no splits) with features [N, n_mels, n_frames] in the stream's element\n"
"type and label, clip, segment, offset per row; /labels, /clips (path,\n"
"label, split, n_samples, sample_rate per clip, and source_rate and\n"
"source_channels: the file's own, before wavcat, 0 where unknown) and\n"
"/skipped (path, reason per unusable input); the stream's parameters and\n"
"provenance as root attributes. An audio stream gives rows of samples\n"
"[N, n_samples] ([N, n_samples, channels] for more than one channel).\n"
"\n"
"A stream whose header fixes no length (no wavcat --duration, no segment)\n"
"is stored ragged: features [frames, n_mels] holds every row's frames one\n"
"after another, and start and n_frames per row say where each one is; for\n"
"audio, features holds the samples, [samples] (mono) or [samples, channels],\n"
"and start and n_frames count samples. formats/hdf5.md has the details\n"
"(%s).\n"
"\n"
"Each split group also holds statistics of its stored frames, per mel bin\n"
"(per channel for audio): stats_count, stats_sum and stats_sumsq; the mean\n"
"is sum/count, the variance sumsq/count - mean^2 (melpipe's MelDataset.\n"
"stats() reads them).\n"
"\n"
"A shard stream (header shard K/N: wavcat --shard) gives a shard file: the\n"
"clips whose index is K modulo N, with their global clip indices; a shard\n"
"with no usable clip, or none at all, still gives one. --merge writes the\n"
"shard files of one job as the dataset the whole job gives: every shard\n"
"once, one job, the same parameters (recmerge's checks), rows in clip\n"
"order, statistics added, provenance of every shard.\n"
"\n"
"An item that comes in pieces (record format 3) is one row, its pieces\n"
"joined as they come; features in pieces, which gpumel leaves unclamped,\n"
"are raised here to the whole item's max - top_db (the header's top_db).\n"
"\n"
"OUT.h5 appears only once the whole stream has arrived intact and the file\n"
"is written and synced; until then it is a temporary file in the same\n"
"folder. A failed or interrupted run leaves no OUT.h5, or the previous one\n"
"untouched. An existing OUT.h5 is replaced (atomically) unless -n is given.\n"
"\n", prog_name, prog_name, prog_doc_where());
	fprintf(f,
"Options:\n"
"  -c, --compress=SPEC   none, gzip[:LEVEL] (1-9, default 4) or\n"
"                        zstd[:LEVEL] (1-22, default 3); default: none.\n"
"                        compressed datasets are byte-shuffled first.\n"
"                        zstd is HDF5 filter 32015: h5py reads it after\n"
"                        'import hdf5plugin', other HDF5 programs with\n"
"                        HDF5_PLUGIN_PATH set to melpipe's plugin folder\n"
"                        (bin/plugins in the repository; installed, the\n"
"                        lib/melpipe/hdf5-plugins beside bin/)\n"
"      --chunk-size=SIZE\n"
"                        bytes of features per chunk, 4K to 16M (default\n"
"                        1M); the unit of compression and of reads\n"
"      --merge           the arguments are the shard files of one job (any\n"
"                        order): write the whole job's dataset from them\n"
"  -j, --jobs=N          threads compressing chunks (default: the CPUs it\n"
"                        may use, at most %d; 16 at most are used, fewer\n"
"                        for chunks over 2M), and half as many (1 to 4)\n"
"                        counting statistics beside the writes of whole\n"
"                        chunks; -v says how many; the file is the same\n"
"                        for any N\n"
"  -n, --no-clobber      fail instead of replacing an existing OUT.h5\n"
"  -o, --output=OUT.h5   the dataset file to write (required)\n"
"  -q, --quiet           no warnings, no progress, no summary line\n"
"  -v, --verbose         report records, bytes and time spent at the end\n"
"  -h, --help            show this help and exit\n"
"  -V, --version         show the version and exit\n"
"\n"
"With a terminal on standard error a progress line shows clips done of\n"
"those announced, the rate and the time left; a clip being read counts\n"
"by its samples, so one long clip shows how far it has come.\n"
"\n", MAX_DEFAULT_JOBS);
	prog_usage_env(f, NULL);
	fputs(
"Exit status: 0 written, 1 failure (bad or truncated stream, write error,\n"
"a stream without a usable clip; no OUT.h5 written), 2 usage error.\n"
"Killed by SIGINT, SIGTERM, SIGHUP or SIGQUIT it removes its temporary\n"
"file and dies of the signal. Killed by SIGKILL (kill -9), or by a\n"
"crash, it cannot: the temporary file stays in OUT.h5's folder, hidden,\n"
"as .OUT.h5.h5pack-PID-HOST.XXXXXX (PID its process id, HOST a hash of\n"
"the machine's name). OUT.h5 itself is never partial: it is the previous\n"
"one, or none. The temporary file is safe to delete once that process is\n"
"gone, and the next h5pack writing OUT.h5 on this machine deletes it.\n"
"\n"
"Examples:\n"
"  wavcat --rate 16000 DATA/ | segment --len 16000 | gpumel --n-mels 40 |\n"
"  h5pack -o speech.h5\n"
"  wavcat --shard 1/4 DATA/ | gpumel | h5pack -o part1.h5   (on each host)\n"
"  h5pack --merge -o speech.h5 part0.h5 part1.h5 part2.h5 part3.h5\n", f);
}

static void parse_compress(const char *spec, struct options *o)
{
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);

	if (n == 4 && !strncmp(spec, "none", 4) && !colon) {
		o->compress = H5OUT_NONE;
	} else if (n == 4 && !strncmp(spec, "gzip", 4)) {
		o->compress = H5OUT_GZIP;
		o->level = colon ? (unsigned)prog_arg_u64("--compress gzip "
							  "level", colon + 1,
							  1, 9) : 4;
	} else if (n == 4 && !strncmp(spec, "zstd", 4)) {
		o->compress = H5OUT_ZSTD;
		o->level = colon ? (unsigned)prog_arg_u64("--compress zstd "
							  "level", colon + 1,
							  1, 22) : 3;
	} else {
		prog_usage_error("invalid value '%s' for --compress: "
				 "expected none, gzip[:LEVEL] or "
				 "zstd[:LEVEL]", spec);
	}
}

static void parse_args(int argc, char **argv, struct options *o)
{
	enum { OPT_CHUNK = 256, OPT_MERGE };
	static const struct option longopts[] = {
		{ "chunk-size", required_argument, NULL, OPT_CHUNK },
		{ "compress", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "merge", no_argument, NULL, OPT_MERGE },
		{ "no-clobber", no_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = prog_getopt(argc, argv, "c:hj:no:qVv", longopts)) != -1) {
		if (prog_common_opt(c, optarg, &o->co, usage))
			continue;
		switch (c) {
		case OPT_CHUNK:
			o->chunk_bytes = (size_t)prog_arg_size("--chunk-size",
							       optarg, 4096,
							       16u << 20);
			break;
		case 'c':
			parse_compress(optarg, o);
			break;
		case OPT_MERGE:
			o->merge = 1;
			break;
		case 'n':
			o->no_clobber = 1;
			break;
		default: /* '?': prog_getopt has said what */
			prog_usage_hint();
		}
	}
	if (!o->co.output)
		prog_usage_error("-o OUT.h5 is required");
	if (!o->co.output[0])
		prog_usage_error("-o needs a file name");
	if (o->merge) {
		if (optind == argc)
			prog_usage_error("--merge needs the shard files");
		for (int i = optind; i < argc; i++)
			if (!strcmp(argv[i], "-"))
				prog_usage_error("--merge reads files, not "
						 "standard input");
		o->files = argv + optind;
		o->n_files = (size_t)(argc - optind);
		return;
	}
	if (argc - optind > 1)
		prog_usage_error("too many arguments: one input at most");
	if (optind < argc && strcmp(argv[optind], "-"))
		o->input = argv[optind];
}

/* ------------------------------------------------------------------ */
/* Progress on a terminal */

static void progress_init(struct progress *p, uint64_t expected)
{
	p->on = prog_verbosity >= 0 && isatty(STDERR_FILENO);
	p->start = p->last = prog_now();
	p->expected = expected;
}

static void progress_draw(struct progress *p, const h5out *h, double now)
{
	struct h5out_counts c;
	uint64_t rows = 0;
	double rate, done;

	h5out_counts(h, &c);
	for (int s = 0; s < 4; s++)
		rows += c.rows[s];
	/* the clips done, the one being read counted by its samples */
	done = c.clips_seen ? (double)(c.clips_seen - 1) + p->part : 0.0;
	rate = now > p->start ? done / (now - p->start) : 0;
	fprintf(stderr, "\r%s: %" PRIu64, prog_name, c.clips_seen);
	if (p->expected)
		fprintf(stderr, "/%" PRIu64 " clips (%.0f%%)", p->expected,
			100.0 * done / (double)p->expected);
	else
		fprintf(stderr, " %s", prog_plural(c.clips_seen, "clip",
						   "clips"));
	fprintf(stderr, ", %" PRIu64 " %s, %.*f clips/s", rows,
		prog_plural(rows, "row", "rows"), rate < 10 ? 1 : 0, rate);
	if (p->expected && rate > 0 && done <= (double)p->expected) {
		double left = ((double)p->expected - done) / rate;

		fprintf(stderr, ", ETA %d:%02d", (int)left / 60,
			(int)left % 60);
	}
	fprintf(stderr, "\033[K");
	p->last = now;
}

static void progress_tick(struct progress *p, const h5out *h, uint64_t n,
			  const rec_item *it)
{
	double now;

	if (!p->on)
		return;
	p->part = it->type == REC_T_SKIPPED || !it->clip_samples ||
		it->offset >= it->clip_samples ? 0.0 :
		(double)it->offset / (double)it->clip_samples;
	/* pieces of an item are few and large: each may move the line */
	if (n % PROGRESS_EVERY && !rec_item_is_piece(it))
		return;
	now = prog_now();
	if (now - p->last >= PROGRESS_INTERVAL)
		progress_draw(p, h, now);
}

static void progress_end(struct progress *p)
{
	if (p->on)
		fprintf(stderr, "\r\033[K");
	p->on = 0;
}

/* ------------------------------------------------------------------ */

/* A number of the header, or 0 when it is absent or not a number. */
static uint64_t header_u64(const rec_header *hdr, const char *key)
{
	const char *v = rec_header_get(hdr, key);
	uint64_t n;

	if (!v || opt_parse_u64(v, 0, UINT64_MAX, 0, &n))
		return 0;
	return n;
}

static size_t segment_stages(const rec_header *hdr)
{
	size_t n = 0;

	for (size_t i = 0; i < rec_header_count(hdr, "stage"); i++)
		if (!strncmp(rec_header_get_nth(hdr, "stage", i), "segment ", 8))
			n++;
	return n;
}

/*
 * At most how many rows the stream gives, as its header tells, or 0 when
 * it does not: the per-row datasets get chunks no bigger (formats/hdf5.md).
 * Unsegmented, a record a clip. Windows of one segment stage (length L,
 * hop H) over clips of D samples: 1 + ceil((D - L) / H) a clip at most, a
 * padded or kept last window included. Several segment stages, or clips
 * of any length: not known.
 */
static uint64_t rows_expected(const rec_header *hdr, uint64_t clips)
{
	uint64_t len = header_u64(hdr, "segment_len");
	uint64_t hop = header_u64(hdr, "segment_hop");
	uint64_t dur = header_u64(hdr, "duration");
	uint64_t per_clip;

	if (!rec_header_get(hdr, "segment_len"))
		return clips;
	if (!len || !hop || !dur || segment_stages(hdr) != 1)
		return 0;
	per_clip = 1 + (dur > len ? (dur - len + hop - 1) / hop : 0);
	return per_clip > UINT64_MAX / (clips ? clips : 1) ? 0
							   : clips * per_clip;
}

/* The header's top_db, a number of dB (gpumel's floor, which h5pack
 * applies to a features item that came in pieces), or -1 when it has
 * none ('none', absent, or not a number) or when it applies to bands
 * before a DCT (feature=mfcc: gpumel clamped them, or refused the item). */
static float header_top_db(const rec_header *hdr)
{
	const char *v = rec_header_get(hdr, "top_db");
	const char *feature = rec_header_get(hdr, "feature");
	double d;

	if (!v || opt_parse_double(v, 0, FLT_MAX, &d) ||
	    (feature && !strcmp(feature, "mfcc")))
		return -1;
	return (float)d;
}

/* The writer's settings from the stream header; -1 on a stream h5pack
 * cannot turn into a dataset. */
static int stream_settings(const rec_header *hdr, const char *in_name,
			   const struct options *o, struct h5out_opts *ho)
{
	const char *kind = rec_header_get(hdr, "kind");
	const char *dtype = rec_header_get(hdr, "dtype");
	const char *splits = rec_header_get(hdr, "splits");
	const char *clips = rec_header_get(hdr, "clips");
	char *end;

	if (kind && !strcmp(kind, "features"))
		ho->kind = REC_T_FEATURES;
	else if (kind && !strcmp(kind, "audio"))
		ho->kind = REC_T_AUDIO;
	else {
		prog_err("%s: stream kind is '%s'; h5pack takes 'features' "
			 "or 'audio'", in_name, kind ? kind : "(none)");
		return -1;
	}
	ho->dtype = dtype ? rec_dtype_parse(dtype) : 0;
	if (!ho->dtype) {
		prog_err("%s: stream header has no usable dtype ('%s')",
			 in_name, dtype ? dtype : "(none)");
		return -1;
	}
	ho->splits = splits && strcmp(splits, "none");
	ho->shard_k = ho->shard_n = 0;
	if (rec_header_get(hdr, "shard") &&
	    shard_value_parse(rec_header_get(hdr, "shard"), &ho->shard_k,
			      &ho->shard_n)) {
		prog_err("%s: stream header has shard='%s', not K/N (0 <= K "
			 "< N)", in_name, rec_header_get(hdr, "shard"));
		return -1;
	}
	ho->clips_expected = 0;
	if (clips) {
		errno = 0;
		ho->clips_expected = strtoull(clips, &end, 10);
		if (errno || end == clips || *end || clips[0] == '-') {
			prog_err("%s: stream header has clips='%s', not a "
				 "count", in_name, clips);
			return -1;
		}
	}
	ho->rows_expected = rows_expected(hdr, ho->clips_expected);
	/* clips of any length: nothing cut or padded them to one */
	ho->ragged = !rec_header_get(hdr, "duration") &&
		     !rec_header_get(hdr, "segment_len");
	ho->compress = o->compress;
	ho->level = o->level;
	ho->chunk_bytes = o->chunk_bytes;
	ho->jobs = o->co.jobs ? o->co.jobs : default_jobs();
	ho->top_db = ho->kind == REC_T_FEATURES ? header_top_db(hdr) : -1;
	return 0;
}

/* The header as the file records it: h5pack is the last stage. */
static rec_header *file_header(const rec_header *in, int argc, char **argv)
{
	rec_header *h = rec_header_dup(in);

	if (h && (rec_header_set(h, "producer", "h5pack " MELPIPE_VERSION) ||
		  rec_header_add_stage(h, "h5pack", MELPIPE_VERSION, argc,
				       argv))) {
		rec_header_free(h);
		h = NULL;
	}
	if (!h)
		prog_err("out of memory");
	return h;
}

struct run_stats {
	uint64_t records;
};

static int add_row(const rec_item *win, void *h)
{
	return h5out_add(h, win) ? 1 : 0;
}

/* A windows record (segment's output) gives a row per window, as if
 * segment had copied them (segment --copy). pad holds a padded one. */
static int add_windows(h5out *h, const rec_item *it, void **pad,
		       size_t *pad_cap)
{
	int err = rec_each_window(it, pad, pad_cap, add_row, h);

	if (err < 0) /* (1: add_row failed and said why) */
		prog_err("'%.*s': %s", (int)it->key_len, it->key,
			 rec_strerror(err));
	return err ? -1 : 0;
}

static int pack_records(rec_reader *r, h5out *h, struct progress *p,
			struct run_stats *st)
{
	void *pad = NULL;
	size_t pad_cap = 0;
	rec_item it;
	uint64_t kick = WRITEBACK_EVERY;
	int ret = -1;

	for (;;) {
		int err = rec_read(r, &it);

		if (err == REC_END) {
			ret = 0;
			break;
		}
		if (err) {
			prog_err("%s", rec_reader_detail(r));
			break;
		}
		if (it.type == REC_T_WINDOWS ? add_windows(h, &it, &pad,
							   &pad_cap)
					     : h5out_add(h, &it))
			break;
		progress_tick(p, h, ++st->records, &it);
		/* the disk writes as the rows come, not all at the end */
		if (rec_reader_offset(r) >= kick) {
			outfile_writeback();
			kick = rec_reader_offset(r) + WRITEBACK_EVERY;
		}
	}
	free(pad);
	return ret;
}

/* A file without a single row is no dataset: refuse it, so that a run in
 * which every input was unusable fails (the stages before h5pack exit 0,
 * since one shard of many may hold none). A shard file is a part of one,
 * whatever it holds. */
static int check_usable(const h5out *h, const struct h5out_opts *ho,
			const char *name)
{
	struct h5out_counts c;
	uint64_t rows = 0;

	if (ho->shard_n)
		return 0;
	h5out_counts(h, &c);
	for (int s = 0; s < 4; s++)
		rows += c.rows[s];
	if (rows)
		return 0;
	if (!c.clips)
		prog_err("the stream holds no clips: not writing '%s'", name);
	else
		prog_err("no clip was usable: %s %" PRIu64 " %s skipped (why: "
			 "the warnings above, or recdump of the stream); not "
			 "writing '%s'", c.skipped == 1 ? "its" : "all",
			 c.skipped, c.skipped == 1 ? "input was" :
			 "inputs were", name);
	return -1;
}

static void summary(const char *name, const h5out *h)
{
	static const char *const names[4] = {
		"unsplit", "training", "validation", "testing"
	};
	struct h5out_counts c;
	char rows[256] = "";
	size_t len = 0;

	h5out_counts(h, &c);
	if (!c.has_group[1] && !c.has_group[2] && !c.has_group[3]) {
		snprintf(rows, sizeof(rows), "%" PRIu64 " %s", c.rows[0],
			 prog_plural(c.rows[0], "row", "rows"));
	} else {
		for (int s = 1; s < 5; s++) {
			int i = s & 3; /* training, validation, testing, all */

			if (!c.has_group[i])
				continue;
			len += (size_t)snprintf(rows + len, sizeof(rows) - len,
						"%s%" PRIu64 " %s", len ? ", " :
						"", c.rows[i], names[i]);
		}
		snprintf(rows + len, sizeof(rows) - len, " rows");
	}
	prog_warn("wrote '%s': %s from %" PRIu64 " %s, %" PRIu64
		  " skipped", name, rows, c.clips,
		  prog_plural(c.clips, "clip", "clips"), c.skipped);
}

static void report(const rec_reader *r, const h5out *h, double total,
		   double t_sync, const char *name)
{
	double t_h5 = h5out_write_time(h);
	double t_in = rec_reader_wait(r);
	size_t jobs;
	uint64_t chunks;
	double t_z = h5out_compress_time(h, &jobs, &chunks);
	double work = total - t_in - t_h5 - t_sync;
	double t_bg = h5out_write_thread_time(h);
	unsigned t_st = h5out_stats_threads(h);
	char threads[128] = "", beside[64] = "", stats[64] = "";
	struct stat sb;

	if (prog_verbosity < 1)
		return;
	if (jobs)
		snprintf(threads, sizeof(threads), " (compression threads "
			 "(%zu): %.2f s, %" PRIu64 " %s)", jobs, t_z,
			 chunks, prog_plural(chunks, "chunk", "chunks"));
	if (t_bg > 0)
		snprintf(beside, sizeof(beside), " (and %.2f s on a writing "
			 "thread)", t_bg);
	if (t_st)
		snprintf(stats, sizeof(stats), ", the statistics counted "
			 "beside on %u %s", t_st,
			 prog_plural(t_st, "thread", "threads"));
	/* the stream's bytes with each payload at its length, whether it
	 * came in the pipe or by reference, as the other stages count */
	prog_info("read %" PRIu64 " %s (%" PRIu64 " bytes), wrote %lld "
		  "bytes; waiting for input %.2f s, working %.2f s, writing "
		  "%.2f s%s%s%s, syncing to the disk %.2f s",
		  rec_reader_count(r),
		  prog_plural(rec_reader_count(r), "record", "records"),
		  rec_reader_inline_bytes(r),
		  stat(name, &sb) == 0 ? (long long)sb.st_size : -1LL,
		  t_in, work > 0 ? work : 0, t_h5, beside, stats, threads,
		  t_sync);
	prog_report_shm_in(r);
}

/* The folder of the zstd filter plugin beside this program into dir
 * (PATH_MAX bytes): bin/plugins in the build tree, or
 * PREFIX/lib/melpipe/hdf5-plugins from PREFIX/bin once installed. 0, or
 * -1 when neither holds the plugin. */
static int plugin_dir(char *dir)
{
	static const char *const beside[] = {
		"plugins", "../lib/melpipe/hdf5-plugins"
	};
	char exe[PATH_MAX], path[PATH_MAX + 64];

	if (prog_exe_dir(exe, sizeof(exe)))
		return -1;
	for (size_t i = 0; i < sizeof(beside) / sizeof(*beside); i++) {
		snprintf(path, sizeof(path), "%s/%s", exe, beside[i]);
		if (!realpath(path, dir))
			continue;
		snprintf(path, sizeof(path), "%s/" H5ZSTD_PLUGIN, dir);
		if (access(path, R_OK) == 0)
			return 0;
	}
	return -1;
}

/* Plain HDF5 readers show a zstd dataset's data as empty or fail on it:
 * say once, at the end, what reads the file. */
static void zstd_hint(const char *name)
{
	char dir[PATH_MAX];

	if (plugin_dir(dir) == 0)
		prog_warn("'%s' is zstd-compressed: read it with 'import "
			  "hdf5plugin' (h5py) or HDF5_PLUGIN_PATH=%s (any "
			  "HDF5 program)", name, dir);
	else
		prog_warn("'%s' is zstd-compressed: read it with 'import "
			  "hdf5plugin' (h5py) or HDF5_PLUGIN_PATH set to "
			  "melpipe's plugin folder (formats/hdf5.md)", name);
}

/* The clips the stream holds, as its header tells (0: not known). */
static uint64_t shard_clips(const struct h5out_opts *ho)
{
	uint64_t k = ho->shard_k, n = ho->shard_n;

	if (!n)
		return ho->clips_expected;
	return ho->clips_expected > k ? (ho->clips_expected - k + n - 1) / n
				      : 0;
}

static void merge_tick(void *arg, uint64_t clips)
{
	struct progress *p = arg;
	double now;

	if (!p->on || clips % PROGRESS_EVERY)
		return;
	now = prog_now();
	if (now - p->last >= PROGRESS_INTERVAL) {
		fprintf(stderr, "\r%s: %" PRIu64 "/%" PRIu64 " clips merged"
			"\033[K", prog_name, clips, p->expected);
		p->last = now;
	}
}

/* --merge: the shard files of one job as the whole job's dataset. */
static int run_merge(const struct options *o, int argc, char **argv)
{
	struct h5out_opts ho = { 0 };
	struct progress p = { 0 };
	struct merge m = { 0 };
	rec_header *merged = NULL, *hdr = NULL;
	h5out *h = NULL;
	double t_start = prog_now();
	int ret = EXIT_FAIL, have_out = 0;

	h5_catch_errors();
	if (merge_open(&m, o->files, o->n_files))
		goto out;
	merged = merge_header(&m);
	if (!merged || stream_settings(merged, o->files[0], o, &ho))
		goto out;
	ho.top_db = -1;         /* the rows are stored: raised already */
	ho.stats_given = 1;     /* the shards' are added */
	hdr = file_header(merged, argc, argv);
	if (!hdr || outfile_open(o->co.output, o->no_clobber))
		goto out;
	have_out = 1;
	if (h5out_create(&h, outfile_path(), o->co.output, &ho))
		goto out;
	progress_init(&p, m.clips);
	if (merge_rows(&m, h, merge_tick, &p))
		goto out;
	progress_end(&p);
	if (h5out_finish(h, hdr) || check_usable(h, &ho, o->co.output) ||
	    outfile_commit())
		goto out;
	have_out = 0;
	if (prog_verbosity >= 1)
		prog_info("merged %" PRIu32 " %s of %" PRIu64 " %s in %.2f s",
			  m.n, prog_plural(m.n, "shard", "shards"), m.clips,
			  prog_plural(m.clips, "clip", "clips"),
			  prog_now() - t_start);
	summary(o->co.output, h);
	if (o->compress == H5OUT_ZSTD)
		zstd_hint(o->co.output);
	ret = EXIT_OK;
out:
	progress_end(&p);
	h5out_close(h);
	if (have_out)
		outfile_abort();
	rec_header_free(hdr);
	rec_header_free(merged);
	merge_close(&m);
	return ret;
}

static int run(const struct options *o, int argc, char **argv)
{
	const char *in_name = o->input ? o->input : "stdin";
	/* payloads at any address: h5pack copies them into its chunks
	 * (h5clamp.c's range, the one typed reader, copies them out) */
	rec_reader_opts ro = { .name = in_name, .read_ahead = 1,
			       .unaligned = 1, .shm = prog_shm() };
	struct h5out_opts ho = { 0 };
	struct run_stats st = { 0 };
	struct progress p = { 0 };
	rec_reader *r = NULL;
	rec_header *hdr = NULL;
	h5out *h = NULL;
	double t_start = prog_now(), t_sync;
	int in_fd, ret = EXIT_FAIL, err, have_out = 0;

	in_fd = prog_open_input(o->input);
	if (in_fd < 0)
		goto out;
	err = rec_reader_open(&r, in_fd, &ro);
	if (err) {
		prog_open_failed(r, err, in_fd);
		goto out;
	}
	if (stream_settings(rec_reader_header(r), in_name, o, &ho))
		goto out;
	/* nothing but h5out calls the library here (--merge reads the
	 * shards with it: no writing thread there) */
	ho.write_thread = 1;
	hdr = file_header(rec_reader_header(r), argc, argv);
	if (!hdr || outfile_open(o->co.output, o->no_clobber))
		goto out;
	have_out = 1;
	if (h5out_create(&h, outfile_path(), o->co.output, &ho))
		goto out;
	progress_init(&p, shard_clips(&ho));
	err = pack_records(r, h, &p, &st);
	progress_end(&p);
	if (err || h5out_finish(h, hdr) ||
	    check_usable(h, &ho, o->co.output))
		goto out;
	t_sync = prog_now();
	if (outfile_commit())
		goto out;
	t_sync = prog_now() - t_sync;
	have_out = 0;
	report(r, h, prog_now() - t_start, t_sync, o->co.output);
	summary(o->co.output, h);
	if (o->compress == H5OUT_ZSTD)
		zstd_hint(o->co.output);
	ret = EXIT_OK;
out:
	progress_end(&p);
	h5out_close(h);
	if (have_out)
		outfile_abort();
	rec_header_free(hdr);
	rec_reader_close(r);
	if (in_fd > STDIN_FILENO)
		close(in_fd);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o = { .compress = H5OUT_NONE, .chunk_bytes = 1u << 20 };
	int ret;

	prog_init("h5pack");
	parse_args(argc, argv, &o);
	/* after a failed write the library's teardown at exit can crash on
	 * the objects it failed to close: run it only after success (this
	 * must come before any other call initialises the library) */
	H5dont_atexit();
	/* our messages name the file and the reason (h5out.c takes them from
	 * the library's error stack); its own dumps would bury them */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (h5z_zstd_register())
		prog_die("unable to register the zstd filter with HDF5");
	if (o.compress == H5OUT_GZIP &&
	    H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0)
		prog_die("this HDF5 library has no gzip (deflate) filter");
	ret = o.merge ? run_merge(&o, argc, argv) : run(&o, argc, argv);
	if (ret == EXIT_OK)
		H5close();
	return ret;
}
