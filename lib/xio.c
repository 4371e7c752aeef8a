/* xio.c - whole reads and writes on file descriptors. */
#include "xio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

/* Linux caps one read/write at about 2 GiB; keep each call below it. */
#define XIO_MAX_CHUNK ((size_t)1 << 30)

int xio_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		size_t want = len < XIO_MAX_CHUNK ? len : XIO_MAX_CHUNK;
		ssize_t n = write(fd, p, want);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) /* should not happen on a blocking fd */
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int xio_writev_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		int cnt = n < IOV_MAX ? n : IOV_MAX;
		ssize_t w;

		/* Skip empty entries so that progress is always made. */
		if (iov->iov_len == 0) {
			iov++;
			n--;
			continue;
		}
		w = writev(fd, iov, cnt);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

ssize_t xio_read_some(int fd, void *buf, size_t len)
{
	if (len > XIO_MAX_CHUNK)
		len = XIO_MAX_CHUNK;
	for (;;) {
		ssize_t n = read(fd, buf, len);

		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

ssize_t xio_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = xio_read_some(fd, p + got, len - got);

		if (n < 0)
			return n;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

void xio_grow_pipe(int fd)
{
	struct stat st;
	int size;

	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
		return;
	/* Unprivileged processes may not go above
	 * /proc/sys/fs/pipe-max-size (1 MiB by default): halve until the
	 * kernel agrees, stop at the default size. */
	for (size = 1 << 20; size > 1 << 16; size >>= 1) {
		int cur = fcntl(fd, F_GETPIPE_SZ);

		if (cur >= size)
			return;
		if (fcntl(fd, F_SETPIPE_SZ, size) >= 0)
			return;
	}
}
