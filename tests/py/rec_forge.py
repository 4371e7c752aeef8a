#!/usr/bin/env python3
"""rec_forge - break a record stream on purpose, for the tests: reads a
stream on stdin, applies one change and writes the result to stdout.

    rec_forge.py flip OFFSET [MASK]       xor the byte at OFFSET (default 0x01;
                                          a negative OFFSET counts from the end)
    rec_forge.py flip-at REC OFFSET [MASK] the same at OFFSET in record REC
                                          (negative: from the record's end)
    rec_forge.py cut LENGTH               keep the first LENGTH bytes
                                          (negative: drop that many at the end)
    rec_forge.py set REC FIELD VALUE [FIELD VALUE]... [--fix-crc]
                                          set record header fields (type,
                                          flags, version, reserved, meta_len,
                                          data_len, raw_len, crc) of record REC
                                          (0 = header, -1 = trailer); with
                                          --fix-crc the record's CRC is redone
    rec_forge.py meta REC OFFSET FMT VALUE [--fix-crc]
                                          struct-pack VALUE (FMT: <Q, <i, B...)
                                          into record REC's metadata at OFFSET
    rec_forge.py drop REC                 remove record REC
    rec_forge.py dup REC                  repeat record REC
    rec_forge.py swap REC1 REC2           exchange two records
    rec_forge.py flip-each MASK PREFIX    write PREFIX.N for every byte offset N,
                                          the stream with that byte xored
    rec_forge.py twice                    the stream twice in a row
    rec_forge.py append HEX               bytes after the end
    rec_forge.py fix-trailer              recompute the trailer's counts and
                                          checksum from the records before it
    rec_forge.py recompress LEVEL         rewrite a valid stream with every
                                          payload zstd-compressed at LEVEL
                                          where that makes it smaller (0:
                                          none), as lib/rec_write.c does
"""

import io
import struct
import sys

import rec_stream as rs

FIELDS = {"type": (4, "<B"), "flags": (5, "<B"), "version": (6, "<B"),
          "reserved": (7, "<B"), "meta_len": (8, "<I"),
          "data_len": (12, "<I"), "raw_len": (16, "<I"), "crc": (20, "<I")}


def records(data):
    try:
        return [bytearray(r) for r in rs.split_records(data)]
    except rs.RecError as e:
        sys.exit("rec_forge: input is not a well-framed stream: %s" % e)


def fix_crc(rec):
    rec[20:24] = b"\0\0\0\0"
    rec[20:24] = struct.pack("<I", rs.crc32c(bytes(rec)))


def fix_trailer(recs):
    b = rs.Builder(pairs=None)
    for r in recs[:-1]:
        b.add(bytes(r))
    recs[-1] = bytearray(b.trailer())


def recompress(data, level):
    pairs, items, _ = rs.read_stream(data)
    out = io.BytesIO()
    with rs.Writer(out, pairs, zstd_level=level) as w:
        for it in items:
            w.write(it)
    return out.getvalue()


def main(argv):
    data = sys.stdin.buffer.read()
    if not argv:
        sys.exit(__doc__)
    op, args = argv[0], argv[1:]
    fix = "--fix-crc" in args
    args = [a for a in args if a != "--fix-crc"]
    if op == "flip":
        out = bytearray(data)
        out[int(args[0])] ^= int(args[1], 0) if len(args) > 1 else 1
    elif op == "flip-each":
        for i in range(len(data)):
            out = bytearray(data)
            out[i] ^= int(args[0], 0)
            with open("%s.%d" % (args[1], i), "wb") as f:
                f.write(out)
        return
    elif op == "cut":
        out = data[:int(args[0])]
    elif op == "twice":
        out = data + data
    elif op == "append":
        out = data + bytes.fromhex(args[0])
    elif op == "recompress":
        out = recompress(data, int(args[0]))
    else:
        recs = records(data)
        if op == "set":
            r = recs[int(args[0])]
            for field, value in zip(args[1::2], args[2::2]):
                off, fmt = FIELDS[field]
                struct.pack_into(fmt, r, off, int(value, 0))
            if fix:
                fix_crc(r)
        elif op == "meta":
            r = recs[int(args[0])]
            struct.pack_into(args[2], r, rs.HDR_SIZE + int(args[1]),
                             int(args[3], 0))
            if fix:
                fix_crc(r)
        elif op == "flip-at":
            r = recs[int(args[0])]
            r[int(args[1])] ^= int(args[2], 0) if len(args) > 2 else 1
        elif op == "drop":
            del recs[int(args[0])]
        elif op == "dup":
            i = int(args[0])
            recs.insert(i, bytearray(recs[i]))
        elif op == "swap":
            i, j = int(args[0]), int(args[1])
            recs[i], recs[j] = recs[j], recs[i]
        elif op == "fix-trailer":
            fix_trailer(recs)
        else:
            sys.exit("rec_forge: unknown operation '%s'" % op)
        out = b"".join(recs)
    sys.stdout.buffer.write(bytes(out))


if __name__ == "__main__":
    main(sys.argv[1:])
