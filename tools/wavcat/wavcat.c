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

struct options {
	struct prog_common co;   /* -o (NULL: stdout), -j */
	uint32_t rate;           /* 0: keep the files' rate */
	double duration_s;       /* 0: not given */
	uint64_t samples;        /* 0: not given */
	uint64_t piece_samples;  /* --piece-samples */
	int dtype;
	const char *labels_file;
	int no_labels;
	struct split_opts split;
	int split_given;
	int strict;
	int zstd;
	int null_sep;
	size_t sort_buffer;      /* --sort-buffer */
	struct shard_sel shard;  /* --shard K/N; the whole run 0/1 */
	int shard_given;
	const char *root;        /* --root */
	char **excludes;         /* --exclude patterns (in argv) */
	size_t n_excludes;
	int include_underscore;
};

/* Everything one run holds, for a single cleanup path. */
struct run {
	struct options o;
	struct clip_list cl;
	struct label_table lt;
	struct splitter sp;
	struct decode_cfg cfg;
	char *rate_from;         /* the clip that set the rate */
	uint64_t n_probed;       /* clips found unusable and warned about
				    while looking for the rate */
	char *first_bad;         /* --strict: the first of them, and why */
	char splits[64];
	int fd;
	const char *out_name;
	rec_header *h;
	rec_writer *w;
	struct pool *pool;
	uint64_t n_own;          /* the clips of this shard (all: cl.n) */
	uint64_t listed;         /* clips read from the list so far */
	uint64_t n_ok, n_skipped, clipped;
	uint64_t n_pieced, n_pieces, n_cut; /* clips in pieces, their
					       pieces, clips cut short */
	uint64_t n_samples;      /* samples written */
	double t0, t_read, t_resample, t_emit, t_wait, t_write;
};

enum {
	OPT_DTYPE = 256,
	OPT_DURATION,
	OPT_EXCLUDE,
	OPT_INCLUDE_UNDERSCORE,
	OPT_LABELS,
	OPT_NO_LABELS,
	OPT_PIECE_SAMPLES,
	OPT_RATE,
	OPT_ROOT,
	OPT_SAMPLES,
	OPT_SHARD,
	OPT_SORT_BUFFER,
	OPT_SPLIT,
	OPT_STRICT,
	OPT_TESTING_LIST,
	OPT_VALIDATION_LIST,
	OPT_ZSTD
};

static const struct option long_opts[] = {
	{ "dtype", required_argument, NULL, OPT_DTYPE },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "help", no_argument, NULL, 'h' },
	{ "include-underscore", no_argument, NULL, OPT_INCLUDE_UNDERSCORE },
	{ "jobs", required_argument, NULL, 'j' },
	{ "labels", required_argument, NULL, OPT_LABELS },
	{ "no-labels", no_argument, NULL, OPT_NO_LABELS },
	{ "null", no_argument, NULL, '0' },
	{ "output", required_argument, NULL, 'o' },
	{ "piece-samples", required_argument, NULL, OPT_PIECE_SAMPLES },
	{ "quiet", no_argument, NULL, 'q' },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "samples", required_argument, NULL, OPT_SAMPLES },
	{ "shard", required_argument, NULL, OPT_SHARD },
	{ "sort-buffer", required_argument, NULL, OPT_SORT_BUFFER },
	{ "split", required_argument, NULL, OPT_SPLIT },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "testing-list", required_argument, NULL, OPT_TESTING_LIST },
	{ "validation-list", required_argument, NULL, OPT_VALIDATION_LIST },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "zstd", required_argument, NULL, OPT_ZSTD },
	{ NULL, 0, NULL, 0 }
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: wavcat [OPTION]... INPUT...\n"
"Decode audio files into a melpipe audio record stream.\n"
"\n"
"Mixes every input down to mono, resamples, pads or trims it, and writes\n"
"it as one record of a stream on standard output, sorted by key\n"
"(bytewise); a clip longer than --piece-samples comes as several, its\n"
"pieces, whatever its length. formats/record.md describes the stream\n"
"(installed in PREFIX/share/doc/melpipe).\n"
"\n"
"Inputs:\n"
"  FOLDER        every audio file under FOLDER, recursively; its key is its\n"
"                path relative to FOLDER (yes/a.wav)\n"
"  FILE          that file; its key is FILE as given, less a leading ./\n"
"  @LISTFILE     the paths in LISTFILE, one per line (files or folders, as\n"
"                above; empty lines skipped, a final CR removed); a path\n"
"                there that cannot be opened is an unusable input\n"
"  -             the same, with the list read from standard input\n"
"  Audio files in folders are the regular files with one of these\n"
"  extensions (any case), all decoded by libsndfile:\n");
	inputs_print_extensions(f, 4, 78);
	fprintf(f,
"  Names starting with '.' are ignored, as are other files (split lists,\n"
"  READMEs). Symbolic links to files are followed, links to folders are\n"
"  not. Fifos, devices and sockets are never opened: one with an audio\n"
"  name is an unusable input. A FILE or FOLDER argument that does not\n"
"  exist stops the run before anything is written, as do two different\n"
"  files under one key (A/yes/x.wav and B/yes/x.wav of 'wavcat A B').\n"
"  --root=DATA         paths under DATA (FILE, FOLDER, and in lists) are\n"
"                      taken as found in the folder DATA: keys relative to\n"
"                      it, labels from the first folder under it, its\n"
"                      split lists; a list and the folder give the same\n"
"                      stream. A path not under DATA (as written, ./ and //\n"
"                      aside) stops the run, or in a list is unusable\n"
"  --exclude=GLOB      leave out inputs whose key, or one of its leading\n"
"                      folders (yes, yes/deep for yes/deep/a.wav), matches\n"
"                      GLOB (fnmatch: * also matches /); repeatable. Left\n"
"                      out, a file is no input: no clip index, no label\n"
"  --include-underscore\n"
"                      keep the files in top folders (under an input folder\n"
"                      or --root) whose names start with '_', left out by\n"
"                      default with a note, as TensorFlow's speech_commands\n"
"                      does: _background_noise_ is no label\n"
"\n"
"Audio:\n"
"  --rate=HZ           resample every clip to HZ with soxr (high quality);\n"
"                      clips already at HZ are not touched. Without it the\n"
"                      clips keep their rate, which must then be the same\n"
"                      for all: the first usable clip sets it, and a clip at\n"
"                      another rate stops the run (exit 1)\n"
"  --duration=SECONDS  pad every clip with zeros or trim it to SECONDS\n"
"                      (after resampling); without it clips keep their\n"
"                      length (resampled: n * rate / file rate, rounded)\n"
"  --samples=N         the same, in samples\n"
"  --dtype=s16|f32     sample type (default s16: rounded to nearest and\n"
"                      clipped; -v counts the clipped samples)\n"
"  Channels are averaged into one (in double precision). 16-bit mono at\n"
"  the output rate is copied exactly; other clips not resampled are\n"
"  rounded once from their exact values.\n"
"\n");
	fprintf(f,
"Labels (an id per clip, from 0 in the bytewise order of the names):\n"
"  (default)           the clip's top folder under its input folder:\n"
"                      DATA/yes/a.wav and DATA/yes/x/b.wav are 'yes'; files\n"
"                      at the top of the folder get none. A file named by\n"
"                      path gets the folder holding it (d/yes/a.wav: 'yes')\n"
"  --labels=FILE       'path,label' lines, path as the key (yes/a.wav); the\n"
"                      path runs to the last comma, or either field may be\n"
"                      \"quoted\"; a first line 'path,label' is a heading.\n"
"                      Every label of FILE is in the table (those no input\n"
"                      gets are warned about); clips not in FILE get -1\n"
"                      (with a warning)\n"
"  --no-labels         every clip -1 (no label)\n"
"\n"
"Splits (training, validation, testing; or none):\n"
"  (default)           'lists' when validation_list.txt or testing_list.txt\n"
"                      is at the root of an input folder, else 'none'\n"
"  --split=lists       Speech Commands lists at the folder's root, naming\n"
"                      keys: validation if in validation_list.txt, else\n"
"                      testing if in testing_list.txt, else training\n"
"  --validation-list=FILE, --testing-list=FILE\n"
"                      these lists instead, for every input (implies lists)\n"
"  --split=hash:V:T    TensorFlow speech_commands which_set(): the SHA-1 of\n"
"                      the file name with '_nohash_' and what follows cut\n"
"                      off puts V%% in validation, T%% in testing, the rest\n"
"                      in training; one speaker's clips stay together\n"
"  --split=none        no splits\n"
"\n");
	fprintf(f,
"Unusable inputs: a file that cannot be opened or decoded, is empty, is\n"
"cut short or longer than its header says (WAV data chunks are checked\n"
"against the file size), holds NaN or infinite samples, or claims no or\n"
"over %u channels, or a rate of 0 or over %u Hz, is reported as\n"
"  wavcat: 'PATH': REASON\n"
"and written as a skipped record with that reason, and the run goes on.\n"
"A clip whose decoding fails after some of its pieces were written is\n"
"cut short: kept up to the failure, then that skipped record, its reason\n"
"saying how much was kept. Clips in one record are kept whole or not.\n"
"  --strict            stop at the first one instead (exit 1)\n"
"\n", WAVCAT_MAX_CHANNELS, WAVCAT_MAX_RATE);
	fprintf(f,
"Shards (one job cut into N streams that run apart, on other hosts or as\n"
"other batch jobs, and merged by recmerge into the whole run's stream;\n"
"docs/shards.md):\n"
"  --shard=K/N         decode only shard K of N, K from 0 to N-1: the clips\n"
"                      whose index is K modulo N. Every input is still\n"
"                      listed, sorted, labelled and split as in the whole\n"
"                      run, so clip indices, labels and splits are the\n"
"                      whole job's; the other shards' files are never\n"
"                      opened. The header is the whole run's (clips: the\n"
"                      job's count) and shard=K/N. A shard with no clip,\n"
"                      or none usable, is a valid stream (exit 0)\n"
"  Every shard needs the same inputs (the same files at the same paths)\n"
"  and the same options: the header's job, written by every run, sharded\n"
"  or not, is the fingerprint of the clips, labels, splits and options,\n"
"  and recmerge refuses shards whose job differs. Without --rate each\n"
"  shard decodes the job's first usable clip, whatever its shard, to learn\n"
"  the rate: --rate avoids that decode.\n"
"\n");
	fprintf(f,
"Other options:\n"
"  -0, --null          list files and standard input are NUL-separated\n"
"                      (find -print0): names may then hold newlines\n"
"  --sort-buffer=SIZE  memory for the sorted list of inputs (default 64M;\n"
"                      K/M/G suffixes, at least 4K). Past it, as sort(1)\n"
"                      does, sorted runs go to a temporary file in $TMPDIR\n"
"                      (default /tmp; unlinked at once) and are merged 16\n"
"                      at a time, with read buffers of SIZE/32: memory\n"
"                      does not grow with the number of inputs, and the\n"
"                      output is the same for any SIZE (-v says when the\n"
"                      file was used)\n"
"  -j, --jobs=N        decoder threads (default: the CPUs it may use; -v\n"
"                      says how many); the output is the same for every N\n"
"  -o, --output=FILE   write to FILE instead of standard output (it appears\n"
"                      only once the stream is complete: a failed or\n"
"                      interrupted run leaves none, or the previous FILE)\n"
"  --piece-samples=N   a clip of more than N samples (after resampling and\n"
"                      pad/trim) is written as pieces of N samples, the\n"
"                      last of 1 to N, in records flagged more/cont;\n"
"                      shorter clips are one record. Memory holds at most\n"
"                      about 5 x --jobs pieces, whatever the clips'\n"
"                      length (default 4M; K/M suffixes; at most 128M for\n"
"                      s16, 64M for f32)\n"
"  -q, --quiet         no warnings, no summary; errors only\n"
"  -v, --verbose       report counts and time spent at the end\n"
"  --zstd=LEVEL        compress payloads with zstd, LEVEL 1..19\n"
"  -h, --help          this help\n"
"  -V, --version       the version\n"
"\n"
"Exit status: 0 done (unusable inputs were reported and recorded), 1 a\n"
"failure (output, --strict, a sample rate mismatch), 2 a usage error.\n"
"\n"
"Examples:\n"
"  wavcat --rate 16000 --duration 1 speech_commands/ > clips.rec\n"
"\n"
"  wavcat --rate 4096 --duration 10 DATA/ | segment --len 512 --hop 512 |\n"
"  gpumel --n-fft 512 --hop 512 --n-mels 32 | h5pack -o out.h5\n"
"\n"
"  find DATA -name '*.flac' -print0 |\n"
"  wavcat -0 --root DATA --rate 16000 - | recdump\n"
"\n"
"  recmerge <(ssh a wavcat --shard 0/2 --rate 16000 DATA/) \\\n"
"           <(ssh b wavcat --shard 1/2 --rate 16000 DATA/) > clips.rec\n");
}

/* --shard K/N, or a usage error that says what is wrong with it. */
static void parse_shard(const char *arg, struct options *o)
{
	unsigned long n;

	switch (shard_parse(arg, &o->shard)) {
	case 0:
		o->shard_given = 1;
		return;
	case SHARD_BAD_N:
		prog_usage_error("invalid value '%s' for --shard: N, the "
				 "number of shards, must be at least 1", arg);
	case SHARD_BAD_K:
		n = strtoul(strchr(arg, '/') + 1, NULL, 10);
		prog_usage_error("invalid value '%s' for --shard: K counts "
				 "from 0, so it must be below N (0/%lu to "
				 "%lu/%lu)", arg, n, n - 1, n);
	default:
		prog_usage_error("invalid value '%s' for --shard (expected "
				 "K/N, shard K of N, K from 0 to N-1, below "
				 "2^32)", arg);
	}
}

/* Handles one of wavcat's own options; returns 0, or -1 for an unknown
 * one. */
static int parse_opt(int c, const char *arg, struct options *o)
{
	switch (c) {
	case '0':
		o->null_sep = 1;
		break;
	case OPT_DTYPE:
		o->dtype = rec_dtype_parse(arg);
		if (o->dtype != REC_S16 && o->dtype != REC_F32)
			prog_usage_error("invalid value '%s' for --dtype "
					 "(expected s16 or f32)", arg);
		break;
	case OPT_DURATION:
		o->duration_s = prog_arg_double("--duration", arg, 1e-9,
						1e7);
		break;
	case OPT_EXCLUDE:
		o->excludes[o->n_excludes++] = (char *)arg;
		break;
	case OPT_INCLUDE_UNDERSCORE:
		o->include_underscore = 1;
		break;
	case OPT_LABELS:
		o->labels_file = arg;
		break;
	case OPT_NO_LABELS:
		o->no_labels = 1;
		break;
	case OPT_PIECE_SAMPLES:
		o->piece_samples = prog_arg_size("--piece-samples", arg, 1,
						 REC_DEFAULT_MAX_DATA / 2);
		break;
	case OPT_RATE:
		o->rate = (uint32_t)prog_arg_u64("--rate", arg, 1,
						 WAVCAT_MAX_RATE);
		break;
	case OPT_ROOT:
		o->root = arg;
		break;
	case OPT_SAMPLES:
		o->samples = prog_arg_u64("--samples", arg, 1, UINT32_MAX);
		break;
	case OPT_SHARD:
		parse_shard(arg, o);
		break;
	case OPT_SORT_BUFFER:
		o->sort_buffer = (size_t)prog_arg_size("--sort-buffer", arg,
						       WAVCAT_SORT_MIN,
						       (uint64_t)1 << 40);
		break;
	case OPT_SPLIT:
		if (split_parse(arg, &o->split))
			prog_usage_error("invalid value '%s' for --split "
					 "(expected none, lists or hash:V:T "
					 "with V + T <= 100)", arg);
		o->split_given = 1;
		break;
	case OPT_STRICT:
		o->strict = 1;
		break;
	case OPT_TESTING_LIST:
		o->split.test_list = arg;
		break;
	case OPT_VALIDATION_LIST:
		o->split.val_list = arg;
		break;
	case OPT_ZSTD:
		o->zstd = (int)prog_arg_u64("--zstd", arg, 1, 19);
		break;
	default:
		return -1;
	}
	return 0;
}

/* Checks the options against each other. */
static void check_opts(const struct options *o, int argc, char **argv)
{
	int i, dashes = 0;

	if (o->duration_s > 0 && o->samples > 0)
		prog_usage_error("--duration and --samples both given");
	if (o->piece_samples > REC_DEFAULT_MAX_DATA / rec_dtype_size(o->dtype))
		prog_usage_error("--piece-samples %llu is more than a record "
				 "of %s holds (%llu samples)",
				 (unsigned long long)o->piece_samples,
				 rec_dtype_name(o->dtype),
				 (unsigned long long)(REC_DEFAULT_MAX_DATA /
				 rec_dtype_size(o->dtype)));
	if (o->labels_file && o->no_labels)
		prog_usage_error("--labels and --no-labels both given");
	if ((o->split.val_list || o->split.test_list) && o->split_given &&
	    o->split.mode != SPLIT_LISTS)
		prog_usage_error("--validation-list/--testing-list need "
				 "--split lists");
	if (optind >= argc)
		prog_usage_error("no inputs (give folders, files, @LISTFILE "
				 "or -)");
	for (i = optind; i < argc; i++) {
		if (strcmp(argv[i], "-") == 0 && ++dashes > 1)
			prog_usage_error("'-' given twice");
		if (strcmp(argv[i], "@") == 0)
			prog_usage_error("'@' without a list file name");
	}
}

static void parse_options(int argc, char **argv, struct options *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->dtype = REC_S16;
	o->piece_samples = WAVCAT_PIECE_DEFAULT;
	o->split.mode = SPLIT_AUTO;
	o->sort_buffer = WAVCAT_SORT_DEFAULT;
	o->shard.n = 1;
	o->excludes = malloc((size_t)argc * sizeof(*o->excludes));
	if (o->excludes == NULL)
		prog_die("out of memory");
	while ((c = getopt_long(argc, argv, "0hj:o:qvV", long_opts,
				NULL)) != -1) {
		if (prog_common_opt(c, optarg, &o->co, usage))
			continue;
		if (parse_opt(c, optarg, o)) /* getopt_long has said what */
			prog_usage_hint();
	}
	if ((o->split.val_list || o->split.test_list) && !o->split_given)
		o->split.mode = SPLIT_LISTS;
	if (o->co.jobs == 0)
		o->co.jobs = prog_cpus();
	check_opts(o, argc, argv);
}

/* Opens the output: -o FILE or standard output, never a terminal. */
static int open_output(struct run *r)
{
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
		r->out_name = "standard output";
		return 0;
	}
	r->out_name = r->o.co.output;
	r->fd = prog_open_output(r->o.co.output);
	return r->fd < 0 ? -1 : 0;
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
		prog_err("no usable input: all %llu inputs are unusable%s",
			 (unsigned long long)r->cl.n,
			 r->o.strict ? "" : " (see above)");
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

	if (shard_job(&r->cl, &r->lt, &r->sp, r->h, hex))
		return -1;
	if (rec_header_add(r->h, "job", hex)) {
		prog_err("out of memory");
		return -1;
	}
	return 0;
}

static const char *writer_why(const rec_writer *w, int err)
{
	const char *d = w ? rec_writer_detail(w) : "";

	return d && *d ? d : rec_strerror(err);
}

static int open_writer(struct run *r)
{
	rec_writer_opts wo = { .zstd_level = r->o.zstd,
			       .name = r->out_name, .write_behind = 1,
			       .zero_copy = prog_zero_copy() };
	int err = rec_writer_open(&r->w, r->fd, r->h, &wo);

	if (err) {
		prog_err("unable to write to '%s': %s", r->out_name,
			 writer_why(r->w, err));
		return -1;
	}
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

static int put(struct run *r, const rec_item *it, const uint32_t *crc)
{
	double t0 = prog_now();
	int err = crc ? rec_write_crc(r->w, it, *crc) : rec_write(r->w, it);

	r->t_write += prog_now() - t0;
	if (err) {
		prog_err("unable to write to '%s': %s", r->out_name,
			 writer_why(r->w, err));
		return -1;
	}
	return 0;
}

/* Writes samples d of clip c (number i) as an audio record: the whole
 * clip (flags 0) or a piece of it. */
static int put_samples(struct run *r, uint64_t i, const struct clip *c,
		       const struct decoded *d, uint32_t flags)
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
	r->n_pieces += flags != 0;
	return put(r, &it, &d->crc);
}

/* Writes the skipped record of clip c (number i) that says why: the
 * clip itself, or the end of one cut short after kept samples. */
static int put_skipped(struct run *r, uint64_t i, const struct clip *c,
		       const struct decoded *d)
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
	/* A clip cut short: what was decoded since its last piece goes
	 * as one more; the skipped record then ends the item. */
	if (d->offset > 0 && d->n > 0 &&
	    put_samples(r, i, c, d, REC_ITEM_MORE | REC_ITEM_CONT))
		return -1;
	r->n_cut += d->offset > 0;
	it.type = REC_T_SKIPPED;
	it.offset = d->offset > 0 ? kept : 0;
	it.clip_samples = it.offset;
	it.data = d->reason;
	it.data_len = strlen(d->reason);
	r->n_skipped++;
	return put(r, &it, NULL);
}

/* Writes the shard's clip number n (the n-th handed to the pool) in
 * order: its pieces as they come, then its end (the whole clip, its last
 * piece, or why it was skipped), and frees its slot. Returns 0, or -1
 * when the run must stop (the slot is then left to pool_stop(): its
 * decoder may still be at work). */
static int write_clip(struct run *r, uint64_t n)
{
	uint64_t i = shard_clip_index(&r->o.shard, n); /* the job's index */
	const struct job *j;
	uint32_t flags;
	int piece, err;

	for (;;) {
		j = pool_wait(r->pool, n, &piece);
		if (!piece)
			break;
		flags = REC_ITEM_MORE | (j->piece.offset ? REC_ITEM_CONT : 0);
		r->n_pieced += j->piece.offset == 0;
		err = put_samples(r, i, &j->clip, &j->piece, flags);
		pool_piece_done(r->pool, n);
		if (err)
			return -1;
	}
	if (j->out.status != DEC_OK) {
		err = put_skipped(r, i, &j->clip, &j->out);
	} else {
		r->n_ok++;
		err = put_samples(r, i, &j->clip, &j->out,
				  j->out.offset ? REC_ITEM_CONT : 0);
	}
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
 * it has room. */
static int feed(struct run *r, uint64_t *submitted)
{
	struct clip c;
	int got;

	while (*submitted < r->n_own && pool_has_room(r->pool)) {
		got = next_own(r, shard_clip_index(&r->o.shard, *submitted),
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
		(*submitted)++;
	}
	return 0;
}

/* Decodes the shard's clips (every clip of a whole run) on the pool and
 * writes the records in order. */
static int decode_and_write(struct run *r)
{
	size_t jobs = threads(r);
	uint64_t i, submitted = 0;
	int err = 0;

	if (r->n_own == 0) /* a shard may hold no clip: a valid stream */
		return 0;
	if (inputs_rewind(&r->cl))
		return -1;
	r->listed = 0;
	if (pool_start(&r->pool, &r->cfg, jobs, 4 * jobs + 4, annotate, r)) {
		prog_err("unable to start %zu decoder threads", jobs);
		return -1;
	}
	for (i = 0; i < r->n_own && !err; i++) {
		err = feed(r, &submitted);
		if (err)
			break;
		err = write_clip(r, i);
	}
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
	if (err) {
		prog_err("unable to write to '%s': %s", r->out_name,
			 writer_why(r->w, err));
		return -1;
	}
	err = prog_commit_output(r->fd, r->out_name);
	r->fd = -1;
	return err ? -1 : 0;
}

static void report(const struct run *r)
{
	if (r->o.shard_given)
		prog_info("shard %lu/%lu: %llu of the job's %llu clips",
			  (unsigned long)r->o.shard.k,
			  (unsigned long)r->o.shard.n,
			  (unsigned long long)r->n_own,
			  (unsigned long long)r->cl.n);
	if (r->n_cut)
		prog_warn("done %llu clips, skipped %llu (%llu of them cut "
			  "short, kept up to the failure)",
			  (unsigned long long)r->n_ok,
			  (unsigned long long)r->n_skipped,
			  (unsigned long long)r->n_cut);
	else
		prog_warn("done %llu clips, skipped %llu",
			  (unsigned long long)r->n_ok,
			  (unsigned long long)r->n_skipped);
	prog_info("%llu records, %llu bytes in %.2f s",
		  (unsigned long long)rec_writer_count(r->w),
		  (unsigned long long)rec_writer_bytes(r->w),
		  prog_now() - r->t0);
	prog_info("%llu samples; %llu clips longer than %llu samples in %llu "
		  "pieces", (unsigned long long)r->n_samples,
		  (unsigned long long)r->n_pieced,
		  (unsigned long long)r->cfg.piece_samples,
		  (unsigned long long)r->n_pieces);
	prog_info("threads (%zu): reading and decoding %.2f s, resampling "
		  "%.2f s, handing on pieces %.2f s; waiting for decoders "
		  "%.2f s, writing output %.2f s (of which waiting on output "
		  "%.2f s)",
		  threads(r), r->t_read,
		  r->t_resample, r->t_emit, r->t_wait, r->t_write,
		  rec_writer_wait(r->w));
	prog_report_spliced(rec_writer_bytes(r->w), rec_writer_spliced(r->w));
	if (r->cfg.dtype == REC_S16)
		prog_info("%llu samples clipped to 16 bits",
			  (unsigned long long)r->clipped);
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
	prog_info("%llu inputs, %zu labels, splits %s, %lu Hz, %s%s; "
		  "listed in %.2f s", (unsigned long long)r.cl.n, r.lt.n,
		  r.splits,
		  (unsigned long)r.cfg.rate, rec_dtype_name(r.cfg.dtype),
		  r.cfg.resample ? "" : " (not resampled)",
		  prog_now() - r.t0);
	if (make_header(&r, argc, argv)) {
		prog_err("out of memory");
		goto out;
	}
	if (add_job(&r) || open_writer(&r) || decode_and_write(&r) || finish(&r))
		goto out;
	report(&r);
	failed = 0;
out:
	cleanup(&r);
	return failed ? EXIT_FAIL : EXIT_OK;
}
