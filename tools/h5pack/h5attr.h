/*
 * h5attr.h - attributes of the melpipe HDF5 layout (formats/hdf5.md) and
 * the string type its string datasets share.
 *
 * The functions print nothing; they return 0, or -1 when the library
 * failed (its error stack says why) or memory ran out.
 */
#ifndef MELPIPE_H5ATTR_H
#define MELPIPE_H5ATTR_H

#include <hdf5.h>

#include "../../lib/rec.h"

/* A new variable-length UTF-8 string type (close it with H5Tclose()), or
 * a negative id. */
hid_t h5attr_utf8_type(void);

/* A scalar string attribute name = value on loc. */
int h5attr_string(hid_t loc, const char *name, const char *value);

/* The root attributes: melpipe_hdf5_version = version, provenance (the
 * header's stage entries), stream_header (every pair as key=value) and one
 * attribute per other key, typed for the numeric keys. */
int h5attr_header(hid_t loc, const rec_header *hdr, int version);

#endif
