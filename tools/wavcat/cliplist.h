/*
 * cliplist.h - the clip list's entries, and what the files that fill the
 * list (cliplist.c, walk.c, inputs.c) and the merge that reads it in
 * order (merge.c) share. Nothing outside those files includes it.
 *
 * The comparisons are inline here: they run for every comparison of the
 * sort and of the merge.
 */
#ifndef MELPIPE_CLIPLIST_H
#define MELPIPE_CLIPLIST_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "wavcat.h"

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

/* A sorted run on the temporary file. */
struct clip_run {
	uint64_t off, len;
};

static inline size_t ent_size(const struct ent_hdr *h)
{
	return HDR_SIZE + h->path_len + 1 + h->skip_len;
}

/* The clip of the whole entry at p. */
static inline void ent_clip(const char *p, struct clip *c)
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

static inline int cmp_reason(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* The output order: keys bytewise, then paths. Root and reason order
 * only entries otherwise equal, so that the order is one and the same
 * however the entries were cut into runs. */
static inline int cmp_clip(const struct clip *a, const struct clip *b)
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

/* The offsets of the buffer's entries, at its end. */
static inline size_t *mem_index(const struct clip_list *cl)
{
	return (size_t *)(void *)(cl->buf + cl->cap) - cl->n_mem;
}

/* cliplist.c: filling the list; each int returns 0, or -1 after
 * printing why. */

int add_clip(struct clip_list *cl, const char *path, size_t key_len,
	     int root, const char *skip);
int add_failed(struct clip_list *cl, const char *path, size_t key_len,
	       int root, const char *prefix, int err);
const char *file_type_name(mode_t m);
int tmp_fail(const struct clip_list *cl, const char *what, int err);
int run_put(struct clip_list *cl, const char *ent, size_t size);
int run_end(struct clip_list *cl, uint64_t off);
void sort_mem(struct clip_list *cl);

int add_root(struct clip_list *cl, const char *dir);

/* inputs.c: whether the clip keyed key under input folder root is left
 * out (--exclude, folders starting with '_'), counted when it is. */
int inputs_excluded(struct clip_list *cl, const char *key, int root);
void inputs_report_excluded(const struct clip_list *cl);

/* walk.c: adds every audio file under the folder path (open on fd,
 * closed here) as found under input folder root, keyed by its path from
 * byte key_off of path on (strlen(path) or more: below the folder). */
int walk_folder(struct clip_list *cl, const char *path, int fd, int root,
		size_t key_off);

/* merge.c */
void merge_free(struct clip_merge *m);

#endif
