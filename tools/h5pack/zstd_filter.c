/*
 * zstd_filter.c - the HDF5 Zstandard filter (id 32015, level in
 * cd_values[0]).
 *
 * One source, two builds. Linked into h5pack, h5z_zstd_register() adds the
 * filter to the process's HDF5 library. Built with -DH5Z_ZSTD_PLUGIN and
 * -fPIC it becomes bin/plugins/libh5zstd.so, a dynamically loaded filter
 * plugin for HDF5_PLUGIN_PATH (h5dump, h5py without hdf5plugin, ...).
 *
 * The plugin build calls no HDF5 function at all and is linked with
 * -z defs against libzstd only: a reader process may carry an HDF5 library
 * other than the one we compiled against (h5py bundles its own), and a
 * plugin that pulled in a second libhdf5 would act on the wrong library's
 * state. Only the H5Z_class2_t layout and the plugin entry points, stable
 * since HDF5 1.8, are shared with the host. For the same reason buffers are
 * handed back and forth with malloc()/free(), which is what HDF5 uses on
 * Linux (and what hdf5plugin's own zstd filter does).
 */
#include "zstd_filter.h"

#include <stdlib.h>
#include <zstd.h>

#ifdef H5Z_ZSTD_PLUGIN
#include <H5PLextern.h>
#endif

#define DEFAULT_LEVEL 3 /* zstd's own default, when cd_values is empty */

static int filter_level(size_t cd_nelmts, const unsigned int cd_values[])
{
	int level = DEFAULT_LEVEL;

	if (cd_nelmts > 0)
		level = (int)cd_values[0];
	if (level < 1)
		level = 1;
	if (level > ZSTD_maxCLevel())
		level = ZSTD_maxCLevel();
	return level;
}

/* Compresses nbytes of *buf into one frame that records its content size
 * (the decoder of hdf5plugin sizes its output from it). */
static size_t zstd_encode(int level, size_t nbytes, size_t *buf_size,
			  void **buf)
{
	size_t bound = ZSTD_compressBound(nbytes);
	void *out = malloc(bound);
	size_t n;

	if (!out)
		return 0;
	n = ZSTD_compress(out, bound, *buf, nbytes, level);
	if (ZSTD_isError(n)) {
		free(out);
		return 0;
	}
	free(*buf);
	*buf = out;
	*buf_size = bound;
	return n;
}

/* Decompresses frames whose header does not tell their size (written by
 * streaming encoders elsewhere): grows the output as needed. */
static size_t zstd_decode_stream(size_t nbytes, size_t *buf_size, void **buf)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	ZSTD_inBuffer in = { *buf, nbytes, 0 };
	ZSTD_outBuffer out = { NULL, 0, 0 };
	size_t ret = 0, r = 1;

	if (!ds)
		return 0;
	ZSTD_initDStream(ds);
	while (in.pos < in.size || r != 0) {
		if (out.pos == out.size) {
			size_t cap = out.size ? 2 * out.size :
				     ZSTD_DStreamOutSize() + 2 * nbytes;
			void *p = realloc(out.dst, cap);

			if (!p)
				goto out;
			out.dst = p;
			out.size = cap;
		}
		r = ZSTD_decompressStream(ds, &out, &in);
		if (ZSTD_isError(r))
			goto out;
		/* input used up inside a frame: truncated chunk */
		if (in.pos == in.size && r != 0 && out.pos < out.size)
			goto out;
	}
	free(*buf);
	*buf = out.dst;
	*buf_size = out.size;
	out.dst = NULL;
	ret = out.pos;
out:
	free(out.dst);
	ZSTD_freeDStream(ds);
	return ret;
}

/* The common case: one frame that records its size, decoded in one call
 * into a buffer of exactly that size. Anything else (no size, several
 * frames) goes through the streaming decoder. */
static size_t zstd_decode(size_t nbytes, size_t *buf_size, void **buf)
{
	unsigned long long size = ZSTD_getFrameContentSize(*buf, nbytes);
	void *out;
	size_t n;

	if (size == ZSTD_CONTENTSIZE_ERROR)
		return 0;
	if (size == ZSTD_CONTENTSIZE_UNKNOWN ||
	    ZSTD_findFrameCompressedSize(*buf, nbytes) != nbytes)
		return zstd_decode_stream(nbytes, buf_size, buf);
	if (size == 0 || size > (size_t)-1)
		return 0; /* HDF5 never stores an empty chunk */
	out = malloc((size_t)size);
	if (!out)
		return 0;
	n = ZSTD_decompress(out, (size_t)size, *buf, nbytes);
	if (ZSTD_isError(n) || n != size) {
		free(out);
		return 0;
	}
	free(*buf);
	*buf = out;
	*buf_size = (size_t)size;
	return n;
}

/* The H5Z_func_t: returns the bytes now in *buf, 0 on failure (HDF5 then
 * reports the chunk as unreadable or unwritable). */
static size_t zstd_filter(unsigned int flags, size_t cd_nelmts,
			  const unsigned int cd_values[], size_t nbytes,
			  size_t *buf_size, void **buf)
{
	if (flags & H5Z_FLAG_REVERSE)
		return zstd_decode(nbytes, buf_size, buf);
	return zstd_encode(filter_level(cd_nelmts, cd_values), nbytes,
			   buf_size, buf);
}

const H5Z_class2_t h5z_zstd_class = {
	.version = H5Z_CLASS_T_VERS,
	.id = H5Z_FILTER_ZSTD,
	.encoder_present = 1,
	.decoder_present = 1,
	.name = "Zstandard compression: http://www.zstd.net",
	.can_apply = NULL,
	.set_local = NULL,
	.filter = zstd_filter,
};

#ifdef H5Z_ZSTD_PLUGIN
H5PL_type_t H5PLget_plugin_type(void)
{
	return H5PL_TYPE_FILTER;
}

const void *H5PLget_plugin_info(void)
{
	return &h5z_zstd_class;
}
#else
int h5z_zstd_register(void)
{
	return H5Zregister(&h5z_zstd_class) < 0 ? -1 : 0;
}
#endif
