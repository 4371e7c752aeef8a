/*
 * wavcat_opts.h - wavcat's command line: the options, --help, and their
 * checks against each other (wavcat_opts.c).
 *
 * Usage errors exit with EXIT_USAGE after a message; --help and --version
 * exit with EXIT_OK.
 */
#ifndef MELPIPE_WAVCAT_OPTS_H
#define MELPIPE_WAVCAT_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/opts.h"
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

/* Parses argv into o; the inputs are argv[optind] on. */
void parse_options(int argc, char **argv, struct options *o);

#endif
