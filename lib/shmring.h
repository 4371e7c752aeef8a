/*
 * shmring.h - a ring of payloads in shared memory, handed from one writer
 * process to its readers by reference: the writer allocates a slot and
 * fills its bytes, sends the reference (slot, offset, length) by other
 * means (the record stream), and the slot comes back when every holder
 * has released it. Nothing here knows of records.
 *
 * The memory is one memfd ("melpipe-ring", close-on-exec, mode 0600),
 * sized once and sealed against shrinking and growing, mapped shared by
 * the writer and each reader. A reader opens it as /proc/WRITER_PID/fd/FD,
 * which needs the same user and ptrace read access: no name exists in any
 * file system, and once every process has closed and unmapped it (or
 * died) it is gone.
 *
 * Layout (SHMRING_LAYOUT_VERSION), all in the file:
 *   control page, 4096 bytes: magic "MPRING\0\0", layout version, slot
 *     count, data bytes, build id, writer pid, "writer closed", the
 *     readers' pids (the acknowledgement), the writer's counters and
 *     the count of slots freed;
 *   slot table, n_slots entries of 16 bytes {off, len, refs}, padded to
 *     whole pages;
 *   data area, data_bytes (a multiple of 64).
 *
 * Slots. A slot's refs is 0 when free. shmring_alloc() sets it to 1, the
 * reference the writer hands on; a stage that passes a reference further
 * adds one with shmring_hold() before it releases its own; each holder
 * ends with shmring_release(). Only the writer allocates, from one thread;
 * at, hold, release and the queries may be called from any thread of any
 * process that has the ring.
 *
 * Choices made here:
 * - Slots are handed out in sequence (slot = sequence % n_slots) and
 *   payload bytes contiguously from a head that wraps to offset 0 when
 *   the end of the data area is too short. Slots come back oldest first:
 *   a slot released early stays out of use until every slot allocated
 *   before it is released too, so free space is always one stretch.
 * - When nothing is in use the head goes back to offset 0, so that a
 *   payload of the whole data area fits in an empty ring.
 * - Allocation never waits: with no free slot, or no free stretch of the
 *   bytes, it fails at once with SHMRING_E_FULL (a payload larger than
 *   the whole data area: SHMRING_E_TOOBIG). The caller decides whether
 *   to wait (shmring_freed() tells it whether readers are giving slots
 *   back) or send the payload some other way: a reader that holds many
 *   slots, or died holding them, makes the ring full, never the writer
 *   wait for ever.
 * - Payloads start on 64-byte boundaries (SHMRING_ALIGN) and take a
 *   multiple of 64 bytes; a payload of 0 bytes takes a slot and no bytes.
 * - The writer keeps its own bookkeeping (where each slot's bytes end,
 *   the head and the tail) in private memory; the shared slot table is
 *   what readers check references against, and a reader writes nothing
 *   but refs and its own entry in the readers' table.
 * - Up to SHMRING_MAX_READERS processes may attach (a stage reading
 *   references another stage forwarded attaches to the ring they point
 *   into); each attach stores the reader's pid in the control page.
 * - Releasing decrements with release order and the writer reads refs
 *   with acquire order before reusing a slot, so a reader's loads of the
 *   payload happen before the writer's next stores there. Publishing a
 *   payload is the caller's write(2) of the reference after filling it,
 *   and the reader's read(2) before shmring_at().
 * - shmring_detach() and shmring_destroy() release nothing: a slot still
 *   held stays out of use, as one held by a process that was killed.
 *
 * Errors are values: 0, a negative errno (-ENOMEM, -ENOENT, -EACCES...)
 * from the system, or one of the SHMRING_E_* codes below, which lie
 * beyond the errno range; shmring_strerror() names any of them. Where a
 * call fails for a reason worth a sentence, shmring_detail() gives it.
 * Nothing here prints or exits. Linux only (memfd_create, file seals,
 * /proc/PID/fd).
 */
#ifndef MELPIPE_SHMRING_H
#define MELPIPE_SHMRING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SHMRING_LAYOUT_VERSION 2u
#define SHMRING_ALIGN 64u          /* payload offsets and sizes */
#define SHMRING_BUILD_ID_SIZE 16u
#define SHMRING_MAX_READERS 8u     /* processes attached at once */
#define SHMRING_MAX_SLOTS (1u << 20)
#define SHMRING_MAX_DATA ((uint64_t)1 << 40)

/* Ring errors, below every -errno. */
enum shmring_err {
	SHMRING_E_FULL = -4097,    /* no free slot or bytes now: go inline */
	SHMRING_E_TOOBIG = -4098,  /* larger than the whole data area */
	SHMRING_E_CLOSED = -4099,  /* allocation after shmring_close() */
	SHMRING_E_SIZE = -4100,    /* the file is not the offer's size */
	SHMRING_E_NOTRING = -4101, /* no ring's magic: not a ring */
	SHMRING_E_VERSION = -4102, /* another layout version */
	SHMRING_E_BUILD = -4103,   /* made by another build */
	SHMRING_E_LAYOUT = -4104,  /* slots, bytes or writer pid differ from
				      the offer */
	SHMRING_E_SEALS = -4105,   /* not sealed against shrinking/growing */
	SHMRING_E_READERS = -4106, /* SHMRING_MAX_READERS already attached */
	SHMRING_E_REF = -4107      /* hold or release of a slot out of range
				      or free */
};

struct shmring;

/* The writer's counters, kept in the control page (either side reads
 * them): allocations and their payload bytes; allocations refused
 * because no slot was free, because no stretch of bytes was, and
 * because the payload was larger than the data area. */
struct shmring_stats {
	uint64_t allocs, bytes;
	uint64_t full_slots, full_bytes, too_big;
};

/* The text of an error code (0, -errno or SHMRING_E_*). Never NULL. */
const char *shmring_strerror(int err);

/* One sentence on the last failure of create, attach or alloc's
 * arguments ("ring of pid 123 fd 5: built by another build of
 * melpipe"); "" when there was none or r is NULL. */
const char *shmring_detail(const struct shmring *r);

/* ---------------------------------------------------------------- */
/* Writer */

/* Creates a ring of n_slots slots (1..SHMRING_MAX_SLOTS) and data_bytes
 * of payload (a multiple of SHMRING_ALIGN, up to SHMRING_MAX_DATA), its
 * memory populated, stamped with the 16 bytes of build_id. Returns 0, or
 * -errno (-EINVAL for a bad size, -ENOSYS without memfd...). On failure
 * *out is still set, for shmring_detail(), and must be destroyed (NULL
 * only when memory for it ran out). */
int shmring_create(struct shmring **out, uint64_t data_bytes,
		   uint32_t n_slots, const uint8_t build_id[16]);

/* The same ring in ordinary memory of this process (no file: fd -1, no
 * reader can attach): the bookkeeping where memory checkers see every
 * byte of it. For tests. */
int shmring_create_private(struct shmring **out, uint64_t data_bytes,
			   uint32_t n_slots, const uint8_t build_id[16]);

/* The memfd a reader opens as /proc/PID/fd/FD (the writer's, -1 for a
 * private ring or a reader); it stays open until shmring_destroy(). */
int shmring_fd(const struct shmring *w);

/* Takes the next slot and len payload bytes: sets *slot, *off (within
 * the data area, a multiple of SHMRING_ALIGN) and *ptr (where to write
 * them), and the slot's refs to 1. Never waits. Returns 0,
 * SHMRING_E_FULL when the next slot or a stretch of len bytes is still in
 * use, SHMRING_E_TOOBIG when len exceeds the data area (or a slot's
 * 32-bit length), SHMRING_E_CLOSED after shmring_close(), -EINVAL on a
 * reader's ring. One thread only. */
int shmring_alloc(struct shmring *w, size_t len, uint32_t *slot,
		  uint64_t *off, void **ptr);

/* The pid of the first reader that attached (the acknowledgement), or 0
 * while none has. */
pid_t shmring_acked(const struct shmring *r);

/* 1 when process pid has attached to the ring, else 0. */
int shmring_attached(const struct shmring *r, pid_t pid);

/* Marks the ring closed: the writer allocates no more (alloc fails with
 * SHMRING_E_CLOSED); readers see it with shmring_closed(). */
void shmring_close(struct shmring *w);

/* Marks the ring closed, unmaps it and closes the memfd; the memory lives
 * on while a reader has it mapped. Releases nothing. Accepts NULL. */
void shmring_destroy(struct shmring *w);

/* ---------------------------------------------------------------- */
/* Reader */

/* Attaches to the ring that process writer_pid offered as its fd, of
 * data_bytes and n_slots, made by the build build_id: opens
 * /proc/WRITER_PID/fd/FD, checks its size, magic, layout version, build
 * id, slots, bytes and writer pid and its seals, maps it, closes the file
 * again and stores our pid in the ring as the acknowledgement. Returns 0,
 * -errno from open (-ENOENT: no such process or fd; -EACCES: not ours to
 * open), or the SHMRING_E_* of the first check that failed. On failure
 * *out is still set, for shmring_detail(), and must be detached (NULL
 * only when memory for it ran out). */
int shmring_attach(struct shmring **out, pid_t writer_pid, int fd,
		   uint64_t data_bytes, uint32_t n_slots,
		   const uint8_t build_id[16]);

/* The same on fd, already open (received over a socket, or a test's);
 * writer_pid 0 skips the check of the writer's pid. fd stays the
 * caller's: the mapping outlives it. */
int shmring_attach_fd(struct shmring **out, int fd, pid_t writer_pid,
		      uint64_t data_bytes, uint32_t n_slots,
		      const uint8_t build_id[16]);

/* The payload of a reference, or NULL when it cannot be one: slot out of
 * range, off + len past the data area, the slot free (refs 0) or holding
 * another payload (its off and len not those given). Works on the
 * writer's ring too. */
void *shmring_at(const struct shmring *r, uint32_t slot, uint64_t off,
		 uint64_t len);

/* The same for a part of a payload: off and len within the slot's
 * payload (a stage passing on part of what it read). NULL as above when
 * the slot is free or the bytes are not all inside its payload. */
void *shmring_within(const struct shmring *r, uint32_t slot, uint64_t off,
		     uint64_t len);

/* Adds a reference to a slot in use (a stage passing it on); releases
 * one. Each returns 0, or SHMRING_E_REF when the slot is out of range or
 * free (and its count at its maximum, for hold). */
int shmring_hold(struct shmring *r, uint32_t slot);
int shmring_release(struct shmring *r, uint32_t slot);

/* 1 once the writer has closed or destroyed the ring, else 0. */
int shmring_closed(const struct shmring *r);

/* Unmaps the ring; releases nothing. Accepts NULL. */
void shmring_detach(struct shmring *r);

/* ---------------------------------------------------------------- */
/* Either side */

/* The writer's counters so far. */
void shmring_stats(const struct shmring *r, struct shmring_stats *st);

/* The data area (for registering it with a device) and its size. */
void *shmring_data(const struct shmring *r, uint64_t *bytes);

/* How many times a slot's last reference was released so far (by
 * shmring_release(), in any process): the writer sees its readers go on
 * while it waits for room. */
uint64_t shmring_freed(const struct shmring *r);

/* A slot's current count of references: 0 when free or out of range. For
 * tests and reports. */
uint32_t shmring_refs(const struct shmring *r, uint32_t slot);

#endif
