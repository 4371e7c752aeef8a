/* opts.c - the options every program shares (opts.h). */
#include "opts.h"

#include <stdio.h>
#include <stdlib.h>

#include "prog.h"

/* The command line prog_getopt_index() goes through, for -V. */
static struct {
	int argc;
	char **argv;
	const char *shortopts;
	const struct option *longopts;
} cmdline;

/* The later of -q and -v wins: "-q -v" is verbose, "-v -q" quiet, so
 * that a -v added to a command line (or alias) that says -q takes
 * effect, as the last of two conflicting options does elsewhere. */
static void set_verbosity(int c)
{
	if (c == 'q')
		prog_verbosity = -1;
	else
		prog_verbosity = prog_verbosity < 0 ? 1 : prog_verbosity + 1;
}

/* -V exits at once; the -q and -v after it count all the same (the
 * later wins, as ever), so that "-V -v" says the build id as "-v -V"
 * does. The rest of the command line is read for them alone, silently:
 * its other options and mistakes are the run's, which -V ends. */
static void verbosity_after_version(void)
{
	int c, err = opterr;

	if (cmdline.argv == NULL)
		return;
	opterr = 0;
	while ((c = getopt_long(cmdline.argc, cmdline.argv, cmdline.shortopts,
				cmdline.longopts, NULL)) != -1)
		if (c == 'q' || c == 'v')
			set_verbosity(c);
	opterr = err;
}

int prog_common_opt(int c, const char *arg, struct prog_common *co,
		    void (*usage)(FILE *))
{
	switch (c) {
	case 'h':
		usage(stdout);
		exit(EXIT_OK);
	case 'V':
		verbosity_after_version();
		prog_version();
		exit(EXIT_OK);
	case 'q':
	case 'v':
		set_verbosity(c);
		return 1;
	case 'j':
		if (!co)
			return 0;
		co->jobs = (size_t)prog_arg_u64("--jobs", arg, 1,
						PROG_MAX_JOBS);
		return 1;
	case 'o':
		if (!co)
			return 0;
		co->output = arg;
		return 1;
	default:
		return 0;
	}
}

int prog_getopt(int argc, char **argv, const char *shortopts,
		const struct option *longopts)
{
	return prog_getopt_index(argc, argv, shortopts, longopts, NULL);
}

int prog_getopt_index(int argc, char **argv, const char *shortopts,
		      const struct option *longopts, int *longindex)
{
	/* getopt_long names the program by argv[0] (only to print it, and
	 * never moves it): ours for the call, a copy as argv is not const */
	static char name[64];
	char *run_as = argv[0];
	int c;

	snprintf(name, sizeof(name), "%s", prog_name);
	cmdline.argc = argc;
	cmdline.argv = argv;
	cmdline.shortopts = shortopts;
	cmdline.longopts = longopts;
	argv[0] = name;
	c = getopt_long(argc, argv, shortopts, longopts, longindex);
	argv[0] = run_as;
	return c;
}
