"""rec_stream - an independent Python implementation of the melpipe record
stream (formats/record.md), written from the spec alone, for the tests.

It builds streams byte by byte (valid ones, and broken ones on purpose:
every field can be overridden) and reads them with every check of the
spec, in the spec's order, raising RecError with the record number (the
header is record 0) and the byte offset of the record at fault. The C
library (lib/rec_*.c) is tested against it: both must accept and refuse the
same streams, for the same reason, at the same record.

Format version 2: windows records (type 6) describe windows of their
samples; window() and expand() turn them into the audio records they
stand for. Format version 3: audio and features items in pieces (flags
more and cont). Records are written with the lowest version that defines
them (type_version), so streams without windows records and pieces are
version 1 byte for byte.

zstd comes from the system's libzstd through ctypes (the C build needs it
anyway); frames made of raw blocks are also written by hand here.
"""

import ctypes
import ctypes.util
import struct

MAGIC = b"MELP"
VERSION = 3          # the newest format version this reader knows
HDR_SIZE = 24
ITEM_META = 48
WINDOWS_META = 16    # a windows record's fields after its key
MAX_META = 1 << 20
DEFAULT_MAX_DATA = 1 << 28
MAX_SEGMENT = 0xFFFFFFFF

T_HEADER, T_AUDIO, T_FEATURES, T_SKIPPED, T_TRAILER = 1, 2, 3, 4, 5
T_WINDOWS = 6
TYPE_NAMES = {1: "header", 2: "audio", 3: "features", 4: "skipped",
              5: "trailer", 6: "windows"}
DATA_TYPES = (T_AUDIO, T_FEATURES, T_SKIPPED, T_WINDOWS)
F_ZSTD = 1
F_MORE = 2           # a piece of an item that goes on in the next record
F_CONT = 4           # a piece that goes on with the record before's item
PIECE = F_MORE | F_CONT
WIN_PAD = 1          # windows flag: windows past the samples are padded
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


def type_version(rtype, flags=0):
    """The version byte a record of rtype with flags is written with: the
    lowest format version that defines it (3 for a piece, 2 for windows,
    else 1)."""
    if flags & PIECE:
        return 3
    return 2 if rtype == T_WINDOWS else 1


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
              key_len=None, win_len=None, win_hop=0, n_windows=0,
              win_flags=0):
    """A data record's metadata: the 48 fixed bytes and the key, then,
    when win_len is given (windows records), the 16 bytes of window
    fields."""
    key = _b(key)
    meta = struct.pack("<QQQIiIBBHII", clip, offset, clip_samples, segment,
                       label, sample_rate, split, dtype,
                       len(key) if key_len is None else key_len,
                       dim0, dim1) + key
    if win_len is not None:
        meta += struct.pack("<IIII", win_len, win_hop, n_windows, win_flags)
    return meta


def windows_problem(dim0, segment, win_len, win_hop, n_windows, win_flags):
    """Why a windows record's description does not fit its dim0 sample
    frames, or None: the spec's windows rules in its order."""
    if win_len == 0 or win_hop == 0 or n_windows == 0:
        return "window length, hop or count is 0"
    if win_flags & ~WIN_PAD:
        return "unknown windows flags"
    if segment + n_windows - 1 > MAX_SEGMENT:
        return "segment indices run past 2^32 - 1"
    last = (n_windows - 1) * win_hop
    if last >= dim0:
        return "the last window starts past the samples"
    if not win_flags & WIN_PAD and last + win_len > dim0:
        return "the last window ends past the samples (no pad flag)"
    return None


def trailer_meta(n_records, n_items, n_skipped, checksum, reserved=0):
    return struct.pack("<QQQII", n_records, n_items, n_skipped, checksum,
                       reserved)


def record(rtype, meta=b"", data=b"", flags=0, raw_len=None, version=None,
           reserved=0, meta_len=None, data_len=None, crc=None, magic=MAGIC):
    """One record's bytes. data is the payload as stored; raw_len defaults
    to len(data); version to the type's (type_version); any header field
    may be forced to a wrong value; the CRC is computed over what is
    written unless crc is given."""
    if version is None:
        version = type_version(rtype, flags)
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
             check=True, piece=0, version=None, **fields):
        """A data record; for audio/features dims must match payload. A
        windows record takes win_len, win_hop, n_windows and win_flags
        too; its description is checked against its dims (ValueError)
        unless check is false, which builds broken ones on purpose.
        piece: the flags F_MORE and F_CONT of a piece of an item; version
        overrides the version byte."""
        if rtype == T_WINDOWS:
            if "win_len" not in fields:
                raise ValueError("a windows record needs win_len, win_hop, "
                                 "n_windows (and win_flags)")
            why = windows_problem(fields.get("dim0", 0),
                                  fields.get("segment", 0),
                                  fields["win_len"],
                                  fields.get("win_hop", 0),
                                  fields.get("n_windows", 0),
                                  fields.get("win_flags", 0))
            if check and why:
                raise ValueError("bad windows record: " + why)
        elif "win_len" in fields:
            raise ValueError("window fields in a %s record"
                             % TYPE_NAMES.get(rtype, rtype))
        flags, stored = piece, payload
        if raw_frame:
            stored, flags = zstd_raw_frame(payload), flags | F_ZSTD
        elif zstd_level and payload:
            # as lib/rec_write.c does: keep the frame only when it is smaller
            z = zstd().compress(payload, zstd_level)
            if len(z) < len(payload):
                stored, flags = z, flags | F_ZSTD
        if rtype == T_SKIPPED:
            fields.setdefault("dtype", 0)
        return self.add(record(rtype, item_meta(**fields), stored,
                               flags=flags, raw_len=len(payload),
                               version=version), rtype)

    def trailer(self, **override):
        data = [k for k in self.kinds if k in DATA_TYPES]
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
    """A data record as read. The window fields are 0 but in windows
    records; flags holds a piece's F_MORE and F_CONT."""
    __slots__ = ("type", "clip", "offset", "clip_samples", "segment",
                 "label", "sample_rate", "split", "dtype", "key_len", "dim0",
                 "dim1", "key", "data", "index", "win_len", "win_hop",
                 "n_windows", "win_flags", "flags", "cut_short", "pieces")

    def last_segment(self):
        """The segment index of the last window the record holds."""
        if self.type == T_WINDOWS:
            return self.segment + self.n_windows - 1
        return self.segment

    def fields(self):
        """The keyword arguments of Builder.item() (and item_meta()) that
        write this record again."""
        f = dict(clip=self.clip, offset=self.offset,
                 clip_samples=self.clip_samples, segment=self.segment,
                 label=self.label, sample_rate=self.sample_rate,
                 split=self.split, dtype=self.dtype, key=self.key,
                 dim0=self.dim0, dim1=self.dim1, piece=self.flags)
        if self.type == T_WINDOWS:
            f.update(win_len=self.win_len, win_hop=self.win_hop,
                     n_windows=self.n_windows, win_flags=self.win_flags)
        return f


def window(it, i):
    """Window i of the windows record it as the audio record it stands
    for (as lib/rec's rec_window()): offset + i * win_hop in the clip,
    segment index segment + i, the win_len sample frames from frame
    i * win_hop of the payload, zeros past its end, window fields 0; the
    other fields, index included, are it's."""
    if it.type != T_WINDOWS or not 0 <= i < it.n_windows:
        raise IndexError("no window %d in a %s record" %
                         (i, TYPE_NAMES.get(it.type, it.type)))
    frame = DTYPES[it.dtype][1] * it.dim1
    start = i * it.win_hop
    w = Item()
    for name in Item.__slots__:
        setattr(w, name, getattr(it, name, None))
    w.type = T_AUDIO
    w.offset = it.offset + start
    w.segment = it.segment + i
    w.dim0 = it.win_len
    w.win_len = w.win_hop = w.n_windows = w.win_flags = 0
    part = it.data[start * frame:(start + it.win_len) * frame]
    w.data = part + bytes(it.win_len * frame - len(part))
    return w


def expand(items):
    """items with every windows record replaced by its windows, in order:
    what the stream holds for a stage that wants one record per window."""
    out = []
    for it in items:
        if it.type == T_WINDOWS:
            out += [window(it, i) for i in range(it.n_windows)]
        else:
            out.append(it)
    return out


def join(items):
    """items with every item in pieces replaced by the one record it
    stands for (formats/record.md, Items in pieces): audio samples and
    features columns of the pieces side by side, the first piece's
    offset, the last piece's clip_samples, flags 0. An item cut short
    (a skipped record after a piece flagged more) becomes the record of
    the pieces kept, followed by the skipped record; its cut_short
    attribute is True (False on every other item). Each joined item has
    the attribute pieces: how many records it came in (1 for the
    others). The stream must be valid (as read_stream() gives it)."""
    out, cur, cols = [], None, []

    def close(cut):
        it = Item()
        for name in Item.__slots__:
            setattr(it, name, getattr(cur[0], name, None))
        it.flags = 0
        it.clip_samples = cur[-1].clip_samples
        if it.type == T_AUDIO:
            it.dim0 = sum(c.dim0 for c in cur)
            it.data = b"".join(c.data for c in cur)
        else:
            es, rows = DTYPES[it.dtype][1], []
            it.dim1 = sum(c.dim1 for c in cur)
            for m in range(it.dim0):
                rows += [c.data[m * c.dim1 * es:(m + 1) * c.dim1 * es]
                         for c in cur]
            it.data = b"".join(rows)
        it.cut_short, it.pieces = cut, len(cur)
        out.append(it)

    for it in items:
        if cur is not None:
            if it.flags & F_CONT:
                cur.append(it)
                if not it.flags & F_MORE:
                    close(False)
                    cur = None
                continue
            close(True)  # a skipped record after a piece flagged more
            cur = None
        if it.flags & F_MORE:
            cur = [it]
            continue
        it.cut_short, it.pieces = False, 1
        out.append(it)
    if cur is not None:
        raise ValueError("the items end after a piece flagged more")
    return out


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
        self.more = None  # the piece before, when flagged more

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
            self.fail("VERSION", "format version %d is newer than this "
                      "reader's version %d" % (version, VERSION))
        if version == 0:
            self.fail("FORMAT", "invalid format version 0")
        if rtype not in TYPE_NAMES:
            self.fail("FORMAT", "unknown record type %d" % rtype)
        if rtype == T_WINDOWS and version < 2:
            self.fail("FORMAT", "a windows record marked format version %d"
                      % version)
        if flags & ~(F_ZSTD | PIECE):
            self.fail("FORMAT", "unknown flags")
        if flags and rtype in (T_HEADER, T_TRAILER):
            self.fail("FORMAT", "a header or trailer record with flags")
        if flags & PIECE and rtype not in (T_AUDIO, T_FEATURES):
            self.fail("FORMAT", "piece flags on a %s record"
                      % TYPE_NAMES[rtype])
        if flags & PIECE and version < 3:
            self.fail("FORMAT", "piece flags in a record of version %d"
                      % version)
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
        return rtype, flags, meta, data, dlen, rlen, crc, total

    def record(self):
        rtype, flags, meta, data, dlen, rlen, crc, total = self.frame()
        if self.nrec == 0 and rtype != T_HEADER:
            self.fail("ORDER", "stream does not start with a header")
        if self.nrec > 0 and rtype == T_HEADER:
            self.fail("ORDER", "a second header")
        if rtype == T_TRAILER and self.more is not None:
            self.fail("ORDER", "the stream ends after a piece flagged more")
        if rtype == T_HEADER:
            self.header(meta, dlen, rlen)
        elif rtype == T_TRAILER:
            self.check_trailer(meta, dlen, rlen)
        else:
            self.item(rtype, flags & PIECE, meta, data)
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

    def item(self, rtype, flags, meta, data):
        if len(meta) < ITEM_META:
            self.fail("FORMAT", "metadata shorter than 48 bytes")
        it = Item()
        it.type = rtype
        it.flags = flags
        (it.clip, it.offset, it.clip_samples, it.segment, it.label,
         it.sample_rate, it.split, it.dtype, it.key_len, it.dim0,
         it.dim1) = struct.unpack_from("<QQQIiIBBHII", meta)
        wsize = WINDOWS_META if rtype == T_WINDOWS else 0
        if len(meta) != ITEM_META + it.key_len + wsize:
            self.fail("FORMAT", "meta_len is not 48 + key_len%s"
                      % (" + 16" if wsize else ""))
        it.key = meta[ITEM_META:ITEM_META + it.key_len]
        it.win_len = it.win_hop = it.n_windows = it.win_flags = 0
        if wsize:
            (it.win_len, it.win_hop, it.n_windows,
             it.win_flags) = struct.unpack_from("<IIII", meta,
                                                ITEM_META + it.key_len)
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
        if rtype == T_WINDOWS:
            why = windows_problem(it.dim0, it.segment, it.win_len,
                                  it.win_hop, it.n_windows, it.win_flags)
            if why:
                self.fail("FORMAT", why)
        why = piece_problem(it)
        if why:
            self.fail("FORMAT", why)
        self.check_order(it)
        it.data = data
        it.index = self.nrec
        self.items.append(it)
        self.counts[0] += 1
        self.counts[1 if rtype != T_SKIPPED else 2] += 1


    def check_order(self, it):
        """The order rule: after a piece flagged more, its item's next
        piece (flagged cont, repeating the fields) or a skipped record of
        its clip and segment; a cont piece nowhere else; else clips
        increase and segments increase within a clip (a windows record
        holds segments segment .. last_segment())."""
        p = self.more
        if p is not None:
            if ((it.type != T_SKIPPED and not it.flags & F_CONT)
                    or (it.clip, it.segment) != (p.clip, p.segment)):
                self.fail("ORDER", "after a piece flagged more comes "
                          "neither its next piece nor a skipped record")
            if it.type != T_SKIPPED:
                why = cont_problem(p, it)
                if why:
                    self.fail("ORDER", why)
        elif it.flags & F_CONT:
            self.fail("ORDER", "a cont piece without a more piece before")
        elif self.prev is not None:
            pc, ps = self.prev
            if it.clip < pc or (it.clip == pc and it.segment <= ps):
                self.fail("ORDER", "records out of clip/segment order")
        self.prev = (it.clip, it.last_segment())
        self.more = it if it.flags & F_MORE else None


def piece_problem(it):
    """Why a piece's own fields are wrong, or None: only the last piece
    may be empty, and it gives the clip's length."""
    if not it.flags:
        return None
    frames = it.dim0 if it.type == T_AUDIO else it.dim1
    if it.flags & F_MORE and frames == 0:
        return "an empty piece flagged more"
    if it.flags == F_CONT and it.clip_samples == 0:
        return "a last piece with clip_samples 0"
    return None


def cont_problem(p, it):
    """Why the cont piece it does not go on with the piece p, or None:
    the fields every piece repeats, in the spec's order, then the
    offset and clip_samples."""
    for name in ("type", "key", "label", "sample_rate", "split", "dtype"):
        if getattr(it, name) != getattr(p, name):
            return "a cont piece whose %s differs" % name
    dim = "dim1" if it.type == T_AUDIO else "dim0"
    if getattr(it, dim) != getattr(p, dim):
        return "a cont piece whose %s differs" % dim
    if it.type == T_AUDIO and it.offset != p.offset + p.dim0:
        return "a cont piece not where the piece before ends"
    if it.type == T_FEATURES and it.offset <= p.offset:
        return "a cont piece not after the piece before"
    if p.clip_samples and it.clip_samples != p.clip_samples:
        return "a cont piece whose clip_samples differs"
    return None


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
