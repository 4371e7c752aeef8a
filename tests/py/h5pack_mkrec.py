#!/usr/bin/env python3
"""h5pack_mkrec.py - write and read melpipe record streams in Python.

An implementation of formats/record.md made from the spec alone, independent
of lib/rec_*.c, so the tests of segment and h5pack make their input and check
their output without trusting the C library they are built on.

As a module: crc32c(), write_stream(), read_stream(), to_f32() and the
record/item helpers. As a program it writes a synthetic stream to stdout:

    h5pack_mkrec.py --kind features --dtype f16 --clips 20 --shape 32,1 \
        --rows 1:5 --splits hash --skip 3,7 --seed 1 > feats.rec

Run it with --help for every option.
"""
import argparse
import random
import struct
import sys

import numpy as np

MAGIC = b"MELP"
VERSION = 1
T_HEADER, T_AUDIO, T_FEATURES, T_SKIPPED, T_TRAILER = 1, 2, 3, 4, 5
T_WINDOWS = 6  # format version 2: samples once, windows described
WIN_PAD = 1
DTYPES = {"s16": 1, "f32": 2, "f16": 3, "bf16": 4}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
SPLITS = ["none", "training", "validation", "testing"]
NP_DTYPE = {1: "<i2", 2: "<f4", 3: "<f2", 4: "<u2"}  # bf16 kept as bits


def _crc_tables():
    """Slicing-by-8 tables of the reflected Castagnoli polynomial."""
    t0 = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t0.append(c)
    tables = [t0]
    for _ in range(7):
        prev = tables[-1]
        tables.append([(prev[n] >> 8) ^ t0[prev[n] & 0xFF]
                       for n in range(256)])
    return tables


_T = _crc_tables()


def crc32c(data, crc=0):
    """CRC32C of data, continuing from crc (a finished value, 0 to start)."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _T
    crc ^= 0xFFFFFFFF
    mv = memoryview(bytes(data))
    n8 = len(mv) // 8 * 8
    for (q,) in struct.iter_unpack("<Q", mv[:n8]):
        x = crc ^ (q & 0xFFFFFFFF)
        hi = q >> 32
        crc = (t7[x & 0xFF] ^ t6[(x >> 8) & 0xFF] ^ t5[(x >> 16) & 0xFF] ^
               t4[x >> 24] ^ t3[hi & 0xFF] ^ t2[(hi >> 8) & 0xFF] ^
               t1[(hi >> 16) & 0xFF] ^ t0[hi >> 24])
    for b in mv[n8:]:
        crc = t0[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def record(rtype, meta, payload=b""):
    """One record: the 24-byte header with its crc, metadata, payload."""
    hdr = MAGIC + struct.pack("<BBBBIII", rtype, 0, VERSION, 0, len(meta),
                              len(payload), len(payload))
    crc = crc32c(hdr + b"\0\0\0\0" + meta + payload)
    return hdr + struct.pack("<I", crc) + meta + payload, crc


def header_meta(pairs):
    out = b""
    for k, v in pairs:
        out += _b(k) + b"\0" + _b(v) + b"\0"
    return out


def _b(s):
    return s if isinstance(s, bytes) else str(s).encode()


def item_meta(it):
    key = _b(it["key"])
    return struct.pack("<QQQIiIBBHII", it["clip"], it.get("offset", 0),
                       it.get("clip_samples", 0), it.get("segment", 0),
                       it.get("label", -1), it.get("sample_rate", 0),
                       it.get("split", 0), it.get("dtype", 0), len(key),
                       it.get("dim0", 0), it.get("dim1", 0)) + key


def write_stream(f, pairs, items, trailer=True):
    """Writes a header with pairs [(key, value)], the items (dicts with the
    fields of formats/record.md; 'data' bytes) and, unless told not to, the
    trailer."""
    rec, crc = record(T_HEADER, header_meta(pairs))
    f.write(rec)
    crcs = [crc]
    n_items = n_skipped = 0
    for it in items:
        rec, crc = record(it["type"], item_meta(it), it.get("data", b""))
        f.write(rec)
        crcs.append(crc)
        if it["type"] == T_SKIPPED:
            n_skipped += 1
        else:
            n_items += 1
    if trailer:
        check = crc32c(b"".join(struct.pack("<I", c) for c in crcs))
        meta = struct.pack("<QQQII", n_items + n_skipped, n_items,
                           n_skipped, check, 0)
        f.write(record(T_TRAILER, meta)[0])


class StreamError(Exception):
    pass


def read_stream(data):
    """Parses and verifies a whole stream (bytes). Returns (pairs, items,
    trailer) where pairs is [(key bytes, value bytes)], items a list of
    dicts (data as bytes) and trailer a dict. Raises StreamError."""
    pos, crcs, pairs, items, trailer = 0, [], None, [], None
    while pos < len(data):
        if trailer is not None:
            raise StreamError("bytes after the trailer at %d" % pos)
        if len(data) - pos < 24:
            raise StreamError("truncated record header at %d" % pos)
        (magic, rtype, flags, ver, _res, mlen, dlen,
         rlen, crc) = struct.unpack_from("<4sBBBBIIII", data, pos)
        if magic != MAGIC or ver not in (1, 2) or flags != 0 or \
                dlen != rlen or (rtype == T_WINDOWS and ver != 2):
            raise StreamError("bad record header at %d" % pos)
        end = pos + 24 + mlen + dlen
        if end > len(data):
            raise StreamError("truncated record at %d" % pos)
        body = bytearray(data[pos:end])
        body[20:24] = b"\0\0\0\0"
        if crc32c(body) != crc:
            raise StreamError("crc mismatch at %d" % pos)
        meta = data[pos + 24:pos + 24 + mlen]
        payload = data[pos + 24 + mlen:end]
        if rtype == T_HEADER:
            if pairs is not None:
                raise StreamError("second header at %d" % pos)
            parts = meta.split(b"\0")
            if parts[-1] != b"" or len(parts) % 2 != 1:
                raise StreamError("bad header pairs")
            pairs = list(zip(parts[0:-1:2], parts[1:-1:2]))
        elif pairs is None:
            raise StreamError("no header first")
        elif rtype in (T_AUDIO, T_FEATURES, T_SKIPPED, T_WINDOWS):
            items.append(parse_item(rtype, meta, payload))
        elif rtype == T_TRAILER:
            n, ni, ns, check, _r = struct.unpack("<QQQII", meta)
            want = crc32c(b"".join(struct.pack("<I", c) for c in crcs))
            nsk = sum(1 for it in items if it["type"] == T_SKIPPED)
            if (n, ni, ns, check) != (len(items), len(items) - nsk, nsk,
                                      want):
                raise StreamError("trailer disagrees with the stream")
            trailer = {"n_records": n, "n_items": ni, "n_skipped": ns}
        else:
            raise StreamError("unknown record type %d" % rtype)
        crcs.append(crc)
        pos = end
    if trailer is None:
        raise StreamError("no trailer: truncated stream")
    return pairs, items, trailer


def parse_item(rtype, meta, payload):
    f = struct.unpack_from("<QQQIiIBBHII", meta)
    keys = ("clip", "offset", "clip_samples", "segment", "label",
            "sample_rate", "split", "dtype", "key_len", "dim0", "dim1")
    it = dict(zip(keys, f))
    it["type"] = rtype
    it["key"] = bytes(meta[48:48 + it["key_len"]])
    it["data"] = bytes(payload)
    extra = 16 if rtype == T_WINDOWS else 0
    if len(meta) != 48 + it["key_len"] + extra:
        raise StreamError("meta_len != 48 + key_len%s" %
                          (" + 16" if extra else ""))
    if rtype == T_WINDOWS:
        (it["win_len"], it["win_hop"], it["n_windows"],
         it["win_flags"]) = struct.unpack_from("<IIII", meta,
                                               48 + it["key_len"])
    return it


def expand_windows(items):
    """The items with every windows record replaced by the audio records
    of its windows (formats/record.md: window i is win_len frames from
    frame i * win_hop, zero-padded past the payload)."""
    out = []
    for it in items:
        if it["type"] != T_WINDOWS:
            out.append(it)
            continue
        frame = len(it["data"]) // it["dim0"]
        for i in range(it["n_windows"]):
            s = i * it["win_hop"]
            data = it["data"][s * frame:(s + it["win_len"]) * frame]
            data += bytes(it["win_len"] * frame - len(data))
            w = {k: v for k, v in it.items()
                 if k not in ("win_len", "win_hop", "n_windows",
                              "win_flags")}
            w.update(type=T_AUDIO, offset=it["offset"] + s,
                     segment=it["segment"] + i, dim0=it["win_len"],
                     data=data)
            out.append(w)
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
    for k, v in pairs:
        if k == _b(key):
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
