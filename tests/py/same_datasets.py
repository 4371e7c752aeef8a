"""same_datasets A B - exits 0 when the HDF5 files A and B hold the same
groups and datasets (names, types, shapes, values) and the same
attributes, but for the provenance lines of h5pack, which name the output
file; else names what differs. At least 20 datasets must be compared.
(test-lib.sh's test_same_datasets.)

differences(a, b, same_attr) is the comparison, for other scripts
(recmerge_h5same.py): the list of what differs between the open files a
and b, and the count of datasets compared; same_attr(key, u, v) says
whether two values of attribute key are the same (None: all of them
compared as arrays).
"""
import sys

import h5py
import numpy as np


def items(f):
    out = {"/": f}
    f.visititems(lambda name, obj: out.__setitem__(name, obj))
    return out


def differences(a, b, same_attr):
    ia, ib = items(a), items(b)
    bad = []
    if sorted(ia) != sorted(ib):
        bad.append("names differ: %s" % sorted(set(ia) ^ set(ib)))
    n = 0
    for name in sorted(set(ia) & set(ib)):
        x, y = ia[name], ib[name]
        if isinstance(x, h5py.Dataset):
            n += 1
            u, v = x[()], y[()]
            if u.dtype != v.dtype or u.shape != v.shape or \
               not np.array_equal(u, v):
                bad.append("dataset %s differs" % name)
        kx = {k for k in x.attrs if same_attr(k, None, None) is not None}
        ky = {k for k in y.attrs if same_attr(k, None, None) is not None}
        if kx != ky:
            bad.append("attributes of %s differ" % name)
            continue
        for k in sorted(kx):
            if not same_attr(k, x.attrs[k], y.attrs[k]):
                bad.append("attribute %s of %s differs" % (k, name))
    return bad, n


def lines(v):
    v = [x.decode() if isinstance(x, bytes) else str(x)
         for x in np.atleast_1d(v)]
    return [x for x in v if not x.startswith(("h5pack ", "stage=h5pack "))]


def same_but_h5pack_lines(k, u, v):
    """Attributes compared as arrays, but provenance and stream_header
    without h5pack's own lines (which name the output file)."""
    if u is None:
        return True
    if k in ("provenance", "stream_header"):
        return lines(u) == lines(v)
    return np.array_equal(np.asarray(u), np.asarray(v))


def main():
    a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
    bad, n = differences(a, b, same_but_h5pack_lines)
    if n < 20:
        bad.append("only %d datasets" % n)
    print("%d datasets compared" % n)
    sys.exit("\n".join(bad) if bad else 0)


if __name__ == "__main__":
    main()
