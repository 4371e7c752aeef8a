/*
 * inputs.c - the inputs named on the command line: files, folders
 * (walked by walk.c), lists of paths (@LISTFILE, "-"). Only regular files
 * are ever opened later; anything else with an audio name becomes a clip
 * carrying the reason it cannot be used, so that it is accounted for.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/prog.h"
#include "cliplist.h"
#include "wavcat.h"

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
