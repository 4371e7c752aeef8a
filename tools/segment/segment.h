/*
 * segment.h - what segment.c (options, the loop, whole records) and
 * pieces.c (items in pieces) share.
 */
#ifndef MELPIPE_SEGMENT_H
#define MELPIPE_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/rec.h"
#include "../common/opts.h"

enum last_mode { LAST_PAD, LAST_DROP, LAST_COVER };

struct options {
	uint32_t len;
	uint32_t hop;
	enum last_mode last;
	int copy;           /* one audio record per window */
	const char *input;  /* NULL: stdin */
	struct prog_common co; /* -o (NULL: stdout); no -j */
};

struct stats {
	uint64_t in_audio;   /* audio records, items in pieces (each once)
				or windows of windows records read */
	uint64_t in_skipped; /* skipped records read and passed on */
	uint64_t windows;    /* windows written */
	uint64_t padded;     /* of them padded with zeros */
	uint64_t too_short;  /* audio records that gave no window */
};

/* Where the next window of the current clip gets its segment index. */
struct clip_state {
	int have;
	uint64_t clip;
	uint32_t next_segment;
};

/* The output, the options and the counters every writing function
 * needs. */
struct cut_ctx {
	rec_writer *w;
	const struct options *o;
	struct clip_state cs;
	struct stats st;
};

/* Number of windows of n samples: the full windows, plus with pad the
 * partial one that starts before the end. */
uint64_t window_count(uint64_t n, const struct options *o);

/* The segment index of the clip's next window for a record of clip
 * (0 when the clip changes). */
uint32_t clip_next_segment(struct clip_state *cs, uint64_t clip);

/* Says what the writer failed at; returns -1. */
int write_failed(rec_writer *w, const char *what);

/* Writes the skipped record that stands for an item of n samples that
 * gives no window: in's fields, segment index segment. */
int write_too_short(struct cut_ctx *c, const rec_item *in, uint64_t n,
		    uint32_t segment);

/* An audio item in pieces, cut as the same clip in one record would be:
 * the samples a window still needs are carried from piece to piece, and
 * the last window seen is held back until the next piece (or the item's
 * end) comes, so that the last record written for the item holds one. */
struct piece_cut;

/* A new cutter, or NULL when out of memory; piece_cut_free() accepts
 * NULL. */
struct piece_cut *piece_cut_new(void);
void piece_cut_free(struct piece_cut *pc);
/* 1 while an item in pieces has begun and not ended. */
int piece_cut_active(const struct piece_cut *pc);
/* Cuts the piece it (an audio record flagged more, cont or both) of the
 * item being cut, or begins one. Returns 0, or -1 after saying why. */
int piece_cut_add(struct piece_cut *pc, struct cut_ctx *c,
		  const rec_item *it);
/* The item ends cut short with the skipped record sk: writes its last
 * windows, then sk with the segment index after them. Returns 0 or -1. */
int piece_cut_short(struct piece_cut *pc, struct cut_ctx *c,
		    const rec_item *sk);

#endif
