/*
 * readfile.c - a whole file into memory, for the text files wavcat reads
 * (a labels file, split lists).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "wavcat.h"

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
