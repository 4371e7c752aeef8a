#!/usr/bin/env python3
"""segment_pieces.py - segment's output for a stream whose audio items come
in pieces (formats/record.md, Items in pieces), checked.

segment_pieces.py same IN PIECED_OUT WHOLE_OUT --pieces N [--unknown-length]
    WHOLE_OUT is segment's output for IN, PIECED_OUT its output, with the
    same options, for IN cut into pieces by rec-copy --pieces N (with
    --unknown-length when given). Their windows (windows records expanded
    into the audio records they stand for) must be the same, field by
    field and byte by byte; their headers the same but for the stage
    entries. (IN, not the stream in pieces, is read: it is smaller.)

segment_pieces.py same-each LIST
    same for each line of the file LIST, which holds its arguments
    (words without blanks), in one run; names the line that differs.

segment_pieces.py check IN OUT --stage LEN[,HOP[,pad|drop]]... [--copy]
    OUT against segment_check.py's reference cut of IN, whose items in
    pieces are joined first (rec_stream.join()). An item cut short (a
    skipped record after a piece flagged more) is cut as a clip of the
    samples kept, and its skipped record takes the segment index after
    the item's last window (the index the first would have had when it
    gave none), its reason kept. --copy: the last stage ran with --copy
    (OUT must then hold no windows record).

Both also check what only the stream in pieces shows: OUT holds no piece;
the clip_samples of each record of a clip that came in pieces is one the
input's pieces of that clip gave (0 while unknown) or its final length,
and the last record of the clip gives the final length (the last piece's,
or, cut short, the skipped record's). Print "ok N windows" or the first
difference (exit 1).

segment_pieces.py cut-short IN --pieces N --cut CLIP:KEPT... [--unknown-length]
    writes IN to stdout with every audio item longer than N samples cut
    into pieces of N (as rec-copy --pieces does), except that the item of
    each clip CLIP keeps only its first KEPT samples (1 <= KEPT <= its
    length), in pieces flagged more, and ends cut short with a skipped
    record whose offset and clip_samples are the samples kept.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec_stream as rs  # noqa: E402
import segment_check as sc  # noqa: E402
import h5pack_mkrec as mk  # noqa: E402


def read(path):
    pairs, items, _ = rs.read_stream(open(path, "rb").read())
    return pairs, items


def clip_lengths(items):
    """{clip: (final length, the clip_samples its pieces gave)} for each
    clip with an item in pieces."""
    out, gave = {}, {}
    joined = rs.join(items)
    for it in items:
        if it.flags:
            gave.setdefault(it.clip, set()).add(it.clip_samples)
    for i, it in enumerate(joined):
        if it.cut_short:
            sk = joined[i + 1]
            out[it.clip] = (sk.clip_samples, gave[it.clip])
        elif it.clip in gave:
            out[it.clip] = (it.clip_samples, gave[it.clip])
    return out


def check_lengths(out, lengths):
    """OUT's records of clips in pieces: no piece, a clip_samples known
    so far, the last of the clip the final one."""
    last = {}
    for i, it in enumerate(out):
        if it.flags:
            return "record %d is a piece" % i
        if it.clip not in lengths:
            continue
        final, gave = lengths[it.clip]
        if it.clip_samples != final and it.clip_samples not in gave:
            return "record %d (clip %d) clip_samples %d, want %d or one " \
                "of %s" % (i, it.clip, it.clip_samples, final, sorted(gave))
        last[it.clip] = it
    for clip, it in last.items():
        if it.clip_samples != lengths[clip][0]:
            return "the last record of clip %d gives clip_samples %d, " \
                "want %d" % (clip, it.clip_samples, lengths[clip][0])
    return None


def compare(got, want, lengths):
    """got (OUT's items, expanded) against want (dicts, expanded); the
    clip_samples of clips in pieces were checked by check_lengths()."""
    got = mk.expand_windows([mk.as_dict(it) for it in got])
    if len(got) != len(want):
        return "%d windows and records, want %d" % (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        if g["clip"] in lengths and g["type"] != rs.T_SKIPPED:
            g = dict(g, clip_samples=w["clip_samples"])
        for f in sc.FIELDS:
            if g.get(f) != w[f]:
                return "window %d (%r segment %d) %s: %r, want %r" % (
                    i, w["key"], w["segment"], f,
                    g.get(f) if f != "data" else len(g[f]),
                    w[f] if f != "data" else len(w[f]))
    return None


def same(a):
    _, items = read(a.input)
    pp, pieced = read(a.pieced)
    wp, whole = read(a.whole)
    if [p for p in pp if p[0] != "stage"] != \
            [p for p in wp if p[0] != "stage"]:
        return "headers differ", 0
    lengths = {it.clip: (it.clip_samples, {0} if a.unknown_length else ())
               for it in items if it.type == rs.T_AUDIO and
               it.dim0 > a.pieces}
    want = mk.expand_windows([mk.as_dict(it) for it in whole])
    return check_lengths(pieced, lengths) or \
        compare(pieced, want, lengths), len(want)


def same_each(parser, path):
    total = 0
    for i, line in enumerate(open(path)):
        err, n = same(parser.parse_args(["same"] + line.split()))
        if err:
            return "%s:%d (%s): %s" % (path, i + 1, line.strip(), err), 0
        total += n
    return None, total


def reference_input(items):
    """IN's items joined, as dicts, with an item cut short marked
    (cut_short) and given the clip_samples of its skipped record, and
    that record marked (ends_cut)."""
    joined = rs.join(items)
    out = []
    for i, it in enumerate(joined):
        d = mk.as_dict(it)
        if it.cut_short:
            d.update(cut_short=True, clip_samples=joined[i + 1].clip_samples)
        if i and joined[i - 1].cut_short:
            d["ends_cut"] = True
        out.append(d)
    return out


def cut(items, length, hop, last):
    """segment_check.cut(), one window a record, with the rule of an item
    cut short: its skipped record takes the clip's next segment index
    (after the item's windows; the first's when it gave none), as every
    skipped record does."""
    out, seg, cur = [], 0, None
    for it in mk.expand_windows(items):
        plain = {k: v for k, v in it.items()
                 if k not in ("cut_short", "ends_cut")}
        if it["clip"] != cur:
            cur, seg = it["clip"], 0
        if it["type"] == rs.T_SKIPPED:
            out.append(dict(plain, segment=seg))
            seg += 1
            continue
        got = sc.cut([plain], length, hop, last)
        if got[0]["type"] == rs.T_SKIPPED:
            if not it.get("cut_short"):
                out.append(dict(got[0], segment=seg))
                seg += 1
            continue
        for j, g in enumerate(got):
            g["segment"] = seg + j
        out += got
        seg += len(got)
    return out


def check(a):
    _, items = read(a.input)
    opairs, out = read(a.output)
    want = reference_input(items)
    for length, hop, last in a.stage:
        want = cut(want, length, hop, last)
    base = [(k, v.decode("utf-8", "surrogateescape"))
            for k, v in read(a.input)[0]]
    err = sc.check_header([(k.encode(), v) for k, v in opairs], base,
                          a.stage)
    if not err and a.copy and any(it.type == rs.T_WINDOWS for it in out):
        err = "a windows record with --copy"
    lengths = clip_lengths(items)
    return err or check_lengths(out, lengths) or \
        compare(out, want, lengths), len(want)


def cut_short(a):
    pairs, items = read(a.input)
    cuts = dict(a.cut)
    b = rs.Builder(pairs)
    for it in items:
        f = rs.fields(it)
        n = it.dim0
        if it.type != rs.T_AUDIO or it.flags or \
                (n <= a.pieces and it.clip not in cuts):
            b.item(it.type, it.data, **f)
            continue
        kept = cuts.get(it.clip, n)
        if not 1 <= kept <= n:
            sys.exit("cut-short: clip %d keeps %d of %d samples"
                     % (it.clip, kept, n))
        fr = len(it.data) // n
        for s in range(0, kept, a.pieces):
            e = min(s + a.pieces, kept)
            more = it.clip in cuts or e < n
            piece = (rs.F_MORE if more else 0) | (rs.F_CONT if s else 0)
            cs = 0 if a.unknown_length and more else it.clip_samples
            b.item(rs.T_AUDIO, it.data[s * fr:e * fr],
                   **dict(f, offset=it.offset + s, dim0=e - s,
                          clip_samples=cs, piece=piece))
        if it.clip in cuts:
            b.item(rs.T_SKIPPED, b"decoding failed after 0.0 s (%d "
                   b"samples kept): forged" % kept,
                   **dict(f, offset=it.offset + kept, clip_samples=kept,
                          dtype=0, dim0=0, dim1=0, piece=0))
    sys.stdout.buffer.write(b.bytes())


def clip_keep(s):
    c, k = s.split(":")
    return int(c), int(k)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("same")
    s.add_argument("input")
    s.add_argument("pieced")
    s.add_argument("whole")
    s.add_argument("--pieces", type=int, required=True)
    s.add_argument("--unknown-length", action="store_true")
    c = sub.add_parser("check")
    c.add_argument("input")
    c.add_argument("output")
    c.add_argument("--stage", type=sc.stage_arg, action="append",
                   required=True)
    c.add_argument("--copy", action="store_true")
    f = sub.add_parser("cut-short")
    f.add_argument("input")
    f.add_argument("--pieces", type=int, required=True)
    f.add_argument("--cut", type=clip_keep, action="append", default=[])
    f.add_argument("--unknown-length", action="store_true")
    e = sub.add_parser("same-each")
    e.add_argument("list")
    a = p.parse_args()
    if a.cmd == "cut-short":
        cut_short(a)
        return
    if a.cmd == "same-each":
        err, n = same_each(p, a.list)
    else:
        err, n = same(a) if a.cmd == "same" else check(a)
    if err:
        print("segment_pieces: %s" % err, file=sys.stderr)
        sys.exit(1)
    print("ok %d windows" % n)


if __name__ == "__main__":
    main()
