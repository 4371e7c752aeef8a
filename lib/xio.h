/*
 * xio.h - whole reads and writes on file descriptors, for the record
 * streams: short counts and EINTR are handled here once so that callers
 * see either all the bytes or an errno.
 */
#ifndef MELPIPE_XIO_H
#define MELPIPE_XIO_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Writes all len bytes of buf to fd, retrying after EINTR and short
 * writes. Returns 0, or -errno (-EPIPE when the reader went away). */
int xio_write_all(int fd, const void *buf, size_t len);

/* The same for an array of n buffers (the array is modified: its entries
 * are advanced past what was written). n may be any size. */
int xio_writev_all(int fd, struct iovec *iov, int n);

/* One read(2) of at most len bytes, retried after EINTR. Returns the byte
 * count (0 at end of input) or -errno. */
ssize_t xio_read_some(int fd, void *buf, size_t len);

/* Reads until len bytes or end of input. Returns the count (less than len
 * only at end of input) or -errno. */
ssize_t xio_read_full(int fd, void *buf, size_t len);

/* When fd is a pipe, asks the kernel for a 1 MiB pipe buffer (or the
 * largest below it that is allowed), so that a stage writes and reads in
 * large chunks with fewer context switches. Best effort: never fails,
 * changes nothing for other kinds of files. */
void xio_grow_pipe(int fd);

/* Moves all len bytes at buf into the pipe fd with vmsplice(2): the pipe
 * then refers to those pages instead of a copy of them, so they must not
 * change until the reader has read them (see xio_pipe_unread()) and must
 * be given back with munmap, not free, while they may be in the pipe.
 * Returns 0, or -errno (-EPIPE when the reader went away); *done says
 * how many bytes went before an error. */
int xio_vmsplice_all(int fd, const void *buf, size_t len, size_t *done);

/* Bytes in the pipe fd (either end) that its reader has not read yet, or
 * -errno. */
long xio_pipe_unread(int fd);

/* Calls each(pid, arg) once for every process that holds a read end of
 * the pipe fd (found through /proc/PID/fd and /proc/PID/fdinfo), until
 * each returns nonzero. Processes this one may not look into are passed
 * over: they cannot hold our pipe unless we passed it on, which the suite
 * does not do. Returns the number of processes each was called for (the
 * one that stopped it included), -EINVAL when fd is not a pipe, or the
 * -errno of reading /proc. What a reader does with the bytes is for
 * each to judge: one that copies them out with read(2) is what makes
 * vmsplice safe; one that splices them on (pv, tee) would keep our
 * pages. */
int xio_pipe_readers(int fd, int (*each)(long pid, void *arg), void *arg);

#endif
