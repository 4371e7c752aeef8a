#!/usr/bin/env python3
"""h5pack_check.py STREAM OUT.h5 - check a dataset file against its input.

Reads the record stream h5pack was given (with the independent reader in
h5pack_mkrec.py) and the HDF5 file it wrote (with h5py), and checks every
part of the layout of formats/hdf5.md: the split groups, every row's values
bit for bit and its label/clip/segment/offset, /labels, /clips, /skipped
and the root attributes. Prints 'ok' or the first difference (exit 1).

--reader hdf5plugin imports hdf5plugin (h5py's usual way to read zstd);
--reader plain relies on HDF5_PLUGIN_PATH alone. --filter names the
compression every row dataset must have (none, gzip, zstd).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5pack_mkrec as mk  # noqa: E402

GROUPS = ["all", "training", "validation", "testing"]
INT_KEYS = {"sample_rate", "duration", "clips", "segment_len", "segment_hop",
            "n_fft", "win_length", "hop_length", "n_mels", "center"}
FLOAT_KEYS = {"fmin", "fmax", "power", "amin", "top_db"}
FILTER_IDS = {"none": None, "gzip": 1, "zstd": 32015}


class Mismatch(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Mismatch(msg)


def bits(a):
    """The raw bits of an array of 2- or 4-byte elements."""
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 1: np.uint8}[a.itemsize])


def stored_bits(ds, dtype):
    """The stored elements as the stream's bits (bf16: h5py widens the
    16-bit float type to float32; the low half must be zero)."""
    a = ds[...]
    if dtype == mk.DTYPES["bf16"]:
        expect(a.dtype == np.float32, "bf16 read as %s" % a.dtype)
        u = a.view(np.uint32)
        expect(not (u & 0xFFFF).any(), "bf16 values with low bits")
        return (u >> 16).astype(np.uint16)
    want = {1: np.int16, 2: np.float32, 3: np.float16}[dtype]
    expect(a.dtype == want, "features stored as %s, want %s" % (a.dtype,
                                                                want))
    return bits(a)


def check_filter(ds, name):
    fid = FILTER_IDS[name]
    dcpl = ds.id.get_create_plist()
    have = {dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())}
    if fid is None:
        expect(not (have & {1, 2, 32015}), "%s filtered: %s" % (ds.name,
                                                                have))
    else:
        expect(have == {2, fid}, "%s filters %s, want shuffle and %d" % (
            ds.name, have, fid))


def check_columns(g, gname, rows, filt, names):
    """The per-row columns: types, filters, values; names lists them."""
    n = len(rows)
    # the statistics: tests/py/h5merge_stats.py checks their values
    stats = ["stats_count", "stats_sum", "stats_sumsq"]
    expect(sorted(g.keys()) == sorted(names + ["features"] + stats),
           "%s members %s" % (gname, sorted(g.keys())))
    for col in names:
        expect(g[col].shape == (n,), "%s/%s length" % (gname, col))
        check_filter(g[col], filt)
    expect(g["label"].dtype == np.int32 and g["clip"].dtype == np.int32 and
           g["segment"].dtype == np.int32 and g["offset"].dtype == np.int64,
           "%s: column types" % gname)
    check_filter(g["features"], filt)
    for col in ("label", "clip", "segment", "offset"):
        w = np.array([it[col] for it in rows], dtype=np.int64)
        expect(n == 0 or (g[col][...] == w).all(),
               "%s/%s differs" % (gname, col))


def as_float64(a, dtype):
    """Stored or stream elements as float64 (bf16 bits widened)."""
    if dtype == mk.DTYPES["bf16"] and a.dtype == np.uint16:
        a = mk.to_f32(a, dtype)
    return a.astype(np.float64)


def check_ragged(f, gname, rows, kind, dtype, filt):
    """formats/hdf5.md's ragged layout: the items' frames one after
    another in features [frames, width], start and n_frames per row."""
    g = f[gname]
    check_columns(g, gname, rows, filt, ["label", "clip", "segment",
                                         "offset", "start", "n_frames"])
    feat = g["features"]
    expect(feat.attrs["layout"] == "ragged", "%s: layout attr" % gname)
    expect(feat.attrs["dtype"] == mk.DTYPE_NAMES[dtype], "dtype attr")
    start, nf = g["start"][...], g["n_frames"][...]
    expect(g["start"].dtype == np.int64 and g["n_frames"].dtype == np.int32,
           "%s: start/n_frames types" % gname)
    audio = kind == "audio"
    lens = [it["dim0"] if audio else it["dim1"] for it in rows]
    expect(list(nf) == lens, "%s: n_frames %s, want %s" % (gname,
                                                           list(nf)[:8],
                                                           lens[:8]))
    ends = np.cumsum([0] + lens)
    expect(list(start) == list(ends[:-1]), "%s: rows not contiguous from "
           "0: start %s" % (gname, list(start)[:8]))
    if not rows:
        return
    width = rows[0]["dim1"] if audio else rows[0]["dim0"]
    want_shape = (ends[-1],) if audio and width == 1 else (ends[-1], width)
    expect(feat.shape == want_shape, "%s: shape %s, want %s" % (
        gname, feat.shape, want_shape))
    stored = stored_bits(feat, dtype)  # checks the element type
    if dtype != mk.DTYPES["bf16"]:
        stored = stored.view(mk.NP_DTYPE[dtype])
    for i, it in enumerate(rows):
        s = stored[start[i]:start[i] + nf[i]]
        got = s.reshape(nf[i], -1) if audio else s.T
        want = mk.values(it)
        expect(np.array_equal(as_float64(got, dtype),
                              as_float64(want, dtype)),
               "%s: row %d differs from record '%s'" % (gname, i,
                                                        it["key"]))


def check_group(f, gname, rows, kind, dtype, filt):
    g = f[gname]
    feat = g["features"]
    n = len(rows)
    expect(feat.shape[0] == n, "%s: %d rows, want %d" % (gname,
                                                        feat.shape[0], n))
    check_columns(g, gname, rows, filt, ["label", "clip", "segment",
                                         "offset"])
    expect(feat.attrs["layout"] == "fixed", "%s: layout attr" % gname)
    if n == 0:
        return
    it0 = rows[0]
    if kind == "audio":
        want_shape = (n, it0["dim0"]) if it0["dim1"] == 1 else \
            (n, it0["dim0"], it0["dim1"])
    else:
        want_shape = (n, it0["dim0"], it0["dim1"])
    expect(feat.shape == want_shape, "%s: shape %s, want %s" % (
        gname, feat.shape, want_shape))
    got = stored_bits(feat, dtype).reshape(n, -1)
    want = np.stack([bits(mk.values(it)).reshape(-1) for it in rows])
    bad = np.nonzero((got != want).any(axis=1))[0]
    expect(len(bad) == 0, "%s: row %s differs from record '%s'" % (
        gname, bad[:1], rows[bad[0]]["key"] if len(bad) else ""))
    expect(feat.attrs["dtype"] == mk.DTYPE_NAMES[dtype], "dtype attr")


def check_clips(f, items, pairs):
    first = {}
    for it in items:
        first.setdefault(it["clip"], it)
    n = max(first) + 1 if first else 0
    clips_hdr = mk.header_get(pairs, "clips")
    if clips_hdr is not None:
        n = max(n, int(clips_hdr))
    c = f["clips"]
    expect(c["path"].shape == (n,), "clips: %s rows, want %d" % (
        c["path"].shape, n))
    expect(sorted(c.keys()) == ["label", "n_samples", "path", "sample_rate",
                                "source_channels", "source_rate", "split"],
           "clips members %s" % list(c))
    expect(c["split"].dtype == np.int8, "clips/split type")
    import h5py
    emap = h5py.check_enum_dtype(c["split"].dtype)
    expect(emap == {"none": 0, "training": 1, "validation": 2,
                    "testing": 3}, "split enum %s" % emap)
    paths = c["path"][...]
    for i in range(n):
        it = first[i]
        expect(paths[i] == it["key"], "clip %d path %r != %r" % (
            i, paths[i], it["key"]))
        for col, field in (("label", "label"), ("split", "split"),
                           ("n_samples", "clip_samples"),
                           ("sample_rate", "sample_rate")):
            expect(c[col][i] == it[field], "clip %d %s %s != %s" % (
                i, col, c[col][i], it[field]))
        # the file's own, from the clip's source record: 0 without one
        for col in ("source_rate", "source_channels"):
            v = it.get("source", {}).get(col, 0)
            want = v if isinstance(v, int) and 0 < v < 1 << 31 else 0
            expect(c[col][i] == want, "clip %d %s %s != %s" % (
                i, col, c[col][i], want))


def check_skipped(f, items):
    sk = [it for it in items if it["type"] == mk.T_SKIPPED]
    s = f["skipped"]
    expect(s["path"].shape == (len(sk),), "skipped: %s rows, want %d" % (
        s["path"].shape, len(sk)))
    for i, it in enumerate(sk):
        expect(s["path"][i] == it["key"], "skipped %d path" % i)
        expect(s["reason"][i] == it["data"], "skipped %d reason %r" % (
            i, s["reason"][i]))
        expect(s["clip"][i] == it["clip"], "skipped %d clip" % i)


def dec(b):
    return b.decode("utf-8", "surrogateescape")


def is_ragged(pairs):
    """formats/hdf5.md: a stream whose header fixes no length."""
    return (mk.header_get(pairs, "duration") is None and
            mk.header_get(pairs, "segment_len") is None)


def check_attrs(f, pairs):
    a = f.attrs
    expect(a["melpipe_hdf5_version"] == 2, "version attr")
    expect(a["layout"] == ("ragged" if is_ragged(pairs) else "fixed"),
           "layout attr %r" % a["layout"])
    stages = [dec(v) for k, v in pairs if k == b"stage"]
    prov = list(a["provenance"])
    expect(prov[:-1] == stages, "provenance %r != %r" % (prov, stages))
    expect(prov[-1].startswith("h5pack "), "h5pack stage %r" % prov[-1])
    sh = list(a["stream_header"])
    want = ["%s=%s" % (dec(k), dec(v)) for k, v in pairs]
    expect([x for x in sh if not x.startswith("producer=")][:-1] ==
           [x for x in want if not x.startswith("producer=")],
           "stream_header %r" % sh)
    expect(a["producer"].startswith("h5pack "), "producer attr")
    seen = {}
    for k, v in pairs:
        seen.setdefault(dec(k), []).append(dec(v))
    for k, vs in seen.items():
        if k in ("label", "stage", "producer"):
            continue
        got = a[k]
        if len(vs) > 1:
            expect(list(got) == vs, "attr %s %r" % (k, got))
        elif k in INT_KEYS and vs[0].lstrip("-").isdigit():
            expect(isinstance(got, np.integer) and got == int(vs[0]),
                   "attr %s %r" % (k, got))
        elif k in FLOAT_KEYS and vs[0] != "none":
            expect(isinstance(got, np.floating) and got == float(vs[0]),
                   "attr %s %r" % (k, got))
        else:
            expect(got == vs[0], "attr %s %r != %r" % (k, got, vs[0]))


def check(stream, path, filt):
    import h5py
    pairs, items, _ = mk.read_stream(open(stream, "rb").read())
    items = mk.expand_windows(items)  # a row per described window
    kind = dec(mk.header_get(pairs, "kind"))
    dtype = mk.DTYPES[dec(mk.header_get(pairs, "dtype"))]
    splits = mk.header_get(pairs, "splits")
    with h5py.File(path, "r") as f:
        rows = [it for it in items if it["type"] != mk.T_SKIPPED]
        want = {"training", "validation", "testing"} \
            if splits not in (None, b"none") else {"all"}
        if any(it["split"] == 0 for it in rows):
            want.add("all")
        have = {k for k in f.keys() if k in GROUPS}
        expect(have == want, "groups %s, want %s" % (sorted(have),
                                                     sorted(want)))
        for g in want:
            s = GROUPS.index(g)
            (check_ragged if is_ragged(pairs) else check_group)(
                f, g, [it for it in rows if it["split"] == s], kind, dtype,
                filt)
        labels = [dec(v) for k, v in pairs if k == b"label"]
        expect([dec(x) for x in f["labels"][...]] == labels, "labels")
        check_clips(f, items, pairs)
        check_skipped(f, items)
        check_attrs(f, pairs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("stream")
    p.add_argument("h5")
    p.add_argument("--reader", choices=["hdf5plugin", "plain"],
                   default="hdf5plugin")
    p.add_argument("--filter", choices=list(FILTER_IDS), default="none")
    a = p.parse_args()
    if a.reader == "hdf5plugin":
        import hdf5plugin  # noqa: F401
    try:
        check(a.stream, a.h5, a.filter)
    except Mismatch as e:
        print("h5pack_check: %s" % e, file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
