#!/usr/bin/env python3
"""gpumel_rec.py - record streams for gpumel's tests, through the
package's melpipe.stream (rec_stream.py), which checks every rule of
formats/record.md and is independent of lib/rec_*.c.

As a module: Stream (writes gpumel's input), read_stream() (the records
are melpipe.stream Items), meta_tuple() and record_tuple(). As a program:

    gpumel_rec.py dump FILE     one line per record: type, metadata, dims
                                and the SHA-256 of the payload (no header,
                                so that streams made with different command
                                lines compare equal when their data do)
"""
import hashlib
import sys

import rec_stream as rs

T_HEADER, T_AUDIO, T_FEATURES = rs.T_HEADER, rs.T_AUDIO, rs.T_FEATURES
T_SKIPPED, T_TRAILER = rs.T_SKIPPED, rs.T_TRAILER
DTYPES = dict(rs.DTYPE_IDS)                       # name: id
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}   # id: name


class Stream:
    """Writes a stream to a binary file object (melpipe.stream.Writer):
    header at construction, then audio()/skipped(), then finish() for
    the trailer."""

    def __init__(self, f, pairs):
        self.w = rs.Writer(f, pairs)

    def audio(self, key, samples, dtype, rate=16000, channels=1, **kw):
        """samples: a numpy array already in dtype's layout (bf16 as
        uint16 bits), channels interleaved."""
        payload = samples.astype(samples.dtype.newbyteorder("<")).tobytes()
        self.w.item(T_AUDIO, payload, key=key, sample_rate=rate,
                    dtype=DTYPES[dtype], dim0=len(samples) // channels,
                    dim1=channels, **kw)

    def skipped(self, key, reason, rate=16000, **kw):
        self.w.item(T_SKIPPED, reason, key=key, sample_rate=rate, **kw)

    def finish(self):
        self.w.close()


def meta_tuple(it):
    """What gpumel must carry from an input record to its output."""
    return (it.clip, it.offset, it.clip_samples, it.segment, it.label,
            it.sample_rate, it.split, it.key)


def record_tuple(it):
    """Every field of a data record and its payload."""
    return (it.type, it.flags) + meta_tuple(it) + (it.dtype, it.dim0,
                                                   it.dim1, it.data)


def read_stream(path):
    """(header pairs [(key, value str)], [Item], trailer tuple (n_records,
    n_items, n_skipped, checksum, 0)) of the valid stream in the file
    path; rs.RecError otherwise. A features-windows record (gpumel's
    output for a windows record) comes as the features records its
    windows stand for, as gpumel wrote them before format version 6; the
    trailer's counts are the stream's, of its records."""
    pairs, items, t = rs.read_stream(open(path, "rb").read())
    items = [w for it in items
             for w in (rs.expand([it]) if it.type == rs.T_FWINDOWS
                       else [it])]
    pairs = [(k, v.decode("utf-8", "replace")) for k, v in pairs]
    return pairs, items, (t["n_records"], t["n_items"], t["n_skipped"],
                          t["checksum"], 0)


def dump(path):
    _, items, _ = read_stream(path)
    for it in items:
        print(it.type, it.clip, it.offset, it.clip_samples, it.segment,
              it.label, it.sample_rate, it.split, it.dtype, it.dim0,
              it.dim1, it.key.decode("utf-8", "replace"),
              hashlib.sha256(it.data).hexdigest())


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "dump":
        sys.exit("usage: gpumel_rec.py dump FILE")
    try:
        dump(sys.argv[2])
    except rs.RecError as e:
        sys.exit("gpumel_rec.py: %s: %s" % (sys.argv[2], e))
