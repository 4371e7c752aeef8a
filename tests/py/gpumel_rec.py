#!/usr/bin/env python3
"""gpumel_rec.py - melpipe record streams in Python, for gpumel's tests.

Written from formats/record.md alone (not from lib/rec_*.c), so that the tests
make gpumel's input and read its output without trusting the C library.

As a module: crc32c(), Stream (write), read_stream(). As a program:

    gpumel_rec.py dump FILE     one line per record: type, metadata, dims
                                and the SHA-256 of the payload (no header,
                                so that streams made with different command
                                lines compare equal when their data do)
"""
import hashlib
import struct
import sys

MAGIC = b"MELP"
VERSION = 1
T_HEADER, T_AUDIO, T_FEATURES, T_SKIPPED, T_TRAILER = 1, 2, 3, 4, 5
DTYPES = {"s16": 1, "f32": 2, "f16": 3, "bf16": 4}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def _table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T0 = _table()
_TABLES = [_T0]
for _ in range(7):
    _TABLES.append([(_TABLES[-1][n] >> 8) ^ _T0[_TABLES[-1][n] & 0xFF]
                    for n in range(256)])


def crc32c(data, crc=0):
    """CRC32C (Castagnoli, reflected) of data, continuing from crc."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _TABLES
    crc ^= 0xFFFFFFFF
    mv = memoryview(bytes(data))
    n8 = len(mv) // 8 * 8
    for (q,) in struct.iter_unpack("<Q", mv[:n8]):
        x = crc ^ (q & 0xFFFFFFFF)
        h = q >> 32
        crc = (t7[x & 0xFF] ^ t6[(x >> 8) & 0xFF] ^ t5[(x >> 16) & 0xFF] ^
               t4[x >> 24] ^ t3[h & 0xFF] ^ t2[(h >> 8) & 0xFF] ^
               t1[(h >> 16) & 0xFF] ^ t0[h >> 24])
    for b in mv[n8:]:
        crc = t0[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _b(s):
    return s if isinstance(s, bytes) else str(s).encode()


class Stream:
    """Writes a stream to a binary file object: header at construction,
    then audio()/skipped(), then finish() for the trailer."""

    def __init__(self, f, pairs):
        self.f = f
        self.crcs = b""
        self.n_items = 0
        self.n_skipped = 0
        meta = b"".join(_b(k) + b"\0" + _b(v) + b"\0" for k, v in pairs)
        self._record(T_HEADER, meta, b"")

    def _record(self, rtype, meta, payload):
        hdr = MAGIC + struct.pack("<BBBBIII", rtype, 0, VERSION, 0,
                                  len(meta), len(payload), len(payload))
        crc = crc32c(hdr + b"\0\0\0\0" + meta + payload)
        self.f.write(hdr + struct.pack("<I", crc) + meta + payload)
        if rtype != T_TRAILER:
            self.crcs += struct.pack("<I", crc)

    def _item(self, rtype, key, payload, clip, offset=0, clip_samples=0,
              segment=0, label=-1, rate=16000, split=0, dtype=0, dim0=0,
              dim1=0):
        key = _b(key)
        meta = struct.pack("<QQQIiIBBHII", clip, offset, clip_samples,
                           segment, label, rate, split, dtype, len(key),
                           dim0, dim1) + key
        self._record(rtype, meta, payload)

    def audio(self, key, samples, dtype, **kw):
        """samples: a numpy array already in dtype's layout (bf16 as
        uint16 bits)."""
        payload = samples.astype(samples.dtype.newbyteorder("<")).tobytes()
        self._item(T_AUDIO, key, payload, dtype=DTYPES[dtype],
                   dim0=len(samples), dim1=1, **kw)
        self.n_items += 1

    def skipped(self, key, reason, **kw):
        self._item(T_SKIPPED, key, _b(reason), **kw)
        self.n_skipped += 1

    def finish(self):
        n = self.n_items + self.n_skipped
        meta = struct.pack("<QQQII", n, self.n_items, self.n_skipped,
                           crc32c(self.crcs), 0)
        self._record(T_TRAILER, meta, b"")


class Item:
    """A data record read back."""

    def __init__(self, rtype, meta, payload):
        (self.clip, self.offset, self.clip_samples, self.segment,
         self.label, self.rate, self.split, self.dtype, key_len, self.dim0,
         self.dim1) = struct.unpack("<QQQIiIBBHII", meta[:48])
        self.type = rtype
        self.key = meta[48:48 + key_len]
        self.payload = payload

    def meta_tuple(self):
        """What gpumel must carry from an input record to its output."""
        return (self.clip, self.offset, self.clip_samples, self.segment,
                self.label, self.rate, self.split, self.key)


def read_stream(path, check_crc=True):
    """(header pairs, [Item], trailer tuple). Raises ValueError on any
    fault this reader sees."""
    data = open(path, "rb").read()
    pos, pairs, items, crcs, trailer = 0, None, [], b"", None
    while pos < len(data):
        if data[pos:pos + 4] != MAGIC:
            raise ValueError("bad magic at %d" % pos)
        rtype, flags, ver, _, mlen, dlen, rlen, crc = struct.unpack(
            "<BBBBIIII", data[pos + 4:pos + 24])
        if flags:
            raise ValueError("flags %d not supported here" % flags)
        meta = data[pos + 24:pos + 24 + mlen]
        payload = data[pos + 24 + mlen:pos + 24 + mlen + dlen]
        if check_crc:
            hdr = data[pos:pos + 20] + b"\0\0\0\0"
            if crc32c(hdr + meta + payload) != crc:
                raise ValueError("crc mismatch at %d" % pos)
        pos += 24 + mlen + dlen
        if rtype == T_TRAILER:
            trailer = struct.unpack("<QQQII", meta)
            if check_crc and trailer[3] != crc32c(crcs):
                raise ValueError("trailer checksum mismatch")
            break
        crcs += struct.pack("<I", crc)
        if rtype == T_HEADER:
            parts = meta.split(b"\0")[:-1]
            pairs = [(parts[i].decode(), parts[i + 1].decode("utf-8",
                                                             "replace"))
                     for i in range(0, len(parts), 2)]
        else:
            items.append(Item(rtype, meta, payload))
    if trailer is None:
        raise ValueError("no trailer: truncated stream")
    if pos != len(data):
        raise ValueError("bytes after the trailer")
    if trailer[0] != len(items):
        raise ValueError("trailer counts %d records, read %d" %
                         (trailer[0], len(items)))
    return pairs, items, trailer


def dump(path):
    _, items, _ = read_stream(path)
    for it in items:
        print(it.type, it.clip, it.offset, it.clip_samples, it.segment,
              it.label, it.rate, it.split, it.dtype, it.dim0, it.dim1,
              it.key.decode("utf-8", "replace"),
              hashlib.sha256(it.payload).hexdigest())


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "dump":
        sys.exit("usage: gpumel_rec.py dump FILE")
    dump(sys.argv[2])
