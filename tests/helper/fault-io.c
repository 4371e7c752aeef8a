/*
 * fault-io.c - an LD_PRELOAD library that makes file writes fail with EIO,
 * so that tests can show what a program does when the disk reports an
 * I/O error (a dying disk, a yanked USB stick, a full quota on NFS):
 *
 *   MELPIPE_FAULT_PWRITE_AFTER=N  pwrite(2) calls after the N-th fail
 *   MELPIPE_FAULT_PWRITE_THREAD=1 only those made on a thread other than
 *                                 the process's first count and fail
 *                                 (h5pack's writing thread)
 *   MELPIPE_FAULT_THREADS_AFTER=N pthread_create(3) calls after the
 *                                 N-th fail with EAGAIN, as at a
 *                                 process's thread limit
 *   MELPIPE_FAULT_WRITE_AFTER=N   write(2) and writev(2) calls to regular
 *                                 files after the N-th fail (not to
 *                                 descriptors 0-2: messages still go out)
 *   MELPIPE_FAULT_WRITE_HANG=1    the same calls never return: a run that
 *                                 cannot end before a signal comes
 *   MELPIPE_FAULT_FSYNC=1         fsync(2) fails
 *   MELPIPE_FAULT_VMSPLICE=1      vmsplice(2) fails with EINVAL, as where
 *                                 a sandbox or kernel does not have it
 *   MELPIPE_FAULT_RENAME=1        rename(2) fails with EIO
 *   MELPIPE_FAULT_EXIT_DELAY_MS=N the process's exit (exit(3), not
 *                                 _exit) takes N ms more, as a slow
 *                                 release of a GPU would; then
 *   MELPIPE_FAULT_EXIT_MARK=PATH  is created, to show the process lived
 *                                 through it
 *
 * Only pwrite (what HDF5's sec2 driver writes with), write and writev
 * (the record writer's), fsync, vmsplice, rename and pthread_create are
 * wrapped, and the exit delayed; everything else
 * goes straight to the C library. A test helper,
 * never installed; not for sanitizer builds (their runtime must load
 * first).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static long limit(const char *name)
{
	const char *e = getenv(name);

	return e && *e ? atol(e) : LONG_MAX;
}

static ssize_t fault_pwrite(const char *sym, int fd, const void *buf,
			    size_t n, off_t off)
{
	static long after = -2, count;
	ssize_t (*real)(int, const void *, size_t, off_t);

	if (after == -2)
		after = limit("MELPIPE_FAULT_PWRITE_AFTER");
	if (limit("MELPIPE_FAULT_PWRITE_THREAD") == 1 &&
	    syscall(SYS_gettid) == getpid())
		; /* the first thread's: not counted */
	else if (__atomic_add_fetch(&count, 1, __ATOMIC_RELAXED) > after) {
		errno = EIO;
		return -1;
	}
	*(void **)&real = dlsym(RTLD_NEXT, sym);
	return real(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return fault_pwrite("pwrite", fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return fault_pwrite("pwrite64", fd, buf, n, off);
}

/* Whether a write(2) or writev(2) to fd is to fail: -1 with errno set
 * (after hanging, with MELPIPE_FAULT_WRITE_HANG, for good), 0 to go on. */
static int fault_write(int fd)
{
	static long after = -2, count;
	struct stat st;

	if (fd <= STDERR_FILENO || fstat(fd, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	if (limit("MELPIPE_FAULT_WRITE_HANG") == 1)
		for (;;)
			pause();
	if (after == -2)
		after = limit("MELPIPE_FAULT_WRITE_AFTER");
	if (__atomic_add_fetch(&count, 1, __ATOMIC_RELAXED) > after) {
		errno = EIO;
		return -1;
	}
	return 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	ssize_t (*real)(int, const void *, size_t);

	if (fault_write(fd) < 0)
		return -1;
	*(void **)&real = dlsym(RTLD_NEXT, "write");
	return real(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	ssize_t (*real)(int, const struct iovec *, int);

	if (fault_write(fd) < 0)
		return -1;
	*(void **)&real = dlsym(RTLD_NEXT, "writev");
	return real(fd, iov, n);
}

int fsync(int fd)
{
	int (*real)(int);

	if (limit("MELPIPE_FAULT_FSYNC") == 1) {
		errno = EIO;
		return -1;
	}
	*(void **)&real = dlsym(RTLD_NEXT, "fsync");
	return real(fd);
}

ssize_t vmsplice(int fd, const struct iovec *iov, size_t n, unsigned flags)
{
	ssize_t (*real)(int, const struct iovec *, size_t, unsigned);

	if (limit("MELPIPE_FAULT_VMSPLICE") == 1) {
		errno = EINVAL;
		return -1;
	}
	*(void **)&real = dlsym(RTLD_NEXT, "vmsplice");
	return real(fd, iov, n, flags);
}

int rename(const char *from, const char *to)
{
	int (*real)(const char *, const char *);

	if (limit("MELPIPE_FAULT_RENAME") == 1) {
		errno = EIO;
		return -1;
	}
	*(void **)&real = dlsym(RTLD_NEXT, "rename");
	return real(from, to);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr,
		   void *(*fn)(void *), void *arg)
{
	static long count;
	int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
		    void *);

	if (__atomic_add_fetch(&count, 1, __ATOMIC_RELAXED) >
	    limit("MELPIPE_FAULT_THREADS_AFTER"))
		return EAGAIN;
	*(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
	return real(t, attr, fn, arg);
}

__attribute__((destructor)) static void exit_delay(void)
{
	long ms = limit("MELPIPE_FAULT_EXIT_DELAY_MS");
	const char *mark = getenv("MELPIPE_FAULT_EXIT_MARK");
	struct timespec d;
	int fd;

	if (ms <= 0 || ms == LONG_MAX) /* unset: no delay */
		return;
	d.tv_sec = ms / 1000;
	d.tv_nsec = ms % 1000 * 1000000;
	while (nanosleep(&d, &d) < 0 && errno == EINTR)
		;
	if (mark && (fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644))
	    >= 0)
		close(fd);
}
