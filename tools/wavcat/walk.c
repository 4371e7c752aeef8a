/*
 * walk.c - walking an input folder: every file with an audio name under
 * it becomes a clip keyed by its path below the folder. Hidden entries
 * are left out, symbolic links to folders are not followed, and anything
 * with an audio name that is not a regular file becomes a clip carrying
 * the reason it cannot be used, so that it is accounted for.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/prog.h"
#include "cliplist.h"
#include "wavcat.h"

#define MAX_DEPTH 200      /* folders nested deeper are not walked */

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

int walk_folder(struct clip_list *cl, const char *path, int fd, int root,
		size_t key_off)
{
	struct walker w = { .cl = cl, .root = root };
	size_t rlen = strlen(path);
	char q[512];
	int err;

	w.cap = rlen + 256;
	w.path = malloc(w.cap);
	if (w.path == NULL) {
		close(fd);
		prog_err("out of memory walking folders");
		return -1;
	}
	memcpy(w.path, path, rlen + 1);
	w.len = rlen;
	if (key_off >= rlen) {
		if (rlen == 0 || path[rlen - 1] != '/')
			w.path[w.len++] = '/';
		w.prefix = w.len;
	} else {
		while (w.len > key_off && w.path[w.len - 1] == '/')
			w.len--;
		w.prefix = key_off;
	}
	w.path[w.len] = '\0';
	err = walk_dir(&w, fd, 0);
	if (!err && w.found == 0)
		prog_warn("no audio files under '%s'",
			  quote_name_buf(q, sizeof(q), path));
	free(w.path);
	return err;
}
