"""The record format's constants and names (formats/record.md), and zstd.

zstd comes from the system's libzstd through ctypes, or from the
zstandard package where libzstd cannot be loaded.
"""
import ctypes
import ctypes.util

MAGIC = b"MELP"
VERSION = 6          # the newest format version this module knows
HDR_SIZE = 24
ITEM_META = 48
WINDOWS_META = 16    # the window fields after the key of a windows or
                     # features-windows record
TRAILER_META = 32
MAX_META = 1 << 20
DEFAULT_MAX_DATA = 1 << 28
MAX_SEGMENT = 0xFFFFFFFF

(T_HEADER, T_AUDIO, T_FEATURES, T_SKIPPED, T_TRAILER, T_WINDOWS,
 T_SOURCE, T_RING, T_FWINDOWS) = range(1, 10)
# (the names are lib/rec's, rec_type_name(): recdump prints them)
TYPE_NAMES = {1: "header", 2: "audio", 3: "features", 4: "skipped",
              5: "trailer", 6: "windows", 7: "source", 8: "ring",
              9: "features-windows"}
# the records that carry the 16 bytes of window fields after their key
WINDOWED = (T_WINDOWS, T_FWINDOWS)
# Version 5: a ring of shared memory offered in a pipe between two stages
# of one build, and data records whose payload is a reference into it.
# This module reads files and never attaches a ring: a ring record is
# checked and passed over, a reference refused (a file never holds one).
RING_META = 48
SHARED_REF = 16
MAX_RINGS = 8
SHAREABLE = (2, 3, 6)  # audio, features, windows
# Version 6: a features-windows record holds the features of n_windows
# windows of one clip, standing for n_windows features records; it comes
# in no pieces and is never shared (zstd is its only flag).
DATA_TYPES = (T_AUDIO, T_FEATURES, T_SKIPPED, T_WINDOWS, T_FWINDOWS)
# the records between header and trailer, which the trailer's n_records
# counts: data records and source records (version 4)
BODY_TYPES = DATA_TYPES + (T_SOURCE,)
F_ZSTD = 1
F_MORE = 2           # a piece of an item that goes on in the next record
F_CONT = 4           # a piece that goes on with the record before's item
PIECE = F_MORE | F_CONT
F_SHARED = 8         # the payload is a reference into a ring (version 5)
WIN_PAD = 1          # windows flag: windows past the samples are zeros
DTYPES = {1: ("s16", 2), 2: ("f32", 4), 3: ("f16", 2), 4: ("bf16", 2)}
DTYPE_IDS = {name: i for i, (name, _) in DTYPES.items()}
SPLITS = ("none", "training", "validation", "testing")


def type_name(t):
    return TYPE_NAMES.get(t, "unknown")


def dtype_name(d):
    return DTYPES[d][0] if d in DTYPES else "unknown"


def type_version(rtype, flags=0):
    """The version byte a record is written with: the lowest format
    version that defines it (6 for a features-windows record, 5 for a
    ring record and a shared one, 4 for a source record, 3 for a piece,
    2 for windows, else 1)."""
    if rtype == T_FWINDOWS:
        return 6
    if rtype == T_RING or flags & F_SHARED:
        return 5
    if rtype == T_SOURCE:
        return 4
    if flags & PIECE:
        return 3
    return 2 if rtype == T_WINDOWS else 1


def piece_flag_names(flags):
    if flags & PIECE == PIECE:
        return "the more and cont flags"
    return "the more flag" if flags & F_MORE else "the cont flag"


class ZstdError(Exception):
    """A payload that is not exactly one zstd frame of the size given."""


class _LibZstd:
    def __init__(self):
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        lib = ctypes.CDLL(name)
        size_t, vp = ctypes.c_size_t, ctypes.c_void_p
        for fn, res, args in (
                ("ZSTD_compress", size_t, [vp, size_t, vp, size_t,
                                           ctypes.c_int]),
                ("ZSTD_decompress", size_t, [vp, size_t, vp, size_t]),
                ("ZSTD_compressBound", size_t, [size_t]),
                ("ZSTD_isError", ctypes.c_uint, [size_t]),
                ("ZSTD_getErrorName", ctypes.c_char_p, [size_t]),
                ("ZSTD_findFrameCompressedSize", size_t, [vp, size_t])):
            getattr(lib, fn).restype = res
            getattr(lib, fn).argtypes = args
        self.lib = lib

    def compress(self, data, level):
        cap = self.lib.ZSTD_compressBound(len(data))
        dst = ctypes.create_string_buffer(cap)
        n = self.lib.ZSTD_compress(dst, cap, bytes(data), len(data), level)
        if self.lib.ZSTD_isError(n):
            raise ZstdError("zstd compression failed")
        return dst.raw[:n]

    def _error(self, n):
        return self.lib.ZSTD_getErrorName(n).decode()

    def decompress(self, data, raw_len):
        data = bytes(data)
        lib = self.lib
        n = lib.ZSTD_findFrameCompressedSize(data, len(data))
        if lib.ZSTD_isError(n):
            raise ZstdError("compressed payload is not a zstd frame: %s"
                            % self._error(n))
        if n != len(data):
            raise ZstdError("compressed payload has %d bytes after its "
                            "zstd frame" % (len(data) - n))
        dst = ctypes.create_string_buffer(max(raw_len, 1))
        got = lib.ZSTD_decompress(dst, raw_len, data, len(data))
        if lib.ZSTD_isError(got):
            raise ZstdError("payload does not decompress to %d bytes: %s"
                            % (raw_len, self._error(got)))
        if got != raw_len:
            raise ZstdError("payload decompresses to %d bytes, raw length "
                            "says %d" % (got, raw_len))
        return dst.raw[:raw_len]


class _PyZstd:
    """The zstandard package, where libzstd is not to be found."""

    def __init__(self):
        import zstandard
        self.z = zstandard

    def compress(self, data, level):
        return self.z.ZstdCompressor(level=level).compress(bytes(data))

    def decompress(self, data, raw_len):
        d = self.z.ZstdDecompressor().decompressobj()
        try:
            out = d.decompress(bytes(data))
        except self.z.ZstdError as e:
            raise ZstdError("compressed payload is not a zstd frame: %s"
                            % e) from None
        if not d.eof:
            raise ZstdError("compressed payload is not a zstd frame: "
                            "it ends inside the frame")
        if d.unused_data:
            raise ZstdError("compressed payload has %d bytes after its "
                            "zstd frame" % len(d.unused_data))
        if len(out) != raw_len:
            raise ZstdError("payload decompresses to %d bytes, raw length "
                            "says %d" % (len(out), raw_len))
        return out


_zstd = None


def zstd():
    """The zstd codec: compress(data, level), decompress(data, raw_len)."""
    global _zstd
    if _zstd is None:
        try:
            _zstd = _LibZstd()
        except OSError:
            try:
                _zstd = _PyZstd()
            except ImportError:
                raise RuntimeError(
                    "zstd-compressed records need libzstd (Debian: apt "
                    "install libzstd1) or the zstandard package (pip "
                    "install zstandard)") from None
    return _zstd
