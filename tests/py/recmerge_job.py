#!/usr/bin/env python3
"""recmerge_job.py STREAM - print a whole stream's job fingerprint.

formats/record.md, Shard streams: the SHA-1 (hex) of, for each clip in
index order, its key NUL label (decimal) NUL split (decimal) NUL, then
the header's pairs but producer, stage, shard, job and clips, each as
key NUL value NUL, in order. The spec takes the pairs of wavcat's header:
give wavcat's stream. The tests give it to rec-copy --shard --job, as
wavcat --shard would write it.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec_stream as rs  # noqa: E402

LEFT_OUT = ("producer", "stage", "shard", "job", "clips")


def job(pairs, items):
    h = hashlib.sha1()
    seen = set()
    for it in items:
        if it.clip in seen:
            continue
        seen.add(it.clip)
        h.update(it.key + b"\0%d\0%d\0" % (it.label, it.split))
    for k, v in pairs:
        if k not in LEFT_OUT:
            h.update(k.encode() + b"\0" + v + b"\0")
    return h.hexdigest()


def main():
    with open(sys.argv[1], "rb") as f:
        pairs, items, _ = rs.read_stream(f.read())
    clips = sorted({it.clip for it in items})
    if clips != list(range(len(clips))):
        sys.exit("not a whole stream: clips %s" % clips[:10])
    print(job(pairs, items))


if __name__ == "__main__":
    main()
