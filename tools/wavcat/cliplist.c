/*
 * cliplist.c - the list of inputs, kept the way sort(1) keeps its lines:
 * in a buffer of at most --sort-buffer bytes, written out sorted as a
 * run to a temporary file whenever it would grow past that (merge.c
 * reads the runs back in order). Memory then does not grow with the
 * number of inputs; when they all fit, nothing is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/xio.h"
#include "../common/prog.h"
#include "cliplist.h"
#include "wavcat.h"

#define MAX_REASON 65534u
#define FIRST_CAP (64u << 10)  /* the buffer's first size */
#define WBUF_SIZE (64u << 10)  /* bytes gathered per write() */

static int cmp_off(const void *pa, const void *pb, void *base)
{
	struct clip a, b;

	ent_clip((const char *)base + *(const size_t *)pa, &a);
	ent_clip((const char *)base + *(const size_t *)pb, &b);
	return cmp_clip(&a, &b);
}

void inputs_init(struct clip_list *cl, size_t limit, const char *tmp_dir)
{
	const char *t = getenv("TMPDIR");

	memset(cl, 0, sizeof(*cl));
	cl->sort_limit = (limit < WAVCAT_SORT_MIN ? WAVCAT_SORT_MIN : limit) &
			 ~(size_t)7;
	cl->tmp_dir = tmp_dir ? tmp_dir : t && *t ? t : "/tmp";
	cl->tmp_fd = -1;
}

/* Says what went wrong with the temporary file; returns -1. */
int tmp_fail(const struct clip_list *cl, const char *what, int err)
{
	prog_err("unable to %s a temporary file in '%s': %s", what,
		 cl->tmp_dir, strerror(err));
	return -1;
}

/* Creates the temporary file, with no name (O_TMPFILE), or unlinked at
 * once where the file system cannot do that: it never outlives us. */
static int tmp_open(struct clip_list *cl)
{
	char *path = NULL;
	int fd;

	fd = open(cl->tmp_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR ||
		       errno == EINVAL)) {
		if (asprintf(&path, "%s/wavcat.XXXXXX", cl->tmp_dir) < 0) {
			prog_err("out of memory");
			return -1;
		}
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0)
			unlink(path);
		free(path);
	}
	if (fd < 0) {
		prog_err("unable to create a temporary file in '%s' for the "
			 "list of inputs: %s (set TMPDIR, or give a larger "
			 "--sort-buffer)", cl->tmp_dir, strerror(errno));
		return -1;
	}
	cl->wbuf = malloc(WBUF_SIZE);
	if (cl->wbuf == NULL) {
		close(fd);
		prog_err("out of memory");
		return -1;
	}
	cl->tmp_fd = fd;
	return 0;
}

static int tmp_write(struct clip_list *cl, const char *p, size_t n)
{
	int err = xio_write_all(cl->tmp_fd, p, n);

	if (err)
		return tmp_fail(cl, "write", -err);
	cl->tmp_size += n;
	return 0;
}

static int tmp_flush(struct clip_list *cl)
{
	int err = tmp_write(cl, cl->wbuf, cl->wlen);

	cl->wlen = 0;
	return err;
}

/* Appends an entry to the run being written. */
int run_put(struct clip_list *cl, const char *ent, size_t size)
{
	if (WBUF_SIZE - cl->wlen < size && tmp_flush(cl))
		return -1;
	if (size > WBUF_SIZE)
		return tmp_write(cl, ent, size);
	memcpy(cl->wbuf + cl->wlen, ent, size);
	cl->wlen += size;
	return 0;
}

/* Ends the run that began at byte off of the file. */
int run_end(struct clip_list *cl, uint64_t off)
{
	struct clip_run *nr;

	if (tmp_flush(cl))
		return -1;
	if (cl->n_runs == cl->runs_cap) {
		size_t cap = cl->runs_cap ? 2 * cl->runs_cap : 16;

		nr = realloc(cl->runs, cap * sizeof(*nr));
		if (nr == NULL) {
			prog_err("out of memory listing the inputs");
			return -1;
		}
		cl->runs = nr;
		cl->runs_cap = cap;
	}
	cl->runs[cl->n_runs].off = off;
	cl->runs[cl->n_runs].len = cl->tmp_size - off;
	cl->n_runs++;
	return 0;
}

/* An entry's offset with the first 8 bytes of its key (NUL-padded) as
 * a big-endian number, which orders as strcmp() orders those bytes. */
struct keyed_off {
	uint64_t pre;
	size_t off;
};

/* The buffer's bytes each entry needs besides its own: its offset, and
 * room for its pair while the buffer is sorted (so that the sort, too,
 * stays within --sort-buffer). */
#define ENT_RESERVE (sizeof(size_t) + sizeof(struct keyed_off))

static int cmp_keyed(const void *pa, const void *pb, void *base)
{
	const struct keyed_off *a = pa, *b = pb;

	if (a->pre != b->pre)
		return a->pre < b->pre ? -1 : 1;
	return cmp_off(&a->off, &b->off, base);
}

static uint64_t key_prefix(const char *ent)
{
	struct clip c;
	uint64_t pre = 0;
	size_t i;

	ent_clip(ent, &c);
	for (i = 0; i < 8 && c.key[i]; i++)
		pre |= (uint64_t)(unsigned char)c.key[i] << (56 - 8 * i);
	return pre;
}

/*
 * Sorts the offsets of the buffer's entries into output order. Each
 * comparison of offsets alone reads two entries scattered over the
 * buffer; most keys differ in their first 8 bytes, so the sort compares
 * those, kept beside the offsets in the buffer's free room (list_room()
 * keeps it), and reads the entries only on a tie.
 */
void sort_mem(struct clip_list *cl)
{
	size_t *idx = mem_index(cl), i, n = cl->n_mem;
	size_t at = (cl->used + 7) & ~(size_t)7;
	struct keyed_off *k;

	if (n < 2)
		return;
	if (at + n * sizeof(*k) > cl->cap - n * sizeof(size_t)) {
		/* (list_room() keeps the room) */
		qsort_r(idx, n, sizeof(size_t), cmp_off, cl->buf);
		return;
	}
	k = (struct keyed_off *)(void *)(cl->buf + at);
	for (i = 0; i < n; i++) {
		k[i].pre = key_prefix(cl->buf + idx[i]);
		k[i].off = idx[i];
	}
	qsort_r(k, n, sizeof(*k), cmp_keyed, cl->buf);
	for (i = 0; i < n; i++)
		idx[i] = k[i].off;
}

/* Sorts the buffer's entries and writes them as a run; empties it. */
static int spill(struct clip_list *cl)
{
	const size_t *idx = mem_index(cl);
	uint64_t off;
	size_t i, size;
	struct ent_hdr h;

	if (cl->tmp_fd < 0 && tmp_open(cl))
		return -1;
	sort_mem(cl);
	off = cl->tmp_size;
	for (i = 0; i < cl->n_mem; i++) {
		memcpy(&h, cl->buf + idx[i], HDR_SIZE);
		size = ent_size(&h);
		if (run_put(cl, cl->buf + idx[i], size))
			return -1;
	}
	if (run_end(cl, off))
		return -1;
	cl->n_spilled += cl->n_mem;
	cl->n_mem = 0;
	cl->used = 0;
	return 0;
}

/* Grows the buffer to hold need bytes: to the limit at most, unless one
 * entry alone needs more. */
static int list_grow(struct clip_list *cl, size_t need)
{
	size_t cap = cl->cap ? cl->cap : FIRST_CAP;
	size_t idx_bytes = cl->n_mem * sizeof(size_t);
	char *nb;

	while (cap < need)
		cap *= 2;
	if (cap > cl->sort_limit)
		cap = (need > cl->sort_limit ? need + 7 : cl->sort_limit) &
		      ~(size_t)7;
	nb = realloc(cl->buf, cap);
	if (nb == NULL) {
		prog_err("out of memory listing the inputs");
		return -1;
	}
	memmove(nb + cap - idx_bytes, nb + cl->cap - idx_bytes, idx_bytes);
	cl->buf = nb;
	cl->cap = cap;
	return 0;
}

/* Makes room for an entry of size bytes (and its offset and sort pair;
 * 7 bytes to align the pairs). */
static int list_room(struct clip_list *cl, size_t size)
{
	size_t need = cl->used + size + (cl->n_mem + 1) * ENT_RESERVE + 7;

	if (need <= cl->cap)
		return 0;
	if (need > cl->sort_limit && cl->n_mem > 0) {
		if (spill(cl))
			return -1;
		need = size + ENT_RESERVE + 7;
		if (need <= cl->cap)
			return 0;
	}
	return list_grow(cl, need);
}

/* Adds a clip: path (key = its last key_len bytes), root, and a reason
 * when it is known to be unusable (NULL otherwise). Returns 0 or -1
 * after printing why. */
int add_clip(struct clip_list *cl, const char *path, size_t key_len,
	     int root, const char *skip)
{
	size_t len = strlen(path), slen = skip ? strlen(skip) : 0;
	struct ent_hdr h;
	char *p;

	if (key_len > WAVCAT_MAX_KEY || len > UINT32_MAX - 1) {
		prog_err("'%.200s...': path too long for a record key (over "
			 "%u bytes)", path, WAVCAT_MAX_KEY);
		return -1;
	}
	if (inputs_excluded(cl, path + len - key_len, root))
		return 0;
	if (slen > MAX_REASON - 1)
		slen = MAX_REASON - 1;
	h.path_len = (uint32_t)len;
	h.key_len = (uint16_t)key_len;
	h.skip_len = skip ? (uint16_t)(slen + 1) : 0;
	h.root = root;
	if (list_room(cl, ent_size(&h)))
		return -1;
	p = cl->buf + cl->used;
	memcpy(p, &h, HDR_SIZE);
	memcpy(p + HDR_SIZE, path, len + 1);
	if (skip) {
		memcpy(p + HDR_SIZE + len + 1, skip, slen);
		p[HDR_SIZE + len + 1 + slen] = '\0';
	}
	cl->n_mem++;
	mem_index(cl)[0] = cl->used;
	cl->used += ent_size(&h);
	cl->n++;
	return 0;
}

/* Adds dir to the input folders (whose split lists are looked for).
 * Returns its index, or -1 after printing why. */
int add_root(struct clip_list *cl, const char *dir)
{
	char **nr = realloc(cl->roots, (cl->n_roots + 1) * sizeof(*nr));

	if (nr == NULL)
		goto nomem;
	cl->roots = nr;
	cl->roots[cl->n_roots] = strdup(dir);
	if (cl->roots[cl->n_roots] == NULL)
		goto nomem;
	return (int)cl->n_roots++;
nomem:
	prog_err("out of memory listing the inputs");
	return -1;
}

/* An unusable input named by path: reason "prefix: strerror(err)". */
int add_failed(struct clip_list *cl, const char *path, size_t key_len,
	       int root, const char *prefix, int err)
{
	char reason[256];

	snprintf(reason, sizeof(reason), "%s%s%s", prefix, *prefix ? ": " : "",
		 strerror(err));
	return add_clip(cl, path, key_len, root, reason);
}

/* Why a file of mode m, not a regular file, cannot be used. */
const char *file_type_name(mode_t m)
{
	if (S_ISFIFO(m))
		return "not a regular file (fifo)";
	if (S_ISSOCK(m))
		return "not a regular file (socket)";
	if (S_ISCHR(m))
		return "not a regular file (character device)";
	if (S_ISBLK(m))
		return "not a regular file (block device)";
	if (S_ISDIR(m))
		return "not a regular file (folder)";
	return "not a regular file";
}

void inputs_free(struct clip_list *cl)
{
	size_t i;

	for (i = 0; i < cl->n_roots; i++)
		free(cl->roots[i]);
	free(cl->roots);
	free(cl->match);
	free(cl->excl_hit);
	free(cl->key_example);
	free(cl->root_real);
	free(cl->rp_dir);
	free(cl->underscore_example);
	merge_free(cl->merge);
	free(cl->buf);
	free(cl->runs);
	free(cl->wbuf);
	if (cl->tmp_fd >= 0)
		close(cl->tmp_fd);
	memset(cl, 0, sizeof(*cl));
	cl->tmp_fd = -1;
}
