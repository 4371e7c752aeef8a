/*
 * opts.h - the options every melpipe program shares, handled in one place
 * so that they mean the same in each: -q, -v, -h, -V, -o and -j.
 */
#ifndef MELPIPE_OPTS_H
#define MELPIPE_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* The most threads -j/--jobs asks for in any program; a program may use
 * fewer (its --help says so). */
#define PROG_MAX_JOBS 1024

/* What the shared options leave for the program to use. */
struct prog_common {
	const char *output;  /* -o, --output: NULL when not given */
	size_t jobs;         /* -j, --jobs: 1..PROG_MAX_JOBS, 0 when not
				given (the program's default) */
};

/*
 * Handles option c (from getopt_long; arg is its optarg) when it is one
 * of the shared ones, and returns 1; returns 0 for any other c, which the
 * caller handles (its own options, '?' for an unknown one):
 *
 *   -q, --quiet    prog_verbosity = -1: errors only
 *   -v, --verbose  one more level; after -q, level 1 (the later wins)
 *   -h, --help     usage(stdout), exit(EXIT_OK)
 *   -V, --version  prog_version(), exit(EXIT_OK); a -q or -v after it
 *                  counts as one before it
 *   -o, --output   co->output = arg
 *   -j, --jobs     co->jobs = arg, checked: 1..PROG_MAX_JOBS, else a
 *                  usage error (exit(EXIT_USAGE))
 *
 * A program offers the letters it lists in its getopt string and long
 * options (the long ones map to the letters); the others never reach
 * here. co may be NULL for a program without -o and -j: then 0 for them.
 * Call it first in the getopt loop:
 *
 *   while ((c = prog_getopt(argc, argv, "hj:o:qVv", longopts)) != -1)
 *           if (!prog_common_opt(c, optarg, &o->co, usage))
 *                   parse_own(o, c, optarg);
 */
int prog_common_opt(int c, const char *arg, struct prog_common *co,
		    void (*usage)(FILE *));

/*
 * getopt_long(argc, argv, shortopts, longopts, NULL), whose own messages
 * (an unknown option, a missing argument) start with prog_name, as every
 * other message does, rather than with the path the program was run as
 * ("segment: unrecognized option '--bogus'", not "bin/segment: ...").
 * It returns '?' after such a message: the caller then gives
 * prog_usage_hint().
 */
int prog_getopt(int argc, char **argv, const char *shortopts,
		const struct option *longopts);
/* The same, with getopt_long's longindex: the index in longopts of the
 * long option found (left as it was for a short one). */
int prog_getopt_index(int argc, char **argv, const char *shortopts,
		      const struct option *longopts, int *longindex);

#endif
