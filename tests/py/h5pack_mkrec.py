#!/usr/bin/env python3
"""h5pack_mkrec.py - write and read melpipe record streams as dicts, for
the tests of segment and h5pack, with the package's melpipe.stream
(rec_stream.py): independent of lib/rec_*.c, so that the tests make their
input and check their output without trusting the C library the programs
are built on.

As a module: write_stream(), read_stream(), expand_windows(), values(),
to_f32() and the item helpers. As a program it writes a synthetic stream
to stdout:

    h5pack_mkrec.py --kind features --dtype f16 --clips 20 --shape 32,1 \
        --rows 1:5 --splits hash --skip 3,7 --seed 1 > feats.rec

Run it with --help for every option.
"""
import argparse
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec_stream as rs  # noqa: E402

T_HEADER, T_AUDIO, T_FEATURES = rs.T_HEADER, rs.T_AUDIO, rs.T_FEATURES
T_SKIPPED, T_TRAILER, T_WINDOWS = rs.T_SKIPPED, rs.T_TRAILER, rs.T_WINDOWS
WIN_PAD = rs.WIN_PAD
DTYPES = dict(rs.DTYPE_IDS)                       # name: id
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}   # id: name
SPLITS = list(rs.SPLITS)
NP_DTYPE = {1: "<i2", 2: "<f4", 3: "<f2", 4: "<u2"}  # bf16 kept as bits
ITEM_FIELDS = ("type", "clip", "offset", "clip_samples", "segment", "label",
               "sample_rate", "split", "dtype", "key_len", "dim0", "dim1",
               "key", "data")


def as_dict(it):
    """A melpipe.stream Item as the dict the tests of segment and h5pack
    handle: its fields and data, the window fields in windows records
    only."""
    d = {f: getattr(it, f) for f in ITEM_FIELDS}
    if it.src is not None:  # the clip's source record, on its first
        d["source"] = it.src.source()
    if it.type == T_WINDOWS:
        d.update((f, getattr(it, f)) for f in rs.WINDOW_FIELDS)
    return d


def as_item(d):
    """The melpipe.stream Item of such a dict (missing fields 0, label
    -1; keys that are no field of a record left out)."""
    names = set(ITEM_FIELDS + rs.WINDOW_FIELDS) - {"type", "data", "key_len"}
    return rs.Item(d["type"], d.get("data", b""),
                   **{k: v for k, v in d.items() if k in names})


def write_stream(f, pairs, items, trailer=True):
    """Writes a header with pairs [(key, value)], the items (dicts with the
    fields of formats/record.md; 'data' bytes) and, unless told not to, the
    trailer, with melpipe.stream.Writer (which refuses a record that
    breaks a rule)."""
    w = rs.Writer(f, pairs)
    for d in items:
        w.write(as_item(d))
    if trailer:
        w.close()


def read_stream(data):
    """Reads and checks a whole stream (bytes) with melpipe.stream.
    Returns (pairs, items, trailer) where pairs is [(key bytes, value
    bytes)], items a list of dicts (as_dict) and trailer a dict. Raises
    rs.RecError."""
    pairs, items, trailer = rs.read_stream(data)
    return ([(k.encode(), v) for k, v in pairs],
            [as_dict(it) for it in items], trailer)


def expand_windows(items):
    """The items (dicts) with every windows record replaced by the audio
    records of its windows (melpipe.stream.expand), each with the keys
    of the windows record that are no field of a record."""
    out = []
    for d in items:
        if d["type"] != T_WINDOWS:
            out.append(d)
            continue
        extra = {k: v for k, v in d.items()
                 if k not in ITEM_FIELDS + rs.WINDOW_FIELDS}
        out += [dict(extra, **as_dict(w)) for w in rs.expand([as_item(d)])]
    return out


def values(it):
    """The payload of an audio/features item as a numpy array of its
    element type (bf16 as uint16 bits), shape [dim0, dim1]."""
    a = np.frombuffer(it["data"], dtype=NP_DTYPE[it["dtype"]])
    return a.reshape(it["dim0"], it["dim1"])


def to_f32(a, dtype):
    """Element values as float32 (bf16 bits widened exactly)."""
    if dtype == DTYPES["bf16"]:
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def bf16_bits(x):
    """float32 -> bf16 bits, rounded to nearest even (finite inputs)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def header_get(pairs, key):
    """The first value of key (str or bytes) in pairs, or None."""
    key = key if isinstance(key, bytes) else key.encode()
    for k, v in pairs:
        if k == key:
            return v
    return None


# ---------------------------------------------------------------------
# The synthetic stream generator.

def encode(vals, dtype):
    if dtype == "s16":
        return np.asarray(np.clip(np.round(vals * 32767), -32768, 32767),
                          dtype="<i2").tobytes()
    if dtype == "f32":
        return np.asarray(vals, dtype="<f4").tobytes()
    if dtype == "f16":
        return np.asarray(vals, dtype="<f2").tobytes()
    return bf16_bits(vals).astype("<u2").tobytes()


def odd_key(i):
    """Names a real corpus has: spaces, a newline, bytes not UTF-8."""
    return [b"with space/%d.wav" % i, b"new\nline_%d.wav" % i,
            b"latin1_\xe9t\xe9_%d.wav" % i,
            ("\u00fctf8_%d.wav" % i).encode()][i % 4]


def make_items(a, rng, nrng):
    labels = a.labels.split(",") if a.labels else []
    skip = {int(x) for x in a.skip.split(",") if x != ""}
    dt = DTYPES[a.dtype]
    items = []
    for c in range(a.clips):
        lab = rng.randrange(len(labels)) if labels else -1
        split = rng.randrange(1, 4) if a.splits == "hash" else 0
        if split == 3 and c < a.testing_from:
            split = 1  # the testing group comes late
        key = (odd_key(c) if a.odd_keys else
               ("%s/clip_%04d.wav" % (labels[lab] if labels else "x",
                                      c)).encode())
        n = (a.lengths[c % len(a.lengths)] if a.lengths else
             rng.randint(*a.len_range))
        base = {"clip": c, "clip_samples": n, "label": lab,
                "sample_rate": a.rate, "split": split, "key": key}
        if c in skip:
            items.append(dict(base, type=T_SKIPPED, clip_samples=0,
                              data=b"unreadable: synthetic reason %d" % c))
            continue
        if a.kind == "audio":
            vals = nrng.uniform(-1, 1, n * a.channels) * a.scale
            items.append(dict(base, type=T_AUDIO, dtype=dt, dim0=n,
                              dim1=a.channels, data=encode(vals, a.dtype)))
            continue
        m, fr = a.shape
        for s in range(rng.randint(*a.rows)):
            if a.frames:
                fr = rng.randint(*a.frames)
            shape = (m, fr + 1) if c == a.bad_shape and s == 0 else (m, fr)
            vals = nrng.normal(0, 20, shape) - 40
            items.append(dict(base, type=T_FEATURES, dtype=dt,
                              dim0=shape[0], dim1=shape[1], segment=s,
                              offset=s * a.hop, data=encode(vals, a.dtype)))
    return items, labels


def header_pairs(a, labels):
    pairs = [("producer", "h5pack_mkrec 1"), ("kind", a.kind),
             ("sample_rate", a.rate), ("dtype", a.dtype)]
    pairs += [("label", lab) for lab in labels]
    pairs += length_pairs(a)
    pairs += [("splits", "hash:10:10" if a.splits == "hash" else "none")]
    if not a.no_clips:
        pairs.append(("clips", a.clips if a.announce is None else
                      a.announce))
    if a.kind == "features":
        pairs += [("n_fft", 512), ("hop_length", a.hop), ("n_mels",
                  a.shape[0]), ("fmin", "0"), ("fmax", "2048.5"),
                  ("center", 0), ("top_db", "none"), ("log", "db")]
    pairs += [("stage", "wavcat 0.1.0\twavcat --rate %d DATA/" % a.rate)]
    pairs += [tuple(kv.split("=", 1)) for kv in a.header]
    return pairs


def length_pairs(a):
    """The header key that fixes the records' length (formats/hdf5.md:
    h5pack stores a stream without one ragged). auto: segment_len for
    features of one shape, duration for audio clips of one length,
    none when they vary (--frames, --len MIN:MAX, --lengths)."""
    key = a.length_key
    fixed_len = (a.lengths is None and a.len_range[0] == a.len_range[1]) \
        or (a.lengths is not None and len(set(a.lengths)) == 1)
    if key == "auto":
        if a.kind == "features":
            key = "none" if a.frames else "segment_len"
        else:
            key = "duration" if fixed_len else "none"
    if key == "segment_len":
        return [("segment_len", a.hop), ("segment_hop", a.hop)]
    if key == "duration":
        return [("duration", a.lengths[0] if a.lengths else
                 a.len_range[1])]
    return []


def pair(s):
    lo, _, hi = s.partition(":")
    return (int(lo), int(hi or lo))


def main():
    p = argparse.ArgumentParser(description="Write a synthetic melpipe "
                                "record stream to stdout.")
    p.add_argument("--kind", choices=["audio", "features"],
                   default="features")
    p.add_argument("--dtype", choices=list(DTYPES), default=None)
    p.add_argument("--clips", type=int, default=10)
    p.add_argument("--rate", type=int, default=16000)
    p.add_argument("--shape", type=lambda s: tuple(map(int, s.split(","))),
                   default=(32, 1), help="features: n_mels,n_frames")
    p.add_argument("--rows", type=pair, default=(1, 1),
                   help="features records per clip: N or MIN:MAX")
    p.add_argument("--frames", type=pair, default=None,
                   help="features: frames per record, N or MIN:MAX "
                   "(instead of --shape's; a ragged stream)")
    p.add_argument("--length-key", default="auto",
                   choices=["auto", "segment_len", "duration", "none"],
                   help="header key fixing the records' length (auto: "
                   "the one that fits, none when lengths vary)")
    p.add_argument("--hop", type=int, default=512,
                   help="sample offset between a clip's features records")
    p.add_argument("--len", dest="len_range", type=pair, default=(1000, 5000),
                   help="clip length in samples: N or MIN:MAX")
    p.add_argument("--lengths", type=lambda s: [int(x) for x in
                                                s.split(",")],
                   help="clip lengths N1,N2,... (cycled), instead of --len")
    p.add_argument("--scale", type=float, default=0.9)
    p.add_argument("--channels", type=int, default=1,
                   help="audio: interleaved channels per sample")
    p.add_argument("--labels", default="down,go,yes",
                   help="comma-separated label table; empty: none")
    p.add_argument("--splits", choices=["none", "hash"], default="hash")
    p.add_argument("--skip", default="", help="clip indices to make "
                   "skipped records")
    p.add_argument("--testing-from", type=int, default=0,
                   help="--splits hash: no clip below this index in the "
                   "testing split (its group appears late)")
    p.add_argument("--bad-shape", type=int, default=-1, help="clip whose "
                   "first record has one frame more")
    p.add_argument("--odd-keys", action="store_true")
    p.add_argument("--no-clips", action="store_true",
                   help="leave the clips count out of the header")
    p.add_argument("--announce", type=int, default=None,
                   help="clips count for the header (default: --clips)")
    p.add_argument("--header", action="append", default=[],
                   help="extra header pair KEY=VALUE")
    p.add_argument("--no-trailer", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.dtype is None:
        a.dtype = "s16" if a.kind == "audio" else "f16"
    rng = random.Random(a.seed)
    items, labels = make_items(a, rng, np.random.default_rng(a.seed))
    out = sys.stdout.buffer
    write_stream(out, header_pairs(a, labels), items,
                 trailer=not a.no_trailer)
    out.flush()


if __name__ == "__main__":
    main()
