/*
 * buildid-check - test helper: lib/buildid's checks from the shell.
 *
 *   buildid-check id              this build's id, in hex
 *   buildid-check file PATH...    whether each executable carries it
 *   buildid-check pid PID...      whether each process's program does
 *   buildid-check readers [NAME]...
 *                                 whether the readers of standard output
 *                                 are programs of this build (named NAME
 *                                 when names are given), then copies
 *                                 standard input to standard output
 *   buildid-check time N TARGET   the time of N checks of TARGET (a file,
 *                                 or pid:PID; pipe:FD for the check of
 *                                 the readers of pipe FD)
 *
 * file and pid print "WHAT: VERDICT" for each (VERDICT as
 * buildid_strerror() says it: "of this build", "not a melpipe program",
 * "a melpipe program of another build") and exit 0 when every one is of
 * this build, 1 otherwise. readers says "readers: of this build" or
 * "readers: WHY" (buildid_pipe_readers()) on standard error, where a
 * writer's -v says why it did not vmsplice. It checks once the first 4
 * KiB it passed on have been read (for 5 s at most): by then the reader
 * runs its program, not the shell that started it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/buildid.h"
#include "../../lib/xio.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int check_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int e;

	if (fd < 0)
		return -errno;
	e = buildid_check_fd(fd);
	close(fd);
	return e;
}

static int check_each(int argc, char **argv, int pids)
{
	int bad = 0;

	for (int i = 0; i < argc; i++) {
		int e = pids ? buildid_check_pid(strtol(argv[i], NULL, 10))
			     : check_file(argv[i]);

		printf("%s: %s\n", argv[i], buildid_strerror(e));
		bad |= e != 0;
	}
	return bad;
}

/* Copies what is left of standard input to standard output. */
static int copy_rest(char *buf, size_t size)
{
	ssize_t n;

	while ((n = xio_read_some(STDIN_FILENO, buf, size)) > 0)
		if (xio_write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
			return -1;
	return n < 0 ? -1 : 0;
}

/* The check of the readers of standard output, once one of them has read
 * the first bytes of standard input: a reader that reads runs its own
 * program, not the shell that forked it. */
static int readers(char **names)
{
	static char buf[65536];
	char why[256];
	ssize_t n = xio_read_some(STDIN_FILENO, buf, 4096);
	int ok;

	if (n < 0 || xio_write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
		return 1;
	for (int tries = 0; tries < 5000 && xio_pipe_unread(STDOUT_FILENO) > 0;
	     tries++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	ok = buildid_pipe_readers(STDOUT_FILENO,
				  names[0] ? (const char *const *)names : NULL,
				  why, sizeof(why), NULL);
	fprintf(stderr, "readers: %s\n", ok ? "of this build" : why);
	return copy_rest(buf, sizeof(buf)) < 0 || !ok;
}

/* The time of n checks of target; prints it in microseconds per check
 * with the last verdict. */
static int timing(long n, const char *target)
{
	char why[256] = "";
	double t0 = now(), dt;
	int e = 0;

	for (long i = 0; i < n; i++) {
		if (strncmp(target, "pid:", 4) == 0)
			e = buildid_check_pid(strtol(target + 4, NULL, 10));
		else if (strncmp(target, "pipe:", 5) == 0)
			e = buildid_pipe_readers((int)strtol(target + 5, NULL,
							     10),
						 NULL, why, sizeof(why),
						 NULL) ? 0
			    : -1;
		else
			e = check_file(target);
	}
	dt = now() - t0;
	printf("%s: %.1f us per check over %ld (%s)\n", target,
	       dt / (double)n * 1e6, n,
	       why[0] ? why : e == -1 ? "refused" : buildid_strerror(e));
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (strcmp(cmd, "id") == 0 && argc == 2) {
		printf("%s\n", buildid_hex());
		return 0;
	}
	if (strcmp(cmd, "file") == 0 && argc > 2)
		return check_each(argc - 2, argv + 2, 0);
	if (strcmp(cmd, "pid") == 0 && argc > 2)
		return check_each(argc - 2, argv + 2, 1);
	if (strcmp(cmd, "readers") == 0)
		return readers(argv + 2);
	if (strcmp(cmd, "time") == 0 && argc == 4)
		return timing(strtol(argv[2], NULL, 10), argv[3]);
	fprintf(stderr, "usage: buildid-check id | file PATH... | pid PID... "
		"| readers [NAME]... | time N TARGET\n");
	return 2;
}
