/*
 * split.c - training/validation/testing splits: Speech Commands list
 * files, or the hash of TensorFlow's speech_commands input_data.py
 * which_set(), which keeps every recording of one speaker's word in one
 * split whatever else is added to the dataset.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../lib/opt.h"
#include "../../lib/rec.h"
#include "../common/prog.h"
#include "wavcat.h"

/* input_data.py: MAX_NUM_WAVS_PER_CLASS = 2**27 - 1 */
#define MAX_NUM_WAVS_PER_CLASS 134217727u

#define NOHASH "_nohash_"

/* The length of the part of name hashed by which_set(): Python's
 * re.sub(r'_nohash_.*$', '', name) removes the first "_nohash_" from
 * which '.*$' reaches the end: '.' stops at a newline, and '$' also
 * matches before a newline that ends the string, which is then kept
 * (*keep_nl). */
static size_t hash_name_len(const char *name, int *keep_nl)
{
	size_t len = strlen(name);
	const char *p = name;

	*keep_nl = 0;
	while ((p = strstr(p, NOHASH)) != NULL) {
		const char *nl = strchr(p + strlen(NOHASH), '\n');

		if (nl == NULL)
			return (size_t)(p - name);
		if (nl == name + len - 1) {
			*keep_nl = 1;
			return (size_t)(p - name);
		}
		p++;
	}
	return len;
}

int split_which_set(const char *path, double val_pct, double test_pct)
{
	const char *base = strrchr(path, '/');
	unsigned char md[20];
	struct sha1_ctx c;
	uint32_t low;
	double pct;
	size_t len;
	int keep_nl;

	base = base ? base + 1 : path;
	len = hash_name_len(base, &keep_nl);
	sha1_init(&c);
	sha1_update(&c, base, len);
	if (keep_nl)
		sha1_update(&c, "\n", 1);
	sha1_final(&c, md);
	/* int(hexdigest, 16) % 2**27: the low 27 bits of the big-endian
	 * digest, then scaled exactly as Python does in double. */
	low = ((uint32_t)md[16] << 24 | (uint32_t)md[17] << 16 |
	       (uint32_t)md[18] << 8 | md[19]) &
	      MAX_NUM_WAVS_PER_CLASS;
	pct = (double)low * (100.0 / (double)MAX_NUM_WAVS_PER_CLASS);
	if (pct < val_pct)
		return REC_SPLIT_VALIDATION;
	if (pct < test_pct + val_pct)
		return REC_SPLIT_TESTING;
	return REC_SPLIT_TRAINING;
}

/* Parses a percentage of the hash split. */
static int parse_pct(const char *s, double *out)
{
	return opt_parse_double(s, 0.0, 100.0, out) ? -1 : 0;
}

int split_parse(const char *arg, struct split_opts *o)
{
	char buf[128];
	char *colon;

	if (strcmp(arg, "none") == 0) {
		o->mode = SPLIT_NONE;
		return 0;
	}
	if (strcmp(arg, "lists") == 0) {
		o->mode = SPLIT_LISTS;
		return 0;
	}
	if (strncmp(arg, "hash:", 5) != 0 || strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg + 5);
	colon = strchr(buf, ':');
	if (colon == NULL)
		return -1;
	*colon = '\0';
	if (parse_pct(buf, &o->val_pct) || parse_pct(colon + 1, &o->test_pct))
		return -1;
	if (o->val_pct + o->test_pct > 100.0)
		return -1;
	o->mode = SPLIT_HASH;
	return 0;
}

/* A Speech Commands list: the keys it names, sorted. */
struct split_list {
	char *file;          /* its path, for messages */
	char *text;          /* the file's bytes, lines cut in place */
	char **v;
	size_t n;
	int root;            /* the input folder it belongs to, -1: any */
	int split;           /* REC_SPLIT_VALIDATION or _TESTING */
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Loads a list file: one key per line, a trailing CR dropped, empty
 * lines ignored, a leading "./" dropped (as `find .` writes paths, and
 * keys never have one). Returns 0 or -1 after printing why. */
static int list_load(struct split_list *l, const char *file, int root,
		     int split)
{
	size_t len, n = 0, cap = 0;
	char *p, *end, *eol;
	char **nv;

	memset(l, 0, sizeof(*l));
	l->root = root;
	l->split = split;
	l->file = strdup(file);
	l->text = read_file(file, &len);
	if (l->file == NULL || l->text == NULL) {
		prog_err("unable to read '%s': %s", file, strerror(errno));
		return -1;
	}
	for (p = l->text, end = l->text + len; p < end; p = eol + 1) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			eol = end;
		*eol = '\0';
		if (eol > p && eol[-1] == '\r')
			eol[-1] = '\0';
		while (p[0] == '.' && p[1] == '/')
			p += 2;
		if (*p == '\0')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			nv = realloc(l->v, cap * sizeof(*nv));
			if (nv == NULL) {
				prog_err("out of memory reading '%s'", file);
				return -1;
			}
			l->v = nv;
		}
		l->v[n++] = p;
	}
	l->n = n;
	if (n > 0)
		qsort(l->v, n, sizeof(*l->v), cmp_str);
	return 0;
}

static void list_free(struct split_list *l)
{
	free(l->file);
	free(l->text);
	free(l->v);
}

/* The first entry of l that is key or after it. */
static size_t list_lower(const struct split_list *l, const char *key)
{
	size_t lo = 0, hi = l->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(l->v[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether l applies to clip c and names its key. */
static int list_names(const struct split_list *l, const struct clip *c,
		      size_t *at)
{
	if (l->root >= 0 && l->root != c->root)
		return 0;
	*at = list_lower(l, c->key);
	return *at < l->n && strcmp(l->v[*at], c->key) == 0;
}

/* Whether the clips list l applies to came from walking folders, where
 * every file is an input, rather than only from paths named one by one
 * (in lists, or as arguments): a subset chosen on purpose. */
static int walked(const struct clip_list *cl, const struct split_list *l)
{
	size_t folders = cl->n_roots - (cl->root_dir && !cl->root_walked);

	if (l->root < 0) /* --validation-list, --testing-list: every clip */
		return folders > 0;
	return !cl->root_dir || l->root != cl->root_idx || cl->root_walked;
}

/* Says when a list's entries name no input: most likely its paths are not
 * relative to the folder the keys are relative to. m of them do. A few
 * unmatched entries are warned about too where the inputs are folders: a
 * clip the list meant for testing would otherwise go to training without
 * a word. Inputs named one by one are a subset: a list naming others is
 * expected, and said only with -v. */
static void list_report(const struct clip_list *cl,
			const struct split_list *l, size_t m)
{
	if (l->n > 0 && m == 0)
		prog_warn("no entry of '%s' names an input (entries are "
			  "matched against keys: paths relative to the "
			  "input folder)", l->file);
	else if (m < l->n && walked(cl, l))
		prog_warn("%zu of %zu entries of '%s' %s no input (the "
			  "%s, if any, %s not in its split)",
			  l->n - m, l->n, l->file,
			  prog_plural(l->n - m, "names", "name"),
			  prog_plural(l->n - m, "clip it meant",
				      "clips they meant"),
			  prog_plural(l->n - m, "is", "are"));
	else if (m < l->n)
		prog_info("%zu of %zu entries of '%s' %s no input (the "
			  "inputs, named one by one, are a subset)",
			  l->n - m, l->n, l->file,
			  prog_plural(l->n - m, "names", "name"));
}

/* Counts, in one pass over the clips, the entries of each list that name
 * a clip (of the list's folder), and reports the lists. */
static int check_lists(struct clip_list *cl, const struct splitter *sp)
{
	unsigned char **hit = calloc(sp->n_lists, sizeof(*hit));
	size_t *m = calloc(sp->n_lists, sizeof(*m));
	const struct split_list *l;
	size_t i, at;
	struct clip c;
	int got, err = -1;

	if (hit == NULL || m == NULL)
		goto nomem;
	for (i = 0; i < sp->n_lists; i++) {
		hit[i] = calloc(sp->lists[i].n ? sp->lists[i].n : 1, 1);
		if (hit[i] == NULL)
			goto nomem;
	}
	if (inputs_rewind(cl))
		goto out;
	while ((got = inputs_next(cl, &c)) > 0) {
		for (i = 0; i < sp->n_lists; i++) {
			l = &sp->lists[i];
			if (!list_names(l, &c, &at))
				continue;
			for (; at < l->n && !hit[i][at] &&
			       strcmp(l->v[at], c.key) == 0; at++) {
				hit[i][at] = 1;
				m[i]++;
			}
		}
	}
	if (got < 0)
		goto out;
	for (i = 0; i < sp->n_lists; i++)
		list_report(cl, &sp->lists[i], m[i]);
	err = 0;
	goto out;
nomem:
	prog_err("out of memory");
out:
	for (i = 0; hit && i < sp->n_lists; i++)
		free(hit[i]);
	free(hit);
	free(m);
	return err;
}

/* Adds the list file at path to sp's lists when it exists. Returns 0, or
 * -1 after printing why. */
static int try_list(struct splitter *sp, const char *path, int root,
		    int split, int must_exist)
{
	struct stat st;

	if (!must_exist && (stat(path, &st) != 0 || !S_ISREG(st.st_mode)))
		return 0;
	if (list_load(&sp->lists[sp->n_lists], path, root, split)) {
		list_free(&sp->lists[sp->n_lists]);
		return -1;
	}
	sp->n_lists++;
	return 0;
}

/* Finds validation_list.txt and testing_list.txt at the root of every
 * input folder. */
static int find_root_lists(const struct clip_list *cl, struct splitter *sp)
{
	static const char *const names[2] = { "validation_list.txt",
					       "testing_list.txt" };
	static const int splits[2] = { REC_SPLIT_VALIDATION,
				       REC_SPLIT_TESTING };
	char *path;
	size_t r;
	int k, err;

	for (r = 0; r < cl->n_roots; r++) {
		for (k = 0; k < 2; k++) {
			if (asprintf(&path, "%s/%s", cl->roots[r],
				     names[k]) < 0) {
				prog_err("out of memory");
				return -1;
			}
			err = try_list(sp, path, (int)r, splits[k], 0);
			free(path);
			if (err)
				return -1;
		}
	}
	return 0;
}

/* The split of a clip under the lists: validation wins over testing. */
static int split_by_lists(const struct clip *c, const struct splitter *sp)
{
	int split = REC_SPLIT_TRAINING;
	size_t i, at;

	for (i = 0; i < sp->n_lists; i++) {
		if (!list_names(&sp->lists[i], c, &at))
			continue;
		if (sp->lists[i].split == REC_SPLIT_VALIDATION)
			return REC_SPLIT_VALIDATION;
		split = sp->lists[i].split;
	}
	return split;
}

int split_of(const struct splitter *sp, const struct clip *c)
{
	switch (sp->mode) {
	case SPLIT_HASH:
		return split_which_set(c->key, sp->val_pct, sp->test_pct);
	case SPLIT_LISTS:
		return split_by_lists(c, sp);
	default:
		return REC_SPLIT_NONE;
	}
}

void split_free(struct splitter *sp)
{
	size_t i;

	for (i = 0; i < sp->n_lists; i++)
		list_free(&sp->lists[i]);
	free(sp->lists);
	memset(sp, 0, sizeof(*sp));
	sp->mode = SPLIT_NONE;
}

/* Loads the lists (named, or at the folders' roots) and checks them.
 * *found is set to whether there were any. */
static int assign_lists(struct clip_list *cl, const struct split_opts *o,
			struct splitter *sp, int *found)
{
	sp->lists = calloc(2 * cl->n_roots + 2, sizeof(*sp->lists));
	if (sp->lists == NULL) {
		prog_err("out of memory");
		return -1;
	}
	if (o->val_list || o->test_list) {
		if (o->val_list && try_list(sp, o->val_list, -1,
					     REC_SPLIT_VALIDATION, 1))
			return -1;
		if (o->test_list && try_list(sp, o->test_list, -1,
					      REC_SPLIT_TESTING, 1))
			return -1;
	} else if (find_root_lists(cl, sp)) {
		return -1;
	}
	*found = sp->n_lists > 0;
	if (sp->n_lists == 0)
		return 0;
	sp->mode = SPLIT_LISTS;
	return check_lists(cl, sp);
}

/* Formats a percentage with the fewest digits that read back the same,
 * without an exponent where one is not needed ("10", "12.5"). */
static void fmt_pct(char *buf, size_t size, double v)
{
	int prec;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v && strchr(buf, 'e') == NULL)
			return;
	}
	snprintf(buf, size, "%.17g", v);
}

int split_assign(struct clip_list *cl, const struct split_opts *o,
		 struct splitter *sp, char *desc, size_t desc_size)
{
	char v[32], t[32];
	int found = 0;

	memset(sp, 0, sizeof(*sp));
	sp->mode = SPLIT_NONE;
	snprintf(desc, desc_size, "none");
	switch (o->mode) {
	case SPLIT_NONE:
		return 0;
	case SPLIT_HASH:
		sp->mode = SPLIT_HASH;
		sp->val_pct = o->val_pct;
		sp->test_pct = o->test_pct;
		fmt_pct(v, sizeof(v), o->val_pct);
		fmt_pct(t, sizeof(t), o->test_pct);
		snprintf(desc, desc_size, "hash:%s:%s", v, t);
		return 0;
	case SPLIT_AUTO:
	case SPLIT_LISTS:
		break;
	}
	if (assign_lists(cl, o, sp, &found))
		return -1;
	if (found) {
		snprintf(desc, desc_size, "lists");
	} else if (o->mode == SPLIT_LISTS) {
		prog_err("--split lists: no validation_list.txt or "
			 "testing_list.txt at the root of an input folder "
			 "(name them with --validation-list/--testing-list)");
		return -1;
	}
	return 0;
}
