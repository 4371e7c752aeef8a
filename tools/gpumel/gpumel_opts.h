/*
 * gpumel_opts.h - gpumel's command line: the options, their parsing, and
 * the transform's parameters resolved from them (the preset's values for
 * those not given, then fmax from the stream's sample rate).
 *
 * Usage errors exit with EXIT_USAGE after a message; --help and --version
 * exit with EXIT_OK.
 */
#ifndef MELPIPE_GPUMEL_OPTS_H
#define MELPIPE_GPUMEL_OPTS_H

#include <stddef.h>

#include "../../lib/rec.h"
#include "backend.h"
#include "mel_presets.h"
#include "../common/opts.h"

enum device { DEV_AUTO, DEV_CPU, DEV_CUDA };

struct options {
	mel_params p;          /* the values given; see given[] */
	int given[MEL_F_COUNT];
	/* fbank's frames in milliseconds, 0 where not given (25 and 10,
	 * unless given in samples as win_length and hop_length; given both
	 * ways they must agree at the stream's rate), and --high-freq (0:
	 * Nyquist, < 0: below it) */
	double frame_ms, shift_ms, high_freq;
	int given_high_freq;
	/* the first option given that only fbank (Kaldi) has, and the first
	 * that only mel has, for the usage error; NULL: none */
	const char *kaldi_only, *mel_only;
	int preset;            /* enum mel_preset */
	int device;            /* enum device */
	int cuda_index;        /* -1: the first usable GPU */
	struct prog_common co; /* -q -v -h -V -o -j, as every program */
	int jobs;              /* -j, or the CPUs it may use */
	size_t batch;          /* records per batch; 0: from the data */
	const char *input;     /* NULL: stdin */
	const char *output;    /* co.output; NULL: stdout */
};

/* Parses the command line into *o. */
void gpumel_parse_args(int argc, char **argv, struct options *o);

/* Fills in every parameter that was not given from the preset (or the
 * plain defaults), except fmax, which needs the sample rate, then checks
 * what can be checked before the stream's sample rate is known. */
void gpumel_resolve(const struct options *o, mel_params *p);

/* Sets the sample rate and fmax; -1 after a message when a parameter
 * does not suit the stream. */
int gpumel_resolve_rate(const struct options *o, mel_params *p, double sr);

/* Adds every parameter of p to h, named and spelled as the options name
 * them (n_fft, window hann, ...); nonzero when out of memory. */
int gpumel_header_params(rec_header *h, const mel_params *p);

#endif
