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

/* Fills lt->names with the distinct names of v[0..n) (sorted in place)
 * and, when ids is not NULL, sets ids[v[i].idx] to each name's id. */
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
		if (ids)
			ids[v[i].idx] = (int32_t)(k - 1);
	}
	return 0;
}

/* The distinct folder names seen so far: an open-addressing hash set
 * (there are few; the header lists them all). */
struct name_set {
	struct name *v;     /* idx: offset in arena; len SIZE_MAX: empty */
	size_t n, cap;
	char *arena;        /* the names' bytes */
	size_t len, acap;
};

static size_t hash_slice(const char *s, size_t len)
{
	size_t h = 14695981039346656037ull & SIZE_MAX, i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * (1099511628211ull & SIZE_MAX);
	return h;
}

/* The slot of name (s, len) in set: where it is, or where it goes. */
static size_t set_slot(const struct name_set *set, const char *s,
		       size_t len)
{
	size_t i = hash_slice(s, len) & (set->cap - 1);

	while (set->v[i].len != SIZE_MAX &&
	       cmp_slice(set->arena + set->v[i].idx, set->v[i].len, s,
			 len) != 0)
		i = (i + 1) & (set->cap - 1);
	return i;
}

static int set_grow(struct name_set *set)
{
	struct name_set ns = *set;
	size_t i, j;

	ns.cap = set->cap ? 2 * set->cap : 64;
	ns.v = malloc(ns.cap * sizeof(*ns.v));
	if (ns.v == NULL)
		return -1;
	for (i = 0; i < ns.cap; i++)
		ns.v[i].len = SIZE_MAX;
	for (i = 0; i < set->cap; i++) {
		if (set->v[i].len == SIZE_MAX)
			continue;
		j = set_slot(&ns, set->arena + set->v[i].idx, set->v[i].len);
		ns.v[j] = set->v[i];
	}
	free(set->v);
	*set = ns;
	return 0;
}

/* Adds name (s, len) to set unless it is there. Returns 0 or -1. */
static int set_add(struct name_set *set, const char *s, size_t len)
{
	size_t i, acap;
	char *na;

	if (2 * (set->n + 1) > set->cap && set_grow(set))
		return -1;
	i = set_slot(set, s, len);
	if (set->v[i].len != SIZE_MAX)
		return 0;
	if (set->acap - set->len < len) {
		acap = set->acap ? set->acap : 4096;
		while (acap - set->len < len)
			acap *= 2;
		na = realloc(set->arena, acap);
		if (na == NULL)
			return -1;
		set->arena = na;
		set->acap = acap;
	}
	memcpy(set->arena + set->len, s, len);
	set->v[i].idx = set->len;
	set->v[i].len = len;
	set->len += len;
	set->n++;
	return 0;
}

/* The id of name (s, len) in the sorted table, -1 when not there. */
static int32_t table_find(const struct label_table *lt, const char *s,
			  size_t len)
{
	size_t lo = 0, hi = lt->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = cmp_slice(lt->names[mid], strlen(lt->names[mid]), s, len);
		if (c == 0)
			return (int32_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The set's names, sorted, as lt's table. */
static int set_table(struct name_set *set, struct label_table *lt)
{
	struct name *v = malloc((set->n ? set->n : 1) * sizeof(*v));
	size_t i, n = 0;
	int err;

	if (v == NULL)
		return -1;
	for (i = 0; i < set->cap; i++) {
		if (set->v[i].len == SIZE_MAX)
			continue;
		v[n].s = set->arena + set->v[i].idx;
		v[n].len = set->v[i].len;
		v[n].idx = n;
		n++;
	}
	err = make_table(v, n, lt, NULL);
	free(v);
	return err;
}

int labels_from_folders(struct clip_list *cl, struct label_table *lt)
{
	struct name_set set = { .v = NULL };
	struct clip c;
	const char *s;
	size_t len;
	int got, err = -1;

	memset(lt, 0, sizeof(*lt));
	lt->mode = 1;
	if (inputs_rewind(cl))
		return -1;
	while ((got = inputs_next(cl, &c)) > 0) {
		if (folder_label(&c, &s, &len) && set_add(&set, s, len))
			goto nomem;
	}
	if (got < 0)
		goto out;
	if (set_table(&set, lt))
		goto nomem;
	err = 0;
	goto out;
nomem:
	prog_err("out of memory making the label table");
out:
	free(set.v);
	free(set.arena);
	return err;
}

void labels_none(struct label_table *lt)
{
	memset(lt, 0, sizeof(*lt));
}

void labels_free(struct label_table *lt)
{
	size_t i;

	for (i = 0; i < lt->n; i++)
		free(lt->names[i]);
	free(lt->names);
	free(lt->ent);
	free(lt->text);
	memset(lt, 0, sizeof(*lt));
}

/* One line of a labels file. */
struct label_entry {
	char *path;
	char *label;
	size_t line;
	int32_t id;
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
static int parse_line(char *line, struct label_entry *e)
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
static int read_entries(const char *file, char **text,
			struct label_entry **out, size_t *n_out)
{
	size_t len, n = 0, cap = 0, line = 0;
	struct label_entry *v = NULL, *nv;
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
	const struct label_entry *a = pa, *b = pb;
	int c = strcmp(a->path, b->path);

	if (c != 0)
		return c;
	return (a->line > b->line) - (a->line < b->line);
}

/* Refuses a path given two different labels. */
static int check_conflicts(const char *file, struct label_entry *v, size_t n)
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

/* The first entry (sorted by path) whose path is key or after it. */
static size_t entry_lower(const struct label_table *lt, const char *key)
{
	size_t lo = 0, hi = lt->n_ent, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(lt->ent[mid].path, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int32_t labels_of(const struct label_table *lt, const struct clip *c)
{
	const char *s;
	size_t len, i;

	switch (lt->mode) {
	case 1:
		return folder_label(c, &s, &len) ? table_find(lt, s, len) : -1;
	case 2:
		i = entry_lower(lt, c->key);
		return i < lt->n_ent && strcmp(lt->ent[i].path, c->key) == 0
			       ? lt->ent[i].id
			       : -1;
	default:
		return -1;
	}
}

/* Warns once about the labels of file that no input gets (every entry
 * with them names no input): how many, and the first few. hit marks
 * the entries naming an input. Returns 0 or -1 (no memory). */
static int warn_unused_labels(const char *file, const struct label_table *lt,
			      const unsigned char *hit)
{
	unsigned char *used = calloc(lt->n ? lt->n : 1, 1);
	char list[300], q[64];
	size_t i, n_unused = 0, len = 0;

	if (used == NULL)
		return -1;
	for (i = 0; i < lt->n_ent; i++)
		if (hit[i])
			used[lt->ent[i].id] = 1;
	list[0] = '\0';
	for (i = 0; i < lt->n; i++) {
		if (used[i] || n_unused++ >= 5)
			continue;
		len += (size_t)snprintf(list + len, sizeof(list) - len,
					"%s'%s'", len ? ", " : "",
					quote_name_buf(q, sizeof(q),
						       lt->names[i]));
		if (len >= sizeof(list))
			len = sizeof(list) - 1;
	}
	if (n_unused == 1)
		prog_warn("1 label of '%s' names no input (no clip gets it; "
			  "its id stays in the table): %s", file, list);
	else if (n_unused > 1)
		prog_warn("%zu labels of '%s' name no input (no clip gets "
			  "them; their ids stay in the table): %s%s", n_unused,
			  file, list, n_unused > 5 ? ", ..." : "");
	free(used);
	return 0;
}

/* Reports the entries naming no input, the labels no input gets and the
 * clips left without a label, from one pass over the clips. */
static int check_entries(struct clip_list *cl, const char *file,
			 const struct label_table *lt)
{
	unsigned char *hit = calloc(lt->n_ent ? lt->n_ent : 1, 1);
	size_t i, n = lt->n_ent, matched = 0, unlabelled = 0;
	char *example = NULL;
	char q[512];
	struct clip c;
	int got, err = -1;

	if (hit == NULL)
		goto nomem;
	if (inputs_rewind(cl))
		goto out;
	while ((got = inputs_next(cl, &c)) > 0) {
		i = entry_lower(lt, c.key);
		if (i < n && strcmp(lt->ent[i].path, c.key) == 0) {
			for (; i < n && !hit[i] &&
			       strcmp(lt->ent[i].path, c.key) == 0; i++) {
				hit[i] = 1;
				matched++;
			}
		} else if (unlabelled++ == 0) {
			example = strdup(c.key);
			if (example == NULL)
				goto nomem;
		}
	}
	if (got < 0)
		goto out;
	if (n > 0 && matched == 0)
		prog_warn("no entry of '%s' names an input (paths are "
			  "matched against keys: paths relative to the "
			  "input folder)", file);
	else if (matched < n)
		prog_info("%zu of %zu entries of '%s' %s no input",
			  n - matched, n, file,
			  prog_plural(n - matched, "names", "name"));
	if (matched > 0 && warn_unused_labels(file, lt, hit))
		goto nomem;
	if (unlabelled > 0)
		prog_warn("'%s' and %zu more clips are not in '%s': label -1",
			  quote_name_buf(q, sizeof(q), example),
			  unlabelled - 1, file);
	err = 0;
	goto out;
nomem:
	prog_err("out of memory reading '%s'", file);
out:
	free(hit);
	free(example);
	return err;
}

int labels_from_file(struct clip_list *cl, const char *file,
		     struct label_table *lt)
{
	struct name *names = NULL;
	int32_t *ids = NULL;
	size_t i;
	int err = -1;

	memset(lt, 0, sizeof(*lt));
	lt->mode = 2;
	if (read_entries(file, &lt->text, &lt->ent, &lt->n_ent) ||
	    check_conflicts(file, lt->ent, lt->n_ent))
		goto out;
	names = malloc((lt->n_ent ? lt->n_ent : 1) * sizeof(*names));
	ids = malloc((lt->n_ent ? lt->n_ent : 1) * sizeof(*ids));
	if (names == NULL || ids == NULL)
		goto nomem;
	for (i = 0; i < lt->n_ent; i++) {
		names[i].s = lt->ent[i].label;
		names[i].len = strlen(lt->ent[i].label);
		names[i].idx = i;
	}
	if (make_table(names, lt->n_ent, lt, ids))
		goto nomem;
	for (i = 0; i < lt->n_ent; i++)
		lt->ent[i].id = ids[i];
	err = check_entries(cl, file, lt);
	goto out;
nomem:
	prog_err("out of memory reading '%s'", file);
out:
	free(names);
	free(ids);
	return err;
}
