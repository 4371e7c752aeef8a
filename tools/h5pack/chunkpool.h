/*
 * chunkpool.h - compresses whole chunks of a dataset in worker threads,
 * for H5Dwrite_chunk().
 *
 * A chunk is byte-shuffled and then deflated (zlib's compress2) or
 * compressed (one zstd frame), exactly what HDF5's shuffle filter followed
 * by its deflate filter or our zstd filter (zstd_filter.c) produce from
 * the same bytes: the chunks written directly are the chunks the library
 * would have written, and any HDF5 reader decodes them with the filters
 * the dataset names.
 *
 * The caller hands in a full chunk buffer (malloc()ed, chunk_bytes) with
 * chunkpool_submit(), which swaps it for a free one of the same size, and
 * takes the jobs back in the order it handed them in with
 * chunkpool_oldest() and chunkpool_release(). At most depth
 * jobs are in flight: chunkpool_submit() needs a free slot, so the caller
 * takes the oldest back first when chunkpool_full() says so. Only the
 * caller's thread calls these functions (the workers never touch HDF5).
 * Nothing here prints; errors come back as a message in the job.
 */
#ifndef MELPIPE_CHUNKPOOL_H
#define MELPIPE_CHUNKPOOL_H

#include <stddef.h>
#include <stdint.h>

struct chunk_job {
	const void *out;     /* the compressed chunk, out_len bytes */
	size_t out_len;
	const char *err;     /* NULL, or why it could not be compressed */
	int tag;             /* the caller's, from chunkpool_submit() */
	uint64_t at;         /* the caller's, from chunkpool_submit() */
};

struct chunkpool;

/* Starts threads workers for chunks of chunk_bytes bytes of elements of
 * esize bytes, compressed with method (H5OUT_GZIP or H5OUT_ZSTD, h5out.h)
 * at level, at most depth (>= threads) in flight. Returns NULL with errno
 * set when memory or not even one thread can be had. */
struct chunkpool *chunkpool_start(int method, unsigned level, size_t esize,
				  size_t chunk_bytes, size_t threads,
				  size_t depth);
/* Whether every slot is taken: take the oldest back first. */
int chunkpool_full(const struct chunkpool *p);
/* Jobs handed in and not yet released. */
size_t chunkpool_pending(const struct chunkpool *p);
/* Hands in *buf holding len (<= chunk_bytes) bytes, with the caller's tag
 * and at, and puts a free chunk buffer in *buf. The pool must not be
 * full. */
void chunkpool_submit(struct chunkpool *p, unsigned char **buf, size_t len,
		      int tag, uint64_t at);
/* The oldest job, once compressed (waits for it); NULL when none is
 * pending. Valid until chunkpool_release(). */
const struct chunk_job *chunkpool_oldest(struct chunkpool *p);
/* Frees the oldest job's slot, which chunkpool_oldest() returned, for
 * the next chunkpool_submit(). */
void chunkpool_release(struct chunkpool *p);
/* The worker threads running: fewer than asked when the system refused
 * some (at least one, or chunkpool_start() failed). */
size_t chunkpool_threads(const struct chunkpool *p);
/* Stops the workers (dropping what is pending) and frees the pool and
 * the buffers it holds; accepts NULL. The buffers are malloc()ed: what
 * the caller got from chunkpool_submit() is the caller's to free. */
void chunkpool_stop(struct chunkpool *p);
/* Seconds the workers spent compressing, summed. */
double chunkpool_work_time(const struct chunkpool *p);

#endif
