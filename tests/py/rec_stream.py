"""rec_stream - an independent Python implementation of the melpipe record
stream (formats/record.md), written from the spec alone, for the tests.

It builds streams byte by byte (valid ones, and broken ones on purpose:
every field can be overridden) and reads them with every check of the
spec, in the spec's order, raising RecError with the record number (the
header is record 0) and the byte offset of the record at fault. The C
library (lib/rec.c) is tested against it: both must accept and refuse the
same streams, for the same reason, at the same record.

zstd comes from the system's libzstd through ctypes (the C build needs it
anyway); frames made of raw blocks are also written by hand here.
"""

import ctypes
import ctypes.util
import struct

MAGIC = b"MELP"
VERSION = 1
HDR_SIZE = 24
ITEM_META = 48
MAX_META = 1 << 20
DEFAULT_MAX_DATA = 1 << 28

T_HEADER, T_AUDIO, T_FEATURES, T_SKIPPED, T_TRAILER = 1, 2, 3, 4, 5
TYPE_NAMES = {1: "header", 2: "audio", 3: "features", 4: "skipped",
              5: "trailer"}
F_ZSTD = 1
DTYPES = {1: ("s16", 2), 2: ("f32", 4), 3: ("f16", 2), 4: ("bf16", 2)}
DTYPE_IDS = {name: i for i, (name, _) in DTYPES.items()}
SPLITS = ["none", "training", "validation", "testing"]

# ---------------------------------------------------------------------------
# CRC32C, from its definition (reflected 0x82F63B78, init/xorout ~0)

_CRC_TABLE = []
for _b in range(256):
    _c = _b
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data, crc=0):
    """CRC32C of data, continuing from crc (the CRC of what came before)."""
    c = crc ^ 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        c = (c >> 8) ^ t[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


# ---------------------------------------------------------------------------
# zstd through the system library

class _Zstd:
    def __init__(self):
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        lib = ctypes.CDLL(name)
        lib.ZSTD_compress.restype = ctypes.c_size_t
        lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                      ctypes.c_void_p, ctypes.c_size_t,
                                      ctypes.c_int]
        lib.ZSTD_decompress.restype = ctypes.c_size_t
        lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                        ctypes.c_void_p, ctypes.c_size_t]
        lib.ZSTD_compressBound.restype = ctypes.c_size_t
        lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        lib.ZSTD_findFrameCompressedSize.restype = ctypes.c_size_t
        lib.ZSTD_findFrameCompressedSize.argtypes = [ctypes.c_void_p,
                                                     ctypes.c_size_t]
        self.lib = lib

    def compress(self, data, level):
        cap = self.lib.ZSTD_compressBound(len(data))
        dst = ctypes.create_string_buffer(cap)
        n = self.lib.ZSTD_compress(dst, cap, data, len(data), level)
        if self.lib.ZSTD_isError(n):
            raise RuntimeError("ZSTD_compress failed")
        return dst.raw[:n]

    def frame_size(self, data):
        """Bytes of the first frame, or None when it is not one."""
        n = self.lib.ZSTD_findFrameCompressedSize(data, len(data))
        return None if self.lib.ZSTD_isError(n) else n

    def decompress(self, data, size):
        """Exactly size bytes, or None when the frame gives anything else."""
        dst = ctypes.create_string_buffer(max(size, 1))
        n = self.lib.ZSTD_decompress(dst, size, data, len(data))
        if self.lib.ZSTD_isError(n) or n != size:
            return None
        return dst.raw[:size]


_zstd = None


def zstd():
    global _zstd
    if _zstd is None:
        _zstd = _Zstd()
    return _zstd


def zstd_raw_frame(data, blocks=1):
    """A zstd frame (RFC 8878) holding data in raw (stored) blocks, built by
    hand: magic, a frame header with an 8-byte content size and the single
    segment flag, then blocks of type 0."""
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    out.append(0xE0)  # FCS field 8 bytes, single segment, no checksum
    out += struct.pack("<Q", len(data))
    step = max(1, -(-len(data) // blocks)) if data else 1
    pieces = [data[i:i + step] for i in range(0, len(data), step)] or [b""]
    for i, p in enumerate(pieces):
        last = 1 if i == len(pieces) - 1 else 0
        out += struct.pack("<I", last | (0 << 1) | (len(p) << 3))[:3]
        out += p
    return bytes(out)


# ---------------------------------------------------------------------------
# Writing

def header_meta(pairs):
    """key NUL value NUL for each (key, value) (str or bytes)."""
    out = bytearray()
    for k, v in pairs:
        out += _b(k) + b"\0" + _b(v) + b"\0"
    return bytes(out)


def item_meta(clip=0, offset=0, clip_samples=0, segment=0, label=-1,
              sample_rate=16000, split=0, dtype=1, key=b"", dim0=0, dim1=0,
              key_len=None):
    key = _b(key)
    return struct.pack("<QQQIiIBBHII", clip, offset, clip_samples, segment,
                       label, sample_rate, split, dtype,
                       len(key) if key_len is None else key_len,
                       dim0, dim1) + key


def trailer_meta(n_records, n_items, n_skipped, checksum, reserved=0):
    return struct.pack("<QQQII", n_records, n_items, n_skipped, checksum,
                       reserved)


def record(rtype, meta=b"", data=b"", flags=0, raw_len=None, version=VERSION,
           reserved=0, meta_len=None, data_len=None, crc=None, magic=MAGIC):
    """One record's bytes. data is the payload as stored; raw_len defaults
    to len(data); any header field may be forced to a wrong value; the
    CRC is computed over what is written unless crc is given."""
    head = bytearray(magic)
    head += struct.pack("<BBBBIIII", rtype, flags, version, reserved,
                        len(meta) if meta_len is None else meta_len,
                        len(data) if data_len is None else data_len,
                        len(data) if raw_len is None else raw_len, 0)
    if crc is None:
        crc = crc32c(bytes(head) + meta + data)
    head[20:24] = struct.pack("<I", crc)
    return bytes(head) + meta + data


def record_crc(rec):
    return struct.unpack_from("<I", rec, 20)[0]


class Builder:
    """Gathers records and makes the trailer that matches them."""

    def __init__(self, pairs=(("producer", "make-golden 1"),)):
        self.records = []
        self.kinds = []
        if pairs is not None:
            self.add(record(T_HEADER, header_meta(pairs)), T_HEADER)

    def add(self, rec, rtype=None):
        self.records.append(rec)
        self.kinds.append(rec[4] if rtype is None else rtype)
        return self

    def item(self, rtype, payload=b"", zstd_level=0, raw_frame=False,
             **fields):
        """A data record; for audio/features dims must match payload."""
        flags, stored = 0, payload
        if raw_frame:
            stored, flags = zstd_raw_frame(payload), F_ZSTD
        elif zstd_level and payload:
            # as lib/rec.c does: keep the frame only when it is smaller
            z = zstd().compress(payload, zstd_level)
            if len(z) < len(payload):
                stored, flags = z, F_ZSTD
        if rtype == T_SKIPPED:
            fields.setdefault("dtype", 0)
        return self.add(record(rtype, item_meta(**fields), stored,
                               flags=flags, raw_len=len(payload)), rtype)

    def trailer(self, **override):
        data = [k for k in self.kinds if k in (T_AUDIO, T_FEATURES,
                                               T_SKIPPED)]
        csum = 0
        for rec, k in zip(self.records, self.kinds):
            if k != T_TRAILER:
                csum = crc32c(struct.pack("<I", record_crc(rec)), csum)
        args = dict(n_records=len(data),
                    n_items=sum(k != T_SKIPPED for k in data),
                    n_skipped=sum(k == T_SKIPPED for k in data),
                    checksum=csum)
        args.update(override)
        return record(T_TRAILER, trailer_meta(**args))

    def bytes(self, trailer=True, **override):
        out = b"".join(self.records)
        return out + self.trailer(**override) if trailer else out


def _b(s):
    return s if isinstance(s, bytes) else s.encode()


# ---------------------------------------------------------------------------
# Reading

class RecError(Exception):
    """code: the C library's name without REC_E_ (CRC, TRUNC, ...);
    record: 0-based record number in the stream, the header being 0;
    offset: byte offset of that record."""

    def __init__(self, code, record, offset, message):
        super().__init__("record %d at byte %d: %s: %s"
                         % (record, offset, code, message))
        self.code, self.record, self.offset = code, record, offset
        self.message = message


class Item:
    __slots__ = ("type", "clip", "offset", "clip_samples", "segment",
                 "label", "sample_rate", "split", "dtype", "key_len", "dim0",
                 "dim1", "key", "data", "index")


def _key_ok(k):
    return len(k) > 0 and all(c in b"abcdefghijklmnopqrstuvwxyz0123456789_"
                              for c in k)


class Reader:
    """Reads a whole stream from bytes, checking everything the spec says,
    in its order. read() gives (header pairs, items, trailer dict)."""

    def __init__(self, data, max_data=DEFAULT_MAX_DATA):
        self.buf = bytes(data)
        self.max_data = max_data
        self.pos = 0
        self.nrec = 0
        self.pairs = None
        self.items = []
        self.counts = [0, 0, 0]  # records, items, skipped
        self.csum = 0
        self.prev = None

    def fail(self, code, msg):
        raise RecError(code, self.nrec, self.pos, msg)

    def read(self):
        while True:
            rtype = self.record()
            if rtype == T_TRAILER:
                if self.pos < len(self.buf):
                    self.fail("TRAILING", "data after the trailer")
                return self.pairs, self.items, self.trailer

    def frame(self):
        b, p = self.buf, self.pos
        if len(b) - p < HDR_SIZE:
            if b[p:p + 4] != MAGIC[:len(b) - p]:
                self.fail("MAGIC", "bad magic")
            if p == len(b) and self.nrec == 0:
                self.fail("TRUNC", "empty input")
            if p == len(b):
                self.fail("TRUNC", "input ended before the trailer")
            self.fail("TRUNC", "input ended inside a record header")
        if b[p:p + 4] != MAGIC:
            self.fail("MAGIC", "bad magic")
        rtype, flags, version, reserved, mlen, dlen, rlen, crc = \
            struct.unpack_from("<BBBBIIII", b, p + 4)
        if version > VERSION:
            self.fail("VERSION", "format version %d is newer than %d"
                      % (version, VERSION))
        if version == 0:
            self.fail("FORMAT", "invalid format version 0")
        if rtype not in TYPE_NAMES:
            self.fail("FORMAT", "unknown record type %d" % rtype)
        if flags & ~F_ZSTD:
            self.fail("FORMAT", "unknown flags")
        if reserved:
            self.fail("FORMAT", "reserved byte")
        if mlen > MAX_META:
            self.fail("TOOBIG", "metadata length over the cap")
        if dlen > self.max_data:
            self.fail("TOOBIG", "payload length over the cap")
        if rlen > self.max_data:
            self.fail("TOOBIG", "raw payload length over the cap")
        if not flags & F_ZSTD and rlen != dlen:
            self.fail("FORMAT", "raw length differs from stored length")
        total = HDR_SIZE + mlen + dlen
        if len(b) - p < total:
            self.fail("TRUNC", "input ended inside a record")
        head = bytearray(b[p:p + HDR_SIZE])
        head[20:24] = b"\0\0\0\0"
        if crc32c(b[p + HDR_SIZE:p + total], crc32c(head)) != crc:
            self.fail("CRC", "checksum mismatch")
        meta = b[p + HDR_SIZE:p + HDR_SIZE + mlen]
        data = b[p + HDR_SIZE + mlen:p + total]
        if flags & F_ZSTD:
            fs = zstd().frame_size(data)
            if fs is None or fs != len(data):
                self.fail("ZSTD", "not exactly one zstd frame")
            data = zstd().decompress(data, rlen)
            if data is None:
                self.fail("ZSTD", "does not decompress to raw_len")
        return rtype, meta, data, dlen, rlen, crc, total

    def record(self):
        rtype, meta, data, dlen, rlen, crc, total = self.frame()
        if self.nrec == 0 and rtype != T_HEADER:
            self.fail("ORDER", "stream does not start with a header")
        if self.nrec > 0 and rtype == T_HEADER:
            self.fail("ORDER", "a second header")
        if rtype == T_HEADER:
            self.header(meta, dlen, rlen)
        elif rtype == T_TRAILER:
            self.check_trailer(meta, dlen, rlen)
        else:
            self.item(rtype, meta, data)
        if rtype != T_TRAILER:
            self.csum = crc32c(struct.pack("<I", crc), self.csum)
        self.pos += total
        self.nrec += 1
        return rtype

    def header(self, meta, dlen, rlen):
        if dlen or rlen:
            self.fail("FORMAT", "header with a payload")
        if meta and meta[-1] != 0:
            self.fail("FORMAT", "header metadata does not end with NUL")
        parts = meta.split(b"\0")[:-1] if meta else []
        pairs = []
        for i in range(0, len(parts), 2):
            if not _key_ok(parts[i]):
                self.fail("FORMAT", "invalid header key")
            if i + 1 >= len(parts):
                self.fail("FORMAT", "header key without a value")
            pairs.append((parts[i].decode(), parts[i + 1]))
        self.pairs = pairs

    def check_trailer(self, meta, dlen, rlen):
        if len(meta) != 32 or dlen or rlen:
            self.fail("FORMAT", "trailer sizes")
        n_rec, n_items, n_skip, csum, res = struct.unpack("<QQQII", meta)
        if res:
            self.fail("FORMAT", "trailer reserved field")
        if [n_rec, n_items, n_skip] != self.counts:
            self.fail("FORMAT", "trailer counts")
        if csum != self.csum:
            self.fail("CRC", "stream checksum mismatch")
        self.trailer = dict(n_records=n_rec, n_items=n_items,
                            n_skipped=n_skip, checksum=csum)

    def item(self, rtype, meta, data):
        if len(meta) < ITEM_META:
            self.fail("FORMAT", "metadata shorter than 48 bytes")
        it = Item()
        it.type = rtype
        (it.clip, it.offset, it.clip_samples, it.segment, it.label,
         it.sample_rate, it.split, it.dtype, it.key_len, it.dim0,
         it.dim1) = struct.unpack_from("<QQQIiIBBHII", meta)
        if len(meta) != ITEM_META + it.key_len:
            self.fail("FORMAT", "meta_len is not 48 + key_len")
        it.key = meta[ITEM_META:]
        if it.split > 3:
            self.fail("FORMAT", "invalid split")
        if b"\0" in it.key:
            self.fail("FORMAT", "key contains a NUL byte")
        if rtype == T_SKIPPED:
            if it.dtype or it.dim0 or it.dim1:
                self.fail("FORMAT", "skipped record with dtype or dims")
        else:
            if it.dtype not in DTYPES:
                self.fail("FORMAT", "invalid dtype")
            if it.dim0 * it.dim1 * DTYPES[it.dtype][1] != len(data):
                self.fail("FORMAT", "payload does not match dims")
        if self.prev is not None:
            pc, po = self.prev
            if it.clip < pc or (it.clip == pc and it.segment <= po):
                self.fail("ORDER", "records out of clip/segment order")
        self.prev = (it.clip, it.segment)
        it.data = data
        it.index = self.nrec
        self.items.append(it)
        self.counts[0] += 1
        self.counts[1 if rtype != T_SKIPPED else 2] += 1


def read_stream(data, max_data=DEFAULT_MAX_DATA):
    """(pairs, items, trailer) of a valid stream; RecError otherwise."""
    return Reader(data, max_data).read()


def record_spans(data):
    """[(offset, length, type)] of the records of a (framed) stream, as far
    as the framing goes, without checking anything else."""
    spans, p = [], 0
    while p + HDR_SIZE <= len(data) and data[p:p + 4] == MAGIC:
        mlen, dlen = struct.unpack_from("<II", data, p + 8)
        n = HDR_SIZE + mlen + dlen
        spans.append((p, n, data[p + 4]))
        p += n
    return spans
