#!/usr/bin/env python3
"""recmerge_h5same.py A.h5 B.h5 - the same dataset from a merged stream
and from the whole one.

Every group and dataset (names, types, shapes, values) and every
attribute equal, but those made of the stream header's provenance: a
merged stream's header has recmerge's stage, the shards' stages as
shard_stage pairs and the job (which a whole run's stream made before
wavcat --shard lacks), and h5pack keeps them in provenance,
stream_header and an attribute per key. Prints 'ok: N datasets' or the
differences (exit 1).
"""
import sys

import h5py
import numpy as np

HEADER_ATTRS = {"provenance", "stream_header", "shard_stage", "job"}


def objects(f):
    out = {"/": f}
    f.visititems(lambda name, obj: out.__setitem__(name, obj))
    return out


def main():
    a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
    oa, ob = objects(a), objects(b)
    bad = []
    if sorted(oa) != sorted(ob):
        bad.append("names differ: %s" % sorted(set(oa) ^ set(ob)))
    n = 0
    for name in sorted(set(oa) & set(ob)):
        x, y = oa[name], ob[name]
        if isinstance(x, h5py.Dataset):
            n += 1
            u, v = x[()], y[()]
            if u.dtype != v.dtype or u.shape != v.shape or \
               not np.array_equal(u, v):
                bad.append("dataset %s differs" % name)
        keys = set(x.attrs) - HEADER_ATTRS
        if keys != set(y.attrs) - HEADER_ATTRS:
            bad.append("attributes of %s differ" % name)
            continue
        for k in keys:
            if not np.array_equal(np.asarray(x.attrs[k]),
                                  np.asarray(y.attrs[k])):
                bad.append("attribute %s of %s differs" % (k, name))
    if not n:
        bad.append("no dataset")
    if bad:
        sys.exit("\n".join(bad))
    print("ok: %d datasets" % n)


if __name__ == "__main__":
    main()
