#!/usr/bin/env python3
"""h5pack_same.py A.h5 B.h5 [A.h5 B.h5]... - h5pack's files hold the same.

Compares every group, dataset and attribute of the two files: the same
names, every dataset's shape, type, values bit for bit (16-bit floats
and bf16 as their bits), chunk shape and filters, every attribute's
value. Only what names the run is left out: h5pack's own entry of the
root attributes provenance and stream_header (its command line names
the output). With --any-commands every stage's command line is left
out (provenance, and the stage and shard_stage entries of
stream_header): for datasets made by pipelines run with other options
that must not change the data (--piece-samples, shards). The files are
compared in pairs, each B.h5 with the A.h5 before it. Prints 'same' or
the first difference (exit 1).

Used to check that a stream and the same stream cut into pieces
(rec-copy --pieces) give the same dataset.
"""
import argparse
import sys

import h5py
import hdf5plugin  # noqa: F401 (reads the zstd datasets)
import numpy as np


class Differ(Exception):
    pass


def raw(ds):
    """The dataset's elements as stored, without conversion: floats of 2
    bytes (f16, bf16) as their bits."""
    t = ds.id.get_type()
    if t.get_class() == h5py.h5t.FLOAT and t.get_size() == 2:
        out = np.empty(ds.shape, np.uint16)
        if out.size:
            ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, out, mtype=t)
        return out
    return ds[()]


def layout(ds):
    """Chunk shape and filters (id and parameters) of a dataset."""
    dcpl = ds.id.get_create_plist()
    filters = [dcpl.get_filter(i)[:3] for i in range(dcpl.get_nfilters())]
    return ds.chunks, filters


ANY_COMMANDS = False  # --any-commands


def h5pack_entry(v):
    s = v.decode() if isinstance(v, bytes) else str(v)
    if ANY_COMMANDS:
        return s.startswith(("stage=", "shard_stage=")) or "\t" in s
    return s.startswith("h5pack ") or s.startswith("stage=h5pack ")


def attr_value(name, v, root):
    if root and name in ("provenance", "stream_header"):
        v = [x for x in v if not h5pack_entry(x)]
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def same_attrs(a, b, path):
    root = path == "/"
    ka, kb = sorted(a.attrs.keys()), sorted(b.attrs.keys())
    if ka != kb:
        raise Differ("%s: attributes %s and %s" % (path, ka, kb))
    for k in ka:
        va = attr_value(k, a.attrs[k], root)
        vb = attr_value(k, b.attrs[k], root)
        if va != vb:
            raise Differ("%s: attribute %s: %r and %r" % (path, k, va, vb))


def same_dataset(a, b, path):
    if a.shape != b.shape or a.dtype != b.dtype:
        raise Differ("%s: %s %s and %s %s" % (path, a.shape, a.dtype,
                                              b.shape, b.dtype))
    if layout(a) != layout(b):
        raise Differ("%s: chunks and filters %s and %s" % (path, layout(a),
                                                            layout(b)))
    x, y = raw(a), raw(b)
    if x.dtype.kind == "f":
        x, y = x.view("u%d" % x.itemsize), y.view("u%d" % y.itemsize)
    if x.dtype == object or x.dtype.kind in "SOU":
        equal = x.tolist() == y.tolist()
    else:
        equal = np.array_equal(x, y)
    if not equal:
        where = ""
        if x.dtype != object and x.shape:
            bad = np.argwhere(x != y)
            where = " (first at %s of %d)" % (bad[0].tolist(), len(bad))
        raise Differ("%s: values differ%s" % (path, where))


def same(a, b, path="/"):
    same_attrs(a, b, path)
    if isinstance(a, h5py.Dataset):
        same_dataset(a, b, path)
        return
    ka, kb = sorted(a.keys()), sorted(b.keys())
    if ka != kb:
        raise Differ("%s: members %s and %s" % (path, ka, kb))
    for k in ka:
        if isinstance(a[k], h5py.Dataset) != isinstance(b[k], h5py.Dataset):
            raise Differ("%s%s: a dataset in one file only" % (path, k))
        same(a[k], b[k], path + k + ("" if isinstance(a[k], h5py.Dataset)
                                      else "/"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", metavar="A.h5 B.h5")
    p.add_argument("--any-commands", action="store_true",
                   help="leave every stage's command line out")
    a = p.parse_args()
    global ANY_COMMANDS
    ANY_COMMANDS = a.any_commands
    if len(a.files) % 2:
        p.error("files come in pairs")
    for ap, bp in zip(a.files[0::2], a.files[1::2]):
        with h5py.File(ap, "r") as x, h5py.File(bp, "r") as y:
            try:
                same(x, y)
            except Differ as e:
                print("%s, %s: %s" % (ap, bp, e))
                sys.exit(1)
    print("same")


if __name__ == "__main__":
    main()
