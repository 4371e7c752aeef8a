#!/usr/bin/env python3
"""recmerge_forge.py IN OUT [--clips LIST] [--set KEY=VALUE]... [--del KEY]...
[--cut-short CLIP] [--no-trailer] - rewrite a stream for recmerge's tests.

Writes IN's records to OUT (a new trailer), with:
  --clips 0,4,8     only the records of these clips (a shard that lacks
                    one of its clips, or holds another shard's);
  --set KEY=VALUE   the header's KEY set to VALUE (the first pair with
                    that key replaced and later ones removed, or one
                    appended), as lib/rec's rec_header_set();
  --cut-short CLIP  CLIP's item, in pieces, cut short after its first
                    piece (formats/record.md, Items in pieces): the
                    pieces after it give way to a skipped record of the
                    same clip and segment, its offset and clip_samples
                    the samples kept;
  --no-trailer      no trailer, as a stage that failed.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec_stream as rs  # noqa: E402


def set_pair(pairs, key, value):
    out, done = [], False
    for k, v in pairs:
        if k == key:
            if not done:
                out.append((k, value))
            done = True
        else:
            out.append((k, v))
    return out if done else out + [(key, value)]


def cut_short(items, clip):
    """items with clip's item ended by a skipped record after its first
    piece."""
    out, cutting = [], False
    for it in items:
        if it.clip == clip and cutting:
            continue
        out.append(it)
        if it.clip == clip and it.flags & rs.F_MORE and not cutting:
            cutting = True
            kept = it.offset + it.dim0
            out.append(it.copy(
                type=rs.T_SKIPPED, flags=0, dtype=0, dim0=0, dim1=0,
                offset=kept, clip_samples=kept,
                data=b"decoding failed after %d samples kept" % kept))
    if not cutting:
        sys.exit("clip %d has no piece flagged more" % clip)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--clips")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--del", dest="delete", action="append", default=[])
    ap.add_argument("--cut-short", type=int)
    ap.add_argument("--no-trailer", action="store_true")
    a = ap.parse_args()
    with open(a.inp, "rb") as f:
        pairs, items, _ = rs.read_stream(f.read())
    for kv in a.set:
        k, v = kv.split("=", 1)
        pairs = set_pair(pairs, k, v.encode())
    pairs = [(k, v) for k, v in pairs if k not in a.delete]
    if a.clips is not None:
        keep = {int(c) for c in a.clips.split(",") if c}
        items = [it for it in items if it.clip in keep]
    if a.cut_short is not None:
        items = cut_short(items, a.cut_short)
    b = rs.Builder(pairs)
    for it in items:
        b.item(it.type, bytes(it.data), **rs.fields(it))
    with open(a.out, "wb") as f:
        f.write(b.bytes(trailer=not a.no_trailer))


if __name__ == "__main__":
    main()
