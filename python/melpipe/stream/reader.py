"""Reading a record stream with every check of formats/record.md, in the
spec's order, from a file, a pipe or bytes, one record at a time."""
import io
import os
import struct

from ._crc import crc32c
from ._format import (DEFAULT_MAX_DATA, F_SHARED, F_ZSTD, HDR_SIZE, MAGIC,
                      MAX_META, MAX_RINGS, PIECE, RING_META, SHAREABLE,
                      SHARED_REF, T_FWINDOWS, T_HEADER, T_RING, T_SOURCE,
                      T_TRAILER, T_WINDOWS,
                      TRAILER_META, TYPE_NAMES, VERSION, ZstdError,
                      piece_flag_names, type_name, zstd)
from ._rules import (StreamState, _key_ok, item_problem, parse_item,
                     piece_flags_problem, source_pairs_problem)


class StreamError(Exception):
    """A stream that breaks a rule. code: lib/rec's name of the error
    without REC_E_ (MAGIC, VERSION, FORMAT, TOOBIG, TRUNC, CRC, ZSTD,
    ORDER, TRAILING); record: the record at fault, numbered from 0 (the
    header); offset: its first byte; reason: why. str() is "record N at
    byte B: reason", as recdump says it after the file's name."""

    def __init__(self, code, record, offset, reason):
        super().__init__("record %d at byte %d: %s"
                         % (record, offset, reason))
        self.code, self.record, self.offset = code, record, offset
        self.reason = reason


class Reader:
    """Iterating a Reader gives the stream's data records (Item), checked;
    header (a list of (key str, value bytes)) is set once the first
    record is read, trailer (a dict) once the stream has ended, which
    it checks too (the input must end after the trailer). A source record
    (format version 4: the input file as wavcat found it) is checked and
    handed out as the src of its clip's first data record, or, with
    sources=True, as a record of its own (type T_SOURCE).

        with open("feats.rec", "rb") as f:
            r = Reader(f)
            for it in r:
                x = it.array()

    src: a binary file object, or bytes. max_data: the payload cap."""

    def __init__(self, src, max_data=DEFAULT_MAX_DATA, sources=False):
        if isinstance(src, (bytes, bytearray, memoryview)):
            src = io.BytesIO(bytes(src))
        self.f = src
        self.max_data = max_data
        self.pos = 0
        self.nrec = 0
        self.header = None
        self.trailer = None
        self.state = StreamState()
        self.sources = sources
        self._src = None       # a source record waiting for its clip's
        self.rings = set()     # ring ids offered (never attached here)

    def __iter__(self):
        while self.trailer is None:
            it = self.next_record()
            if it is None:
                continue
            if it.type == T_SOURCE and not self.sources:
                self._src = it
                continue
            if self._src is not None:
                it.src, self._src = self._src, None
            yield it

    def pairs(self, key):
        """The values of every header pair named key, decoded (UTF-8)."""
        return [v.decode("utf-8", "surrogateescape")
                for k, v in self.header or () if k == key]

    def fail(self, code, reason):
        raise StreamError(code, self.nrec, self.pos, reason)

    def _read(self, n):
        return _read_full(self.f, n)

    def _bad_magic(self, head):
        self.fail("MAGIC", "bad magic %s (not a record stream, or framing "
                  "lost)" % " ".join("%02x" % c for c in head[:4]))

    def _short_header(self, head):
        if head[:4] != MAGIC[:len(head)]:
            self._bad_magic(head)
        if not head and self.nrec == 0:
            self.fail("TRUNC", "empty input (no header record)")
        if not head:
            n = self.state.counts[0]
            self.fail("TRUNC", "input ended before the trailer (after %d "
                      "data %s)" % (n, "record" if n == 1 else "records"))
        self.fail("TRUNC", "input ended inside a record header (%d of %d "
                  "bytes)" % (len(head), HDR_SIZE))

    def _check_head(self, head):
        rtype, flags, version, reserved, mlen, dlen, rlen, crc = \
            struct.unpack_from("<BBBBIIII", head, 4)
        if head[:4] != MAGIC:
            self._bad_magic(head)
        if version > VERSION:
            self.fail("VERSION", "format version %d is newer than this "
                      "reader's version %d" % (version, VERSION))
        if version == 0:
            self.fail("FORMAT", "invalid format version 0")
        if rtype not in TYPE_NAMES:
            self.fail("FORMAT", "unknown record type %d" % rtype)
        if rtype == T_WINDOWS and version < 2:
            self.fail("FORMAT", "a windows record marked format version "
                      "%d (windows records are version 2)" % version)
        if rtype == T_SOURCE and version < 4:
            self.fail("FORMAT", "a source record marked format version "
                      "%d (source records are version 4)" % version)
        if rtype == T_RING and version < 5:
            self.fail("FORMAT", "a ring record marked format version "
                      "%d (ring records are version 5)" % version)
        if rtype == T_FWINDOWS and version < 6:
            self.fail("FORMAT", "a features-windows record marked format "
                      "version %d (features-windows records are version "
                      "6)" % version)
        self._check_flags(rtype, flags, version)
        if reserved:
            self.fail("FORMAT", "reserved byte is 0x%02x, not 0" % reserved)
        if mlen > MAX_META:
            self.fail("TOOBIG", "metadata length %d over the cap of %d"
                      % (mlen, MAX_META))
        if dlen > self.max_data:
            self.fail("TOOBIG", "payload length %d over the cap of %d"
                      % (dlen, self.max_data))
        if rlen > self.max_data:
            self.fail("TOOBIG", "raw payload length %d over the cap of %d"
                      % (rlen, self.max_data))
        if flags & F_SHARED:
            if flags & F_ZSTD:
                self.fail("FORMAT", "a shared record flagged zstd (shared "
                          "payloads are raw)")
            if dlen != SHARED_REF:
                self.fail("FORMAT", "a shared record with %d bytes of "
                          "reference (must be %d)" % (dlen, SHARED_REF))
        elif not flags & F_ZSTD and rlen != dlen:
            self.fail("FORMAT", "raw length %d differs from stored length "
                      "%d in an uncompressed record" % (rlen, dlen))
        return rtype, flags, mlen, dlen, rlen, crc

    def _check_flags(self, rtype, flags, version):
        if flags & ~(F_ZSTD | PIECE | F_SHARED):
            self.fail("FORMAT", "unknown flags 0x%02x" % flags)
        if flags and rtype in (T_HEADER, T_TRAILER, T_RING):
            self.fail("FORMAT", "a %s record with flags 0x%02x (%s records "
                      "have flags 0)" % (type_name(rtype), flags,
                                         "ring" if rtype == T_RING
                                         else "header and trailer"))
        if flags & F_SHARED and (rtype not in SHAREABLE or version < 5):
            self.fail("FORMAT", "the shared flag " +
                      ("on a record type whose payload is never shared"
                       if rtype not in SHAREABLE else
                       "in a record marked format version below 5"))
        why = piece_flags_problem(rtype, flags & PIECE)
        if why:
            self.fail("FORMAT", why)
        if flags & PIECE and version < 3:
            self.fail("FORMAT", "%s in a record marked format version %d "
                      "(pieces are version 3)"
                      % (piece_flag_names(flags), version))

    def _frame(self):
        """The next record's fields, metadata and payload, checked up to
        its decompression."""
        head = self._read(HDR_SIZE)
        if len(head) < HDR_SIZE:
            self._short_header(head)
        rtype, flags, mlen, dlen, rlen, crc = self._check_head(head)
        body = self._read(mlen + dlen)
        if len(body) < mlen + dlen:
            self.fail("TRUNC", "input ended inside the record (%d of %d "
                      "bytes)" % (HDR_SIZE + len(body),
                                  HDR_SIZE + mlen + dlen))
        if flags & F_SHARED:
            ring = struct.unpack_from("<I", body, mlen)[0]
            self.fail("FORMAT", "reference to ring %d, which %s" % (
                ring, "this reader did not attach" if ring in self.rings
                else "no ring record offered"))
        got = crc32c(body, crc32c(head[:20] + b"\0\0\0\0"))
        if got != crc:
            self.fail("CRC", "checksum mismatch (stored 0x%08x, computed "
                      "0x%08x)" % (crc, got))
        meta, data = body[:mlen], body[mlen:]
        if flags & F_ZSTD:
            try:
                data = zstd().decompress(data, rlen)
            except ZstdError as e:
                self.fail("ZSTD", str(e))
        return rtype, flags, meta, data, HDR_SIZE + mlen + dlen, crc

    def next_record(self):
        """Reads and checks one record: returns the Item of a data or
        source record, None for the header and the trailer."""
        if self.trailer is not None:
            return None
        rtype, flags, meta, data, total, crc = self._frame()
        if self.nrec == 0 and rtype != T_HEADER:
            self.fail("ORDER", "the first record is of type %s, not a "
                      "header" % type_name(rtype))
        if self.nrec > 0 and rtype == T_HEADER:
            self.fail("ORDER", "a second header record")
        if rtype == T_RING:
            self._ring(meta, len(data))
            self.pos += total
            return None  # no data record: not counted, not in the checksum
        it = None
        if rtype == T_HEADER:
            self._header(meta, len(data))
        elif rtype == T_TRAILER:
            why = self.state.end_problem()
            if why:
                self.fail("ORDER", why)
            self._trailer(meta, len(data))
        else:
            it = self._item(rtype, flags, meta, data)
        if rtype != T_TRAILER:
            self.state.note_crc(crc)
        self.pos += total
        self.nrec += 1
        if rtype == T_TRAILER:
            self._expect_end()
        return it

    def _header(self, meta, raw_len):
        if raw_len:
            self.fail("FORMAT", "header record with a payload of %d bytes"
                      % raw_len)
        if meta and meta[-1] != 0:
            self.fail("FORMAT", "header metadata does not end with a NUL")
        parts = meta.split(b"\0")[:-1] if meta else []
        pairs = []
        for i in range(0, len(parts), 2):
            if not _key_ok(parts[i]):
                self.fail("FORMAT", "header pair %d has an invalid key (not "
                          "[a-z0-9_]+)" % (i // 2))
            if i + 1 >= len(parts):
                self.fail("FORMAT", "header key '%s' has no value"
                          % parts[i].decode())
            pairs.append((parts[i].decode(), parts[i + 1]))
        self.header = pairs

    def _ring(self, meta, raw_len):
        """A ring record's offer, checked and never taken: a reader of
        files has no ring to attach."""
        if len(meta) != RING_META or raw_len:
            self.fail("FORMAT", "ring record with %d bytes of metadata and "
                      "%d of payload (must be %d and 0)"
                      % (len(meta), raw_len, RING_META))
        if struct.unpack_from("<I", meta, 44)[0]:
            self.fail("FORMAT", "ring record reserved field is not 0")
        ring = struct.unpack_from("<I", meta, 20)[0]
        if ring == 0:
            self.fail("FORMAT", "ring record with ring id 0")
        if ring in self.rings:
            self.fail("FORMAT", "ring %d offered twice" % ring)
        if len(self.rings) == MAX_RINGS:
            self.fail("FORMAT", "more than %d rings offered" % MAX_RINGS)
        self.rings.add(ring)

    def _trailer(self, meta, raw_len):
        if len(meta) != TRAILER_META or raw_len:
            self.fail("FORMAT", "trailer with %d bytes of metadata and %d of "
                      "payload (must be %d and 0)"
                      % (len(meta), raw_len, TRAILER_META))
        n_rec, n_items, n_skip, csum, res = struct.unpack("<QQQII", meta)
        if res:
            self.fail("FORMAT", "trailer reserved field is not 0")
        bad = self.state.trailer_problem(n_rec, n_items, n_skip, csum)
        if bad:
            self.fail(*bad)
        self.trailer = dict(n_records=n_rec, n_items=n_items,
                            n_skipped=n_skip, checksum=csum)

    def _item(self, rtype, flags, meta, data):
        it, why = parse_item(rtype, flags, meta)
        if why is None:
            why = item_problem(it, len(data))
        if why is None and rtype == T_SOURCE:
            why = source_pairs_problem(data)
        if why:
            self.fail("FORMAT", why)
        bad = self.state.order_problem(it)
        if bad:
            self.fail(*bad)
        self.state.note_item(it)
        it.data, it.index = data, self.nrec
        return it

    def _expect_end(self):
        rest = self._read(4)
        if rest:
            self.fail("TRAILING", "data after the trailer%s"
                      % (" (another stream follows: streams run together "
                         "are not merged)" if rest == MAGIC else ""))


def _read_full(f, n):
    """n bytes of f, fewer only at its end (a pipe may give less a read),
    read in steps of at most 1 MiB so that a length forged huge costs no
    more memory than the input holds."""
    parts, got = [], 0
    while got < n:
        b = f.read(min(n - got, 1 << 20))
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def split_records(src):
    """Each record of src (bytes, or a binary file object read to its
    end) as its bytes, cut by the framing alone: the magic, meta_len and
    data_len of each record header; nothing else is checked (no CRC, no
    rules), so that a tool can copy, drop, reorder or patch the records
    of a stream, broken ones included. Raises StreamError (MAGIC or TRUNC,
    naming the record and byte) where the framing itself breaks: bytes
    that are not a record header, or an input that ends inside a
    record."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        src = io.BytesIO(bytes(src))
    nrec = pos = 0
    while True:
        head = _read_full(src, HDR_SIZE)
        if not head:
            return
        if head[:4] != MAGIC[:len(head)]:
            raise StreamError("MAGIC", nrec, pos, "bad magic %s" % " ".join(
                "%02x" % c for c in head[:4]))
        if len(head) < HDR_SIZE:
            raise StreamError("TRUNC", nrec, pos, "input ended inside a "
                              "record header (%d of %d bytes)"
                              % (len(head), HDR_SIZE))
        mlen, dlen = struct.unpack_from("<II", head, 8)
        body = _read_full(src, mlen + dlen)
        if len(body) < mlen + dlen:
            raise StreamError("TRUNC", nrec, pos, "input ended inside the "
                              "record (%d of %d bytes)"
                              % (HDR_SIZE + len(body),
                                 HDR_SIZE + mlen + dlen))
        yield head + body
        nrec += 1
        pos += HDR_SIZE + mlen + dlen


def read_stream(src, max_data=DEFAULT_MAX_DATA, sources=False):
    """(header pairs, [Item], trailer dict) of a whole valid stream, from
    bytes, a binary file object or a path; StreamError otherwise. Source
    records as Reader gives them (sources)."""
    if isinstance(src, (str, os.PathLike)):
        with open(src, "rb") as f:
            return read_stream(f, max_data, sources)
    r = Reader(src, max_data, sources)
    items = list(r)
    return r.header, items, r.trailer

