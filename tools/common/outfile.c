/*
 * outfile.c - write to a temporary file, rename into place when complete.
 * See outfile.h for the guarantees.
 */
#include "outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "prog.h"

static const int caught_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };

static struct {
	char target[PATH_MAX];
	char dir[PATH_MAX];    /* target's folder */
	char base[NAME_MAX + 1];
	char tmp[PATH_MAX];    /* the temporary file */
	int fd;                /* our descriptor of it, for fsync */
	int dir_fd;
	int no_clobber;
	pid_t owner;           /* the process that made the file */
} out = { .fd = -1, .dir_fd = -1 };

/* Whether out.tmp names a file of ours that the signal handler must
 * remove. Changed only with the signals blocked. */
static volatile sig_atomic_t have_temp;

static void on_signal(int sig)
{
	int saved = errno;

	if (have_temp)
		unlink(out.tmp);
	signal(sig, SIG_DFL);
	raise(sig);
	errno = saved;
}

static void block_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(caught_signals) / sizeof(int); i++)
		sigaddset(&set, caught_signals[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

static void install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(caught_signals) / sizeof(int); i++)
		sigaddset(&sa.sa_mask, caught_signals[i]);
	for (size_t i = 0; i < sizeof(caught_signals) / sizeof(int); i++) {
		struct sigaction prev;

		/* a signal ignored by our parent (nohup) stays ignored */
		if (sigaction(caught_signals[i], NULL, &prev) == 0 &&
		    prev.sa_handler == SIG_IGN)
			continue;
		sigaction(caught_signals[i], &sa, NULL);
	}
}

/* Removes the temporary file, if there is one, and forgets it. */
static void remove_temp(void)
{
	sigset_t old;

	block_signals(&old);
	if (have_temp)
		unlink(out.tmp);
	have_temp = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* A run that exits before its commit (an error deep in a library, a
 * failing thread) leaves no temporary file either. A child process that
 * exits does not remove its parent's. */
static void at_exit(void)
{
	if (getpid() == out.owner)
		remove_temp();
}

static int split_target(const char *target)
{
	const char *slash = strrchr(target, '/');
	size_t dlen;

	if (strlen(target) >= sizeof(out.target)) {
		prog_err("output name too long: '%s'", target);
		return -1;
	}
	strcpy(out.target, target);
	if (!slash) {
		strcpy(out.dir, ".");
		slash = target - 1;
	} else {
		dlen = (size_t)(slash - target);
		if (dlen == 0)
			dlen = 1; /* "/x.h5" lives in "/" */
		memcpy(out.dir, target, dlen);
		out.dir[dlen] = '\0';
	}
	if (strlen(slash + 1) == 0 || strlen(slash + 1) > NAME_MAX - 48) {
		prog_err("'%s' is not a usable file name", target);
		return -1;
	}
	strcpy(out.base, slash + 1);
	return 0;
}

/* Fails early, before any work, on a target that can never be written. */
static int check_target(void)
{
	struct stat st;

	if (stat(out.target, &st) != 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		prog_err("unable to write '%s': Is a directory", out.target);
		return -1;
	}
	if (out.no_clobber) {
		prog_err("'%s' exists; not replacing it (--no-clobber)",
			 out.target);
		return -1;
	}
	return 0;
}

/* This machine, as 8 hex digits of a hash of its name: temporary files
 * carry it beside their process id, so that a later run on the same
 * machine can tell a dead run's file (the folder may be shared with
 * other machines, whose process ids mean nothing here). */
static unsigned long host_tag(void)
{
	char name[256] = "";
	unsigned long h = 2166136261ul;

	gethostname(name, sizeof(name) - 1);
	for (const char *p = name; *p; p++)
		h = ((h ^ (unsigned char)*p) * 16777619ul) & 0xfffffffful;
	return h;
}

/* The prefix of our temporary files' names: .BASE.PROG- */
static int temp_prefix(char *buf, size_t size)
{
	int n = snprintf(buf, size, ".%s.%s-", out.base, prog_name);

	return n >= 0 && n < (int)size ? 0 : -1;
}

/*
 * Removes temporary files that earlier runs for the same target left
 * behind when they were killed with SIGKILL (no handler runs then) or
 * crashed: .BASE.PROG-PID-HOST.XXXXXX made on this machine by a process
 * that no longer exists. A live process's file, or another machine's, is
 * left alone.
 */
static void remove_stale_temps(void)
{
	char prefix[NAME_MAX + 1];
	unsigned long tag = host_tag();
	size_t plen;
	struct dirent *e;
	DIR *d;

	if (temp_prefix(prefix, sizeof(prefix)) < 0 ||
	    (d = fdopendir(dup(out.dir_fd))) == NULL)
		return;
	plen = strlen(prefix);
	while ((e = readdir(d)) != NULL) {
		unsigned long pid, host;
		char rest[16];

		if (strncmp(e->d_name, prefix, plen) != 0 ||
		    sscanf(e->d_name + plen, "%lu-%8lx.%15s", &pid, &host,
			   rest) != 3 || strlen(rest) != 6 || host != tag ||
		    pid == 0 || pid > (unsigned long)INT_MAX ||
		    pid == (unsigned long)getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (unlinkat(out.dir_fd, e->d_name, 0) == 0)
			prog_warn("removed '%s/%s', left by %s process %lu, "
				  "which was killed before it could",
				  out.dir, e->d_name, prog_name, pid);
	}
	closedir(d);
}

static int open_temp(void)
{
	mode_t mask = umask(0);
	char prefix[NAME_MAX + 1];
	sigset_t old;
	int fd;

	umask(mask);
	if (temp_prefix(prefix, sizeof(prefix)) < 0 ||
	    snprintf(out.tmp, sizeof(out.tmp), "%s/%s%ld-%08lx.XXXXXX",
		     out.dir, prefix, (long)getpid(), host_tag()) >=
		    (int)sizeof(out.tmp)) {
		prog_err("output name too long: '%s'", out.target);
		return -1;
	}
	/* no signal between creating the file and recording that it is
	 * ours to remove */
	block_signals(&old);
	fd = mkstemp(out.tmp);
	have_temp = fd >= 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (fd < 0) {
		prog_err("unable to create a temporary file in '%s': %s",
			 out.dir, strerror(errno));
		return -1;
	}
	if (fchmod(fd, 0666 & ~mask) != 0) {
		prog_err("unable to set the mode of '%s': %s", out.tmp,
			 strerror(errno));
		close(fd);
		remove_temp();
		return -1;
	}
	out.fd = fd;
	return 0;
}

int outfile_open(const char *target, int no_clobber)
{
	out.no_clobber = no_clobber;
	if (split_target(target) || check_target())
		return -1;
	out.dir_fd = open(out.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (out.dir_fd < 0) {
		prog_err("unable to open '%s': %s", out.target,
			 strerror(errno));
		return -1;
	}
	install_handlers();
	if (!out.owner)
		atexit(at_exit);
	out.owner = getpid();
	remove_stale_temps();
	if (open_temp() == 0)
		return 0;
	close(out.dir_fd);
	out.dir_fd = -1;
	return -1;
}

const char *outfile_path(void)
{
	return out.tmp;
}

int outfile_fd(void)
{
	return out.fd;
}

/* Gives the synced temporary file the target's name. */
static int put_in_place(void)
{
	if (!out.no_clobber)
		return rename(out.tmp, out.target);
	/* link() refuses an existing target, atomically */
	if (link(out.tmp, out.target) != 0)
		return -1;
	if (unlink(out.tmp) != 0)
		prog_warn("unable to remove '%s': %s", out.tmp,
			  strerror(errno));
	return 0;
}

void outfile_writeback(void)
{
	if (out.fd >= 0)
		(void)sync_file_range(out.fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

int outfile_commit(void)
{
	sigset_t old;
	int err = 0;

	if (fsync(out.fd) != 0) {
		prog_err("unable to sync '%s': %s", out.target,
			 strerror(errno));
		outfile_abort();
		return -1;
	}
	/* no signal between naming the file and recording that it is done */
	block_signals(&old);
	if (put_in_place() != 0) {
		err = errno;
		prog_err("unable to put '%s' in place: %s", out.target,
			 strerror(err));
	} else {
		have_temp = 0; /* renamed: nothing left to remove */
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (err) {
		outfile_abort();
		return -1;
	}
	if (fsync(out.dir_fd) != 0 && errno != EINVAL) {
		prog_err("unable to sync folder '%s': %s", out.dir,
			 strerror(errno));
		err = -1;
	}
	close(out.fd);
	close(out.dir_fd);
	out.fd = out.dir_fd = -1;
	return err ? -1 : 0;
}

void outfile_abort(void)
{
	remove_temp();
	if (out.fd >= 0)
		close(out.fd);
	if (out.dir_fd >= 0)
		close(out.dir_fd);
	out.fd = out.dir_fd = -1;
}
