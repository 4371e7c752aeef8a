/*
 * wavcat_opts.c - wavcat's command line: the options, --help, and their
 * checks against each other.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rec.h"
#include "../common/opts.h"
#include "../common/prog.h"
#include "../common/shards.h"
#include "wavcat.h"
#include "wavcat_opts.h"

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
"pieces, whatever its length. Before a clip's first record comes its\n"
"source record: the file as libsndfile found it (source_rate,\n"
"source_channels, source_frames, source_format), which h5pack stores in\n"
"/clips. formats/record.md describes the stream\n"
"(%s).\n"
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
"  extensions (any case), all decoded by libsndfile:\n", prog_doc_where());
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
"                      stream. Paths are under DATA as written (./ and //\n"
"                      aside) or once links are resolved (absolute paths\n"
"                      for a relative DATA, or the reverse). One not\n"
"                      under it, or with '..' below it, stops the run, or\n"
"                      in a list is unusable\n"
"  --exclude=GLOB      leave out inputs whose key, or one of its leading\n"
"                      folders (yes, yes/deep for yes/deep/a.wav), matches\n"
"                      GLOB (fnmatch: * also matches /); repeatable. Left\n"
"                      out, a file is no input: no clip index, no label.\n"
"                      A GLOB that leaves no input out is warned about\n"
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
"truncated (it ends before the frames its header gives: a FLAC file's\n"
"STREAMINFO, a WAV file's data chunk size) or longer than its header\n"
"says, holds NaN or infinite samples, or claims no or over %u channels,\n"
"or a rate of 0 or over %u Hz, is reported as\n"
"  wavcat: 'PATH': REASON\n"
"and written as a skipped record with that reason, and the run goes on.\n"
"A clip is cut short (kept up to the failure, then that skipped record,\n"
"its reason saying how much was kept) when its file ends otherwise than\n"
"its header says (truncated, WAV or FLAC alike, whatever its length), or\n"
"when another failure (a NaN) comes after some of its pieces were\n"
"written; one that comes within its first --piece-samples samples skips\n"
"the clip whole.\n"
"The summary counts them apart: 'done 9 clips whole and 1 cut short\n"
"(kept up to the failure), skipped 2' (the clip cut short is in the\n"
"stream, and among its skipped records too).\n"
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
"\n");
	prog_usage_env(f, NULL);
	fprintf(f,
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
		o->duration_s = prog_arg_double_above("--duration", arg,
							      0, 1e7);
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

void parse_options(int argc, char **argv, struct options *o)
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
	while ((c = prog_getopt(argc, argv, "0hj:o:qvV", long_opts)) != -1) {
		if (prog_common_opt(c, optarg, &o->co, usage))
			continue;
		if (parse_opt(c, optarg, o)) /* prog_getopt has said what */
			prog_usage_hint();
	}
	if ((o->split.val_list || o->split.test_list) && !o->split_given)
		o->split.mode = SPLIT_LISTS;
	if (o->co.jobs == 0)
		o->co.jobs = prog_cpus();
	check_opts(o, argc, argv);
}
