#!/usr/bin/env python3
"""Checks of wavcat's clips in pieces (formats/record.md, Items in pieces).

wavcat_pieces.py same LIST
    LIST holds lines "WHOLE PIECED N": PIECED is the stream wavcat wrote
    with --piece-samples N, WHOLE the same run with pieces larger than any
    clip. Both are read with rec_stream (every check of the spec). Their
    headers are the same but for the stage entry; clip by clip, a clip of
    at most N samples is the same record, a skipped one the same skipped
    record; a longer one comes as pieces of N samples flagged more, then
    more|cont, then a last one of 1 to N flagged cont, each with the whole
    record's fields, at the offsets that follow on, and their samples
    joined are the whole record's, bit for bit. clip_samples is the clip's
    length in every piece when wavcat knows it before decoding (a header
    "duration", or a file other than MP3); else 0 in the pieces flagged
    more. Prints one line per pair: "PIECED: C clips, P pieces".

wavcat_pieces.py cut STREAM KEY KEPT [--prefix-of WHOLE]
    The clip KEY of STREAM was cut short after KEPT samples: pieces of
    the piece size, the samples decoded since the last of them as one
    more piece (flagged more), then a skipped record of the same clip and
    segment whose offset and clip_samples are KEPT and whose reason
    starts "decoding failed after S s (KEPT samples kept): ", S being
    KEPT at the stream's rate, to a tenth of a second. KEPT may be
    "any" (at least one piece). With --prefix-of, the samples kept are
    the first ones of the clip of WHOLE, a stream of one clip in one
    record (the same file, undamaged). Prints the reason.

wavcat_pieces.py records A B
    Exit 1 unless the data records of the streams A and B are the same
    bytes (their headers may differ: the stage entry holds the command
    line).

wavcat_pieces.py gen OUT --seconds S --rate R [--amp A]
    A 16-bit mono WAV of S seconds at R Hz, written as it is made (any
    length in little memory): sample n is gen_s16(n, A), a sawtooth that
    steps by 40503/65536 of the range A (default 20000) from sample to
    sample, so that every sample can be checked where it lands.

wavcat_pieces.py scan STREAM|- [--gen-s16 A]
    Reads a stream as it comes, without checking CRCs (recdump does), and
    prints per clip "CLIP KEY SAMPLES PIECES SHA256" of its samples
    joined, at most one piece in memory. With --gen-s16 A, every s16
    sample n of every clip must be gen_s16(n, A) (wavcat_long.py's
    generator).
"""
import argparse
import hashlib
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec_stream as rs  # noqa: E402

NP_DTYPES = {1: np.dtype("<i2"), 2: np.dtype("<f4")}


_loaded = {}


def load(path):
    """(pairs, items, trailer) of the stream in the file at path; each
    file is read once (the whole streams are compared many times)."""
    if path not in _loaded:
        with open(path, "rb") as f:
            _loaded[path] = rs.read_stream(f.read())
    return _loaded[path]


def clips(items):
    """{clip: [records]} in stream order."""
    out = {}
    for it in items:
        out.setdefault(it.clip, []).append(it)
    return out


def header_value(pairs, key):
    vals = [v for k, v in pairs if k == key]
    return vals[0] if vals else None


def same_fields(a, b, names=("type", "key", "label", "sample_rate", "split",
                             "dtype", "dim1", "segment")):
    for n in names:
        if getattr(a, n) != getattr(b, n):
            return n
    return None


def check_same(whole_path, pieced_path, n):
    wp, wi, wt = load(whole_path)
    pp, pi, pt = load(pieced_path)
    where = pieced_path + ": "
    strip = [(k, v) for k, v in wp if k != "stage"]
    if strip != [(k, v) for k, v in pp if k != "stage"]:
        sys.exit(where + "headers differ")
    known_dur = header_value(pp, "duration") is not None
    wc, pc = clips(wi), clips(pi)
    if sorted(wc) != sorted(pc):
        sys.exit(where + "not the same clips")
    n_pieces = 0
    for c in sorted(wc):
        w, p = wc[c], pc[c]
        if len(w) != 1 or w[0].flags:
            sys.exit(where + "clip %d of the whole stream in pieces" % c)
        w = w[0]
        if w.type == rs.T_SKIPPED or w.dim0 <= n:
            if len(p) != 1 or rs.fields(p[0]) != rs.fields(w) or \
                    p[0].data != w.data or p[0].type != w.type:
                sys.exit(where + "clip %d is not the same record" % c)
            continue
        check_pieces(where, c, w, p, n, known_dur)
        n_pieces += len(p)
    if pt["n_skipped"] != wt["n_skipped"]:
        sys.exit(where + "skipped counts differ")
    print("%s: %d clips, %d pieces" % (pieced_path, len(wc), n_pieces))


def check_pieces(where, c, w, p, n, known_dur):
    length = w.dim0
    known = known_dur or not w.key.lower().endswith(b".mp3")
    want = -(-length // n)
    if len(p) != want:
        sys.exit(where + "clip %d: %d pieces, not %d" % (c, len(p), want))
    off, joined = 0, []
    for k, it in enumerate(p):
        last = k == len(p) - 1
        flags = rs.F_CONT if last else rs.F_MORE | (rs.F_CONT if k else 0)
        if it.flags != flags:
            sys.exit(where + "clip %d piece %d: flags %d" % (c, k, it.flags))
        bad = same_fields(it, w)
        if bad:
            sys.exit(where + "clip %d piece %d: %s differs" % (c, k, bad))
        if it.offset != off:
            sys.exit(where + "clip %d piece %d at %d, not %d"
                     % (c, k, it.offset, off))
        if (it.dim0 != n) if not last else not 1 <= it.dim0 <= n:
            sys.exit(where + "clip %d piece %d of %d samples"
                     % (c, k, it.dim0))
        cs = length if known or last else 0
        if it.clip_samples != cs:
            sys.exit(where + "clip %d piece %d: clip_samples %d, not %d"
                     % (c, k, it.clip_samples, cs))
        off += it.dim0
        joined.append(it.data)
    if b"".join(joined) != w.data:
        sys.exit(where + "clip %d: the pieces joined differ" % c)


def cmd_same(a):
    for line in open(a.list):
        if line.strip():
            whole, pieced, n = line.split()
            check_same(whole, pieced, int(n))


def cmd_cut(a):
    pairs, items, _ = load(a.stream)
    key = a.key.encode()
    recs = [it for it in items if it.key == key]
    rate = int(header_value(pairs, "sample_rate"))
    if len(recs) < 3:
        sys.exit("%s: %d records, not pieces then a skipped record"
                 % (a.key, len(recs)))
    *pieces, skip = recs
    if skip.type != rs.T_SKIPPED or skip.flags:
        sys.exit("%s: does not end with a skipped record" % a.key)
    n = pieces[0].dim0
    off = 0
    for k, it in enumerate(pieces):
        flags = rs.F_MORE | (rs.F_CONT if k else 0)
        if it.type != rs.T_AUDIO or it.flags != flags or it.offset != off:
            sys.exit("%s: piece %d flags %d at %d" % (a.key, k, it.flags,
                                                      it.offset))
        if k < len(pieces) - 1 and it.dim0 != n or not 1 <= it.dim0 <= n:
            sys.exit("%s: piece %d of %d samples" % (a.key, k, it.dim0))
        off += it.dim0
    kept = off
    if a.kept != "any" and kept != int(a.kept):
        sys.exit("%s: %d samples kept, not %s" % (a.key, kept, a.kept))
    bad = same_fields(skip, pieces[0], ("clip", "segment", "key", "label",
                                        "sample_rate", "split"))
    if bad:
        sys.exit("%s: the skipped record's %s differs" % (a.key, bad))
    if skip.offset != kept or skip.clip_samples != kept:
        sys.exit("%s: skipped record at %d, clip_samples %d, kept %d"
                 % (a.key, skip.offset, skip.clip_samples, kept))
    reason = skip.data.decode()
    head = "decoding failed after %.1f s (%d %s kept): " % (
        kept / rate, kept, "sample" if kept == 1 else "samples")
    if not reason.startswith(head):
        sys.exit("%s: reason %r, not starting %r" % (a.key, reason, head))
    if a.prefix_of:
        _, w, _ = load(a.prefix_of)
        joined = b"".join(it.data for it in pieces)
        if len(w) != 1 or w[0].data[:len(joined)] != joined:
            sys.exit("%s: the samples kept are not the first of %s"
                     % (a.key, a.prefix_of))
    print(reason)


def cmd_records(a):
    spans = []
    for path in (a.a, a.b):
        with open(path, "rb") as f:
            data = f.read()
        spans.append([r for r in rs.split_records(data)
                      if r[4] not in (rs.T_HEADER, rs.T_TRAILER)])
    if spans[0] != spans[1]:
        n = next((i for i, (x, y) in enumerate(zip(*spans)) if x != y),
                 min(map(len, spans)))
        sys.exit("%s and %s: data record %d differs (of %d and %d)"
                 % (a.a, a.b, n + 1, len(spans[0]), len(spans[1])))


def gen_s16(start, count, amp):
    """wavcat_long.py's signal: sample n of a clip."""
    n = np.arange(start, start + count, dtype=np.int64)
    return (((n * 40503) % 65536) * amp // 65536 - amp // 2).astype("<i2")


def cmd_gen(a):
    n = int(round(a.seconds * a.rate))
    if n * 2 > 0xFFFFFFFF - 36:
        sys.exit("gen: too long for a WAV file")
    with open(a.out, "wb") as f:
        fmt = struct.pack("<HHIIHH", 1, 1, a.rate, 2 * a.rate, 2, 16)
        f.write(b"RIFF" + struct.pack("<I", 36 + 2 * n) + b"WAVE" +
                b"fmt " + struct.pack("<I", 16) + fmt +
                b"data" + struct.pack("<I", 2 * n))
        step = 1 << 22
        for start in range(0, n, step):
            f.write(gen_s16(start, min(step, n - start), a.amp).tobytes())


def cmd_scan(a):
    f = sys.stdin.buffer if a.stream == "-" else open(a.stream, "rb")
    cur = None   # [clip, key, samples, pieces, sha]
    out = []

    def close():
        if cur is not None:
            out.append("%d %s %d %d %s" % (cur[0], cur[1].decode(), cur[2],
                                           cur[3], cur[4].hexdigest()))
    try:
        # a record at a time (melpipe.stream.Reader): flat memory
        for it in rs.Reader(f):
            if cur is None or cur[0] != it.clip:
                close()
                cur = [it.clip, it.key, 0, 0, hashlib.sha256()]
            if it.type == rs.T_SKIPPED:
                continue
            if it.offset != cur[2]:
                sys.exit("scan: clip %d: a record at %d after %d samples"
                         % (it.clip, it.offset, cur[2]))
            if a.gen_s16 is not None:
                check_gen_s16(it, a.gen_s16)
            cur[2] += it.dim0
            cur[3] += 1 if it.flags else 0
            cur[4].update(it.data)
    except rs.RecError as e:
        sys.exit("scan: %s" % e)
    close()
    print("\n".join(out))


def check_gen_s16(it, seed):
    if it.dtype != 1:
        sys.exit("scan: --gen-s16 needs s16 samples")
    x = np.frombuffer(it.data, NP_DTYPES[1])
    bad = np.flatnonzero(x != gen_s16(it.offset, it.dim0, seed))
    if bad.size:
        sys.exit("scan: clip %d sample %d is %d, not %d"
                 % (it.clip, it.offset + bad[0], x[bad[0]],
                    gen_s16(it.offset + bad[0], 1, seed)[0]))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("same")
    s.add_argument("list")
    c = sub.add_parser("cut")
    c.add_argument("stream")
    c.add_argument("key")
    c.add_argument("kept")
    c.add_argument("--prefix-of")
    r = sub.add_parser("records")
    r.add_argument("a")
    r.add_argument("b")
    g = sub.add_parser("gen")
    g.add_argument("out")
    g.add_argument("--seconds", type=float, required=True)
    g.add_argument("--rate", type=int, required=True)
    g.add_argument("--amp", type=int, default=20000)
    n = sub.add_parser("scan")
    n.add_argument("stream")
    n.add_argument("--gen-s16", type=int)
    a = ap.parse_args()
    {"same": cmd_same, "cut": cmd_cut, "records": cmd_records,
     "gen": cmd_gen, "scan": cmd_scan}[a.cmd](a)


if __name__ == "__main__":
    main()
