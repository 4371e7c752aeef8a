/*
 * gpumel_opts.c - gpumel's command line: usage, the options' parsing, and
 * the transform's parameters resolved from them (see gpumel_opts.h).
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "gpumel_opts.h"

#define MAX_FFT (1u << 20)
#define MAX_MELS 4096u
#define MAX_BATCH_RECS (1u << 22)     /* --batch */

/* The part of --help about --preset kaldi. */
static const char kaldi_help[] =
"\n"
"Kaldi filterbank features (--preset kaldi): what\n"
"torchaudio.compliance.kaldi.fbank computes with its defaults, per audio\n"
"record one matrix [n_features][n_frames] (n_features: n_mels, and one row\n"
"more, the first, for the log energy with --use-energy). Samples are taken\n"
"in Kaldi's scale: s16 as they are, f32, f16 and bf16 times 32768. Each\n"
"frame is dithered, its mean removed, pre-emphasised, windowed and zero-\n"
"padded to n_fft; its power spectrum goes through triangular filters on\n"
"Kaldi's mel scale (1127 ln(1 + f/700)), then ln(max(x, 1.1920929e-07)).\n"
"The stream header and the dataset say feature=fbank (mel otherwise).\n"
"Where Kaldi's programs differ from torchaudio's defaults it is said below;\n"
"give those options to match compute-fbank-feats.\n"
"      --frame-length-ms=MS  frame length; default 25 (win_length: samples)\n"
"      --frame-shift-ms=MS   frame shift; default 10 (hop: in samples)\n"
"                         (given in samples as well, the two must give the\n"
"                         same samples at the stream's rate: exit 1 if not)\n"
"      --round-to-power-of-two[=BOOL], --no-round-to-power-of-two\n"
"                         n_fft: the frame length's next power of two (the\n"
"                         default), else the frame length; --n-fft sets it\n"
"      --snip-edges[=BOOL]  frames lie inside the record: 1 + (n - length)\n"
"                         / shift of them (the default; =false as below)\n"
"      --no-snip-edges    (n + shift/2) / shift frames, centred on\n"
"                         shift * (t + 1/2), the record mirrored at its ends\n"
"      --dither=X         Gaussian noise of deviation X added to each\n"
"                         sample; default 0 (Kaldi's programs: 1). The\n"
"                         noise depends on --seed, the clip, where the frame\n"
"                         starts in it and the sample: the same for any -j,\n"
"                         device, batch, pieces or shards\n"
"      --seed=N           the dither's seed; default 0\n"
"      --preemphasis=C    x[i] -= C x[i-1]; default 0.97\n"
"      --remove-dc-offset[=BOOL], --no-remove-dc-offset\n"
"                         subtract each frame's mean first (the default)\n"
"      --window=NAME      povey (the default), hann, hamming, rect or\n"
"                         blackman, Kaldi's symmetric ones (hanning and\n"
"                         rectangular are accepted too)\n"
"      --num-mel-bins=N   mel bands (--n-mels); default 23\n"
"      --low-freq=HZ      lowest frequency (--fmin); default 20\n"
"      --high-freq=HZ     highest frequency (--fmax); 0 (the default)\n"
"                         Nyquist, less than 0: that far below Nyquist\n"
"      --use-energy[=BOOL]  the frame's log energy as the first row;\n"
"                         default off (Kaldi's MFCC: on)\n"
"      --raw-energy[=BOOL], --no-raw-energy\n"
"                         the energy before pre-emphasis and window (the\n"
"                         default), else after them\n"
"      --energy-floor=X   the log energy at least ln(X) when X > 0;\n"
"                         default 1 (Kaldi's programs: 0)\n"
"      --num-ceps=N       the name of --mfcc in compute-mfcc-feats and\n"
"                         torchaudio.compliance.kaldi.mfcc (its default 13);\n"
"                         with --use-energy the log energy replaces c0\n"
"                         (Kaldi's MFCC default: on; torchaudio's: off)\n"
"      --cepstral-lifter=Q  coefficient c times 1 + Q/2 sin(pi c / Q);\n"
"                         default 22, 0: none\n"
"  --dtype applies as above; --center, --pad-mode, --mel-scale, --norm,\n"
"  --power, --log, --amin and --top-db do not, nor the Kaldi options to the\n"
"  mel presets (but --num-mel-bins, --num-ceps, --low-freq and --high-freq,\n"
"  other names of --n-mels, --mfcc, --fmin and --fmax, which apply to every\n"
"  preset).\n"
"  Example: wavcat --rate 16000 DATA/ | gpumel --preset kaldi \\\n"
"      --num-mel-bins 80 | h5pack -o fbank.h5\n"
"  MFCCs: gpumel --preset kaldi --mfcc 13 (or --num-ceps 13).\n";

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTIONS] [FILE]\n"
"Compute the mel spectrogram (or Kaldi's filterbank features, --preset\n"
"kaldi, below; or either's MFCCs, --mfcc) of every audio record (clip or\n"
"segment) of a melpipe stream.\n"
"\n"
"Reads the stream from FILE (or standard input, also for '-') and writes a\n"
"features stream to standard output: per audio record one matrix\n"
"[n_features][n_frames] (n_features: n_mels, or --mfcc's N) with the\n"
"record's key, clip, segment, offset, label and split. Skipped records\n"
"pass through. A record that gives no frame (shorter than n_fft without\n"
"--center, or empty), that is not mono, has another sample rate than the\n"
"stream or holds a NaN or infinity is reported and passed on as a skipped\n"
"record naming why.\n"
"\n"
"An item in pieces (a long clip in several records) is framed exactly as\n"
"one record of all its samples, and its features leave in pieces as they\n"
"are computed; a NaN in a piece ends the item there, cut short.\n"
"\n"
"Options are named as in librosa and torchaudio. The defaults are those\n"
"of librosa.feature.melspectrogram followed by librosa.power_to_db, except\n"
"the hop (win_length / 4, as librosa.stft); --preset torchaudio takes\n"
"those of torchaudio's MelSpectrogram followed by AmplitudeToDB('power').\n"
"Options given explicitly win over the preset, wherever they stand. An\n"
"option given twice takes its last value; two names of one option given\n"
"different values are a usage error (the pairs: --n-mels and its other\n"
"name --num-mel-bins, --mfcc and --num-ceps, --fmin and --low-freq, --fmax\n"
"and --high-freq, --hop and --hop-length, --preemphasis and\n"
"--preemphasis-coefficient).\n"
"\n"
"Transform (defaults that differ are given as: no preset, --preset librosa,\n"
"--preset torchaudio):\n"
"      --preset=NAME      librosa, torchaudio or kaldi (below)\n"
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
"      --fmax=HZ          highest frequency, at most sample_rate/2; 0 or\n"
"                         less: that far below sample_rate/2 (Kaldi's\n"
"                         --high-freq, its other name): sr/2, sr/2,\n"
"                         floor(sr/2)\n"
"      --mel-scale=NAME   slaney or htk: slaney, slaney, htk\n"
"      --norm=NAME        slaney (divide each filter by its width) or none:\n"
"                         slaney, slaney, none\n"
"      --power=P          1 (magnitude) or 2 (power); default 2\n"
"      --log=NAME         db, ln or none; default db\n"
"      --amin=X           floor before the log; default 1e-10\n"
"      --top-db=X         raise each record's values to its maximum - X dB,\n"
"                         or none: 80, 80, none (with --mfcc: 80, 80, 80);\n"
"                         features written in pieces are left for whoever\n"
"                         joins them to clamp\n"
"      --mfcc=N           N MFCCs per frame instead of the bands: the\n"
"                         orthonormal DCT-II of the log bands (after\n"
"                         --top-db), its first N coefficients, as\n"
"                         librosa.feature.mfcc and torchaudio's MFCC; with\n"
"                         --preset kaldi, torchaudio.compliance.kaldi.mfcc\n"
"                         (--num-ceps, below). N is at most n_mels. A clip\n"
"                         in pieces (longer than a record) is skipped, named,\n"
"                         when --top-db applies: the clamp needs its whole\n"
"                         maximum before the DCT\n"
"  dB is 10*log10(max(amin, S)) for power 2, 20*log10(max(amin, S)) for\n"
"  power 1; ln is log(max(amin, S)).\n", prog_name);
	fputs(kaldi_help, f);
	fputs("\n"
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
"\n", f);
	prog_usage_env(f,
"  MELPIPE_GPUMEL_DETACH\n"
"                      auto (the default): where gpumel may use a GPU, it\n"
"                      ends as soon as its output is complete, and a\n"
"                      process of its own releases the GPU after it (0.1\n"
"                      s that the shell no longer waits for); on (or 1,\n"
"                      yes, true): the same with the CPU backend too;\n"
"                      off (or 0, no, false): one process, which exits\n"
"                      once the GPU is released. Either way the exit\n"
"                      status is the work's, and a signal to gpumel's\n"
"                      pid reaches the work (but SIGSTOP)\n");
	fputs(
"Exit status: 0 done (unusable records were reported), 1 failure (bad\n"
"input stream, write error, parameter that does not suit the stream, no\n"
"usable GPU with --device cuda), 2 usage error.\n", f);
	fputs("\n"
"Examples:\n"
"  wavcat --rate 4096 DATA/ | segment --len 512 |\n"
"  gpumel --n-fft 512 --hop 512 --n-mels 32 --no-center --dtype f16 |\n"
"  h5pack -o out.h5\n"
"  wavcat --rate 16000 --duration 1 DATA/ |\n"
"  gpumel --preset kaldi --num-mel-bins 80 | h5pack -o fbank.h5\n", f);
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
	OPT_PRESET, OPT_TOP_DB, OPT_WIN_LENGTH, OPT_WINDOW, OPT_MFCC,
	/* Kaldi's (fbank) */
	OPT_DITHER, OPT_ENERGY_FLOOR, OPT_FRAME_MS, OPT_NO_DC, OPT_NO_POW2, OPT_NO_RAW_ENERGY, OPT_NO_SNIP,
	OPT_NO_ENERGY, OPT_PREEMPH, OPT_RAW_ENERGY, OPT_DC, OPT_POW2,
	OPT_SEED, OPT_SHIFT_MS, OPT_SNIP, OPT_ENERGY, OPT_LIFTER
};

static const struct option longopts[] = {
	{ "amin", required_argument, NULL, OPT_AMIN },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "center", no_argument, NULL, OPT_CENTER },
	{ "cepstral-lifter", required_argument, NULL, OPT_LIFTER },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "dither", required_argument, NULL, OPT_DITHER },
	{ "dtype", required_argument, NULL, OPT_DTYPE },
	{ "energy-floor", required_argument, NULL, OPT_ENERGY_FLOOR },
	{ "fmax", required_argument, NULL, OPT_FMAX },
	{ "fmin", required_argument, NULL, OPT_FMIN },
	{ "frame-length-ms", required_argument, NULL, OPT_FRAME_MS },
	{ "frame-shift-ms", required_argument, NULL, OPT_SHIFT_MS },
	{ "help", no_argument, NULL, 'h' },
	{ "high-freq", required_argument, NULL, OPT_FMAX },
	{ "hop", required_argument, NULL, OPT_HOP },
	{ "hop-length", required_argument, NULL, OPT_HOP },
	{ "jobs", required_argument, NULL, 'j' },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "low-freq", required_argument, NULL, OPT_FMIN },
	{ "mel-scale", required_argument, NULL, OPT_MEL_SCALE },
	{ "mfcc", required_argument, NULL, OPT_MFCC },
	{ "n-fft", required_argument, NULL, OPT_N_FFT },
	{ "n-mels", required_argument, NULL, OPT_N_MELS },
	{ "no-center", no_argument, NULL, OPT_NO_CENTER },
	{ "no-raw-energy", no_argument, NULL, OPT_NO_RAW_ENERGY },
	{ "no-remove-dc-offset", no_argument, NULL, OPT_NO_DC },
	{ "no-round-to-power-of-two", no_argument, NULL, OPT_NO_POW2 },
	{ "no-snip-edges", no_argument, NULL, OPT_NO_SNIP },
	{ "no-use-energy", no_argument, NULL, OPT_NO_ENERGY },
	{ "norm", required_argument, NULL, OPT_NORM },
	{ "num-ceps", required_argument, NULL, OPT_MFCC },
	{ "num-mel-bins", required_argument, NULL, OPT_N_MELS },
	{ "output", required_argument, NULL, 'o' },
	{ "pad-mode", required_argument, NULL, OPT_PAD_MODE },
	{ "power", required_argument, NULL, OPT_POWER },
	{ "preemphasis", required_argument, NULL, OPT_PREEMPH },
	{ "preemphasis-coefficient", required_argument, NULL, OPT_PREEMPH },
	{ "preset", required_argument, NULL, OPT_PRESET },
	{ "quiet", no_argument, NULL, 'q' },
	{ "raw-energy", optional_argument, NULL, OPT_RAW_ENERGY },
	{ "remove-dc-offset", optional_argument, NULL, OPT_DC },
	{ "round-to-power-of-two", optional_argument, NULL, OPT_POW2 },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "snip-edges", optional_argument, NULL, OPT_SNIP },
	{ "top-db", required_argument, NULL, OPT_TOP_DB },
	{ "use-energy", optional_argument, NULL, OPT_ENERGY },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "win-length", required_argument, NULL, OPT_WIN_LENGTH },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ NULL, 0, NULL, 0 }
};

static const char *const window_names[] = { "", "hann", "hamming", "rect",
					    "povey", "blackman", NULL };
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
		/* Kaldi's names too */
		arg = !strcmp(arg, "hanning") ? "hann" :
		      !strcmp(arg, "rectangular") ? "rect" : arg;
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
	case OPT_MFCC:
		p->n_mfcc = (uint32_t)prog_arg_u64("--mfcc", arg, 1, MAX_MELS);
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
		/* fmax from the sample rate (high_freq_hz()) */
		o->high_freq = prog_arg_double("--fmax", arg, -1e7, 1e7);
		o->given[MEL_F_FMAX] = 1;
		o->given_high_freq = 1;
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

/* A Kaldi boolean: no argument (true), or true/false, 1/0. */
static int flag_arg(const char *opt, const char *arg)
{
	if (!arg || !strcmp(arg, "true") || !strcmp(arg, "1"))
		return 1;
	if (!strcmp(arg, "false") || !strcmp(arg, "0"))
		return 0;
	prog_usage_error("invalid value '%s' for %s: expected true or false",
			 arg, opt);
}

/* A Kaldi boolean option (its --no- form: c is the OPT_NO_ one). */
static int parse_kaldi_flag(struct options *o, int c, const char *arg)
{
	mel_kaldi *k = &o->p.k;

	switch (c) {
	case OPT_SNIP:
	case OPT_NO_SNIP:
		/* center is not snip_edges for fbank */
		o->p.center = c == OPT_NO_SNIP ||
			      !flag_arg("--snip-edges", arg);
		o->given[MEL_F_CENTER] = 1;
		return 0;
	case OPT_DC:
	case OPT_NO_DC:
		k->remove_dc = c == OPT_DC &&
			       flag_arg("--remove-dc-offset", arg);
		o->given[MEL_F_DC] = 1;
		return 0;
	case OPT_POW2:
	case OPT_NO_POW2:
		k->round_pow2 = c == OPT_POW2 &&
				flag_arg("--round-to-power-of-two", arg);
		o->given[MEL_F_POW2] = 1;
		return 0;
	case OPT_ENERGY:
	case OPT_NO_ENERGY:
		k->use_energy = c == OPT_ENERGY &&
				flag_arg("--use-energy", arg);
		o->given[MEL_F_ENERGY] = 1;
		return 0;
	case OPT_RAW_ENERGY:
	case OPT_NO_RAW_ENERGY:
		k->raw_energy = c == OPT_RAW_ENERGY &&
				flag_arg("--raw-energy", arg);
		o->given[MEL_F_RAW_ENERGY] = 1;
		return 0;
	}
	return -1;
}

/* Kaldi's frame options (fbank): 0, or -1 when c is not one of them. */
static int parse_kaldi(struct options *o, int c, const char *arg)
{
	mel_kaldi *k = &o->p.k;

	switch (c) {
	case OPT_FRAME_MS:
		o->frame_ms = prog_arg_double("--frame-length-ms", arg, 1e-3,
					      1e6);
		break;
	case OPT_SHIFT_MS:
		o->shift_ms = prog_arg_double("--frame-shift-ms", arg, 1e-3,
					      1e6);
		break;
	case OPT_DITHER:
		k->dither = prog_arg_double("--dither", arg, 0.0, 1e6);
		o->given[MEL_F_DITHER] = 1;
		break;
	case OPT_SEED:
		k->seed = prog_arg_u64("--seed", arg, 0, UINT64_MAX);
		o->given[MEL_F_SEED] = 1;
		break;
	case OPT_PREEMPH:
		k->preemphasis = (float)prog_arg_double("--preemphasis", arg,
							0.0, 1.0);
		o->given[MEL_F_PREEMPH] = 1;
		break;
	case OPT_ENERGY_FLOOR:
		k->energy_floor = prog_arg_double("--energy-floor", arg, 0.0,
						  1e30);
		o->given[MEL_F_ENERGY_FLOOR] = 1;
		break;
	case OPT_LIFTER:
		o->p.lifter = prog_arg_double("--cepstral-lifter", arg, 0.0,
					      1e6);
		o->given[MEL_F_LIFTER] = 1;
		break;
	default:
		return parse_kaldi_flag(o, c, arg);
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

/* What each long option was last given, for check_names(). */
struct given_name {
	const char *arg;       /* NULL: not given */
	double value;          /* as parsed; NAN: compare arg */
	int order;             /* its place among the options given */
};

/* The value an option of several names holds once parsed, so that "80"
 * and "080" agree; NAN for one that has a single name. */
static double named_value(const struct options *o, int c)
{
	switch (c) {
	case OPT_N_MELS: return o->p.n_mels;
	case OPT_MFCC: return o->p.n_mfcc;
	case OPT_HOP: return o->p.hop_length;
	case OPT_FMIN: return o->p.fmin;
	case OPT_FMAX: return o->high_freq;
	case OPT_PREEMPH: return o->p.k.preemphasis;
	}
	return NAN;
}

static int same_value(const struct given_name *a, const struct given_name *b)
{
	if (isnan(a->value) || isnan(b->value))
		return !strcmp(a->arg, b->arg);
	return a->value == b->value;
}

/* Two names of one option (librosa's and Kaldi's) given different values
 * are a usage error naming both, the earlier first; one name given
 * several times has its last value, as any option. */
static void check_names(const struct given_name *g)
{
	for (size_t i = 0; longopts[i].name; i++) {
		for (size_t j = i + 1; longopts[j].name; j++) {
			size_t a = g[i].order < g[j].order ? i : j;
			size_t b = a == i ? j : i;

			if (longopts[i].val != longopts[j].val || !g[i].arg ||
			    !g[j].arg || same_value(&g[i], &g[j]))
				continue;
			prog_usage_error("--%s %s and --%s %s are two names of "
					 "one option: give one value",
					 longopts[a].name, g[a].arg,
					 longopts[b].name, g[b].arg);
		}
	}
}

/* Notes an option that belongs to one feature only (see check_usage). */
static void note_feature_opt(struct options *o, int c, const char *name)
{
	if (c >= OPT_DITHER && !o->kaldi_only)
		o->kaldi_only = name;
	switch (c) {
	case OPT_CENTER: case OPT_NO_CENTER: case OPT_PAD_MODE:
	case OPT_MEL_SCALE: case OPT_NORM: case OPT_POWER: case OPT_LOG:
	case OPT_AMIN: case OPT_TOP_DB:
		if (!o->mel_only)
			o->mel_only = name;
		break;
	}
}

void gpumel_parse_args(int argc, char **argv, struct options *o)
{
	struct given_name given[sizeof(longopts) / sizeof(longopts[0])];
	int c, li = -1, n = 0;

	memset(o, 0, sizeof(*o));
	memset(given, 0, sizeof(given));
	o->cuda_index = -1;
	while ((c = prog_getopt_index(argc, argv, "hj:o:qVv", longopts,
				      &li)) != -1) {
		if (li >= 0)
			note_feature_opt(o, c, longopts[li].name);
		if (!prog_common_opt(c, optarg, &o->co, usage) &&
		    parse_transform(o, c, optarg) < 0 &&
		    parse_scale(o, c, optarg) < 0 &&
		    parse_kaldi(o, c, optarg) < 0)
			parse_other(o, c, optarg);
		if (li >= 0 && optarg)
			given[li] = (struct given_name){
				optarg, named_value(o, c), n++ };
		li = -1;
	}
	check_names(given);
	if (argc - optind > 1)
		prog_usage_error("too many arguments: one input at most");
	if (optind < argc && strcmp(argv[optind], "-"))
		o->input = argv[optind];
	o->output = o->co.output;
	o->jobs = (int)(o->co.jobs ? o->co.jobs : prog_cpus());
	if (o->jobs > PROG_MAX_JOBS)
		o->jobs = PROG_MAX_JOBS;
}

/* Options that belong to the other feature, and Kaldi's windows. */
static void check_feature(const struct options *o, const mel_params *p)
{
	if (p->feature == MEL_FEAT_FBANK && o->mel_only)
		prog_usage_error("--%s does not apply to --preset kaldi",
				 o->mel_only);
	if (p->feature != MEL_FEAT_FBANK && o->kaldi_only)
		prog_usage_error("--%s applies to --preset kaldi only",
				 o->kaldi_only);
	if (p->feature != MEL_FEAT_FBANK && p->window >= MEL_WIN_POVEY)
		prog_usage_error("invalid value '%s' for --window: expected "
				 "hann, hamming or rect (%s is Kaldi's, for "
				 "--preset kaldi)", window_names[p->window],
				 window_names[p->window]);
}

/* Checks what can be checked before the stream's sample rate is known
 * (fbank's n_fft and win_length may come from it: 0 until then). */
static void check_usage(const struct options *o, const mel_params *p)
{
	check_feature(o, p);
	if (p->n_fft && p->win_length > p->n_fft)
		prog_usage_error("--win-length %" PRIu32 " is longer than "
				 "--n-fft %" PRIu32, p->win_length, p->n_fft);
	if (o->given[MEL_F_TOP_DB] && o->p.top_db >= 0 && p->log != MEL_LOG_DB)
		prog_usage_error("--top-db applies to --log db only");
	if (p->n_mfcc > p->n_mels)
		prog_usage_error("--mfcc %" PRIu32 ": more coefficients than "
				 "the %" PRIu32 " mel bands (--n-mels, "
				 "--num-mel-bins)",
				 p->n_mfcc, p->n_mels);
	if (o->given[MEL_F_LIFTER] && !p->n_mfcc)
		prog_usage_error("--cepstral-lifter applies to MFCCs (--mfcc) "
				 "only");
	if (o->given[MEL_F_FMIN] && o->given[MEL_F_FMAX] &&
	    o->high_freq > 0.0 && p->fmin >= o->high_freq)
		prog_usage_error("--fmin %g is not below --fmax %g", p->fmin,
				 o->high_freq);
}

void gpumel_resolve(const struct options *o, mel_params *p)
{
	*p = o->p;
	mel_preset_fill(o->preset, o->given, p);
	check_usage(o, p);
}

/* Milliseconds in samples at the rate sr, as torchaudio computes it
 * (int(sample_rate * ms * 0.001)). */
static uint32_t ms_samples(double sr, double ms)
{
	double n = sr * ms * 0.001;

	return n >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* fbank's frame length or shift in *n: given in samples (*n, not 0), in
 * milliseconds (ms, not 0) or neither (def_ms). Given both ways they must
 * agree at the rate sr: -1 after a message naming both when not. */
static int kaldi_samples(double sr, const char *ms_opt, double ms,
			 double def_ms, const char *opt, uint32_t *n)
{
	if (!*n) {
		*n = ms_samples(sr, ms ? ms : def_ms);
		return 0;
	}
	if (!ms || ms_samples(sr, ms) == *n)
		return 0;
	prog_err("%s %g is %" PRIu32 " %s at the stream's sample_rate %g, "
		 "not the %" PRIu32 " of %s: give one of them", ms_opt, ms,
		 ms_samples(sr, ms), prog_plural(ms_samples(sr, ms), "sample",
						 "samples"), sr, *n, opt);
	return -1;
}

static uint32_t next_pow2(uint32_t n)
{
	uint32_t v = 1;

	while (v < n && v < (1u << 31))
		v <<= 1;
	return v;
}

/* The highest frequency --fmax or --high-freq gives (their value, or
 * Kaldi's reading of one not above 0: that far below Nyquist). */
static double high_freq_hz(const struct options *o, double nyquist)
{
	return o->high_freq > 0.0 ? o->high_freq : nyquist + o->high_freq;
}

/* fbank's frame and FFT sizes and band edges for the sample rate sr;
 * -1 after a message. */
static int resolve_kaldi(const struct options *o, mel_params *p, double sr)
{
	double nyquist = sr / 2.0;

	if (kaldi_samples(sr, "--frame-length-ms", o->frame_ms,
			  MEL_KALDI_FRAME_MS, "--win-length", &p->win_length) ||
	    kaldi_samples(sr, "--frame-shift-ms", o->shift_ms,
			  MEL_KALDI_SHIFT_MS, "--hop", &p->hop_length))
		return -1;
	if (p->win_length < 2 || p->hop_length < 1 ||
	    p->win_length > MAX_FFT || p->hop_length > INT32_MAX) {
		prog_err("a frame of %" PRIu32 " %s every %" PRIu32 " "
			 "(sample_rate %g): the frame must hold 2 to %u "
			 "samples, the shift at least 1", p->win_length,
			 prog_plural(p->win_length, "sample", "samples"),
			 p->hop_length, sr, MAX_FFT);
		return -1;
	}
	if (!o->given[MEL_F_N_FFT])
		p->n_fft = p->k.round_pow2 ? next_pow2(p->win_length) :
					     p->win_length;
	if (p->n_fft < p->win_length || p->n_fft > MAX_FFT) {
		prog_err("--n-fft %" PRIu32 " is shorter than the frame of "
			 "%" PRIu32 " samples", p->n_fft, p->win_length);
		return -1;
	}
	if (p->center && p->hop_length > p->win_length) {
		prog_err("--no-snip-edges: the frame shift (%" PRIu32 " "
			 "samples) is longer than the frame (%" PRIu32 ")",
			 p->hop_length, p->win_length);
		return -1;
	}
	/* Kaldi's high_freq: 0 (not given too) the Nyquist frequency */
	p->fmax = high_freq_hz(o, nyquist);
	if (p->fmin >= nyquist || p->fmax <= 0.0 || p->fmax > nyquist ||
	    p->fmax <= p->fmin) {
		prog_err("--low-freq %g and --high-freq %g do not suit the "
			 "stream's sample_rate %g (0 <= low < high <= %g)",
			 p->fmin, o->high_freq, sr, nyquist);
		return -1;
	}
	return 0;
}

int gpumel_resolve_rate(const struct options *o, mel_params *p, double sr)
{
	double nyquist = sr / 2.0;

	p->sample_rate = sr;
	if (p->feature == MEL_FEAT_FBANK)
		return resolve_kaldi(o, p, sr);
	p->fmax = o->given[MEL_F_FMAX] ? high_freq_hz(o, nyquist)
				       : mel_preset_fmax(o->preset, sr);
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

/* feature: bands (mel or fbank), or mfcc with the bands it is made of
 * (mfcc_bands), its count and fbank's lifter. */
static int header_feature(rec_header *h, const mel_params *p,
			  const char *bands)
{
	int e = 0;

	if (!p->n_mfcc)
		return rec_header_set(h, "feature", bands);
	e |= rec_header_set(h, "feature", "mfcc");
	e |= rec_header_set(h, "mfcc_bands", bands);
	e |= rec_header_set_u64(h, "n_mfcc", p->n_mfcc);
	if (p->feature == MEL_FEAT_FBANK)
		e |= rec_header_set_double(h, "cepstral_lifter", p->lifter);
	return e;
}

/* A parameter held in a float, as the shortest decimal that reads back
 * as that float: the value given (0.97), not the float widened to double
 * (0.97000002861022949), which no one typed. Nine digits always do. */
static int header_set_float(rec_header *h, const char *key, float v)
{
	char buf[32];

	for (int digits = 1; digits <= 9; digits++) {
		snprintf(buf, sizeof(buf), "%.*g", digits, (double)v);
		if (strtof(buf, NULL) == v)
			break;
	}
	return rec_header_set(h, key, buf);
}

/* fbank's parameters, as Kaldi names its options. */
static int header_kaldi(rec_header *h, const mel_params *p)
{
	int e = 0;

	e |= header_feature(h, p, "fbank");
	e |= rec_header_set_u64(h, "n_fft", p->n_fft);
	e |= rec_header_set_u64(h, "win_length", p->win_length);
	e |= rec_header_set_u64(h, "hop_length", p->hop_length);
	e |= rec_header_set(h, "window", window_names[p->window]);
	e |= rec_header_set(h, "snip_edges", p->center ? "0" : "1");
	e |= rec_header_set_u64(h, "n_mels", p->n_mels);
	e |= rec_header_set_u64(h, "n_features", mel_n_rows(p));
	e |= rec_header_set_double(h, "fmin", p->fmin);
	e |= rec_header_set_double(h, "fmax", p->fmax);
	e |= rec_header_set(h, "mel_scale", "kaldi");
	e |= rec_header_set_u64(h, "power", (uint64_t)p->power);
	e |= rec_header_set(h, "log", log_names[p->log]);
	e |= rec_header_set_double(h, "amin", p->amin);
	e |= rec_header_set_double(h, "dither", p->k.dither);
	e |= rec_header_set_u64(h, "seed", p->k.seed);
	e |= header_set_float(h, "preemphasis", p->k.preemphasis);
	e |= rec_header_set(h, "remove_dc_offset", p->k.remove_dc ? "1" : "0");
	e |= rec_header_set(h, "use_energy", p->k.use_energy ? "1" : "0");
	e |= rec_header_set(h, "raw_energy", p->k.raw_energy ? "1" : "0");
	e |= rec_header_set_double(h, "energy_floor", p->k.energy_floor);
	return e;
}

int gpumel_header_params(rec_header *h, const mel_params *p)
{
	char top[32];
	int e = 0;

	if (p->feature == MEL_FEAT_FBANK)
		return header_kaldi(h, p);
	snprintf(top, sizeof(top), "%.17g", p->top_db);
	e |= header_feature(h, p, "mel");
	e |= rec_header_set_u64(h, "n_fft", p->n_fft);
	e |= rec_header_set_u64(h, "win_length", p->win_length);
	e |= rec_header_set_u64(h, "hop_length", p->hop_length);
	e |= rec_header_set(h, "window", window_names[p->window]);
	e |= rec_header_set(h, "center", p->center ? "1" : "0");
	e |= rec_header_set(h, "pad_mode", pad_names[p->pad_mode]);
	e |= rec_header_set_u64(h, "n_mels", p->n_mels);
	e |= rec_header_set_u64(h, "n_features", mel_n_rows(p));
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
