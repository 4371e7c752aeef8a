/*
 * rec_shm.c - the reader's and the writer's tables of rings for the
 * shared-memory path of record streams (rec_shm.h, formats/record.md
 * version 5). The ring records and the references are read in
 * rec_read_shm.c and written in rec_write_shm.c.
 */
#include "rec_shm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"
#include "rec_int.h"
#include "xio.h"

const char *const rec_suite_progs[] = {
	"wavcat", "segment", "gpumel", "h5pack", "recdump", "recmerge", NULL
};

void shm_offer_put(unsigned char *p, const struct shm_offer *o)
{
	put32(p, o->pid);
	put32(p + 4, o->fd);
	put64(p + 8, o->bytes);
	put32(p + 16, o->slots);
	put32(p + 20, o->id);
	memcpy(p + 24, o->build, 16);
	put32(p + 40, o->creator);
	put32(p + 44, 0);
}

void shm_offer_get(const unsigned char *p, struct shm_offer *o)
{
	o->pid = get32(p);
	o->fd = get32(p + 4);
	o->bytes = get64(p + 8);
	o->slots = get32(p + 16);
	o->id = get32(p + 20);
	memcpy(o->build, p + 24, 16);
	o->creator = get32(p + 40);
}

void shm_ref_put(unsigned char *p, const struct shm_ref *ref)
{
	put32(p, ref->ring);
	put32(p + 4, ref->slot);
	put64(p + 8, ref->off);
}

void shm_ref_get(const unsigned char *p, struct shm_ref *ref)
{
	ref->ring = get32(p);
	ref->slot = get32(p + 4);
	ref->off = get64(p + 8);
}

/* ------------------------------------------------------------------ */
/* Reader side */

/* Whether process pid has ended (no such process, or a zombie its parent
 * has not reaped yet): its descriptors are gone with it. */
static int pid_ended(uint32_t pid)
{
	char path[64], stat[256];
	const char *state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, stat, sizeof(stat) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	stat[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' */
	state = strrchr(stat, ')');
	return state && state[1] == ' ' && (state[2] == 'Z' || state[2] == 'X');
}

static struct shm_in_ring *rd_ring(struct shm_rd *s, uint32_t id)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->rings[i].id == id)
			return &s->rings[i];
	return NULL;
}

int shm_rd_offer(struct shm_rd *s, const struct shm_offer *o, char *why,
		 size_t n)
{
	struct shm_in_ring *e;
	char path[64];
	int err;

	if (o->id == 0) {
		snprintf(why, n, "ring record with ring id 0");
		return -1;
	}
	if (rd_ring(s, o->id)) {
		snprintf(why, n, "ring %" PRIu32 " offered twice", o->id);
		return -1;
	}
	if (s->n == SHM_MAX_RINGS) {
		snprintf(why, n, "more than %u rings offered", SHM_MAX_RINGS);
		return -1;
	}
	s->offers++;
	e = &s->rings[s->n++];
	memset(e, 0, sizeof(*e));
	e->id = o->id;
	e->fd = -1;
	e->offer = *o;
	if (!s->on) {
		snprintf(s->why, sizeof(s->why), "shared memory turned off in "
			 "this reader");
		return 0;
	}
	/* through the process that offers it, which may not be the one
	 * that made it: a ring passed on outlives its maker's exit */
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/fd/%" PRIu32, o->pid,
		 o->fd);
	e->fd = open(path, O_RDWR | O_CLOEXEC);
	if (e->fd < 0 && errno == ENOENT && pid_ended(o->pid)) {
		/* a writer sends references into a ring only once its reader
		 * attached it: none went into this one */
		snprintf(s->why, sizeof(s->why), "the stage that offered its "
			 "ring (pid %" PRIu32 ") had finished before this one "
			 "read the offer, so its payloads came in the stream",
			 o->pid);
		return 0;
	}
	if (e->fd < 0) {
		snprintf(s->why, sizeof(s->why), "cannot open the ring of pid "
			 "%" PRIu32 " as %s: %s", o->pid, path,
			 strerror(errno));
		return 0;
	}
	err = shmring_attach_fd(&e->ring, e->fd, (pid_t)o->creator, o->bytes,
				o->slots, o->build);
	if (err) {
		snprintf(s->why, sizeof(s->why), "cannot attach the ring of "
			 "pid %" PRIu32 ": %s", o->pid,
			 e->ring && shmring_detail(e->ring)[0]
			 ? shmring_detail(e->ring) : shmring_strerror(err));
		shmring_detach(e->ring);
		e->ring = NULL;
		close(e->fd);
		e->fd = -1;
	}
	return 0;
}

const unsigned char *shm_rd_resolve(struct shm_rd *s,
				    const struct shm_ref *ref, uint64_t len,
				    char *why, size_t n)
{
	struct shm_in_ring *e = rd_ring(s, ref->ring);
	const unsigned char *p;

	if (e == NULL) {
		snprintf(why, n, "reference to ring %" PRIu32 ", which no "
			 "ring record offered", ref->ring);
		return NULL;
	}
	if (e->ring == NULL) {
		snprintf(why, n, "reference to ring %" PRIu32 ", which this "
			 "reader did not attach", ref->ring);
		return NULL;
	}
	p = shmring_within(e->ring, ref->slot, ref->off, len);
	if (p == NULL) {
		snprintf(why, n, "reference to ring %" PRIu32 " slot %" PRIu32
			 " bytes %" PRIu64 "+%" PRIu64 ", which is not a "
			 "payload in use", ref->ring, ref->slot, ref->off,
			 len);
		return NULL;
	}
	s->held = 1;
	s->held_i = (unsigned)(e - s->rings);
	s->held_slot = ref->slot;
	s->held_ptr = p;
	s->held_len = len;
	s->records++;
	s->bytes += len;
	return p;
}

void shm_rd_release(struct shm_rd *s)
{
	if (!s->held)
		return;
	s->held = 0;
	shmring_release(s->rings[s->held_i].ring, s->held_slot);
}

int shm_rd_find(const struct shm_rd *s, const void *p, uint64_t len,
		unsigned *ring_i, uint32_t *slot, uint64_t *off)
{
	const unsigned char *q = p;
	uint64_t bytes;
	const unsigned char *base;

	if (!s->held || q < s->held_ptr || len > s->held_len ||
	    (uint64_t)(q - s->held_ptr) > s->held_len - len)
		return 0;
	base = shmring_data(s->rings[s->held_i].ring, &bytes);
	*ring_i = s->held_i;
	*slot = s->held_slot;
	*off = (uint64_t)(q - base);
	return 1;
}

void shm_rd_free(struct shm_rd *s)
{
	shm_rd_release(s);
	for (unsigned i = 0; i < s->n; i++) {
		shmring_detach(s->rings[i].ring);
		if (s->rings[i].fd >= 0)
			close(s->rings[i].fd);
	}
	s->n = 0;
}

/* ------------------------------------------------------------------ */
/* Writer side */

struct reader_count {
	unsigned n;
	long pid;
};

static int count_reader(long pid, void *arg)
{
	struct reader_count *c = arg;

	c->n++;
	c->pid = pid;
	return 0;
}

pid_t shm_pipe_reader(int fd, int check_build, char *why, size_t n)
{
	struct reader_count c = { 0 };
	long one;
	int e;

	if (check_build) {
		if (buildid_pipe_readers(fd, rec_suite_progs, why, n,
					 &one) != 1)
			return 0;
		if (one) /* the one reader, checked: no second walk */
			return (pid_t)one;
		/* several, all of this build: counted below for the why */
	}
	e = xio_pipe_readers(fd, count_reader, &c);
	if (e < 0) {
		snprintf(why, n, "cannot list the pipe's readers: %s",
			 strerror(-e));
		return 0;
	}
	if (c.n != 1) {
		snprintf(why, n, "%u processes read the pipe (a ring has one "
			 "reader)", c.n);
		return 0;
	}
	return (pid_t)c.pid;
}
