"""Writing a record stream: records byte by byte (any field may be forced
wrong, to make broken streams on purpose), the trailer that matches a run
of records, and a Writer that checks each record it writes with the
reader's rules and ends the stream with its trailer."""
import struct

from ._crc import crc32c
from ._format import (BODY_TYPES, DEFAULT_MAX_DATA, F_ZSTD, MAGIC, PIECE,
                      T_HEADER, T_SKIPPED, T_SOURCE, T_TRAILER, type_version,
                      zstd)
from ._rules import (Item, StreamState, item_problem, piece_flags_problem,
                     source_pairs_problem)


def header_meta(pairs):
    """key NUL value NUL for each (key, value), str or bytes."""
    out = bytearray()
    for k, v in pairs:
        out += _b(k) + b"\0" + _b(v) + b"\0"
    return bytes(out)


def trailer_meta(n_records, n_items, n_skipped, checksum, reserved=0):
    return struct.pack("<QQQII", n_records, n_items, n_skipped, checksum,
                       reserved)


def trailer_fields(records):
    """The trailer's fields (n_records, n_items, n_skipped, checksum, as
    keyword arguments of trailer_meta) that match records: the bytes of
    each record before the trailer, header included, in stream order
    (each record's first 24 bytes are enough: its type and crc). A source
    record counts in n_records only; records of a type that is neither
    a data nor a source record (a header, or a forged type) count in the
    checksum only."""
    counts = dict(n_records=0, n_items=0, n_skipped=0)
    csum = 0
    for rec in records:
        rtype = rec[4]
        if rtype in BODY_TYPES:
            counts["n_records"] += 1
        if rtype == T_SKIPPED:
            counts["n_skipped"] += 1
        elif rtype in BODY_TYPES and rtype != T_SOURCE:
            counts["n_items"] += 1
        csum = crc32c(bytes(rec[20:24]), csum)
    return dict(counts, checksum=csum)


def record(rtype, meta=b"", data=b"", flags=0, raw_len=None, version=None,
           reserved=0, meta_len=None, data_len=None, crc=None, magic=MAGIC):
    """One record's bytes. data is the payload as stored; raw_len
    defaults to len(data), version to the lowest that defines the record
    (type_version); the CRC is computed over what is written unless crc
    is given."""
    if version is None:
        version = type_version(rtype, flags)
    head = bytearray(magic)
    head += struct.pack("<BBBBIIII", rtype, flags, version, reserved,
                        len(meta) if meta_len is None else meta_len,
                        len(data) if data_len is None else data_len,
                        len(data) if raw_len is None else raw_len, 0)
    if crc is None:
        crc = crc32c(data, crc32c(bytes(head) + meta))
    head[20:24] = struct.pack("<I", crc)
    return bytes(head) + meta + bytes(data)


def _b(s):
    return s if isinstance(s, bytes) else str(s).encode()


class Writer:
    """Writes a valid stream to the binary file object f: the header at
    once, then each data record given, then the trailer at close() (or
    at the end of a with block that raised nothing). A record that breaks
    a rule (formats/record.md) raises ValueError and is not written.
    zstd_level > 0 compresses payloads where that makes them smaller, as
    melpipe's programs do. check=False writes every record as given,
    checking none of the rules (but the payload cap), and ends the stream
    with the trailer that counts them: a way to make streams that break
    the rules on purpose (a reader's or a stage's tests). A stream cut
    short is one whose Writer is never closed.

        with Writer(f, [("kind", "features"), ("dtype", "f32")]) as w:
            w.item(T_FEATURES, x.astype("<f4").tobytes(), clip=0,
                   dtype=2, dim0=32, dim1=x.shape[1], key="a.wav")
    """

    def __init__(self, f, pairs=(), zstd_level=0,
                 max_data=DEFAULT_MAX_DATA, check=True):
        self.f = f
        self.level = zstd_level
        self.max_data = max_data
        self.check = check
        self.state = StreamState()
        self.closed = False
        self._put(record(T_HEADER, header_meta(pairs)))

    def _put(self, rec):
        self.f.write(rec)
        self.state.note_crc(struct.unpack_from("<I", rec, 20)[0])

    def item(self, rtype, data=b"", **fields):
        """Writes a data record of rtype with payload data (bytes) and the
        fields of Item (clip, offset, ..., flags for a piece; win_len,
        win_hop, n_windows, win_flags for a windows or features-windows
        record, whose payload is then n_windows [dim0][dim1] matrices);
        a source record's data may be its pairs, [(key, value)]."""
        if rtype == T_SKIPPED and isinstance(data, str):
            data = data.encode()
        if rtype == T_SOURCE and not isinstance(data, (bytes, bytearray)):
            data = header_meta(data)
        return self.write(Item(rtype, data, **fields))

    def write(self, it):
        """Writes the data record it (an Item, as Reader gives them): its
        source record (it.src) first, where it has one."""
        if self.closed:
            raise ValueError("the stream is closed")
        if it.src is not None and it.type != T_SOURCE:
            self.write(it.src)
        data = bytes(it.data)
        if len(data) > self.max_data:
            raise ValueError("payload of %d bytes over the cap of %d"
                             % (len(data), self.max_data))
        it = it.copy(key=bytes(it.key), key_len=len(it.key))
        if self.check:
            why = self._type_problem(it)
            if why is None:
                why = item_problem(it, len(data))
            if why is None and it.type == T_SOURCE:
                why = source_pairs_problem(data)
            bad = ("FORMAT", why) if why else self.state.order_problem(it)
            if bad:
                raise ValueError(bad[1])
        flags, stored = it.flags & PIECE, data
        if self.level and data:
            z = zstd().compress(data, self.level)
            if len(z) < len(data):
                flags, stored = flags | F_ZSTD, z
        self.state.note_item(it)
        self._put(record(it.type, it.meta(), stored, flags=flags,
                         raw_len=len(data)))

    @staticmethod
    def _type_problem(it):
        """Why the record it, by its type and piece flags, is no data or
        source record a stream may hold: a type that is neither, or the
        more or cont flag on a record that comes in no pieces (windows,
        features-windows, skipped and source records; the reader refuses
        those flags in its flags check)."""
        if it.type not in BODY_TYPES:
            return "invalid record type %d" % it.type
        return piece_flags_problem(it.type, it.flags & PIECE)

    def close(self):
        """Writes the trailer (refused while an item's pieces go on,
        unless check is off)."""
        if self.closed:
            return
        why = self.state.end_problem() if self.check else None
        if why:
            raise ValueError(why)
        n, items, skipped = self.state.counts
        self.f.write(record(T_TRAILER, trailer_meta(n, items, skipped,
                                                    self.state.csum)))
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
