#!/usr/bin/env python3
"""A small, independent reader of melpipe record streams (formats/record.md)
for the wavcat tests: it checks every record (magic, version, lengths,
CRC32C, metadata layout, trailer counts and checksum) and gives the header
pairs, the data records and the trailer.

As a module:   hdr, recs, trailer = read_stream(data)
As a program:  wavcat_readrec.py FILE|-  [--records|--header|--samples]
  --header    one line per header pair: key=value (value's TABs as \\t)
  --records   one line per data record: clip type label split n key(repr)
  --raw-hash  SHA-256 of the data records' bytes (for same-output checks)
  --same-as OTHER   exit 1 naming the records whose bytes differ
Exits 1 with a message on a bad stream.
"""
import ctypes
import ctypes.util
import hashlib
import struct
import sys

import numpy as np

T_HEADER, T_AUDIO, T_FEATURES, T_SKIPPED, T_TRAILER = 1, 2, 3, 4, 5
DTYPES = {1: np.dtype("<i2"), 2: np.dtype("<f4"), 3: np.dtype("<f2"),
          4: np.dtype("<u2")}
SPLITS = {0: "none", 1: "training", 2: "validation", 3: "testing"}


def _crc_table():
    tab = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        tab.append(c)
    return tab


_TAB = _crc_table()


def crc32c(data, crc=0):
    """CRC32C (Castagnoli), reflected, init and final XOR 0xFFFFFFFF."""
    c = crc ^ 0xFFFFFFFF
    tab = _TAB
    for b in data:
        c = tab[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _zstd_decompress(data, raw_len):
    lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.c_void_p, ctypes.c_size_t]
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    out = ctypes.create_string_buffer(max(raw_len, 1))
    n = lib.ZSTD_decompress(out, raw_len, data, len(data))
    if lib.ZSTD_isError(n) or n != raw_len:
        raise ValueError("zstd payload does not decompress to raw_len")
    return out.raw[:raw_len]


class Record:
    pass


class BadStream(Exception):
    pass


def read_stream(data, check_crc=True):
    """Parses and verifies a whole stream. Returns (header pairs [(k, v)]
    as bytes, [Record], trailer dict)."""
    pos, crcs, recs, header, trailer = 0, [], [], None, None
    while pos < len(data):
        if trailer is not None:
            raise BadStream("bytes after the trailer")
        if len(data) - pos < 24:
            raise BadStream("stream cut inside a record header")
        (magic, typ, flags, ver, res, meta_len, data_len, raw_len,
         crc) = struct.unpack_from("<4sBBBBIIII", data, pos)
        if magic != b"MELP":
            raise BadStream("bad magic at %d" % pos)
        if ver != 1 or res != 0 or flags & ~1 or typ not in range(1, 6):
            raise BadStream("bad version/type/flags at %d" % pos)
        if not flags & 1 and raw_len != data_len:
            raise BadStream("raw_len != data_len without zstd")
        end = pos + 24 + meta_len + data_len
        if end > len(data):
            raise BadStream("stream cut inside a record")
        hdr = bytearray(data[pos:pos + 24])
        hdr[20:24] = b"\0\0\0\0"
        meta = data[pos + 24:pos + 24 + meta_len]
        payload = data[pos + 24 + meta_len:end]
        if check_crc and crc32c(bytes(hdr) + meta + payload) != crc:
            raise BadStream("crc mismatch at %d" % pos)
        if flags & 1:
            payload = _zstd_decompress(payload, raw_len)
        if typ == T_HEADER:
            if header is not None or recs:
                raise BadStream("header not first / twice")
            items = meta.split(b"\0")
            if len(items) % 2 != 1 or items[-1] != b"":
                raise BadStream("bad header metadata")
            header = list(zip(items[0:-1:2], items[1:-1:2]))
        elif typ == T_TRAILER:
            if meta_len != 32:
                raise BadStream("bad trailer length")
            n_rec, n_items, n_skip, ck, _ = struct.unpack("<QQQII", meta)
            trailer = dict(n_records=n_rec, n_items=n_items,
                           n_skipped=n_skip, checksum=ck)
            want = crc32c(b"".join(struct.pack("<I", c) for c in crcs))
            if check_crc and ck != want:
                raise BadStream("trailer checksum mismatch")
            if n_rec != len(recs) or n_skip != sum(
                    r.type == T_SKIPPED for r in recs) or \
                    n_items != n_rec - n_skip:
                raise BadStream("trailer counts wrong")
        else:
            if header is None:
                raise BadStream("data record before the header")
            recs.append(_data_record(typ, meta, payload,
                                     data[pos:end]))
        crcs.append(crc)
        pos = end
    if header is None or trailer is None:
        raise BadStream("truncated stream (no trailer)")
    return header, recs, trailer


def _data_record(typ, meta, payload, raw):
    r = Record()
    r.type = typ
    (r.clip, r.offset, r.clip_samples, r.segment, r.label, r.sample_rate,
     r.split, r.dtype, key_len, r.dim0, r.dim1) = struct.unpack_from(
        "<QQQIiIBBHII", meta, 0)
    if len(meta) != 48 + key_len:
        raise BadStream("meta_len != 48 + key_len")
    r.key = bytes(meta[48:])
    r.raw = bytes(raw)
    if typ == T_SKIPPED:
        r.reason = payload.decode("utf-8")
        r.samples = None
    else:
        dt = DTYPES[r.dtype]
        if len(payload) != r.dim0 * r.dim1 * dt.itemsize:
            raise BadStream("payload length != dims")
        r.samples = np.frombuffer(payload, dtype=dt)
    return r


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
