#!/usr/bin/env python3
"""soak_gen.py - make the soak's audio folder: N small WAV clips, fast.

Usage: soak_gen.py --clips N [--bad K] [--jobs J] [--seed S] DIR

Writes N clips in five label folders, DIR/<label>/<hex8>_nohash_<k>.wav
(Speech Commands names, so that --split hash keeps a speaker's clips
together), and DIR/.soak-manifest.tsv (a dot file: wavcat does not read
it) with one line per file:

    key  kind  rate  channels  frames

kind is 'ok' for a good clip, or the way the file is broken: 'empty' (zero
bytes), 'garbage' (random bytes under a .wav name) or 'truncated' (a WAV
header announcing more samples than the file holds). K of each kind are
spread evenly over the clips (default 5).

Good clips are 16-bit PCM, 0.2 to 2 s long, at 8000, 11025, 16000 or 22050
Hz, one clip in four stereo: noise plus a tone, cut at random offsets from
a pool made once (never silent, no two alike). J worker processes (default:
the online CPUs) write the files; the same N, K and S give the same files.
Prints one line: the counts and the seconds it took.
"""
import argparse
import multiprocessing as mp
import os
import struct
import sys
import time

import numpy as np

LABELS = ["bird", "cat", "dog", "frog", "tree"]
RATES = [8000, 11025, 16000, 22050]
MIN_S, MAX_S = 0.2, 2.0
BAD_KINDS = ["empty", "garbage", "truncated"]
MANIFEST = ".soak-manifest.tsv"

# Set in the parent before the workers fork: one pool of samples per rate
# and channel count, long enough for the longest clip at any offset.
POOLS = {}


def wav_header(frames, rate, channels, data_bytes=None):
    """A 44-byte PCM WAV header; data_bytes overrides the data size."""
    data = frames * channels * 2 if data_bytes is None else data_bytes
    return (b"RIFF" + struct.pack("<I", 36 + data) + b"WAVE" +
            b"fmt " + struct.pack("<IHHIIHH", 16, 1, channels, rate,
                                  rate * channels * 2, channels * 2, 16) +
            b"data" + struct.pack("<I", data))


def key_of(i):
    """Clip i's key: label folder round-robin, four clips per speaker."""
    speaker = (i // 4) * 2654435761 % (1 << 32)
    return "%s/%08x_nohash_%d.wav" % (LABELS[i % len(LABELS)], speaker,
                                      i % 4)


def bad_kinds(n, k):
    """{clip index: kind} for k files of each broken kind, spread out."""
    out = {}
    for j, kind in enumerate(BAD_KINDS):
        for m in range(k):
            i = (m * n) // max(k, 1) + 1 + j
            while i in out and i < n:
                i += 1
            if i < n:
                out[i] = kind
    return out


def make_pools(seed):
    rng = np.random.default_rng(seed)
    for rate in RATES:
        n = int(MAX_S * rate) * 2 + rate
        t = np.arange(n) / rate
        tone = 0.3 * np.sin(2 * np.pi * (300 + rate / 100) * t)
        for ch in (1, 2):
            x = tone[:, None] + 0.2 * rng.standard_normal((n, ch))
            POOLS[rate, ch] = np.clip(x * 32767, -32768, 32767).astype(
                "<i2").reshape(-1)


def write_range(args):
    """Writes clips [lo, hi); returns their manifest lines."""
    root, lo, hi, seed, bad = args
    rng = np.random.default_rng([seed, lo])
    lines = []
    for i in range(lo, hi):
        key = key_of(i)
        path = os.path.join(root, key)
        rate = RATES[int(rng.integers(len(RATES)))]
        ch = 2 if i % 4 == 3 else 1
        frames = int(round(rng.uniform(MIN_S, MAX_S) * rate))
        kind = bad.get(i, "ok")
        if kind == "empty":
            data = b""
        elif kind == "garbage":
            data = b"JUNK" + rng.bytes(3000)
        else:
            pool = POOLS[rate, ch]
            off = int(rng.integers(0, len(pool) // ch - frames)) * ch
            pcm = pool[off:off + frames * ch].tobytes()
            if kind == "truncated":
                pcm = pcm[:len(pcm) // 2]
            data = wav_header(frames, rate, ch) + pcm
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        lines.append("%s\t%s\t%d\t%d\t%d\n" % (key, kind, rate, ch, frames))
    return lines


def generate(root, n, k, jobs, seed):
    os.makedirs(root, exist_ok=True)
    for lab in LABELS:
        os.makedirs(os.path.join(root, lab), exist_ok=True)
    make_pools(seed)
    bad = bad_kinds(n, k)
    step = max(1, min(2000, n // (jobs * 4) + 1))
    tasks = [(root, lo, min(n, lo + step), seed, bad)
             for lo in range(0, n, step)]
    ctx = mp.get_context("fork")
    with ctx.Pool(jobs) as pool:
        parts = pool.map(write_range, tasks, chunksize=1)
    with open(os.path.join(root, MANIFEST), "w") as f:
        f.write("# key\tkind\trate\tchannels\tframes\n")
        for lines in parts:
            f.writelines(lines)
    return bad


def read_manifest(root):
    """[(key, kind, rate, channels, frames)] in clip-index order."""
    out = []
    with open(os.path.join(root, MANIFEST)) as f:
        for line in f:
            if line.startswith("#"):
                continue
            key, kind, rate, ch, frames = line.rstrip("\n").split("\t")
            out.append((key, kind, int(rate), int(ch), int(frames)))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clips", type=int, required=True)
    p.add_argument("--bad", type=int, default=5,
                   help="files of each broken kind (default 5)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("dir")
    a = p.parse_args()
    if a.clips < 1 or a.bad < 0 or a.jobs < 1:
        p.error("--clips and --jobs must be at least 1, --bad at least 0")
    t0 = time.monotonic()
    bad = generate(a.dir, a.clips, a.bad, a.jobs, a.seed)
    print("soak_gen: %d clips in '%s' (%d broken: %s) in %.1f s" % (
        a.clips, a.dir, len(bad), ", ".join(
            "%d %s" % (sum(v == b for v in bad.values()), b)
            for b in BAD_KINDS), time.monotonic() - t0))


if __name__ == "__main__":
    sys.exit(main())
