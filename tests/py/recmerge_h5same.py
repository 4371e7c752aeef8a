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
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from same_datasets import differences  # noqa: E402

HEADER_ATTRS = {"provenance", "stream_header", "shard_stage", "job"}


def same_but_header(k, u, v):
    """Attributes compared as arrays; those made of the stream header
    left out (None)."""
    if k in HEADER_ATTRS:
        return None
    return u is None or np.array_equal(np.asarray(u), np.asarray(v))


def main():
    a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
    bad, n = differences(a, b, same_but_header)
    if not n:
        bad.append("no dataset")
    if bad:
        sys.exit("\n".join(bad))
    print("ok: %d datasets" % n)


if __name__ == "__main__":
    main()
