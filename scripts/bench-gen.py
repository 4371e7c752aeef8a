#!/usr/bin/env python3
"""bench-gen - make a benchmark dataset for scripts/bench, fast; the
defaults make the 10-second job's (docs/BENCHMARKS.md).

Usage: bench-gen.py [--clips N] [--seconds S] [--rate HZ] [--labels L]
                    [--format wav|flac] [--jobs J] [--seed X] [--force] DIR

Writes N clips (16-bit mono PCM, S seconds at HZ; WAV, or FLAC with
--format flac) in a Speech Commands layout:

    DIR/<label>/<hex8>_nohash_<k>.wav       (.flac with --format flac)
    DIR/validation_list.txt    about 20% of the names, chosen by speaker
    DIR/testing_list.txt       about 10%
    DIR/.bench-params.json     the parameters and the split counts

Clips go round-robin over L label folders; within a label every four clips
share a speaker (<hex8>), and a speaker's clips all fall in one split, as in
Speech Commands. The samples are noise plus a label-dependent tone, cut at
random offsets from a pool (never zeros, every clip different). J worker
processes write the files with numpy; the WAV header is written directly,
FLAC files through libsndfile (libsndfile.so.1, found as the dynamic
loader finds it: LD_LIBRARY_PATH may name the folder that wavcat's
libraries were carried in), the library wavcat decodes them with.

When DIR/.bench-params.json already holds the same parameters and every
file is there, nothing is written (reuse); --force makes it again.
Prints one line of JSON with the parameters, split counts and seconds.
Needs python3 and numpy.
"""
import argparse
import hashlib
import json
import os
import shutil
import struct
import sys
import time

GEN_VERSION = 1
LABELS = ["down", "go", "left", "right", "stop", "up", "yes", "no",
          "on", "off"]
CLIPS_PER_SPEAKER = 4


def wav_header(n_samples, rate):
    """The 44-byte header of a 16-bit mono PCM WAV file."""
    data = n_samples * 2
    return (b"RIFF" + struct.pack("<I", 36 + data) + b"WAVE" +
            b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2,
                                  2, 16) +
            b"data" + struct.pack("<I", data))


def speaker_hex(label_speaker):
    """The speaker's 8 hex digits (deterministic)."""
    return hashlib.sha1(b"melpipe-bench-%d" % label_speaker).hexdigest()[:8]


def clip_names(n, labels, ext="wav"):
    """[(relative name, split)] for clips 0..n-1; split 0/1/2 = train,
    validation, testing, chosen by speaker hash (20% / 10%)."""
    out = []
    for i in range(n):
        label = labels[i % len(labels)]
        j = i // len(labels)
        spk, k = divmod(j, CLIPS_PER_SPEAKER)
        hx = speaker_hex(spk)
        u = int(hashlib.sha1(hx.encode()).hexdigest()[:8], 16) / 2.0**32
        split = 1 if u < 0.2 else 2 if u < 0.3 else 0
        out.append((f"{label}/{hx}_nohash_{k}.{ext}", split))
    return out


# Set in the parent before the workers fork, so that they share them
# instead of receiving copies.
_JOB = {}


def make_pools(n_labels, n_samples, rate, seed):
    """One buffer of s16 bytes per label: noise plus two label-dependent
    tones, long enough that clips cut at random offsets all differ."""
    import numpy as np
    rng = np.random.default_rng(seed)
    pool_len = (1 << 21) + n_samples
    t = np.arange(pool_len) / rate
    noise = rng.standard_normal(pool_len) * 3000.0
    pools = []
    for li in range(n_labels):
        f0 = 100.0 + 150.0 * li
        x = noise + 6000.0 * np.sin(2 * np.pi * f0 * t) + \
            3000.0 * np.sin(2 * np.pi * 2.7 * f0 * t + li)
        pools.append(np.clip(x, -32768, 32767).astype("<i2").tobytes())
    return pools


# libsndfile through ctypes, for FLAC: SF_INFO and the calls used.
SFM_WRITE = 0x20
SF_FORMAT_FLAC_PCM_16 = 0x170000 | 0x0002


def libsndfile():
    import ctypes

    class SfInfo(ctypes.Structure):
        _fields_ = [("frames", ctypes.c_int64), ("samplerate", ctypes.c_int),
                    ("channels", ctypes.c_int), ("format", ctypes.c_int),
                    ("sections", ctypes.c_int), ("seekable", ctypes.c_int)]
    try:
        lib = ctypes.CDLL("libsndfile.so.1")
    except OSError as e:
        raise SystemExit(f"bench-gen: --format flac needs libsndfile.so.1 "
                         f"({e}); set LD_LIBRARY_PATH to its folder")
    lib.sf_open.restype = ctypes.c_void_p
    lib.sf_open.argtypes = [ctypes.c_char_p, ctypes.c_int,
                            ctypes.POINTER(SfInfo)]
    lib.sf_write_short.restype = ctypes.c_int64
    lib.sf_write_short.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                   ctypes.c_int64]
    lib.sf_close.argtypes = [ctypes.c_void_p]
    lib.sf_strerror.restype = ctypes.c_char_p
    lib.sf_strerror.argtypes = [ctypes.c_void_p]
    return lib, SfInfo


def write_flac(sf, path, data, rate):
    lib, SfInfo = sf
    info = SfInfo(0, rate, 1, SF_FORMAT_FLAC_PCM_16, 0, 0)
    h = lib.sf_open(os.fsencode(path), SFM_WRITE, info)
    if not h:
        raise OSError(f"{path}: {lib.sf_strerror(None).decode()}")
    n = len(data) // 2
    wrote = lib.sf_write_short(h, data, n)
    lib.sf_close(h)
    if wrote != n:
        raise OSError(f"{path}: wrote {wrote} of {n} samples")


def write_range(bounds):
    """Worker: writes clips [lo, hi) of _JOB's name list."""
    import numpy as np
    lo, hi = bounds
    j = _JOB
    sf = libsndfile() if j["format"] == "flac" else None
    rng = np.random.default_rng(j["seed"] + 1 + lo)
    nbytes = j["n_samples"] * 2
    max_off = len(j["pools"][0]) // 2 - j["n_samples"]
    offs = rng.integers(0, max_off + 1, size=hi - lo)
    header = j["header"]
    n_labels = len(j["pools"])
    for i, off in zip(range(lo, hi), offs):
        b = int(off) * 2
        path = os.path.join(j["root"], j["names"][i])
        data = j["pools"][i % n_labels][b:b + nbytes]
        if sf:
            write_flac(sf, path, data, j["rate"])
            continue
        with open(path, "wb") as f:
            f.write(header + data)
    return hi - lo


def complete(root, params):
    """True when root holds exactly these parameters and every file."""
    try:
        with open(os.path.join(root, ".bench-params.json")) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return False
    if old.get("params") != params:
        return False
    n = 0
    for label in params["labels"]:
        try:
            n += sum(1 for e in os.scandir(os.path.join(root, label))
                     if e.name.endswith("." + params.get("format",
                                                          "wav")))
        except OSError:
            return False
    return n == params["clips"]


def main():
    ap = argparse.ArgumentParser(
        description="Make a benchmark dataset (Speech Commands layout); "
        "the defaults make the 10-second job's.")
    ap.add_argument("dir")
    ap.add_argument("--clips", type=int, default=39563)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rate", type=int, default=4096)
    ap.add_argument("--labels", type=int, default=5)
    ap.add_argument("--format", choices=("wav", "flac"), default="wav")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    if a.clips < 1 or not 1 <= a.labels <= len(LABELS) or a.seconds < 1 \
            or a.rate < 1 or a.jobs < 1:
        ap.error("--clips, --seconds, --rate, --jobs must be >= 1 and "
                 f"--labels 1..{len(LABELS)}")
    params = {"version": GEN_VERSION, "clips": a.clips,
              "seconds": a.seconds, "rate": a.rate,
              "labels": LABELS[:a.labels], "seed": a.seed}
    if a.format != "wav":
        params["format"] = a.format
    t0 = time.perf_counter()
    names = clip_names(a.clips, params["labels"], a.format)
    counts = [0, 0, 0]
    for _, s in names:
        counts[s] += 1
    result = {"params": params, "training": counts[0],
              "validation": counts[1], "testing": counts[2],
              "samples_per_clip": a.seconds * a.rate}
    if not a.force and complete(a.dir, params):
        result.update(reused=True, seconds=time.perf_counter() - t0)
        print(json.dumps(result))
        return 0

    if a.format == "flac":
        libsndfile()    # fails here, once, rather than in every worker
    if os.path.exists(a.dir):
        shutil.rmtree(a.dir)
    for label in params["labels"]:
        os.makedirs(os.path.join(a.dir, label))
    for fname, want in (("validation_list.txt", 1), ("testing_list.txt", 2)):
        with open(os.path.join(a.dir, fname), "w") as f:
            f.writelines(n + "\n" for n, s in names if s == want)

    # Fork workers over contiguous ranges; several ranges per worker so
    # that one slow range does not hold the others up.
    import multiprocessing as mp
    n_samples = a.seconds * a.rate
    _JOB.update(root=a.dir, names=[n for n, _ in names],
                n_samples=n_samples, seed=a.seed, format=a.format,
                rate=a.rate,
                header=wav_header(n_samples, a.rate),
                pools=make_pools(a.labels, n_samples, a.rate, a.seed))
    n_ranges = min(a.clips, a.jobs * 4)
    bounds = [a.clips * r // n_ranges for r in range(n_ranges + 1)]
    work = [(bounds[r], bounds[r + 1]) for r in range(n_ranges)]
    ctx = mp.get_context("fork")
    with ctx.Pool(a.jobs) as pool:
        written = sum(pool.imap_unordered(write_range, work))
    if written != a.clips:
        print(f"bench-gen: wrote {written} of {a.clips} clips",
              file=sys.stderr)
        return 1
    with open(os.path.join(a.dir, ".bench-params.json"), "w") as f:
        json.dump(result, f)
    result.update(reused=False, seconds=time.perf_counter() - t0)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
