/*
 * merge.c - the clips in output order: the sort buffer's entries and the
 * sorted runs on the temporary file (cliplist.c) merged, 16 runs at a
 * time, into the one ordered sequence that the rest of wavcat reads, as
 * many times as it needs.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/prog.h"
#include "cliplist.h"
#include "wavcat.h"

#define FAN_IN 16              /* runs merged at once */
#define RBUF_MIN (4u << 10)    /* a run's read buffer, at least */

/* One sorted source of a merge: the buffer's entries, or a run. */
struct src {
	struct clip cur;
	int is_mem;
	size_t i;                /* the buffer's next entry */
	uint64_t pos, end;       /* the run's bytes not yet read */
	char *buf;               /* the run's bytes read, [off, fill) */
	size_t cap, off, fill;
};

/* The ordered sequence: a heap of sources on their current clips. */
struct clip_merge {
	struct src *src;
	struct src **heap;
	size_t n_src, n_heap;
	int pending;             /* heap[0]'s clip was handed out */
};

/* The entry a clip handed out by ent_clip() comes from, and its size. */
static const char *clip_ent(const struct clip *c, size_t *size)
{
	const char *p = c->path - HDR_SIZE;
	struct ent_hdr h;

	memcpy(&h, p, HDR_SIZE);
	*size = ent_size(&h);
	return p;
}

/* Makes sure s->buf holds want bytes from s->off on. */
static int run_fill(const struct clip_list *cl, struct src *s, size_t want)
{
	size_t have = s->fill - s->off, n;
	ssize_t k;
	char *nb;

	if (have >= want)
		return 0;
	if (want - have > s->end - s->pos)
		return tmp_fail(cl, "read", EIO); /* cut short: damaged */
	memmove(s->buf, s->buf + s->off, have);
	s->off = 0;
	s->fill = have;
	if (want > s->cap) {
		nb = realloc(s->buf, want);
		if (nb == NULL) {
			prog_err("out of memory merging the inputs");
			return -1;
		}
		s->buf = nb;
		s->cap = want;
	}
	while (s->fill < want) {
		n = s->cap - s->fill;
		if (n > s->end - s->pos)
			n = (size_t)(s->end - s->pos);
		k = pread(cl->tmp_fd, s->buf + s->fill, n, (off_t)s->pos);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return tmp_fail(cl, "read", k < 0 ? errno : EIO);
		s->fill += (size_t)k;
		s->pos += (uint64_t)k;
	}
	return 0;
}

/* Moves s on to its next clip: 1, 0 when it has none, -1 on error. */
static int src_next(const struct clip_list *cl, struct src *s)
{
	struct ent_hdr h;

	if (s->is_mem) {
		if (s->i >= cl->n_mem)
			return 0;
		ent_clip(cl->buf + mem_index(cl)[s->i++], &s->cur);
		return 1;
	}
	if (s->off == s->fill && s->pos == s->end)
		return 0;
	if (run_fill(cl, s, HDR_SIZE))
		return -1;
	memcpy(&h, s->buf + s->off, HDR_SIZE);
	if (h.key_len > h.path_len || run_fill(cl, s, ent_size(&h)))
		return h.key_len > h.path_len ? tmp_fail(cl, "read", EIO)
					      : -1;
	ent_clip(s->buf + s->off, &s->cur);
	s->off += ent_size(&h);
	return 1;
}

static void heap_down(struct clip_merge *m, size_t i)
{
	struct src *t;
	size_t c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= m->n_heap)
			break;
		if (c + 1 < m->n_heap &&
		    cmp_clip(&m->heap[c + 1]->cur, &m->heap[c]->cur) < 0)
			c++;
		if (cmp_clip(&m->heap[c]->cur, &m->heap[i]->cur) >= 0)
			break;
		t = m->heap[c];
		m->heap[c] = m->heap[i];
		m->heap[i] = t;
		i = c;
	}
}

void merge_free(struct clip_merge *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->n_src; i++)
		free(m->src[i].buf);
	free(m->src);
	free(m->heap);
	free(m);
}

/* A merge of runs [first, first + count) and, when with_mem, of the
 * buffer's (sorted) entries. Each run is read through a buffer of a
 * 32nd of the sort buffer (4 KiB at least). NULL after printing why. */
static struct clip_merge *merge_new(const struct clip_list *cl, size_t first,
				    size_t count, int with_mem)
{
	size_t rbuf = cl->sort_limit / 32, i;
	struct clip_merge *m = calloc(1, sizeof(*m));
	struct src *s;
	int got;

	if (rbuf < RBUF_MIN)
		rbuf = RBUF_MIN;
	if (m == NULL)
		goto nomem;
	m->src = calloc(count + 1, sizeof(*m->src));
	m->heap = calloc(count + 1, sizeof(*m->heap));
	if (m->src == NULL || m->heap == NULL)
		goto nomem;
	if (with_mem && cl->n_mem > 0)
		m->src[m->n_src++].is_mem = 1;
	for (i = 0; i < count; i++) {
		s = &m->src[m->n_src++];
		s->pos = cl->runs[first + i].off;
		s->end = s->pos + cl->runs[first + i].len;
		s->cap = rbuf;
		s->buf = malloc(rbuf);
		if (s->buf == NULL)
			goto nomem;
	}
	for (i = 0; i < m->n_src; i++) {
		got = src_next(cl, &m->src[i]);
		if (got < 0)
			goto fail;
		if (got)
			m->heap[m->n_heap++] = &m->src[i];
	}
	for (i = m->n_heap / 2; i-- > 0;)
		heap_down(m, i);
	return m;
nomem:
	prog_err("out of memory merging the inputs");
fail:
	merge_free(m);
	return NULL;
}

/* The merge's next clip: 1, 0 at the end, -1 on error. */
static int merge_next(const struct clip_list *cl, struct clip_merge *m,
		      struct clip *c)
{
	int got;

	if (m->pending) {
		m->pending = 0;
		got = src_next(cl, m->heap[0]);
		if (got < 0)
			return -1;
		if (!got)
			m->heap[0] = m->heap[--m->n_heap];
		heap_down(m, 0);
	}
	if (m->n_heap == 0)
		return 0;
	*c = m->heap[0]->cur;
	m->pending = 1;
	return 1;
}

/* Merges runs [first, first + count) into one new run at the end of the
 * file (and of cl->runs). */
static int merge_some(struct clip_list *cl, size_t first, size_t count)
{
	struct clip_merge *m = merge_new(cl, first, count, 0);
	uint64_t off = cl->tmp_size;
	const char *ent;
	struct clip c;
	size_t size;
	int got, err = -1;

	if (m == NULL)
		return -1;
	while ((got = merge_next(cl, m, &c)) > 0) {
		ent = clip_ent(&c, &size);
		if (run_put(cl, ent, size))
			goto out;
	}
	err = got < 0 ? -1 : run_end(cl, off);
out:
	merge_free(m);
	return err;
}

int inputs_rewind(struct clip_list *cl)
{
	merge_free(cl->merge);
	cl->merge = inputs_open(cl);
	return cl->merge ? 0 : -1;
}

int inputs_next(struct clip_list *cl, struct clip *c)
{
	return merge_next(cl, cl->merge, c);
}

struct clip_merge *inputs_open(const struct clip_list *cl)
{
	return merge_new(cl, cl->run0, cl->n_runs - cl->run0, 1);
}

int inputs_read(const struct clip_list *cl, struct clip_merge *m,
		struct clip *c)
{
	return merge_next(cl, m, c);
}

void inputs_close(struct clip_merge *m)
{
	merge_free(m);
}

/* Whether paths a and b name the same file. */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (strcmp(a, b) == 0)
		return 1;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Checks each clip against the one before it in key order (one clip
 * kept, whatever the number): a file named twice is warned about, two
 * files under one key are refused, as nothing after wavcat could tell
 * them apart. Returns 0, or -1 after printing why. */
static int check_duplicates(struct clip_list *cl)
{
	char q1[512], q2[512], q3[512];
	struct clip c, prev = { .key = NULL };
	uint64_t clashes = 0;
	char *buf = NULL;
	size_t cap = 0;
	int got, err = -1;

	if (inputs_rewind(cl))
		return -1;
	while ((got = inputs_next(cl, &c)) > 0) {
		if (prev.key && strcmp(prev.key, c.key) == 0) {
			quote_name_buf(q1, sizeof(q1), c.key);
			quote_name_buf(q2, sizeof(q2), prev.path);
			quote_name_buf(q3, sizeof(q3), c.path);
			if (same_file(prev.path, c.path)) {
				prog_warn("duplicate key '%s' ('%s' and "
					  "'%s')", q1, q2, q3);
			} else {
				prog_err("'%s' and '%s' have the same key "
					 "'%s'", q2, q3, q1);
				clashes++;
			}
		}
		if (inputs_keep_clip(&c, &buf, &cap, &prev)) {
			prog_err("out of memory");
			goto out;
		}
	}
	if (got < 0)
		goto out;
	if (clashes > 0) {
		prog_err("%llu %s two different files, which the "
			 "stream could not tell apart: name the files in a "
			 "list, keyed by their paths (find A B -name '*.wav' "
			 "| wavcat -), or with --root a folder above them",
			 (unsigned long long)clashes,
			 prog_plural(clashes, "key names", "keys name"));
		goto out;
	}
	err = 0;
out:
	free(buf);
	return err;
}

int inputs_finish(struct clip_list *cl)
{
	sort_mem(cl);
	for (; cl->n_runs - cl->run0 > FAN_IN; cl->run0 += FAN_IN)
		if (merge_some(cl, cl->run0, FAN_IN))
			return -1;
	if (cl->n_spilled > 0)
		prog_info("spilled %llu %s to a temporary file in '%s' "
			  "(over --sort-buffer %zu bytes): %zu %s written, "
			  "%zu merged into others, %llu %s",
			  (unsigned long long)cl->n_spilled,
			  prog_plural(cl->n_spilled, "input", "inputs"),
			  cl->tmp_dir, cl->sort_limit, cl->n_runs,
			  prog_plural(cl->n_runs, "run", "runs"), cl->run0,
			  (unsigned long long)cl->tmp_size,
			  prog_plural(cl->tmp_size, "byte", "bytes"));
	inputs_report_excluded(cl);
	return check_duplicates(cl);
}
