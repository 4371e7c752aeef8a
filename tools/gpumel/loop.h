/*
 * loop.h - what gpumel's three threads share, private to gpumel: the
 * batches, the queues they circulate through and the loop's state.
 *
 *   reader:  rec_read() -> samples packed into batches (the backend's
 *            buffers), record metadata copied into the batch (pack.c)
 *   compute: (the main thread) submits batches to the backend, up to its
 *            depth in flight, and collects them in order (loop.c)
 *   writer:  the finished batches' records -> rec_write() (loop.c)
 * The batches circulate through three bounded queues (free -> ready ->
 * done -> free), so memory stays flat and records leave in input order.
 */
#ifndef MELPIPE_GPUMEL_LOOP_H
#define MELPIPE_GPUMEL_LOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../../lib/rec.h"
#include "backend.h"

#define DEFAULT_BATCH_RECS (1u << 18) /* chosen from the data */
#define MAX_BATCH_BYTES (1ul << 30)
/* Input bytes per batch when the data choose: 2-16 MiB batches stay in
 * the CPU's caches while the reader fills them and pack 2-3 times faster
 * than 32-64 MiB ones (1 KiB records), and the GPU needs no more per
 * launch. */
#define BATCH_BYTES (8u << 20)

#define ENTRY_SOURCE 2 /* entry.skipped of a source record passed on */
#define DMA_AREAS 8    /* rings of shared memory in one stream at most */

/* One record leaving in a batch, in stream order. */
struct entry {
	uint64_t clip, offset, clip_samples;
	uint32_t segment, sample_rate;
	int32_t label;
	int split;
	int skipped;           /* leaves as a skipped record (text: reason),
				  or as a source record (ENTRY_SOURCE, text:
				  its pairs) */
	uint32_t flags;        /* REC_ITEM_MORE, REC_ITEM_CONT: a features
				  piece (pieces.c) */
	size_t rec;            /* computed: index in the batch's mel_rec[] */
	/* In the first entry of a windows record's windows computed in one
	 * batch, their number (the entries after it are the others, their
	 * features after its own): they leave as one features-windows
	 * record with these window fields. 0 in every other entry. */
	uint32_t n_win, win_len, win_hop, win_flags;
	size_t key_off, key_len, text_off, text_len; /* in the arena */
};

struct hbatch {
	mel_batch mb;
	int allocated;         /* mb holds the backend's buffers */
	struct entry *ent;
	size_t n_ent, cap_ent;
	char *arena;           /* keys and reasons */
	size_t arena_len, arena_cap;
	size_t in_used;        /* elements of mb.in in use */
	uint64_t out_used;     /* elements of mb.out in use */
	int done;              /* computed (or nothing to compute) */
	/* A request from the reader to the compute thread to grow mb. */
	int resize;
	size_t want_in, want_out, want_recs;
	/* Payloads it takes from the rings of shared memory (lp->dma): their
	 * slots, held until the backend is done with the batch, the copies
	 * (mb.copy), the entry each CRC (mb.crc) is of, the rings' areas. */
	rec_hold *hold;
	size_t n_hold, cap_hold;
	size_t cap_copy;
	size_t *crc_ent;
	size_t cap_crc_ent;
	const void *area[DMA_AREAS];
	uint64_t area_bytes[DMA_AREAS];
	unsigned n_area;
	/* the payload bytes it holds, and the most it may before it is
	 * passed on: a quarter of its smallest ring, so that a ring smaller
	 * than a batch never waits on a batch that waits for input */
	uint64_t hold_bytes, hold_max;
};

struct queue {
	struct hbatch **v;
	size_t cap, head, len;
	int closed;            /* the producer is done */
	pthread_cond_t cond;
};

/* The reader's item in pieces, being framed a stretch at a time
 * (pieces.c). */
struct pieces {
	int open;              /* its last piece has not come yet */
	int mode;              /* PC_FRAME, PC_REFUSED or PC_DROP */
	int started;           /* frames computed: carry holds padded samples */
	int emitted;           /* features pieces sent */
	int dt;                /* REC_S16 or REC_F32: the samples as batched */
	size_t isz;            /* bytes per sample as batched */
	uint64_t n;            /* the item's samples so far */
	uint64_t n_all;        /* and those dropped after a refusal */
	int nan;               /* PC_REFUSED for a sample not finite */
	uint64_t t_next;       /* its first frame not computed yet */
	uint64_t y0;           /* where carry starts in the padded signal */
	unsigned char *carry;  /* samples a later frame needs */
	size_t carry_len;      /* samples in carry */
	size_t carry_cap;      /* bytes */
	uint64_t clip_samples; /* as the latest piece gives it */
	rec_item first;        /* the first piece's fields (key: key) */
	char *key;
	char why[384];         /* PC_REFUSED: the reason */
	uint64_t max_frames;   /* frames of one computed record at most */
	uint64_t chunk;        /* samples of a piece framed at once */
};

struct stats {
	uint64_t audio, skipped_in, skipped_here; /* reader */
	uint64_t features, skipped_out;           /* writer */
	uint64_t fwindows;     /* writer: features-windows records written */
	double t_reader;                          /* reader, all */
	double t_reader_in;                       /* reader, waiting for input */
	double t_out_blocked, t_alloc;            /* reader, waiting */
	double t_compute, t_starved;              /* compute */
	double t_write;                           /* writer */
	/* payloads by reference taken from the rings by the backend: how
	 * many, their bytes, the copies they made (adjacent ones are one),
	 * those the host copied because a ring could not be registered,
	 * batches passed on early to give a small ring its slots back */
	uint64_t dma, dma_bytes, dma_copies, dma_host, dma_early;
};

struct loop {
	pthread_mutex_t mu;    /* the queues, abort, resize */
	pthread_cond_t resized;
	struct queue free_q, ready_q, done_q;
	atomic_int abort;      /* set under mu, read anywhere */
	char err[1024];

	mel_params p;
	mel_backend *be;
	rec_reader *rd;
	rec_writer *wr;
	const char *out_path;  /* -o FILE, NULL: standard output */
	size_t out_size;
	struct hbatch *hb;
	size_t n_hb;
	int sized;             /* the batches have the size from the data */
	int grow;              /* free batches may still lack that size
				  (the compute thread's) */
	size_t target_in;      /* input bytes per batch */
	size_t batch_recs;     /* --batch */
	size_t cap_in, cap_out, cap_recs; /* batch size chosen from data */
	void *pad;             /* reader: a padded window, taken alone */
	size_t pad_cap;
	struct pieces pc;      /* reader: the item in pieces, if any */
	struct stats st;
	/* The backend copies s16 payloads that came by reference straight
	 * from their ring and checks their CRCs (be->copies, the reader
	 * defers them): set by the caller. The compute thread registers each
	 * ring's area with the backend when a batch first uses it. */
	int dma;
	struct {
		const void *p;
		int ok;
	} reg[DMA_AREAS];
	unsigned n_reg;
	char reg_why[512];     /* why a ring could not be registered */
};

/* Stops every thread; the first message wins. */
void loop_fail(struct loop *lp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A push never waits: each queue has room for every batch. */
void q_push(struct loop *lp, struct queue *q, struct hbatch *hb);
/* The producer is done: q_pop() returns NULL once q is empty. */
void q_close(struct loop *lp, struct queue *q);
/* The next batch; NULL once the queue is closed and empty, or on abort.
 * With wait == 0, NULL also when it is empty now. */
struct hbatch *q_pop(struct loop *lp, struct queue *q, int wait);

/* Read without the lock: checked once per record by the reader. */
static inline int aborted(struct loop *lp)
{
	return atomic_load_explicit(&lp->abort, memory_order_acquire);
}

/* The reader thread (pack.c): reads lp->rd to its end, packing the
 * records into batches for the ready queue, which it closes at the end. */
void *reader_main(void *arg);

/* pack.c's helpers that pieces.c shares; see pack.c. */
struct entry *add_entry(struct loop *lp, struct hbatch *hb,
			const rec_item *it);
int add_skipped_rec(struct loop *lp, struct hbatch **cur, const rec_item *it,
		    const char *reason, size_t len);
int make_room(struct loop *lp, struct hbatch **cur, int dt, size_t n,
	      uint64_t nf, size_t nrecs);
const char *unusable(const struct loop *lp, const rec_item *it, uint64_t nf,
		     char *buf, size_t len);
int convert_samples(void *dst, const rec_item *it, size_t from, size_t n,
		    size_t *bad);
void warn_skip(const rec_item *it, const char *reason);

/* pieces.c: an audio piece, or the skipped record after a piece flagged
 * more (lp->pc.open): 0, or -1 on abort. */
int add_piece(struct loop *lp, struct hbatch **cur, const rec_item *it);
/* Frees what the item in pieces holds. */
void pieces_free(struct pieces *pc);

/* Sets up n_hb batches (their buffers allocated later, once the data
 * give their size), all in the free queue; -1 when out of memory. The
 * caller has filled in p, be, rd, wr, out_size, batch_recs and
 * target_in. */
int loop_init(struct loop *lp, size_t n_hb);
/* Gives back every slot of the rings the batches hold and unregisters
 * the rings from the backend, so that the reader may unmap them; the
 * batches stay. loop_free() does it too. */
void loop_unregister(struct loop *lp);
/* Frees the batches (with the backend) and the queues. */
void loop_free(struct loop *lp);
/* Runs the three threads over the whole stream: 0, or -1 after an error
 * (in lp->err); see loop.c for what an error leaves running. */
int run_loop(struct loop *lp);

#endif
