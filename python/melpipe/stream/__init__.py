"""melpipe.stream - the melpipe record stream (formats/record.md, format
versions 1 to 6) in Python: a reader that checks every rule in the
spec's order and says where and why a stream is refused, as lib/rec
does; a writer; windows records expanded into the audio records they
stand for, features-windows records (version 6) into the features
records they stand for, and items in pieces joined. (Version 5's ring
records are checked and passed over; a reference into a ring, which
only a pipe between two stages of one build carries, is refused.)

    from melpipe import stream
    with open("feats.rec", "rb") as f:
        r = stream.Reader(f)
        for it in stream.expand(stream.join(r)):  # a record a window
            print(it.clip, it.segment, it.array().shape)

    python -m melpipe.stream dump FILE   # print and check a stream

Making streams that break a rule on purpose (a reader's tests): record()
writes one record with any header field forced, Writer(check=False)
writes records without checking them, split_records() cuts a stream
into its records by the framing alone, and trailer_fields() gives the
trailer that matches a run of records.
"""
from ._crc import crc32c
from ._format import (DEFAULT_MAX_DATA, DTYPE_IDS, DTYPES, F_CONT, F_MORE,
                      F_ZSTD, HDR_SIZE, ITEM_META, MAGIC, MAX_META,
                      MAX_SEGMENT, PIECE, SPLITS, T_AUDIO, T_FEATURES,
                      T_FWINDOWS, T_HEADER, T_RING, T_SKIPPED, T_SOURCE,
                      T_TRAILER, T_WINDOWS, F_SHARED, WINDOWED,
                      TYPE_NAMES,
                      VERSION, WIN_PAD, type_version, zstd)
from ._rules import Item
from .items import expand, join, window
from .reader import Reader, StreamError, read_stream, split_records
from .writer import (Writer, header_meta, record, trailer_fields,
                     trailer_meta)

__all__ = ["Reader", "StreamError", "read_stream", "split_records",
           "Writer", "Item", "record", "header_meta", "trailer_meta",
           "trailer_fields", "expand", "join", "window", "crc32c", "zstd",
           "type_version", "MAGIC", "VERSION", "HDR_SIZE", "ITEM_META",
           "MAX_META", "MAX_SEGMENT", "DEFAULT_MAX_DATA", "DTYPES",
           "DTYPE_IDS", "SPLITS", "TYPE_NAMES", "T_HEADER", "T_AUDIO",
           "T_FEATURES", "T_SKIPPED", "T_TRAILER", "T_WINDOWS", "T_SOURCE",
           "T_RING", "T_FWINDOWS", "WINDOWED", "F_SHARED",
           "F_ZSTD",
           "F_MORE", "F_CONT", "PIECE", "WIN_PAD"]
