#!/usr/bin/env python3
"""segment_check.py IN OUT --stage LEN[,HOP[,pad|drop]] ... - check
segment's output against a reference made here.

The reference cuts IN the way segment's --help describes it, stage after
stage (give --stage once per segment stage in the pipeline): windows start
at 0, HOP, 2*HOP, ...; every window that fits whole is kept; with pad the
first window that runs past the end (if it starts before the end) is padded
with zeros; a record's end is its clip's (clip_samples, where the record
runs past it: an earlier stage's padding is no sample, and a window of it
alone gives nothing); a record with no window becomes a skipped record; skipped
records pass through; segment indices count every record of the clip,
skipped ones included (a skipped record of the input takes the clip's
next, after the windows of a clip cut short by an earlier stage). Then every
record of OUT must equal the reference's, field by field and byte by byte,
and OUT's header must be IN's with the segment keys and one stage entry per
stage. Prints 'ok' or the first difference (exit 1).

By default the last stage is taken to have described its windows (as
segment does without --copy): each of its parent records (an input audio
record, or a window of an input windows record) must give one windows
record holding the samples its windows cover, with the pad flag exactly
when the last window runs past them. --copy: the last stage copied them,
one audio record per window. Earlier stages' output is not seen here.

segment_check.py --same A B: the two streams have the same data records
and header pairs, but for the stage entries (whose command lines differ).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5pack_mkrec as mk  # noqa: E402

FIELDS = ("type", "clip", "offset", "clip_samples", "segment", "label",
          "sample_rate", "split", "dtype", "dim0", "dim1", "key", "data")
WIN_FIELDS = ("win_len", "win_hop", "n_windows", "win_flags")


def stage_arg(s):
    parts = s.split(",")
    length = int(parts[0])
    hop = int(parts[1]) if len(parts) > 1 and parts[1] else length
    last = parts[2] if len(parts) > 2 else "pad"
    assert last in ("pad", "drop", "cover")
    return length, hop, last


def window_starts(n, length, hop, last):
    starts, s = [], 0
    while s + length <= n:
        starts.append(s)
        s += hop
    # pad: one more window where one starts below n; cover: only where
    # samples at the end lie in no window yet (the fewest windows that
    # hold every sample a window can hold)
    if s < n and (last == "pad" or
                  last == "cover" and (not starts or
                                       starts[-1] + length < n)):
        starts.append(s)
    return starts


def cut(items, length, hop, last, describe=False):
    out, seg, cur = [], 0, None
    for it in mk.expand_windows(items):
        if it["clip"] != cur:
            cur, seg = it["clip"], 0
        if it["type"] == mk.T_SKIPPED:
            out.append(dict(it, segment=seg))
            seg += 1
            continue
        frame = len(it["data"]) // it["dim0"] if it["dim0"] else 0
        # an earlier stage's zeros past the clip's end are no samples
        n = it["dim0"]
        if it["clip_samples"]:
            n = max(0, min(n, it["clip_samples"] - it["offset"]))
        if n == 0 and it["dim0"]:
            continue  # a window of padding alone gives nothing
        starts = window_starts(n, length, hop, last)
        if not starts:
            reason = "shorter than one window (%d %s < %d)" % (
                n, "sample" if n == 1 else "samples", length)
            out.append(dict(it, type=mk.T_SKIPPED, segment=seg, dtype=0,
                            dim0=0, dim1=0, data=reason.encode()))
            seg += 1
            continue
        if describe:
            end = starts[-1] + length
            pad = end > n
            out.append(dict(it, type=mk.T_WINDOWS, segment=seg,
                            dim0=n if pad else end,
                            data=it["data"][:min(end, n) * frame],
                            win_len=length, win_hop=hop,
                            n_windows=len(starts),
                            win_flags=mk.WIN_PAD if pad else 0))
            seg += len(starts)
            continue
        for s in starts:
            data = it["data"][s * frame:min(s + length, n) * frame]
            data += bytes(length * frame - len(data))
            out.append(dict(it, offset=it["offset"] + s, segment=seg,
                            dim0=length, data=data))
            seg += 1
    return out


def check_header(got, want_base, stages):
    got = [(k.decode(), v.decode("utf-8", "surrogateescape"))
           for k, v in got]
    base = dict(want_base)
    for k in ("segment_len", "segment_hop", "segment_last"):
        length, hop, last = stages[-1]
        want = {"segment_len": str(length), "segment_hop": str(hop),
                "segment_last": last}[k]
        vals = [v for gk, v in got if gk == k]
        if vals != [want]:
            return "header %s=%s, want %s" % (k, vals, want)
    if dict(got).get("producer", "").split(" ")[0] != "segment":
        return "producer %r" % dict(got).get("producer")
    in_stages = [v for k, v in want_base if k == "stage"]
    out_stages = [v for k, v in got if k == "stage"]
    if out_stages[:len(in_stages)] != in_stages or \
            len(out_stages) != len(in_stages) + len(stages) or \
            not all(s.startswith("segment ") for s in
                    out_stages[len(in_stages):]):
        return "stage entries %r" % out_stages
    for k, v in base.items():
        if k in ("producer", "stage", "segment_len", "segment_hop",
                 "segment_last"):
            continue
        if dict(got).get(k) != v:
            return "header %s=%r, want %r" % (k, dict(got).get(k), v)
    return None


def same(a, b):
    pa, ia, _ = mk.read_stream(open(a, "rb").read())
    pb, ib, _ = mk.read_stream(open(b, "rb").read())
    if [p for p in pa if p[0] != b"stage"] != \
            [p for p in pb if p[0] != b"stage"]:
        return "headers differ"
    if ia != ib:
        return "data records differ"
    return None


def main():
    if sys.argv[1:2] == ["--same"]:
        err = same(sys.argv[2], sys.argv[3])
        if err:
            print("segment_check: %s" % err, file=sys.stderr)
            sys.exit(1)
        print("ok")
        return
    p = argparse.ArgumentParser()
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--stage", type=stage_arg, action="append",
                   required=True)
    p.add_argument("--copy", action="store_true",
                   help="the last stage ran with --copy")
    a = p.parse_args()
    pairs, items, _ = mk.read_stream(open(a.input, "rb").read())
    opairs, oitems, _ = mk.read_stream(open(a.output, "rb").read())
    for n, (length, hop, last) in enumerate(a.stage):
        items = cut(items, length, hop, last,
                    describe=n == len(a.stage) - 1 and not a.copy)
    base = [(k.decode(), v.decode("utf-8", "surrogateescape"))
            for k, v in pairs]
    err = check_header(opairs, base, a.stage)
    if err is None and len(oitems) != len(items):
        err = "%d records, want %d" % (len(oitems), len(items))
    for i, (got, want) in enumerate(zip(oitems, items)):
        if err:
            break
        fields = FIELDS + (WIN_FIELDS if want["type"] == mk.T_WINDOWS
                           else ())
        for f in fields:
            if got.get(f) != want[f]:
                err = "record %d (%r segment %d) %s: %r, want %r" % (
                    i, want["key"], want["segment"], f,
                    got.get(f) if f != "data" else len(got[f]),
                    want[f] if f != "data" else len(want[f]))
                break
    if err:
        print("segment_check: %s" % err, file=sys.stderr)
        sys.exit(1)
    print("ok %d records" % len(oitems))


if __name__ == "__main__":
    main()
