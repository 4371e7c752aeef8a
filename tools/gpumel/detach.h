/*
 * detach.h - gpumel ends when its output is complete, and lets the GPU go
 * in a process nobody waits for.
 *
 * Releasing a CUDA context takes 0.05-0.07 s whatever it holds, freeing
 * the pinned batches 0.02 s more, and an exit that leaves both to the
 * kernel takes as long: gpumel used to exit 0.09-0.14 s after h5pack had
 * put the dataset in place, and the shell waits for every stage of a
 * pipeline (docs/BENCHMARKS.md, "gpumel's exit"). So, when gpumel may use
 * the GPU, it forks as its very first step, before any thread: the child does
 * all the work; the parent, which the shell waits for, holds nothing (its
 * standard input and output closed at once) and waits for one byte from
 * the child. The child sends it, its exit status, once its output is
 * closed, its messages written and the rings of shared memory given back,
 * and then releases the GPU on its own while the parent exits with that
 * status.
 *
 * Nothing is lost on the way:
 * - a child that ends without sending the byte (any error, any exit
 *   path, a crash, a kill) is waited for, and the parent ends the same
 *   way: its exit status, or death by the same signal;
 * - a signal to the parent that would end gpumel (SIGHUP, SIGINT,
 *   SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2) goes on to the child, SIGCONT
 *   too, and the parent ends after the child, as the child did: a -o
 *   file's temporary name is gone when the parent's end is seen;
 * - a parent killed with SIGKILL takes the child with it: the child gets
 *   SIGTERM (PR_SET_PDEATHSIG);
 * - SIGTSTP, SIGTTIN and SIGTTOU stop the child (as SIGSTOP) and then
 *   the parent;
 *   SIGSTOP cannot be passed on: `kill -STOP` of the parent's pid alone
 *   stops the waiting, not the work;
 * - a SIGCHLD ignored where gpumel was started is set back to its
 *   default, so that the parent can wait for the child;
 * - a GPU that admits one process at a time (exclusive-process compute
 *   mode) gets no early end: the next process could not have it while
 *   the child still does, so gpumel ends once it has let it go;
 * - before it sends the byte the child points its standard input, output
 *   and error at /dev/null, so that whoever reads gpumel's stderr through
 *   a pipe sees its end with the parent's exit. Nothing printed today
 *   comes after that point: the release of the GPU reports nothing.
 *   Other descriptors gpumel was started with stay open in the child
 *   until it ends.
 *
 * MELPIPE_GPUMEL_DETACH says when: auto (the default: when gpumel may use
 * the GPU, --device auto or cuda, and the machine has an NVIDIA device
 * file), on (always, the CPU backend too: for tests) or off (never: the
 * one process releases the GPU before it exits).
 */
#ifndef MELPIPE_GPUMEL_DETACH_H
#define MELPIPE_GPUMEL_DETACH_H

#include <sys/types.h>

struct detach {
	int fd;          /* the child's end of the status pipe; -1: none */
	pid_t parent;    /* the waiting process */
};

/* Forks when MELPIPE_GPUMEL_DETACH asks for it (may_gpu: gpumel may use
 * the GPU). Returns in the process that is to do the work (the child, or
 * the only process); the parent never returns. Call before any thread
 * starts and before stdin and stdout are used. A value of the variable
 * it does not take is a usage error (exit 2). */
void detach_start(struct detach *d, int may_gpu);

/* In the working process, once the output is complete, every message is
 * written and what others wait for (the rings) is given back: when
 * detached, points stdin, stdout and stderr at /dev/null and has the
 * parent exit with status (0-255); a no-op otherwise. */
void detach_release(struct detach *d, int status);

/* Whether detach_start() forked (and detach_release() has not run). */
int detach_active(const struct detach *d);

/* With -v, when detached: one line saying which process ends when, and
 * which releases the backend (its -v name); wait: the backend admits one
 * process at a time (a GPU in exclusive-process compute mode), so that
 * gpumel will end only once it is released (the caller then does not
 * call detach_release()). Before the summary line. */
void detach_note(const struct detach *d, const char *backend, int wait);

#endif
