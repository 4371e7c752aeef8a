#!/usr/bin/env python3
"""soak_check.py - account for every input of a soak run in its dataset.

Usage: soak_check.py DIR OUT.h5 --rate HZ --len L --hop H

Reads DIR/.soak-manifest.tsv (soak_gen.py) and the dataset h5pack wrote
from `wavcat --rate HZ --split hash:V:T DIR | segment --len L --hop H
[--last pad] | gpumel ... | h5pack`, and checks, from the manifest alone:

- /clips holds every file once, in wavcat's order (keys sorted bytewise),
  with its label (its folder, in the sorted /labels), a split, and its
  length after resampling (n * HZ / rate, halves up; for a truncated WAV
  the frames it holds, n / 2; 0 when unusable);
- /skipped holds exactly the broken files, each with a reason and its row
  of /clips;
- every usable clip, and every truncated one (kept up to where its data
  ends: a clip cut short), has exactly its windows, ceil-style as segment
  --last pad cuts them (1 for a clip shorter than a window), all in the
  group of its split, with segment indices 0, 1, ... and offsets
  segment * H and the clip's label; other broken files have none;
- the features are finite, of one shape.

Prints a summary line per part, or the first mismatch (exit 1). Works on
100,000 clips in seconds: everything is compared as whole arrays.
"""
import argparse
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_gen  # noqa: E402

GROUPS = {1: "training", 2: "validation", 3: "testing"}


class Mismatch(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Mismatch(msg)


def first_bad(mask):
    return int(np.flatnonzero(mask)[0])


def resampled(frames, rate, to):
    """frames * to / rate rounded to nearest, halves up (as soxr)."""
    return (2 * frames * to + rate) // (2 * rate)


def windows(n, length, hop):
    """segment --last pad: full windows, plus the partial one that starts
    before the end (a clip shorter than a window gives one)."""
    full = np.where(n >= length, (n - length) // hop + 1, 0)
    return full + (full * hop < n)


def expected(root, rate, length, hop):
    """The manifest in wavcat's order, with what each clip should give."""
    rows = soak_gen.read_manifest(root)
    rows.sort(key=lambda r: r[0].encode())
    keys = [r[0].encode() for r in rows]
    ok = np.array([r[1] == "ok" for r in rows])
    cut = np.array([r[1] == "truncated" for r in rows])
    src = np.array([r[2] for r in rows], dtype=np.int64)
    frames = np.array([r[4] for r in rows], dtype=np.int64)
    # a truncated WAV holds the first half of its bytes: frames // 2
    held = np.where(cut, frames // 2, frames)
    n = np.where(ok | cut, resampled(held, src, rate), 0)
    labels = sorted(soak_gen.LABELS)
    lab = np.array([labels.index(k.split("/", 1)[0]) for k, *_ in rows])
    return dict(keys=keys, ok=ok, n=n, labels=labels, label=lab,
                kind=[r[1] for r in rows],
                windows=np.where(ok | cut, windows(n, length, hop), 0))


def check_clips(f, e, rate):
    c = f["clips"]
    n = len(e["keys"])
    expect(c["path"].shape == (n,), "/clips has %d rows, the folder %d "
           "files" % (c["path"].shape[0], n))
    paths = list(c["path"][...])
    bad = [i for i in range(n) if paths[i] != e["keys"][i]]
    expect(not bad, "/clips row %d is %r, want %r" % (
        bad[0], paths[bad[0]], e["keys"][bad[0]]) if bad else "")
    expect(list(f["labels"].asstr()[...]) == e["labels"], "/labels %r" % (
        list(f["labels"].asstr()[...]),))
    for col, want in (("label", e["label"]), ("n_samples", e["n"])):
        got = c[col][...]
        m = got != want
        expect(not m.any(), "/clips/%s of '%s': %d, want %d" % (
            col, e["keys"][first_bad(m)].decode(), got[first_bad(m)],
            want[first_bad(m)]) if m.any() else "")
    sr = c["sample_rate"][...]
    m = e["ok"] & (sr != rate)
    expect(not m.any(), "/clips/sample_rate of '%s': %s" % (
        e["keys"][first_bad(m)].decode(), sr[first_bad(m)])
        if m.any() else "")
    split = c["split"][...]
    expect(np.isin(split, list(GROUPS)).all(), "a clip without a split")
    return split


def check_skipped(f, e):
    s = f["skipped"]
    want = [i for i, ok in enumerate(e["ok"]) if not ok]
    clip = s["clip"][...]
    expect(sorted(clip.tolist()) == want, "/skipped names clips %s, the "
           "broken files are %s" % (clip.tolist()[:8], want[:8]))
    paths = list(s["path"][...])
    reasons = list(s["reason"].asstr(errors="replace")[...])
    example = {}
    for p, r, ci in zip(paths, reasons, clip):
        expect(p == e["keys"][ci], "/skipped '%r' points at clip %d" % (
            p, ci))
        expect(r.strip() != "", "/skipped '%s' has no reason" % p.decode())
        example.setdefault(e["kind"][ci], r)
    return example


def group_rows(f, split):
    """The row columns of all groups, and each row's group split id."""
    cols = {k: [] for k in ("clip", "segment", "offset", "label", "g")}
    shape = None
    for s, g in GROUPS.items():
        grp = f[g]
        n = grp["clip"].shape[0]
        for k in ("clip", "segment", "offset", "label"):
            cols[k].append(grp[k][...])
        cols["g"].append(np.full(n, s, dtype=np.int8))
        fs = grp["features"].shape
        if n:
            expect(shape is None or fs[1:] == shape, "features shape")
            shape = fs[1:]
    return {k: np.concatenate(v) for k, v in cols.items()}, shape


def check_rows(f, e, split, hop):
    r, shape = group_rows(f, split)
    n = len(e["keys"])
    counts = np.bincount(r["clip"], minlength=n)
    expect(len(counts) == n, "a row points past /clips")
    m = counts != e["windows"]
    expect(not m.any(), "'%s': %d rows, want %d windows" % (
        e["keys"][first_bad(m)].decode(), counts[first_bad(m)],
        e["windows"][first_bad(m)]) if m.any() else "")
    m = r["g"] != split[r["clip"]]
    expect(not m.any(), "a row of '%s' is in the wrong split group" % (
        e["keys"][r["clip"][first_bad(m)]].decode() if m.any() else ""))
    m = r["label"] != e["label"][r["clip"]]
    expect(not m.any(), "a row of '%s' has the wrong label" % (
        e["keys"][r["clip"][first_bad(m)]].decode() if m.any() else ""))
    order = np.lexsort((r["segment"], r["clip"]))
    starts = np.cumsum(counts) - counts
    want_seg = np.arange(len(order)) - starts[r["clip"][order]]
    m = r["segment"][order] != want_seg
    expect(not m.any(), "'%s': segments not 0, 1, ..." % (
        e["keys"][r["clip"][order][first_bad(m)]].decode()
        if m.any() else ""))
    m = r["offset"] != r["segment"].astype(np.int64) * hop
    expect(not m.any(), "a row's offset is not segment * hop")
    return len(r["clip"]), shape


def check_features(f):
    for g in GROUPS.values():
        d = f[g]["features"]
        step = max(1, (64 << 20) // max(1, d.dtype.itemsize *
                                         int(np.prod(d.shape[1:]))))
        for lo in range(0, d.shape[0], step):
            x = d[lo:lo + step]
            expect(np.isfinite(x).all(), "%s/features rows %d+: not "
                   "finite" % (g, lo))


def check(root, h5, rate, length, hop):
    """Checks h5 against the folder; returns a dict of counts, or raises
    Mismatch."""
    e = expected(root, rate, length, hop)
    with h5py.File(h5, "r") as f:
        split = check_clips(f, e, rate)
        reasons = check_skipped(f, e)
        rows, shape = check_rows(f, e, split, hop)
        check_features(f)
    return dict(clips=len(e["keys"]), usable=int(e["ok"].sum()),
                skipped=int((~e["ok"]).sum()), rows=rows, shape=shape,
                reasons=reasons,
                splits={g: int((split == s).sum())
                        for s, g in GROUPS.items()})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("h5")
    p.add_argument("--rate", type=int, required=True)
    p.add_argument("--len", type=int, required=True)
    p.add_argument("--hop", type=int, required=True)
    a = p.parse_args()
    try:
        r = check(a.dir, a.h5, a.rate, a.len, a.hop)
    except Mismatch as ex:
        print("soak_check: %s" % ex, file=sys.stderr)
        return 1
    print("soak_check: %(clips)d clips: %(usable)d usable, %(skipped)d "
          "skipped; %(rows)d rows" % r)
    for kind, reason in sorted(r["reasons"].items()):
        print("soak_check: %s: '%s'" % (kind, reason))
    return 0


if __name__ == "__main__":
    sys.exit(main())
