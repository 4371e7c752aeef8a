/*
 * notstream.c - what an input that is no record stream plainly is
 * (notstream.h).
 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "notstream.h"
#include "prog.h"

/*
 * What people give a stage by mistake, told by the first bytes: an HDF5
 * file (h5pack's output) or an audio file (wavcat's input). magic2, when
 * set, is at byte 8 (the form type of RIFF and IFF files).
 */
static const struct {
	const char *magic, *magic2, *what;
} not_streams[] = {
	{ "\x89HDF\r\n\x1a\n", NULL, "an HDF5 file "
	  "(h5dump or scripts/h5info.py read it)" },
	{ "RIFF", "WAVE", "an audio file (WAV); wavcat "
	  "reads audio files" },
	{ "RF64", "WAVE", "an audio file (RF64); wavcat "
	  "reads audio files" },
	{ "FORM", "AIF", "an audio file (AIFF); wavcat "
	  "reads audio files" },
	{ "fLaC", NULL, "an audio file (FLAC); wavcat "
	  "reads audio files" },
	{ "OggS", NULL, "an audio file (Ogg); wavcat "
	  "reads audio files" },
};

/* Whether the n bytes of buf hold string s at offset off. */
static int has_at(const unsigned char *buf, size_t n, size_t off,
		  const char *s)
{
	return n >= off + strlen(s) && !memcmp(buf + off, s, strlen(s));
}

/* What the file on fd is when it is one of not_streams, else NULL. It is
 * read again from its start, so a pipe (whose bytes the reader took)
 * gives NULL. */
static const char *not_stream_kind(int fd)
{
	unsigned char buf[12];
	ssize_t got = pread(fd, buf, sizeof(buf), 0);
	size_t n = got > 0 ? (size_t)got : 0;

	for (size_t i = 0; i < sizeof(not_streams) / sizeof(*not_streams);
	     i++)
		if (has_at(buf, n, 0, not_streams[i].magic) &&
		    (!not_streams[i].magic2 ||
		     has_at(buf, n, 8, not_streams[i].magic2)))
			return not_streams[i].what;
	return NULL;
}

/* Whether fd is a pipe or fifo (an empty one: its writer wrote nothing). */
static int is_pipe(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

void prog_open_failed(const rec_reader *r, int err, int fd)
{
	const char *detail = r && rec_reader_detail(r)[0] ?
			     rec_reader_detail(r) : rec_strerror(err);
	int at_start = r && rec_reader_offset(r) == 0;
	const char *what = at_start && err == REC_E_MAGIC ?
			   not_stream_kind(fd) : NULL;

	if (what)
		prog_err("%s: this is %s", detail, what);
	else if (at_start && err == REC_E_TRUNC && is_pipe(fd))
		prog_err("%s: the stage before wrote nothing (its message, "
			 "if any, is above)", detail);
	else
		prog_err("%s", detail);
}
