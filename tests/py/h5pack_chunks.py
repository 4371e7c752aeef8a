#!/usr/bin/env python3
"""h5pack_chunks.py - checks of h5pack's compressed chunks, byte by byte.

    h5pack_chunks.py same A.h5 B.h5...
        every dataset of the files holds the same chunks (offsets, places
        in the file, filter masks, stored bytes) and the same values, and
        the files have the same attributes but for h5pack's own command
        line in the provenance: what --jobs must not change.

    h5pack_chunks.py decode PLAIN.h5 PACKED.h5 gzip|zstd
        each stored chunk of every group's features in PACKED.h5 has filter
        mask 0 (every filter applied) and decodes, with Python's zlib or
        libzstd through ctypes and a numpy unshuffle written from HDF5's
        description of its shuffle filter, to the rows PLAIN.h5 (the same
        stream, uncompressed) holds there. (Whether a chunk got smaller
        depends on the data: noise grows.)

    h5pack_chunks.py library PACKED.h5 gzip|zstd LEVEL
        the same rows written by h5py through the HDF5 library's filters
        (its shuffle, then its deflate or filter 32015 from
        HDF5_PLUGIN_PATH, which the test points at melpipe's plugin; same
        chunk shape and level) give the same bytes for every whole chunk:
        what h5pack's threads write is what the library would have.

    h5pack_chunks.py padding FILE.h5 RATIO OVERHEAD
        the file is not mostly padding: its size is at most RATIO times
        the bytes its datasets hold (a string counted as its bytes and a
        16-byte heap reference), plus OVERHEAD bytes (object headers,
        chunk indexes, the attributes).

Exit status 0 when the check holds; 1 with the first difference.
"""
import ctypes
import ctypes.util
import sys
import zlib

import h5py
import numpy as np

GROUPS = ("all", "training", "validation", "testing")


def fail(msg):
    print("h5pack_chunks: " + msg, file=sys.stderr)
    sys.exit(1)


def chunks(d, where=False):
    """[(offset, filter_mask, bytes)] of a chunked dataset, by offset;
    where: with each chunk's address in the file after its offset."""
    out = []
    for i in range(d.id.get_num_chunks()):
        info = d.id.get_chunk_info(i)
        mask, data = d.id.read_direct_chunk(info.chunk_offset)
        out.append((tuple(info.chunk_offset),) +
                   ((info.byte_offset,) if where else ()) +
                   (mask, bytes(data)))
    return sorted(out)


def datasets(f):
    names = []
    f.visititems(lambda n, o: names.append(n)
                 if isinstance(o, h5py.Dataset) else None)
    return sorted(names)


def without_h5pack_argv(v):
    """The provenance with h5pack's command line cut off."""
    if isinstance(v, np.ndarray) and v.dtype.kind in "OSU":
        return [s.split("\t")[0] if isinstance(s, str) and
                s.startswith(("h5pack ", "stage=h5pack ")) else s
                for s in v.tolist()]
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def cmd_same(paths):
    import hdf5plugin  # noqa: F401 (reads the zstd values)
    files = [h5py.File(p, "r") for p in paths]
    ref = files[0]
    names = datasets(ref)
    for p, f in zip(paths[1:], files[1:]):
        if datasets(f) != names:
            fail(f"{p}: datasets {datasets(f)} != {names}")
        ra = {k: without_h5pack_argv(v) for k, v in ref.attrs.items()}
        fa = {k: without_h5pack_argv(v) for k, v in f.attrs.items()}
        if ra != fa:
            fail(f"{p}: root attributes differ")
        for n in names:
            a, b = ref[n], f[n]
            if a.shape != b.shape or a.dtype != b.dtype or \
                    a.chunks != b.chunks or \
                    a.id.get_create_plist().get_nfilters() != \
                    b.id.get_create_plist().get_nfilters():
                fail(f"{p}: {n}: shape, type, chunks or filters differ")
            if a.chunks and chunks(a, True) != chunks(b, True):
                fail(f"{p}: {n}: stored chunks or their places differ")
            if not np.array_equal(a[...], b[...]):
                fail(f"{p}: {n}: values differ")
    print(f"same: {len(names)} datasets in {len(paths)} files")


_ZSTD = []


def libzstd():
    """libzstd through ctypes, loaded once."""
    if not _ZSTD:
        lib = ctypes.CDLL(ctypes.util.find_library("zstd") or
                          "libzstd.so.1")
        lib.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
        lib.ZSTD_getFrameContentSize.argtypes = [ctypes.c_char_p,
                                                 ctypes.c_size_t]
        lib.ZSTD_decompress.restype = ctypes.c_size_t
        lib.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                        ctypes.c_char_p, ctypes.c_size_t]
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        _ZSTD.append(lib)
    return _ZSTD[0]


def zstd_decompress(data):
    lib = libzstd()
    n = lib.ZSTD_getFrameContentSize(data, len(data))
    if n >= (1 << 63):
        fail("a zstd chunk without its content size")
    out = ctypes.create_string_buffer(n)
    got = lib.ZSTD_decompress(out, n, data, len(data))
    if lib.ZSTD_isError(got) or got != n:
        fail("a zstd chunk does not decode")
    return out.raw


def unshuffle(data, esize):
    """HDF5's shuffle filter undone: byte j of element i was stored at
    j * n + i (n whole elements; trailing bytes as they were)."""
    n = len(data) // esize
    if esize <= 1 or n <= 1:
        return data
    body = np.frombuffer(data[:n * esize], np.uint8).reshape(esize, n)
    return body.T.tobytes() + data[n * esize:]


def cmd_decode(plain, packed, method):
    fp, fz = h5py.File(plain, "r"), h5py.File(packed, "r")
    whole = 0
    for g in GROUPS:
        if g not in fz:
            continue
        d, ref = fz[g]["features"], fp[g]["features"][...]
        esize = d.dtype.itemsize
        rows = d.chunks[0]
        for off, mask, data in chunks(d):
            if mask != 0:
                fail(f"{g}: chunk at {off}: filter mask {mask}")
            raw = zstd_decompress(data) if method == "zstd" else \
                zlib.decompress(data)
            want = ref[off[0]:off[0] + rows]
            if len(raw) != rows * want[0].nbytes:
                fail(f"{g}: chunk at {off}: {len(raw)} bytes decoded")
            # the library stores the last chunk whole, shuffled over all
            # of it; only its rows inside the dataset are defined
            got = unshuffle(raw, esize)[:want.nbytes]
            if got != want.tobytes():
                fail(f"{g}: chunk at {off} does not hold rows "
                     f"{off[0]}..{off[0] + want.shape[0] - 1}")
            whole += want.shape[0] == rows
    if whole == 0:
        fail("no whole chunk to check: make the stream longer")
    print(f"decode: {whole} whole chunks checked")


def cmd_library(packed, method, level):
    fz = h5py.File(packed, "r")
    compared = 0
    with h5py.File("library.h5", "w") as out:
        for g in GROUPS:
            if g not in fz:
                continue
            d = fz[g]["features"]
            x = d[...]
            kw = dict(compression="gzip", compression_opts=level) \
                if method == "gzip" else \
                dict(compression=32015, compression_opts=(level,))
            lib = out.create_dataset(g, data=x, chunks=d.chunks,
                                     shuffle=True, **kw)
            ours, theirs = chunks(d), chunks(lib)
            rows = d.chunks[0]
            for (o1, m1, b1), (o2, m2, b2) in zip(ours, theirs):
                if o1 != o2:
                    fail(f"{g}: chunk offsets {o1} and {o2}")
                if o1[0] + rows > x.shape[0]:
                    continue  # partial: its tail is undefined in both
                if (m1, b1) != (m2, b2):
                    fail(f"{g}: chunk at {o1}: {len(b1)} bytes here, "
                         f"{len(b2)} from the library's filters")
                compared += 1
    if compared == 0:
        fail("no whole chunk to compare: make the stream longer")
    print(f"library: {compared} whole chunks the same")


def data_bytes(d):
    if h5py.check_string_dtype(d.dtype):
        return sum(16 + len(x) for x in d[...].tolist())
    return d.size * d.dtype.itemsize


def cmd_padding(path, ratio, overhead):
    import os
    with h5py.File(path, "r") as f:
        held = sum(data_bytes(f[n]) for n in datasets(f))
    size = os.path.getsize(path)
    print(f"padding: {size} bytes of file, {held} of data")
    if size > ratio * held + overhead:
        fail(f"{path}: {size} bytes for {held} bytes of data: more than "
             f"{ratio} times the data + {overhead}")


def main(argv):
    if len(argv) >= 3 and argv[0] == "same":
        cmd_same(argv[1:])
    elif len(argv) == 4 and argv[0] == "decode":
        cmd_decode(argv[1], argv[2], argv[3])
    elif len(argv) == 4 and argv[0] == "library":
        cmd_library(argv[1], argv[2], int(argv[3]))
    elif len(argv) == 4 and argv[0] == "padding":
        cmd_padding(argv[1], float(argv[2]), int(argv[3]))
    else:
        fail("usage: same A B... | decode PLAIN PACKED METHOD | "
             "library PACKED METHOD LEVEL | padding FILE RATIO OVERHEAD")


if __name__ == "__main__":
    main(sys.argv[1:])
