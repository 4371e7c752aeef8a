/*
 * rec-round-trip.h - round trips that the writer's and the reader's unit
 * tests share: items written to a temporary file and read back, each
 * field and payload compared, under the passes' switches (rec-fixture.h:
 * reading ahead, writing behind).
 */
#ifndef MELPIPE_REC_ROUND_TRIP_H
#define MELPIPE_REC_ROUND_TRIP_H

#include <stddef.h>

/* make_items(..., 1) through rec_write with zstd level and a writer's
 * buffer of bufsize bytes (0: the default), read back. */
void test_round_trip(int level, size_t bufsize);

/* Windows records of every dtype among the other types written with
 * rec_write, or alternately with reserve/commit, read back, their bytes
 * checked (version 2 for windows records only, the trailer's counts) and
 * each window expanded with rec_window(). */
void test_windows_round_trip(int level, size_t bufsize, int reserve);

/* Items in pieces among whole ones (rec-round-trip.c says which)
 * written with rec_write, or alternately with reserve/commit, read back
 * field by field (flags too), their bytes checked: version 3 exactly
 * for the pieces, the trailer counting each piece. */
void test_pieces_round_trip(int level, size_t bufsize, int reserve);

#endif
