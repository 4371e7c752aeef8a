/*
 * outfile.h - h5pack's output file, put in place atomically.
 *
 * The dataset is written to a temporary file in the target's folder and
 * only renamed to the target once it is complete, closed and synced, so a
 * file at the target's path is always a whole dataset: a failed or killed
 * run leaves no target, or the previous one intact.
 *
 * The temporary file is a hidden mkstemp() file
 * .TARGET.h5pack-PID-HOST.XXXXXX (HOST: a hash of the machine's name),
 * removed on any failure and by SIGINT, SIGTERM, SIGHUP and SIGQUIT (the
 * handler removes it and re-raises the signal). Only SIGKILL or a crash
 * can leave it behind (HDF5 opens files by name, so an unnamed O_TMPFILE
 * file is not an option); it is never mistaken for a dataset, and the
 * next run for the same target on the same machine removes it once its
 * process is gone.
 *
 * There is one output per process (signal handlers need it at a known
 * place), so the functions act on a single hidden state. They print their
 * own `prog: message` and return 0 or -1.
 */
#ifndef MELPIPE_OUTFILE_H
#define MELPIPE_OUTFILE_H

/* Creates the temporary file for target and installs the signal handlers.
 * With no_clobber, refuses a target that exists (checked again,
 * atomically, at commit). */
int outfile_open(const char *target, int no_clobber);

/* The temporary file's name, for the library to create it anew. Valid
 * after outfile_open() until outfile_commit()/outfile_abort(). */
const char *outfile_path(void);

/* Starts writing what is in the page cache of the temporary file to the
 * disk, without waiting for it, so that the fsync at the commit finds
 * little left to do. Best effort: the commit's fsync reports errors. */
void outfile_writeback(void);

/* Once the writer has closed the file: syncs it, gives it the target's
 * name (replacing a previous file in one rename) and syncs the folder.
 * On failure the temporary file is removed. */
int outfile_commit(void);

/* Removes the temporary file; the target is untouched. Safe to call when
 * nothing is open. */
void outfile_abort(void);

#endif
