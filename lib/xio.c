/* xio.c - whole reads and writes on file descriptors. */
#include "xio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

int xio_vmsplice_all(int fd, const void *buf, size_t len, size_t *done)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	*done = 0;
	while (iov.iov_len > 0) {
		ssize_t n = vmsplice(fd, &iov, 1, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		iov.iov_base = (char *)iov.iov_base + n;
		iov.iov_len -= (size_t)n;
		*done += (size_t)n;
	}
	return 0;
}

long xio_pipe_unread(int fd)
{
	int n;

	if (ioctl(fd, FIONREAD, &n) < 0)
		return -errno;
	return n;
}

/* 1 when fd number fdname of process pid is a read end of the pipe ino,
 * 0 when it is something else, -1 when it cannot be told (the process is
 * not ours to look into, or went away). */
static int reads_pipe(long pid, const char *fdname, const char *target)
{
	char path[320], link[64], info[256];
	unsigned long flags = 0;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid, fdname);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -1;
	link[n] = '\0';
	if (strcmp(link, target) != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/fdinfo/%s", pid, fdname);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(info, sizeof(info), f))
		if (sscanf(info, "flags: %lo", &flags) == 1)
			break;
	fclose(f);
	return (flags & O_ACCMODE) != O_WRONLY;
}

/* 1 when process pid holds a read end of the pipe target (its
 * "pipe:[INO]"); 0 when not, or when it cannot be told (gone, or not
 * ours to look into). */
static int holds_read_end(long pid, const char *target)
{
	char fddir[64];
	struct dirent *fe;
	int found = 0;
	DIR *fds;

	snprintf(fddir, sizeof(fddir), "/proc/%ld/fd", pid);
	fds = opendir(fddir);
	if (fds == NULL)
		return 0;
	while (!found && (fe = readdir(fds)) != NULL) {
		int r;

		if (fe->d_name[0] == '.')
			continue;
		r = reads_pipe(pid, fe->d_name, target);
		if (r < 0 && errno == ENOENT)
			continue; /* closed meanwhile */
		if (r < 0)
			break;
		found = r;
	}
	closedir(fds);
	return found;
}

int xio_pipe_readers(int fd, int (*each)(long pid, void *arg), void *arg)
{
	char target[64];
	struct dirent *pe;
	struct stat st;
	int visited = 0;
	DIR *proc;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISFIFO(st.st_mode))
		return -EINVAL;
	snprintf(target, sizeof(target), "pipe:[%lu]",
		 (unsigned long)st.st_ino);
	proc = opendir("/proc");
	if (proc == NULL)
		return -errno;
	while ((pe = readdir(proc)) != NULL) {
		long pid;
		char *end;

		pid = strtol(pe->d_name, &end, 10);
		if (*end != '\0' || pid <= 0)
			continue;
		if (!holds_read_end(pid, target))
			continue;
		visited++;
		if (each(pid, arg))
			break;
	}
	closedir(proc);
	return visited;
}
