#!/usr/bin/env python3
"""gpumel_mkrec.py - synthetic audio record streams for gpumel's tests.

Writes a stream of N audio records of random lengths holding random
signals (never silence) to stdout, with skipped and unusable records mixed
in where asked:

    gpumel_mkrec.py --n 40 --len 1:5000 --dtype s16 --rate 16000 \
        --skip 3,7 --lens 0,100 --seed 1 > in.rec

--signal noise: white noise plus a sine, at a random level per record;
--signal tone: a loud sine plus noise 120 dB below it (so that --top-db
clamps); --dtype mixed cycles through s16, f32, f16 and bf16.
Unusable records for the error paths: --stereo I (2 channels), --other-rate
I (another sample rate than the stream's), --nan I (an f32 NaN).
"""
import argparse
import sys

import numpy as np

from gpumel_rec import Stream


def idx_list(s):
    return {int(v) for v in s.split(",") if v != ""} if s else set()


def signal(rng, n, kind, rate):
    t = np.arange(n) / rate
    f0 = rng.uniform(50, rate / 2.5)
    if kind == "tone":
        return (0.5 * np.sin(2 * np.pi * f0 * t) +
                1e-6 * rng.standard_normal(n))
    level = 10 ** rng.uniform(-2, -0.5)
    x = level * rng.standard_normal(n)
    return x + level * rng.uniform(0, 2) * np.sin(2 * np.pi * f0 * t)


def bf16_bits(x):
    """float32 -> bf16 bits, rounded to nearest even."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def encode(x, dtype):
    if dtype == "s16":
        return np.clip(np.round(x * 32768), -32768, 32767).astype("<i2")
    if dtype == "f32":
        return x.astype("<f4")
    if dtype == "f16":
        return x.astype("<f2")
    return bf16_bits(x).astype("<u2")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20, help="records")
    ap.add_argument("--len", default="1:4000", help="MIN:MAX samples")
    ap.add_argument("--lens", default="",
                    help="comma-separated lengths of the first records")
    ap.add_argument("--dtype", default="s16",
                    choices=["s16", "f32", "f16", "bf16", "mixed"])
    ap.add_argument("--rate", type=int, default=16000)
    ap.add_argument("--signal", default="noise", choices=["noise", "tone"])
    ap.add_argument("--skip", default="", help="indices of skipped records")
    ap.add_argument("--stereo", default="")
    ap.add_argument("--other-rate", default="")
    ap.add_argument("--nan", default="")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    rng = np.random.default_rng(a.seed)
    lo, hi = (int(v) for v in a.len.split(":"))
    fixed = [int(v) for v in a.lens.split(",") if v != ""]
    skip, stereo = idx_list(a.skip), idx_list(a.stereo)
    other, nan = idx_list(a.other_rate), idx_list(a.nan)
    kinds = ["s16", "f32", "f16", "bf16"]
    out = sys.stdout.buffer
    s = Stream(out, [("producer", "gpumel_mkrec 1"), ("kind", "audio"),
                     ("sample_rate", a.rate),
                     ("dtype", "s16" if a.dtype == "mixed" else a.dtype),
                     ("label", "a"), ("label", "b"), ("label", "c"),
                     ("splits", "none"), ("clips", a.n),
                     ("stage", "gpumel_mkrec 1\tgpumel_mkrec.py")])
    for i in range(a.n):
        n = fixed[i] if i < len(fixed) else int(rng.integers(lo, hi + 1))
        kw = dict(clip=i, clip_samples=n, label=i % 3 - (i % 5 == 4),
                  rate=a.rate, split=i % 4)
        key = "%s/clip%03d.wav" % ("abc"[i % 3], i)
        if i in skip:
            s.skipped(key, "cannot decode: test %d" % i, **kw)
            continue
        dtype = kinds[i % 4] if a.dtype == "mixed" else a.dtype
        x = signal(rng, n, a.signal, a.rate)
        if i in nan:
            dtype = "f32"
            x[n // 2] = np.nan
        if i in other:
            kw["rate"] = a.rate * 2
        data = encode(x, dtype)
        if i in stereo:
            kw["channels"] = 2
            data = np.repeat(data, 2)
        s.audio(key, data, dtype, **kw)
    s.finish()


if __name__ == "__main__":
    main()
