/*
 * writebehind.h - a thread that writes a ring of buffers to a file
 * descriptor, in order, while the caller fills the next one: the record
 * writer's write_behind option, with zero copy into pipes.
 *
 * The ring owns its buffers. The caller fills the current one (wb_buf),
 * hands it over with the number of bytes it holds (wb_submit) and goes on
 * in the next free one. The first write error is kept and every later
 * buffer dropped; the caller sees it at its next wb_submit, wb_drain or
 * wb_status.
 *
 * Zero copy: when fd is a pipe whose readers copy what they read, the
 * thread may hand buffers to the pipe with vmsplice(2) instead of
 * write(2). The pipe then holds the ring's pages, not a copy, so a buffer
 * stays out of use until the reader has read past its end, and buffers
 * are mmap'ed and munmap'ed, never freed into the heap, so that pages a
 * pipe still holds are never written again. Measured, a pipe moves about
 * 2-3 GB/s with write(2) and read(2), about 10 GB/s with vmsplice(2) and
 * read(2); docs/BENCHMARKS.md compares pipelines with and without.
 *
 * Errors are values (-errno); nothing here prints or exits.
 */
#ifndef MELPIPE_WRITEBEHIND_H
#define MELPIPE_WRITEBEHIND_H

#include <stddef.h>
#include <stdint.h>

struct writebehind;

/* Starts a ring of buffers of cap bytes each (rounded up to whole pages
 * with zc) and the thread that writes them to fd (not closed here). zc:
 * 0 = write(2); 1 = vmsplice(2) once every process reading the pipe fd
 * runs one of this suite's programs of this build (buildid.h: checked in
 * /proc, write(2) until it passes), for buffers filled to a quarter of
 * their size or more (a short one is copied: cheaper than keeping it out
 * of use until the reader is past it); 2 = vmsplice(2) every buffer
 * whatever reads (the caller vouches for the reader). Returns 0 and sets
 * *out, or -errno. */
int wb_new(struct writebehind **out, int fd, size_t cap, int zc);

/* The buffer to fill next, *cap bytes long; the caller's until it is
 * submitted. */
unsigned char *wb_buf(struct writebehind *wb, size_t *cap);

/* Replaces the buffer being filled by one of at least *cap bytes (*cap
 * becomes its size) that starts with the same len bytes, for a record
 * whose head is larger than a buffer. Returns the new buffer, or NULL
 * when out of memory (the old one stays). */
unsigned char *wb_grow(struct writebehind *wb, size_t len, size_t *cap);

/* Queues the first len bytes of the buffer being filled for writing and
 * waits until the next buffer of the ring is free (written, and read from
 * the pipe when spliced), adding the seconds it waited to *waited; that
 * buffer is wb_buf()'s then. Returns the first write error so far
 * (-errno), or 0. */
int wb_submit(struct writebehind *wb, size_t len, double *waited);

/* Waits until every queued buffer is written. Returns the first write
 * error (-errno), or 0. */
int wb_drain(struct writebehind *wb);

/* The first write error so far (-errno), or 0, without waiting; with
 * spliced, also the bytes handed to fd with vmsplice(2) so far. */
int wb_status(struct writebehind *wb, uint64_t *spliced);

/* Why buffers are not handed over with vmsplice(2), in a few words for
 * a -v line, into buf[n]: what the last check of the pipe's readers
 * found ("reader pid 123 (cat) is not a melpipe program"), or that the
 * system refused vmsplice; "" when nothing was refused (zc 0 or 2, or
 * the check passed). */
void wb_zc_why(struct writebehind *wb, char *buf, size_t n);

/* The pipe's one reader, "NAME, pid N", as found when its check for
 * vmsplice passed (buildid_pipe_readers()), into buf[n]; "" when
 * none passed. */
void wb_reader(struct writebehind *wb, char *buf, size_t n);

/* Counts len bytes that the caller wrote to fd itself after wb_drain():
 * they are in the pipe after the ring's buffers, and without them what
 * the reader has read would be underestimated. */
void wb_wrote(struct writebehind *wb, size_t len);

/* Waits until the queued buffers are written, stops the thread and frees
 * the ring with its buffers; accepts NULL. */
void wb_free(struct writebehind *wb);

#endif
