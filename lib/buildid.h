/*
 * buildid.h - the build id: 16 bytes that every melpipe program built
 * from the same sources with the same compiler commands carries, and the
 * check that another process carries the same.
 *
 * The id is a hash of every source file of the programs and lib/, of the
 * Makefile and its build.mk fragments, and of the compiler and its flags,
 * made by make at build time (the Makefile says how). The same sources
 * and flags give the same id, in any folder and after a clean rebuild; a
 * change to any of them gives another.
 *
 * Each program carries its id in its binary behind a marker, once:
 * "MELPIPE-BUILD-ID:" then the id as 32 lowercase hex digits and a NUL,
 * in an ELF note that the linker puts at the start of the file (readelf
 * -n shows it as a "melpipe" note). Another process tells the build of a
 * program by reading the file its process runs, /proc/PID/exe: that is
 * the binary the process was started from even when the path has been
 * deleted or replaced since (a rebuild in place), so what counts is what
 * the process runs, never what the path holds now.
 *
 * Errors are values: 0, a negative errno from the system, or one of the
 * BUILDID_E_* codes below (beyond the errno range); buildid_strerror()
 * names any of them. Nothing here prints or exits. Linux only (/proc).
 */
#ifndef MELPIPE_BUILDID_H
#define MELPIPE_BUILDID_H

#include <stddef.h>
#include <stdint.h>

#define BUILDID_SIZE 16u

/* Why a process or a file is not of this build, below every -errno. */
enum buildid_err {
	BUILDID_E_NONE = -4201,    /* no marker: not a melpipe program */
	BUILDID_E_OTHER = -4202,   /* the marker of another build */
	BUILDID_E_NOTSTAGE = -4203 /* this build, but not one of the
				      programs asked for (a test helper) */
};

/* This build's id: BUILDID_SIZE bytes. */
const uint8_t *buildid_bytes(void);

/* This build's id as 32 lowercase hex digits (NUL-terminated). */
const char *buildid_hex(void);

/* The text of a code (0, -errno or BUILDID_E_*), said of a program:
 * "not a melpipe program". Never NULL. */
const char *buildid_strerror(int err);

/* Whether the program open at fd carries this build's marker among its
 * ELF notes (read with pread: fd's offset stays): 0 when it does,
 * BUILDID_E_OTHER when it carries another build's, BUILDID_E_NONE when
 * it carries none (or is no ELF program of this word size), or -errno
 * when it cannot be read. A few microseconds, whatever the file's size. */
int buildid_check_fd(int fd);

/* The same for the program that process pid runs (/proc/PID/exe, the
 * file it was started from, deleted or replaced since or not): 0 when it
 * carries this build's id; BUILDID_E_OTHER, BUILDID_E_NONE; -ENOENT when
 * there is no such process (or no /proc), -EACCES when it is not ours to
 * look into, another -errno when it cannot be read. */
int buildid_check_pid(long pid);

/* Whether the pipe fd is read by programs of this build only: 1 when fd
 * is a pipe, at least one process holds its read end, and every process
 * that holds it runs a program that carries this build's id and whose
 * file name is one of names (a NULL-terminated list; NULL for any name).
 * 0 otherwise, with why (n bytes, NUL-terminated) saying why in a few
 * words for a -v line: "reader pid 123 (cat) is not a melpipe program",
 * "reader pid 123 (recdump) is a melpipe program of another build", "no
 * process reads the pipe". Processes this one may not look into are
 * passed over (xio_pipe_readers()). why may be NULL (n 0); on 1 it is "".
 * Where one is not NULL, *one is the pid of the pipe's one reader on 1,
 * 0 otherwise (or when several read it). Finding the readers walks /proc
 * (about half a millisecond among a hundred processes); checking each,
 * a few microseconds. */
int buildid_pipe_readers(int fd, const char *const names[], char *why,
			 size_t n, long *one);

/* Process pid as "NAME, pid N" into buf (n > 0 bytes), NAME the file
 * it runs (or "?"), for a message that names the stage after this one. */
void buildid_pid_name(long pid, char *buf, size_t n);

#endif
