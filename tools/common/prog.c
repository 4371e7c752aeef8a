/* prog.c - messages, exit codes and option arguments for every program. */
#include "prog.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/buildid.h"
#include "../../lib/opt.h"
#include "../../lib/rec.h"
#include "outfile.h"

const char *prog_name = "melpipe";
int prog_verbosity;

void prog_init(const char *name)
{
	prog_name = name;
	signal(SIGPIPE, SIG_IGN);
}

static void vmsg(const char *fmt, va_list ap)
{
	char buf[4096];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "%s: %s\n", prog_name, buf);
}

void prog_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void prog_warn(const char *fmt, ...)
{
	va_list ap;

	if (prog_verbosity < 0)
		return;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void prog_info(const char *fmt, ...)
{
	va_list ap;

	if (prog_verbosity < 1)
		return;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void prog_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	exit(EXIT_FAIL);
}

void prog_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	prog_usage_hint();
}

void prog_usage_hint(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", prog_name);
	exit(EXIT_USAGE);
}

/* With -v, a second line: the build id, which two programs
 * share when built from the same sources with the same flags (the zero
 * copy path is taken only between such programs: lib/buildid.h). Without,
 * the one line that help2man and scripts read. */
void prog_version(void)
{
	printf("%s (melpipe) %s\n", prog_name, MELPIPE_VERSION);
	if (prog_verbosity > 0)
		printf("build id %s\n", buildid_hex());
}

void prog_refuse_tty(int fd)
{
	if (isatty(fd))
		prog_usage_error("refusing to write binary records to a "
				 "terminal; redirect or pipe the output");
}

/* Option-argument messages say the range as a person writes it: "give a
 * whole number from 1 to 19", "give a size from 4K to 16M", "give a
 * number above 0, at most 10000000" (no "1e+07"). */

/* v as a person writes it: 10000000, 0.001, 1e-30 (not 1e+07, 1e-09). */
static void fmt_double(char *buf, size_t n, double v)
{
	char *e;

	if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(buf, n, "%.0f", v);
		return;
	}
	snprintf(buf, n, "%g", v);
	e = strchr(buf, 'e');
	if (!e)
		return;
	e++;
	if (*e == '+')
		memmove(e, e + 1, strlen(e));
	else if (*e == '-')
		e++;
	while (e[0] == '0' && e[1] != '\0')
		memmove(e, e + 1, strlen(e));
}

/* v with the largest K/M/G/T suffix that divides it: 4096 as 4K. */
static void fmt_size(char *buf, size_t n, uint64_t v)
{
	static const char suffix[] = "KMGT";
	int i = -1;

	while (i < 3 && v && v % 1024 == 0) {
		v /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, n, "%" PRIu64, v);
	else
		snprintf(buf, n, "%" PRIu64 "%c", v, suffix[i]);
}

/* The usage error for arg of opt (err: opt_parse_*'s), ending with what
 * to give. */
noreturn static void bad_arg(const char *opt, const char *arg, int err,
			     const char *give)
{
	if (err == OPT_E_RANGE)
		prog_usage_error("%s: %s is out of range: give %s", opt, arg,
				 give);
	prog_usage_error("%s: '%s' is not a number: give %s", opt, arg, give);
}

uint64_t prog_arg_u64(const char *opt, const char *arg, uint64_t min,
		      uint64_t max)
{
	char give[96];
	uint64_t v;
	int err = opt_parse_u64(arg, min, max, 0, &v);

	if (err) {
		if (max == UINT64_MAX && min > 0)
			snprintf(give, sizeof(give), "a whole number, at least "
				 "%" PRIu64, min);
		else
			snprintf(give, sizeof(give), "a whole number from %"
				 PRIu64 " to %" PRIu64, min, max);
		bad_arg(opt, arg, err, give);
	}
	return v;
}

uint64_t prog_arg_size(const char *opt, const char *arg, uint64_t min,
		       uint64_t max)
{
	char give[128], lo[32], hi[32];
	uint64_t v;
	int err = opt_parse_u64(arg, min, max, OPT_SUFFIX, &v);

	if (err) {
		fmt_size(lo, sizeof(lo), min);
		fmt_size(hi, sizeof(hi), max);
		snprintf(give, sizeof(give), "a size from %s to %s (suffixes K, M, "
			 "G, T: powers of 1024)", lo, hi);
		bad_arg(opt, arg, err, give);
	}
	return v;
}

double prog_arg_double(const char *opt, const char *arg, double min,
		       double max)
{
	char give[96], lo[32], hi[32];
	double v;
	int err = opt_parse_double(arg, min, max, &v);

	if (err) {
		fmt_double(lo, sizeof(lo), min);
		fmt_double(hi, sizeof(hi), max);
		snprintf(give, sizeof(give), "a number from %s to %s", lo, hi);
		bad_arg(opt, arg, err, give);
	}
	return v;
}

double prog_arg_double_above(const char *opt, const char *arg, double above,
			     double max)
{
	char give[96], lo[32], hi[32];
	double v;
	int err = opt_parse_double(arg, -DBL_MAX, max, &v);

	if (!err && !(v > above))
		err = OPT_E_RANGE;
	if (err) {
		fmt_double(lo, sizeof(lo), above);
		fmt_double(hi, sizeof(hi), max);
		snprintf(give, sizeof(give), "a number above %s, at most %s",
			 lo, hi);
		bad_arg(opt, arg, err, give);
	}
	return v;
}

size_t prog_cpus(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (size_t)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (size_t)n : 1;
}

int prog_exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len);
	char *slash;

	if (n <= 0 || (size_t)n >= len)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

/* Whether folder dir holds melpipe's documents. */
static int holds_docs(const char *dir)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/formats/record.md", dir);
	return access(path, R_OK) == 0;
}

const char *prog_doc_where(void)
{
	static const char *const beside[] = {
		"../share/doc/melpipe", ".."
	};
	static char where[PATH_MAX + 8];
	char exe[PATH_MAX], path[PATH_MAX + 32], dir[PATH_MAX];
	const char *env = getenv("MELPIPE_DOC_DIR");

	if (env && *env) {
		snprintf(where, sizeof(where), "in %s", env);
		return where;
	}
	if (prog_exe_dir(exe, sizeof(exe)) == 0)
		for (size_t i = 0; i < sizeof(beside) / sizeof(*beside); i++) {
			snprintf(path, sizeof(path), "%s/%s", exe, beside[i]);
			if (realpath(path, dir) && holds_docs(dir)) {
				snprintf(where, sizeof(where), "in %s", dir);
				return where;
			}
		}
	return "in share/doc/melpipe under melpipe's install prefix";
}

void prog_human_bytes(char *buf, size_t n, uint64_t b)
{
	if (b >= 10ull << 30)
		snprintf(buf, n, "%.1f GB", (double)b / 1e9);
	else if (b >= 10ull << 20)
		snprintf(buf, n, "%.1f MB", (double)b / 1e6);
	else
		snprintf(buf, n, "%" PRIu64 " %s", b,
			 prog_plural(b, "byte", "bytes"));
}

double prog_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int prog_open_input(const char *path)
{
	int fd;

	if (!path) {
		if (isatty(STDIN_FILENO))
			prog_usage_error("refusing to read records from a "
					 "terminal; redirect or pipe the "
					 "input");
		return STDIN_FILENO;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		prog_err("unable to open '%s': %s", path, strerror(errno));
	return fd;
}

/* A target that is not a file to replace (a fifo, /dev/null): written
 * directly, as there is nothing half-written to keep from it. */
static int is_special(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
	       !S_ISDIR(st.st_mode);
}

/* The output prog_open_output() opened, for prog_report_spliced(): its
 * name as messages give it, and what it is when not a pipe ("a file"),
 * NULL for a pipe or before it is opened. */
static char out_name[512];
static const char *out_kind;

static void note_output(int fd, const char *path)
{
	struct stat st;

	if (path)
		snprintf(out_name, sizeof(out_name), "'%s'", path);
	else
		snprintf(out_name, sizeof(out_name), "standard output");
	out_kind = NULL;
	if (fstat(fd, &st) != 0 || S_ISFIFO(st.st_mode))
		return;
	out_kind = S_ISREG(st.st_mode) ? "a file"
		   : S_ISSOCK(st.st_mode) ? "a socket" : "a device";
}

int prog_open_output(const char *path)
{
	int fd;

	if (!path) {
		prog_refuse_tty(STDOUT_FILENO);
		note_output(STDOUT_FILENO, NULL);
		return STDOUT_FILENO;
	}
	if (!is_special(path)) {
		if (outfile_open(path, 0) < 0)
			return -1;
		note_output(outfile_fd(), path);
		return outfile_fd();
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		prog_err("unable to open '%s': %s", path, strerror(errno));
		return -1;
	}
	prog_refuse_tty(fd);
	note_output(fd, path);
	return fd;
}

int prog_commit_output(int fd, const char *path)
{
	if (fd >= 0 && fd == outfile_fd())
		return outfile_commit();
	if (fd >= 0 && close(fd) != 0) {
		prog_write_error(path, errno);
		return -1;
	}
	return 0;
}

const char *prog_output_name(const char *path)
{
	return path ? path : "standard output";
}

/* The one line for a failed write, into buf: reason, and for a closed
 * pipe who closed it, as "Broken pipe" alone leaves a user wondering:
 * by name where the reader was found while it read (reader, "NAME, pid
 * N", or ""). */
static void write_msg(char *buf, size_t n, const char *path,
		      const char *reason, int epipe, const char *reader)
{
	char named[160];
	const char *who = !epipe ? "" : path ? " (its reader stopped reading)"
					     : " (the next stage stopped "
					       "reading)";

	if (epipe && reader && reader[0]) {
		snprintf(named, sizeof(named), " (%s %s, stopped reading)",
			 path ? "its reader," : "the next stage,", reader);
		who = named;
	}
	if (path)
		snprintf(buf, n, "unable to write to '%s': %s%s", path, reason,
			 who);
	else
		snprintf(buf, n, "unable to write to standard output: %s%s",
			 reason, who);
}

void prog_write_error(const char *path, int errnum)
{
	char msg[1024];

	write_msg(msg, sizeof(msg), path, strerror(errnum), errnum == EPIPE,
		  NULL);
	prog_err("%s", msg);
}

/* s less prefix, when it starts with it. */
static const char *skip_prefix(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) == 0 ? s + n : s;
}

void prog_write_why(char *buf, size_t n, const char *path,
		    const rec_writer *w, int err)
{
	const char *d = w ? rec_writer_detail(w) : NULL;
	const char *name = prog_output_name(path);
	size_t len = strlen(name);
	char reader[96] = "";

	if (d == NULL || d[0] == '\0') {
		d = err == REC_E_EPIPE ? strerror(EPIPE) : rec_strerror(err);
	} else {
		/* the detail is "NAME: write error: why" or "NAME: why" */
		if (strncmp(d, name, len) == 0 && d[len] == ':' &&
		    d[len + 1] == ' ')
			d += len + 2;
		d = skip_prefix(d, "write error: ");
	}
	if (w)
		rec_writer_reader(w, reader, sizeof(reader));
	write_msg(buf, n, path, d, err == REC_E_EPIPE ||
				   strcmp(d, strerror(EPIPE)) == 0, reader);
}

int prog_write_failed(const char *path, const rec_writer *w, int err)
{
	char msg[1024];

	prog_write_why(msg, sizeof(msg), path, w, err);
	prog_err("%s", msg);
	return -1;
}

const char *prog_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void prog_abort_output(int fd)
{
	if (fd >= 0 && fd == outfile_fd())
		outfile_abort();
	else if (fd > STDOUT_FILENO)
		close(fd);
}

int prog_output_is_pipe(void)
{
	return out_name[0] != '\0' && out_kind == NULL;
}

void prog_report_spliced(const rec_writer *w)
{
	uint64_t spliced = rec_writer_spliced(w);
	char why[256];

	if (prog_verbosity <= 0)
		return;
	rec_writer_zero_copy_why(w, why, sizeof(why));
	if (spliced)
		prog_info("output: %.1f of %.1f MB handed to the pipe without "
			  "a copy (vmsplice)", (double)spliced / 1e6,
			  (double)rec_writer_bytes(w) / 1e6);
	else if (out_kind)
		prog_info("output: copied (write), not vmsplice: %s is %s, "
			  "not a pipe", out_name, out_kind);
	else if (why[0])
		prog_info("output: copied (write), not vmsplice: %s", why);
	else if (!prog_zero_copy())
		prog_info("output: copied (write), not vmsplice: "
			  "MELPIPE_ZERO_COPY=%s", getenv("MELPIPE_ZERO_COPY"));
	else
		prog_info("output: copied (write); vmsplice only into a pipe "
			  "read by melpipe programs of this build");
}
