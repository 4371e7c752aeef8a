/*
 * h5wbfd.h - an HDF5 file driver that writes behind: the library's writes
 * are copied into a few large buffers, and a thread of ours hands them to
 * the file, in order, with the disk's writeback started as they go.
 *
 * Why: the library writes with pwrite(2) from the thread that calls
 * H5Dwrite, and a buffered write of a new file costs the kernel a page
 * allocation and a copy per page (about 0.7 GB/s measured on ext4, under
 * the file's lock, so it does not go faster in parallel), plus the
 * writeback it is asked to start. That was a third to a half of
 * h5pack's one thread on the 10-second job (docs/BENCHMARKS.md); with
 * this driver the thread copies at memory speed and the kernel's part
 * runs beside it.
 *
 * Everything else is the sec2 driver's behaviour: one file, opened by
 * name, its size the end of what was written. A read first waits until
 * every queued write is in the file, so the library always reads what it
 * wrote. The first write error is kept and returned, as a library error
 * whose message carries the system's reason, by the next write, flush or
 * close; nothing written after it reaches the file.
 */
#ifndef MELPIPE_H5WBFD_H
#define MELPIPE_H5WBFD_H

#include <hdf5.h>
#include <stdint.h>

/* Sets fapl to this driver (registering it once). Returns 0, or -1 with
 * the library's error stack set. */
int h5wb_set_fapl(hid_t fapl);

/* What the drivers of this process did, for -v: bytes written, seconds
 * the writing thread spent in write(2) and in starting writeback, and
 * seconds the library's thread waited for a free buffer or for the queue
 * to empty (before a read, a flush or the close). */
struct h5wb_stats {
	uint64_t bytes;
	double t_write, t_wait;
};
void h5wb_stats(struct h5wb_stats *st);

#endif
