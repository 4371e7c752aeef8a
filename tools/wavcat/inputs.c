/*
 * inputs.c - the inputs named on the command line: files, folders
 * (walked by walk.c), lists of paths (@LISTFILE, "-"). Only regular files
 * are ever opened later; anything else with an audio name becomes a clip
 * carrying the reason it cannot be used, so that it is accounted for.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/prog.h"
#include "cliplist.h"
#include "wavcat.h"

/* p less any leading "./" (and the slashes after it). */
static const char *skip_dot_slash(const char *p)
{
	while (p[0] == '.' && p[1] == '/') {
		p += 2;
		while (*p == '/')
			p++;
	}
	return p;
}

/* The part of path p below folder dir, compared as written (leading
 * "./" and repeated slashes aside): "" for dir itself, NULL when p is
 * not under dir. */
static const char *path_under(const char *dir, const char *p)
{
	const char *d = skip_dot_slash(dir), *q = skip_dot_slash(p);

	if (d[0] == '\0' || strcmp(d, ".") == 0)
		return *q == '/' ? NULL : strcmp(q, ".") == 0 ? q + 1 : q;
	while (*d) {
		if (*d == '/') {
			if (*q != '/')
				return NULL;
			while (*d == '/')
				d++;
			while (*q == '/')
				q++;
			continue;
		}
		if (*d++ != *q++)
			return NULL;
	}
	if (*q != '\0' && *q != '/' && d[-1] != '/')
		return NULL;
	while (*q == '/')
		q++;
	return skip_dot_slash(q);
}

int inputs_set_root(struct clip_list *cl, const char *dir)
{
	struct stat st;

	if (stat(dir, &st) != 0) {
		prog_err("unable to open --root '%s': %s", dir,
			 strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		prog_err("--root '%s': not a folder", dir);
		return -1;
	}
	cl->root_real = realpath(dir, NULL);
	if (cl->root_real == NULL) {
		prog_err("unable to resolve --root '%s': %s", dir,
			 strerror(errno));
		return -1;
	}
	cl->root_idx = add_root(cl, dir);
	cl->root_dir = dir;
	return cl->root_idx < 0 ? -1 : 0;
}

/* Whether the folder a (len bytes of it; "" for the current folder, or
 * for "/" when abs) is --root, its links resolved. */
static int is_root(const struct clip_list *cl, char *a, size_t len, int abs)
{
	char saved = a[len], *real;
	int same;

	a[len] = '\0';
	real = realpath(len ? a : abs ? "/" : ".", NULL);
	a[len] = saved;
	same = real != NULL && strcmp(real, cl->root_real) == 0;
	free(real);
	return same;
}

/* Where the key of p starts when p is under --root by another way than
 * as written (an absolute path for a relative --root or the reverse, a
 * symbolic link on the way): below its deepest leading folder that is
 * the root once links are resolved. SIZE_MAX when none is. The file's
 * own name is never resolved (a link to a file elsewhere is keyed where
 * it is), and a list names the files of a folder one after another: the
 * answer for the last folder is kept. */
static size_t key_by_realpath(struct clip_list *cl, const char *p)
{
	const char *slash = strrchr(p, '/');
	size_t dlen = slash ? (size_t)(slash - p) : 0, i, key = SIZE_MAX;
	int abs = p[0] == '/';
	char *a = strdup(p);

	if (a == NULL)
		return SIZE_MAX;
	if (cl->rp_dir && cl->rp_len == dlen &&
	    memcmp(cl->rp_dir, p, dlen) == 0) {
		key = cl->rp_key;
	} else {
		/* the folders that p's path names, deepest first:
		 * "a/b/c.wav" gives a/b, a and the current folder */
		for (i = dlen + 1; i-- > 0 && key == SIZE_MAX;)
			if ((a[i] == '/' || i == dlen || i == 0) &&
			    (i == 0 || a[i - 1] != '/') &&
			    is_root(cl, a, i, abs))
				key = i + (a[i] == '/');
		free(cl->rp_dir);
		cl->rp_dir = strndup(p, dlen);
		cl->rp_len = dlen;
		cl->rp_key = key;
	}
	/* or p is the root itself (a folder in a list) */
	if (key == SIZE_MAX && is_root(cl, a, strlen(a), abs))
		key = strlen(a);
	free(a);
	return key;
}

int inputs_set_excludes(struct clip_list *cl, char *const *pats, size_t n,
			int keep_underscore)
{
	cl->excludes = pats;
	cl->n_excludes = n;
	cl->keep_underscore = keep_underscore;
	if (n == 0)
		return 0;
	cl->match = malloc(WAVCAT_MAX_KEY + 1);
	cl->excl_hit = calloc(n, 1);
	cl->n_unhit = n;
	if (cl->match == NULL || cl->excl_hit == NULL) {
		prog_err("out of memory");
		return -1;
	}
	return 0;
}

/* Whether s matches one of the --exclude patterns (or excluded already
 * does: then only the patterns that have matched nothing yet are tried),
 * each that does marked as having left an input out. */
static int match_exclude(struct clip_list *cl, const char *s, int excluded)
{
	size_t i;

	for (i = 0; i < cl->n_excludes; i++) {
		if (excluded && cl->excl_hit[i])
			continue;
		if (fnmatch(cl->excludes[i], s, 0) != 0)
			continue;
		if (!cl->excl_hit[i]) {
			cl->excl_hit[i] = 1;
			cl->n_unhit--;
		}
		excluded = 1;
	}
	return excluded;
}

/* Whether key, or one of its leading folders (yes, yes/deep for
 * yes/deep/a.wav), matches an --exclude pattern. Once it does, the rest
 * is tried only while some pattern has matched nothing, so that each
 * pattern that would leave an input out is known to. */
static int key_excluded(struct clip_list *cl, const char *key)
{
	size_t i, n = strlen(key);
	int excluded = 0;

	if (cl->key_example == NULL)
		cl->key_example = strdup(key);
	memcpy(cl->match, key, n + 1);
	for (i = 0; i <= n && !(excluded && cl->n_unhit == 0); i++) {
		if (cl->match[i] != '/' && cl->match[i] != '\0')
			continue;
		cl->match[i] = '\0';
		excluded = match_exclude(cl, cl->match, excluded);
		cl->match[i] = key[i];
	}
	return excluded;
}

/* A key is left out when it, or one of its leading folders, matches an
 * --exclude pattern; and under an input folder, when its top folder
 * starts with '_' (Speech Commands' _background_noise_, which
 * TensorFlow's input_data.py leaves out too), unless
 * --include-underscore. */
int inputs_excluded(struct clip_list *cl, const char *key, int root)
{
	const char *slash = strchr(key, '/');

	if (root >= 0 && key[0] == '_' && slash && !cl->keep_underscore) {
		if (cl->n_underscore++ == 0)
			cl->underscore_example =
				strndup(key, (size_t)(slash - key));
		/* a pattern for these matches: it is not warned about */
		if (cl->n_unhit > 0)
			key_excluded(cl, key);
		return 1;
	}
	if (cl->n_excludes == 0 || !key_excluded(cl, key))
		return 0;
	cl->n_excluded++;
	return 1;
}

/* Warns of each --exclude pattern that left no input out (once for a
 * pattern given twice): likely a typo, or a path where a key was meant. */
static void report_unhit(const struct clip_list *cl)
{
	char q[256], k[256];
	size_t i, j;

	for (i = 0; i < cl->n_excludes && cl->n_unhit > 0; i++) {
		if (cl->excl_hit[i])
			continue;
		for (j = 0; j < i; j++)
			if (strcmp(cl->excludes[j], cl->excludes[i]) == 0)
				break;
		if (j < i)
			continue;
		if (cl->key_example)
			prog_warn("--exclude '%s' matched no input "
				  "(patterns are matched against keys such as "
				  "'%s')",
				  quote_name_buf(q, sizeof(q), cl->excludes[i]),
				  quote_name_buf(k, sizeof(k),
						 cl->key_example));
		else
			prog_warn("--exclude '%s' matched no input",
				  quote_name_buf(q, sizeof(q),
						 cl->excludes[i]));
	}
}

/* Says how many inputs were left out, and why. */
void inputs_report_excluded(const struct clip_list *cl)
{
	char q[256];

	if (cl->n_underscore > 0)
		prog_warn("left out %llu %s in folders starting with '_' "
			  "(such as '%s'); --include-underscore keeps them",
			  (unsigned long long)cl->n_underscore,
			  prog_plural(cl->n_underscore, "file", "files"),
			  quote_name_buf(q, sizeof(q),
					 cl->underscore_example
						 ? cl->underscore_example
						 : "_"));
	if (cl->n_excluded > 0)
		prog_info("left out %llu %s matching --exclude",
			  (unsigned long long)cl->n_excluded,
			  prog_plural(cl->n_excluded, "file", "files"));
	report_unhit(cl);
}

/* Walks the folder p, its keys from byte key_off of p on, under --root
 * when root >= 0, else as an input folder of its own. Returns 0, -1 when
 * it cannot be opened (errno set), -2 after printing why the run stops. */
static int add_folder(struct clip_list *cl, const char *p, int root,
		      size_t key_off)
{
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	cl->root_walked |= root >= 0;
	if (root < 0) {
		root = add_root(cl, p);
		key_off = strlen(p);
		if (root < 0) {
			close(fd);
			return -2;
		}
	}
	return walk_folder(cl, p, fd, root, key_off) ? -2 : 0;
}

/* Whether key has a ".." component: it would leave the root, or key
 * one file by two names. */
static int goes_up(const char *key)
{
	const char *s;

	for (s = key; (s = strstr(s, "..")) != NULL; s += 2)
		if ((s == key || s[-1] == '/') && (s[2] == '/' || !s[2]))
			return 1;
	return 0;
}

/* Why path p is refused under --root, naming the root as given and, when
 * one of them is absolute and that differs, as resolved. */
static void not_under_root(const struct clip_list *cl, const char *p,
			   char *why, size_t n)
{
	char q[256], r[256];

	quote_name_buf(q, sizeof(q), cl->root_dir);
	if ((p[0] != '/' && cl->root_dir[0] != '/') ||
	    strcmp(cl->root_dir, cl->root_real) == 0)
		snprintf(why, n, "not under --root '%s'", q);
	else
		snprintf(why, n, "not under --root '%s' ('%s', its links "
			 "resolved)", q,
			 quote_name_buf(r, sizeof(r), cl->root_real));
}

/* Adds one path: a folder is walked, a regular file added. A path that
 * cannot be used is fatal when it is a command-line argument (a typo
 * should not silently give an empty dataset) and an unusable input when
 * it comes from a list. Under --root, a path is keyed from its folder
 * below the root on; else a leading "./" is not part of the key. */
static int add_path(struct clip_list *cl, const char *p, int from_cmdline)
{
	const char *key = skip_dot_slash(p);
	char why[1024], q[256];
	struct stat st;
	int root = -1, err;
	size_t off;

	if (cl->root_dir) {
		key = path_under(cl->root_dir, p);
		if (key == NULL && (off = key_by_realpath(cl, p)) != SIZE_MAX)
			key = skip_dot_slash(p + off);
		if (key == NULL) {
			not_under_root(cl, p, why, sizeof(why));
			goto outside;
		}
		if (goes_up(key)) {
			snprintf(why, sizeof(why), "'..' in its path below "
				 "--root '%s' (give the path without it)",
				 quote_name_buf(q, sizeof(q), cl->root_dir));
			goto outside;
		}
		root = cl->root_idx;
	}
	if (stat(p, &st) != 0)
		goto fail;
	if (S_ISDIR(st.st_mode)) {
		err = add_folder(cl, p, root, (size_t)(key - p));
		if (err == -1)
			goto fail;
		return err ? -1 : 0;
	}
	if (*key == '\0')
		key = p;
	return add_clip(cl, p, strlen(key), root,
			S_ISREG(st.st_mode) ? NULL : file_type_name(st.st_mode));
fail:
	if (!from_cmdline)
		return add_failed(cl, p, strlen(key), root, "", errno);
	prog_err("unable to open '%s': %s", p, strerror(errno));
	return -1;
outside:
	if (!from_cmdline)
		return add_clip(cl, p, strlen(p), -1, why);
	prog_err("'%s': %s", quote_name_buf(q, sizeof(q), p), why);
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
