/*
 * labels.c - a label id for every clip: the name of its top folder, or
 * from a file of path,label lines. Label names are sorted bytewise and
 * numbered from 0, so the same names give the same ids in every run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/prog.h"
#include "wavcat.h"

/* A label name: a slice of a key or of the labels file. */
struct name {
	const char *s;
	size_t len;
	size_t idx;   /* the clip or entry it came from */
};

static int cmp_slice(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

static int cmp_name(const void *pa, const void *pb)
{
	const struct name *a = pa, *b = pb;

	return cmp_slice(a->s, a->len, b->s, b->len);
}

/* The label name of a clip by the folder rule, or 0 when it has none:
 * the first folder of the key under an input folder; for a file named by
 * path, the folder holding it (a/yes/x.wav: "yes"). */
static int folder_label(const struct clip *c, const char **s, size_t *len)
{
	const char *key = c->key, *end, *start;

	if (c->root >= 0) {
		end = strchr(key, '/');
		if (end == NULL)
			return 0;
		*s = key;
		*len = (size_t)(end - key);
		return *len > 0;
	}
	end = strrchr(key, '/');
	if (end == NULL)
		return 0;
	while (end > key && end[-1] == '/')
		end--;
	start = end;
	while (start > key && start[-1] != '/')
		start--;
	*s = start;
	*len = (size_t)(end - start);
	if (*len == 0 || (*len == 1 && start[0] == '.') ||
	    (*len == 2 && start[0] == '.' && start[1] == '.'))
		return 0;
	return 1;
}

/* Fills lt with the distinct names of v[0..n) (sorted in place) and sets
 * ids[v[i].idx] to each name's id. */
static int make_table(struct name *v, size_t n, struct label_table *lt,
		      int32_t *ids)
{
	size_t i, k = 0;

	if (n > 0)
		qsort(v, n, sizeof(*v), cmp_name);
	lt->names = calloc(n ? n : 1, sizeof(*lt->names));
	if (lt->names == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (i == 0 || cmp_name(&v[i - 1], &v[i]) != 0) {
			if (k > INT32_MAX - 1)
				return -1;
			lt->names[k] = strndup(v[i].s, v[i].len);
			if (lt->names[k] == NULL)
				return -1;
			k++;
			lt->n = k;
		}
		ids[v[i].idx] = (int32_t)(k - 1);
	}
	return 0;
}

int labels_from_folders(struct clip_list *cl, struct label_table *lt)
{
	struct name *v = malloc((cl->n ? cl->n : 1) * sizeof(*v));
	int32_t *ids = malloc((cl->n ? cl->n : 1) * sizeof(*ids));
	size_t i, n = 0;
	int err = -1;

	memset(lt, 0, sizeof(*lt));
	if (v == NULL || ids == NULL)
		goto out;
	for (i = 0; i < cl->n; i++) {
		ids[i] = -1;
		if (folder_label(&cl->v[i], &v[n].s, &v[n].len))
			v[n++].idx = i;
	}
	if (make_table(v, n, lt, ids))
		goto out;
	for (i = 0; i < cl->n; i++)
		cl->v[i].label = ids[i];
	err = 0;
out:
	if (err)
		prog_err("out of memory making the label table");
	free(v);
	free(ids);
	return err;
}

void labels_none(struct clip_list *cl, struct label_table *lt)
{
	size_t i;

	memset(lt, 0, sizeof(*lt));
	for (i = 0; i < cl->n; i++)
		cl->v[i].label = -1;
}

void labels_free(struct label_table *lt)
{
	size_t i;

	for (i = 0; i < lt->n; i++)
		free(lt->names[i]);
	free(lt->names);
	lt->names = NULL;
	lt->n = 0;
}

/* One line of a labels file. */
struct entry {
	char *path;
	char *label;
	size_t line;
};

/* Cuts one CSV field at *p, unquoting a "quoted" one in place ("" is a
 * quote), and leaves *p on the ',' or NUL after it. Returns the field,
 * or NULL when a quoted field is not closed or is followed by junk. */
static char *csv_field(char **p)
{
	char *start = *p, *w, *r;

	if (*start != '"') {
		*p = start + strcspn(start, ",");
		return start;
	}
	w = start;
	for (r = start + 1;; r++) {
		if (*r == '\0')
			return NULL;
		if (*r == '"') {
			if (r[1] != '"')
				break;
			r++;
		}
		*w++ = *r;
	}
	*p = r + 1;
	if (**p != ',' && **p != '\0')
		return NULL;
	*w = '\0';
	return start;
}

/* Splits a line into path and label. Without quotes the path runs to the
 * last comma (paths may hold commas); with quotes, two CSV fields. */
static int parse_line(char *line, struct entry *e)
{
	char *p = line, *comma;

	if (strchr(line, '"') == NULL) {
		comma = strrchr(line, ',');
		if (comma == NULL)
			return -1;
		*comma = '\0';
		e->path = line;
		e->label = comma + 1;
	} else {
		e->path = csv_field(&p);
		if (e->path == NULL || *p != ',')
			return -1;
		*p++ = '\0';
		e->label = csv_field(&p);
		if (e->label == NULL || *p != '\0')
			return -1;
	}
	return e->path[0] && e->label[0] ? 0 : -1;
}

/* Reads a labels file into entries (pointing into *text). */
static int read_entries(const char *file, char **text, struct entry **out,
			size_t *n_out)
{
	size_t len, n = 0, cap = 0, line = 0;
	struct entry *v = NULL, *nv;
	char *p, *end, *eol;

	*text = read_file(file, &len);
	if (*text == NULL) {
		prog_err("unable to read '%s': %s", file, strerror(errno));
		return -1;
	}
	for (p = *text, end = *text + len; p < end; p = eol + 1) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			eol = end;
		*eol = '\0';
		line++;
		if (eol > p && eol[-1] == '\r')
			eol[-1] = '\0';
		if (*p == '\0' || (n == 0 && strcmp(p, "path,label") == 0))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			nv = realloc(v, cap * sizeof(*v));
			if (nv == NULL) {
				prog_err("out of memory reading '%s'", file);
				goto fail;
			}
			v = nv;
		}
		if (parse_line(p, &v[n])) {
			prog_err("'%s' line %zu: expected path,label", file,
				 line);
			goto fail;
		}
		v[n++].line = line;
	}
	*out = v;
	*n_out = n;
	return 0;
fail:
	free(v);
	return -1;
}

static int cmp_entry_path(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;
	int c = strcmp(a->path, b->path);

	if (c != 0)
		return c;
	return (a->line > b->line) - (a->line < b->line);
}

/* Refuses a path given two different labels. */
static int check_conflicts(const char *file, struct entry *v, size_t n)
{
	size_t i;

	if (n > 0)
		qsort(v, n, sizeof(*v), cmp_entry_path);
	for (i = 1; i < n; i++) {
		if (strcmp(v[i - 1].path, v[i].path) == 0 &&
		    strcmp(v[i - 1].label, v[i].label) != 0) {
			prog_err("'%s' line %zu: '%s' labelled '%s' and "
				 "'%s' (line %zu)", file, v[i].line,
				 v[i].path, v[i].label, v[i - 1].label,
				 v[i - 1].line);
			return -1;
		}
	}
	return 0;
}

/* Gives the clips named by the entries their labels (ids[i] for entry
 * i); reports entries naming no input and clips left without a label. */
static void apply_entries(struct clip_list *cl, const char *file,
			  const struct entry *v, size_t n,
			  const int32_t *ids)
{
	size_t i, j, first, count, matched = 0, unlabelled = 0;
	const char *example = NULL;

	for (i = 0; i < cl->n; i++)
		cl->v[i].label = -1;
	for (i = 0; i < n; i++) {
		count = inputs_find_key(cl, v[i].path, &first);
		for (j = 0; j < count; j++)
			cl->v[first + j].label = ids[i];
		matched += count > 0;
	}
	for (i = 0; i < cl->n; i++) {
		if (cl->v[i].label < 0 && unlabelled++ == 0)
			example = cl->v[i].key;
	}
	if (n > 0 && matched == 0)
		prog_warn("no entry of '%s' names an input (paths are "
			  "matched against keys: paths relative to the "
			  "input folder)", file);
	else if (matched < n)
		prog_info("%zu of %zu entries of '%s' name no input",
			  n - matched, n, file);
	if (unlabelled > 0) {
		char q[512];

		prog_warn("'%s' and %zu more clips are not in '%s': label -1",
			  quote_name_buf(q, sizeof(q), example),
			  unlabelled - 1, file);
	}
}

int labels_from_file(struct clip_list *cl, const char *file,
		     struct label_table *lt)
{
	struct entry *v = NULL;
	struct name *names = NULL;
	int32_t *ids = NULL;
	char *text = NULL;
	size_t n = 0, i;
	int err = -1;

	memset(lt, 0, sizeof(*lt));
	if (read_entries(file, &text, &v, &n) || check_conflicts(file, v, n))
		goto out;
	names = malloc((n ? n : 1) * sizeof(*names));
	ids = malloc((n ? n : 1) * sizeof(*ids));
	if (names == NULL || ids == NULL)
		goto nomem;
	for (i = 0; i < n; i++) {
		names[i].s = v[i].label;
		names[i].len = strlen(v[i].label);
		names[i].idx = i;
	}
	if (make_table(names, n, lt, ids))
		goto nomem;
	apply_entries(cl, file, v, n, ids);
	err = 0;
	goto out;
nomem:
	prog_err("out of memory reading '%s'", file);
out:
	free(names);
	free(ids);
	free(v);
	free(text);
	return err;
}
