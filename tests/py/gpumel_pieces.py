#!/usr/bin/env python3
"""gpumel_pieces.py - gpumel on items in pieces, for t3002.

Streams are read with rec_stream.py (every rule of the spec checked), and
the features pieces of an item joined as the spec says: frames side by
side, each piece's offset the item's + its first frame * hop_length.

    gpumel_pieces.py join WHOLE.rec PIECED.rec... [--top-db X] [--rel R]
                          [--ulp] [--min-pieced N] [--cut]

compares gpumel's output for a stream in pieces (each PIECED), its
features pieces joined, with its output for the same stream with every
item in one record (WHOLE): the same items in the same order, the same
metadata, the same reasons, the same values (bit for bit, or within R
relative). With --top-db the joined items are clamped as the spec tells
the joiner to: each raised to its maximum - X (the value, read back in
the output's type, minus X in float32, rounded to the output's type),
and some piece must hold a value below its own maximum - X (pieces are
unclamped). With --cut, an item cut short in PIECED (features pieces
ending in one flagged more, then a skipped record) compares with WHOLE's
item (there cut to the samples kept), and its skipped record is checked
and set aside.

    gpumel_pieces.py ref IN.rec OUT.rec --n-fft N ... (gpumel_ref's check
                          parameters, every one)

checks OUT (gpumel's output for IN, both maybe in pieces) against
gpumel_ref.py's float64 reference of each joined input item, and reports
apart the frames whose samples span a boundary between input pieces and
the first and last frame of every features piece; there must be some when
IN has pieces.

    gpumel_pieces.py forge IN.rec OUT.rec WHOLE.rec --pieces N
                          [--cut CLIP:KEPT] [--nan CLIP:SAMPLE]
                          [--unknown-length] [--whole-nan]

writes OUT: IN's audio items in pieces of N samples; with --cut, the item
of clip CLIP ends after its first KEPT samples (pieces flagged more) with
a skipped record, as a decoder that fails there writes it; with --nan,
sample SAMPLE of clip CLIP (f32, f16 or bf16) becomes a NaN. WHOLE gets
the same items in one record each, cut or NaN items cut to the samples
before the cut or the NaN (with --whole-nan, NaN items whole, NaN
included).
"""
import argparse
import re
import sys

import numpy as np

import rec_stream as rs

DT = {1: "<i2", 2: "<f4", 3: "<f2", 4: "<u2"}
NAMES = {1: "s16", 2: "f32", 3: "f16", 4: "bf16"}


class Fail(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


def read(path):
    with open(path, "rb") as f:
        return rs.read_stream(f.read())


def header(pairs):
    h = {}
    for k, v in pairs:
        h.setdefault(k, v.decode() if isinstance(v, bytes) else v)
    return h


# ------------------------------------------------------------- joining

class Joined:
    """An item as its pieces make it: the fields of its first piece (its
    last piece's clip_samples), the frames or samples of all of them, and
    where each piece starts; cut: the skipped record that ended it."""

    def __init__(self, first):
        self.first = first
        self.type = first.type
        self.parts = [first]
        self.cut = None

    def add(self, it):
        self.parts.append(it)

    @property
    def pieced(self):
        return len(self.parts) > 1 or self.first.flags != 0

    @property
    def clip_samples(self):
        return self.parts[-1].clip_samples

    def starts(self):
        """Where each piece starts: its first frame or sample."""
        out, n = [], 0
        for p in self.parts:
            out.append(n)
            n += p.dim1 if p.type == rs.T_FEATURES else p.dim0
        return out

    def matrix(self):
        """[dim0][frames] float32/16 values as float64, and the dtype."""
        f = self.first
        cols = [values(p) for p in self.parts]
        return np.concatenate(cols, axis=1), f.dtype

    def samples(self):
        return np.concatenate([samples(p) for p in self.parts])


def values(it):
    """A features record's values as float64, [dim0][dim1]."""
    a = np.frombuffer(it.data, DT[it.dtype])
    if it.dtype == 4:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64).reshape(it.dim0, it.dim1)


def samples(it):
    """An audio record's samples as gpumel reads them (float64)."""
    a = np.frombuffer(it.data, DT[it.dtype])
    if it.dtype == 1:
        return a.astype(np.float64) / 32768
    if it.dtype == 4:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64)


def join(items, hop=None):
    """The stream's items with every item in pieces joined (Joined, or
    the record for a skipped record or a windows record). Checks what
    the reader cannot: a features piece's offset is the item's + its
    first frame * hop."""
    out, cur = [], None
    for it in items:
        if cur is not None and it.type == rs.T_SKIPPED:
            cur.cut = it          # cut short: the item ends here
            out.append(cur)
            out.append(it)
            cur = None
            continue
        if cur is not None:       # a cont piece (the reader checked)
            if it.type == rs.T_FEATURES and hop:
                frame = sum(p.dim1 for p in cur.parts)
                expect(it.offset == cur.first.offset + frame * hop,
                       "clip %d: piece at offset %d, want %d" %
                       (it.clip, it.offset, cur.first.offset +
                        frame * hop))
            cur.add(it)
            if not it.flags & rs.F_MORE:
                out.append(cur)
                cur = None
            continue
        if it.type in (rs.T_AUDIO, rs.T_FEATURES):
            j = Joined(it)
            if it.flags & rs.F_MORE:
                cur = j
            else:
                out.append(j)
        else:
            out.append(it)
    return out


def to_dtype(v, dtype):
    """float64 values -> the output type's values (float64 again)."""
    if dtype == 2:
        return v.astype(np.float32).astype(np.float64)
    if dtype == 3:
        return v.astype(np.float16).astype(np.float64)
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def clamp(m, dtype, top_db):
    """The joiner's top_db: values raised to the item's maximum - top_db
    (in float32, as gpumel computes it, then in the output's type)."""
    if m.size == 0:
        return m
    floor = np.float32(m.max()) - np.float32(top_db)
    return np.maximum(m, to_dtype(np.array([floor], np.float64), dtype)[0])


def fields(x):
    f = x.first if isinstance(x, Joined) else x
    return (f.type, f.clip, f.segment, f.key, f.label, f.split,
            f.sample_rate, f.offset)


def compare_join(a):
    _, ib, _ = read(a.whole)
    jb = join(ib)
    expect(not any(isinstance(x, Joined) and x.pieced for x in jb),
           "WHOLE has items in pieces")
    for path in a.pieced:
        pa, ia, _ = read(path)
        try:
            compare_one(a, join(ia, int(header(pa)["hop_length"])), jb)
        except Fail as e:
            raise Fail("%s: %s" % (path, e))


def compare_one(a, ja, jb):
    n_pieced = n_pieces = n_cut = n_low = worst = 0
    i = k = 0
    while i < len(ja) or k < len(jb):
        expect(i < len(ja) and k < len(jb), "%d items against %d" %
               (len(ja), len(jb)))
        x, y = ja[i], jb[k]
        i, k = i + 1, k + 1
        expect(fields(x) == fields(y), "item %d: fields %r, want %r" %
               (i - 1, fields(x), fields(y)))
        if not isinstance(x, Joined):
            expect(x.data == y.data and x.clip_samples == y.clip_samples,
                   "item %d: %r (%d), want %r (%d)" %
                   (i - 1, x.data, x.clip_samples, y.data, y.clip_samples))
            continue
        if x.cut is not None:
            # WHOLE holds the samples kept in one record
            expect(a.cut, "item %d: cut short" % (i - 1))
            kept = re.search(rb"\((\d+) (samples?) kept\)", x.cut.data)
            expect(kept and (kept.group(2) == b"sample") ==
                   (kept.group(1) == b"1"),
                   "item %d: reason %r" % (i - 1, x.cut.data))
            kept = x.first.offset + int(kept.group(1))
            expect(x.cut.offset == kept and x.cut.clip_samples == kept and
                   x.parts[-1].flags & rs.F_MORE,
                   "item %d: cut short at offset %d, clip_samples %d, "
                   "want %d after a piece flagged more" %
                   (i - 1, x.cut.offset, x.cut.clip_samples, kept))
            n_cut += 1
            i += 1            # its skipped record
        else:
            expect(x.clip_samples == y.clip_samples,
                   "item %d: clip_samples %d, want %d" %
                   (i - 1, x.clip_samples, y.clip_samples))
        if x.pieced:
            n_pieced += 1
            n_pieces += len(x.parts)
        mx, dt = x.matrix()
        my, _ = y.matrix()
        expect(x.first.dtype == y.first.dtype, "item %d: dtype" % (i - 1))
        expect(mx.shape == my.shape, "item %d (clip %d): shape %s, want %s"
               % (i - 1, x.first.clip, mx.shape, my.shape))
        if a.top_db is not None and x.pieced:
            # a piece that its own clamp would change: not clamped
            n_low += sum(int(np.any(clamp(values(p), dt, a.top_db) !=
                                    values(p))) for p in x.parts if p.dim1)
            mx = clamp(mx, dt, a.top_db)
        if a.top_db is not None and not x.pieced:
            expect(np.array_equal(mx, clamp(mx, dt, a.top_db)),
                   "item %d: in one record but not clamped" % (i - 1))
        err = np.abs(mx - my)
        allow = a.rel * np.maximum(np.abs(my), 1.0)
        if a.ulp and dt != 2:
            allow = allow + ulp(my, dt)
        bad = err > allow
        if np.any(bad):
            j = np.argmax(bad)
            r, c = np.unravel_index(j, bad.shape)
            raise Fail("item %d (clip %d): %d values differ, first at "
                       "mel %d frame %d of %d: %.9g, want %.9g; pieces "
                       "start at frames %s" %
                       (i - 1, x.first.clip, int(bad.sum()), r, c,
                        mx.shape[1], mx.flat[j], my.flat[j], x.starts()))
        if err.size:
            worst = max(worst, float((err / np.maximum(np.abs(my),
                                                       1.0)).max()))
    expect(n_pieced >= a.min_pieced, "%d items in pieces, want at least %d"
           % (n_pieced, a.min_pieced))
    expect(a.top_db is None or n_low > 0, "no features piece holds a value "
           "below its own maximum - top_db: are pieces clamped?")
    print("ok: %d items, %d in %d pieces, %d cut short, max relative "
          "difference %.3g%s" % (len(jb), n_pieced, n_pieces, n_cut, worst,
                                 ", %d pieces unclamped" % n_low
                                 if a.top_db is not None else ""))


def ulp(v, dtype):
    bits = 10 if dtype == 3 else 7
    e = np.floor(np.log2(np.maximum(np.abs(v), 2.0 ** -14)))
    return 2.0 ** (e - bits)


# ------------------------------------------------------------- reference

def boundary_frames(starts, n_frames, p):
    """Frames whose n_fft samples (padded signal) hold samples of two
    input pieces: a boundary b lies strictly inside them."""
    pad = p.n_fft // 2 if p.center else 0
    out = set()
    for b in starts[1:]:
        for t in range(n_frames):
            s = t * p.hop - pad
            if s < b < s + p.n_fft:
                out.add(t)
    return out


def check_ref(a):
    import gpumel_ref as gr
    p = a
    p.top_db = None if a.top_db == "none" else float(a.top_db)
    ipairs, ii, _ = read(a.input)
    opairs, oo, _ = read(a.output)
    p.rate = int(header(ipairs)["sample_rate"])
    p.fmax = p.rate / 2 if a.fmax == "nyquist" else float(a.fmax)
    fb, win = gr.fbank(p), gr.window(p)
    ins = {(x.first.clip, x.first.segment): x for x in join(ii)
           if isinstance(x, Joined)}
    stats = {"max_err": 0.0, "weak": 0, "values": 0}
    n_feat = n_bound = n_edge = 0
    worst_b = 0.0
    for x in join(oo, p.hop):
        if not isinstance(x, Joined):
            continue
        src = ins[(x.first.clip, x.first.segment)]
        xs = src.samples()
        if x.cut is not None:
            xs = xs[:x.cut.offset - x.first.offset]
        energy = []
        ref = gr.melspec(xs, p, fb, win, energy)
        e = np.array(energy) if p.power == 2 else np.sqrt(energy)
        ceiling = fb.sum(axis=1)[:, None] * e[None, :]
        out, dt = x.matrix()
        if p.top_db is not None and x.pieced:
            out = clamp(out, dt, p.top_db)
        expect(out.shape == ref.shape, "clip %d: shape %s, want %s" %
               (x.first.clip, out.shape, ref.shape))
        stats["max_err"] = max(stats["max_err"], gr.compare(
            x.first.clip, out, ref, p, "ref", stats, ceiling))
        # the frames at the boundaries, checked again alone
        bf = boundary_frames(src.starts(), ref.shape[1], p)
        edges = set()
        for s in x.starts()[1:]:
            edges |= {s - 1, s}
        edges &= set(range(ref.shape[1]))
        for t in sorted(bf | edges):
            err = gr.compare(x.first.clip, out[:, t:t + 1], ref[:, t:t + 1],
                             p, "ref at a boundary frame %d" % t, stats,
                             ceiling[:, t:t + 1])
            worst_b = max(worst_b, err)
        n_bound += len(bf)
        n_edge += len(edges)
        n_feat += 1
    pieced_in = any(x.pieced for x in ins.values())
    expect(not pieced_in or n_bound > 0,
           "no frame spans a boundary between input pieces")
    print("ok: %d items, %d frames across input pieces, %d at features "
          "piece edges, max err %.3g (at boundaries %.3g), %d of %d values "
          "below float32 resolution" %
          (n_feat, n_bound, n_edge, stats["max_err"], worst_b,
           stats["weak"], stats["values"]))


# ------------------------------------------------------------- forging

def forge(a):
    pairs, items, _ = read(a.input)
    cut = dict(tuple(int(v) for v in s.split(":")) for s in a.cut)
    nan = dict(tuple(int(v) for v in s.split(":")) for s in a.nan)
    bo = rs.Builder(pairs)
    bw = rs.Builder(pairs)
    n = a.pieces
    for it in items:
        f = rs.fields(it)
        if it.type != rs.T_AUDIO:
            bo.item(it.type, it.data, **f)
            bw.item(it.type, it.data, **f)
            continue
        size = rs.DTYPES[it.dtype][1]
        data = bytearray(it.data)
        end = it.dim0
        if it.clip in nan:
            s = nan[it.clip]
            bits = {2: b"\x00\x00\xc0\x7f", 3: b"\x00\x7e", 4: b"\xc0\x7f"}
            data[s * size:(s + 1) * size] = bits[it.dtype]
            end = it.dim0 if a.whole_nan else s
        if it.clip in cut:
            end = cut[it.clip]
        w = dict(f, dim0=end)
        bw.item(rs.T_AUDIO, bytes(data[:end * size]), **w)
        last = cut[it.clip] if it.clip in cut else it.dim0
        if last <= n and it.clip not in cut:
            bo.item(rs.T_AUDIO, bytes(data), **f)
            continue
        for s in range(0, last, n):
            c = min(n, last - s)
            more = s + c < last or it.clip in cut
            flags = (rs.F_CONT if s else 0) | (rs.F_MORE if more else 0)
            g = dict(f, offset=it.offset + s, dim0=c, piece=flags)
            if more and a.unknown_length:
                g["clip_samples"] = 0
            bo.item(rs.T_AUDIO, bytes(data[s * size:(s + c) * size]), **g)
        if it.clip in cut:
            k = it.offset + last
            bo.item(rs.T_SKIPPED, b"decoding failed after 0.0 s (%d samples "
                    b"kept): test" % last, clip=it.clip, offset=k,
                    clip_samples=k, segment=it.segment, label=it.label,
                    sample_rate=it.sample_rate, split=it.split, key=it.key)
    with open(a.output, "wb") as f:
        f.write(bo.bytes())
    with open(a.whole, "wb") as f:
        f.write(bw.bytes())


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    j = sub.add_parser("join")
    j.add_argument("whole")
    j.add_argument("pieced", nargs="+")
    j.add_argument("--top-db", type=float)
    j.add_argument("--rel", type=float, default=0.0)
    j.add_argument("--ulp", action="store_true",
                   help="allow one unit in the last place of f16/bf16 "
                   "values (the joiner's clamp floor is rounded twice)")
    j.add_argument("--min-pieced", type=int, default=1)
    j.add_argument("--cut", action="store_true")
    r = sub.add_parser("ref")
    r.add_argument("input")
    r.add_argument("output")
    for name, t in (("n-fft", int), ("win-length", int), ("hop", int),
                    ("window", str), ("center", int), ("pad-mode", str),
                    ("n-mels", int), ("fmin", float), ("fmax", str),
                    ("mel-scale", str), ("norm", str), ("power", int),
                    ("log", str), ("amin", float), ("top-db", str),
                    ("dtype", str)):
        r.add_argument("--" + name, type=t, required=True)
    r.add_argument("--bins", default="rfft", choices=["rfft", "linspace"])
    r.add_argument("--tol-db", type=float, default=0.01)
    f = sub.add_parser("forge")
    f.add_argument("input")
    f.add_argument("output")
    f.add_argument("whole")
    f.add_argument("--pieces", type=int, required=True)
    f.add_argument("--cut", action="append", default=[])
    f.add_argument("--nan", action="append", default=[])
    f.add_argument("--unknown-length", action="store_true")
    f.add_argument("--whole-nan", action="store_true")
    a = ap.parse_args()
    import gpumel_ref
    try:
        {"join": compare_join, "ref": check_ref, "forge": forge}[a.mode](a)
    except (Fail, gpumel_ref.Fail, rs.RecError) as e:
        print("FAIL: %s" % e)
        sys.exit(1)


if __name__ == "__main__":
    main()
