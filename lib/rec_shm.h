/*
 * rec_shm.h - what the record reader and writer share privately about
 * the shared-memory path (formats/record.md, version 5): the ring
 * record's and the reference's fields, the reader's table of rings it
 * attached and the writer's table of rings it offered. Not for tools/.
 *
 * A writer whose pipe is read by one stage of this build offers a ring
 * (lib/shmring.h) in a ring record; the reader attaches, which the writer
 * sees in the ring's control page, and from then on the writer may send
 * a data record's payload in the ring and a 16-byte reference to it in
 * the pipe. A stage that writes on a payload it read by reference (a
 * window of segment's is its input's samples) passes the reference on,
 * after offering the ring it points into to its own reader.
 */
#ifndef MELPIPE_REC_SHM_H
#define MELPIPE_REC_SHM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shmring.h"

#define SHM_RING_META 48u       /* ring record's metadata */
#define SHM_REF_SIZE 16u        /* a shared record's payload */
#define SHM_MAX_RINGS 8u        /* rings in one stream */
#define SHM_MIN_PAYLOAD 4096u   /* smaller payloads stay inline */
#define SHM_RING_BYTES ((uint64_t)64 << 20) /* a writer's ring */
#define SHM_RING_SLOTS 8192u
#define SHM_WHY 192

/* A ring record's metadata. */
struct shm_offer {
	uint32_t pid, fd;       /* a process that holds the ring open (the
				   writer), and the ring's fd there */
	uint64_t bytes;         /* data area */
	uint32_t slots, id;     /* slot count; the ring's id in the stream */
	uint8_t build[16];      /* build id of the ring's creator */
	uint32_t creator;       /* the pid that made it */
};

void shm_offer_put(unsigned char *p, const struct shm_offer *o);
void shm_offer_get(const unsigned char *p, struct shm_offer *o);

/* A shared record's reference. */
struct shm_ref {
	uint32_t ring, slot;
	uint64_t off;
};

void shm_ref_put(unsigned char *p, const struct shm_ref *ref);
void shm_ref_get(const unsigned char *p, struct shm_ref *ref);

/* ------------------------------------------------------------------ */
/* Reader side */

struct shm_in_ring {
	uint32_t id;            /* in this stream */
	struct shmring *ring;   /* NULL: offered, not attached */
	int fd;                 /* the ring open here, for passing it on */
	struct shm_offer offer;
};

struct shm_rd {
	int on;                 /* attach rings offered */
	unsigned n;
	struct shm_in_ring rings[SHM_MAX_RINGS];
	/* the payload of the record handed out last, released at the next
	 * read: its ring (index into rings), slot, and the bytes given */
	int held;
	unsigned held_i;
	uint32_t held_slot;
	const unsigned char *held_ptr;
	uint64_t held_len;
	uint64_t offers, records, bytes;
	char why[SHM_WHY];      /* why the last offer was not taken */
};

/* A ring record's offer: attaches (when on), else notes why not. Returns
 * 0, or -1 with why (n bytes) saying what is wrong with the record
 * itself (an id offered twice, too many rings): a broken stream. */
int shm_rd_offer(struct shm_rd *s, const struct shm_offer *o, char *why,
		 size_t n);

/* The payload of ref, len bytes: a pointer into the ring, the slot held
 * for the caller until shm_rd_release(). NULL with why when the
 * reference cannot be one (a broken stream). */
const unsigned char *shm_rd_resolve(struct shm_rd *s,
				    const struct shm_ref *ref, uint64_t len,
				    char *why, size_t n);

/* Releases the slot of the record handed out last, if any. */
void shm_rd_release(struct shm_rd *s);

/* Where the len bytes at p lie, when they lie inside the payload of the
 * record handed out last: 1 and *ring_i, *slot and *off (within the data
 * area) set; else 0. */
int shm_rd_find(const struct shm_rd *s, const void *p, uint64_t len,
		unsigned *ring_i, uint32_t *slot, uint64_t *off);

/* Releases what is held and detaches every ring. */
void shm_rd_free(struct shm_rd *s);

/* ------------------------------------------------------------------ */
/* Writer side */

struct shm_out_ring {
	uint32_t id;            /* in this stream, 1.. */
	struct shmring *ring;   /* the writer's own, or the input's (not
				   ours to free) */
	const struct shm_in_ring *from; /* a forwarded ring: the input's */
	struct shm_offer offer;
	int acked;              /* our reader attached */
};

struct shm_wr {
	int mode;               /* 0 off, 1 when the reader allows, 2 on */
	pid_t reader;           /* the pipe's one reader, once found */
	char reader_name[80];   /* and "NAME, pid N" */
	unsigned checks;        /* reader checks done */
	uint64_t next_check;    /* at this many payloads */
	uint64_t payloads;      /* payloads that could go by reference */
	unsigned n;
	struct shm_out_ring rings[SHM_MAX_RINGS];
	int own;                /* index of the writer's own ring, -1 */
	int own_failed;         /* it could not be made: no more tries */
	uint64_t ring_bytes;    /* the own ring's size */
	/* leases (rec_writer_lease()): the own ring once attached, the
	 * bytes leased and not yet written, and the lock every allocation
	 * in the own ring takes, the leasing threads' and the writer's */
	struct shmring *_Atomic lease_ring;
	_Atomic uint64_t leased;
	pthread_mutex_t mu;
	uint64_t leased_n;      /* leases written by reference */
	uint64_t pending;       /* ring bytes the unflushed buffer refers to */
	uint64_t records, bytes, forwarded, full, waits;
	double t_wait;
	char why[SHM_WHY];      /* why references are not sent */
};

/* Whether the pipe fd has one reader process, a stage of this build
 * (any program without check_build): its pid, else 0 with why. */
pid_t shm_pipe_reader(int fd, int check_build, char *why, size_t n);

/* The programs whose reading makes vmsplice and references safe (they
 * read their input through this library); NULL-terminated. */
extern const char *const rec_suite_progs[];

#endif
