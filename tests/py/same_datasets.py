"""same_datasets A B - exits 0 when the HDF5 files A and B hold the same
groups and datasets (names, types, shapes, values) and the same
attributes, but for the provenance lines of h5pack, which name the output
file; else names what differs. At least 20 datasets must be compared.
(test-lib.sh's test_same_datasets.)"""
import sys
import h5py
import numpy as np

def items(f):
    out = {"/": f}
    f.visititems(lambda name, obj: out.__setitem__(name, obj))
    return out

def lines(v):
    v = [x.decode() if isinstance(x, bytes) else str(x)
         for x in np.atleast_1d(v)]
    return [x for x in v if not x.startswith(("h5pack ", "stage=h5pack "))]

a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
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
    if sorted(x.attrs) != sorted(y.attrs):
        bad.append("attributes of %s differ" % name)
        continue
    for k in x.attrs:
        u, v = x.attrs[k], y.attrs[k]
        if k in ("provenance", "stream_header"):
            same = lines(u) == lines(v)
        else:
            same = np.array_equal(np.asarray(u), np.asarray(v))
        if not same:
            bad.append("attribute %s of %s differs" % (k, name))
if n < 20:
    bad.append("only %d datasets" % n)
print("%d datasets compared" % n)
sys.exit("\n".join(bad) if bad else 0)
