"""Checks that a stream in pieces (the second file) joins back into the
stream of one-record items it was cut from (the first), with
rec_stream.join(): the same items, fields and payloads, and that the
second holds pieces no larger than --max frames.

Usage: rec_join_check.py WHOLE.rec PIECES.rec MAX_FRAMES
Prints "N items from M records" and exits 0, or names the first
difference and exits 1."""
import sys

import rec_stream as rs

FIELDS = ("type", "clip", "offset", "clip_samples", "segment", "label",
          "sample_rate", "split", "dtype", "key", "dim0", "dim1", "data",
          "flags")


def main():
    whole = rs.read_stream(open(sys.argv[1], "rb").read())[1]
    pieces = rs.read_stream(open(sys.argv[2], "rb").read())[1]
    most = int(sys.argv[3])
    for it in pieces:
        n = it.dim1 if it.type == rs.T_FEATURES else it.dim0
        if it.flags and n > most:
            sys.exit("a piece of %d frames, more than %d" % (n, most))
    joined = rs.join(pieces)
    if len(joined) != len(whole):
        sys.exit("%d items joined, %d in the whole stream"
                 % (len(joined), len(whole)))
    for i, (a, b) in enumerate(zip(whole, joined)):
        for f in FIELDS:
            if getattr(a, f) != getattr(b, f):
                sys.exit("item %d: %s differs" % (i, f))
    print("%d items from %d records" % (len(joined), len(pieces)))


if __name__ == "__main__":
    main()
