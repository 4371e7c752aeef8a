/*
 * rec_header.c - the stream header: an ordered list of key/value pairs
 * (keys may repeat), its provenance "stage" entries with their command
 * lines quoted for a POSIX shell, and its serialised form, the header
 * record's metadata.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"
#include "rec_int.h"

struct rec_pair {
	char *key;
	char *value;
};

struct rec_header {
	struct rec_pair *v;
	size_t n, cap;
};

/* Keys are ASCII [a-z0-9_], non-empty. */
int rec_key_valid(const char *k, size_t len)
{
	if (len == 0)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = k[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return 0;
	}
	return 1;
}

rec_header *rec_header_new(void)
{
	return calloc(1, sizeof(rec_header));
}

void rec_header_free(rec_header *h)
{
	if (h == NULL)
		return;
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].key);
		free(h->v[i].value);
	}
	free(h->v);
	free(h);
}

int rec_header_append(rec_header *h, const char *k, size_t klen,
		      const char *v, size_t vlen)
{
	char *kc, *vc;

	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 16;
		struct rec_pair *nv = realloc(h->v, cap * sizeof(*nv));

		if (nv == NULL)
			return REC_E_NOMEM;
		h->v = nv;
		h->cap = cap;
	}
	kc = malloc(klen + 1);
	vc = malloc(vlen + 1);
	if (kc == NULL || vc == NULL) {
		free(kc);
		free(vc);
		return REC_E_NOMEM;
	}
	memcpy(kc, k, klen);
	kc[klen] = '\0';
	memcpy(vc, v, vlen);
	vc[vlen] = '\0';
	h->v[h->n].key = kc;
	h->v[h->n].value = vc;
	h->n++;
	return REC_OK;
}

rec_header *rec_header_dup(const rec_header *h)
{
	rec_header *d = rec_header_new();

	if (d == NULL || h == NULL)
		return d;
	for (size_t i = 0; i < h->n; i++) {
		const struct rec_pair *p = &h->v[i];

		if (rec_header_append(d, p->key, strlen(p->key), p->value,
				      strlen(p->value))) {
			rec_header_free(d);
			return NULL;
		}
	}
	return d;
}

int rec_header_add(rec_header *h, const char *key, const char *value)
{
	if (h == NULL || key == NULL || value == NULL ||
	    !rec_key_valid(key, strlen(key)))
		return REC_E_INVAL;
	return rec_header_append(h, key, strlen(key), value, strlen(value));
}

/* Removes the pairs with this key from pair `from` on, keeping the order
 * of the rest. */
static void drop_pairs(rec_header *h, const char *key, size_t from)
{
	size_t i, j;

	for (i = j = from; i < h->n; i++) {
		if (strcmp(h->v[i].key, key) == 0) {
			free(h->v[i].key);
			free(h->v[i].value);
		} else {
			h->v[j++] = h->v[i];
		}
	}
	h->n = j;
}

int rec_header_set(rec_header *h, const char *key, const char *value)
{
	size_t i;
	char *vc;

	if (h == NULL || key == NULL || value == NULL ||
	    !rec_key_valid(key, strlen(key)))
		return REC_E_INVAL;
	for (i = 0; i < h->n; i++)
		if (strcmp(h->v[i].key, key) == 0)
			break;
	if (i == h->n)
		return rec_header_append(h, key, strlen(key), value,
					 strlen(value));
	vc = strdup(value);
	if (vc == NULL)
		return REC_E_NOMEM;
	free(h->v[i].value);
	h->v[i].value = vc;
	drop_pairs(h, key, i + 1);
	return REC_OK;
}

int rec_header_set_u64(rec_header *h, const char *key, uint64_t value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, value);
	return rec_header_set(h, key, buf);
}

int rec_header_set_double(rec_header *h, const char *key, double value)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.17g", value);
	return rec_header_set(h, key, buf);
}

void rec_header_del(rec_header *h, const char *key)
{
	if (h == NULL || key == NULL)
		return;
	drop_pairs(h, key, 0);
}

const char *rec_header_get(const rec_header *h, const char *key)
{
	return rec_header_get_nth(h, key, 0);
}

size_t rec_header_count(const rec_header *h, const char *key)
{
	size_t n = 0;

	if (h == NULL || key == NULL)
		return 0;
	for (size_t i = 0; i < h->n; i++)
		n += strcmp(h->v[i].key, key) == 0;
	return n;
}

const char *rec_header_get_nth(const rec_header *h, const char *key,
			       size_t n)
{
	if (h == NULL || key == NULL)
		return NULL;
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->v[i].key, key) == 0 && n-- == 0)
			return h->v[i].value;
	return NULL;
}

size_t rec_header_len(const rec_header *h)
{
	return h ? h->n : 0;
}

void rec_header_entry(const rec_header *h, size_t i, const char **key,
		      const char **value)
{
	const char *k = NULL, *v = NULL;

	if (h && i < h->n) {
		k = h->v[i].key;
		v = h->v[i].value;
	}
	if (key)
		*key = k;
	if (value)
		*value = v;
}

/* A growable string for building stage entries. */
struct strbuf {
	char *s;
	size_t len, cap;
	int err;
};

static void sb_add(struct strbuf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *ns;

		while (cap < b->len + n + 1)
			cap *= 2;
		ns = realloc(b->s, cap);
		if (ns == NULL) {
			b->err = 1;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_str(struct strbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* Characters a POSIX shell takes literally in a word. */
static int shell_safe(const char *s)
{
	static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "abcdefghijklmnopqrstuvwxyz"
				   "0123456789_@%+=:,./-";

	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!strchr(safe, *s))
			return 0;
	return 1;
}

/* Appends s quoted so that sh reads it back as one word: 'a b', 'it'\''s',
 * and '' for the empty string. */
static void sb_shell_quote(struct strbuf *b, const char *s)
{
	if (shell_safe(s)) {
		sb_str(b, s);
		return;
	}
	sb_add(b, "'", 1);
	for (; *s; s++) {
		if (*s == '\'')
			sb_str(b, "'\\''");
		else
			sb_add(b, s, 1);
	}
	sb_add(b, "'", 1);
}

int rec_header_add_stage(rec_header *h, const char *prog,
			 const char *version, int argc, char *const argv[])
{
	struct strbuf b = { 0 };
	int err;

	if (h == NULL || prog == NULL || version == NULL || argc < 0 ||
	    (argc > 0 && argv == NULL))
		return REC_E_INVAL;
	sb_str(&b, prog);
	sb_str(&b, " ");
	sb_str(&b, version);
	sb_str(&b, "\t");
	for (int i = 0; i < argc; i++) {
		if (i > 0)
			sb_str(&b, " ");
		sb_shell_quote(&b, argv[i] ? argv[i] : "");
	}
	if (b.err)
		err = REC_E_NOMEM;
	else
		err = rec_header_add(h, "stage", b.s);
	free(b.s);
	return err;
}

/* The metadata is key NUL value NUL for each pair, in order. */
size_t rec_header_meta_size(const rec_header *h)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n; i++)
		n += strlen(h->v[i].key) + strlen(h->v[i].value) + 2;
	return n;
}

void rec_header_serialise(const rec_header *h, unsigned char *p)
{
	for (size_t i = 0; i < h->n; i++) {
		size_t kl = strlen(h->v[i].key) + 1;
		size_t vl = strlen(h->v[i].value) + 1;

		memcpy(p, h->v[i].key, kl);
		p += kl;
		memcpy(p, h->v[i].value, vl);
		p += vl;
	}
}
