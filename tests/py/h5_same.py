"""Checks that two melpipe datasets hold the same data: every group and
dataset of the first is in the second with the same shape, dtype and
values, and the other way round; attributes alike, but the provenance
(the commands differ). features may differ by --tol (absolute, in the
stored unit) where a computation's rounding may move: the same frames
computed from the same samples in another batch or buffer alignment.

Usage: h5_same.py A.h5 B.h5 [--tol X]
Prints "same: N datasets" and exits 0, or names the first difference
and exits 1."""
import argparse
import sys

import h5py
import numpy as np

try:
    import hdf5plugin  # noqa: F401  (zstd files)
except ImportError:
    pass

SKIP_ATTRS = {"provenance"}


def attrs_differ(a, b, name):
    ka = set(a.attrs) - SKIP_ATTRS
    kb = set(b.attrs) - SKIP_ATTRS
    if ka != kb:
        return "%s: attributes %s against %s" % (name, sorted(ka), sorted(kb))
    for k in ka:
        if not np.array_equal(np.asarray(a.attrs[k]), np.asarray(b.attrs[k])):
            return "%s: attribute %s differs" % (name, k)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tol", type=float, default=0.0)
    o = ap.parse_args()
    fa, fb = h5py.File(o.a, "r"), h5py.File(o.b, "r")
    names = []
    fa.visit(names.append)
    other = []
    fb.visit(other.append)
    if sorted(names) != sorted(other):
        sys.exit("the files hold different names: %s"
                 % sorted(set(names) ^ set(other)))
    why = attrs_differ(fa, fb, "/")
    n = 0
    for name in names:
        if why:
            break
        a, b = fa[name], fb[name]
        why = attrs_differ(a, b, name)
        if why or not isinstance(a, h5py.Dataset):
            continue
        n += 1
        if a.shape != b.shape or a.dtype != b.dtype:
            why = "%s: %s %s against %s %s" % (name, a.shape, a.dtype,
                                               b.shape, b.dtype)
            continue
        x, y = a[()], b[()]
        if name.endswith("features") and o.tol > 0:
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            d = np.abs(x64 - y64).max() if x.size else 0.0
            if not d <= o.tol:
                why = "%s: differs by %g (tolerance %g)" % (name, d, o.tol)
        elif not np.array_equal(x, y):
            bad = np.argwhere(x != y) if x.shape == y.shape else []
            why = "%s differs%s" % (name, " first at %s" % (bad[0],)
                                    if len(bad) else "")
    if why:
        sys.exit(why)
    print("same: %d datasets" % n)


if __name__ == "__main__":
    main()
