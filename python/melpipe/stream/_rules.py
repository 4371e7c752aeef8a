"""The rules a record stream follows (formats/record.md), as the checks a
reader and a writer share: a data record's fields, windows, pieces, the
order of records, and the running counts and checksum the trailer must
match. Each check returns None or the reason, worded as lib/rec words it
(tests/golden/README quotes those reasons).
"""
import struct

from ._crc import crc32c
from ._format import (DTYPES, F_CONT, F_MORE, ITEM_META, MAX_SEGMENT,
                      PIECE, T_AUDIO, T_FEATURES, T_FWINDOWS, T_SKIPPED,
                      T_SOURCE, T_WINDOWS, WIN_PAD, WINDOWED, WINDOWS_META,
                      dtype_name, piece_flag_names, type_name)

ITEM_FORMAT = "<QQQIiIBBHII"


class Item:
    """A data record: its metadata fields, key (bytes), payload (bytes,
    decompressed: the samples or features, or a skipped record's reason),
    piece flags (F_MORE, F_CONT), and the window fields (0 but in windows
    and features-windows records). index: its record number in the
    stream (the header is 0).
    A source record (type T_SOURCE, format version 4) is an Item too: its
    clip, label, split and key, and its payload key NUL value NUL pairs
    (pairs(), source()). src: the source record of the clip, on the
    clip's first data record, where a Reader hands source records out
    that way (sources=False); a Writer writes it before the record."""

    __slots__ = ("type", "flags", "clip", "offset", "clip_samples",
                 "segment", "label", "sample_rate", "split", "dtype",
                 "key_len", "dim0", "dim1", "key", "data", "index",
                 "win_len", "win_hop", "n_windows", "win_flags",
                 "cut_short", "pieces", "src")

    def __init__(self, type=T_AUDIO, data=b"", **fields):
        self.type, self.data, self.flags = type, bytes(data), 0
        self.clip = self.offset = self.clip_samples = self.segment = 0
        self.label, self.sample_rate, self.split = -1, 0, 0
        self.dtype = self.dim0 = self.dim1 = 0
        self.key, self.index = b"", None
        self.win_len = self.win_hop = self.n_windows = self.win_flags = 0
        self.cut_short, self.pieces, self.src = False, 1, None
        for k, v in fields.items():
            setattr(self, k, v)
        if isinstance(self.key, str):
            self.key = self.key.encode()
        self.key_len = len(self.key)

    def copy(self, **changes):
        it = Item.__new__(Item)
        for name in Item.__slots__:
            setattr(it, name, getattr(self, name))
        for k, v in changes.items():
            setattr(it, k, v)
        return it

    def last_segment(self):
        """The segment index of the last window the record holds (a
        windows or features-windows record occupies segment to segment
        + n_windows - 1)."""
        if self.type in WINDOWED and self.n_windows:
            return self.segment + self.n_windows - 1
        return self.segment

    def windows_problem(self):
        """Why the window fields of a windows record do not fit its dim0
        sample frames (formats/record.md, Windows record), or those of a
        features-windows record are wrong (Features-windows record), or
        None; the checks a reader makes, in its order."""
        return windows_problem(self)

    def pairs(self):
        """A source record's pairs, [(key str, value bytes)], in order."""
        parts = self.data.split(b"\0")[:-1] if self.data else []
        return [(parts[i].decode(), parts[i + 1])
                for i in range(0, len(parts) - 1, 2)]

    def source(self):
        """A source record's pairs as a dict (the first of a repeated
        key), values decoded: source_rate, source_channels and
        source_frames as int where they are decimals, others as str."""
        out = {}
        for k, v in self.pairs():
            if k in out:
                continue
            s = v.decode("utf-8", "surrogateescape")
            out[k] = int(s) if s.isdigit() else s
        return out

    def array(self):
        """The payload as a numpy array: [n_mels, n_frames] for features,
        [frames, channels] for audio and windows records, [n_windows,
        n_mels, n_frames] for features-windows records (window i's
        features at [i]); bf16 widened to float32 (exactly)."""
        import numpy as np
        if self.type == T_SKIPPED:
            raise ValueError("a skipped record holds a reason, not values")
        if self.type == T_SOURCE:
            raise ValueError("a source record holds pairs, not values")
        if self.dtype == 4:
            u = np.frombuffer(self.data, "<u2").astype(np.uint32) << 16
            v = u.view(np.float32)
        else:
            v = np.frombuffer(self.data, {1: "<i2", 2: "<f4",
                                          3: "<f2"}[self.dtype])
        if self.type == T_FWINDOWS:
            return v.reshape(self.n_windows, self.dim0, self.dim1)
        return v.reshape(self.dim0, self.dim1)

    def meta(self):
        """The record's metadata bytes."""
        meta = struct.pack(ITEM_FORMAT, self.clip, self.offset,
                           self.clip_samples, self.segment, self.label,
                           self.sample_rate, self.split, self.dtype,
                           len(self.key), self.dim0, self.dim1) + self.key
        if self.type in WINDOWED:
            meta += struct.pack("<IIII", self.win_len, self.win_hop,
                                self.n_windows, self.win_flags)
        return meta

    def __repr__(self):
        return ("Item(%s clip=%d segment=%d offset=%d dims=%dx%d key=%r)"
                % (type_name(self.type), self.clip, self.segment,
                   self.offset, self.dim0, self.dim1, self.key))


def parse_item(rtype, flags, meta):
    """(Item, None) from a data record's metadata, or (None, reason) when
    its length is wrong."""
    if len(meta) < ITEM_META:
        return None, ("%s record with %d bytes of metadata (at least %d)"
                      % (type_name(rtype), len(meta), ITEM_META))
    it = Item.__new__(Item)
    it.type, it.flags, it.data, it.index = rtype, flags & PIECE, b"", None
    it.cut_short, it.pieces, it.src = False, 1, None
    (it.clip, it.offset, it.clip_samples, it.segment, it.label,
     it.sample_rate, it.split, it.dtype, it.key_len, it.dim0,
     it.dim1) = struct.unpack_from(ITEM_FORMAT, meta)
    wsize = WINDOWS_META if rtype in WINDOWED else 0
    if len(meta) != ITEM_META + it.key_len + wsize:
        return None, ("metadata length %d is not 48 + key length %d%s"
                      % (len(meta), it.key_len, " + 16" if wsize else ""))
    it.key = bytes(meta[ITEM_META:ITEM_META + it.key_len])
    it.win_len = it.win_hop = it.n_windows = it.win_flags = 0
    if wsize:
        (it.win_len, it.win_hop, it.n_windows,
         it.win_flags) = struct.unpack_from("<IIII", meta,
                                            ITEM_META + it.key_len)
    return it, None


def windows_problem(it):
    """Why a windows record's description does not fit its samples, or a
    features-windows record's window fields are wrong: win_len, win_hop
    and n_windows at least 1, win_flags bit 0 alone, the last segment at
    most 2^32 - 1 (and, for windows records only, every window inside
    the samples)."""
    if it.win_len == 0 or it.win_hop == 0 or it.n_windows == 0:
        return ("%s record with window length %d, hop %d and %d "
                "windows (none may be 0)"
                % (type_name(it.type), it.win_len, it.win_hop,
                   it.n_windows))
    if it.win_flags & ~WIN_PAD:
        return "unknown windows flags 0x%x" % it.win_flags
    if it.n_windows - 1 > MAX_SEGMENT - it.segment:
        return ("%d windows from segment %d run past segment index "
                "2^32 - 1" % (it.n_windows, it.segment))
    if it.type == T_FWINDOWS:
        return None  # dim0 is n_features: no samples to fit
    last = (it.n_windows - 1) * it.win_hop
    if last >= it.dim0 or (not it.win_flags & WIN_PAD and
                           last + it.win_len > it.dim0):
        return ("%d windows of %d every %d do not fit %d samples%s"
                % (it.n_windows, it.win_len, it.win_hop, it.dim0,
                   "" if it.win_flags & WIN_PAD
                   else " (and the pad flag is clear)"))
    return None


def _key_ok(k):
    return len(k) > 0 and all(0x61 <= c <= 0x7A or 0x30 <= c <= 0x39
                              or c == 0x5F for c in k)


def source_fields_problem(it):
    """Why a source record's fields are wrong: it sets clip, label,
    split and key only."""
    for name in ("offset", "clip_samples", "segment", "sample_rate",
                 "dtype", "dim0", "dim1"):
        v = getattr(it, name)
        if v:
            return ("source record with %s %d (only clip, label, split "
                    "and key are set: the others are 0)" % (name, v))
    return None


def source_pairs_problem(data):
    """Why a source record's payload is not key NUL value NUL pairs."""
    if not data:
        return None
    if data[-1] != 0:
        return "source payload does not end with a NUL"
    parts = data.split(b"\0")[:-1]
    for i in range(0, len(parts), 2):
        if not _key_ok(parts[i]):
            return ("source pair %d has an invalid key (not [a-z0-9_]+)"
                    % (i // 2))
        if i + 1 >= len(parts):
            return ("source key '%s' has no value"
                    % parts[i].decode("utf-8", "replace"))
    return None


def item_problem(it, raw_len):
    """Why a data record's fields are wrong (but for pieces and order)."""
    if it.split > 3:
        return "invalid split %d" % it.split
    if b"\0" in it.key:
        return "key contains a NUL byte"
    if it.type == T_SOURCE:
        return source_fields_problem(it)
    if it.type == T_SKIPPED:
        if it.dtype or it.dim0 or it.dim1:
            return ("skipped record with dtype %d and dims %dx%d (must be "
                    "0)" % (it.dtype, it.dim0, it.dim1))
        return None
    if it.dtype not in DTYPES:
        return "invalid dtype %d" % it.dtype
    if it.type == T_FWINDOWS:
        # n_windows matrices [dim0][dim1]; Python's integers do not
        # overflow, so this is the spec's product computed without
        # overflow
        if it.n_windows * it.dim0 * it.dim1 * DTYPES[it.dtype][1] \
                != raw_len:
            return ("payload of %d bytes does not match %d windows of "
                    "%dx%d %s" % (raw_len, it.n_windows, it.dim0, it.dim1,
                                  dtype_name(it.dtype)))
        return windows_problem(it)
    if it.dim0 * it.dim1 * DTYPES[it.dtype][1] != raw_len:
        return ("payload of %d bytes does not match %dx%d %s"
                % (raw_len, it.dim0, it.dim1, dtype_name(it.dtype)))
    if it.type == T_WINDOWS:
        return windows_problem(it)
    return None


def piece_flags_problem(rtype, flags):
    """Why piece flags may not be on a record of rtype."""
    if flags and rtype not in (T_AUDIO, T_FEATURES):
        return ("%s on a %s record (only audio and features records come "
                "in pieces)" % (piece_flag_names(flags), type_name(rtype)))
    return None


def piece_problem(it):
    """Why a piece's own fields are wrong: only the last piece of an item
    may be empty, and it gives the clip's length."""
    if not it.flags:
        return None
    n = it.dim0 if it.type == T_AUDIO else it.dim1
    if it.flags & F_MORE and n == 0:
        return ("a piece of 0 %s flagged more (only the last piece of an "
                "item may be empty)"
                % ("samples" if it.type == T_AUDIO else "frames"))
    if it.flags == F_CONT and it.clip_samples == 0:
        return ("the last piece of an item with clip_samples 0 (it gives "
                "the clip's length)")
    return None


def cont_problem(p, it):
    """Why the cont piece it does not go on with the piece p before it."""
    def differs(field, now, then):
        return ("a piece flagged cont whose %s (%s) differs from the piece "
                "before (%s)" % (field, now, then))
    if it.type != p.type:
        return differs("type", type_name(it.type), type_name(p.type))
    if it.key != p.key:
        return "a piece flagged cont whose key differs from the piece before"
    for name in ("label", "sample_rate", "split"):
        if getattr(it, name) != getattr(p, name):
            return differs(name, getattr(it, name), getattr(p, name))
    if it.dtype != p.dtype:
        return differs("dtype", dtype_name(it.dtype), dtype_name(p.dtype))
    dim = "dim1" if it.type == T_AUDIO else "dim0"
    if getattr(it, dim) != getattr(p, dim):
        return differs(dim, getattr(it, dim), getattr(p, dim))
    if it.type == T_AUDIO and it.offset != p.offset + p.dim0:
        return ("a piece flagged cont at offset %d, not where the piece "
                "before ends (%d + %d)" % (it.offset, p.offset, p.dim0))
    if it.type == T_FEATURES and it.offset <= p.offset:
        return ("a piece flagged cont at offset %d, not after the piece "
                "before (%d)" % (it.offset, p.offset))
    if p.clip_samples and it.clip_samples != p.clip_samples:
        return differs("clip_samples", it.clip_samples, p.clip_samples)
    return None


class StreamState:
    """What the rules need of the records before: the last clip and
    segment, the open item (the piece before, flagged more), the counts
    and the stream checksum the trailer must match."""

    def __init__(self):
        self.prev = None       # (clip, last segment) of the record before
        self.more = None       # the piece before, when flagged more
        self.counts = [0, 0, 0]  # records (data, source), items, skipped
        self.csum = 0
        self.source = None     # the clip of the record before, a source

    def source_problem(self, it):
        """("ORDER", reason) when the source record it may not come
        here."""
        if self.more is not None:
            why = ("source record of clip %d after a piece of clip %d "
                   "segment %d flagged more (a source record comes before "
                   "its clip's first data record)"
                   % (it.clip, self.more.clip, self.more.segment))
        elif self.source == it.clip:
            why = ("a second source record for clip %d (one per clip at "
                   "most)" % it.clip)
        elif self.source is not None:
            why = ("source record of clip %d right after the source record "
                   "of clip %d (a data record of its clip must follow a "
                   "source record)" % (it.clip, self.source))
        elif self.prev is not None and it.clip <= self.prev[0]:
            why = ("source record of clip %d after a record of clip %d (a "
                   "source record comes before its clip's first data "
                   "record)" % (it.clip, self.prev[0]))
        else:
            return None
        return "ORDER", why

    def order_problem(self, it):
        """("FORMAT" or "ORDER", reason) when it may not come here."""
        if it.type == T_SOURCE:
            return self.source_problem(it)
        p = self.more
        if p is None and not it.flags:
            return self._after(it)
        why = piece_problem(it)
        if why:
            return "FORMAT", why
        if p is None and it.flags & F_CONT:
            return "ORDER", ("a piece flagged cont (clip %d segment %d) "
                             "without a piece flagged more before it"
                             % (it.clip, it.segment))
        if p is None:
            return self._after(it)
        if ((it.type != T_SKIPPED and not it.flags & F_CONT)
                or it.clip != p.clip or it.segment != p.segment):
            return "ORDER", (
                "%s %s of clip %d segment %d after a piece of clip %d "
                "segment %d flagged more (a piece flagged cont or a "
                "skipped record of that clip and segment must follow)"
                % (type_name(it.type), "piece flagged cont"
                   if it.flags & F_CONT else "record", it.clip, it.segment,
                   p.clip, p.segment))
        if it.type == T_SKIPPED:
            return None
        why = cont_problem(p, it)
        return ("ORDER", why) if why else None

    def _after(self, it):
        if self.source is not None:
            if it.clip == self.source:
                return None
            return "ORDER", ("clip %d segment %d after the source record "
                             "of clip %d (a data record of its clip must "
                             "follow a source record)"
                             % (it.clip, it.segment, self.source))
        if self.prev is None:
            return None
        pc, ps = self.prev
        if it.clip > pc or (it.clip == pc and it.segment > ps):
            return None
        return "ORDER", ("clip %d segment %d after clip %d segment %d "
                         "(records must be in clip and segment order)"
                         % (it.clip, it.segment, pc, ps))

    def end_problem(self):
        """Why the stream may not end here (an item's pieces go on, or a
        source record waits for its clip's records)."""
        if self.source is not None:
            return ("the stream ends after the source record of clip %d (a "
                    "data record of its clip must follow a source record)"
                    % self.source)
        if self.more is None:
            return None
        return ("the stream ends after a piece of clip %d segment %d "
                "flagged more (its item goes on)"
                % (self.more.clip, self.more.segment))

    def note_item(self, it):
        if it.type == T_SOURCE:
            self.source = it.clip
            self.counts[0] += 1
            return
        self.source = None
        self.prev = (it.clip, it.last_segment())
        self.more = it if it.flags & F_MORE else None
        self.counts[0] += 1
        self.counts[2 if it.type == T_SKIPPED else 1] += 1

    def note_crc(self, crc):
        self.csum = crc32c(struct.pack("<I", crc), self.csum)

    def trailer_problem(self, n_records, n_items, n_skipped, checksum):
        """("FORMAT" or "CRC", reason) when the trailer does not match."""
        if [n_records, n_items, n_skipped] != self.counts:
            return "FORMAT", ("trailer counts %d records (%d items, %d "
                              "skipped), the stream has %d (%d, %d)"
                              % ((n_records, n_items, n_skipped)
                                 + tuple(self.counts)))
        if checksum != self.csum:
            return "CRC", ("stream checksum mismatch (stored 0x%08x, "
                           "computed 0x%08x): records missing, duplicated "
                           "or reordered" % (checksum, self.csum))
        return None
