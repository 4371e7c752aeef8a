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

#endif
