#!/usr/bin/env python3
"""h5info - print what a melpipe HDF5 dataset holds.

Usage: h5info.py FILE.h5

Shows the split groups with their feature shapes and per-label row counts,
the label table, the clips and skipped inputs, and the provenance chain.
Reading zstd-compressed datasets needs hdf5plugin (imported when present)
or HDF5_PLUGIN_PATH pointing at melpipe's bin/plugins.
"""
import sys

try:
    import hdf5plugin  # noqa: F401  (registers the zstd filter)
except ImportError:
    pass
import h5py
import numpy as np


def text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    return str(v)


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    with h5py.File(argv[1], "r") as f:
        labels = [text(x) for x in f["labels"][()]] if "labels" in f else []
        print(f"{argv[1]}:")
        print(f"  labels ({len(labels)}): {', '.join(labels)}")
        for name in ("training", "validation", "testing", "all"):
            if name not in f:
                continue
            g = f[name]
            feats = g["features"]
            lab = g["label"][()]
            counts = np.bincount(lab[lab >= 0], minlength=len(labels))
            per = ", ".join(f"{labels[i]} {c}" for i, c in enumerate(counts))
            print(f"  {name}: features {feats.shape} {feats.dtype}, "
                  f"{len(np.unique(g['clip'][()]))} clips; {per}")
            if feats.shape[0]:
                x = feats[: min(feats.shape[0], 1000)].astype(np.float32)
                print(f"    values of the first rows: min {x.min():.2f} "
                      f"max {x.max():.2f} mean {x.mean():.2f}")
        if "clips" in f:
            print(f"  clips: {f['clips']['path'].shape[0]}")
        if "skipped" in f:
            sk = f["skipped"]
            n = sk["path"].shape[0]
            print(f"  skipped: {n}")
            for p, r in zip(sk["path"][()], sk["reason"][()]):
                print(f"    {text(p)}: {text(r)}")
        prov = f.attrs.get("provenance")
        if prov is not None:
            print("  provenance:")
            for line in np.atleast_1d(prov):
                print(f"    {text(line)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
