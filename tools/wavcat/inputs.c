/*
 * inputs.c - find the clips named on the command line: files, folders
 * walked recursively, lists of paths (@LISTFILE, "-"). Only regular files
 * are ever opened later; anything else with an audio name becomes a clip
 * carrying the reason it cannot be used, so that it is accounted for.
 *
 * The list is kept the way sort(1) keeps its lines: in a buffer of at
 * most --sort-buffer bytes, written out sorted as a run to a temporary
 * file whenever it would grow past that, and the runs merged (16 at a
 * time) into the one ordered sequence that the rest of wavcat reads,
 * as many times as it needs. Memory then does not grow with the number
 * of inputs; when they all fit, nothing is written.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>

#include "../../lib/xio.h"
#include "../common/prog.h"
#include "wavcat.h"

#define MAX_DEPTH 200      /* folders nested deeper are not walked */

/* ------------------------------------------------------------------ */
/* Audio file names */

#define MAX_EXTS 64

static char exts[MAX_EXTS][16];
static size_t n_exts;

static void add_ext(const char *e)
{
	size_t i;

	if (e == NULL || e[0] == '\0' || strlen(e) >= sizeof(exts[0]))
		return;
	for (i = 0; i < n_exts; i++)
		if (strcasecmp(exts[i], e) == 0)
			return;
	if (n_exts < MAX_EXTS)
		strcpy(exts[n_exts++], e);
}

static int cmp_ext(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Other names in common use for the formats libsndfile knows. */
static void add_aliases(int major)
{
	switch (major) {
	case SF_FORMAT_WAV:
		add_ext("wave");
		break;
	case SF_FORMAT_AIFF:
		add_ext("aif");
		add_ext("aifc");
		break;
	case SF_FORMAT_AU:
		add_ext("snd");
		break;
	case SF_FORMAT_OGG:
		add_ext("ogg");
		add_ext("opus");
		break;
	case SF_FORMAT_NIST:
		add_ext("sph");
		break;
	case SF_FORMAT_SVX:
		add_ext("svx");
		break;
	case SF_FORMAT_MPEG:
		add_ext("mp3");
		add_ext("mp2");
		break;
	default:
		break;
	}
}

/* The extensions of every major format this libsndfile reads, except
 * headerless raw (nothing to decode it by) and MATLAB .mat files (data
 * folders hold .mat files that are not audio). */
static void init_exts(void)
{
	SF_FORMAT_INFO fi;
	int count = 0, i;

	if (n_exts > 0)
		return;
	sf_command(NULL, SFC_GET_FORMAT_MAJOR_COUNT, &count, sizeof(count));
	for (i = 0; i < count; i++) {
		memset(&fi, 0, sizeof(fi));
		fi.format = i;
		if (sf_command(NULL, SFC_GET_FORMAT_MAJOR, &fi, sizeof(fi)))
			continue;
		if (fi.format == SF_FORMAT_RAW || fi.format == SF_FORMAT_MAT4 ||
		    fi.format == SF_FORMAT_MAT5)
			continue;
		add_ext(fi.extension);
		add_aliases(fi.format);
	}
	qsort(exts, n_exts, sizeof(exts[0]), cmp_ext);
}

int inputs_is_audio_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	size_t i;

	init_exts();
	if (dot == NULL || dot == name || dot[1] == '\0')
		return 0;
	for (i = 0; i < n_exts; i++)
		if (strcasecmp(dot + 1, exts[i]) == 0)
			return 1;
	return 0;
}

void inputs_print_extensions(FILE *f, int indent, int width)
{
	int col = indent;
	size_t i;

	init_exts();
	fprintf(f, "%*s", indent, "");
	for (i = 0; i < n_exts; i++) {
		int w = (int)strlen(exts[i]) + 2;

		if (i > 0 && col + w > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (i > 0) {
			fputc(' ', f);
		}
		fprintf(f, ".%s", exts[i]);
		col += w;
	}
	fputc('\n', f);
}

/* ------------------------------------------------------------------ */
/* Messages */

static size_t escape_byte(char *out, unsigned char c)
{
	switch (c) {
	case '\n':
		return (size_t)sprintf(out, "\\n");
	case '\t':
		return (size_t)sprintf(out, "\\t");
	case '\r':
		return (size_t)sprintf(out, "\\r");
	default:
		if (c < 0x20 || c == 0x7f)
			return (size_t)sprintf(out, "\\x%02x", c);
		out[0] = (char)c;
		out[1] = '\0';
		return 1;
	}
}

const char *quote_name_buf(char *buf, size_t size, const char *s)
{
	char tmp[8];
	size_t n = 0, k;

	if (size == 0)
		return buf;
	for (; *s; s++) {
		k = escape_byte(tmp, (unsigned char)*s);
		if (n + k + 1 > size)
			break;
		memcpy(buf + n, tmp, k);
		n += k;
	}
	buf[n] = '\0';
	return buf;
}

void quote_name(FILE *f, const char *s)
{
	char tmp[8];

	for (; *s; s++) {
		escape_byte(tmp, (unsigned char)*s);
		fputs(tmp, f);
	}
}

/* ------------------------------------------------------------------ */
/* The clip list: a bounded buffer, sorted runs on a temporary file */

/* An entry, in the buffer and on the temporary file alike: this header,
 * the path and a NUL, then the skip reason and a NUL when there is one.
 * The file is read back only by the process that wrote it: native byte
 * order. */
struct ent_hdr {
	uint32_t path_len;
	uint16_t key_len;    /* the key is the path's last key_len bytes */
	uint16_t skip_len;   /* the reason's length + 1; 0: none */
	int32_t root;
};

#define HDR_SIZE sizeof(struct ent_hdr)
#define MAX_REASON 65534u
#define FIRST_CAP (64u << 10)  /* the buffer's first size */
#define WBUF_SIZE (64u << 10)  /* bytes gathered per write() */
#define FAN_IN 16              /* runs merged at once */
#define RBUF_MIN (4u << 10)    /* a run's read buffer, at least */

/* A sorted run on the temporary file. */
struct clip_run {
	uint64_t off, len;
};

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

static size_t ent_size(const struct ent_hdr *h)
{
	return HDR_SIZE + h->path_len + 1 + h->skip_len;
}

/* The clip of the whole entry at p. */
static void ent_clip(const char *p, struct clip *c)
{
	struct ent_hdr h;

	memcpy(&h, p, HDR_SIZE);
	c->path = p + HDR_SIZE;
	c->key = c->path + (h.path_len - h.key_len);
	c->skip = h.skip_len ? c->path + h.path_len + 1 : NULL;
	c->root = h.root;
	c->label = -1;
	c->split = 0;
}

/* The entry a clip handed out by ent_clip() comes from, and its size. */
static const char *clip_ent(const struct clip *c, size_t *size)
{
	const char *p = c->path - HDR_SIZE;
	struct ent_hdr h;

	memcpy(&h, p, HDR_SIZE);
	*size = ent_size(&h);
	return p;
}

static int cmp_reason(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* The output order: keys bytewise, then paths. Root and reason order
 * only entries otherwise equal, so that the order is one and the same
 * however the entries were cut into runs. */
static int cmp_clip(const struct clip *a, const struct clip *b)
{
	int c = strcmp(a->key, b->key);

	if (c == 0)
		c = strcmp(a->path, b->path);
	if (c == 0)
		c = (a->root > b->root) - (a->root < b->root);
	if (c == 0)
		c = cmp_reason(a->skip, b->skip);
	return c;
}

static int cmp_off(const void *pa, const void *pb, void *base)
{
	struct clip a, b;

	ent_clip((const char *)base + *(const size_t *)pa, &a);
	ent_clip((const char *)base + *(const size_t *)pb, &b);
	return cmp_clip(&a, &b);
}

/* The offsets of the buffer's entries, at its end. */
static size_t *mem_index(const struct clip_list *cl)
{
	return (size_t *)(void *)(cl->buf + cl->cap) - cl->n_mem;
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
static int tmp_fail(const struct clip_list *cl, const char *what, int err)
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
static int run_put(struct clip_list *cl, const char *ent, size_t size)
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
static int run_end(struct clip_list *cl, uint64_t off)
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

static void sort_mem(struct clip_list *cl)
{
	if (cl->n_mem > 1)
		qsort_r(mem_index(cl), cl->n_mem, sizeof(size_t), cmp_off,
			cl->buf);
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

/* Makes room for an entry of size bytes (and its offset). */
static int list_room(struct clip_list *cl, size_t size)
{
	size_t need = cl->used + size + (cl->n_mem + 1) * sizeof(size_t);

	if (need <= cl->cap)
		return 0;
	if (need > cl->sort_limit && cl->n_mem > 0) {
		if (spill(cl))
			return -1;
		need = size + sizeof(size_t);
		if (need <= cl->cap)
			return 0;
	}
	return list_grow(cl, need);
}

/* Adds a clip: path (key = its last key_len bytes), root, and a reason
 * when it is known to be unusable (NULL otherwise). Returns 0 or -1
 * after printing why. */
static int add_clip(struct clip_list *cl, const char *path, size_t key_len,
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

/* An unusable input named by path: reason "prefix: strerror(err)". */
static int add_failed(struct clip_list *cl, const char *path, size_t key_len,
		      int root, const char *prefix, int err)
{
	char reason[256];

	snprintf(reason, sizeof(reason), "%s%s%s", prefix, *prefix ? ": " : "",
		 strerror(err));
	return add_clip(cl, path, key_len, root, reason);
}

static const char *file_type_name(mode_t m)
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

/* ------------------------------------------------------------------ */
/* Walking a folder */

struct walker {
	struct clip_list *cl;
	int root;
	char *path;          /* ROOT/REL of the current entry */
	size_t len, cap;
	size_t prefix;       /* bytes of "ROOT/" at the start of path */
	size_t found;        /* clips added under this root */
};

/* Appends "/name" (or "name" right after the prefix) to w->path. */
static int walker_push(struct walker *w, const char *name, size_t *saved)
{
	size_t n = strlen(name), need;
	int sep = w->len > w->prefix;
	char *np;

	*saved = w->len;
	need = w->len + (size_t)sep + n + 1;
	if (need > w->cap) {
		size_t cap = w->cap ? w->cap : 256;

		while (cap < need)
			cap *= 2;
		np = realloc(w->path, cap);
		if (np == NULL) {
			prog_err("out of memory walking folders");
			return -1;
		}
		w->path = np;
		w->cap = cap;
	}
	if (sep)
		w->path[w->len++] = '/';
	memcpy(w->path + w->len, name, n + 1);
	w->len += n;
	return 0;
}

static void walker_pop(struct walker *w, size_t saved)
{
	w->len = saved;
	w->path[saved] = '\0';
}

/* Adds the current entry as a clip (reason: NULL, or why unusable). */
static int walker_add(struct walker *w, const char *reason)
{
	w->found++;
	return add_clip(w->cl, w->path, w->len - w->prefix, w->root, reason);
}

static int walk_dir(struct walker *w, int dfd, int depth);

/* Walks into the subfolder name of dfd (w->path names it). */
static int walk_subdir(struct walker *w, int dfd, const char *name,
		       int depth)
{
	int fd;

	if (depth >= MAX_DEPTH)
		return walker_add(w, "folders nested too deep, not walked");
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return add_failed(w->cl, w->path, w->len - w->prefix, w->root,
				  "unable to read folder", errno);
	return walk_dir(w, fd, depth + 1);
}

/* The type of an entry whose d_type did not tell it, following a
 * symbolic link to see what it points at. Returns 0, or -1 when it cannot
 * be seen: then *fatal is what adding it as an unusable input returned
 * (when it has an audio name). */
static int entry_type(struct walker *w, int dfd, const char *name,
		      mode_t *mode, int *is_link, int *fatal)
{
	struct stat st;

	*is_link = 0;
	*fatal = 0;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		goto fail;
	if (S_ISLNK(st.st_mode)) {
		*is_link = 1;
		if (fstatat(dfd, name, &st, 0) != 0)
			goto fail;
	}
	*mode = st.st_mode;
	return 0;
fail:
	if (inputs_is_audio_name(name))
		*fatal = add_failed(w->cl, w->path, w->len - w->prefix,
				    w->root, *is_link ? "broken symbolic "
				    "link" : "", errno);
	return -1;
}

static mode_t dtype_mode(unsigned char t)
{
	switch (t) {
	case DT_REG:
		return S_IFREG;
	case DT_DIR:
		return S_IFDIR;
	case DT_FIFO:
		return S_IFIFO;
	case DT_SOCK:
		return S_IFSOCK;
	case DT_CHR:
		return S_IFCHR;
	case DT_BLK:
		return S_IFBLK;
	default:
		return 0;
	}
}

/* One entry of a folder (w->path names it). */
static int walk_entry(struct walker *w, int dfd, const struct dirent *de,
		      int depth)
{
	mode_t mode = dtype_mode(de->d_type);
	int is_link = 0, fatal;
	char q[512];

	if (mode == 0) {
		if (entry_type(w, dfd, de->d_name, &mode, &is_link, &fatal))
			return fatal;
	}
	if (S_ISDIR(mode)) {
		if (!is_link)
			return walk_subdir(w, dfd, de->d_name, depth);
		prog_warn("'%s': not following a symbolic link to a folder",
			  quote_name_buf(q, sizeof(q), w->path));
		return 0;
	}
	if (!inputs_is_audio_name(de->d_name))
		return 0;
	return walker_add(w, S_ISREG(mode) ? NULL : file_type_name(mode));
}

/* Walks the folder open on dfd (closed here). Hidden entries (names
 * starting with '.') are left out. */
static int walk_dir(struct walker *w, int dfd, int depth)
{
	struct dirent *de;
	size_t saved;
	DIR *d;
	int err = 0;

	d = fdopendir(dfd);
	if (d == NULL) {
		err = add_failed(w->cl, w->path, w->len - w->prefix, w->root,
				 "unable to read folder", errno);
		close(dfd);
		return err;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (de == NULL)
			break;
		if (de->d_name[0] == '.')
			continue;
		if (walker_push(w, de->d_name, &saved)) {
			err = -1;
			break;
		}
		err = walk_entry(w, dirfd(d), de, depth);
		walker_pop(w, saved);
		if (err)
			break;
	}
	if (de == NULL && errno != 0)
		err = add_failed(w->cl, w->path, w->len - w->prefix, w->root,
				 "unable to read folder", errno);
	closedir(d);
	return err;
}

/* Adds every audio file under the folder root (open on fd). */
static int walk_root(struct clip_list *cl, const char *root, int fd)
{
	struct walker w = { .cl = cl };
	size_t rlen = strlen(root);
	char **nr;
	char q[512];
	int err = -1;

	nr = realloc(cl->roots, (cl->n_roots + 1) * sizeof(*nr));
	if (nr == NULL)
		goto nomem;
	cl->roots = nr;
	cl->roots[cl->n_roots] = strdup(root);
	if (cl->roots[cl->n_roots] == NULL)
		goto nomem;
	w.root = (int)cl->n_roots++;
	w.cap = rlen + 256;
	w.path = malloc(w.cap);
	if (w.path == NULL)
		goto nomem;
	memcpy(w.path, root, rlen + 1);
	w.len = rlen;
	if (rlen == 0 || root[rlen - 1] != '/')
		w.path[w.len++] = '/';
	w.path[w.len] = '\0';
	w.prefix = w.len;
	err = walk_dir(&w, fd, 0);
	if (!err && w.found == 0)
		prog_warn("no audio files under '%s'",
			  quote_name_buf(q, sizeof(q), root));
	free(w.path);
	return err;
nomem:
	close(fd);
	prog_err("out of memory walking folders");
	return -1;
}

/* ------------------------------------------------------------------ */
/* Arguments and lists */

/* Adds one path: a folder is walked, a regular file added. A path that
 * cannot be used is fatal when it is a command-line argument (a typo
 * should not silently give an empty dataset) and an unusable input when
 * it comes from a list. */
static int add_path(struct clip_list *cl, const char *p, int from_cmdline)
{
	struct stat st;
	int fd;

	if (stat(p, &st) != 0)
		goto fail;
	if (S_ISDIR(st.st_mode)) {
		fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			goto fail;
		return walk_root(cl, p, fd);
	}
	if (!S_ISREG(st.st_mode))
		return add_clip(cl, p, strlen(p), -1,
				file_type_name(st.st_mode));
	return add_clip(cl, p, strlen(p), -1, NULL);
fail:
	if (!from_cmdline)
		return add_failed(cl, p, strlen(p), -1, "", errno);
	prog_err("unable to open '%s': %s", p, strerror(errno));
	return -1;
}

/* Adds the paths listed in f, one per line (or NUL-separated). */
static int add_list(struct clip_list *cl, FILE *f, const char *name)
{
	int delim = cl->null_sep ? '\0' : '\n';
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int err = 0;

	while (!err && (n = getdelim(&line, &cap, delim, f)) >= 0) {
		if (n > 0 && line[n - 1] == delim)
			line[--n] = '\0';
		if (!cl->null_sep && n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		if (n == 0)
			continue;
		if (memchr(line, '\0', (size_t)n) != NULL) {
			prog_err("'%s': a NUL byte in a path (give -0 for "
				 "NUL-separated lists)", name);
			err = -1;
			break;
		}
		err = add_path(cl, line, 0);
	}
	if (!err && ferror(f)) {
		prog_err("unable to read '%s': %s", name, strerror(errno));
		err = -1;
	}
	free(line);
	return err;
}

int inputs_add_arg(struct clip_list *cl, const char *arg)
{
	FILE *f;
	int err;

	if (strcmp(arg, "-") == 0) {
		cl->stdin_used = 1;
		return add_list(cl, stdin, "standard input");
	}
	if (arg[0] != '@')
		return add_path(cl, arg, 1);
	f = fopen(arg + 1, "r");
	if (f == NULL) {
		prog_err("unable to open '%s': %s", arg + 1, strerror(errno));
		return -1;
	}
	err = add_list(cl, f, arg + 1);
	fclose(f);
	return err;
}

/* ------------------------------------------------------------------ */
/* Order: the buffer's entries and the runs, merged */

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

static void merge_free(struct clip_merge *m)
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
	cl->merge = merge_new(cl, cl->run0, cl->n_runs - cl->run0, 1);
	return cl->merge ? 0 : -1;
}

int inputs_next(struct clip_list *cl, struct clip *c)
{
	return merge_next(cl, cl->merge, c);
}

int inputs_keep_clip(const struct clip *c, char **buf, size_t *cap,
		     struct clip *kept)
{
	size_t pl = strlen(c->path) + 1, kl = strlen(c->key) + 1;
	size_t sl = c->skip ? strlen(c->skip) + 1 : 0, need = pl + kl + sl;
	char *nb;

	if (need > *cap) {
		nb = realloc(*buf, need);
		if (nb == NULL)
			return -1;
		*buf = nb;
		*cap = need;
	}
	*kept = *c;
	memcpy(*buf, c->path, pl);
	memcpy(*buf + pl, c->key, kl);
	if (c->skip)
		memcpy(*buf + pl + kl, c->skip, sl);
	kept->path = *buf;
	kept->key = *buf + pl;
	kept->skip = c->skip ? *buf + pl + kl : NULL;
	return 0;
}

/* Warns about each clip whose key is the previous clip's. */
static int warn_duplicates(struct clip_list *cl)
{
	char q1[512], q2[512], q3[512];
	struct clip c, prev = { .key = NULL };
	char *buf = NULL;
	size_t cap = 0;
	int got, err = -1;

	if (inputs_rewind(cl))
		return -1;
	while ((got = inputs_next(cl, &c)) > 0) {
		if (prev.key && strcmp(prev.key, c.key) == 0)
			prog_warn("duplicate key '%s' ('%s' and '%s')",
				  quote_name_buf(q1, sizeof(q1), c.key),
				  quote_name_buf(q2, sizeof(q2), prev.path),
				  quote_name_buf(q3, sizeof(q3), c.path));
		if (inputs_keep_clip(&c, &buf, &cap, &prev)) {
			prog_err("out of memory");
			goto out;
		}
	}
	err = got < 0 ? -1 : 0;
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
		prog_info("spilled %llu inputs to a temporary file in '%s' "
			  "(over --sort-buffer %zu bytes): %zu runs written, "
			  "%zu merged into others, %llu bytes",
			  (unsigned long long)cl->n_spilled, cl->tmp_dir,
			  cl->sort_limit, cl->n_runs, cl->run0,
			  (unsigned long long)cl->tmp_size);
	return warn_duplicates(cl);
}

void inputs_free(struct clip_list *cl)
{
	size_t i;

	for (i = 0; i < cl->n_roots; i++)
		free(cl->roots[i]);
	free(cl->roots);
	merge_free(cl->merge);
	free(cl->buf);
	free(cl->runs);
	free(cl->wbuf);
	if (cl->tmp_fd >= 0)
		close(cl->tmp_fd);
	memset(cl, 0, sizeof(*cl));
	cl->tmp_fd = -1;
}

char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *nb;
	size_t cap = 0, n = 0, got;
	int err = 0;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (cap - n < 65536 + 1) {
			cap = cap ? cap * 2 : 65536 * 2;
			nb = realloc(buf, cap);
			if (nb == NULL) {
				err = ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		err = errno ? errno : EIO;
		goto fail;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	free(buf);
	fclose(f);
	errno = err;
	return NULL;
}
