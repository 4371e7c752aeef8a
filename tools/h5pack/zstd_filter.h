/*
 * zstd_filter.h - the HDF5 Zstandard filter, registered id 32015.
 *
 * The stored form of a chunk is one zstd frame with its content size, and
 * cd_values[0] is the compression level: the same convention as the
 * HDF5Plugin-Zstandard filter that hdf5plugin ships, so files written with
 * it are read by h5py + hdf5plugin, and by anything that loads the plugin
 * build of this file (bin/plugins/libh5zstd.so) from HDF5_PLUGIN_PATH.
 */
#ifndef MELPIPE_ZSTD_FILTER_H
#define MELPIPE_ZSTD_FILTER_H

#include <hdf5.h>

#define H5Z_FILTER_ZSTD 32015

/* The filter class (encoder and decoder). */
extern const H5Z_class2_t h5z_zstd_class;

/* Registers the filter with the HDF5 library of this process, so that
 * H5Pset_filter(dcpl, H5Z_FILTER_ZSTD, ...) works without a plugin.
 * Returns 0, or -1 when HDF5 refuses. */
int h5z_zstd_register(void);

#endif
