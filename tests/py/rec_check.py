#!/usr/bin/env python3
"""rec_check - read a record stream with the package's melpipe.stream
(rec_stream.py) and print it the way recdump does, so that a test can
compare the two readers' views of the same bytes field by field.

    rec_check.py [--stats] [--summary] [--max-record N] [FILE]

On a bad stream prints "rec_check: NAME: record N at byte B: reason"
on stderr and exits 1.
"""

import argparse
import sys

import rec_stream as rs


def utf8_len(s, i):
    """Length of the valid UTF-8 sequence of 2..4 bytes at s[i], or 0."""
    c = s[i]
    if 0xC2 <= c <= 0xDF:
        n, cp = 2, c & 0x1F
    elif 0xE0 <= c <= 0xEF:
        n, cp = 3, c & 0x0F
    elif 0xF0 <= c <= 0xF4:
        n, cp = 4, c & 0x07
    else:
        return 0
    if i + n > len(s):
        return 0
    for j in range(1, n):
        if s[i + j] & 0xC0 != 0x80:
            return 0
        cp = cp << 6 | (s[i + j] & 0x3F)
    if ((n == 3 and cp < 0x800) or (n == 4 and cp < 0x10000)
            or 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF):
        return 0
    return n


def escape(s, quote):
    out = bytearray(b'"' if quote else b"")
    i = 0
    while i < len(s):
        c = s[i]
        esc = {0x0A: b"\\n", 0x09: b"\\t", 0x0D: b"\\r", 0x5C: b"\\\\"}
        if c in esc:
            out += esc[c]
        elif c == 0x22:
            out += b'\\"' if quote else b'"'
        elif 0x20 <= c < 0x7F:
            out.append(c)
        elif c >= 0x80 and utf8_len(s, i):
            n = utf8_len(s, i)
            out += s[i:i + n]
            i += n
            continue
        else:
            out += b"\\x%02x" % c
        i += 1
    if quote:
        out += b'"'
    return bytes(out)


def values(it):
    """The payload's elements as float64, decoded with numpy."""
    import numpy as np
    if it.dtype == 1:
        return np.frombuffer(it.data, "<i2").astype(np.float64)
    if it.dtype == 2:
        return np.frombuffer(it.data, "<f4").astype(np.float64)
    if it.dtype == 3:
        return np.frombuffer(it.data, "<f2").astype(np.float64)
    u = np.frombuffer(it.data, "<u2").astype(np.uint32) << 16
    return u.view(np.float32).astype(np.float64)


def g9(v):
    return b"%.9g" % v


def stats(it):
    import numpy as np
    v = values(it)
    fin = v[np.isfinite(v)]
    if len(fin):
        # a running sum in element order, as a plain C loop adds
        mean = np.cumsum(fin)[-1] / len(fin)
        out = b" min=%s max=%s mean=%s" % (g9(fin.min()), g9(fin.max()),
                                           g9(mean))
    else:
        out = b" min=none max=none mean=none"
    return out + b" nan=%d inf=%d" % (np.isnan(v).sum(), np.isinf(v).sum())


def source_line(labels, it):
    """A source record: the clip's fields, then KEY="VALUE" a pair."""
    line = b"%d source clip=%d label=%d" % (it.index, it.clip, it.label)
    if 0 <= it.label < len(labels):
        line += b"(" + escape(labels[it.label], False) + b")"
    line += b" split=" + rs.SPLITS[it.split].encode()
    line += b" key=" + escape(it.key, True)
    for k, v in it.pairs():
        line += b" " + k.encode() + b"=" + escape(v, True)
    return line + b"\n"


def item_line(pairs, it, want_stats):
    labels = [v for k, v in pairs if k == "label"]
    if it.type == rs.T_SOURCE:
        return source_line(labels, it)
    line = b"%d %s clip=%d" % (it.index, rs.TYPE_NAMES[it.type].encode(),
                               it.clip)
    if it.type != rs.T_SKIPPED:
        line += b" segment=%d offset=%d" % (it.segment, it.offset)
    line += b" clip_samples=%d rate=%d label=%d" % (
        it.clip_samples, it.sample_rate, it.label)
    if 0 <= it.label < len(labels):
        line += b"(" + escape(labels[it.label], False) + b")"
    line += b" split=" + rs.SPLITS[it.split].encode()
    if it.type != rs.T_SKIPPED:
        line += b" dtype=%s dims=%dx%d" % (rs.DTYPES[it.dtype][0].encode(),
                                           it.dim0, it.dim1)
        if it.type in (rs.T_WINDOWS, rs.T_FWINDOWS):
            line += b" win_len=%d win_hop=%d n_windows=%d pad=%s" % (
                it.win_len, it.win_hop, it.n_windows,
                b"yes" if it.win_flags & rs.WIN_PAD else b"no")
        if it.flags:
            names = [b"more"] if it.flags & rs.F_MORE else []
            names += [b"cont"] if it.flags & rs.F_CONT else []
            line += b" piece=" + b",".join(names)
        if want_stats:
            line += stats(it)
    line += b" key=" + escape(it.key, True)
    if it.type == rs.T_SKIPPED:
        line += b" reason=" + escape(it.data, True)
    return line + b"\n"


def summary(pairs, records):
    """recdump --summary: an item in pieces counts once (as its first
    piece) in the totals per type, split and label."""
    labels = [v for k, v in pairs if k == "label"]
    sources = [i for i in records if i.type == rs.T_SOURCE]
    records = [i for i in records if i.type != rs.T_SOURCE]
    items = [i for i in records if not i.flags & rs.F_CONT]
    out = bytearray()
    for t in (rs.T_AUDIO, rs.T_FEATURES, rs.T_SKIPPED):
        out += b"type %s %d\n" % (rs.TYPE_NAMES[t].encode(),
                                  sum(i.type == t for i in items))
    windows = [i for i in items if i.type == rs.T_WINDOWS]
    if windows:
        out += b"type windows %d\n" % len(windows)
        out += b"windows %d\n" % sum(i.n_windows for i in windows)
    fwindows = [i for i in items if i.type == rs.T_FWINDOWS]
    if fwindows:
        out += b"type features-windows %d\n" % len(fwindows)
        out += b"feature_windows %d\n" % sum(i.n_windows for i in fwindows)
    if sources:
        out += b"type source %d\n" % len(sources)
    pieces = sum(1 for i in records if i.flags)
    if pieces:
        out += b"pieces %d\n" % pieces
        out += b"cut_short %d\n" % sum(
            1 for a, b in zip(records, records[1:])
            if a.flags & rs.F_MORE and b.type == rs.T_SKIPPED)
    for s, name in enumerate(rs.SPLITS):
        out += b"split %s %d\n" % (name.encode(),
                                   sum(i.split == s for i in items))
    for l, name in enumerate(labels):
        out += b"label %d %s %d\n" % (l, escape(name, True),
                                      sum(i.label == l for i in items))
    out += b"label none %d\n" % sum(i.label < 0 for i in items)
    other = sum(i.label >= len(labels) for i in items)
    if other:
        out += b"label unknown %d\n" % other
    out += b"clips %d\n" % len(set(i.clip for i in records + sources))
    out += b"payload_bytes %d\n" % sum(len(i.data) for i in records)
    return bytes(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stats", action="store_true")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--max-record", type=int, default=rs.DEFAULT_MAX_DATA)
    ap.add_argument("file", nargs="?", default="-")
    a = ap.parse_args()
    name = "stdin" if a.file == "-" else a.file
    data = (sys.stdin.buffer.read() if a.file == "-"
            else open(a.file, "rb").read())
    try:
        pairs, items, trailer = rs.read_stream(data, a.max_record,
                                               sources=True)
    except rs.RecError as e:
        sys.stderr.write("rec_check: %s: %s\n" % (name, e))
        return 1
    out = bytearray()
    for k, v in pairs:
        out += b"header " + k.encode() + b"=" + escape(v, False) + b"\n"
    if a.summary:
        out += summary(pairs, items)
    else:
        for it in items:
            out += item_line(pairs, it, a.stats)
    out += (b"trailer records=%d items=%d skipped=%d checksum=0x%08x\n"
            % (trailer["n_records"], trailer["n_items"],
               trailer["n_skipped"], trailer["checksum"]))
    sys.stdout.buffer.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
