/*
 * detach.c - gpumel's exit before the GPU's release (detach.h says why and
 * what is kept).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/prog.h"
#include "detach.h"

#define ENV "MELPIPE_GPUMEL_DETACH"

/* Whether the machine has an NVIDIA driver's device file: where the
 * driver is not, there is no context to release. */
static int nvidia_device(void)
{
	return access("/dev/nvidiactl", F_OK) == 0 ||
	       access("/dev/nvidia0", F_OK) == 0;
}

/* 2 auto, 1 on, 0 off. */
static int detach_mode(void)
{
	const char *e = getenv(ENV);
	int w;

	if (e == NULL || *e == '\0' || strcasecmp(e, "auto") == 0)
		return 2;
	w = prog_env_word(e);
	if (w < 0)
		prog_usage_error("%s=%s: not a value it takes: give auto (the "
				 "default), on (or 1, yes, true) or off (or "
				 "0, no, false)", ENV, e);
	return w;
}

/* fds 0..last to /dev/null (closed where it cannot be opened). */
static void to_null(int last)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (int fd = 0; fd <= last; fd++) {
		if (null < 0)
			close(fd);
		else if (null != fd)
			dup2(null, fd);
	}
	if (null > last)
		close(null);
}

/* Dies of sig as the child did (no core of this process: the child made
 * its own); exits 128 + sig where the signal does not kill. */
static _Noreturn void die_of(int sig)
{
	struct rlimit no_core = { 0, 0 };
	sigset_t s;

	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
	_exit(128 + sig);
}

/* The signals the parent passes on to the child: those that end gpumel
 * (the child removes a -o file's temporary name on the first four) and
 * SIGCONT; and those that stop it from a terminal, passed on as SIGSTOP
 * (the kernel drops a SIGTSTP whose action is to stop in a process group
 * that no terminal's shell controls any more), after which the parent
 * stops too. The parent ends as the child does, after it. */
static const int passed_on[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1,
				 SIGUSR2, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU };
static volatile sig_atomic_t child_pid;

static void pass_on(int sig)
{
	int saved = errno;

	if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
		kill((pid_t)child_pid, SIGSTOP);
		raise(SIGSTOP);
	} else {
		kill((pid_t)child_pid, sig);
	}
	errno = saved;
}

static void passed_set(sigset_t *s)
{
	sigemptyset(s);
	for (size_t i = 0; i < sizeof(passed_on) / sizeof(int); i++)
		sigaddset(s, passed_on[i]);
}

/* A signal ignored where gpumel was started (nohup) stays ignored here,
 * as in the child, which inherits it. */
static void pass_signals_on(pid_t child)
{
	struct sigaction sa, prev;

	child_pid = (sig_atomic_t)child;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pass_on;
	passed_set(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(passed_on) / sizeof(int); i++)
		if (sigaction(passed_on[i], NULL, &prev) == 0 &&
		    prev.sa_handler != SIG_IGN)
			sigaction(passed_on[i], &sa, NULL);
}

/* The parent: holds neither pipe of the stream, passes signals on, waits
 * for the child's status byte, or for the child's end, and ends as the
 * child says. Entered with the signals it passes on blocked (old: the
 * mask before). */
static _Noreturn void wait_child(pid_t child, int fd, const sigset_t *old)
{
	unsigned char b;
	sigset_t passed;
	ssize_t n;
	int st;

	pass_signals_on(child);
	sigprocmask(SIG_SETMASK, old, NULL);
	to_null(1);
	do
		n = read(fd, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(b);
	/* the child is ending: once reaped, its pid may be another's */
	passed_set(&passed);
	sigprocmask(SIG_BLOCK, &passed, NULL);
	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR) {
			prog_err("waiting for process %ld, which did the "
				 "work: %s", (long)child, strerror(errno));
			_exit(EXIT_FAIL);
		}
	if (WIFSIGNALED(st))
		die_of(WTERMSIG(st));
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_FAIL);
}

/* fd moved above standard input, output and error (where gpumel was
 * started with one of them closed, the pipe may have taken its number):
 * the new descriptor, or -1. */
static int above_stdio(int fd)
{
	int moved;

	if (fd > STDERR_FILENO)
		return fd;
	moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	close(fd);
	return moved;
}

void detach_start(struct detach *d, int may_gpu)
{
	int mode = detach_mode(), fds[2];
	sigset_t passed, old;
	pid_t child;

	d->fd = -1;
	d->parent = 0;
	if (mode == 0 || (mode == 2 && !(may_gpu && nvidia_device())))
		return;
	/* where the pipe or the process cannot be had, one process does it
	 * all, as with the variable off */
	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	fds[0] = above_stdio(fds[0]);
	fds[1] = above_stdio(fds[1]);
	if (fds[0] < 0 || fds[1] < 0) {
		close(fds[0]);
		close(fds[1]);
		return;
	}
	/* a SIGCHLD ignored by whoever started gpumel would reap the child
	 * before the parent could learn how it ended */
	signal(SIGCHLD, SIG_DFL);
	/* no signal in the parent before its handlers pass it on */
	passed_set(&passed);
	sigprocmask(SIG_BLOCK, &passed, &old);
	d->parent = getpid();
	fflush(NULL);
	child = fork();
	if (child > 0) {
		close(fds[1]);
		wait_child(child, fds[0], &old);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (child < 0) {
		close(fds[0]);
		close(fds[1]);
		d->parent = 0;
		return;
	}
	close(fds[0]);
	d->fd = fds[1];
	/* the parent killed (SIGKILL too) ends the work as a SIGTERM to
	 * gpumel would; already gone, the same now */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != d->parent)
		raise(SIGTERM);
}

int detach_active(const struct detach *d)
{
	return d->fd >= 0;
}

void detach_note(const struct detach *d, const char *backend, int wait)
{
	if (d->fd < 0)
		return;
	if (wait)
		prog_info("exit: gpumel (pid %ld) ends once its process %ld "
			  "has released the backend (%s), which admits one "
			  "process at a time", (long)d->parent,
			  (long)getpid(), backend);
	else
		prog_info("exit: gpumel (pid %ld) ends when its output is "
			  "complete, and its process %ld releases the backend "
			  "(%s) after it (with %s=off, before it ends)",
			  (long)d->parent, (long)getpid(), backend, ENV);
}

void detach_release(struct detach *d, int status)
{
	unsigned char b = (unsigned char)status;
	ssize_t n;

	if (d->fd < 0)
		return;
	fflush(NULL);
	to_null(2);
	/* from here the parent's death is no reason to stop */
	prctl(PR_SET_PDEATHSIG, 0);
	do
		n = write(d->fd, &b, 1);
	while (n < 0 && errno == EINTR);
	close(d->fd);
	d->fd = -1;
}
