/*
 * gpumel_opts.c - gpumel's command line: usage, the options' parsing, and
 * the transform's parameters resolved from them (see gpumel_opts.h).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "gpumel_opts.h"

#define MAX_FFT (1u << 20)
#define MAX_MELS 4096u
#define MAX_BATCH_RECS (1u << 22)     /* --batch */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTIONS] [FILE]\n"
"Compute the mel spectrogram of every audio record (clip or segment) of a\n"
"melpipe stream.\n"
"\n"
"Reads the stream from FILE (or standard input, also for '-') and writes a\n"
"features stream to standard output: per audio record one matrix\n"
"[n_mels][n_frames] with the record's key, clip, segment, offset, label\n"
"and split. Skipped records pass through. A record that gives no frame\n"
"(shorter than n_fft without --center, or empty), that is not mono, has\n"
"another sample rate than the stream or holds a NaN or infinity is\n"
"reported and passed on as a skipped record naming why.\n"
"\n"
"An item in pieces (a long clip in several records) is framed exactly as\n"
"one record of all its samples, and its features leave in pieces as they\n"
"are computed; a NaN in a piece ends the item there, cut short.\n"
"\n"
"Options are named as in librosa and torchaudio. The defaults are those\n"
"of librosa.feature.melspectrogram followed by librosa.power_to_db, except\n"
"the hop (win_length / 4, as librosa.stft); --preset torchaudio takes\n"
"those of torchaudio's MelSpectrogram followed by AmplitudeToDB('power').\n"
"Options given explicitly win over the preset, wherever they stand.\n"
"\n"
"Transform (defaults that differ are given as: no preset, --preset librosa,\n"
"--preset torchaudio):\n"
"      --preset=NAME      librosa or torchaudio\n"
"      --n-fft=N          FFT size: 2048, 2048, 400\n"
"      --win-length=N     window length, at most n_fft, centred in it;\n"
"                         default n_fft\n"
"      --hop=N            hop length: win_length/4, 512, win_length/2\n"
"      --window=NAME      hann, hamming or rect (periodic); default hann\n"
"      --center           pad n_fft/2 samples on both sides, so that frame t\n"
"                         is centred on sample t*hop (the default)\n"
"      --no-center        frames start at sample 0\n"
"      --pad-mode=MODE    padding for --center, constant (zeros) or reflect:\n"
"                         constant, constant, reflect\n"
"      --n-mels=N         mel bands; default 128\n"
"      --fmin=HZ          lowest frequency; default 0\n"
"      --fmax=HZ          highest frequency, at most sample_rate/2:\n"
"                         sr/2, sr/2, floor(sr/2)\n"
"      --mel-scale=NAME   slaney or htk: slaney, slaney, htk\n"
"      --norm=NAME        slaney (divide each filter by its width) or none:\n"
"                         slaney, slaney, none\n"
"      --power=P          1 (magnitude) or 2 (power); default 2\n"
"      --log=NAME         db, ln or none; default db\n"
"      --amin=X           floor before the log; default 1e-10\n"
"      --top-db=X         raise each record's values to its maximum - X dB,\n"
"                         or none: 80, 80, none; features written in pieces\n"
"                         are left for whoever joins them to clamp\n"
"  dB is 10*log10(max(amin, S)) for power 2, 20*log10(max(amin, S)) for\n"
"  power 1; ln is log(max(amin, S)).\n"
"\n"
"Output and compute:\n"
"      --dtype=T          f32, f16 or bf16 features; default f32\n"
"  -o, --output=FILE      write the stream to FILE instead of standard output\n"
"      --device=DEV       auto, cpu, cuda or cuda:N; default auto: the GPU\n"
"                         when gpumel-cuda.so and a GPU are usable, else the\n"
"                         CPU, with a one-line notice\n"
"  -j, --jobs=N           CPU backend threads; default the CPUs it may use\n"
"      --batch=N          records per batch; default chosen from the data\n"
"                         (about 8 MiB of samples)\n"
"  -q, --quiet            no warnings, no notice, no summary line\n"
"  -v, --verbose          report records, bytes and time spent at the end\n"
"  -h, --help             show this help and exit\n"
"  -V, --version          show the version and exit\n"
"\n"
"Exit status: 0 done (unusable records were reported), 1 failure (bad\n"
"input stream, write error, parameter that does not suit the stream, no\n"
"usable GPU with --device cuda), 2 usage error.\n"
"\n"
"Examples:\n"
"  wavcat --rate 4096 DATA/ | segment --len 512 |\n"
"  gpumel --n-fft 512 --hop 512 --n-mels 32 --no-center --dtype f16 |\n"
"  h5pack -o out.h5\n",
		prog_name);
}

/* Looks s up in a NULL-terminated list of names; the index or a usage
 * error naming opt and the choices. */
static int pick(const char *opt, const char *s, const char *const *names)
{
	char list[128] = "";

	for (int i = 0; names[i]; i++)
		if (!strcmp(s, names[i]))
			return i;
	for (int i = 0; names[i]; i++) {
		strncat(list, names[i], sizeof(list) - strlen(list) - 1);
		if (names[i + 1])
			strncat(list, names[i + 2] ? ", " : " or ",
				sizeof(list) - strlen(list) - 1);
	}
	prog_usage_error("invalid value '%s' for %s: expected %s", s, opt,
			 list);
}

static void parse_device(struct options *o, const char *s)
{
	if (!strcmp(s, "auto")) {
		o->device = DEV_AUTO;
	} else if (!strcmp(s, "cpu")) {
		o->device = DEV_CPU;
	} else if (!strcmp(s, "cuda")) {
		o->device = DEV_CUDA;
		o->cuda_index = -1;
	} else if (!strncmp(s, "cuda:", 5)) {
		o->device = DEV_CUDA;
		o->cuda_index = (int)prog_arg_u64("--device cuda:N", s + 5, 0,
						  1023);
	} else {
		prog_usage_error("invalid value '%s' for --device: expected "
				 "auto, cpu, cuda or cuda:N", s);
	}
}

enum longopt {
	OPT_AMIN = 256, OPT_BATCH, OPT_CENTER, OPT_DEVICE, OPT_DTYPE,
	OPT_FMAX, OPT_FMIN, OPT_HOP, OPT_LOG, OPT_MEL_SCALE, OPT_N_FFT,
	OPT_N_MELS, OPT_NO_CENTER, OPT_NORM, OPT_PAD_MODE, OPT_POWER,
	OPT_PRESET, OPT_TOP_DB, OPT_WIN_LENGTH, OPT_WINDOW
};

static const struct option longopts[] = {
	{ "amin", required_argument, NULL, OPT_AMIN },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "center", no_argument, NULL, OPT_CENTER },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "dtype", required_argument, NULL, OPT_DTYPE },
	{ "fmax", required_argument, NULL, OPT_FMAX },
	{ "fmin", required_argument, NULL, OPT_FMIN },
	{ "help", no_argument, NULL, 'h' },
	{ "hop", required_argument, NULL, OPT_HOP },
	{ "hop-length", required_argument, NULL, OPT_HOP },
	{ "jobs", required_argument, NULL, 'j' },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "mel-scale", required_argument, NULL, OPT_MEL_SCALE },
	{ "n-fft", required_argument, NULL, OPT_N_FFT },
	{ "n-mels", required_argument, NULL, OPT_N_MELS },
	{ "no-center", no_argument, NULL, OPT_NO_CENTER },
	{ "norm", required_argument, NULL, OPT_NORM },
	{ "output", required_argument, NULL, 'o' },
	{ "pad-mode", required_argument, NULL, OPT_PAD_MODE },
	{ "power", required_argument, NULL, OPT_POWER },
	{ "preset", required_argument, NULL, OPT_PRESET },
	{ "quiet", no_argument, NULL, 'q' },
	{ "top-db", required_argument, NULL, OPT_TOP_DB },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "win-length", required_argument, NULL, OPT_WIN_LENGTH },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ NULL, 0, NULL, 0 }
};

static const char *const window_names[] = { "", "hann", "hamming", "rect",
					    NULL };
static const char *const pad_names[] = { "", "reflect", "constant", NULL };
static const char *const scale_names[] = { "", "htk", "slaney", NULL };
static const char *const norm_names[] = { "none", "slaney", NULL };
static const char *const log_names[] = { "none", "db", "ln", NULL };
static const char *const dtype_names[] = { "f32", "f16", "bf16", NULL };
static const int dtype_codes[] = { REC_F32, REC_F16, REC_BF16 };

/* The transform options: returns 0, or -1 when c is not one of them. */
static int parse_transform(struct options *o, int c, const char *arg)
{
	mel_params *p = &o->p;

	switch (c) {
	case OPT_N_FFT:
		p->n_fft = (uint32_t)prog_arg_u64("--n-fft", arg, 2, MAX_FFT);
		o->given[MEL_F_N_FFT] = 1;
		break;
	case OPT_WIN_LENGTH:
		p->win_length = (uint32_t)prog_arg_u64("--win-length", arg, 1,
						       MAX_FFT);
		o->given[MEL_F_WIN] = 1;
		break;
	case OPT_HOP:
		p->hop_length = (uint32_t)prog_arg_u64("--hop", arg, 1,
						       INT32_MAX);
		o->given[MEL_F_HOP] = 1;
		break;
	case OPT_WINDOW:
		p->window = pick("--window", arg, window_names + 1) + 1;
		o->given[MEL_F_WINDOW] = 1;
		break;
	case OPT_CENTER:
	case OPT_NO_CENTER:
		p->center = c == OPT_CENTER;
		o->given[MEL_F_CENTER] = 1;
		break;
	case OPT_PAD_MODE:
		p->pad_mode = pick("--pad-mode", arg, pad_names + 1) + 1;
		o->given[MEL_F_PAD] = 1;
		break;
	case OPT_N_MELS:
		p->n_mels = (uint32_t)prog_arg_u64("--n-mels", arg, 1,
						   MAX_MELS);
		o->given[MEL_F_N_MELS] = 1;
		break;
	default:
		return -1;
	}
	return 0;
}

/* The filterbank and log options: 0, or -1 when c is not one of them. */
static int parse_scale(struct options *o, int c, const char *arg)
{
	mel_params *p = &o->p;

	switch (c) {
	case OPT_FMIN:
		p->fmin = prog_arg_double("--fmin", arg, 0.0, 1e7);
		o->given[MEL_F_FMIN] = 1;
		break;
	case OPT_FMAX:
		p->fmax = prog_arg_double("--fmax", arg, 0.0, 1e7);
		o->given[MEL_F_FMAX] = 1;
		break;
	case OPT_MEL_SCALE:
		p->mel_scale = pick("--mel-scale", arg, scale_names + 1) + 1;
		o->given[MEL_F_SCALE] = 1;
		break;
	case OPT_NORM:
		p->norm = pick("--norm", arg, norm_names);
		o->given[MEL_F_NORM] = 1;
		break;
	case OPT_POWER:
		p->power = (int)prog_arg_u64("--power", arg, 1, 2);
		o->given[MEL_F_POWER] = 1;
		break;
	case OPT_LOG:
		p->log = pick("--log", arg, log_names);
		o->given[MEL_F_LOG] = 1;
		break;
	case OPT_AMIN:
		p->amin = prog_arg_double("--amin", arg, 1e-30, 1e30);
		o->given[MEL_F_AMIN] = 1;
		break;
	case OPT_TOP_DB:
		p->top_db = !strcmp(arg, "none") ? -1.0 :
			    prog_arg_double("--top-db", arg, 0.0, 1e4);
		o->given[MEL_F_TOP_DB] = 1;
		break;
	case OPT_DTYPE:
		p->out_dtype = dtype_codes[pick("--dtype", arg, dtype_names)];
		o->given[MEL_F_DTYPE] = 1;
		break;
	default:
		return -1;
	}
	return 0;
}

/* The options that are about neither the transform nor every program. */
static void parse_other(struct options *o, int c, const char *arg)
{
	switch (c) {
	case OPT_BATCH:
		o->batch = prog_arg_size("--batch", arg, 1, MAX_BATCH_RECS);
		break;
	case OPT_DEVICE:
		parse_device(o, arg);
		break;
	case OPT_PRESET:
		o->preset = pick("--preset", arg, mel_preset_names + 1) + 1;
		break;
	default: /* '?': prog_getopt has said what */
		prog_usage_hint();
	}
}

void gpumel_parse_args(int argc, char **argv, struct options *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->cuda_index = -1;
	while ((c = prog_getopt(argc, argv, "hj:o:qVv", longopts)) != -1) {
		if (!prog_common_opt(c, optarg, &o->co, usage) &&
		    parse_transform(o, c, optarg) < 0 &&
		    parse_scale(o, c, optarg) < 0)
			parse_other(o, c, optarg);
	}
	if (argc - optind > 1)
		prog_usage_error("too many arguments: one input at most");
	if (optind < argc && strcmp(argv[optind], "-"))
		o->input = argv[optind];
	o->output = o->co.output;
	o->jobs = (int)(o->co.jobs ? o->co.jobs : prog_cpus());
	if (o->jobs > PROG_MAX_JOBS)
		o->jobs = PROG_MAX_JOBS;
}

/* Checks what can be checked before the stream's sample rate is known. */
static void check_usage(const struct options *o, const mel_params *p)
{
	if (p->win_length > p->n_fft)
		prog_usage_error("--win-length %" PRIu32 " is longer than "
				 "--n-fft %" PRIu32, p->win_length, p->n_fft);
	if (o->given[MEL_F_TOP_DB] && o->p.top_db >= 0 && p->log != MEL_LOG_DB)
		prog_usage_error("--top-db applies to --log db only");
	if (o->given[MEL_F_FMIN] && o->given[MEL_F_FMAX] && p->fmin >= p->fmax)
		prog_usage_error("--fmin %g is not below --fmax %g", p->fmin,
				 p->fmax);
}

void gpumel_resolve(const struct options *o, mel_params *p)
{
	*p = o->p;
	mel_preset_fill(o->preset, o->given, p);
	check_usage(o, p);
}

int gpumel_resolve_rate(const struct options *o, mel_params *p, double sr)
{
	double nyquist = sr / 2.0;

	p->sample_rate = sr;
	if (!o->given[MEL_F_FMAX])
		p->fmax = mel_preset_fmax(o->preset, sr);
	if (p->fmax > nyquist) {
		prog_err("--fmax %g is above the stream's Nyquist frequency "
			 "%g Hz (sample_rate %g)", p->fmax, nyquist, sr);
		return -1;
	}
	if (p->fmin >= p->fmax) {
		prog_err("--fmin %g is not below fmax %g Hz", p->fmin,
			 p->fmax);
		return -1;
	}
	return 0;
}

int gpumel_header_params(rec_header *h, const mel_params *p)
{
	char top[32];
	int e = 0;

	snprintf(top, sizeof(top), "%.17g", p->top_db);
	e |= rec_header_set_u64(h, "n_fft", p->n_fft);
	e |= rec_header_set_u64(h, "win_length", p->win_length);
	e |= rec_header_set_u64(h, "hop_length", p->hop_length);
	e |= rec_header_set(h, "window", window_names[p->window]);
	e |= rec_header_set(h, "center", p->center ? "1" : "0");
	e |= rec_header_set(h, "pad_mode", pad_names[p->pad_mode]);
	e |= rec_header_set_u64(h, "n_mels", p->n_mels);
	e |= rec_header_set_double(h, "fmin", p->fmin);
	e |= rec_header_set_double(h, "fmax", p->fmax);
	e |= rec_header_set(h, "mel_scale", scale_names[p->mel_scale]);
	e |= rec_header_set(h, "norm", norm_names[p->norm]);
	e |= rec_header_set_u64(h, "power", (uint64_t)p->power);
	e |= rec_header_set(h, "log", log_names[p->log]);
	e |= rec_header_set_double(h, "amin", p->amin);
	e |= rec_header_set(h, "top_db", p->top_db < 0 ? "none" : top);
	e |= rec_header_set(h, "bin_freqs", p->bin_freqs == MEL_BINS_TORCH ?
			    "linspace" : "rfft");
	return e;
}
