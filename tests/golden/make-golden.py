#!/usr/bin/env python3
"""make-golden - write the golden record streams of tests/golden/.

Run once (the files are committed): python3 tests/golden/make-golden.py

The streams are built by tests/py/rec_stream.py on the package's
melpipe.stream (python/melpipe/stream), a Python implementation of
formats/record.md independent of lib/rec's reader and writer
(lib/rec_*.c). good-*.rec are valid; every reader must
accept them. bad-*.rec each break one rule; every reader must refuse them.
README lists each file; for a bad one, the record and byte at fault (found
by the Python reader, which this script checks against what each file was
meant to break) and the start of the reason lib/rec gives, so that a test
can check recdump's message.
"""

import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "py"))

import rec_stream as rs  # noqa: E402
from rec_stream import (T_AUDIO, T_FEATURES, T_HEADER, T_SKIPPED,  # noqa
                        T_SOURCE, T_TRAILER, T_WINDOWS, T_FWINDOWS,
                        WIN_PAD, F_MORE,
                        F_CONT,
                        record, item_meta, header_meta, trailer_meta)

GOOD = []   # (name, why)
BAD = []    # (name, expected "record N at byte B: reason", why)


def s16(values):
    return struct.pack("<%dh" % len(values), *values)


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def f16(values):
    return struct.pack("<%de" % len(values), *values)


def bf16(values):
    """Upper halves of the binary32 values, rounded to nearest even."""
    out = []
    for v in values:
        u = struct.unpack("<I", struct.pack("<f", v))[0]
        if (u & 0x7FFFFFFF) > 0x7F800000:
            out.append((u >> 16) | 0x40)
        else:
            out.append(((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF)
    return struct.pack("<%dH" % len(out), *out)


def sine(n, freq, rate, amp=0.5):
    return [amp * math.sin(2 * math.pi * freq * i / rate) for i in range(n)]


def audio_pairs(dtype="s16", **extra):
    pairs = [("producer", "wavcat 0.1.0"),
             ("stage", "wavcat 0.1.0\twavcat --rate 8000 --duration 0.01 "
                       "'DATA dir/'"),
             ("kind", "audio"), ("sample_rate", "8000"), ("dtype", dtype),
             ("duration", "80"), ("label", "no"), ("label", "yes"),
             ("splits", "hash:10:10"), ("clips", "3")]
    pairs += list(extra.items())
    return pairs


def audio_stream(zstd_level=0, raw_frame=False):
    """Three clips of 80 s16 samples (one skipped), wavcat-like."""
    b = rs.Builder(audio_pairs())
    for clip, (lab, split, key) in enumerate([(1, 1, "yes/a_nohash_0.wav"),
                                              (0, 2, "no/b_nohash_1.wav")]):
        x = [round(v * 32767) for v in sine(80, 440 * (clip + 1), 8000)]
        b.item(T_AUDIO, s16(x), zstd_level=zstd_level, raw_frame=raw_frame,
               clip=clip, clip_samples=80, label=lab, sample_rate=8000,
               split=split, dtype=1, key=key, dim0=80, dim1=1)
    b.item(T_SKIPPED, b"unable to decode: not an audio file", clip=2,
           label=1, sample_rate=0, split=1, key="yes/broken.wav")
    return b


def features_stream(dtype, enc, zstd_level=0):
    """Two clips cut in two segments each, 4 mels x 3 frames."""
    name = rs.DTYPES[dtype][0]
    pairs = audio_pairs(name) + [
        ("segment_len", "40"), ("segment_hop", "40"), ("segment_last", "pad"),
        ("stage", "segment 0.1.0\tsegment --len 40 --hop 40"),
        ("stage", "gpumel 0.1.0\tgpumel --n-mels 4 --dtype " + name),
        ("n_fft", "16"), ("hop_length", "16"), ("n_mels", "4"),
        ("log", "db"), ("top_db", "none")]
    pairs = [(k, {"kind": "features", "clips": "2"}.get(k, v))
             for k, v in pairs]
    b = rs.Builder(pairs)
    for clip in range(2):
        for seg in range(2):
            vals = [-80.0 + 7.25 * i + clip - seg for i in range(12)]
            b.item(T_FEATURES, enc(vals), zstd_level=zstd_level, clip=clip,
                   offset=40 * seg, clip_samples=80, segment=seg,
                   label=clip, sample_rate=8000, split=1, dtype=dtype,
                   key="k%d.wav" % clip, dim0=4, dim1=3)
    return b


def fwindows_stream(dtype, enc, zstd_level=0, expanded=False):
    """gpumel's output for segment --len 40 --hop 20 (format version 6):
    clip 0 gives 3 windows of 4 mels x 2 frames in one features-windows
    record, clip 1 is a skipped input, clip 2 gives 4 windows in two
    records (a batch ended between them: segments 0-1, then 2-3, the last
    window padded), then a features record of clip 3. expanded: the same
    windows one features record each, as a version-5 gpumel wrote them."""
    name = rs.DTYPES[dtype][0]
    pairs = audio_pairs(name) + [
        ("segment_len", "40"), ("segment_hop", "20"), ("segment_last", "pad"),
        ("stage", "segment 0.1.0\tsegment --len 40 --hop 20"),
        ("stage", "gpumel 0.1.0\tgpumel --n-mels 4 --n-fft 16 --hop 16 "
         "--no-center --dtype " + name),
        ("n_fft", "16"), ("hop_length", "16"), ("n_mels", "4"),
        ("log", "db"), ("top_db", "none")]
    pairs = [(k, {"kind": "features", "clips": "4"}.get(k, v))
             for k, v in pairs]
    b = rs.Builder(pairs)

    def vals(clip, seg):
        return [-80.0 + 3.25 * i + 2 * clip - 0.5 * seg for i in range(8)]

    def windows(clip, first, n, pad, **f):
        if expanded:
            for s in range(first, first + n):
                b.item(T_FEATURES, enc(vals(clip, s)), zstd_level=zstd_level,
                       clip=clip, offset=20 * s, segment=s, dim0=4, dim1=2,
                       **f)
            return
        data = b"".join(enc(vals(clip, s)) for s in range(first, first + n))
        b.item(T_FWINDOWS, data, zstd_level=zstd_level, clip=clip,
               offset=20 * first, segment=first, dim0=4, dim1=2, win_len=40,
               win_hop=20, n_windows=n, win_flags=WIN_PAD if pad else 0, **f)

    common = dict(sample_rate=8000, dtype=dtype)
    windows(0, 0, 3, False, clip_samples=80, label=1, split=1,
            key="yes/a_nohash_0.wav", **common)
    b.item(T_SKIPPED, b"unable to decode: not an audio file", clip=1,
           label=1, sample_rate=0, split=1, key="yes/broken.wav")
    windows(2, 0, 2, False, clip_samples=90, label=0, split=3,
            key="no/c_nohash_2.wav", **common)
    windows(2, 2, 2, True, clip_samples=90, label=0, split=3,
            key="no/c_nohash_2.wav", **common)
    b.item(T_FEATURES, enc(vals(3, 0)), zstd_level=zstd_level, clip=3,
           offset=0, clip_samples=40, segment=0, label=-1, split=2,
           key="d.wav", dim0=4, dim1=2, **common)
    return b


def check_expand_fwindows():
    """rec_stream.expand() of fwindows_stream() against the same windows
    written one features record each."""
    for dtype, enc in ((2, f32), (3, f16)):
        _, a, _ = rs.read_stream(fwindows_stream(dtype, enc).bytes())
        _, b, _ = rs.read_stream(fwindows_stream(dtype, enc,
                                                 expanded=True).bytes())
        if [rs.fields(x) for x in rs.expand(a)] != \
                [rs.fields(x) for x in b]:
            sys.exit("make-golden: expand() gives the wrong features "
                     "windows")


def segment_pairs(dtype, stages):
    """A wavcat header followed by segment stages [(len, hop, last)]."""
    pairs = audio_pairs(dtype)
    for n, hop, last in stages:
        pairs += [("stage", "segment 0.1.0\tsegment --len %d --hop %d "
                            "--last %s" % (n, hop, last))]
    n, hop, last = stages[-1]
    pairs += [("segment_len", str(n)), ("segment_hop", str(hop)),
              ("segment_last", last)]
    return pairs


def windows_s16_stream(zstd_level=0):
    """segment --len 40 --hop 20 of wavcat-like clips: clip 0 (80
    samples) gives 3 windows that fit exactly (no pad flag), clip 1 is a
    skipped input, clip 2 (70 samples) gives 3 windows, the last padded
    (10 zeros; pad flag)."""
    b = rs.Builder(segment_pairs("s16", [(40, 20, "pad")]))
    x = [round(v * 32767) for v in sine(80, 440, 8000)]
    b.item(T_WINDOWS, s16(x), zstd_level=zstd_level, clip=0,
           clip_samples=80, label=1, sample_rate=8000, split=1, dtype=1,
           key="yes/a_nohash_0.wav", dim0=80, dim1=1, win_len=40,
           win_hop=20, n_windows=3, win_flags=0)
    b.item(T_SKIPPED, b"unable to decode: not an audio file", clip=1,
           label=1, sample_rate=0, split=1, key="yes/broken.wav")
    x = [round(v * 32767) for v in sine(70, 1000, 8000, 0.9)]
    b.item(T_WINDOWS, s16(x), zstd_level=zstd_level, clip=2,
           clip_samples=70, label=0, sample_rate=8000, split=3, dtype=1,
           key="no/c_nohash_2.wav", dim0=70, dim1=1, win_len=40,
           win_hop=20, n_windows=3, win_flags=WIN_PAD)
    return b


def windows_f32_stream():
    """Two segment stages (--len 64 --hop 64, then --len 32 --hop 16
    --last drop): clip 0 (128 samples) is two first-stage windows, so two
    windows records of 3 windows each, segments 0-2 and 3-5; clip 1 (100
    samples) gives one record of 2 windows whose 48 samples are all the
    windows cover (the last 16 of its first window are left out); an
    audio record of clip 2 follows."""
    b = rs.Builder(segment_pairs("f32", [(64, 64, "pad"),
                                         (32, 16, "drop")]))
    x = sine(128, 300, 8000)
    for part in range(2):
        b.item(T_WINDOWS, f32(x[64 * part:64 * part + 64]), clip=0,
               offset=64 * part, clip_samples=128, segment=3 * part,
               label=0, sample_rate=8000, split=2, dtype=2, key="no/d.wav",
               dim0=64, dim1=1, win_len=32, win_hop=16, n_windows=3)
    x = sine(48, 2000, 8000, 0.25)
    b.item(T_WINDOWS, f32(x), clip=1, clip_samples=100, label=-1,
           sample_rate=8000, dtype=2, key="unlabelled.wav", dim0=48,
           dim1=1, win_len=32, win_hop=16, n_windows=2)
    b.item(T_AUDIO, f32([0.125, -0.5]), clip=2, clip_samples=2, label=1,
           sample_rate=8000, split=1, dtype=2, key="yes/e.wav", dim0=2,
           dim1=1)
    return b


def windows_edge_stream():
    """Edge cases of windows records that are valid: a single window
    longer than its samples (padded), the last window starting on the
    last sample frame, a hop longer than the window (gaps), 2 channels,
    f16 and bf16, and segment indices ending at 2^32 - 1."""
    b = rs.Builder([("producer", "edge 1"), ("label", "x")])
    b.item(T_WINDOWS, f16([0.5, -0.25, 1.0]), clip=0, clip_samples=3,
           dtype=3, key="short", dim0=3, dim1=1, win_len=8, win_hop=8,
           n_windows=1, win_flags=WIN_PAD)
    b.item(T_WINDOWS, bf16([i / 8.0 for i in range(20)]), clip=1,
           clip_samples=10, label=0, dtype=4, key="stereo", dim0=10, dim1=2,
           win_len=4, win_hop=3, n_windows=4, win_flags=WIN_PAD)
    b.item(T_WINDOWS, s16(list(range(-5, 7))), clip=2, clip_samples=12,
           dtype=1, key="gaps", dim0=12, dim1=1, win_len=2, win_hop=5,
           n_windows=3)
    b.item(T_WINDOWS, s16([7, -7, 7, -7, 7]), clip=3, offset=1 << 40,
           clip_samples=(1 << 40) + 5, segment=rs.MAX_SEGMENT - 2,
           dtype=1, key="last segments", dim0=5, dim1=1, win_len=3,
           win_hop=1, n_windows=3)
    return b


def pieces_pairs(kind, dtype, clips):
    """The header of a wavcat-like run without --duration (clips keep
    their length)."""
    return [("producer", "wavcat 0.1.0"),
            ("stage", "wavcat 0.1.0\twavcat --rate 8000 'DATA dir/'"),
            ("kind", kind), ("sample_rate", "8000"), ("dtype", dtype),
            ("label", "no"), ("label", "yes"), ("splits", "hash:10:10"),
            ("clips", str(clips))]


def pieces_audio_stream(zstd_level=0):
    """Format version 3, wavcat-like: clip 0 (300 s16 samples, length
    known only at its end) in 3 pieces of 120, 120 and 60 with
    clip_samples 0, then known; clip 1 whole; clip 2 (50 samples, length
    known) in a piece of 50 and an empty last piece."""
    b = rs.Builder(pieces_pairs("audio", "s16", 3))
    x = [round(v * 32767) for v in sine(300, 500, 8000)]
    f = dict(clip=0, label=1, sample_rate=8000, split=1, dtype=1,
             key="yes/long.mp3", dim1=1)
    for start, n, cs, piece in ((0, 120, 0, F_MORE),
                                (120, 120, 300, F_MORE | F_CONT),
                                (240, 60, 300, F_CONT)):
        b.item(T_AUDIO, s16(x[start:start + n]), zstd_level=zstd_level,
               piece=piece, offset=start, clip_samples=cs, dim0=n, **f)
    x = [round(v * 32767) for v in sine(80, 1000, 8000)]
    b.item(T_AUDIO, s16(x), zstd_level=zstd_level, clip=1,
           clip_samples=80, label=0, sample_rate=8000, split=2, dtype=1,
           key="no/short.wav", dim0=80, dim1=1)
    f = dict(clip=2, clip_samples=50, label=0, sample_rate=8000, split=3,
             dtype=1, key="no/c.wav", dim1=1)
    x = [round(v * 32767) for v in sine(50, 250, 8000)]
    b.item(T_AUDIO, s16(x), zstd_level=zstd_level, piece=F_MORE, dim0=50,
           **f)
    b.item(T_AUDIO, b"", piece=F_CONT, offset=50, dim0=0, **f)
    return b


def pieces_features_stream():
    """Format version 3, gpumel-like (hop 16): clip 0 segment 0 in 3
    pieces of 3, 2 and 1 frames of 4 mels; clip 0 segment 1 whole; clip
    1 in a piece of 2 frames and an empty last piece."""
    b = rs.Builder(pieces_pairs("features", "f32", 2) + [
        ("stage", "gpumel 0.1.0\tgpumel --n-mels 4 --hop 16"),
        ("n_fft", "64"), ("hop_length", "16"), ("n_mels", "4")])
    f = dict(clip=0, clip_samples=96, label=0, sample_rate=8000, split=1,
             dtype=2, key="no/a.wav", dim0=4)
    frame = 0
    for n, piece in ((3, F_MORE), (2, F_MORE | F_CONT), (1, F_CONT)):
        b.item(T_FEATURES, f32([-40.0 + i + frame for i in range(4 * n)]),
               piece=piece, offset=16 * frame, dim1=n, **f)
        frame += n
    b.item(T_FEATURES, f32([-1.5] * 8), segment=1, offset=96, dim1=2, **f)
    f.update(clip=1, clip_samples=40, label=1, key="yes/b.wav")
    b.item(T_FEATURES, f32([-3.25] * 8), piece=F_MORE, dim1=2, **f)
    b.item(T_FEATURES, b"", piece=F_CONT, offset=32, dim1=0, **f)
    return b


def pieces_cut_short_stream():
    """Format version 3: clip 0's decoding fails after two pieces of 100
    s16 samples: a skipped record of its clip and segment ends the item,
    the 200 samples kept as its offset and clip_samples; clip 1 whole."""
    b = rs.Builder(pieces_pairs("audio", "s16", 2))
    x = [round(v * 32767) for v in sine(200, 440, 8000)]
    f = dict(clip=0, label=1, sample_rate=8000, split=1, dtype=1,
             key="yes/broken-late.mp3", dim0=100, dim1=1)
    b.item(T_AUDIO, s16(x[:100]), piece=F_MORE, **f)
    b.item(T_AUDIO, s16(x[100:]), piece=F_MORE | F_CONT, offset=100, **f)
    b.item(T_SKIPPED, b"decoding failed after 0.0 s (200 samples kept): "
           b"invalid frame header", clip=0, offset=200, clip_samples=200,
           label=1, sample_rate=8000, split=1, key="yes/broken-late.mp3")
    b.item(T_AUDIO, s16([1, -1] * 40), clip=1, clip_samples=80, label=0,
           sample_rate=8000, split=2, dtype=1, key="no/b.wav", dim0=80,
           dim1=1)
    return b


def source_pairs(rate, channels, frames=None, fmt="WAV PCM_16"):
    """A source record's payload, as wavcat writes it."""
    pairs = [("source_rate", rate), ("source_channels", channels)]
    if frames is not None:
        pairs.append(("source_frames", frames))
    return header_meta(pairs + [("source_format", fmt)])


def source_stream(zstd_level=0):
    """Format version 4, wavcat-like (--rate 8000): each clip's source
    record right before its first record: clip 0 from 48 kHz stereo,
    whole; clip 1 at 8 kHz in two pieces; clip 2 opened (so its source
    is known) but skipped; clip 3 not opened (no source record), skipped;
    a source record with a key no reader knows yet."""
    b = rs.Builder(pieces_pairs("audio", "s16", 4))
    f = dict(label=1, split=1, key="yes/a.wav", sample_rate=0, dtype=0)
    b.item(T_SOURCE, source_pairs(48000, 2, 480), clip=0, **f)
    x = [round(v * 32767) for v in sine(80, 440, 8000)]
    b.item(T_AUDIO, s16(x), zstd_level=zstd_level, clip=0, clip_samples=80,
           label=1, sample_rate=8000, split=1, dtype=1, key="yes/a.wav",
           dim0=80, dim1=1)
    f.update(label=0, split=2, key="no/long.mp3")
    b.item(T_SOURCE, source_pairs(8000, 1, None, "MPEG MPEG_LAYER_III") +
           header_meta([("source_future", "a key no reader knows")]),
           clip=1, **f)
    g = dict(clip=1, label=0, sample_rate=8000, split=2, dtype=1,
             key="no/long.mp3", dim1=1)
    b.item(T_AUDIO, s16(x[:50]), zstd_level=zstd_level, piece=F_MORE,
           dim0=50, **g)
    b.item(T_AUDIO, s16(x[50:]), zstd_level=zstd_level, piece=F_CONT,
           offset=50, clip_samples=80, dim0=30, **g)
    f.update(split=3, key="no/late.flac")
    b.item(T_SOURCE, source_pairs(16000, 1, 16000, "FLAC PCM_16"), clip=2,
           **f)
    b.item(T_SKIPPED, b"decoding failed: invalid frame", clip=2, label=0,
           sample_rate=8000, split=3, key="no/late.flac")
    b.item(T_SKIPPED, b"unable to decode: format not recognised", clip=3,
           label=0, sample_rate=8000, split=3, key="no/junk.wav")
    return b


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def good(name, data, why):
    rs.read_stream(data)  # must be valid
    write(name, data)
    GOOD.append((name, why))


def bad(name, data, code, record_no, reason, why, max_data=None):
    """Checks that the Python reader refuses data with code at record_no
    before writing it; reason is the start of lib/rec's reason."""
    try:
        rs.read_stream(data, max_data or rs.DEFAULT_MAX_DATA)
    except rs.RecError as e:
        if (e.code, e.record) != (code, record_no):
            sys.exit("make-golden: %s: wanted %s at record %d, got %s"
                     % (name, code, record_no, e))
        write(name, data)
        BAD.append((name, "record %d at byte %d: %s"
                    % (e.record, e.offset, reason), why))
        return
    sys.exit("make-golden: %s is valid" % name)


def spans(data):
    return rs.record_spans(data)


def patched(data, rec_no, offset, fmt, value, fix_crc=True):
    """data with a field of record rec_no (offset from the record's start)
    changed, and that record's CRC recomputed unless fix_crc is false."""
    out = bytearray(data)
    p = spans(data)[rec_no][0]
    struct.pack_into(fmt, out, p + offset, value)
    if fix_crc:
        n = spans(data)[rec_no][1]
        out[p + 20:p + 24] = b"\0\0\0\0"
        out[p + 20:p + 24] = struct.pack("<I", rs.crc32c(bytes(out[p:p + n])))
    return bytes(out)


def with_trailer(recs):
    """Joins records and appends the trailer that matches them."""
    b = rs.Builder(pairs=None)
    for r in recs:
        b.add(r)
    return b.bytes()


def check_expand(data):
    """rec_stream.expand() of windows_s16_stream() against its windows cut
    here from the clips' samples: 40 every 20, the last of clip 2 padded."""
    _, items, _ = rs.read_stream(data)
    got = [(w.type, w.clip, w.offset, w.segment, w.dim0, w.data)
           for w in rs.expand(items) if w.type != T_SKIPPED]
    want = []
    for clip, x in ((0, sine(80, 440, 8000)), (2, sine(70, 1000, 8000, 0.9))):
        x = [round(v * 32767) for v in x]
        for i in range(3):
            part = x[20 * i:20 * i + 40]
            want.append((T_AUDIO, clip, 20 * i, i, 40,
                         s16(part + [0] * (40 - len(part)))))
    if got != want:
        sys.exit("make-golden: expand() gives the wrong windows")


def all_version(data, version):
    """data with every record's version byte set, the CRCs and the
    trailer's stream checksum made to match."""
    recs = []
    for o, n, _ in spans(data):
        recs.append(patched(data[o:o + n], 0, 6, "B", version))
    out = with_trailer(recs[:-1])
    return patched(out, len(recs) - 1, 6, "B", version)


def make_good():
    good("good-minimal.rec", rs.Builder(pairs=[]).bytes(),
         "a header with no pairs and a trailer: the smallest valid stream")
    good("good-audio-s16.rec", audio_stream().bytes(),
         "wavcat-like: two s16 clips with labels and splits, one skipped "
         "input")
    good("good-audio-zstd.rec", audio_stream(zstd_level=3).bytes(),
         "the same with zstd-compressed payloads (libzstd level 3)")
    good("good-audio-zstd-raw.rec", audio_stream(raw_frame=True).bytes(),
         "zstd frames made of raw (stored) blocks, written by hand")
    good("good-features-f32.rec", features_stream(2, f32).bytes(),
         "gpumel-like: 4x3 f32 feature matrices, two segments per clip")
    good("good-features-f16.rec", features_stream(3, f16).bytes(),
         "the same in f16")
    good("good-features-bf16.rec", features_stream(4, bf16).bytes(),
         "the same in bf16")
    good("good-features-zstd.rec",
         features_stream(2, f32, zstd_level=19).bytes(),
         "f32 features compressed at zstd level 19")

    b = rs.Builder([("producer", "odd 1"), ("label", "caf\xe9"),
                    ("label", ""), ("note", "tab\there\nnewline"),
                    ("future_key", "ignored by readers"),
                    ("label", "\x01ctl")])
    b.item(T_AUDIO, b"", clip=0, label=0, dtype=2, key="", dim0=0, dim1=1)
    b.item(T_AUDIO, f32([1.5, -2.0]), clip=0, offset=1, segment=1, dtype=2,
           key=b"sp ace/new\nline/\xff\xfe not utf8/\"q\".wav", dim0=2,
           dim1=1, label=2)
    b.item(T_SKIPPED, "reason with \u00e9 and \ttab".encode(), clip=5,
           key=b"caf\xc3\xa9.flac")
    b.item(T_FEATURES, f16([float("nan"), float("inf"), -0.0, 65504.0]),
           clip=7, dtype=3, key="x", dim0=2, dim1=2, split=3,
           label=2 ** 31 - 1)
    good("good-odd-values.rec", b.bytes(),
         "edge values: empty payload and key, keys with spaces, newlines, "
         "quotes and invalid UTF-8, unknown header keys, NaN/Inf in f16, "
         "label ids outside the table")

    good("good-windows-s16.rec", windows_s16_stream().bytes(),
         "segment-like (format version 2): windows records describing 3 "
         "windows of 40 every 20 samples, exact in clip 0, the last "
         "padded in clip 2, a skipped input between")
    check_expand(windows_s16_stream().bytes())
    good("good-windows-zstd.rec", windows_s16_stream(zstd_level=3).bytes(),
         "the same with zstd-compressed payloads")
    good("good-windows-f32.rec", windows_f32_stream().bytes(),
         "two segment stages: a clip in two windows records (segments "
         "0-2 and 3-5), samples no window covers left out, then an audio "
         "record")
    good("good-windows-edge.rec", windows_edge_stream().bytes(),
         "valid windows edge cases: one window longer than its samples, "
         "the last window starting on the last frame, hop longer than "
         "the window, 2 channels, f16 and bf16, segments up to 2^32 - 1")
    good("good-fwindows-f16.rec", fwindows_stream(3, f16).bytes(),
         "gpumel-like (format version 6): features-windows records of 3 "
         "windows (clip 0) and of 2 and 2 (clip 2, the last padded), 4 "
         "mels x 2 frames of f16 each, a skipped input and a features "
         "record between")
    good("good-fwindows-f32.rec", fwindows_stream(2, f32, 3).bytes(),
         "the same in f32 with zstd-compressed payloads")
    good("good-fwindows-expanded.rec",
         fwindows_stream(3, f16, expanded=True).bytes(),
         "good-fwindows-f16.rec's windows one features record each (format "
         "version 1): what its records stand for")
    check_expand_fwindows()
    good("good-version-2.rec", all_version(audio_stream().bytes(), 2),
         "good-audio-s16.rec with every record marked version 2: a reader "
         "of version 2 takes any record of a version it knows")
    good("good-version-3.rec", all_version(audio_stream().bytes(), 3),
         "the same marked version 3")
    good("good-pieces-audio.rec", pieces_audio_stream().bytes(),
         "format version 3: a clip in 3 audio pieces (more, more+cont, "
         "cont) whose clip_samples is 0, then known; a whole clip; a clip "
         "in a piece and an empty last piece")
    good("good-pieces-zstd.rec", pieces_audio_stream(zstd_level=3).bytes(),
         "the same with zstd-compressed payloads (flags 0x03, 0x07, 0x05)")
    good("good-pieces-features.rec", pieces_features_stream().bytes(),
         "format version 3, gpumel-like: a features item in 3 pieces of "
         "3, 2 and 1 frames, offsets in hops, then a whole segment, then "
         "an item ending in an empty piece")
    good("good-pieces-cut-short.rec", pieces_cut_short_stream().bytes(),
         "format version 3: an item cut short, two pieces flagged more "
         "then a skipped record of its clip and segment holding the "
         "samples kept; then a whole clip")
    good("good-source.rec", source_stream().bytes(),
         "format version 4, wavcat-like: a source record before each "
         "clip's first record (a whole clip, a clip in pieces, a clip "
         "skipped after it opened, with a pair no reader knows yet), and "
         "none for a clip that could not be opened")
    good("good-source-zstd.rec", source_stream(zstd_level=3).bytes(),
         "the same with zstd-compressed audio payloads")


def make_bad():
    a = audio_stream().bytes()
    sp = spans(a)  # header, clip 0, clip 1, skipped, trailer

    bad("bad-empty.rec", b"", "TRUNC", 0, "empty input",
        "no bytes at all")
    bad("bad-garbage.rec", b"#!/bin/sh\necho not a record stream\n",
        "MAGIC", 0, "bad magic 23 21 2f 62", "a shell script, not a record "
        "stream (recdump names audio and HDF5 files: t0002)")
    bad("bad-magic.rec", patched(a, 2, 0, "4s", b"MELQ", fix_crc=False),
        "MAGIC", 2, "bad magic", "a data record's magic changed: framing "
        "lost")
    bad("bad-version.rec", patched(a, 0, 6, "B", 7), "VERSION", 0,
        "format version 7 is newer than this reader's version 6",
        "the header record says format version 7")
    bad("bad-version-0.rec", patched(a, 1, 6, "B", 0), "FORMAT", 1,
        "invalid format version 0", "a record with version 0")
    bad("bad-type.rec", patched(a, 1, 4, "B", 10), "FORMAT", 1,
        "unknown record type 10", "record type 10")
    bad("bad-flags.rec", patched(a, 1, 5, "B", 0x10), "FORMAT", 1,
        "unknown flags 0x10", "flag bit 4 set")
    bad("bad-header-zstd.rec", patched(a, 0, 5, "B", 1), "FORMAT", 0,
        "a header record with flags 0x01 (header and trailer records have "
        "flags 0)", "the zstd flag on a header without a payload: refused "
        "for its flags, before its payload is looked at")
    bad("bad-trailer-flags.rec", patched(a, 4, 5, "B", 1), "FORMAT", 4,
        "a trailer record with flags 0x01 (header and trailer records "
        "have flags 0)", "the zstd flag on the trailer")
    bad("bad-reserved.rec", patched(a, 1, 7, "B", 1), "FORMAT", 1,
        "reserved byte is 0x01", "reserved header byte not 0")
    bad("bad-meta-huge.rec", patched(a, 1, 8, "<I", 0xFFFFFFF0),
        "TOOBIG", 1, "metadata length 4294967280 over the cap",
        "a metadata length of 4 GiB: refused before any allocation")
    bad("bad-data-huge.rec", patched(a, 1, 12, "<I", 0xFFFFFFF0),
        "TOOBIG", 1, "payload length 4294967280 over the cap",
        "a payload length of 4 GiB: refused before any allocation")
    z = audio_stream(zstd_level=3).bytes()
    bad("bad-raw-huge.rec", patched(z, 1, 16, "<I", 0x7FFFFFFF),
        "TOOBIG", 1, "raw payload length 2147483647 over the cap",
        "a compressed payload claiming 2 GiB uncompressed")
    bad("bad-raw-len.rec", patched(a, 1, 16, "<I", 158), "FORMAT", 1,
        "raw length 158 differs from stored length 160",
        "raw_len differs from data_len without the zstd flag")
    bad("bad-cut-header.rec", a[:sp[2][0] + 10], "TRUNC", 2,
        "input ended inside a record header",
        "cut 10 bytes into a record header")
    bad("bad-cut-payload.rec", a[:sp[2][0] + sp[2][1] - 1], "TRUNC", 2,
        "input ended inside the record",
        "cut one byte before the end of a record")
    bad("bad-no-trailer.rec", a[:sp[-1][0]], "TRUNC", 4,
        "input ended before the trailer",
        "cut exactly between records: the trailer is missing")
    bad("bad-crc-field.rec", patched(a, 1, 24, "<Q", 1, fix_crc=False),
        "CRC", 1, "checksum mismatch", "the clip field changed without "
        "its CRC")
    bad("bad-crc-payload.rec",
        patched(a, 2, sp[2][1] - 1, "B", a[sp[2][0] + sp[2][1] - 1] ^ 0x40,
                fix_crc=False),
        "CRC", 2, "checksum mismatch", "one payload bit flipped")
    bad("bad-crc-stored.rec", patched(a, 3, 20, "<I", 0, fix_crc=False),
        "CRC", 3, "checksum mismatch", "the CRC field zeroed")

    # zstd
    b = rs.Builder(audio_pairs())
    b.add(record(T_AUDIO, item_meta(dtype=1, dim0=4, dim1=1, key="z"),
                 b"\x28\xb5\x2f\xfd garbage", flags=1, raw_len=8))
    bad("bad-zstd-garbage.rec", b.bytes(), "ZSTD", 1,
        "compressed payload is not a zstd frame",
        "zstd flag on bytes that are not a frame")
    b = rs.Builder(audio_pairs())
    b.add(record(T_AUDIO, item_meta(dtype=1, dim0=4, dim1=1, key="z"),
                 rs.zstd_raw_frame(bytes(6)), flags=1, raw_len=8))
    bad("bad-zstd-size.rec", b.bytes(), "ZSTD", 1,
        "payload decompresses to 6 bytes, raw length says 8",
        "a frame of 6 bytes where raw_len says 8")
    b = rs.Builder(audio_pairs())
    b.add(record(T_AUDIO, item_meta(dtype=1, dim0=4, dim1=1, key="z"),
                 rs.zstd_raw_frame(bytes(4)) + rs.zstd_raw_frame(bytes(4)),
                 flags=1, raw_len=8))
    bad("bad-zstd-two-frames.rec", b.bytes(), "ZSTD", 1,
        "compressed payload has", "two zstd frames in one payload")

    # where records are
    hdr, c0, c1, sk, tr = [a[o:o + n] for o, n, _ in sp]
    bad("bad-first-data.rec", with_trailer([c0, c1]), "ORDER", 0,
        "the first record is of type audio, not a header",
        "no header: the stream starts with a data record")
    bad("bad-first-trailer.rec", tr, "ORDER", 0,
        "the first record is of type trailer, not a header", "only a trailer")
    bad("bad-two-headers.rec", with_trailer([hdr, c0, hdr, c1]), "ORDER", 2,
        "a second header record", "a header record in the middle")
    bad("bad-clip-order.rec", with_trailer([hdr, c1, c0, sk]), "ORDER", 2,
        "clip 0 segment 0 after clip 1 segment 0",
        "clips out of order (trailer made to match)")
    bad("bad-duplicate.rec", with_trailer([hdr, c0, c0, c1, sk]), "ORDER",
        2, "clip 0 segment 0 after clip 0 segment 0",
        "a record repeated (trailer made to match)")

    # header record
    bad("bad-header-payload.rec",
        with_trailer([record(T_HEADER, header_meta([("a", "b")]), b"xy"),
                      c0]),
        "FORMAT", 0, "header record with a payload of 2 bytes",
        "a header record with a payload")
    bad("bad-header-nul.rec",
        with_trailer([record(T_HEADER, b"producer\0x"), c0]),
        "FORMAT", 0, "header metadata does not end with a NUL",
        "the last header value is not NUL-terminated")
    bad("bad-header-key.rec",
        with_trailer([record(T_HEADER, header_meta([("Bad-Key", "v")]))]),
        "FORMAT", 0, "header pair 0 has an invalid key",
        "a header key outside [a-z0-9_]")
    bad("bad-header-odd.rec",
        with_trailer([record(T_HEADER, b"producer\0x\0label\0")]),
        "FORMAT", 0, "header key 'label' has no value",
        "an odd number of strings: a key without a value")
    bad("bad-header-empty-key.rec",
        with_trailer([record(T_HEADER, b"\0value\0")]),
        "FORMAT", 0, "header pair 0 has an invalid key",
        "an empty header key")

    # data record metadata
    def item_stream(meta, data, rtype=T_AUDIO):
        return with_trailer([hdr, record(rtype, meta, data)])

    bad("bad-meta-len.rec",
        item_stream(item_meta(dtype=1, dim0=2, dim1=1, key="abc",
                              key_len=2), bytes(4)),
        "FORMAT", 1, "metadata length 51 is not 48 + key length 2",
        "key_len disagrees with meta_len")
    bad("bad-meta-short.rec", item_stream(bytes(40), b""), "FORMAT", 1,
        "audio record with 40 bytes of metadata",
        "a data record with 40 bytes of metadata")
    bad("bad-dtype.rec",
        item_stream(item_meta(dtype=5, dim0=2, dim1=1), bytes(4)),
        "FORMAT", 1, "invalid dtype 5", "element type 5")
    bad("bad-dims.rec",
        item_stream(item_meta(dtype=2, dim0=3, dim1=1), bytes(8)),
        "FORMAT", 1, "payload of 8 bytes does not match 3x1 f32",
        "payload size is not dim0*dim1*size")
    bad("bad-dims-overflow.rec",
        item_stream(item_meta(dtype=2, dim0=1 << 31, dim1=1 << 31),
                    bytes(0)), "FORMAT", 1,
        "payload of 0 bytes does not match 2147483648x2147483648 f32",
        "dims whose product overflows 64 bits once multiplied by 4")
    bad("bad-split.rec",
        item_stream(item_meta(dtype=1, dim0=1, dim1=1, split=4), bytes(2)),
        "FORMAT", 1, "invalid split 4", "split 4")
    bad("bad-skipped-dtype.rec",
        item_stream(item_meta(dtype=1), b"why", T_SKIPPED), "FORMAT", 1,
        "skipped record with dtype 1", "a skipped record with a dtype")
    bad("bad-key-nul.rec",
        item_stream(item_meta(dtype=1, dim0=1, dim1=1, key=b"a\0b"),
                    bytes(2)), "FORMAT", 1, "key contains a NUL byte",
        "a NUL byte inside a key")

    make_bad_windows(hdr)
    make_bad_fwindows(hdr)
    make_bad_pieces(hdr)
    make_bad_sources(hdr)

    # trailer
    bad("bad-trailer-count.rec",
        b"".join([hdr, c0, c1, sk]) + record(T_TRAILER, trailer_meta(
            4, 3, 1, struct.unpack_from("<I", tr, HDR_TRAILER_CSUM)[0])),
        "FORMAT", 4, "trailer counts 4 records",
        "the trailer counts one record more than there are")
    bad("bad-trailer-checksum.rec", patched(a, 4, 24 + 24, "<I", 0x1234),
        "CRC", 4, "stream checksum mismatch",
        "the trailer's stream checksum is wrong (its own CRC is right)")
    csum = struct.unpack_from("<I", tr, HDR_TRAILER_CSUM)[0]
    bad("bad-dropped-record.rec",
        b"".join([hdr, c0, sk]) + record(T_TRAILER,
                                         trailer_meta(2, 1, 1, csum)),
        "CRC", 3, "stream checksum mismatch",
        "a whole record removed and the trailer counts fixed: only the "
        "stream checksum can tell")
    bad("bad-trailer-size.rec",
        b"".join([hdr, c0, c1, sk]) + record(T_TRAILER, tr[24:] + bytes(8)),
        "FORMAT", 4, "trailer with 40 bytes of metadata",
        "a trailer with 40 bytes of metadata")
    bad("bad-trailer-reserved.rec", patched(a, 4, 24 + 28, "<I", 7),
        "FORMAT", 4, "trailer reserved field is not 0",
        "the trailer's reserved field is not 0")
    bad("bad-trailing-byte.rec", a + b"\n", "TRAILING", 5,
        "data after the trailer", "one byte after the trailer")
    bad("bad-two-streams.rec", a + a, "TRAILING", 5,
        "data after the trailer (another stream follows",
        "two streams run together")


def make_bad_windows(hdr):
    """Windows records (type 6) that each break one of their rules."""
    ws = windows_s16_stream().bytes()
    bad("bad-windows-version-1.rec", patched(ws, 1, 6, "B", 1), "FORMAT", 1,
        "a windows record marked format version 1 (windows records are "
        "version 2)", "a windows record whose version byte says 1")

    def win_stream(**over):
        """A windows record of 80 s16 samples, 3 windows of 40 every 20
        unless over says otherwise."""
        f = dict(dtype=1, dim0=80, dim1=1, key="w", win_len=40, win_hop=20,
                 n_windows=3, win_flags=0)
        f.update(over)
        data = bytes(2 * f["dim0"])
        return with_trailer([hdr, record(T_WINDOWS, item_meta(**f), data)])

    bad("bad-windows-len-0.rec", win_stream(win_len=0), "FORMAT", 1,
        "windows record with window length 0, hop 20 and 3 windows (none "
        "may be 0)", "a window length of 0")
    bad("bad-windows-hop-0.rec", win_stream(win_hop=0), "FORMAT", 1,
        "windows record with window length 40, hop 0 and 3 windows (none "
        "may be 0)", "a hop of 0")
    bad("bad-windows-count-0.rec", win_stream(n_windows=0), "FORMAT", 1,
        "windows record with window length 40, hop 20 and 0 windows (none "
        "may be 0)", "a windows record of no windows")
    bad("bad-windows-flags.rec", win_stream(win_flags=0x80000001), "FORMAT",
        1, "unknown windows flags 0x80000001",
        "an unknown windows flag bit beside the pad flag")
    bad("bad-windows-no-pad.rec", win_stream(dim0=70), "FORMAT", 1,
        "3 windows of 40 every 20 do not fit 70 samples (and the pad flag "
        "is clear)", "the last window ends 10 samples past the payload and "
        "the pad flag is clear")
    bad("bad-windows-past-end.rec",
        win_stream(win_hop=40, win_flags=WIN_PAD), "FORMAT", 1,
        "3 windows of 40 every 40 do not fit 80 samples",
        "the last window starts at sample 80 of 80: past the payload, "
        "refused even with the pad flag")
    bad("bad-windows-meta-len.rec",
        with_trailer([hdr, record(T_WINDOWS, item_meta(
            dtype=1, dim0=2, dim1=1, key="abc"), bytes(4))]), "FORMAT", 1,
        "metadata length 51 is not 48 + key length 3 + 16",
        "a windows record without its 16 bytes of window fields")
    bad("bad-windows-segment-overflow.rec",
        win_stream(segment=rs.MAX_SEGMENT - 1), "FORMAT", 1,
        "3 windows from segment 4294967294 run past segment index 2^32 - 1",
        "segment + n_windows - 1 over 2^32 - 1")
    w0 = ws[spans(ws)[1][0]:][:spans(ws)[1][1]]
    inside = record(T_AUDIO, item_meta(
        clip=0, offset=40, clip_samples=80, segment=2, label=1,
        sample_rate=8000, split=1, dtype=1, key="yes/a_nohash_0.wav",
        dim0=40, dim1=1), bytes(80))
    bad("bad-windows-order.rec", with_trailer([hdr, w0, inside]), "ORDER",
        2, "clip 0 segment 2 after clip 0 segment 2 (records must be in "
        "clip and segment order)", "an audio record of segment 2 after a "
        "windows record holding segments 0 to 2 (trailer made to match)")


def make_bad_fwindows(hdr):
    """Features-windows records (type 9) that each break one rule."""
    fw = fwindows_stream(2, f32).bytes()
    bad("bad-fwindows-version-5.rec", patched(fw, 1, 6, "B", 5), "FORMAT", 1,
        "a features-windows record marked format version 5 "
        "(features-windows records are version 6)",
        "a features-windows record whose version byte says 5")

    def fw_stream(payload=None, **over):
        """A features-windows record of 3 windows of 4 x 2 f32 (windows of
        40 every 20) unless over says otherwise."""
        f = dict(dtype=2, dim0=4, dim1=2, key="w", win_len=40, win_hop=20,
                 n_windows=3, win_flags=0)
        f.update(over)
        data = bytes(4 * 4 * 2 * 3) if payload is None else payload
        return with_trailer([hdr, record(T_FWINDOWS, item_meta(**f), data)])

    bad("bad-fwindows-len-0.rec", fw_stream(win_len=0), "FORMAT", 1,
        "features-windows record with window length 0, hop 20 and 3 "
        "windows (none may be 0)", "a window length of 0")
    bad("bad-fwindows-hop-0.rec", fw_stream(win_hop=0), "FORMAT", 1,
        "features-windows record with window length 40, hop 0 and 3 "
        "windows (none may be 0)", "a hop of 0")
    bad("bad-fwindows-count-0.rec", fw_stream(b"", n_windows=0), "FORMAT",
        1, "features-windows record with window length 40, hop 20 and 0 "
        "windows (none may be 0)", "no windows (and no payload)")
    bad("bad-fwindows-size.rec", fw_stream(n_windows=4), "FORMAT", 1,
        "payload of 96 bytes does not match 4 windows of 4x2 f32",
        "a payload of 3 windows' features for 4")
    bad("bad-fwindows-flags.rec", fw_stream(win_flags=2), "FORMAT", 1,
        "unknown windows flags 0x2", "an unknown windows flag bit")
    bad("bad-fwindows-segment-overflow.rec",
        fw_stream(segment=rs.MAX_SEGMENT - 1), "FORMAT", 1,
        "3 windows from segment 4294967294 run past segment index 2^32 - 1",
        "segment + n_windows - 1 over 2^32 - 1")
    bad("bad-fwindows-more.rec", patched(fw, 1, 5, "B", F_MORE), "FORMAT", 1,
        "the more flag on a features-windows record (only audio and "
        "features records come in pieces)", "a features-windows record "
        "flagged more")
    bad("bad-fwindows-meta-len.rec",
        with_trailer([hdr, record(T_FWINDOWS, item_meta(
            dtype=2, dim0=4, dim1=2, key="abc"), bytes(32)),]), "FORMAT", 1,
        "metadata length 51 is not 48 + key length 3 + 16",
        "a features-windows record without its 16 bytes of window fields")
    w0 = fw[spans(fw)[1][0]:][:spans(fw)[1][1]]
    inside = record(T_FEATURES, item_meta(
        clip=0, offset=40, clip_samples=80, segment=2, label=1,
        sample_rate=8000, split=1, dtype=2, key="yes/a_nohash_0.wav",
        dim0=4, dim1=2), bytes(32))
    bad("bad-fwindows-order.rec", with_trailer([hdr, w0, inside]), "ORDER",
        2, "clip 0 segment 2 after clip 0 segment 2 (records must be in "
        "clip and segment order)", "a features record of segment 2 after a "
        "features-windows record holding segments 0 to 2 (trailer made to "
        "match)")


def make_bad_pieces(hdr):
    """Pieces of items (format version 3) that each break one rule."""
    def piece(n=10, **over):
        """An audio piece of clip 0: n s16 samples at offset 0, flagged
        more, unless over says otherwise."""
        f = dict(clip=0, clip_samples=0, label=1, sample_rate=8000, split=1,
                 dtype=1, key="k.wav", dim0=n, dim1=1)
        f.update(over)
        flags = f.pop("piece", F_MORE)
        version = f.pop("version", None)
        data = bytes(rs.DTYPES[f["dtype"]][1] * f["dim0"] * f["dim1"]
                     if f["dtype"] else 0)
        return record(T_AUDIO if f["dtype"] else T_SKIPPED, item_meta(**f),
                      data, flags=flags, version=version)

    def last(**over):
        """The piece that ends the item of piece(): 10 samples on."""
        return piece(**dict(dict(offset=10, clip_samples=20,
                                 piece=F_CONT), **over))

    bad("bad-cont-first.rec", with_trailer([hdr, last()]), "ORDER", 1,
        "a piece flagged cont (clip 0 segment 0) without a piece flagged "
        "more before it", "a piece flagged cont with no piece before it")
    bad("bad-more-trailer.rec", with_trailer([hdr, piece()]), "ORDER", 2,
        "the stream ends after a piece of clip 0 segment 0 flagged more",
        "the trailer right after a piece flagged more")
    bad("bad-more-other-clip.rec",
        with_trailer([hdr, piece(), piece(clip=1, clip_samples=10,
                                          piece=0)]), "ORDER", 2,
        "audio record of clip 1 segment 0 after a piece of clip 0 segment 0 "
        "flagged more", "a piece flagged more, then a whole record of the "
        "next clip")
    bad("bad-more-no-cont.rec",
        with_trailer([hdr, piece(), piece(segment=1, clip_samples=10,
                                          piece=0)]), "ORDER", 2,
        "audio record of clip 0 segment 1 after a piece of clip 0 segment 0 "
        "flagged more", "a piece flagged more, then a record of its clip "
        "without the cont flag")
    bad("bad-more-skipped-segment.rec",
        with_trailer([hdr, piece(), piece(n=0, segment=1, dtype=0, dim1=0,
                                          piece=0)]), "ORDER", 2,
        "skipped record of clip 0 segment 1 after a piece of clip 0 segment "
        "0 flagged more", "a piece flagged more, then a skipped record of "
        "another segment")
    for field, value, reason in (
            ("key", "other.wav", "key differs from the piece before"),
            ("label", 2, "label (2) differs from the piece before (1)"),
            ("dtype", 3, "dtype (f16) differs from the piece before (s16)"),
            ("clip_samples", 30, "clip_samples (30) differs from the piece "
             "before (20)")):
        first = piece(clip_samples=20) if field == "clip_samples" else piece()
        bad("bad-cont-%s.rec" % field.replace("_", "-"),
            with_trailer([hdr, first, last(**{field: value})]), "ORDER", 2,
            "a piece flagged cont whose " + reason,
            "the last piece's %s differs from the first's" % field)
    bad("bad-cont-gap.rec", with_trailer([hdr, piece(), last(offset=11)]),
        "ORDER", 2, "a piece flagged cont at offset 11, not where the piece "
        "before ends (0 + 10)", "an audio piece one sample after the end "
        "of the piece before: a gap")
    fpiece = record(T_FEATURES, item_meta(
        clip=0, offset=32, dtype=2, key="f", dim0=2, dim1=1), bytes(8),
        flags=F_MORE)
    bad("bad-cont-features-offset.rec",
        with_trailer([hdr, fpiece, record(T_FEATURES, item_meta(
            clip=0, offset=32, clip_samples=64, dtype=2, key="f", dim0=2,
            dim1=1), bytes(8), flags=F_CONT)]), "ORDER", 2,
        "a piece flagged cont at offset 32, not after the piece before (32)",
        "a features piece whose offset does not increase")
    bad("bad-more-skipped.rec",
        with_trailer([hdr, piece(n=0, dtype=0, dim1=0)]), "FORMAT", 1,
        "the more flag on a skipped record (only audio and features records "
        "come in pieces)", "the more flag on a skipped record")
    bad("bad-more-header.rec",
        with_trailer([record(T_HEADER, header_meta([("a", "b")]),
                             flags=F_MORE)]), "FORMAT", 0,
        "a header record with flags 0x02 (header and trailer records have "
        "flags 0)", "the more flag on the header")
    bad("bad-more-version-2.rec", with_trailer([hdr, piece(version=2),
                                                last()]), "FORMAT", 1,
        "the more flag in a record marked format version 2 (pieces are "
        "version 3)", "a piece flagged more whose version byte says 2")
    bad("bad-more-empty.rec", with_trailer([hdr, piece(n=0), last()]),
        "FORMAT", 1, "a piece of 0 samples flagged more (only the last "
        "piece of an item may be empty)", "an empty piece that is not the "
        "last")
    bad("bad-last-clip-samples.rec",
        with_trailer([hdr, piece(), last(clip_samples=0)]), "FORMAT", 2,
        "the last piece of an item with clip_samples 0", "the last piece "
        "does not give the clip's length")


def make_bad_sources(hdr):
    """Source records (format version 4) that each break one rule."""
    def src(clip=0, data=None, **over):
        f = dict(clip=clip, label=1, split=1, key="k.wav", sample_rate=0,
                 dtype=0)
        f.update(over)
        flags = f.pop("piece", 0)
        version = f.pop("version", None)
        return record(T_SOURCE, item_meta(**f), source_pairs(16000, 1, 10)
                      if data is None else data, flags=flags,
                      version=version)

    def audio(clip=0, **over):
        f = dict(clip=clip, clip_samples=10, label=1, sample_rate=8000,
                 split=1, dtype=1, key="k.wav", dim0=10, dim1=1)
        f.update(over)
        flags = f.pop("piece", 0)
        return record(T_AUDIO, item_meta(**f), bytes(20), flags=flags)

    bad("bad-source-version-3.rec", with_trailer([hdr, src(version=3),
                                                  audio()]), "FORMAT", 1,
        "a source record marked format version 3 (source records are "
        "version 4)", "a source record whose version byte says 3")
    bad("bad-source-flags.rec", with_trailer([hdr, src(piece=F_MORE),
                                              audio()]), "FORMAT", 1,
        "the more flag on a source record (only audio and features records "
        "come in pieces)", "the more flag on a source record")
    bad("bad-source-fields.rec",
        with_trailer([hdr, src(sample_rate=16000), audio()]), "FORMAT", 1,
        "source record with sample_rate 16000 (only clip, label, split and "
        "key are set", "a source record with a sample rate: its rates are "
        "in its pairs")
    bad("bad-source-nul.rec",
        with_trailer([hdr, src(data=b"source_rate\x0016000"), audio()]),
        "FORMAT", 1, "source payload does not end with a NUL",
        "the last pair's value is not NUL-terminated")
    bad("bad-source-key.rec",
        with_trailer([hdr, src(data=b"Rate\x0016000\x00"), audio()]),
        "FORMAT", 1, "source pair 0 has an invalid key",
        "a source key outside [a-z0-9_]")
    bad("bad-source-odd.rec",
        with_trailer([hdr, src(data=b"source_rate\x00"), audio()]),
        "FORMAT", 1, "source key 'source_rate' has no value",
        "a source key without a value")
    bad("bad-source-two.rec", with_trailer([hdr, src(), src(), audio()]),
        "ORDER", 2, "a second source record for clip 0 (one per clip at "
        "most)", "two source records for one clip")
    bad("bad-source-after-data.rec",
        with_trailer([hdr, src(), audio(), src(), audio(segment=1)]),
        "ORDER", 3, "source record of clip 0 after a record of clip 0 (a "
        "source record comes before its clip's first data record)",
        "a source record after its clip's data")
    bad("bad-source-after-more.rec",
        with_trailer([hdr, audio(piece=F_MORE, clip_samples=0), src(),
                      audio(piece=F_CONT, offset=10, clip_samples=20)]),
        "ORDER", 2, "source record of clip 0 after a piece of clip 0 "
        "segment 0 flagged more", "a source record inside an item in "
        "pieces, after a piece flagged more")
    bad("bad-source-alone.rec", with_trailer([hdr, src(0), audio(1)]),
        "ORDER", 2, "clip 1 segment 0 after the source record of clip 0 (a "
        "data record of its clip must follow a source record)",
        "a source record whose clip has no data record after it")
    bad("bad-source-then-source.rec",
        with_trailer([hdr, src(0), src(1), audio(1)]), "ORDER", 2,
        "source record of clip 1 right after the source record of clip 0",
        "two source records in a row for different clips")
    bad("bad-source-trailer.rec", with_trailer([hdr, audio(), src(1)]),
        "ORDER", 3, "the stream ends after the source record of clip 1",
        "the stream ends right after a source record")


# offset of the stream checksum inside a trailer record
HDR_TRAILER_CSUM = rs.HDR_SIZE + 24


def write_readme():
    lines = [
        "Golden record streams (formats/record.md), written by",
        "make-golden.py with tests/py/rec_stream.py, a Python implementation",
        "of the spec independent of lib/rec_*.c. Do not edit the files by "
        "hand:",
        "change make-golden.py and run it again.",
        "",
        "The good-*.rec files are valid streams that every reader must",
        "accept; the bad-*.rec files each break one rule and every reader",
        "must refuse them.",
        "Lines: file, TAB, for bad files the record and byte at fault and",
        "the start of lib/rec's reason, TAB, why (tests/t0004 reads them).",
        "",
    ]
    for name, why in GOOD:
        lines.append("%s\t-\t%s" % (name, why))
    for name, expect, why in BAD:
        lines.append("%s\t%s\t%s" % (name, expect, why))
    with open(os.path.join(HERE, "README"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    for f in os.listdir(HERE):
        if f.endswith(".rec"):
            os.remove(os.path.join(HERE, f))
    make_good()
    make_bad()
    write_readme()
    print("make-golden: %d good, %d bad streams in %s"
          % (len(GOOD), len(BAD), HERE))


if __name__ == "__main__":
    main()
