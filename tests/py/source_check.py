#!/usr/bin/env python3
"""source_check - checks the file's own rate and channels (formats/
record.md, Source record; formats/hdf5.md, /clips) against what
libsndfile, through the soundfile package, says of each input file.

    source_check.py stream DATA FILE.rec
        every clip whose file soundfile opens has one source record, right
        before its clip's first record, whose source_rate,
        source_channels, source_frames (not for MP3) and source_format
        are soundfile's samplerate, channels, frames, format and subtype;
        a clip whose file it cannot open has none
    source_check.py h5 DATA FILE.h5 [--zeros]
        each row of /clips has source_rate and source_channels those of
        its file (0 where soundfile cannot open it; all 0 with --zeros),
        and MelDataset.clip_info() gives the same for every row's clip
        (but in a shard file)

Prints one line per clip checked; exits 1 with the first difference.
"""
import argparse
import os
import sys

import h5py
import soundfile as sf

from melpipe import MelDataset
from melpipe.stream import T_SOURCE, Reader


def expected(data, key):
    """soundfile's view of the file at DATA/key, or None where it cannot
    open it."""
    try:
        return sf.info(os.path.join(data, key))
    except RuntimeError:  # soundfile.LibsndfileError is one
        return None


def fail(msg):
    sys.exit("source_check: " + msg)


def check_stream(data, path):
    with open(path, "rb") as f:
        r = Reader(f, sources=True)
        recs = list(r)
    seen = set()
    for i, it in enumerate(recs):
        if it.clip in seen:
            continue
        seen.add(it.clip)
        key = it.key.decode("utf-8", "surrogateescape")
        info = expected(data, key)
        if info is None:
            if it.type == T_SOURCE:
                fail("%s: a source record for a file soundfile cannot open"
                     % key)
            print("%s none" % key)
            continue
        if it.type != T_SOURCE:
            fail("%s: its first record (record %d) is not a source record"
                 % (key, it.index))
        nxt = recs[i + 1] if i + 1 < len(recs) else None
        if nxt is None or nxt.type == T_SOURCE or nxt.clip != it.clip:
            fail("%s: no record of its clip after its source record" % key)
        want = {"source_rate": info.samplerate,
                "source_channels": info.channels,
                "source_format": "%s %s" % (info.format, info.subtype)}
        if info.format != "MPEG":
            want["source_frames"] = info.frames
        got = it.source()
        for k, v in want.items():
            if got.get(k) != v:
                fail("%s: %s is %r, soundfile says %r"
                     % (key, k, got.get(k), v))
        print("%s %d %d" % (key, info.samplerate, info.channels))


def check_h5(data, path, zeros):
    with h5py.File(path, "r") as f:
        c = f["clips"]
        keys = [p.decode("utf-8", "surrogateescape")
                if isinstance(p, bytes) else p for p in c["path"][()]]
        rate, chans = c["source_rate"][()], c["source_channels"][()]
        if c["source_rate"].dtype != "<i4" or \
                c["source_channels"].dtype != "<i4":
            fail("/clips/source_rate and source_channels are not int32")
        # (MelDataset.meta() takes a row's clip for its row of /clips,
        # which a shard file's are not)
        groups = [g for g in ("all", "training", "validation", "testing")
                  if g in f and len(f[g]["clip"]) and
                  "shard" not in f.attrs]
    want = {}
    for row, key in enumerate(keys):
        info = None if zeros else expected(data, key)
        w = (info.samplerate, info.channels) if info else (0, 0)
        if (int(rate[row]), int(chans[row])) != w:
            fail("%s: /clips has source_rate %d and source_channels %d, "
                 "want %d and %d" % (key, rate[row], chans[row], w[0], w[1]))
        want[row] = (key, w)
        print("%s %d %d" % (key, w[0], w[1]))
    for g in groups:
        ds = MelDataset(path, split=g)
        for i in range(len(ds)):
            clip = ds.meta(i).clip
            info = ds.clip_info(clip)
            key, w = want[clip]
            if (info.path, info.source_rate, info.source_channels) != \
                    (key, w[0], w[1]):
                fail("%s row %d: clip_info() gives %r" % (g, i, info))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("stream", "h5"))
    ap.add_argument("data")
    ap.add_argument("file")
    ap.add_argument("--zeros", action="store_true")
    a = ap.parse_args()
    if a.what == "stream":
        check_stream(a.data, a.file)
    else:
        check_h5(a.data, a.file, a.zeros)


if __name__ == "__main__":
    main()
