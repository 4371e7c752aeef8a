#!/usr/bin/env python3
"""segment_stages.py IN OUT --stage LEN[,HOP[,pad|drop|cover]]... [--copy]
[--summary FILE] - segment stages in a row checked against the windows
computed here directly from each clip's samples.

IN is the stream the first segment stage read (audio records, items in
pieces, items cut short, skipped records), OUT what the last stage
wrote; give --stage once per stage, in order. The reference does not
cut records stage after stage: it places every window in the clip. A
clip of n samples (an item cut short: the samples kept) is the first
stage's one parent, [0, n). A stage cuts each parent [p, p + r) (r: the
clip's samples it holds) at starts s = 0, HOP, 2*HOP, ... per --last as
segment --help says (segment_check.window_starts), and each window is
the next stage's parent [p + s, p + s + min(LEN, r - s)): what lies past
the clip's end, the zeros an earlier stage padded a window with, is no
sample of any parent. A parent that gives no window becomes a skipped
record "shorter than one window (r samples < LEN)" at offset p; skipped
records pass on; a clip's records take the segment indices 0, 1, ... in
order (a windows record as many as its windows). An item cut short that
gives the first stage no window leaves as its skipped record alone.

The last stage's records: per parent one windows record holding its
samples up to its last window's end (at most r), the pad flag exactly
when that window runs past r; with --copy one audio record per window,
zeros past r. OUT must hold exactly those, field by field and byte by
byte; a record's clip_samples is 0, the clip's n or one IN gave, and the
clip's last record gives n (Records made from pieces). No window of OUT
starts at or past its clip's end.

--summary FILE: the last stage's stderr; its closing line must count the
windows, the padded ones (those running past r) and the records that
gave none. Prints "ok R records, W windows, P padded" or the first
difference (exit 1).
"""
import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from melpipe import stream  # noqa: E402
import segment_check as sc  # noqa: E402

FIELDS = ("type", "clip", "offset", "segment", "label", "sample_rate",
          "split", "dtype", "dim0", "dim1", "key", "data", "win_len",
          "win_hop", "n_windows", "win_flags")


class Clip:
    """A clip's samples as frames of bytes (n, frame) and its fields."""

    def __init__(self, it):
        self.it = it
        frame = stream.DTYPES[it.dtype][1] * it.dim1
        self.frames = np.frombuffer(it.data, np.uint8).reshape(-1, frame)
        self.n = it.dim0
        self.given = set()

    def samples(self, start, end, length):
        """Frames [start, end) of the clip, zeros after them to length."""
        out = np.zeros((length, self.frames.shape[1]), np.uint8)
        out[:end - start] = self.frames[start:end]
        return out.tobytes()


def expected(clip, stages, copy):
    """The expected records of a clip (dicts), and (windows, padded,
    too_short) of the last stage."""
    it = clip.it
    base = dict(clip=it.clip, label=it.label, sample_rate=it.sample_rate,
                split=it.split, key=it.key, win_len=0, win_hop=0,
                n_windows=0, win_flags=0)
    recs, counts = [], [0, 0, 0]
    length = stages[-1][0]
    for e in ordered_entries(clip, stages):
        if e[0] == "skip":
            recs.append(dict(base, type=stream.T_SKIPPED, offset=e[1],
                             dtype=0, dim0=0, dim1=0, data=e[2].encode()))
            counts[2] += e[3]
            continue
        _, p, r, starts = e
        dt = dict(dtype=it.dtype, dim1=it.dim1)
        counts[0] += len(starts)
        counts[1] += sum(1 for s in starts if s + length > r)
        if copy:
            for s in starts:
                end = p + min(s + length, r)
                recs.append(dict(base, type=stream.T_AUDIO, offset=p + s,
                                 dim0=length, data=clip.samples(
                                     p + s, end, length), **dt))
            continue
        end = min(starts[-1] + length, r)
        recs.append(dict(base, type=stream.T_WINDOWS, offset=p, dim0=end,
                         data=clip.samples(p, p + end, end),
                         win_len=length, win_hop=stages[-1][1],
                         n_windows=len(starts),
                         win_flags=stream.WIN_PAD
                         if starts[-1] + length > r else 0, **dt))
    seg = 0
    for rec in recs:
        rec["segment"] = seg
        seg += rec["n_windows"] or 1
    return recs, counts


def ordered_entries(clip, stages):
    """The last stage's output for clip, in order: ("parent", p, r,
    starts) for a parent that gives windows, ("skip", offset, reason,
    made) for one that gives none; a skipped record of an earlier stage
    stays in its place, passed on (made: 1 when the last stage made it)."""
    items = [("win", 0, clip.n)]
    for k, (length, hop, last) in enumerate(stages):
        made_here = k == len(stages) - 1
        out = []
        for e in items:
            if e[0] == "skip":
                out.append(e[:3] + (0,))
                continue
            p, r = e[1], e[2]
            starts = sc.window_starts(r, length, hop, last)
            if not starts and k == 0 and clip.it.cut_short:
                continue  # its skipped record stands for it alone
            if not starts:
                out.append(("skip", p, "shorter than one window "
                            "(%d %s < %d)" % (r, "sample" if r == 1
                                               else "samples", length),
                            int(made_here)))
            elif made_here:
                out.append(("parent", p, r, starts))
            else:
                out += [("win", p + s, min(length, r - s)) for s in starts]
        items = out
    return items


def clips_of(items):
    """(Clip or None, [records that end or stand for it]) per clip of IN,
    in order: a joined item and the skipped record that cut it short, or
    a skipped record alone."""
    out = []
    for it in stream.join(items):
        if it.type == stream.T_AUDIO:
            out.append((Clip(it), []))
        elif it.type == stream.T_SKIPPED:
            if out and out[-1][0] is not None and \
                    out[-1][0].it.clip == it.clip:
                out[-1][1].append(it)
            else:
                out.append((None, [it]))
    for it in items:
        for c, _ in out:
            if c is not None and c.it.clip == it.clip and it.clip_samples:
                c.given.add(it.clip_samples)
    return out


def as_dict(it):
    return {f: getattr(it, f) for f in FIELDS}


def check(a):
    _, in_items, _ = stream.read_stream(a.input)
    _, out_items, _ = stream.read_stream(a.output)
    want, counts, lengths = [], [0, 0, 0], {}
    for clip, skipped in clips_of(in_items):
        recs = []
        if clip is not None:
            recs, c = expected(clip, a.stage, a.copy)
            counts = [x + y for x, y in zip(counts, c)]
            lengths[clip.it.clip] = (clip.n, clip.given | {0, clip.n})
        for sk in skipped:
            recs.append(dict(as_dict(sk), segment=len(recs) and
                             recs[-1]["segment"] +
                             (recs[-1]["n_windows"] or 1)))
        want += recs
    if len(out_items) != len(want):
        return "%d records, want %d" % (len(out_items), len(want))
    last_of = {}
    for i, (got, w) in enumerate(zip(out_items, want)):
        g = as_dict(got)
        for f in FIELDS:
            if g[f] != w[f]:
                return "record %d (clip %d segment %d) %s: %r, want %r" % (
                    i + 1, w["clip"], w["segment"], f,
                    g[f] if f != "data" else len(g[f]),
                    w[f] if f != "data" else len(w[f]))
        if got.clip in lengths:
            n, ok = lengths[got.clip]
            if got.clip_samples not in ok:
                return "record %d clip_samples %d, want one of %s" % (
                    i + 1, got.clip_samples, sorted(ok))
            if got.type != stream.T_SKIPPED:
                if got.offset >= n:
                    return "record %d starts at %d, past clip %d's end " \
                        "(%d samples)" % (i + 1, got.offset, got.clip, n)
                last_of[got.clip] = got
    for clip, got in last_of.items():
        if got.clip_samples != lengths[clip][0]:
            return "clip %d: last record gives clip_samples %d, want %d" \
                % (clip, got.clip_samples, lengths[clip][0])
    if a.summary:
        text = open(a.summary).read()
        m = re.search(r"into (\d+) windows? \((\d+) padded\), skipped "
                      r"\d+ \((\d+) shorter", text)
        if not m:
            return "no closing line in %s" % a.summary
        got = [int(x) for x in m.groups()]
        if got != counts:
            return "closing line: %d windows, %d padded, %d too short; " \
                "want %d, %d, %d" % tuple(got + counts)
    print("ok %d records, %d windows, %d padded" % (len(want), counts[0],
                                                    counts[1]))
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--stage", type=sc.stage_arg, action="append",
                   required=True)
    p.add_argument("--copy", action="store_true",
                   help="the last stage ran with --copy")
    p.add_argument("--summary", help="the last stage's stderr")
    err = check(p.parse_args())
    if err:
        print("segment_stages: %s" % err, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
