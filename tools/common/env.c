/*
 * env.c - the environment variables every stage reads (MELPIPE_SHM,
 * MELPIPE_SHM_RING_MB, MELPIPE_ZERO_COPY): their values, taken as a
 * person writes them, and the one "Environment:" section of --help that
 * says them, so that each program's help says the same.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "prog.h"

/* The words a switch takes, any case: on, then off. */
static const char *const words_on[] = { "1", "on", "yes", "true", NULL };
static const char *const words_off[] = { "0", "off", "no", "false", NULL };

static int is_one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (strcasecmp(s, *words) == 0)
			return 1;
	return 0;
}

int prog_env_word(const char *s)
{
	if (is_one_of(s, words_on))
		return 1;
	if (is_one_of(s, words_off))
		return 0;
	return -1;
}

/*
 * The environment variable name as a switch: 1 for on (1, yes, true), 0
 * for off (0, no, false), any case; 1 too when it is unset or empty (every
 * switch here is on by default). extra, when not NULL, is one more value
 * the variable takes, returned as 2. Anything else is a usage error
 * naming the variable, the value and what to give (give: the values in
 * words).
 */
static int env_switch(const char *name, const char *extra, const char *give)
{
	const char *e = getenv(name);
	int w = e && *e ? prog_env_word(e) : 1;

	if (w >= 0)
		return w;
	if (extra && strcasecmp(e, extra) == 0)
		return 2;
	prog_usage_error("%s=%s: not a value it takes: give %s", name, e,
			 give);
}

int prog_shm(void)
{
	/* on by default: faster than the pipes on both jobs measured
	 * (docs/BENCHMARKS.md); it engages only between two stages of one
	 * build, and falls back by itself */
	return env_switch("MELPIPE_SHM", "2", "on (or 1, yes, true; the "
			  "default), off (or 0, no, false), or 2 (the ring "
			  "offered to any one process that reads)");
}

int prog_zero_copy(void)
{
	return env_switch("MELPIPE_ZERO_COPY", NULL, "on (or 1, yes, true; "
			  "the default) or off (or 0, no, false)");
}

uint64_t prog_shm_bytes(void)
{
	const char *e = getenv("MELPIPE_SHM_RING_MB");
	char *end;
	unsigned long mb;

	if (e == NULL || *e == '\0')
		return 0;
	errno = 0;
	mb = strtoul(e, &end, 10);
	if (errno || *end != '\0' || mb == 0 || mb > 65536)
		prog_usage_error("MELPIPE_SHM_RING_MB=%s: not a number of "
				 "MiB from 1 to 65536", e);
	return (uint64_t)mb << 20;
}

void prog_usage_env(FILE *f, const char *own)
{
	fputs(
"Environment:\n"
"  MELPIPE_SHM         between two stages of this build on one host, the\n"
"                      samples travel in shared memory and the pipe\n"
"                      carries references to them: on (the default; or 1,\n"
"                      yes, true), off (or 0, no, false: every payload in\n"
"                      the pipe), or 2: the ring offered to any one\n"
"                      process that reads, whatever program it runs (a\n"
"                      stage run under valgrind). A file, or a reader\n"
"                      that is not a stage of this build (cat, ssh), gets\n"
"                      the payloads in the stream, and the dataset is the\n"
"                      same either way; -v says what went by reference,\n"
"                      or why nothing did\n"
"  MELPIPE_SHM_RING_MB the ring of shared memory a stage that writes\n"
"                      samples (wavcat, segment, recmerge) offers, in MiB:\n"
"                      1 to 65536 (default 64)\n"
"  MELPIPE_ZERO_COPY   on (the default; or 1, yes, true): a stage that\n"
"                      writes a stream hands its pages to a pipe read by\n"
"                      a stage of this build (vmsplice); off (or 0, no,\n"
"                      false): it copies them (write)\n", f);
	if (own)
		fputs(own, f);
	fprintf(f,
"  The words are taken in any case; another value is a usage error.\n"
"  formats/record.md (Shared memory) and docs/design.md say more\n"
"  (%s).\n"
"\n", prog_doc_where());
}
