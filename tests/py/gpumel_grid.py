#!/usr/bin/env python3
"""gpumel_grid.py - gpumel against the float64 reference over a grid.

    gpumel_grid.py GPUMEL [--combos N] [--seed S] [--tol-db 0.01]

Runs GPUMEL (with --device cpu unless MELPIPE_GPUMEL_DEVICE says
otherwise) once per combination of options and checks each output with
gpumel_ref's checker. The combinations cover every value of every option
(n_fft/win_length/hop shapes including odd sizes and hop > n_fft, center
on and off, both pad modes, the three windows, both mel scales, both norms,
power 1 and 2, db/ln/none, top_db values and none, fmin/fmax, the output
types) in a Latin-square manner, each on a fresh random stream of random
lengths and mixed input types. One process, so librosa loads once.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import types

import numpy as np

import gpumel_ref

SHAPES = [(512, 512, 128), (400, 300, 160), (256, 200, 256),
          (511, 511, 100), (1024, 512, 333), (64, 48, 80), (2048, 2048, 512)]
CHOICES = {
    "shape": SHAPES,
    "center": [1, 0],
    "pad_mode": ["reflect", "constant"],
    "window": ["hann", "hamming", "rect"],
    "mel_scale": ["slaney", "htk"],
    "norm": ["slaney", "none"],
    "power": [2, 1],
    "log": ["db", "ln", "none", "db"],
    "top_db": ["80", "none", "30"],
    "band": [(0.0, None), (300.0, 5000.0), (20.0, None), (0.0, 3000.0)],
    "rate": [16000, 22050, 8000, 44100, 11025],
    "n_mels": [40, 128, 13, 64],
    "dtype": ["f32", "f32", "f16", "bf16"],
    "in_dtype": ["mixed", "s16", "f32", "f16"],
}


def schedule(n, rng):
    """n combinations: each option's values in shuffled rounds (every
    value equally often), the options shuffled independently, so that
    values meet many values of the other options."""
    cols = {}
    for name, vals in sorted(CHOICES.items()):
        seq = []
        while len(seq) < n:
            seq += [vals[i] for i in rng.permutation(len(vals))]
        cols[name] = seq[:n]
    return [combo({name: cols[name][k] for name in cols}) for k in range(n)]


def combo(c):
    if c["log"] != "db":
        c["top_db"] = "none"
    lo, hi = c["band"]
    c["fmin"] = lo
    c["fmax"] = hi if hi is not None and hi < c["rate"] / 2 else "nyquist"
    # no empty filters: a narrow band or a small FFT gets fewer mels
    n_bins = c["shape"][0] // 2 + 1
    c["n_mels"] = min(c["n_mels"], max(8, n_bins // 4))
    return c


def run(gpumel, c, tmp, k, tol_db):
    n_fft, win, hop = c["shape"]
    inp = os.path.join(tmp, "in%d.rec" % k)
    out = os.path.join(tmp, "out%d.rec" % k)
    lens = "0,1,2,%d,%d,%d,%d" % (n_fft // 2 - 1, n_fft // 2, n_fft - 1,
                                  n_fft)
    with open(inp, "wb") as f:
        subprocess.run([sys.executable, os.path.join(os.path.dirname(
            __file__), "gpumel_mkrec.py"), "--n", "16", "--len",
            "1:%d" % (6 * n_fft), "--lens", lens, "--rate", str(c["rate"]),
            "--dtype", c["in_dtype"], "--skip", "9", "--seed", str(k)],
            stdout=f, check=True)
    args = [gpumel, "-q", "--device",
            os.environ.get("MELPIPE_GPUMEL_DEVICE", "cpu"),
            "--n-fft", str(n_fft), "--win-length", str(win),
            "--hop", str(hop), "--window", c["window"],
            "--center" if c["center"] else "--no-center",
            "--pad-mode", c["pad_mode"], "--n-mels", str(c["n_mels"]),
            "--fmin", repr(c["fmin"]), "--mel-scale", c["mel_scale"],
            "--norm", c["norm"], "--power", str(c["power"]),
            "--log", c["log"], "--amin", "1e-10", "--dtype", c["dtype"],
            "-o", out, inp]
    if c["fmax"] != "nyquist":
        args += ["--fmax", repr(c["fmax"])]
    if c["log"] == "db":
        args += ["--top-db", c["top_db"]]
    subprocess.run(args, check=True)
    a = types.SimpleNamespace(
        input=inp, output=out, n_fft=n_fft, win_length=win, hop=hop,
        window=c["window"], center=c["center"], pad_mode=c["pad_mode"],
        n_mels=c["n_mels"], fmin=c["fmin"], fmax=str(c["fmax"]),
        mel_scale=c["mel_scale"], norm=c["norm"], power=c["power"],
        log=c["log"], amin=1e-10, top_db=c["top_db"], dtype=c["dtype"],
        bins="rfft", tol_db=tol_db, librosa=False, ignore_header=False,
        max_weak=0.03,
        expect_features=None,
        expect_skipped=1, expect_skipped_here=None)
    gpumel_ref.check(a)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gpumel")
    ap.add_argument("--combos", type=int, default=36)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol-db", type=float, default=0.01)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for k, c in enumerate(schedule(a.combos, rng)):
            desc = " ".join("%s=%s" % kv for kv in sorted(c.items())
                            if kv[0] != "band")
            print("combo %d: %s" % (k, desc))
            try:
                run(a.gpumel, c, tmp, k, a.tol_db)
            except (gpumel_ref.Fail, subprocess.CalledProcessError) as e:
                print("FAIL: %s" % e)
                failed += 1
    print("%d of %d combinations failed" % (failed, a.combos))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
