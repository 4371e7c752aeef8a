/*
 * rec_names.c - the names of the record format's codes: error texts
 * (rec_strerror), element types, splits and record types, as messages
 * and recdump print them.
 */
#include <string.h>

#include "rec.h"
#include "rec_int.h"

const char *rec_strerror(int err)
{
	switch (err) {
	case REC_OK: return "success";
	case REC_END: return "end of stream";
	case REC_E_NOMEM: return "out of memory";
	case REC_E_IO: return "input/output error";
	case REC_E_EPIPE: return "output closed by its reader";
	case REC_E_MAGIC: return "not a record stream";
	case REC_E_VERSION: return "unsupported format version";
	case REC_E_CRC: return "checksum mismatch";
	case REC_E_TOOBIG: return "record larger than the size cap";
	case REC_E_TRUNC: return "truncated stream";
	case REC_E_FORMAT: return "malformed record";
	case REC_E_ORDER: return "record out of order";
	case REC_E_TRAILING: return "data after the trailer";
	case REC_E_ZSTD: return "payload does not decompress";
	case REC_E_INVAL: return "invalid argument";
	}
	return "unknown error";
}

const char *rec_dtype_name(int dtype)
{
	switch (dtype) {
	case REC_S16: return "s16";
	case REC_F32: return "f32";
	case REC_F16: return "f16";
	case REC_BF16: return "bf16";
	}
	return NULL;
}

int rec_dtype_parse(const char *name)
{
	for (int d = REC_S16; d <= REC_BF16; d++)
		if (name && strcmp(name, rec_dtype_name(d)) == 0)
			return d;
	return 0;
}

const char *rec_split_name(int split)
{
	static const char *const names[] = {
		"none", "training", "validation", "testing"
	};

	if (split < 0 || split > REC_SPLIT_TESTING)
		return NULL;
	return names[split];
}

const char *rec_type_name(int type)
{
	switch (type) {
	case REC_T_HEADER: return "header";
	case REC_T_AUDIO: return "audio";
	case REC_T_FEATURES: return "features";
	case REC_T_SKIPPED: return "skipped";
	case REC_T_TRAILER: return "trailer";
	case REC_T_WINDOWS: return "windows";
	case REC_T_SOURCE: return "source";
	case REC_T_RING: return "ring";
	case REC_T_FWINDOWS: return "features-windows";
	}
	return "unknown";
}
