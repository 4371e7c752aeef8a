/*
 * notstream.h - the message for an input that no record stream could be
 * read from, with what it plainly is when that tells the user the way
 * out: an HDF5 or audio file given to a stage by mistake, or a pipe that
 * ended before its first byte because the stage before wrote nothing.
 */
#ifndef MELPIPE_NOTSTREAM_H
#define MELPIPE_NOTSTREAM_H

#include "../../lib/rec.h"

/* One line (prog_err) for rec_reader_open()'s failure err on fd: the
 * reader's detail (or err's text), and what the input is when it is one
 * of the above. */
void prog_open_failed(const rec_reader *r, int err, int fd);

#endif
