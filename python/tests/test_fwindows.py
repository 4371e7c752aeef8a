"""Format version 6: features-windows records (type 9, formats/record.md,
Features-windows record) read, checked, expanded, written and dumped by
melpipe.stream."""
import contextlib
import io
import struct

import numpy as np
import pytest

from melpipe import stream
from melpipe.stream import __main__ as dump

N_FEAT, N_FRAMES, WIN_LEN, HOP = 4, 3, 512, 256
PAIRS = [("kind", "features"), ("dtype", "f32"), ("label", "a"),
         ("label", "b")]
SOURCE = [("source_rate", "16000"), ("source_channels", "1")]


def feats(clip, n):
    """n windows' features of clip, [n][N_FEAT][N_FRAMES] float32, each
    value telling its clip, window, row and column apart."""
    v = np.arange(n * N_FEAT * N_FRAMES, dtype="<f4").reshape(
        n, N_FEAT, N_FRAMES)
    return v + 1000 * clip


def common(clip):
    return dict(clip=clip, key="c%d.wav" % clip, label=clip % 2,
                sample_rate=4096, split=1 + clip % 3,
                clip_samples=WIN_LEN + 9 * HOP, dtype=2, dim0=N_FEAT)


# Each clip's windows, and how the version-6 stream groups them into
# features-windows records (window counts, in order): clip 0 in one
# record, clip 1 in two (a batch ends inside its windows, as gpumel
# does), clip 2 a single window, clip 3 skipped, clip 4 a features item
# in pieces (no windows records: features records as in version 5).
GROUPS = {0: [5], 1: [3, 4], 2: [1]}


def v5_stream(level=0):
    """The version-5 stream: a features record per window."""
    out = io.BytesIO()
    with stream.Writer(out, PAIRS, zstd_level=level) as w:
        write_clips(w, per_window=True)
    return out.getvalue()


def v6_stream(level=0):
    """The same windows, in features-windows records."""
    out = io.BytesIO()
    with stream.Writer(out, PAIRS, zstd_level=level) as w:
        write_clips(w, per_window=False)
    return out.getvalue()


def write_clips(w, per_window):
    for clip, groups in GROUPS.items():
        f, seg = feats(clip, sum(groups)), 0
        w.item(stream.T_SOURCE, SOURCE, clip=clip, key="c%d.wav" % clip,
               label=clip % 2, split=1 + clip % 3)
        for n in groups:
            if per_window:
                for i in range(seg, seg + n):
                    w.item(stream.T_FEATURES, f[i].tobytes(),
                           offset=i * HOP, segment=i, dim1=N_FRAMES,
                           **common(clip))
            else:
                w.item(stream.T_FWINDOWS, f[seg:seg + n].tobytes(),
                       offset=seg * HOP, segment=seg, dim1=N_FRAMES,
                       win_len=WIN_LEN, win_hop=HOP, n_windows=n,
                       win_flags=stream.WIN_PAD if clip == 1 else 0,
                       **common(clip))
            seg += n
    w.item(stream.T_SKIPPED, "shorter than one window", clip=3, key="d")
    x = feats(4, 1)[0]
    w.item(stream.T_FEATURES, np.ascontiguousarray(x[:, :2]).tobytes(),
           clip=4, key="e", dtype=2, dim0=N_FEAT, dim1=2,
           flags=stream.F_MORE)
    w.item(stream.T_FEATURES, np.ascontiguousarray(x[:, 2:]).tobytes(),
           clip=4, key="e", dtype=2, dim0=N_FEAT, dim1=1, offset=128,
           clip_samples=300, flags=stream.F_CONT)


def fields(it):
    """What a record stands for: every field, its payload, its source
    record's."""
    src = None if it.src is None else (it.src.meta(), it.src.data)
    return (it.type, it.flags, it.meta(), bytes(it.data), src)


def version_bytes(data):
    return [(r[4], r[6]) for r in stream.split_records(data)]


@pytest.mark.parametrize("level", [0, 3])
def test_expands_to_the_version_5_records(level):
    """A stream of features-windows records reads and expands to exactly
    the features records of the version-5 stream of the same windows,
    source records, pieces and skipped records included; written again
    record by record, the expansion is the version-5 stream byte for
    byte (uncompressed)."""
    old, new = v5_stream(level), v6_stream(level)
    p5, i5, t5 = stream.read_stream(old)
    p6, i6, t6 = stream.read_stream(new)
    assert p5 == p6
    assert [it.type for it in i6].count(stream.T_FWINDOWS) == 4
    assert t6["n_records"] == len(i6) + 3   # 3 source records
    assert t6["n_items"] == 4 + 2 and t6["n_skipped"] == 1
    assert t5["n_items"] == 13 + 2
    want = [fields(it) for it in stream.expand(stream.join(i5))]
    got = [fields(it) for it in stream.expand(stream.join(i6))]
    assert got == want
    assert [fields(it) for it in stream.expand(i5)] == \
        [fields(it) for it in i5]      # nothing to expand in version 5
    # the version bytes: 6 for features-windows records alone
    assert {v for t, v in version_bytes(new) if t == stream.T_FWINDOWS} \
        == {6}
    assert all(v < 6 for t, v in version_bytes(new)
               if t != stream.T_FWINDOWS)
    assert max(v for _, v in version_bytes(old)) == 4
    out = io.BytesIO()
    with stream.Writer(out, p6, zstd_level=level) as w:
        for it in stream.expand(i6):
            w.write(it)
    if level == 0:
        assert out.getvalue() == old
    else:
        assert [fields(it) for it in stream.read_stream(out.getvalue())[1]] \
            == [fields(it) for it in i5]


def test_expanded_windows():
    """Window i of a features-windows record: offset + i * win_hop,
    segment + i, the i-th matrix, no window fields; the source record
    with the first window only; array() [n_windows][dim0][dim1]."""
    _, items, _ = stream.read_stream(v6_stream())
    rec = [it for it in items if it.clip == 1][1]   # windows 3 to 6
    assert (rec.type, rec.segment, rec.n_windows) == (stream.T_FWINDOWS, 3, 4)
    assert rec.last_segment() == 6
    a = rec.array()
    assert a.shape == (4, N_FEAT, N_FRAMES)
    assert np.array_equal(a, feats(1, 7)[3:])
    wins = [stream.window(rec, i) for i in range(4)]
    assert [w.type for w in wins] == [stream.T_FEATURES] * 4
    assert [w.segment for w in wins] == [3, 4, 5, 6]
    assert [w.offset for w in wins] == [3 * HOP, 4 * HOP, 5 * HOP, 6 * HOP]
    for i, w in enumerate(wins):
        assert (w.dim0, w.dim1, w.clip, w.key) == (N_FEAT, N_FRAMES, 1,
                                                   b"c1.wav")
        assert (w.win_len, w.win_hop, w.n_windows, w.win_flags) == \
            (0, 0, 0, 0)
        assert np.array_equal(w.array(), a[i])
        assert len(w.meta()) == 48 + len(w.key)
    first = [it for it in items if it.clip == 1][0]
    assert first.src is not None and stream.window(first, 0).src is first.src
    assert stream.window(first, 1).src is None
    with pytest.raises(IndexError, match="no window 4 in a features-"
                       "windows record"):
        stream.window(rec, 4)


def test_hand_made_record():
    """A features-windows record laid out by hand, struct by struct (the
    spec's offsets, not the package's encoder), reads and expands as the
    spec says: the 48 fixed bytes, the key, then win_len, win_hop,
    n_windows and win_flags; version byte 6; the n_windows matrices one
    after the other."""
    key = b"yes/a.wav"
    payload = np.arange(3 * 2 * 5, dtype="<f2").reshape(3, 2, 5)
    meta = struct.pack("<QQQIiIBBHII", 7, 1000, 9000, 10, 1, 4096, 2, 3,
                       len(key), 2, 5) + key + struct.pack(
                           "<IIII", 400, 160, 3, 1)
    assert len(meta) == 48 + len(key) + 16

    def rec(rtype, meta, data=b"", version=1):
        head = b"MELP" + struct.pack("<BBBBIIII", rtype, 0, version, 0,
                                     len(meta), len(data), len(data), 0)
        crc = stream.crc32c(head + meta + data)
        return head[:20] + struct.pack("<I", crc) + meta + data

    hdr = rec(1, b"kind\0features\0")
    fw = rec(9, meta, payload.tobytes(), version=6)
    csum = stream.crc32c(hdr[20:24] + fw[20:24])
    data = hdr + fw + rec(5, struct.pack("<QQQII", 1, 1, 0, csum, 0))
    pairs, items, trailer = stream.read_stream(data)
    (it,) = items
    assert (it.type, it.clip, it.offset, it.clip_samples, it.segment,
            it.label, it.sample_rate, it.split, it.dtype, it.key, it.dim0,
            it.dim1) == (9, 7, 1000, 9000, 10, 1, 4096, 2, 3, key, 2, 5)
    assert (it.win_len, it.win_hop, it.n_windows, it.win_flags) == \
        (400, 160, 3, 1)
    assert it.meta() == meta
    assert stream.record(9, meta, payload.tobytes()) == fw
    wins = list(stream.expand(items))
    assert [(w.type, w.offset, w.segment) for w in wins] == \
        [(3, 1000, 10), (3, 1160, 11), (3, 1320, 12)]
    for i, w in enumerate(wins):
        assert w.data == payload[i].tobytes()
        assert np.array_equal(w.array(), payload[i].astype(np.float32))
        # the same metadata but offset and segment, and no window fields
        assert w.meta() == meta[:8] + struct.pack("<Q", 1000 + 160 * i) + \
            meta[16:24] + struct.pack("<I", 10 + i) + meta[28:48 + len(key)]
    # as the version-5 stream would hold them
    wanted = b"".join(
        rec(3, struct.pack("<QQQIiIBBHII", 7, 1000 + 160 * i, 9000, 10 + i,
                           1, 4096, 2, 3, len(key), 2, 5) + key,
            payload[i].tobytes()) for i in range(3))
    out = io.BytesIO()
    with stream.Writer(out, pairs) as w:
        for x in wins:
            w.write(x)
    assert out.getvalue()[len(hdr):-56] == wanted


# A features-windows record of 2 windows of 2x3 f32 (48 bytes) from
# segment 5 of clip 0, and the changes that break one rule each.
GOOD = dict(clip=0, segment=5, key="k", dtype=2, dim0=2, dim1=3,
            win_len=512, win_hop=256, n_windows=2, win_flags=0)
PAYLOAD = bytes(48)
SEG_MAX = stream.MAX_SEGMENT


def fw_stream(data=PAYLOAD, flags=0, version=None, meta=None, **changes):
    """A stream of one features-windows record with fields changed, built
    with Writer(check=False) and patched where the Writer cannot (flags,
    version byte, metadata length): its trailer matches."""
    f = dict(GOOD, **changes)
    it = stream.Item(stream.T_FWINDOWS, data, **f)
    hdr = stream.record(stream.T_HEADER, stream.header_meta(PAIRS))
    rec = stream.record(stream.T_FWINDOWS, it.meta() if meta is None
                        else meta, data, flags=flags, version=version)
    t = stream.trailer_fields([hdr, rec])
    return hdr + rec + stream.record(stream.T_TRAILER,
                                     stream.trailer_meta(**t))


def refusal(data):
    with pytest.raises(stream.StreamError) as e:
        stream.read_stream(data)
    assert (e.value.record, e.value.offset) == (1, len(stream.record(
        stream.T_HEADER, stream.header_meta(PAIRS))))
    return e.value.code, e.value.reason


def test_the_good_record_is_read():
    _, items, _ = stream.read_stream(fw_stream())
    assert [it.segment for it in stream.expand(items)] == [5, 6]
    # zstd is allowed
    z = stream.zstd().compress(PAYLOAD, 3)
    data = bytearray(fw_stream())
    hdr_len = len(stream.record(stream.T_HEADER, stream.header_meta(PAIRS)))
    meta = stream.Item(stream.T_FWINDOWS, **GOOD).meta()
    rec = stream.record(stream.T_FWINDOWS, meta, z, flags=stream.F_ZSTD,
                        raw_len=len(PAYLOAD))
    t = stream.trailer_fields([bytes(data[:hdr_len]), rec])
    data = bytes(data[:hdr_len]) + rec + stream.record(
        stream.T_TRAILER, stream.trailer_meta(**t))
    _, items, _ = stream.read_stream(data)
    assert items[0].data == PAYLOAD and items[0].n_windows == 2
    # the last segment may be 2^32 - 1
    stream.read_stream(fw_stream(segment=SEG_MAX - 1))
    stream.read_stream(fw_stream(segment=SEG_MAX, n_windows=1,
                                 data=bytes(24)))
    # the pad flag is bit 0, and allowed
    stream.read_stream(fw_stream(win_flags=stream.WIN_PAD))


BROKEN = [
    # (what, changes, reason): each a rule of Features-windows record or
    # Data records, in the order the reader checks them
    ("win_len 0", dict(win_len=0),
     "features-windows record with window length 0, hop 256 and 2 "
     "windows (none may be 0)"),
    ("win_hop 0", dict(win_hop=0),
     "features-windows record with window length 512, hop 0 and 2 "
     "windows (none may be 0)"),
    ("n_windows 0", dict(n_windows=0, data=b""),
     "features-windows record with window length 512, hop 256 and 0 "
     "windows (none may be 0)"),
    ("win_flags", dict(win_flags=2), "unknown windows flags 0x2"),
    ("win_flags high", dict(win_flags=0x80000001),
     "unknown windows flags 0x80000001"),
    ("last segment", dict(segment=SEG_MAX - 1, n_windows=3,
                          data=bytes(72)),
     "3 windows from segment 4294967294 run past segment index 2^32 - 1"),
    ("payload of one window", dict(data=bytes(24)),
     "payload of 24 bytes does not match 2 windows of 2x3 f32"),
    ("payload too long", dict(data=bytes(72)),
     "payload of 72 bytes does not match 2 windows of 2x3 f32"),
    ("n_windows 0 with a payload", dict(n_windows=0),
     "payload of 48 bytes does not match 0 windows of 2x3 f32"),
    ("dtype", dict(dtype=5), "invalid dtype 5"),
    ("split", dict(split=4), "invalid split 4"),
    # the order of the checks: the payload size before the window
    # fields, win_len before win_flags, win_flags before the segment
    ("size first", dict(win_len=0, data=bytes(24)),
     "payload of 24 bytes does not match 2 windows of 2x3 f32"),
    ("win_len first", dict(win_len=0, win_flags=4),
     "features-windows record with window length 0, hop 256 and 2 "
     "windows (none may be 0)"),
    ("win_flags first", dict(win_flags=4, segment=SEG_MAX),
     "unknown windows flags 0x4"),
]


@pytest.mark.parametrize("what,changes,reason", BROKEN,
                         ids=[b[0] for b in BROKEN])
def test_each_rule_refused(what, changes, reason):
    """The reader refuses each broken rule at the record, naming why; a
    checked Writer refuses to write it, for the same reason."""
    assert refusal(fw_stream(**changes)) == ("FORMAT", reason)
    data = changes.pop("data", PAYLOAD)
    w = stream.Writer(io.BytesIO())
    with pytest.raises(ValueError) as e:
        w.item(stream.T_FWINDOWS, data, **dict(GOOD, **changes))
    assert str(e.value) == reason


def test_metadata_length():
    """meta_len is 48 + key_len + 16: the window fields are required."""
    meta = stream.Item(stream.T_FWINDOWS, **GOOD).meta()
    assert refusal(fw_stream(meta=meta[:-16])) == (
        "FORMAT", "metadata length 49 is not 48 + key length 1 + 16")
    assert refusal(fw_stream(meta=meta + b"\0")) == (
        "FORMAT", "metadata length 66 is not 48 + key length 1 + 16")
    assert refusal(fw_stream(meta=meta[:40])) == (
        "FORMAT", "features-windows record with 40 bytes of metadata "
        "(at least 48)")


@pytest.mark.parametrize("version", [1, 2, 4, 5])
def test_version_below_6_refused(version):
    """A features-windows record marked below 6 is an error, even in a
    stream whose other records are older."""
    assert refusal(fw_stream(version=version)) == (
        "FORMAT", "a features-windows record marked format version %d "
        "(features-windows records are version 6)" % version)


def test_version_above_6_refused():
    assert stream.VERSION == 6
    assert refusal(fw_stream(version=7)) == (
        "VERSION", "format version 7 is newer than this reader's version 6")
    assert stream.type_version(stream.T_FWINDOWS) == 6
    assert stream.type_version(stream.T_FWINDOWS, stream.F_ZSTD) == 6


@pytest.mark.parametrize("flags,reason", [
    (stream.F_MORE, "the more flag on a features-windows record (only "
     "audio and features records come in pieces)"),
    (stream.F_CONT, "the cont flag on a features-windows record (only "
     "audio and features records come in pieces)"),
    (stream.PIECE, "the more and cont flags on a features-windows record "
     "(only audio and features records come in pieces)"),
    (stream.F_SHARED, "the shared flag on a record type whose payload is "
     "never shared"),
    (0x10, "unknown flags 0x10"),
])
def test_flags_refused(flags, reason):
    """more, cont and shared are refused (zstd alone is allowed)."""
    data = fw_stream(flags=flags, version=6)
    if flags & stream.F_SHARED:   # a reference's 16 bytes as payload
        data = fw_stream(flags=flags, version=6, data=bytes(16))
    assert refusal(data) == ("FORMAT", reason)


def test_writer_refuses_pieces_of_it():
    w = stream.Writer(io.BytesIO())
    for flags, name in ((stream.F_MORE, "more flag"),
                        (stream.F_CONT, "cont flag")):
        with pytest.raises(ValueError, match="the %s on a features-windows "
                           "record" % name):
            w.item(stream.T_FWINDOWS, PAYLOAD, flags=flags, **GOOD)
    with pytest.raises(ValueError, match="invalid record type 10"):
        w.item(10, PAYLOAD, **GOOD)
    w.item(stream.T_FWINDOWS, PAYLOAD, **GOOD)   # the stream goes on
    w.close()


def order_stream(second, first=None):
    """A features-windows record of clip 0, segments 5 and 6, then the
    record second (an Item); first replaces the first record."""
    out = io.BytesIO()
    with stream.Writer(out, PAIRS, check=False) as w:
        w.write(first or stream.Item(stream.T_FWINDOWS, PAYLOAD, **GOOD))
        w.write(second)
    return out.getvalue()


FEAT = dict(clip=0, key="k", dtype=2, dim0=2, dim1=3)


def test_order_rule_uses_the_last_segment():
    """A features-windows record occupies segment to segment + n_windows
    - 1: the next record of its clip must come after its last segment,
    and a record after it must be above that of the record before."""
    ok = [stream.Item(stream.T_FEATURES, bytes(24), segment=7, **FEAT),
          stream.Item(stream.T_FWINDOWS, PAYLOAD, **dict(GOOD, segment=7)),
          stream.Item(stream.T_FEATURES, bytes(24), **dict(FEAT, clip=1))]
    for it in ok:
        stream.read_stream(order_stream(it))
    for seg in (5, 6):
        for it in (stream.Item(stream.T_FEATURES, bytes(24), segment=seg,
                               **FEAT),
                   stream.Item(stream.T_FWINDOWS, PAYLOAD,
                               **dict(GOOD, segment=seg))):
            with pytest.raises(stream.StreamError) as e:
                stream.read_stream(order_stream(it))
            assert (e.value.code, e.value.record, e.value.reason) == (
                "ORDER", 2, "clip 0 segment %d after clip 0 segment 6 "
                "(records must be in clip and segment order)" % seg)
            w = stream.Writer(io.BytesIO())
            w.item(stream.T_FWINDOWS, PAYLOAD, **GOOD)
            with pytest.raises(ValueError, match="after clip 0 segment 6"):
                w.write(it)
    # a features record at segment 4, then 2 windows from segment 4:
    # the second's first segment is not above 4
    before = stream.Item(stream.T_FEATURES, bytes(24), segment=4, **FEAT)
    with pytest.raises(stream.StreamError, match="clip 0 segment 4 after "
                       "clip 0 segment 4"):
        stream.read_stream(order_stream(
            stream.Item(stream.T_FWINDOWS, PAYLOAD,
                        **dict(GOOD, segment=4)), first=before))
    # a clip below it is refused, whatever its segment
    with pytest.raises(stream.StreamError, match="after clip 1 segment 6"):
        stream.read_stream(order_stream(
            stream.Item(stream.T_FEATURES, bytes(24), segment=9, **FEAT),
            first=stream.Item(stream.T_FWINDOWS, PAYLOAD,
                              **dict(GOOD, clip=1))))


def test_dump_shows_the_window_fields():
    """python -m melpipe.stream dump prints a features-windows record with
    its window fields, as a windows record's; --summary counts the
    records and their windows."""
    path = io.BytesIO(v6_stream())

    def run(args, data):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            dump.dump(io.BytesIO(data), out, "--summary" in args)
        return out.getvalue()

    text = run([], path.getvalue())
    lines = [ln for ln in text.splitlines() if " features-windows " in ln]
    assert len(lines) == 4
    assert lines[1] == (
        "4 features-windows clip=1 segment=0 offset=0 clip_samples=2816 "
        "rate=4096 label=1(b) split=validation dtype=f32 dims=4x3 win_len=512 "
        "win_hop=256 n_windows=3 pad=yes key=\"c1.wav\"")
    s = run(["--summary"], path.getvalue())
    assert "type features-windows 4\nfeature_windows 13\n" in s
    assert "type features 1\n" in s and "type windows" not in s
    s5 = run(["--summary"], v5_stream())
    assert "type features 14\n" in s5 and "features-windows" not in s5


def test_the_tests_stream_reader():
    """tests/py/rec_stream.py (the shell tests' reader and forger) builds
    features-windows records, refuses broken window fields unless told
    not to, and expands them into the per-window features records."""
    import importlib
    import os
    import sys
    from conftest import ROOT
    where = os.path.join(ROOT, "tests", "py")
    if not os.path.exists(os.path.join(where, "rec_stream.py")):
        pytest.skip("no tests/py beside python/")
    sys.path.insert(0, where)
    try:
        rs = importlib.import_module("rec_stream")
    finally:
        sys.path.remove(where)
    assert rs.T_FWINDOWS == 9 and rs.VERSION == 6
    f = feats(2, 3)
    b = rs.Builder()
    b.item(rs.T_FWINDOWS, f.tobytes(), clip=2, offset=100, segment=1,
           dtype=2, dim0=N_FEAT, dim1=N_FRAMES, key=b"x", win_len=WIN_LEN,
           win_hop=HOP, n_windows=3)
    assert b.records[1][6] == 6   # its version byte
    _, items, trailer = rs.read_stream(b.bytes())
    assert trailer["n_items"] == 1
    assert rs.fields(items[0])["n_windows"] == 3
    wins = rs.expand(items)
    assert [(w.type, w.offset, w.segment) for w in wins] == [
        (rs.T_FEATURES, 100 + i * HOP, 1 + i) for i in range(3)]
    assert [w.data for w in wins] == [f[i].tobytes() for i in range(3)]
    again = rs.Builder()
    for w in wins:
        again.item(rs.T_FEATURES, w.data, **rs.fields(w))
    assert [rs.fields(w) for w in rs.read_stream(again.bytes())[1]] == \
        [rs.fields(w) for w in wins]
    with pytest.raises(ValueError, match="bad features-windows record: "
                       "features-windows record with window length 0"):
        rs.Builder().item(rs.T_FWINDOWS, f.tobytes(), dtype=2, dim0=N_FEAT,
                          dim1=N_FRAMES, win_len=0, win_hop=HOP,
                          n_windows=3)
    with pytest.raises(ValueError, match="a features-windows record needs "
                       "win_len"):
        rs.Builder().item(rs.T_FWINDOWS, f.tobytes(), dtype=2, dim0=N_FEAT,
                          dim1=N_FRAMES)
    forged = rs.Builder().item(rs.T_FWINDOWS, f.tobytes(), check=False,
                               version=5, dtype=2, dim0=N_FEAT,
                               dim1=N_FRAMES, win_len=WIN_LEN, win_hop=HOP,
                               n_windows=3)
    with pytest.raises(rs.RecError, match="a features-windows record marked "
                       "format version 5"):
        rs.read_stream(forged.bytes())
