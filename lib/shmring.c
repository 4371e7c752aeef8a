/*
 * shmring.c - the shared ring of shmring.h: the memfd and its layout, the
 * writer's allocation and reclaim, the reader's checks.
 *
 * The writer counts slots and bytes with two running positions each:
 * sequence numbers (head_seq, tail_seq; slot = seq % n_slots) and byte
 * positions that only grow (head_pos, tail_pos; offset = pos % data
 * bytes, a wrap skipping to the next multiple of it). What lies between
 * tail and head is in use or waits for an older slot to come back; the
 * rest is free, in one stretch.
 */
#include "shmring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RING_PAGE 4096u
#define RING_MAGIC "MPRING\0"   /* 8 bytes with its NUL */
#define DETAIL_SIZE 320

/* The memory is shared between processes: its atomics must be plain
 * lock-free words, not a lock of this process's own. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "lock-free 32-bit atomics");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_LONG_LOCK_FREE == 2,
	       "lock-free 64-bit atomics");

/* The control page. magic and version stay where they are in every
 * layout version, so that any build can tell a ring of another layout. */
struct ring_ctl {
	char magic[8];
	uint32_t version;
	uint32_t n_slots;
	uint64_t data_bytes;
	uint8_t build_id[SHMRING_BUILD_ID_SIZE];
	uint32_t writer_pid;
	_Atomic uint32_t closed;
	_Atomic uint32_t readers[SHMRING_MAX_READERS]; /* pids, 0 = none */
	_Atomic uint64_t allocs, bytes, full_slots, full_bytes, too_big;
	/* slots whose last reference went (readers count; the writer
	 * watches it while it waits for room), on a line of its own */
	_Alignas(64) _Atomic uint64_t freed;
};
_Static_assert(sizeof(struct ring_ctl) <= RING_PAGE, "control page");

struct ring_slot {
	_Atomic uint64_t off;
	_Atomic uint32_t len;
	_Atomic uint32_t refs;
};
_Static_assert(sizeof(struct ring_slot) == 16, "slot entry of 16 bytes");

enum { RING_WRITER, RING_READER };

struct shmring {
	int role;
	int fd;                 /* the writer's memfd, else -1 */
	int priv;               /* ordinary memory: free(), not munmap() */
	unsigned char *map;
	size_t map_size;
	struct ring_ctl *ctl;
	struct ring_slot *slots;
	unsigned char *data;
	uint64_t data_bytes;
	uint32_t n_slots;
	/* the writer's own bookkeeping, never shared */
	uint64_t *end;          /* per slot: byte position after its bytes */
	uint64_t head_seq, tail_seq;
	uint64_t head_pos, tail_pos;
	char prefix[64];        /* "ring of pid P fd F" */
	char detail[DETAIL_SIZE];
};

const char *shmring_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case SHMRING_E_FULL: return "ring full";
	case SHMRING_E_TOOBIG: return "payload larger than the ring";
	case SHMRING_E_CLOSED: return "ring closed";
	case SHMRING_E_SIZE: return "ring of another size";
	case SHMRING_E_NOTRING: return "not a ring";
	case SHMRING_E_VERSION: return "ring of another layout version";
	case SHMRING_E_BUILD: return "ring of another build";
	case SHMRING_E_LAYOUT: return "ring unlike its offer";
	case SHMRING_E_SEALS: return "ring not sealed";
	case SHMRING_E_READERS: return "too many readers of the ring";
	case SHMRING_E_REF: return "bad slot reference";
	}
	if (err < 0 && err > -4096)
		return strerror(-err);
	return "unknown error";
}

const char *shmring_detail(const struct shmring *r)
{
	return r ? r->detail : "";
}

/* Sets the detail, "PREFIX: reason", and returns err. */
__attribute__((format(printf, 3, 4)))
static int ring_fail(struct shmring *r, int err, const char *fmt, ...)
{
	char reason[DETAIL_SIZE - 66]; /* after "PREFIX: " */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	snprintf(r->detail, sizeof(r->detail), "%s: %s", r->prefix, reason);
	return err;
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

/* Bytes of the file: control page, slot table in whole pages, data. */
static uint64_t ring_file_size(uint64_t data_bytes, uint32_t n_slots)
{
	return RING_PAGE + round_up((uint64_t)n_slots *
				    sizeof(struct ring_slot), RING_PAGE) +
	       data_bytes;
}

/* 0 when a ring of these sizes may exist, else -EINVAL with a detail. */
static int ring_check_sizes(struct shmring *r, uint64_t data_bytes,
			    uint32_t n_slots)
{
	if (data_bytes == 0 || data_bytes % SHMRING_ALIGN ||
	    data_bytes > SHMRING_MAX_DATA)
		return ring_fail(r, -EINVAL, "%llu data bytes: not a multiple "
				 "of %u from %u to 2^40",
				 (unsigned long long)data_bytes,
				 SHMRING_ALIGN, SHMRING_ALIGN);
	if (n_slots == 0 || n_slots > SHMRING_MAX_SLOTS)
		return ring_fail(r, -EINVAL, "%u slots: not from 1 to %u",
				 n_slots, SHMRING_MAX_SLOTS);
	return 0;
}

/* Points the ring's parts into its memory at r->map. */
static void ring_layout(struct shmring *r, uint64_t data_bytes,
			uint32_t n_slots)
{
	r->ctl = (struct ring_ctl *)(void *)r->map;
	r->slots = (struct ring_slot *)(void *)(r->map + RING_PAGE);
	r->data = r->map + (ring_file_size(data_bytes, n_slots) - data_bytes);
	r->data_bytes = data_bytes;
	r->n_slots = n_slots;
}

static struct shmring *ring_new(int role)
{
	struct shmring *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->role = role;
	r->fd = -1;
	snprintf(r->prefix, sizeof(r->prefix), "ring");
	return r;
}

static void ring_free(struct shmring *r)
{
	if (r == NULL)
		return;
	if (r->priv)
		free(r->map);
	else if (r->map)
		munmap(r->map, r->map_size);
	if (r->fd >= 0)
		close(r->fd);
	free(r->end);
	free(r);
}

/* The memfd, sized and sealed, mapped at r->map. */
static int ring_map_memfd(struct shmring *r, uint64_t size)
{
	const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	void *p;

	r->fd = memfd_create("melpipe-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->fd < 0)
		return ring_fail(r, -errno, "memfd_create: %s",
				 strerror(errno));
	if (fchmod(r->fd, 0600) < 0)
		return ring_fail(r, -errno, "fchmod: %s", strerror(errno));
	if (ftruncate(r->fd, (off_t)size) < 0)
		return ring_fail(r, -errno, "ftruncate to %llu bytes: %s",
				 (unsigned long long)size, strerror(errno));
	if (fcntl(r->fd, F_ADD_SEALS, seals) < 0)
		return ring_fail(r, -errno, "sealing: %s", strerror(errno));
	/* populated now: the ring's memory is what it is from the start */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_POPULATE, r->fd, 0);
	if (p == MAP_FAILED)
		return ring_fail(r, -errno, "mmap of %llu bytes: %s",
				 (unsigned long long)size, strerror(errno));
	r->map = p;
	r->map_size = size;
	return 0;
}

static int ring_create(struct shmring **out, uint64_t data_bytes,
		       uint32_t n_slots, const uint8_t build_id[16], int priv)
{
	struct shmring *r = ring_new(RING_WRITER);
	uint64_t size;
	int e;

	*out = r;
	if (r == NULL)
		return -ENOMEM;
	if ((e = ring_check_sizes(r, data_bytes, n_slots)))
		return e;
	size = ring_file_size(data_bytes, n_slots);
	if ((size_t)size != size)
		return ring_fail(r, -ENOMEM, "%llu bytes: too large here",
				 (unsigned long long)size);
	r->end = calloc(n_slots, sizeof(*r->end));
	if (r->end == NULL)
		return ring_fail(r, -ENOMEM, "out of memory for %u slots",
				 n_slots);
	if (priv) {
		r->priv = 1;
		r->map = aligned_alloc(RING_PAGE, size);
		if (r->map == NULL)
			return ring_fail(r, -ENOMEM, "out of memory for "
					 "%llu bytes",
					 (unsigned long long)size);
		memset(r->map, 0, size);
		r->map_size = size;
	} else if ((e = ring_map_memfd(r, size))) {
		return e;
	}
	ring_layout(r, data_bytes, n_slots);
	memcpy(r->ctl->magic, RING_MAGIC, 8);
	r->ctl->version = SHMRING_LAYOUT_VERSION;
	r->ctl->n_slots = n_slots;
	r->ctl->data_bytes = data_bytes;
	memcpy(r->ctl->build_id, build_id, SHMRING_BUILD_ID_SIZE);
	r->ctl->writer_pid = (uint32_t)getpid();
	return 0;
}

int shmring_create(struct shmring **out, uint64_t data_bytes,
		   uint32_t n_slots, const uint8_t build_id[16])
{
	return ring_create(out, data_bytes, n_slots, build_id, 0);
}

int shmring_create_private(struct shmring **out, uint64_t data_bytes,
			   uint32_t n_slots, const uint8_t build_id[16])
{
	return ring_create(out, data_bytes, n_slots, build_id, 1);
}

int shmring_fd(const struct shmring *w)
{
	return w->role == RING_WRITER ? w->fd : -1;
}

/* Takes back, oldest first, the slots whose refs came to 0; when none is
 * left in use, moves head and tail to the next start of the data area. */
static void ring_reclaim(struct shmring *w)
{
	while (w->tail_seq < w->head_seq) {
		uint32_t s = (uint32_t)(w->tail_seq % w->n_slots);

		/* acquire: the holders' loads of the payload happen before
		 * our next stores into its bytes */
		if (atomic_load_explicit(&w->slots[s].refs,
					 memory_order_acquire) != 0)
			break;
		w->tail_pos = w->end[s];
		w->tail_seq++;
	}
	if (w->tail_seq == w->head_seq)
		w->head_pos = w->tail_pos = round_up(w->head_pos,
						     w->data_bytes);
}

static void ring_count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

int shmring_alloc(struct shmring *w, size_t len, uint32_t *slot,
		  uint64_t *off, void **ptr)
{
	uint64_t size, head_off, start;
	uint32_t s;

	if (w->role != RING_WRITER || w->ctl == NULL)
		return -EINVAL;
	if (atomic_load_explicit(&w->ctl->closed, memory_order_relaxed))
		return SHMRING_E_CLOSED;
	if (len > w->data_bytes || len > UINT32_MAX) {
		ring_count(&w->ctl->too_big, 1);
		return SHMRING_E_TOOBIG;
	}
	ring_reclaim(w);
	s = (uint32_t)(w->head_seq % w->n_slots);
	if (w->head_seq - w->tail_seq >= w->n_slots) {
		ring_count(&w->ctl->full_slots, 1);
		return SHMRING_E_FULL;
	}
	size = round_up(len, SHMRING_ALIGN);
	head_off = w->head_pos % w->data_bytes;
	start = w->head_pos;
	if (size > w->data_bytes - head_off) /* wrap: contiguous bytes */
		start += w->data_bytes - head_off;
	if (start + size - w->tail_pos > w->data_bytes) {
		ring_count(&w->ctl->full_bytes, 1);
		return SHMRING_E_FULL;
	}
	w->end[s] = start + size;
	w->head_pos = start + size;
	w->head_seq++;
	*slot = s;
	*off = start % w->data_bytes;
	*ptr = w->data + *off;
	atomic_store_explicit(&w->slots[s].off, *off, memory_order_relaxed);
	atomic_store_explicit(&w->slots[s].len, (uint32_t)len,
			      memory_order_relaxed);
	atomic_store_explicit(&w->slots[s].refs, 1, memory_order_release);
	ring_count(&w->ctl->allocs, 1);
	ring_count(&w->ctl->bytes, len);
	return 0;
}

pid_t shmring_acked(const struct shmring *r)
{
	if (r->ctl == NULL)
		return 0;
	for (unsigned i = 0; i < SHMRING_MAX_READERS; i++) {
		uint32_t pid = atomic_load_explicit(&r->ctl->readers[i],
						    memory_order_acquire);

		if (pid)
			return (pid_t)pid;
	}
	return 0;
}

int shmring_attached(const struct shmring *r, pid_t pid)
{
	if (r->ctl == NULL || pid <= 0)
		return 0;
	for (unsigned i = 0; i < SHMRING_MAX_READERS; i++)
		if (atomic_load_explicit(&r->ctl->readers[i],
					 memory_order_acquire) ==
		    (uint32_t)pid)
			return 1;
	return 0;
}

void shmring_close(struct shmring *w)
{
	if (w->role == RING_WRITER && w->ctl)
		atomic_store_explicit(&w->ctl->closed, 1,
				      memory_order_release);
}

void shmring_destroy(struct shmring *w)
{
	if (w == NULL)
		return;
	shmring_close(w);
	ring_free(w);
}

/* ---------------------------------------------------------------- */
/* Reader */

/* Stores our pid in the readers' table (once). */
static int ring_acknowledge(struct shmring *r)
{
	uint32_t me = (uint32_t)getpid();

	if (shmring_attached(r, (pid_t)me))
		return 0;
	for (unsigned i = 0; i < SHMRING_MAX_READERS; i++) {
		uint32_t zero = 0;

		if (atomic_compare_exchange_strong_explicit(
			    &r->ctl->readers[i], &zero, me,
			    memory_order_acq_rel, memory_order_acquire))
			return 0;
	}
	return ring_fail(r, SHMRING_E_READERS, "%u readers attached already",
			 SHMRING_MAX_READERS);
}

/* The checks of a mapped ring against its offer, in the order of
 * shmring_attach()'s contract. */
static int ring_check(struct shmring *r, pid_t writer_pid,
		      uint64_t data_bytes, uint32_t n_slots,
		      const uint8_t build_id[16])
{
	const struct ring_ctl *c = (const struct ring_ctl *)(void *)r->map;

	if (memcmp(c->magic, RING_MAGIC, 8) != 0)
		return ring_fail(r, SHMRING_E_NOTRING, "not a melpipe ring");
	if (c->version != SHMRING_LAYOUT_VERSION)
		return ring_fail(r, SHMRING_E_VERSION, "layout version %u, "
				 "this build reads %u", c->version,
				 SHMRING_LAYOUT_VERSION);
	if (memcmp(c->build_id, build_id, SHMRING_BUILD_ID_SIZE) != 0)
		return ring_fail(r, SHMRING_E_BUILD, "built by another build "
				 "of melpipe");
	if (c->n_slots != n_slots || c->data_bytes != data_bytes ||
	    (writer_pid && c->writer_pid != (uint32_t)writer_pid))
		return ring_fail(r, SHMRING_E_LAYOUT, "%u slots, %llu data "
				 "bytes, writer pid %u: the offer said %u, "
				 "%llu, %d", c->n_slots,
				 (unsigned long long)c->data_bytes,
				 c->writer_pid, n_slots,
				 (unsigned long long)data_bytes,
				 (int)writer_pid);
	return 0;
}

/* Checks, maps and acknowledges the ring open as fd. */
static int ring_attach(struct shmring *r, int fd, pid_t writer_pid,
		       uint64_t data_bytes, uint32_t n_slots,
		       const uint8_t build_id[16])
{
	const int need = F_SEAL_SHRINK | F_SEAL_GROW;
	uint64_t size = ring_file_size(data_bytes, n_slots);
	struct stat st;
	int seals, e;
	void *p;

	if (fstat(fd, &st) < 0)
		return ring_fail(r, -errno, "fstat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
		return ring_fail(r, SHMRING_E_SIZE, "%llu bytes, not the %llu "
				 "of a ring of %llu data bytes and %u slots",
				 (unsigned long long)st.st_size,
				 (unsigned long long)size,
				 (unsigned long long)data_bytes, n_slots);
	/* before mapping: a file that may shrink under us would be a
	 * SIGBUS waiting to happen */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & need) != need)
		return ring_fail(r, SHMRING_E_SEALS, "not sealed against "
				 "shrinking and growing: not a ring");
	if ((size_t)size != size)
		return ring_fail(r, -ENOMEM, "%llu bytes: too large here",
				 (unsigned long long)size);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return ring_fail(r, -errno, "mmap of %llu bytes: %s",
				 (unsigned long long)size, strerror(errno));
	r->map = p;
	r->map_size = size;
	if ((e = ring_check(r, writer_pid, data_bytes, n_slots, build_id)))
		return e;
	ring_layout(r, data_bytes, n_slots);
	return ring_acknowledge(r);
}

int shmring_attach_fd(struct shmring **out, int fd, pid_t writer_pid,
		      uint64_t data_bytes, uint32_t n_slots,
		      const uint8_t build_id[16])
{
	struct shmring *r = ring_new(RING_READER);
	int e;

	*out = r;
	if (r == NULL)
		return -ENOMEM;
	snprintf(r->prefix, sizeof(r->prefix), "ring fd %d", fd);
	if ((e = ring_check_sizes(r, data_bytes, n_slots)))
		return e;
	return ring_attach(r, fd, writer_pid, data_bytes, n_slots, build_id);
}

int shmring_attach(struct shmring **out, pid_t writer_pid, int fd,
		   uint64_t data_bytes, uint32_t n_slots,
		   const uint8_t build_id[16])
{
	struct shmring *r = ring_new(RING_READER);
	char path[64];
	int e, own;

	*out = r;
	if (r == NULL)
		return -ENOMEM;
	snprintf(r->prefix, sizeof(r->prefix), "ring of pid %d fd %d",
		 (int)writer_pid, fd);
	if ((e = ring_check_sizes(r, data_bytes, n_slots)))
		return e;
	if (writer_pid <= 0 || fd < 0)
		return ring_fail(r, -EINVAL, "no such process or file");
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)writer_pid, fd);
	own = open(path, O_RDWR | O_CLOEXEC);
	if (own < 0)
		return ring_fail(r, -errno, "cannot open %s: %s", path,
				 strerror(errno));
	e = ring_attach(r, own, writer_pid, data_bytes, n_slots, build_id);
	close(own); /* the mapping keeps the memory */
	return e;
}

void *shmring_at(const struct shmring *r, uint32_t slot, uint64_t off,
		 uint64_t len)
{
	const struct ring_slot *e;

	if (r->slots == NULL || slot >= r->n_slots || off > r->data_bytes ||
	    len > r->data_bytes - off)
		return NULL;
	e = &r->slots[slot];
	/* refs first: a slot taken back and given out again has its new
	 * off and len stored before its refs */
	if (atomic_load_explicit(&e->refs, memory_order_acquire) == 0 ||
	    atomic_load_explicit(&e->off, memory_order_relaxed) != off ||
	    atomic_load_explicit(&e->len, memory_order_relaxed) != len)
		return NULL;
	return r->data + off;
}

void *shmring_within(const struct shmring *r, uint32_t slot, uint64_t off,
		     uint64_t len)
{
	const struct ring_slot *e;
	uint64_t s_off, s_len;

	if (r->slots == NULL || slot >= r->n_slots || off > r->data_bytes ||
	    len > r->data_bytes - off)
		return NULL;
	e = &r->slots[slot];
	if (atomic_load_explicit(&e->refs, memory_order_acquire) == 0)
		return NULL;
	s_off = atomic_load_explicit(&e->off, memory_order_relaxed);
	s_len = atomic_load_explicit(&e->len, memory_order_relaxed);
	if (off < s_off || off - s_off > s_len || len > s_len - (off - s_off))
		return NULL;
	return r->data + off;
}

int shmring_hold(struct shmring *r, uint32_t slot)
{
	_Atomic uint32_t *refs;
	uint32_t n;

	if (r->slots == NULL || slot >= r->n_slots)
		return SHMRING_E_REF;
	refs = &r->slots[slot].refs;
	n = atomic_load_explicit(refs, memory_order_relaxed);
	do {
		if (n == 0 || n == UINT32_MAX)
			return SHMRING_E_REF;
	} while (!atomic_compare_exchange_weak_explicit(
			 refs, &n, n + 1, memory_order_relaxed,
			 memory_order_relaxed));
	return 0;
}

int shmring_release(struct shmring *r, uint32_t slot)
{
	_Atomic uint32_t *refs;
	uint32_t n;

	if (r->slots == NULL || slot >= r->n_slots)
		return SHMRING_E_REF;
	refs = &r->slots[slot].refs;
	n = atomic_load_explicit(refs, memory_order_relaxed);
	do {
		if (n == 0)
			return SHMRING_E_REF;
	/* release: our loads of the payload happen before the writer's
	 * reuse of its bytes (ring_reclaim's acquire) */
	} while (!atomic_compare_exchange_weak_explicit(
			 refs, &n, n - 1, memory_order_release,
			 memory_order_relaxed));
	if (n == 1)
		atomic_fetch_add_explicit(&r->ctl->freed, 1,
					  memory_order_relaxed);
	return 0;
}

int shmring_closed(const struct shmring *r)
{
	return r->ctl && atomic_load_explicit(&r->ctl->closed,
					      memory_order_acquire);
}

void shmring_detach(struct shmring *r)
{
	ring_free(r);
}

/* ---------------------------------------------------------------- */
/* Either side */

void shmring_stats(const struct shmring *r, struct shmring_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (r->ctl == NULL)
		return;
	st->allocs = atomic_load_explicit(&r->ctl->allocs,
					  memory_order_relaxed);
	st->bytes = atomic_load_explicit(&r->ctl->bytes, memory_order_relaxed);
	st->full_slots = atomic_load_explicit(&r->ctl->full_slots,
					      memory_order_relaxed);
	st->full_bytes = atomic_load_explicit(&r->ctl->full_bytes,
					      memory_order_relaxed);
	st->too_big = atomic_load_explicit(&r->ctl->too_big,
					   memory_order_relaxed);
}

void *shmring_data(const struct shmring *r, uint64_t *bytes)
{
	*bytes = r->ctl ? r->data_bytes : 0;
	return r->ctl ? r->data : NULL;
}

uint64_t shmring_freed(const struct shmring *r)
{
	return r->ctl ? atomic_load_explicit(&r->ctl->freed,
					     memory_order_relaxed) : 0;
}

uint32_t shmring_refs(const struct shmring *r, uint32_t slot)
{
	if (r->slots == NULL || slot >= r->n_slots)
		return 0;
	return atomic_load_explicit(&r->slots[slot].refs,
				    memory_order_acquire);
}
