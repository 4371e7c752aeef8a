/*
 * outfile.h - a program's output file, put in place atomically.
 *
 * The output is written to a temporary file in the target's folder and
 * only renamed to the target once it is complete and synced, so a file at
 * the target's path is always whole: a failed or killed run leaves no
 * target, or the previous one intact.
 *
 * The temporary file is a hidden mkstemp() file
 * .TARGET.PROG-PID-HOST.XXXXXX (PROG: prog_name; HOST: a hash of the
 * machine's name), removed on any failure, at exit() before the commit,
 * and by SIGINT, SIGTERM, SIGHUP and SIGQUIT (the handler removes it and
 * re-raises the signal). Only SIGKILL or a crash can leave it behind (a
 * library may need to open it by name, as HDF5 does, so an unnamed
 * O_TMPFILE file is not an option); it is never mistaken for the target,
 * and the next run of the program for the same target on the same
 * machine removes it once its process is gone.
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

/* The temporary file's name, for a library that opens files by name
 * (HDF5). Valid after outfile_open() until outfile_commit()/
 * outfile_abort(). */
const char *outfile_path(void);

/* The temporary file's descriptor, open for writing, for a program that
 * writes to it directly; outfile_commit()/outfile_abort() close it. */
int outfile_fd(void);

/* Starts writing what is in the page cache of the temporary file to the
 * disk, without waiting for it, so that the fsync at the commit finds
 * little left to do. Best effort: the commit's fsync reports errors. */
void outfile_writeback(void);

/* Once the output is complete (and a library writing it by name has
 * closed it): syncs it, gives it the target's name (replacing a previous
 * file in one rename) and syncs the folder. On failure the temporary file
 * is removed. */
int outfile_commit(void);

/* Removes the temporary file; the target is untouched. Safe to call when
 * nothing is open. */
void outfile_abort(void);

#endif
