#!/usr/bin/env python3
"""Check a melpipe dataset against the audio folder it was made from.

e2e_check.py DATA OUT.h5 --len L --hop H [--duration-samples N] [--tol-db T]

Independently of the programs, from the WAV files and the split lists:
every clip is in /clips once, in sorted order, with its label and split;
each split group holds exactly that split's clips, every window of every
clip once (segment index, offset), with the right label; and the features
equal a float64 log-mel reference computed from the samples with the mel
parameters recorded in the file's attributes, within T dB.
"""
import argparse
import os
import sys

import h5py
import librosa
import numpy as np
import soundfile as sf

SPLITS = {1: "training", 2: "validation", 3: "testing"}


def attr(f, key):
    v = f.attrs[key]
    if isinstance(v, bytes):
        v = v.decode()
    if isinstance(v, np.ndarray):
        v = v.item()
    return v


def reference(x, f):
    """float64 log-mel of a window x (already n_fft long, no centring)."""
    sr = float(attr(f, "sample_rate"))
    n_fft = int(attr(f, "n_fft"))
    win = int(attr(f, "win_length"))
    hop = int(attr(f, "hop_length"))
    assert str(attr(f, "center")) in ("0", "false", "False")
    w = np.zeros(n_fft)
    lpad = (n_fft - win) // 2
    w[lpad:lpad + win] = np.hanning(win + 1)[:-1]
    n_frames = 1 + (len(x) - n_fft) // hop
    frames = np.stack([x[i * hop:i * hop + n_fft] for i in range(n_frames)])
    spec = np.abs(np.fft.rfft(frames * w, axis=1)) ** float(attr(f, "power"))
    htk = str(attr(f, "mel_scale")) == "htk"
    norm = None if str(attr(f, "norm")) == "none" else "slaney"
    fb = librosa.filters.mel(sr=sr, n_fft=n_fft, n_mels=int(attr(f, "n_mels")),
                             fmin=float(attr(f, "fmin")),
                             fmax=float(attr(f, "fmax")), htk=htk, norm=norm,
                             dtype=np.float64)
    mel = fb @ spec.T
    amin = float(attr(f, "amin"))
    mult = 10.0 if int(attr(f, "power")) == 2 else 20.0
    db = mult * np.log10(np.maximum(amin, mel))
    top = str(attr(f, "top_db"))
    if top != "none":
        db = np.maximum(db, db.max() - float(top))
    return db


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("h5")
    ap.add_argument("--len", type=int, required=True)
    ap.add_argument("--hop", type=int, required=True)
    ap.add_argument("--tol-db", type=float, default=0.01)
    ap.add_argument("--check-rows", type=int, default=200)
    a = ap.parse_args()

    keys = []
    for root, _, files in os.walk(a.data):
        for fn in files:
            if fn.endswith(".wav"):
                keys.append(os.path.relpath(os.path.join(root, fn), a.data))
    keys.sort(key=lambda k: k.encode())
    labels = sorted({k.split("/")[0] for k in keys})
    lists = {}
    for sp, fn in ((2, "validation_list.txt"), (3, "testing_list.txt")):
        p = os.path.join(a.data, fn)
        if os.path.exists(p):
            for line in open(p):
                if line.strip():
                    lists[line.strip()] = sp
    want_split = [lists.get(k, 1) for k in keys]
    want_label = [labels.index(k.split("/")[0]) for k in keys]

    bad = 0

    def fail(msg):
        nonlocal bad
        bad += 1
        print("FAIL:", msg)

    with h5py.File(a.h5, "r") as f:
        got_labels = [x.decode() if isinstance(x, bytes) else x
                      for x in f["labels"][()]]
        if got_labels != labels:
            fail(f"labels {got_labels} != {labels}")
        paths = [p.decode() if isinstance(p, bytes) else p
                 for p in f["clips"]["path"][()]]
        if paths != keys:
            fail(f"clips {paths[:5]}... != {keys[:5]}...")
        if list(f["clips"]["label"][()]) != want_label:
            fail("clip labels differ")
        if list(f["clips"]["split"][()]) != want_split:
            fail("clip splits differ")
        if f["skipped"]["path"].shape[0] != 0:
            fail("skipped is not empty")
        checked = 0
        for sp, name in SPLITS.items():
            clips = [i for i, s in enumerate(want_split) if s == sp]
            if not clips:
                if name in f and f[name]["features"].shape[0]:
                    fail(f"{name} has rows but no clips")
                continue
            g = f[name]
            clip = g["clip"][()]
            seg = g["segment"][()]
            off = g["offset"][()]
            lab = g["label"][()]
            want_rows = []
            cache = {}
            for c in clips:
                x, sr = sf.read(os.path.join(a.data, keys[c]), dtype="int16")
                cache[c] = x.astype(np.float64) / 32768.0
                nwin = 1 + (len(x) - a.len) // a.hop
                want_rows += [(c, s, s * a.hop) for s in range(nwin)]
            got_rows = list(zip(clip.tolist(), seg.tolist(), off.tolist()))
            if got_rows != want_rows:
                fail(f"{name}: rows (clip, segment, offset) differ: "
                     f"{len(got_rows)} vs {len(want_rows)} wanted")
                continue
            if list(lab) != [want_label[c] for c, _, _ in want_rows]:
                fail(f"{name}: row labels differ")
            feats = g["features"]
            step = max(1, len(want_rows) // a.check_rows)
            for r in range(0, len(want_rows), step):
                c, s, o = want_rows[r]
                ref = reference(cache[c][o:o + a.len], f)
                got = feats[r].astype(np.float64)
                err = np.abs(got - ref).max()
                if not err <= a.tol_db:
                    fail(f"{name} row {r} ({keys[c]} window {s}): "
                         f"max error {err:.4g} dB > {a.tol_db}")
                    break
                checked += 1
    print(f"checked {len(keys)} clips, {checked} feature rows against the "
          f"float64 reference; {bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
