"""melpipe.stream against the golden streams of tests/golden, and its
writer, joins and windows against its reader."""
import contextlib
import io
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from melpipe import stream
from melpipe.stream import _crc
from melpipe.stream import __main__ as dump

from conftest import BIN, GOLDEN


def golden():
    """(file, what README says of it: None for a good one, else the
    record, byte and start of the reason)."""
    with open(os.path.join(GOLDEN, "README")) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3 and parts[0].endswith(".rec"):
                yield parts[0], None if parts[1] == "-" else parts[1]


GOLDEN_FILES = sorted(golden()) if os.path.isdir(GOLDEN) else []


def test_readme_lists_every_golden_file():
    if not GOLDEN_FILES:
        pytest.skip("no tests/golden beside python/")
    assert sorted(f for f, _ in GOLDEN_FILES) == sorted(
        f for f in os.listdir(GOLDEN) if f.endswith(".rec"))


@pytest.mark.parametrize("name,want", GOLDEN_FILES)
def test_golden(name, want):
    """A good stream is read whole, record by record as from a pipe too;
    a bad one is refused at the record, byte and reason README gives, by
    read_stream() and by a Reader alike."""
    path = os.path.join(GOLDEN, name)
    with open(path, "rb") as f:
        data = f.read()
    if want is None:
        pairs, items, trailer = stream.read_stream(path)
        # (a source record comes with its clip's first record, as src)
        assert trailer["n_records"] == len(items) + sum(
            it.src is not None for it in items)
        assert trailer["n_skipped"] == sum(
            it.type == stream.T_SKIPPED for it in items)
        r = stream.Reader(io.BufferedReader(io.BytesIO(data), 5))
        assert [it.index for it in r] == [it.index for it in items]
        assert r.header == pairs and r.trailer == trailer
        list(stream.expand(stream.join(items)))
        return
    for read in (lambda: stream.read_stream(path),
                 lambda: list(stream.Reader(io.BytesIO(data)))):
        with pytest.raises(stream.StreamError) as e:
            read()
        assert str(e.value).startswith(want), str(e.value)
        assert e.value.code in ("MAGIC", "VERSION", "FORMAT", "TOOBIG",
                                "TRUNC", "CRC", "ZSTD", "ORDER", "TRAILING")


@pytest.mark.parametrize("name", [f for f, want in GOLDEN_FILES
                                  if want is None])
def test_golden_written_again(name):
    """Writer writes a good stream's records again: the same bytes where
    the file is uncompressed (as lib/rec's writer does, t0004), and a
    stream that reads back the same at any zstd level."""
    with open(os.path.join(GOLDEN, name), "rb") as f:
        data = f.read()
    pairs, items, trailer = stream.read_stream(data)
    for level in (0, 3):
        out = io.BytesIO()
        with stream.Writer(out, pairs, zstd_level=level) as w:
            for it in items:
                w.write(it)
        if level == 0 and not any(r[5] & stream.F_ZSTD or
                                  r[6] != stream.type_version(r[4], r[5])
                                  for r in stream.split_records(data)):
            assert out.getvalue() == data
        p2, i2, t2 = stream.read_stream(out.getvalue())
        assert p2 == pairs and t2["n_records"] == trailer["n_records"]
        assert [(it.meta(), it.data, it.flags) for it in i2] == \
            [(it.meta(), it.data, it.flags) for it in items]


def test_split_records_and_trailer_fields():
    """split_records() cuts a stream by its framing alone, and
    trailer_fields() gives back the trailer of its records."""
    data, _, _ = written(3)
    recs = list(stream.split_records(data))
    assert b"".join(recs) == data and len(recs) == 9
    assert (recs[0][4], recs[-1][4]) == (stream.T_HEADER, stream.T_TRAILER)
    t = stream.trailer_fields(recs[:-1])
    assert stream.record(stream.T_TRAILER,
                         stream.trailer_meta(**t)) == recs[-1]
    assert list(stream.split_records(io.BytesIO(data))) == recs
    with pytest.raises(stream.StreamError) as e:
        list(stream.split_records(data[:-3]))
    assert (e.value.code, e.value.record) == ("TRUNC", 8)
    with pytest.raises(stream.StreamError) as e:
        list(stream.split_records(data + b"xyz"))
    assert (e.value.code, e.value.record) == ("MAGIC", 9)
    huge = bytearray(recs[1])
    huge[12:16] = (0xFFFFFFF0).to_bytes(4, "little")  # data_len 4 GiB
    with pytest.raises(stream.StreamError) as e:
        list(stream.split_records(io.BufferedReader(io.BytesIO(
            recs[0] + huge))))
    assert (e.value.code, e.value.record) == ("TRUNC", 1)


def test_writer_unchecked_makes_broken_streams():
    """Writer(check=False) writes what a checked Writer refuses, with the
    trailer that counts it; the reader then refuses it where it
    breaks."""
    out = io.BytesIO()
    with stream.Writer(out, check=False) as w:
        w.item(stream.T_AUDIO, bytes(4), clip=1, dtype=1, dim0=2, dim1=1)
        w.item(stream.T_AUDIO, bytes(4), clip=0, dtype=1, dim0=2, dim1=1)
    with pytest.raises(stream.StreamError) as e:
        stream.read_stream(out.getvalue())
    assert (e.value.code, e.value.record) == ("ORDER", 2)
    out = io.BytesIO()
    w = stream.Writer(out, check=False)
    w.item(stream.T_AUDIO, bytes(4), clip=0, dtype=1, dim0=2, dim1=1,
           flags=stream.F_MORE)
    w.close()
    with pytest.raises(stream.StreamError, match="ends after a piece"):
        stream.read_stream(out.getvalue())


def test_windows_problem():
    it = stream.Item(stream.T_WINDOWS, dim0=10, win_len=4, win_hop=3,
                     n_windows=3)
    assert it.windows_problem() is None
    assert "do not fit" in it.copy(n_windows=4).windows_problem()
    assert it.copy(n_windows=4, win_flags=stream.WIN_PAD) \
        .windows_problem() is None


def test_dump_prints_what_recdump_prints():
    recdump = os.path.join(BIN, "recdump")
    if not os.access(recdump, os.X_OK):
        pytest.skip("recdump is not built in %s" % BIN)
    for name, want in GOLDEN_FILES:
        path = os.path.join(GOLDEN, name)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = dump.main(["dump", path])
        c = subprocess.run([recdump, path], capture_output=True)
        assert rc == c.returncode, name
        if want is None:
            assert out.getvalue() == c.stdout.decode(), name
        else:
            assert err.getvalue().split(": ", 2)[2] == \
                c.stderr.decode().split(": ", 2)[2], name


def test_crc32c_paths_agree():
    rng = np.random.default_rng(1)
    assert _crc._crc32c_numpy(b"123456789") == 0xE3069283
    for n in (0, 1, 255, 1024, 1025, 5000, 70001):
        d = rng.integers(0, 256, n, np.uint8).tobytes()
        want = _crc._advance_bytes(0xFFFFFFFF, d) ^ 0xFFFFFFFF
        assert _crc._crc32c_numpy(d) == want == stream.crc32c(d)
        assert _crc._crc32c_numpy(d[n // 3:],
                                  _crc._crc32c_numpy(d[:n // 3])) == want


def written(level=0):
    """A stream of every record type, pieces and a cut-short item
    included, by Writer."""
    buf = io.BytesIO()
    pcm = np.arange(60, dtype="<i2")
    feats = np.arange(12, dtype="<f4").reshape(4, 3)
    with stream.Writer(buf, [("kind", "audio"), ("label", "a")],
                       zstd_level=level) as w:
        w.item(stream.T_AUDIO, pcm[:40].tobytes(), clip=0, dtype=1,
               dim0=40, dim1=1, key="x.wav", clip_samples=60,
               sample_rate=8000, label=0, split=1)
        w.item(stream.T_WINDOWS, pcm.tobytes(), clip=1, dtype=1, dim0=60,
               dim1=1, key="y.wav", win_len=25, win_hop=20, n_windows=3,
               win_flags=stream.WIN_PAD, clip_samples=60)
        w.item(stream.T_SKIPPED, "unreadable", clip=2, key="z.wav")
        w.item(stream.T_FEATURES, feats[:, :2].tobytes(), clip=3, dtype=2,
               dim0=4, dim1=2, key="f", flags=stream.F_MORE)
        w.item(stream.T_FEATURES, np.ascontiguousarray(feats[:, 2:])
               .tobytes(), clip=3, dtype=2, dim0=4, dim1=1, key="f",
               offset=128, clip_samples=300, flags=stream.F_CONT)
        w.item(stream.T_AUDIO, pcm[:10].tobytes(), clip=4, dtype=1, dim0=10,
               dim1=1, key="c", flags=stream.F_MORE)
        w.item(stream.T_SKIPPED, "decoding failed", clip=4, key="c",
               clip_samples=10, offset=10)
    return buf.getvalue(), pcm, feats


def ring_record(ring=1, reserved=0, meta_len=48):
    meta = struct.pack("<IIQII", 123, 4, 1 << 20, 64, ring) + bytes(16) + \
        struct.pack("<II", 123, reserved)
    return stream.record(stream.T_RING, meta[:meta_len])


def test_version_5_ring_records_and_references():
    """A ring record (version 5, in a pipe between stages) is checked and
    passed over: not counted, outside the checksum; a reference into a
    ring is refused, naming why (this reader reads files and attaches
    none)."""
    data, pcm, _ = written()
    recs = list(stream.split_records(data))
    plain = [(it.type, it.clip, bytes(it.data)) for it in stream.Reader(data)]
    with_ring = recs[0] + ring_record() + b"".join(recs[1:])
    got = [(it.type, it.clip, bytes(it.data))
           for it in stream.Reader(with_ring)]
    assert got == plain
    # the first data record by reference: its CRC that of it inline
    r1 = bytearray(recs[1])
    shared = bytearray(r1[:24]) + r1[24:24 + struct.unpack_from(
        "<I", r1, 8)[0]] + struct.pack("<IIQ", 1, 0, 0)
    shared[5] |= stream.F_SHARED
    shared[6] = 5
    shared[12:16] = struct.pack("<I", 16)
    # (the reference is to ring 1; the ring record offers ring 1, or 2)
    for ring, why in ((1, "reference to ring 1, which this reader did not "
                       "attach"), (2, "reference to ring 1, which no ring "
                                  "record offered")):
        s = recs[0] + ring_record(ring) + bytes(shared) + \
            b"".join(recs[2:])
        with pytest.raises(stream.StreamError) as e:
            list(stream.Reader(s))
        assert (e.value.code, e.value.reason) == ("FORMAT", why)
    for bad, why in ((ring_record(0), "ring record with ring id 0"),
                     (ring_record(reserved=1),
                      "ring record reserved field is not 0"),
                     (ring_record(meta_len=40), "ring record with 40 bytes "
                      "of metadata and 0 of payload (must be 48 and 0)"),
                     (ring_record() + ring_record(),
                      "ring 1 offered twice")):
        with pytest.raises(stream.StreamError) as e:
            list(stream.Reader(recs[0] + bad + b"".join(recs[1:])))
        assert (e.value.code, e.value.reason) == ("FORMAT", why)
    old = bytearray(ring_record())
    old[6] = 4
    with pytest.raises(stream.StreamError) as e:
        list(stream.Reader(recs[0] + stream.record(
            stream.T_RING, bytes(old[24:]), version=4) + b"".join(recs[1:])))
    assert e.value.reason == ("a ring record marked format version 4 "
                              "(ring records are version 5)")


@pytest.mark.parametrize("level", [0, 3])
def test_writer_reader_join_expand(level):
    data, pcm, feats = written(level)
    pairs, items, trailer = stream.read_stream(data)
    assert pairs == [("kind", b"audio"), ("label", b"a")]
    assert trailer["n_records"] == 7 and trailer["n_skipped"] == 2
    joined = list(stream.join(items))
    assert [it.type for it in joined] == [2, 6, 4, 3, 2, 4]
    assert np.array_equal(joined[3].array(), feats) and joined[3].pieces == 2
    assert joined[4].cut_short and joined[4].dim0 == 10
    wins = list(stream.expand(joined))
    assert [w.segment for w in wins[1:4]] == [0, 1, 2]
    assert [w.offset for w in wins[1:4]] == [0, 20, 40]
    assert np.array_equal(wins[3].array()[:, 0],
                          np.concatenate([pcm[40:], np.zeros(5, "<i2")]))


def test_writer_refuses_what_readers_refuse():
    w = stream.Writer(io.BytesIO())
    w.item(stream.T_AUDIO, bytes(4), clip=1, dtype=1, dim0=2, dim1=1)
    with pytest.raises(ValueError, match="clip 0 segment 0 after clip 1"):
        w.item(stream.T_AUDIO, bytes(4), clip=0, dtype=1, dim0=2, dim1=1)
    with pytest.raises(ValueError, match="does not match 3x1 s16"):
        w.item(stream.T_AUDIO, bytes(4), clip=2, dtype=1, dim0=3, dim1=1)
    w.item(stream.T_AUDIO, bytes(4), clip=2, dtype=1, dim0=2, dim1=1,
           flags=stream.F_MORE)
    with pytest.raises(ValueError, match="ends after a piece"):
        w.close()


def test_reads_a_pipe_record_by_record(tmp_path):
    data, _, _ = written(3)
    r = stream.Reader(io.BufferedReader(io.BytesIO(data), 7))
    assert r.next_record() is None and r.header[0][0] == "kind"
    assert len(list(r)) == 7 and r.trailer["n_items"] == 5
    path = tmp_path / "s.rec"
    path.write_bytes(data + b"MELP")
    out = subprocess.run([sys.executable, "-m", "melpipe.stream", "dump",
                          str(path)], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.endswith("data after the trailer (another stream "
                               "follows: streams run together are not "
                               "merged)\n")


def test_source_records():
    """A source record (format version 4) goes with its clip's first
    record (src), or comes as a record of its own with sources=True; the
    Writer writes src before its record and refuses a misplaced one."""
    buf = io.BytesIO()
    with stream.Writer(buf, [("kind", "audio")]) as w:
        w.item(stream.T_SOURCE, [("source_rate", "48000"),
                                 ("source_channels", "2"),
                                 ("source_format", "WAV PCM_16")],
               clip=0, key="a.wav", label=-1)
        w.item(stream.T_AUDIO, bytes(4), clip=0, key="a.wav", dtype=1,
               dim0=2, dim1=1, clip_samples=2, sample_rate=16000)
        w.item(stream.T_SKIPPED, "unable to decode", clip=1, key="b.wav")
    data = buf.getvalue()
    assert data[len(stream.record(stream.T_HEADER,
                                  stream.header_meta([("kind", "audio")])))
                + 6] == 4  # the source record's version byte
    pairs, items, trailer = stream.read_stream(data)
    assert [it.type for it in items] == [stream.T_AUDIO, stream.T_SKIPPED]
    assert items[0].src.source() == {"source_rate": 48000,
                                     "source_channels": 2,
                                     "source_format": "WAV PCM_16"}
    assert items[1].src is None
    assert trailer["n_records"] == 3 and trailer["n_items"] == 1
    _, recs, _ = stream.read_stream(data, sources=True)
    assert [it.type for it in recs] == [7, 2, 4] and recs[1].src is None
    out = io.BytesIO()
    with stream.Writer(out, pairs) as w:
        for it in items:
            w.write(it)
    assert out.getvalue() == data
    w = stream.Writer(io.BytesIO())
    w.write(recs[0])
    with pytest.raises(ValueError, match="a second source record for clip"):
        w.write(recs[0])
    with pytest.raises(ValueError, match="after the source record of clip 0"):
        w.item(stream.T_SKIPPED, "x", clip=1)
    with pytest.raises(ValueError, match="ends after the source record"):
        w.close()
    with pytest.raises(ValueError, match="source record with sample_rate"):
        stream.Writer(io.BytesIO()).item(stream.T_SOURCE, b"", clip=0,
                                         sample_rate=8000)
