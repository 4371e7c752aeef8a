"""melpipe.stream - the melpipe record stream (formats/record.md, format
versions 1 to 3) in Python: a reader that checks every rule in the
spec's order and says where and why a stream is refused, as lib/rec
does; a writer; windows records expanded into the audio records they
stand for, and items in pieces joined.

    from melpipe import stream
    with open("feats.rec", "rb") as f:
        r = stream.Reader(f)
        for it in stream.join(r):        # records, pieces joined
            print(it.clip, it.segment, it.array().shape)

    python -m melpipe.stream dump FILE   # print and check a stream
"""
from ._crc import crc32c
from ._format import (DTYPE_IDS, DTYPES, F_CONT, F_MORE, F_ZSTD, MAGIC,
                      SPLITS, T_AUDIO, T_FEATURES, T_HEADER, T_SKIPPED,
                      T_TRAILER, T_WINDOWS, TYPE_NAMES, VERSION, WIN_PAD,
                      type_version)
from ._rules import Item
from .items import expand, join, window
from .reader import Reader, StreamError, read_stream
from .writer import Writer, header_meta, record, trailer_meta

__all__ = ["Reader", "StreamError", "read_stream", "Writer", "Item",
           "record", "header_meta", "trailer_meta", "expand", "join",
           "window", "crc32c", "type_version", "MAGIC", "VERSION", "DTYPES",
           "DTYPE_IDS", "SPLITS", "TYPE_NAMES", "T_HEADER", "T_AUDIO",
           "T_FEATURES", "T_SKIPPED", "T_TRAILER", "T_WINDOWS", "F_ZSTD",
           "F_MORE", "F_CONT", "WIN_PAD"]
