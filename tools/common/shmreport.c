/*
 * shmreport.c - the stages' -v lines about the shared-memory path
 * (its choice, MELPIPE_SHM, is read in env.c).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"
#include "../../lib/rec.h"

void prog_report_shm_out(const rec_writer *w)
{
	rec_shm_report rep;
	char b[32], by[64] = "";

	if (prog_verbosity <= 0)
		return;
	rec_writer_shm(w, &rep);
	if (rep.records == 0 && (rep.why[0] || prog_shm())) {
		prog_info("output: payloads in the stream, not in shared "
			  "memory: %s", rep.why[0] ? rep.why
			  : "no payload of 4 KiB or more");
		return;
	}
	if (rep.records == 0) {
		prog_info("output: payloads in the stream, not in shared "
			  "memory: off (MELPIPE_SHM=%s)",
			  getenv("MELPIPE_SHM"));
		return;
	}
	prog_human_bytes(b, sizeof(b), rep.bytes);
	if (rep.leased)
		snprintf(by, sizeof(by), ", %" PRIu64 " put there by the "
			 "decoding threads", rep.leased);
	prog_info("output: %" PRIu64 " %s (%s) in shared memory, %" PRIu64
		  " of them passed on from the input's%s; %" PRIu64 " in the "
		  "stream while the ring was full (%" PRIu64 " %s for room, "
		  "%.2f s)", rep.records,
		  prog_plural(rep.records, "payload", "payloads"), b,
		  rep.forwarded, by, rep.full, rep.waits,
		  prog_plural(rep.waits, "wait", "waits"), rep.t_wait);
}

void prog_report_shm_in(const rec_reader *r)
{
	rec_shm_report rep;
	char b[32];

	if (prog_verbosity <= 0)
		return;
	rec_reader_shm(r, &rep);
	if (rep.records) {
		prog_human_bytes(b, sizeof(b), rep.bytes);
		prog_info("input: %" PRIu64 " %s (%s) read in shared "
			  "memory%s%s", rep.records,
			  prog_plural(rep.records, "payload", "payloads"), b,
			  rep.why[0] ? "; a ring not attached: " : "", rep.why);
	} else if (rep.why[0]) {
		prog_info("input: no payload in shared memory: %s", rep.why);
	}
}
