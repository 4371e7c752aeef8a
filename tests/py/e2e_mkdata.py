#!/usr/bin/env python3
"""Make a small Speech Commands-style dataset for the end-to-end tests.

e2e_mkdata.py DIR [--labels N] [--per-label N] [--seconds S] [--rate R]

DIR/<label>/<hash>_nohash_<k>.wav, 16-bit mono noise plus a tone (never
silence), with validation_list.txt and testing_list.txt naming about a
fifth and a tenth of the files. Deterministic (seeded).
"""
import argparse
import os

import numpy as np
import soundfile as sf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--labels", type=int, default=3)
    ap.add_argument("--per-label", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rate", type=int, default=4096)
    a = ap.parse_args()
    rng = np.random.default_rng(1234)
    names = []
    n = int(round(a.seconds * a.rate))
    t = np.arange(n) / a.rate
    for li in range(a.labels):
        label = f"word{li}"
        os.makedirs(os.path.join(a.dir, label), exist_ok=True)
        for k in range(a.per_label):
            name = f"{label}/{rng.integers(1 << 32):08x}_nohash_{k % 2}.wav"
            x = 0.3 * np.sin(2 * np.pi * (100 + 150 * li + 7 * k) * t)
            x += 0.05 * rng.standard_normal(n)
            sf.write(os.path.join(a.dir, name), x, a.rate, subtype="PCM_16")
            names.append(name)
    val = names[1::5]
    test = names[2::10]
    with open(os.path.join(a.dir, "validation_list.txt"), "w") as f:
        f.write("".join(v + "\n" for v in val))
    with open(os.path.join(a.dir, "testing_list.txt"), "w") as f:
        f.write("".join(v + "\n" for v in test))


if __name__ == "__main__":
    main()
