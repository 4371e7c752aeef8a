/*
 * h5attr.c - the attributes of a melpipe HDF5 file: the stream header as
 * typed root attributes, the provenance chain, the verbatim header.
 * formats/hdf5.md specifies them.
 */
#include "h5attr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hid_t h5attr_utf8_type(void)
{
	hid_t t = H5Tcopy(H5T_C_S1);

	if (t >= 0 && (H5Tset_size(t, H5T_VARIABLE) < 0 ||
		       H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
		H5Tclose(t);
		t = H5I_INVALID_HID;
	}
	return t;
}

static int attr(hid_t loc, const char *name, hid_t ftype, hid_t mtype,
		hid_t space, const void *buf)
{
	hid_t a = H5Acreate2(loc, name, ftype, space, H5P_DEFAULT,
			     H5P_DEFAULT);
	int ret = -1;

	if (a < 0)
		return -1;
	if (H5Awrite(a, mtype, buf) >= 0)
		ret = 0;
	if (H5Aclose(a) < 0)
		ret = -1;
	return ret;
}

static int attr_scalar(hid_t loc, const char *name, hid_t ftype,
		       hid_t mtype, const void *buf)
{
	hid_t space = H5Screate(H5S_SCALAR);
	int ret;

	if (space < 0)
		return -1;
	ret = attr(loc, name, ftype, mtype, space, buf);
	H5Sclose(space);
	return ret;
}

int h5attr_string(hid_t loc, const char *name, const char *value)
{
	hid_t t = h5attr_utf8_type();
	int ret;

	if (t < 0)
		return -1;
	ret = attr_scalar(loc, name, t, t, &value);
	H5Tclose(t);
	return ret;
}

static int attr_strings(hid_t loc, const char *name, const char **v,
			size_t n)
{
	hsize_t dims[1] = { n };
	hid_t t = h5attr_utf8_type();
	hid_t space = H5Screate_simple(1, dims, NULL);
	int ret = -1;

	if (t >= 0 && space >= 0)
		ret = attr(loc, name, t, t, space, v);
	if (t >= 0)
		H5Tclose(t);
	if (space >= 0)
		H5Sclose(space);
	return ret;
}

/* Header keys with a numeric meaning get a typed attribute. */
static const char *const int_keys[] = {
	"sample_rate", "duration", "clips", "segment_len", "segment_hop",
	"n_fft", "win_length", "hop_length", "n_mels", "n_features", "center",
	"snip_edges", "remove_dc_offset", "use_energy", "raw_energy", "seed",
	"n_mfcc", NULL
};
static const char *const float_keys[] = {
	"fmin", "fmax", "power", "amin", "top_db", "dither", "preemphasis",
	"energy_floor", "cepstral_lifter", NULL
};
/* Keys that have their own place (datasets, the provenance array) or
 * whose name h5pack's own attributes take. */
static const char *const list_keys[] = {
	"label", "stage", "shard_stage", "melpipe_hdf5_version",
	"provenance", "stream_header", "layout", NULL
};

static int in_list(const char *const *list, const char *key)
{
	for (; *list; list++)
		if (!strcmp(*list, key))
			return 1;
	return 0;
}

/* One header key as a root attribute: an int64 or float64 when the key
 * is numeric and its value parses, else the string; a key that repeats
 * becomes an array of strings. */
static int key_attr(hid_t loc, const rec_header *hdr, const char *key)
{
	size_t n = rec_header_count(hdr, key);
	const char *v = rec_header_get(hdr, key);
	char *end;

	if (n > 1) {
		const char **vs = malloc(n * sizeof(*vs));
		int ret;

		if (!vs)
			return -1;
		for (size_t i = 0; i < n; i++)
			vs[i] = rec_header_get_nth(hdr, key, i);
		ret = attr_strings(loc, key, vs, n);
		free(vs);
		return ret;
	}
	if (in_list(int_keys, key)) {
		long long i = strtoll(v, &end, 10);

		if (*v && !*end)
			return attr_scalar(loc, key, H5T_STD_I64LE,
					   H5T_NATIVE_LLONG, &i);
	} else if (in_list(float_keys, key)) {
		double d = strtod(v, &end);

		if (*v && !*end && isfinite(d))
			return attr_scalar(loc, key, H5T_IEEE_F64LE,
					   H5T_NATIVE_DOUBLE, &d);
	}
	return h5attr_string(loc, key, v);
}

/* stream_header: every pair as "key=value", in order. */
static int header_attr(hid_t loc, const rec_header *hdr)
{
	size_t n = rec_header_len(hdr), total = 0;
	const char **v = malloc((n ? n : 1) * sizeof(*v));
	char *buf = NULL, *p;
	int ret = -1;

	for (size_t i = 0; i < n; i++) {
		const char *k, *val;

		rec_header_entry(hdr, i, &k, &val);
		total += strlen(k) + strlen(val) + 2;
	}
	buf = malloc(total ? total : 1);
	if (!v || !buf)
		goto out;
	p = buf;
	for (size_t i = 0; i < n; i++) {
		const char *k, *val;

		rec_header_entry(hdr, i, &k, &val);
		v[i] = p;
		p += sprintf(p, "%s=%s", k, val) + 1;
	}
	ret = attr_strings(loc, "stream_header", v, n);
out:
	free(v);
	free(buf);
	return ret;
}

/* Is the pair a step of the provenance: a stage, or a merged shard's
 * stage (shard_stage, "K/N" TAB its stage value)? */
static int is_provenance(const char *key)
{
	return !strcmp(key, "stage") || !strcmp(key, "shard_stage");
}

/* provenance: the stage and shard_stage values in header order. */
static int provenance_attr(hid_t loc, const rec_header *hdr)
{
	size_t len = rec_header_len(hdr), n = 0;
	const char **v = malloc((len ? len : 1) * sizeof(*v));
	int ret;

	if (!v)
		return -1;
	for (size_t i = 0; i < len; i++) {
		const char *k, *val;

		rec_header_entry(hdr, i, &k, &val);
		if (is_provenance(k))
			v[n++] = val;
	}
	ret = attr_strings(loc, "provenance", v, n);
	free(v);
	return ret;
}

/* Is this the first pair with its key? (Each key gets one attribute.) */
static int first_of_key(const rec_header *hdr, size_t i)
{
	const char *key, *k, *v;

	rec_header_entry(hdr, i, &key, &v);
	for (size_t j = 0; j < i; j++) {
		rec_header_entry(hdr, j, &k, &v);
		if (!strcmp(k, key))
			return 0;
	}
	return 1;
}

int h5attr_header(hid_t loc, const rec_header *hdr, int version)
{
	if (attr_scalar(loc, "melpipe_hdf5_version", H5T_STD_I32LE,
			H5T_NATIVE_INT, &version) ||
	    provenance_attr(loc, hdr) || header_attr(loc, hdr))
		return -1;
	for (size_t i = 0; i < rec_header_len(hdr); i++) {
		const char *key, *v;

		rec_header_entry(hdr, i, &key, &v);
		if (in_list(list_keys, key) || !first_of_key(hdr, i))
			continue;
		if (key_attr(loc, hdr, key))
			return -1;
	}
	return 0;
}
