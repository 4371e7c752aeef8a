#!/usr/bin/env python3
"""h5pack_pieces.py - items in pieces for h5pack: a stream maker and the
reference for the dataset h5pack makes of it.

    h5pack_pieces.py make [OPTIONS] > in.rec
    h5pack_pieces.py check in.rec out.h5...
    h5pack_pieces.py clamped raw.h5 out.h5
    h5pack_pieces.py set KEY=VALUE... < in.rec > out.rec

make writes a stream (tests/py/rec_stream.py's writer) whose items come
in pieces of random sizes: pieces of one frame, empty last pieces,
clip_samples 0 in pieces flagged more, items cut short by a skipped
record, beside items in one record and unusable inputs. Its features are
dB values as gpumel computes them before its top_db floor: the floor is
for h5pack to apply to the items that come in pieces (formats/record.md,
top_db and features in pieces).

check joins the stream's pieces as the spec says (rec_stream.join) and
checks every row of the file against it, in the layout of
formats/hdf5.md (fixed or ragged): the values bit for bit, after the
floor computed here in float64 for the features items that came in
pieces, and rounded to the stored type (float32; float16 and bf16 from
that float32, to nearest even); start, n_frames and the other columns;
/clips' n_samples (the largest clip_samples of the clip's records, or
the samples kept of a clip cut short) and /skipped. Prints 'ok' or the
first difference (exit 1). Several files of the same stream may be
checked (each compression).

clamped checks out.h5, made of a stream of features in pieces, against
raw.h5, made of the same items in one record each (left unclamped):
every row of out.h5 is raw.h5's raised to its floor, computed here.

set copies a stream with pairs of its header set (rec-gen's streams
have no top_db), however long: the data records pass as they are.
"""
import argparse
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec_stream as rs  # noqa: E402

NP = {1: "<i2", 2: "<f4", 3: "<f2", 4: "<u2"}  # bf16 as its bits
GROUPS = ["all", "training", "validation", "testing"]
HOP = 160


class Mismatch(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Mismatch(msg)


def bf16_bits(x):
    """float32 -> bf16 bits, to nearest even (finite values)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def widen(a, dtype):
    """Stored elements (bf16 as bits) as float64, exactly."""
    if dtype == 4:
        return (a.astype(np.uint32) << 16).view(np.float32).astype(
            np.float64)
    return a.astype(np.float64)


def encode(v, dtype):
    """float64 values as the stream's elements."""
    if dtype == 1:
        return np.clip(np.round(v * 32767), -32768, 32767).astype("<i2")
    if dtype == 4:
        return bf16_bits(v.astype(np.float32))
    return v.astype(NP[dtype])


# ---------------------------------------------------------------------------
# make

def cut(n, rng, one):
    """Piece sizes for an item of n frames: random, some of one frame."""
    out = []
    while n > 0:
        k = 1 if one or rng.random() < 0.2 else rng.randint(1, max(1, n))
        k = min(k, n)
        out.append(k)
        n -= k
    return out


def make(a):
    rng = random.Random(a.seed)
    nrng = np.random.default_rng(a.seed)
    dt = rs.DTYPE_IDS[a.dtype]
    audio = a.kind == "audio"
    pairs = [("producer", "h5pack_pieces 1"), ("kind", a.kind),
             ("sample_rate", "16000"), ("dtype", a.dtype),
             ("label", "no"), ("label", "yes"), ("splits", "hash:10:10"),
             ("clips", str(a.clips))]
    if a.layout == "fixed":
        pairs.append(("duration", str(a.frames * (1 if audio else HOP))))
    if not audio:
        pairs += [("hop_length", str(HOP)), ("n_mels", str(a.n_mels)),
                  ("log", "db"), ("top_db", a.top_db)]
    b = rs.Builder(pairs)
    lo, hi = (a.frames, a.frames) if a.layout == "fixed" else (1, a.frames)
    for c in range(a.clips):
        base = dict(clip=c, label=rng.randrange(2),
                    split=rng.randrange(1, 4), sample_rate=16000,
                    key=b"c/%04d.wav" % c)
        kind = rng.choice(["one", "pieces", "pieces", "cut", "skip"])
        if c == 0:
            kind = "pieces"  # the first row fixes a fixed layout's shape
        if kind == "skip":
            b.item(rs.T_SKIPPED, b"unreadable", **base)
            continue
        n = rng.randint(lo, hi)
        samples = n if audio else n * HOP
        if audio:
            v = nrng.uniform(-1, 1, n * a.channels) * 0.9
        else:
            # dB with a floor far below max - top_db, as gpumel's
            # unclamped pieces are, and one that is not, beside
            v = nrng.normal(-40, 25, (a.n_mels, n))
            if rng.random() < 0.8:
                v[:, rng.randrange(n)] = -200.0
        data = encode(v, dt)
        if kind == "one":
            b.item(a.rtype, data.tobytes(), dtype=dt, clip_samples=samples,
                   dim0=n if audio else a.n_mels,
                   dim1=a.channels if audio else n, **base)
            continue
        sizes = cut(n, rng, rng.random() < 0.1)
        if kind == "pieces" and (len(sizes) == 1 or rng.random() < 0.3):
            sizes.append(0)  # an empty last piece
        unknown = rng.random() < 0.5
        # a clip cut short was announced longer than what it kept
        told = samples + 1000 if kind == "cut" else samples
        at = 0
        for i, k in enumerate(sizes):
            flags = 0 if i == 0 else rs.F_CONT
            if i < len(sizes) - 1 or kind == "cut":
                flags |= rs.F_MORE
            if audio:
                p = data[at * a.channels:(at + k) * a.channels]
                dims = dict(dim0=k, dim1=a.channels)
                off = at
            else:
                p = np.ascontiguousarray(data[:, at:at + k])
                dims = dict(dim0=a.n_mels, dim1=k)
                off = at * HOP
            cs = 0 if unknown and flags & rs.F_MORE else told
            b.item(a.rtype, p.tobytes(), dtype=dt, clip_samples=cs,
                   offset=off, piece=flags, **dims, **base)
            at += k
        if kind == "cut":
            b.item(rs.T_SKIPPED, b"decoding failed (%d samples kept)" %
                   samples, clip_samples=samples, offset=samples, **base)
    sys.stdout.buffer.write(b.bytes())


# ---------------------------------------------------------------------------
# check

def header(pairs, key):
    for k, v in pairs:  # keys str, values bytes
        if k == key:
            return v.decode()
    return None


def floor_of(vals, dtype, top_db):
    """The item's floor as stored: its max - top_db in float64, then
    float32, then the stored type; and the floor widened to compare."""
    m = np.nanmax(widen(vals, dtype))
    f32 = np.float32(m - top_db)
    stored = {2: lambda: np.float32(f32), 3: lambda: np.float16(f32),
              4: lambda: bf16_bits(f32)}[dtype]()
    return np.asarray(stored).view(NP[dtype]), widen(np.asarray(stored),
                                                     dtype)


def clamped(vals, dtype, top_db):
    """vals (stored elements) raised to the item's floor."""
    fs, fw = floor_of(vals, dtype, top_db)
    return np.where(widen(vals, dtype) < fw, fs, vals).astype(NP[dtype])


def row_values(it, top_db, features):
    """The row's elements as the file must hold them, [dim0, dim1]."""
    v = np.frombuffer(it.data, NP[it.dtype]).reshape(it.dim0, it.dim1)
    came_in_pieces = it.pieces > 1 or it.cut_short
    if features and top_db is not None and came_in_pieces and it.dtype != 1:
        v = clamped(v, it.dtype, top_db)
    return v


def stored(ds):
    """A dataset's elements as stored (16-bit floats as their bits)."""
    import h5py
    t = ds.id.get_type()
    if t.get_class() == h5py.h5t.FLOAT and t.get_size() == 2:
        out = np.empty(ds.shape, np.uint16)
        if out.size:
            ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, out, mtype=t)
        return out
    return ds[()]


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32}[a.itemsize])


def check_group(g, name, rows, ragged, audio, top_db):
    expect(len(g["clip"]) == len(rows), "%s: %d rows, want %d" % (
        name, len(g["clip"]), len(rows)))
    for col in ("label", "clip", "segment", "offset"):
        want = [getattr(it, col) for it in rows]
        expect(g[col][()].tolist() == want, "%s/%s %s, want %s" % (
            name, col, g[col][()].tolist()[:6], want[:6]))
    feat = stored(g["features"])
    if ragged:
        lens = [it.dim0 if audio else it.dim1 for it in rows]
        expect(g["n_frames"][()].tolist() == lens, "%s/n_frames %s, want "
               "%s" % (name, g["n_frames"][()].tolist()[:6], lens[:6]))
        starts = np.cumsum([0] + lens)[:-1].tolist()
        expect(g["start"][()].tolist() == starts, "%s/start" % name)
        expect(feat.shape[0] == sum(lens), "%s: %d frames, want %d" % (
            name, feat.shape[0], sum(lens)))
    for i, it in enumerate(rows):
        want = row_values(it, top_db, not audio)
        if ragged:
            s = feat[starts[i]:starts[i] + lens[i]]
            got = s.reshape(lens[i], -1) if audio else s.T
        else:
            got = feat[i].reshape(want.shape)
        if not np.array_equal(bits(got), bits(want)):
            bad = np.argwhere(bits(got) != bits(want))[0].tolist()
            raise Mismatch("%s: row %d ('%s', %d pieces%s) differs at %s: "
                           "%r, want %r" % (
                               name, i, it.key.decode(), it.pieces,
                               ", cut short" if it.cut_short else "", bad,
                               got[tuple(bad)], want[tuple(bad)]))


def clip_lengths(items):
    """n_samples of each clip: the largest clip_samples of its records,
    but the samples kept when a skipped record follows its rows."""
    out, rows = {}, set()
    for it in items:
        c = it.clip
        if c not in out:
            out[c] = it.clip_samples
        elif it.type == rs.T_SKIPPED and c in rows:
            out[c] = it.clip_samples
            rows.add(("cut", c))
        elif ("cut", c) not in rows:
            out[c] = max(out[c], it.clip_samples)
        if it.type != rs.T_SKIPPED:
            rows.add(c)
    return out


def check(stream, path):
    import h5py
    import hdf5plugin  # noqa: F401
    pairs, items, _ = rs.read_stream(open(stream, "rb").read())
    items = rs.expand(items)
    joined = rs.join(items)
    audio = header(pairs, "kind") == "audio"
    t = header(pairs, "top_db")
    try:
        top_db = float(t) if t is not None else None
    except ValueError:
        top_db = None
    with h5py.File(path, "r") as f:
        ragged = f.attrs["layout"] == "ragged"
        for s, name in enumerate(GROUPS):
            rows = [it for it in joined if it.type != rs.T_SKIPPED and
                    it.split == s]
            if name in f:
                check_group(f[name], name, rows, ragged, audio, top_db)
            else:
                expect(not rows, "no group %s" % name)
        lens = clip_lengths(items)
        got = f["clips/n_samples"][()].tolist()
        want = [lens[c] for c in sorted(lens)]
        expect(got == want, "clips/n_samples %s, want %s" % (got, want))
        sk = [it for it in items if it.type == rs.T_SKIPPED]
        expect(f["skipped/path"][()].tolist() == [it.key for it in sk],
               "skipped/path")
        expect(f["skipped/reason"][()].tolist() == [it.data for it in sk],
               "skipped/reason")
        expect(f["skipped/clip"][()].tolist() == [it.clip for it in sk],
               "skipped/clip")


def check_clamped(raw_path, path):
    """path holds raw_path's rows raised to their floor (the root's
    top_db), its other datasets the same: raw_path is h5pack's file of a
    stream of items in one record, path of the same cut into pieces."""
    import h5py
    import hdf5plugin  # noqa: F401
    with h5py.File(raw_path, "r") as r, h5py.File(path, "r") as f:
        top_db = float(r.attrs["top_db"])
        ragged = r.attrs["layout"] == "ragged"
        for name in GROUPS:
            if name not in r:
                continue
            g, h = r[name], f[name]
            for col in g:
                # the statistics are of the raised values (t4011)
                if col != "features" and not col.startswith("stats_"):
                    expect(np.array_equal(g[col][()], h[col][()]),
                           "%s/%s differs" % (name, col))
            dtype = rs.DTYPE_IDS[g["features"].attrs["dtype"]]
            want = stored(g["features"]).view(NP[dtype])
            got = stored(h["features"]).view(NP[dtype])
            expect(want.shape == got.shape, "%s/features shape" % name)
            for i in range(len(g["clip"])):
                sl = slice(g["start"][i], g["start"][i] + g["n_frames"][i]) \
                    if ragged else i
                w = clamped(want[sl], dtype, top_db)
                expect(np.array_equal(bits(got[sl]), bits(w)),
                       "%s: row %d is not the raw row raised to its "
                       "floor" % (name, i))


# ---------------------------------------------------------------------------
# set

def set_header(pairs_to_set):
    """Copies the stream on stdin to stdout with KEY=VALUE pairs set in
    its header (replaced, or added), and the trailer made again: the
    data records pass unchanged, a record at a time
    (melpipe.stream.split_records), checked by nothing here."""
    fin, fout = sys.stdin.buffer, sys.stdout.buffer
    heads = []
    try:
        for rec in rs.split_records(fin):
            if rec[4] == rs.T_HEADER:
                r = rs.Reader(rec)
                r.next_record()
                pairs = [(k.encode(), v) for k, v in r.header]
                for kv in pairs_to_set:
                    k, v = (x.encode() for x in kv.split("=", 1))
                    pairs = [(a, b) for a, b in pairs if a != k] + [(k, v)]
                rec = rs.record(rs.T_HEADER, rs.header_meta(pairs))
            elif rec[4] == rs.T_TRAILER:
                fout.write(rs.record(rs.T_TRAILER, rs.trailer_meta(
                    **rs.trailer_fields(heads))))
                return
            heads.append(rec[:rs.HDR_SIZE])
            fout.write(rec)
    except rs.RecError as e:
        raise SystemExit("h5pack_pieces: %s" % e)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--kind", choices=["audio", "features"],
                   default="features")
    m.add_argument("--dtype", choices=list(rs.DTYPE_IDS), default="f32")
    m.add_argument("--layout", choices=["ragged", "fixed"],
                   default="ragged")
    m.add_argument("--top-db", default="80")
    m.add_argument("--clips", type=int, default=30)
    m.add_argument("--frames", type=int, default=40,
                   help="frames (audio: samples) of an item: at most "
                   "(ragged), exactly (fixed)")
    m.add_argument("--n-mels", type=int, default=8)
    m.add_argument("--channels", type=int, default=1)
    m.add_argument("--seed", type=int, default=1)
    h = sub.add_parser("set")
    h.add_argument("pairs", nargs="+", metavar="KEY=VALUE")
    c = sub.add_parser("check")
    c.add_argument("stream")
    c.add_argument("h5", nargs="+")
    c = sub.add_parser("clamped")
    c.add_argument("raw")
    c.add_argument("h5")
    a = p.parse_args()
    if a.cmd == "set":
        set_header(a.pairs)
        return
    if a.cmd == "make":
        a.rtype = rs.T_AUDIO if a.kind == "audio" else rs.T_FEATURES
        make(a)
        return
    for h5 in [a.h5] if a.cmd == "clamped" else a.h5:
        try:
            if a.cmd == "clamped":
                check_clamped(a.raw, h5)
            else:
                check(a.stream, h5)
        except Mismatch as e:
            print("h5pack_pieces: %s: %s" % (h5, e), file=sys.stderr)
            sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
