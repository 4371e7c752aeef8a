/*
 * extensions.c - which file names wavcat takes for audio when it walks a
 * folder: the extensions of the formats this libsndfile reads, and the
 * other names those formats go by.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sndfile.h>

#include "wavcat.h"

#define MAX_EXTS 64

static char exts[MAX_EXTS][16];
static size_t n_exts;

/* Copies the n bytes of e in lower case (ASCII) into out, with a NUL. */
static void lower(char *out, const char *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = e[i] >= 'A' && e[i] <= 'Z' ? (char)(e[i] - 'A' + 'a') :
						      e[i];
	out[n] = '\0';
}

/* Adds e, in lower case, once. */
static void add_ext(const char *e)
{
	char low[sizeof(exts[0])];
	size_t i, n = e ? strlen(e) : 0;

	if (n == 0 || n >= sizeof(exts[0]))
		return;
	lower(low, e, n);
	for (i = 0; i < n_exts; i++)
		if (strcmp(exts[i], low) == 0)
			return;
	if (n_exts < MAX_EXTS)
		strcpy(exts[n_exts++], low);
}

static int cmp_ext(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Other names in common use for the formats libsndfile knows. */
static void add_aliases(int major)
{
	switch (major) {
	case SF_FORMAT_WAV:
		add_ext("wave");
		break;
	case SF_FORMAT_AIFF:
		add_ext("aif");
		add_ext("aifc");
		break;
	case SF_FORMAT_AU:
		add_ext("snd");
		break;
	case SF_FORMAT_OGG:
		add_ext("ogg");
		add_ext("opus");
		break;
	case SF_FORMAT_NIST:
		add_ext("sph");
		break;
	case SF_FORMAT_SVX:
		add_ext("svx");
		break;
	case SF_FORMAT_MPEG:
		add_ext("mp3");
		add_ext("mp2");
		break;
	default:
		break;
	}
}

/* The extensions of every major format this libsndfile reads, except
 * headerless raw (nothing to decode it by) and MATLAB .mat files (data
 * folders hold .mat files that are not audio). */
static void init_exts(void)
{
	SF_FORMAT_INFO fi;
	int count = 0, i;

	if (n_exts > 0)
		return;
	sf_command(NULL, SFC_GET_FORMAT_MAJOR_COUNT, &count, sizeof(count));
	for (i = 0; i < count; i++) {
		memset(&fi, 0, sizeof(fi));
		fi.format = i;
		if (sf_command(NULL, SFC_GET_FORMAT_MAJOR, &fi, sizeof(fi)))
			continue;
		if (fi.format == SF_FORMAT_RAW || fi.format == SF_FORMAT_MAT4 ||
		    fi.format == SF_FORMAT_MAT5)
			continue;
		add_ext(fi.extension);
		add_aliases(fi.format);
	}
	qsort(exts, n_exts, sizeof(exts[0]), cmp_ext);
}

/* In any case: the extension in lower case, looked up in the sorted
 * table (strcasecmp down the whole table was most of walking a folder,
 * which the stream's header waits for). */
int inputs_is_audio_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	char low[sizeof(exts[0])];
	size_t n;

	init_exts();
	if (dot == NULL || dot == name || dot[1] == '\0')
		return 0;
	n = strlen(dot + 1);
	if (n >= sizeof(low))
		return 0;
	lower(low, dot + 1, n);
	return bsearch(low, exts, n_exts, sizeof(exts[0]), cmp_ext) != NULL;
}

void inputs_print_extensions(FILE *f, int indent, int width)
{
	int col = indent;
	size_t i;

	init_exts();
	fprintf(f, "%*s", indent, "");
	for (i = 0; i < n_exts; i++) {
		int w = (int)strlen(exts[i]) + 2;

		if (i > 0 && col + w > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (i > 0) {
			fputc(' ', f);
		}
		fprintf(f, ".%s", exts[i]);
		col += w;
	}
	fputc('\n', f);
}
