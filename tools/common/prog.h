/*
 * prog.h - what every melpipe program shares: its name in messages, the
 * exit codes, verbosity, checked option arguments. Programs only: lib/
 * never prints or exits.
 */
#ifndef MELPIPE_PROG_H
#define MELPIPE_PROG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>

#define MELPIPE_VERSION "0.1.0"

struct rec_writer; /* lib/rec.h */
struct rec_reader;

/* One convention for the whole suite. */
#define EXIT_OK 0    /* done; per-item problems were warned about */
#define EXIT_FAIL 1  /* runtime failure: bad input stream, I/O, --strict */
#define EXIT_USAGE 2 /* bad command line */

extern const char *prog_name;
/* -1 with -q, 0 by default, +1 for each -v. */
extern int prog_verbosity;

/* Sets the program name, ignores SIGPIPE so that a closed output shows as
 * EPIPE and gets a message instead of a silent death. */
void prog_init(const char *name);

/* "prog: message" on stderr. err always; warn unless -q; info with -v. */
void prog_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void prog_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void prog_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* prog_err() then exit(EXIT_FAIL). */
noreturn void prog_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* A usage error: the message, a pointer to --help, exit(EXIT_USAGE). */
noreturn void prog_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* The pointer to --help and exit(EXIT_USAGE), for a usage error already
 * reported: getopt_long's own message on an unknown option or a missing
 * argument ('?'). */
noreturn void prog_usage_hint(void);
/* Prints "prog (melpipe) VERSION" to stdout; with -v (anywhere on the
 * command line: prog_common_opt() reads past -V for it) a second line,
 * "build id HEX" (lib/buildid.h). */
void prog_version(void);

/* Refuses (usage error) to write binary records to a terminal on fd. */
void prog_refuse_tty(int fd);

/* The record input: FILE, or stdin when path is NULL (a usage error when
 * stdin is a terminal). -1 after a message naming the file and why. */
int prog_open_input(const char *path);
/* The record output: stdout when path is NULL, else FILE; refuses a
 * terminal (usage error). A file is written under a temporary name in its
 * folder and takes the name FILE only at prog_commit_output() (see
 * outfile.h): a failed or killed run leaves no FILE, or the previous one
 * intact. A fifo or a device is written directly. -1 after a message. */
int prog_open_output(const char *path);
/* Once the stream is complete (its trailer written): closes fd (stdout
 * too: the next stage sees the end at once) and, for a file, syncs it and
 * puts it in place. 0, or -1 after a message naming path (NULL: standard
 * output), with no file put in place. */
int prog_commit_output(int fd, const char *path);
/* On failure: closes fd (not stdout) and removes the temporary file.
 * Accepts -1. */
void prog_abort_output(int fd);

/* How messages name an output: path, or "standard output" for NULL. What
 * a stage gives rec_writer_opts.name, so that prog_write_failed() can
 * take it off the writer's detail. */
const char *prog_output_name(const char *path);
/* Reports that writing to path (NULL: standard output) failed with errno
 * errnum, in one line: "unable to write to 'out.rec': No space left on
 * device"; a reader gone away (EPIPE) is said as such: "unable to write
 * to standard output: Broken pipe (the next stage stopped reading)". */
void prog_write_error(const char *path, int errnum);
/* The same for the record writer w (NULL when it did not open) that
 * failed with err (0 when not known: the detail tells), from its detail
 * (less the output's name, given it as prog_output_name(path)), or
 * rec_strerror(err). Returns -1. */
int prog_write_failed(const char *path, const struct rec_writer *w,
		      int err);
/* prog_write_failed()'s message, without the program's name, into buf of
 * n bytes: for a thread that hands its message on. */
void prog_write_why(char *buf, size_t n, const char *path,
		    const struct rec_writer *w, int err);

/* "clip" or "clips", as n asks: for counts in messages ("1 clip", "0
 * clips", "2 clips"). */
const char *prog_plural(uint64_t n, const char *one, const char *many);

/* Option arguments: on a bad value a usage error naming the option, the
 * value and the range as a person writes it ("--zstd: 30 is out of
 * range: give a whole number from 1 to 19"). */
uint64_t prog_arg_u64(const char *opt, const char *arg, uint64_t min,
		      uint64_t max);
uint64_t prog_arg_size(const char *opt, const char *arg, uint64_t min,
		       uint64_t max); /* K/M/G suffixes */
double prog_arg_double(const char *opt, const char *arg, double min,
		       double max);
/* The same for a range open below: more than above, at most max. */
double prog_arg_double_above(const char *opt, const char *arg, double above,
			     double max);

/* The folder holding this program's binary (from /proc/self/exe) into
 * buf: where the files installed beside the programs are looked for.
 * 0, or -1 when it cannot be read or does not fit in len bytes. */
int prog_exe_dir(char *buf, size_t len);

/* Where melpipe's documents are (README.md, formats/, docs/), for --help
 * texts: "in FOLDER", FOLDER found from this program's folder:
 * PREFIX/share/doc/melpipe from PREFIX/bin once installed, the repository
 * from its bin/; the environment's MELPIPE_DOC_DIR where set (make man
 * sets it to the folder make install fills). Where none holds
 * formats/record.md, words that say where an install puts them. Never
 * NULL; a static buffer. */
const char *prog_doc_where(void);

/* b as "N bytes" ("1 byte"), "N.N MB" (from 10 MB) or "N.N GB" (from
 * 10 GB), for -v reports, in buf of n bytes. */
void prog_human_bytes(char *buf, size_t n, uint64_t b);

/* Seconds on a monotonic clock, for -v timing reports. */
double prog_now(void);

/* The CPUs this process may run on (its affinity mask: taskset, a
 * container's cpuset), at least 1; the online CPUs where the mask cannot
 * be read. What -j defaults to. */
size_t prog_cpus(void);

/* The environment every stage reads (env.c). Each value is taken as a
 * person writes it: on, yes, true or 1; off, no, false or 0 (any case);
 * unset or empty is the default. Another value is a usage error naming
 * the variable, the value and what to give (exit(EXIT_USAGE)). */

/* A switch's word as above: 1 for on, yes, true or 1, 0 for off, no,
 * false or 0 (any case), -1 for anything else. For a program's own
 * variables (gpumel's MELPIPE_GPUMEL_DETACH). */
int prog_env_word(const char *s);

/* The rec_writer_opts.zero_copy a stage asks for, from
 * MELPIPE_ZERO_COPY: 1 (the default: vmsplice into a pipe read by this
 * suite's programs) or 0 (off: to compare, or to rule it out). */
int prog_zero_copy(void);

/* The rec_writer_opts.shm and rec_reader_opts.shm a stage asks for, from
 * MELPIPE_SHM: 1 (the default: payloads by reference in shared memory
 * between stages of this build, formats/record.md version 5), 0 (off:
 * payloads in the pipes), 2 (offered to any one process reading, for
 * stages run under valgrind). */
int prog_shm(void);

/* The rec_writer_opts.shm_bytes a stage asks for: 0 (the default ring)
 * or MELPIPE_SHM_RING_MB MiB (1 to 65536). */
uint64_t prog_shm_bytes(void);

/* The "Environment:" section of every stage's --help, the three
 * variables above, their values and defaults, then own (a program's own
 * variables, in the same layout; NULL for none), to f; a usage() calls
 * it before its "Exit status". */
void prog_usage_env(FILE *f, const char *own);

/* Whether the output prog_open_output() opened is a pipe or a fifo (0
 * before it is opened): where vmsplice and shared memory may apply. */
int prog_output_is_pipe(void);

/* With -v: one line saying how much of w's output went to the pipe
 * without a copy (vmsplice), or that it was copied and why: the output
 * prog_open_output() opened is a file, a device or a socket, not a pipe
 * ("output: copied (write), not vmsplice: 'out.rec' is a file, not a
 * pipe"), the pipe's reader, the system or MELPIPE_ZERO_COPY refused. */
void prog_report_spliced(const struct rec_writer *w);

/* With -v: what went (prog_report_shm_out) or came (_in) in shared
 * memory, or why nothing did. */
void prog_report_shm_out(const struct rec_writer *w);
void prog_report_shm_in(const struct rec_reader *r);

#endif
