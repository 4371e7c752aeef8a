/*
 * h5wbfd.c - the write-behind HDF5 file driver (h5wbfd.h).
 *
 * A ring of NBUF buffers of BUF_BYTES each (8 MiB in all: 4 x 1 MiB and
 * 4 x 4 MiB measured no faster on the 10-second job). The library's thread fills
 * one with writes that follow each other in the file (the features'
 * chunks and the small metadata writes between them mostly do), hands it
 * to the writing thread when it is full or a write goes elsewhere, and
 * goes on in the next, waiting only when all are queued. The writing
 * thread writes them in order, so a later write of the same bytes
 * (metadata is rewritten) lands after the earlier one, as with pwrite
 * from one thread. Nothing else reads the file while it is written: h5pack
 * writes a private temporary file (tools/common/outfile.h).
 *
 * The callbacks' signatures are the same in HDF5 1.10, 1.12 and 1.14;
 * 1.13 and later also want the class's version and a value of its own.
 */
#include "h5wbfd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/prog.h"

#define NBUF 4
#define BUF_BYTES ((size_t)2 << 20)
/* Bytes written between writeback kicks: the disk writes as the rows
 * come, not all at the final sync (docs/BENCHMARKS.md). */
#define KICK_BYTES ((uint64_t)16 << 20)
#define WB_VALUE 0x2d5 /* the class's value (user drivers: 256 and up) */

struct wbfd {
	H5FD_t pub; /* first: the library's part of the file */
	int fd;
	dev_t dev;
	ino_t ino;
	haddr_t eoa, eof;

	/* the library's thread: the buffer it fills */
	unsigned fill;
	haddr_t fill_addr;
	size_t fill_len;
	double t_wait;

	/* shared, under mu */
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	unsigned next;  /* the buffer written next */
	unsigned queued; /* buffers handed over and not yet written */
	int stop;
	int err;        /* the first write error (errno), 0 */
	haddr_t err_addr;
	unsigned char *buf[NBUF];
	haddr_t addr[NBUF];
	size_t len[NBUF];

	/* the writing thread's */
	pthread_t th;
	int have_th;
	uint64_t bytes, since_kick;
	double t_write;
};

static struct h5wb_stats totals;
static hid_t driver_id = -1;

#define FAIL(minor, ...)                                                   \
	H5Epush2(H5E_DEFAULT, __FILE__, __func__, __LINE__, H5E_ERR_CLS,   \
		 H5E_VFL, (minor), __VA_ARGS__)

static void *writer_main(void *arg)
{
	struct wbfd *f = arg;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		unsigned i = f->next;
		const unsigned char *p;
		haddr_t at;
		size_t left;
		int err;
		double t0;

		while (f->queued == 0 && !f->stop)
			pthread_cond_wait(&f->work, &f->mu);
		if (f->queued == 0)
			break;
		err = f->err;
		pthread_mutex_unlock(&f->mu);

		/* after an error nothing more reaches the file */
		t0 = prog_now();
		p = f->buf[i];
		at = f->addr[i];
		left = f->len[i];
		while (!err && left > 0) {
			ssize_t n = pwrite(f->fd, p, left, (off_t)at);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				err = n < 0 ? errno : EIO;
				break;
			}
			p += n;
			at += (haddr_t)n;
			left -= (size_t)n;
		}
		if (!err) {
			f->bytes += f->len[i];
			f->since_kick += f->len[i];
			if (f->since_kick >= KICK_BYTES) {
				(void)sync_file_range(f->fd, 0, 0,
						      SYNC_FILE_RANGE_WRITE);
				f->since_kick = 0;
			}
		}
		f->t_write += prog_now() - t0;

		pthread_mutex_lock(&f->mu);
		if (err && !f->err) {
			f->err = err;
			f->err_addr = at;
		}
		f->next = (i + 1) % NBUF;
		f->queued--;
		pthread_cond_broadcast(&f->done);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Hands the buffer being filled to the writing thread and waits for the
 * next one to be free. */
static void submit(struct wbfd *f)
{
	double t0;

	if (f->fill_len == 0)
		return;
	pthread_mutex_lock(&f->mu);
	f->addr[f->fill] = f->fill_addr;
	f->len[f->fill] = f->fill_len;
	f->queued++;
	pthread_cond_signal(&f->work);
	if (f->queued == NBUF) {
		t0 = prog_now();
		while (f->queued == NBUF)
			pthread_cond_wait(&f->done, &f->mu);
		f->t_wait += prog_now() - t0;
	}
	pthread_mutex_unlock(&f->mu);
	f->fill = (f->fill + 1) % NBUF;
	f->fill_len = 0;
}

/* Waits until everything written so far is in the file; returns the
 * first write error (errno) or 0. */
static int drain(struct wbfd *f)
{
	double t0 = prog_now();
	int err;

	submit(f);
	pthread_mutex_lock(&f->mu);
	while (f->queued > 0)
		pthread_cond_wait(&f->done, &f->mu);
	err = f->err;
	pthread_mutex_unlock(&f->mu);
	f->t_wait += prog_now() - t0;
	return err;
}

static int failed(struct wbfd *f)
{
	int err;

	pthread_mutex_lock(&f->mu);
	err = f->err;
	pthread_mutex_unlock(&f->mu);
	return err;
}

static herr_t write_error(const struct wbfd *f, int err)
{
	FAIL(H5E_WRITEERROR, "file write failed at byte %llu: error message "
	     "= '%s'", (unsigned long long)f->err_addr, strerror(err));
	return -1;
}

static void free_file(struct wbfd *f)
{
	if (f->have_th) {
		pthread_mutex_lock(&f->mu);
		f->stop = 1;
		pthread_cond_signal(&f->work);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->th, NULL);
		totals.bytes += f->bytes;
		totals.t_write += f->t_write;
		totals.t_wait += f->t_wait;
		pthread_cond_destroy(&f->work);
		pthread_cond_destroy(&f->done);
		pthread_mutex_destroy(&f->mu);
	}
	for (unsigned i = 0; i < NBUF; i++)
		free(f->buf[i]);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static H5FD_t *wb_open(const char *name, unsigned flags, hid_t fapl,
		       haddr_t maxaddr)
{
	struct wbfd *f;
	struct stat st;
	int o = (flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY;

	(void)fapl;
	(void)maxaddr;
	if (flags & H5F_ACC_TRUNC)
		o |= O_TRUNC;
	if (flags & H5F_ACC_CREAT)
		o |= O_CREAT;
	if (flags & H5F_ACC_EXCL)
		o |= O_EXCL;
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		FAIL(H5E_CANTALLOC, "out of memory for the file");
		return NULL;
	}
	f->fd = open(name, o | O_CLOEXEC, 0666);
	if (f->fd < 0 || fstat(f->fd, &st) != 0) {
		FAIL(H5E_CANTOPENFILE, "unable to open file: name = '%s', "
		     "error message = '%s'", name, strerror(errno));
		free_file(f);
		return NULL;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->eof = (haddr_t)st.st_size;
	/* touched now, so that a small file takes the memory a large one
	 * does (not zeros: malloc and a memset to 0 may become a calloc,
	 * which leaves the pages untouched) */
	for (unsigned i = 0; i < NBUF; i++) {
		if ((f->buf[i] = malloc(BUF_BYTES)) == NULL) {
			FAIL(H5E_CANTALLOC, "out of memory for the file's "
			     "buffers");
			free_file(f);
			return NULL;
		}
		memset(f->buf[i], 0xff, BUF_BYTES);
	}
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->done, NULL);
	if (pthread_create(&f->th, NULL, writer_main, f) != 0) {
		pthread_cond_destroy(&f->work);
		pthread_cond_destroy(&f->done);
		pthread_mutex_destroy(&f->mu);
		FAIL(H5E_CANTOPENFILE, "unable to start the file's writing "
		     "thread: error message = '%s'", strerror(errno));
		free_file(f);
		return NULL;
	}
	f->have_th = 1;
	return &f->pub;
}

static herr_t wb_close(H5FD_t *file)
{
	struct wbfd *f = (struct wbfd *)file;
	int err = drain(f);
	herr_t ret = err ? write_error(f, err) : 0;

	free_file(f);
	return ret;
}

static int wb_cmp(const H5FD_t *a, const H5FD_t *b)
{
	const struct wbfd *x = (const struct wbfd *)a;
	const struct wbfd *y = (const struct wbfd *)b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static herr_t wb_query(const H5FD_t *file, unsigned long *flags)
{
	(void)file;
	*flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
		 H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA;
	return 0;
}

static haddr_t wb_get_eoa(const H5FD_t *file, H5FD_mem_t type)
{
	(void)type;
	return ((const struct wbfd *)file)->eoa;
}

static herr_t wb_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
	(void)type;
	((struct wbfd *)file)->eoa = addr;
	return 0;
}

static haddr_t wb_get_eof(const H5FD_t *file, H5FD_mem_t type)
{
	(void)type;
	return ((const struct wbfd *)file)->eof;
}

static herr_t wb_get_handle(H5FD_t *file, hid_t fapl, void **handle)
{
	(void)fapl;
	*handle = &((struct wbfd *)file)->fd;
	return 0;
}

static herr_t wb_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl,
		      haddr_t addr, size_t size, void *buf)
{
	struct wbfd *f = (struct wbfd *)file;
	unsigned char *p = buf;
	int err;

	(void)type;
	(void)dxpl;
	/* what it reads may be queued still */
	if ((err = drain(f)) != 0)
		return write_error(f, err);
	while (size > 0) {
		ssize_t n = pread(f->fd, p, size, (off_t)addr);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			FAIL(H5E_READERROR, "file read failed at byte %llu: "
			     "error message = '%s'", (unsigned long long)addr,
			     strerror(errno));
			return -1;
		}
		if (n == 0) { /* past the end of the file: zeros, as sec2 */
			memset(p, 0, size);
			break;
		}
		p += n;
		addr += (haddr_t)n;
		size -= (size_t)n;
	}
	return 0;
}

static herr_t wb_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl,
		       haddr_t addr, size_t size, const void *buf)
{
	struct wbfd *f = (struct wbfd *)file;
	const unsigned char *p = buf;
	int err;

	(void)type;
	(void)dxpl;
	if ((err = failed(f)) != 0)
		return write_error(f, err);
	if (addr + size > f->eof)
		f->eof = addr + size;
	while (size > 0) {
		size_t n;

		if (f->fill_len && f->fill_addr + f->fill_len != addr)
			submit(f);
		if (f->fill_len == 0)
			f->fill_addr = addr;
		n = BUF_BYTES - f->fill_len;
		if (n > size)
			n = size;
		memcpy(f->buf[f->fill] + f->fill_len, p, n);
		f->fill_len += n;
		if (f->fill_len == BUF_BYTES)
			submit(f);
		p += n;
		addr += n;
		size -= n;
	}
	return 0;
}

static herr_t wb_flush(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
	struct wbfd *f = (struct wbfd *)file;
	int err = drain(f);

	(void)dxpl;
	(void)closing;
	return err ? write_error(f, err) : 0;
}

static herr_t wb_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
	struct wbfd *f = (struct wbfd *)file;
	int err = drain(f);

	(void)dxpl;
	(void)closing;
	if (err)
		return write_error(f, err);
	if (f->eoa != f->eof) {
		if (ftruncate(f->fd, (off_t)f->eoa) != 0) {
			FAIL(H5E_SEEKERROR, "unable to extend file properly: "
			     "error message = '%s'", strerror(errno));
			return -1;
		}
		f->eof = f->eoa;
	}
	return 0;
}

static const H5FD_class_t wb_class = {
#ifdef H5FD_CLASS_VERSION
	.version = H5FD_CLASS_VERSION,
	.value = (H5FD_class_value_t)WB_VALUE,
#endif
	.name = "melpipe-write-behind",
	.maxaddr = (haddr_t)INT64_MAX,
	.fc_degree = H5F_CLOSE_WEAK,
	.open = wb_open,
	.close = wb_close,
	.cmp = wb_cmp,
	.query = wb_query,
	.get_eoa = wb_get_eoa,
	.set_eoa = wb_set_eoa,
	.get_eof = wb_get_eof,
	.get_handle = wb_get_handle,
	.read = wb_read,
	.write = wb_write,
	.flush = wb_flush,
	.truncate = wb_truncate,
	.fl_map = H5FD_FLMAP_DICHOTOMY,
};

int h5wb_set_fapl(hid_t fapl)
{
	if (driver_id < 0 || H5Iis_valid(driver_id) <= 0)
		driver_id = H5FDregister(&wb_class);
	if (driver_id < 0)
		return -1;
	return H5Pset_driver(fapl, driver_id, NULL) < 0 ? -1 : 0;
}

void h5wb_stats(struct h5wb_stats *st)
{
	*st = totals;
}
