/*
 * keepclip.c - a clip's own copy of its strings, for whoever keeps it
 * past the next clip (the list reuses its buffers): the pool's slots, the
 * check for the same key twice. Apart so that the pool's tests link it
 * without the list.
 */
#include <stdlib.h>
#include <string.h>

#include "wavcat.h"

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
