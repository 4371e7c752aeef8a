#!/usr/bin/env python3
"""h5merge_same.py WHOLE.h5 MERGED.h5 SHARD.h5... - h5pack --merge of a
job's shard files gives the dataset of the whole job.

formats/hdf5.md, Shard files: every group and dataset of MERGED is
WHOLE's (names, shapes, types, values bit for bit, chunk shapes and
filters: tests/py/h5pack_same.py's comparison), but the statistics
(stats_count exact, stats_sum and stats_sumsq within --rel, relative);
every attribute is WHOLE's but provenance, stream_header and job, which
are checked against the shards:

- job: the shards' (all equal);
- provenance: each shard's provenance in shard order, each entry
  prefixed "K/N" TAB, then h5pack --merge's own entry;
- stream_header: WHOLE's pairs but stage (and job), then the shard_stage
  pairs (the provenance above) and h5pack --merge's stage.

With --no-stats the statistics are left out altogether (WHOLE from an
h5pack that wrote none); without shard files the two files' attributes
are compared as h5pack_same.py does (every one, h5pack's own entries of
provenance and stream_header left out): `h5merge_same.py --no-stats
OLD.h5 NEW.h5` checks that a whole stream gives the dataset it gave
before statistics were stored, but for them. Prints 'same' or the first
difference (exit 1).
"""
import argparse
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5pack_same as hs  # noqa: E402

STATS = ("stats_count", "stats_sum", "stats_sumsq")
HEADER = ("provenance", "stream_header", "job")


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def texts(v):
    return [text(x) for x in np.atleast_1d(v)]


def same_stats(a, b, path, rel):
    x, y = a[()], b[()]
    if x.shape != y.shape or x.dtype != y.dtype:
        raise hs.Differ("%s: %s %s and %s %s" % (path, x.shape, x.dtype,
                                                 y.shape, y.dtype))
    if path.endswith("stats_count"):
        ok = np.array_equal(x, y)
    else:
        ok = np.all(np.abs(x - y) <= rel * np.maximum(np.abs(x), 1e-300))
    if not ok:
        raise hs.Differ("%s: %s and %s" % (path, x.tolist()[:4],
                                           y.tolist()[:4]))


def same_attrs(a, b, path):
    skip = HEADER if path == "/" else ()
    ka = sorted(k for k in a.attrs if k not in skip)
    kb = sorted(k for k in b.attrs if k not in skip)
    if ka != kb:
        raise hs.Differ("%s: attributes %s and %s" % (path, ka, kb))
    for k in ka:
        va, vb = hs.attr_value(k, a.attrs[k], 0), \
            hs.attr_value(k, b.attrs[k], 0)
        if va != vb:
            raise hs.Differ("%s: attribute %s: %r and %r" % (path, k, va,
                                                             vb))


def same(a, b, o, path="/"):
    if o.shards:
        same_attrs(a, b, path)
    else:
        hs.same_attrs(a, b, path)
    if isinstance(a, h5py.Dataset):
        if path.rsplit("/", 1)[-1] in STATS:
            same_stats(a, b, path, o.rel)
        else:
            hs.same_dataset(a, b, path)
        return
    ka = sorted(k for k in a.keys() if not (o.no_stats and k in STATS))
    kb = sorted(k for k in b.keys() if not (o.no_stats and k in STATS))
    if ka != kb:
        raise hs.Differ("%s: members %s and %s" % (path, ka, kb))
    for k in ka:
        sub = path + k + ("" if isinstance(a[k], h5py.Dataset) else "/")
        same(a[k], b[k], o, sub)


def check_header(whole, merged, shards):
    jobs = {text(s.attrs["job"]) for s in shards}
    if len(jobs) != 1 or text(merged.attrs["job"]) not in jobs:
        raise hs.Differ("job %s, the shards' %s"
                        % (text(merged.attrs["job"]), sorted(jobs)))
    n = len(shards)
    by_k = sorted(shards, key=lambda s: int(text(s.attrs["shard"])
                                            .split("/")[0]))
    want = ["%d/%d\t%s" % (k, n, e) for k, s in enumerate(by_k)
            for e in texts(s.attrs["provenance"])]
    prov = texts(merged.attrs["provenance"])
    if prov[:-1] != want:
        raise hs.Differ("provenance %r, expected %r" % (prov[:-1], want))
    if not prov[-1].startswith("h5pack ") or "--merge" not in prov[-1]:
        raise hs.Differ("provenance ends with %r, not h5pack --merge"
                        % prov[-1])
    hdr = texts(merged.attrs["stream_header"])
    plain = [p for p in texts(whole.attrs["stream_header"])
             if not p.startswith(("stage=", "job="))]
    want = plain + ["shard_stage=" + p for p in want] + \
        ["stage=" + prov[-1]]
    got = [p for p in hdr if not p.startswith("job=")]
    if got != want:
        raise hs.Differ("stream_header %r, expected %r" % (got, want))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("whole")
    p.add_argument("merged")
    p.add_argument("shards", nargs="*")
    p.add_argument("--rel", type=float, default=1e-12)
    p.add_argument("--no-stats", action="store_true")
    o = p.parse_args()
    shards = [h5py.File(s, "r") for s in o.shards]
    with h5py.File(o.whole, "r") as a, h5py.File(o.merged, "r") as b:
        try:
            same(a, b, o)
            if shards:
                check_header(a, b, shards)
        except hs.Differ as e:
            print("%s, %s: %s" % (o.whole, o.merged, e))
            sys.exit(1)
    print("same")


if __name__ == "__main__":
    main()
