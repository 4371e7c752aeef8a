/*
 * shmreport.c - the stages' choice of the shared-memory path
 * (MELPIPE_SHM) and their -v lines about it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"
#include "../../lib/rec.h"

int prog_shm(void)
{
	const char *e = getenv("MELPIPE_SHM");

	/* on by default: faster than the pipes on both jobs measured
	 * (docs/BENCHMARKS.md); it engages only between two stages of one
	 * build, and falls back by itself */
	if (e == NULL || *e == '\0')
		return 1;
	if (strcmp(e, "0") == 0 || strcmp(e, "1") == 0 ||
	    strcmp(e, "2") == 0)
		return *e - '0';
	prog_usage_error("MELPIPE_SHM=%s: not 0, 1 or 2", e);
}

uint64_t prog_shm_bytes(void)
{
	const char *e = getenv("MELPIPE_SHM_RING_MB");
	char *end;
	unsigned long mb;

	if (e == NULL || *e == '\0')
		return 0;
	errno = 0;
	mb = strtoul(e, &end, 10);
	if (errno || *end != '\0' || mb == 0 || mb > 65536)
		prog_usage_error("MELPIPE_SHM_RING_MB=%s: not a number of "
				 "MiB from 1 to 65536", e);
	return (uint64_t)mb << 20;
}

void prog_report_shm_out(const rec_writer *w)
{
	rec_shm_report rep;
	char b[32], by[64] = "";

	if (prog_verbosity <= 0)
		return;
	rec_writer_shm(w, &rep);
	if (rep.records == 0) {
		prog_info("output: payloads in the stream, not in shared "
			  "memory: %s", rep.why[0] ? rep.why : prog_shm()
			  ? "no payload of 4 KiB or more" : "off (MELPIPE_SHM=0)");
		return;
	}
	prog_human_bytes(b, sizeof(b), rep.bytes);
	if (rep.leased)
		snprintf(by, sizeof(by), ", %" PRIu64 " put there by the "
			 "decoding threads", rep.leased);
	prog_info("output: %" PRIu64 " payloads (%s) in shared memory, %"
		  PRIu64 " of them passed on from the input's%s; %" PRIu64
		  " in the stream while the ring was full (%" PRIu64
		  " waits for room, %.2f s)", rep.records, b, rep.forwarded,
		  by, rep.full, rep.waits, rep.t_wait);
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
		prog_info("input: %" PRIu64 " payloads (%s) read in shared "
			  "memory%s%s", rep.records, b, rep.why[0] ?
			  "; a ring not attached: " : "", rep.why);
	} else if (rep.why[0]) {
		prog_info("input: no payload in shared memory: %s", rep.why);
	}
}
