/*
 * quote.c - file names in messages, control bytes escaped (\n, \t,
 * \xHH), so that a message about a file with a newline in its name
 * stays on one line.
 */
#include <stdio.h>
#include <string.h>

#include "wavcat.h"

static size_t escape_byte(char *out, unsigned char c)
{
	switch (c) {
	case '\n':
		return (size_t)sprintf(out, "\\n");
	case '\t':
		return (size_t)sprintf(out, "\\t");
	case '\r':
		return (size_t)sprintf(out, "\\r");
	default:
		if (c < 0x20 || c == 0x7f)
			return (size_t)sprintf(out, "\\x%02x", c);
		out[0] = (char)c;
		out[1] = '\0';
		return 1;
	}
}

const char *quote_name_buf(char *buf, size_t size, const char *s)
{
	char tmp[8];
	size_t n = 0, k;

	if (size == 0)
		return buf;
	for (; *s; s++) {
		k = escape_byte(tmp, (unsigned char)*s);
		if (n + k + 1 > size)
			break;
		memcpy(buf + n, tmp, k);
		n += k;
	}
	buf[n] = '\0';
	return buf;
}

void quote_name(FILE *f, const char *s)
{
	char tmp[8];

	for (; *s; s++) {
		escape_byte(tmp, (unsigned char)*s);
		fputs(tmp, f);
	}
}
