#!/usr/bin/env python3
"""h5merge_stats.py FILE.h5... - each split group's statistics are those
of its stored frames.

formats/hdf5.md, Statistics: per feature (mel bin; audio: channel)
stats_count (int64) is the number of stored frames, stats_sum and
stats_sumsq (float64) the sum of the stored values and of their squares,
each value as stored, widened to float64 (16-bit floats exactly), over
every stored frame. Computed here with math.fsum (exact, then rounded
once) from the features dataset; the file's must be within --rel
(relative to the sum of the absolute values, of the squares for
sumsq). Prints 'ok: N groups' or the first difference (exit 1).
"""
import argparse
import math
import sys

import h5py
import numpy as np

try:
    import hdf5plugin  # noqa: F401 (zstd files)
except ImportError:
    pass

GROUPS = ("all", "training", "validation", "testing")


def values(f, g):
    """The group's stored values as float64 [frames, features]."""
    x = g["features"][()].astype(np.float64)
    layout = f.attrs.get("layout", "fixed")
    layout = layout.decode() if isinstance(layout, bytes) else layout
    kind = f.attrs.get("kind", "features")
    kind = kind.decode() if isinstance(kind, bytes) else kind
    if layout == "fixed" and kind == "features":
        x = x.transpose(0, 2, 1)     # [N, n_frames, n_mels]
    if x.ndim == 1 or (layout == "fixed" and kind == "audio"
                       and x.ndim == 2):
        x = x[..., None]             # mono audio: one channel
    return x.reshape(-1, x.shape[-1]) if x.size else \
        np.zeros((0, g["stats_sum"].shape[0]))


def check(path, rel):
    n = 0
    with h5py.File(path, "r") as f:
        for name in GROUPS:
            if name not in f:
                continue
            g = f[name]
            x = values(f, g)
            cnt, s, q = (g[k][()] for k in ("stats_count", "stats_sum",
                                             "stats_sumsq"))
            if g["label"].shape[0] and cnt.shape != (x.shape[1],):
                return "%s: /%s: %s features, the rows have %d" % (
                    path, name, cnt.shape, x.shape[1])
            for b in range(cnt.shape[0]):
                v = x[:, b]
                want = (v.shape[0], math.fsum(v), math.fsum(v * v))
                scale = (0, math.fsum(np.abs(v)), want[2])
                got = (int(cnt[b]), float(s[b]), float(q[b]))
                if got[0] != want[0]:
                    return "%s: /%s bin %d: count %d, %d frames" % (
                        path, name, b, got[0], want[0])
                for i, what in ((1, "sum"), (2, "sumsq")):
                    if abs(got[i] - want[i]) > rel * scale[i]:
                        return "%s: /%s bin %d: %s %r, expected %r" % (
                            path, name, b, what, got[i], want[i])
            n += 1
    print("ok: %d groups" % n)
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--rel", type=float, default=1e-12)
    o = p.parse_args()
    for path in o.files:
        why = check(path, o.rel)
        if why:
            sys.exit(why)


if __name__ == "__main__":
    main()
