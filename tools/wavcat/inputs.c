/*
 * inputs.c - find the clips named on the command line: files, folders
 * walked recursively, lists of paths (@LISTFILE, "-"). Only regular files
 * are ever opened later; anything else with an audio name becomes a clip
 * carrying the reason it cannot be used, so that it is accounted for.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>

#include "../common/prog.h"
#include "wavcat.h"

#define NO_SKIP SIZE_MAX   /* skip_off of a clip with no known problem */
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
/* The clip list */

/* Appends len bytes of s and a NUL to the arena; returns the offset or
 * SIZE_MAX when out of memory. */
static size_t arena_add(struct clip_list *cl, const char *s, size_t len)
{
	size_t off = cl->arena_len;
	char *na;

	if (cl->arena_cap - cl->arena_len < len + 1) {
		size_t cap = cl->arena_cap ? cl->arena_cap : 1 << 16;

		while (cap - cl->arena_len < len + 1)
			cap *= 2;
		na = realloc(cl->arena, cap);
		if (na == NULL)
			return SIZE_MAX;
		cl->arena = na;
		cl->arena_cap = cap;
	}
	memcpy(cl->arena + off, s, len);
	cl->arena[off + len] = '\0';
	cl->arena_len += len + 1;
	return off;
}

/* Adds a clip: path (key = its last key_len bytes), root, and a reason
 * when it is known to be unusable (NULL otherwise). Returns 0 or -1
 * after printing why. */
static int add_clip(struct clip_list *cl, const char *path, size_t key_len,
		    int root, const char *skip)
{
	size_t len = strlen(path);
	struct clip *c, *nv;

	if (key_len > WAVCAT_MAX_KEY) {
		prog_err("'%.200s...': path too long for a record key (over "
			 "%u bytes)", path, WAVCAT_MAX_KEY);
		return -1;
	}
	if (cl->n == cl->cap) {
		size_t cap = cl->cap ? 2 * cl->cap : 4096;

		nv = realloc(cl->v, cap * sizeof(*nv));
		if (nv == NULL)
			goto nomem;
		cl->v = nv;
		cl->cap = cap;
	}
	c = &cl->v[cl->n];
	memset(c, 0, sizeof(*c));
	c->root = root;
	c->label = -1;
	c->skip_off = NO_SKIP;
	c->path_off = arena_add(cl, path, len);
	if (c->path_off == SIZE_MAX)
		goto nomem;
	c->key_off = c->path_off + (len - key_len);
	if (skip) {
		c->skip_off = arena_add(cl, skip, strlen(skip));
		if (c->skip_off == SIZE_MAX)
			goto nomem;
	}
	cl->n++;
	return 0;
nomem:
	prog_err("out of memory listing the inputs");
	return -1;
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
/* Order */

static int cmp_clip(const void *pa, const void *pb)
{
	const struct clip *a = pa, *b = pb;
	int c = strcmp(a->key, b->key);

	return c ? c : strcmp(a->path, b->path);
}

int inputs_finish(struct clip_list *cl)
{
	char q1[512], q2[512], q3[512];
	size_t i;

	for (i = 0; i < cl->n; i++) {
		struct clip *c = &cl->v[i];

		c->path = cl->arena + c->path_off;
		c->key = cl->arena + c->key_off;
		c->skip = c->skip_off == NO_SKIP ? NULL
						 : cl->arena + c->skip_off;
	}
	if (cl->n > 0)
		qsort(cl->v, cl->n, sizeof(*cl->v), cmp_clip);
	for (i = 1; i < cl->n; i++) {
		if (strcmp(cl->v[i - 1].key, cl->v[i].key) == 0)
			prog_warn("duplicate key '%s' ('%s' and '%s')",
				  quote_name_buf(q1, sizeof(q1), cl->v[i].key),
				  quote_name_buf(q2, sizeof(q2),
						 cl->v[i - 1].path),
				  quote_name_buf(q3, sizeof(q3),
						 cl->v[i].path));
	}
	return 0;
}

size_t inputs_find_key(const struct clip_list *cl, const char *key,
		       size_t *first)
{
	size_t lo = 0, hi = cl->n, i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(cl->v[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	for (i = lo; i < cl->n && strcmp(cl->v[i].key, key) == 0; i++)
		;
	return i - lo;
}

void inputs_free(struct clip_list *cl)
{
	size_t i;

	for (i = 0; i < cl->n_roots; i++)
		free(cl->roots[i]);
	free(cl->roots);
	free(cl->v);
	free(cl->arena);
	memset(cl, 0, sizeof(*cl));
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
