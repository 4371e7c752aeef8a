"""rec_stream - the record stream for the tests: melpipe.stream (the
package's reader and writer, python/melpipe/stream, written from
formats/record.md and independent of lib/rec_*.c) plus the tools that
build streams record by record, broken ones on purpose.

The names of melpipe.stream are here as they are there (read_stream,
join, expand, window, record, header_meta, trailer_meta, crc32c, the
constants, Reader, Writer); RecError is its StreamError (code: lib/rec's
name of the error without REC_E_; record, offset, reason). What this
module adds is forging, on melpipe.stream's encoders:

    Builder       gathers records (any bytes, broken ones included) and
                  makes the trailer that matches them
    item_meta()   a data record's metadata with any field, key_len too
    fields()      the keyword arguments of Builder.item() that write an
                  Item again
    zstd_raw_frame()  a zstd frame of raw blocks, built by hand
    record_spans()    where each record of a stream starts, by its framing

The C library is tested against this: both must accept and refuse the
same streams, for the same reason, at the same record.
"""
import os
import struct
import sys

try:
    import melpipe.stream  # noqa: F401 (test-lib.sh puts python/ on the path)
except ImportError:  # a script run by hand, outside the tests
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "..", "python"))

from melpipe.stream import (  # noqa: E402,F401 (names for the tests)
    DEFAULT_MAX_DATA, DTYPE_IDS, DTYPES, F_CONT, F_MORE, F_ZSTD, HDR_SIZE,
    ITEM_META, MAGIC, MAX_META, MAX_SEGMENT, PIECE, SPLITS, T_AUDIO,
    T_FEATURES, T_FWINDOWS, T_HEADER, T_SKIPPED, T_SOURCE, T_TRAILER,
    T_WINDOWS, TYPE_NAMES, WINDOWED,
    VERSION, WIN_PAD, Item, Reader, Writer, crc32c, header_meta, record,
    split_records, trailer_fields, trailer_meta, type_version, window, zstd)
from melpipe.stream import StreamError as RecError  # noqa: E402
from melpipe.stream import expand as _expand  # noqa: E402
from melpipe.stream import join as _join  # noqa: E402
from melpipe.stream import read_stream as _read_stream  # noqa: E402

WINDOW_FIELDS = ("win_len", "win_hop", "n_windows", "win_flags")


def read_stream(data, max_data=DEFAULT_MAX_DATA, sources=False):
    """(header pairs, [Item], trailer dict) of a valid stream given as
    bytes; RecError otherwise. sources: source records as records of
    their own (else on their clip's first record, as src)."""
    return _read_stream(bytes(data), max_data, sources)


def join(items):
    """melpipe.stream.join() as a list."""
    return list(_join(items))


def expand(items):
    """melpipe.stream.expand() as a list: each windows record as the audio
    records its windows stand for, each features-windows record (format
    version 6) as the features records its windows stand for (offset +
    i * win_hop, segment + i, the i-th [dim0][dim1] matrix), in order."""
    return list(_expand(items))


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


def item_meta(clip=0, offset=0, clip_samples=0, segment=0, label=-1,
              sample_rate=16000, split=0, dtype=1, key=b"", dim0=0, dim1=0,
              key_len=None, win_len=None, win_hop=0, n_windows=0,
              win_flags=0):
    """A data record's metadata, by melpipe.stream.Item.meta(): the 48
    fixed bytes and the key, then, when win_len is given (windows and
    features-windows records: the same 16 bytes in both), the 16 bytes
    of window fields. key_len forces the key length field to a wrong
    value."""
    it = Item(T_AUDIO if win_len is None else T_WINDOWS, clip=clip,
              offset=offset, clip_samples=clip_samples, segment=segment,
              label=label, sample_rate=sample_rate, split=split,
              dtype=dtype, key=key, dim0=dim0, dim1=dim1, win_len=win_len
              or 0, win_hop=win_hop, n_windows=n_windows,
              win_flags=win_flags)
    meta = bytearray(it.meta())
    if key_len is not None:
        struct.pack_into("<H", meta, 38, key_len)  # the key_len field
    return bytes(meta)


def fields(it):
    """The keyword arguments of Builder.item() (and item_meta()) that
    write the Item it again."""
    f = dict(clip=it.clip, offset=it.offset, clip_samples=it.clip_samples,
             segment=it.segment, label=it.label,
             sample_rate=it.sample_rate, split=it.split, dtype=it.dtype,
             key=it.key, dim0=it.dim0, dim1=it.dim1, piece=it.flags)
    if it.type in WINDOWED:
        f.update((k, getattr(it, k)) for k in WINDOW_FIELDS)
    return f


def record_spans(data):
    """[(offset, length, type)] of the records of a stream, as far as its
    framing goes (melpipe.stream.split_records), without checking
    anything else."""
    spans, p = [], 0
    try:
        for rec in split_records(data):
            spans.append((p, len(rec), rec[4]))
            p += len(rec)
    except RecError:
        pass
    return spans


class Builder:
    """Gathers records and makes the trailer that matches them."""

    def __init__(self, pairs=(("producer", "make-golden 1"),)):
        self.records = []
        self.kinds = []
        if pairs is not None:
            self.add(record(T_HEADER, header_meta(pairs)), T_HEADER)

    def add(self, rec, rtype=None):
        """Appends the bytes of a record; rtype: the type it counts as in
        the trailer (default: its type byte)."""
        self.records.append(rec)
        self.kinds.append(rec[4] if rtype is None else rtype)
        return self

    def item(self, rtype, payload=b"", zstd_level=0, raw_frame=False,
             check=True, piece=0, version=None, **fields):
        """A data record; for audio/features dims must match payload. A
        windows or features-windows record takes win_len, win_hop,
        n_windows and win_flags too; its window fields are checked
        (against its dims, for a windows record; ValueError,
        melpipe.stream's rules) unless check is false, which builds
        broken ones on purpose. A features-windows record's payload is
        its n_windows [dim0][dim1] matrices, one after the other; its
        version byte is 6. piece: the flags F_MORE and F_CONT of a
        piece of an item; version overrides the version byte."""
        if rtype in WINDOWED:
            name = TYPE_NAMES[rtype]
            if "win_len" not in fields:
                raise ValueError("a %s record needs win_len, win_hop, "
                                 "n_windows (and win_flags)" % name)
            f = {k: v for k, v in fields.items() if k != "key_len"}
            why = Item(rtype, **f).windows_problem()
            if check and why:
                raise ValueError("bad %s record: %s" % (name, why))
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
        """The trailer record of the records so far (trailer_fields),
        any field overridden."""
        args = trailer_fields(rec if k == rec[4] else
                              rec[:4] + bytes([k]) + rec[5:]
                              for rec, k in zip(self.records, self.kinds)
                              if k != T_TRAILER)
        args.update(override)
        return record(T_TRAILER, trailer_meta(**args))

    def bytes(self, trailer=True, **override):
        out = b"".join(self.records)
        return out + self.trailer(**override) if trailer else out
