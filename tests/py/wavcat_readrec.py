#!/usr/bin/env python3
"""wavcat_readrec.py - wavcat's streams for its tests, read with the
package's melpipe.stream (rec_stream.py), which checks every rule of
formats/record.md: the header pairs, the data records with their
samples, and the trailer.

As a module:   hdr, recs, trailer = read_stream(data)
As a program:  wavcat_readrec.py FILE|-  [--records|--header|--samples]
  --header    one line per header pair: key=value (value's TABs as \\t)
  --records   one line per data record: clip type label split n key(repr)
  --raw-hash  SHA-256 of the data records' bytes (for same-output checks)
  --same-as OTHER   exit 1 naming the records whose bytes differ
Exits 1 with a message on a bad stream.
"""
import hashlib
import sys

import numpy as np

import rec_stream as rs

T_HEADER, T_AUDIO, T_FEATURES = rs.T_HEADER, rs.T_AUDIO, rs.T_FEATURES
T_SKIPPED, T_TRAILER = rs.T_SKIPPED, rs.T_TRAILER
NP_DTYPES = {1: np.dtype("<i2"), 2: np.dtype("<f4"), 3: np.dtype("<f2"),
             4: np.dtype("<u2")}
SPLITS = dict(enumerate(rs.SPLITS))
FIELDS = ("type", "flags", "clip", "offset", "clip_samples", "segment",
          "label", "sample_rate", "split", "dtype", "dim0", "dim1", "key")


class Record:
    """A data record: the fields of melpipe.stream.Item, and raw (the
    record's bytes as stored), samples (a numpy array of its payload,
    None in a skipped record) and reason (a skipped record's, as str)."""

    def __init__(self, it, raw):
        for name in FIELDS:
            setattr(self, name, getattr(it, name))
        self.raw = raw
        if it.type == T_SKIPPED:
            self.reason = it.data.decode("utf-8")
            self.samples = None
        else:
            self.reason = None
            self.samples = np.frombuffer(it.data, dtype=NP_DTYPES[it.dtype])


class BadStream(Exception):
    pass


def read_stream(data):
    """Reads and checks a whole stream (bytes). Returns (header pairs
    [(key, value)] as bytes, [Record], trailer dict); BadStream on a
    stream that breaks a rule."""
    data = bytes(data)
    try:
        pairs, items, trailer = rs.read_stream(data)
    except rs.RecError as e:
        raise BadStream(str(e)) from None
    raw = list(rs.split_records(data))
    return ([(k.encode(), v) for k, v in pairs],
            [Record(it, raw[it.index]) for it in items], trailer)


def header_values(header, key):
    """All values of key (str) in order, as str (surrogateescape)."""
    k = key.encode()
    return [v.decode("utf-8", "surrogateescape") for kk, v in header
            if kk == k]


def load(path):
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    return read_stream(data)


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    try:
        header, recs, trailer = load(args[0])
    except BadStream as e:
        sys.exit("wavcat_readrec: %s" % e)
    mode = args[1] if len(args) > 1 else "--records"
    out = sys.stdout
    if mode == "--header":
        for k, v in header:
            out.write("%s=%s\n" % (k.decode(), v.decode(
                "utf-8", "surrogateescape").replace("\t", "\\t")))
    elif mode == "--records":
        for r in recs:
            n = r.dim0 if r.type != T_SKIPPED else 0
            out.write("%d %s %d %s %d %r\n" % (
                r.clip, "audio" if r.type == T_AUDIO else "skipped",
                r.label, SPLITS[r.split], n, r.key))
    elif mode == "--same-as":
        # the data records equal those of another stream, byte for byte
        other = load(args[2])[1]
        bad = [r.key for r, o in zip(recs, other) if r.raw != o.raw]
        if len(recs) != len(other) or bad:
            sys.exit("wavcat_readrec: %d and %d records, differing: %r" %
                     (len(recs), len(other), bad[:10]))
    elif mode == "--raw-hash":
        h = hashlib.sha256()
        for r in recs:
            h.update(r.raw)
        out.write(h.hexdigest() + "\n")
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
