"""CRC32C (Castagnoli, reflected polynomial 0x82F63B78, initial value and
final XOR 0xFFFFFFFF), the record stream's checksum.

crc32c() uses the crc32c or google-crc32c package where one is installed
and numpy otherwise: short inputs go through a byte table, long ones are
cut into lanes whose registers advance together, one numpy operation per
byte position, and are then folded together with the matrices that shift
a register over a run of zero bytes (the CRC is linear in its register
and its data: crc(c, a + b) = shift(|b|) . crc(c, a) ^ crc(0, b)).
"""
import numpy as np

POLY = 0x82F63B78
LANE = 256          # bytes per lane in the numpy path (a power of two)
SHORT = 4 * LANE    # inputs shorter than this go byte by byte


def _byte_table():
    t = np.zeros(256, np.uint32)
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ POLY if c & 1 else c >> 1
        t[b] = c
    return t


_TABLE = _byte_table()
_TABLE_LIST = [int(v) for v in _TABLE]


def _advance_bytes(c, data):
    """The raw register c (no pre- or post-XOR) after data, byte by byte."""
    t = _TABLE_LIST
    for b in data:
        c = (c >> 8) ^ t[(c ^ b) & 0xFF]
    return c


class _Shift:
    """The linear map that advances a raw register over n zero bytes, as
    four lookup tables (one per byte of the register)."""

    def __init__(self, columns):
        self.columns = columns  # uint32[32]: the image of each bit
        b = np.arange(256)
        self.tables = []
        for k in range(4):
            t = np.zeros(256, np.uint32)
            for i in range(8):
                t ^= np.where((b >> i) & 1, columns[8 * k + i],
                              0).astype(np.uint32)
            self.tables.append(t)

    def __call__(self, v):
        t = self.tables
        return (t[0][v & 0xFF] ^ t[1][(v >> 8) & 0xFF] ^
                t[2][(v >> 16) & 0xFF] ^ t[3][v >> 24])

    def squared(self):
        return _Shift(self(self.columns))


def _one_zero_byte():
    bits = np.array([1 << j for j in range(32)], np.uint32)
    return _Shift(_TABLE[bits & 0xFF] ^ (bits >> 8))


_shifts = []  # _shifts[k] advances over LANE * 2^k zero bytes


def _shift(k):
    if not _shifts:
        s = _one_zero_byte()
        for _ in range(LANE.bit_length() - 1):
            s = s.squared()
        _shifts.append(s)
    while len(_shifts) <= k:
        _shifts.append(_shifts[-1].squared())
    return _shifts[k]


def _advance_lanes(c, body):
    """The raw register c after body, len(body) a multiple of LANE."""
    lanes = np.frombuffer(body, np.uint8).reshape(-1, LANE)
    n = lanes.shape[0]
    width = 1 << (n - 1).bit_length()
    # zero lanes in front change nothing: a zero register stays zero
    reg = np.zeros(width, np.uint32)
    reg[width - n] = c
    cols = np.zeros((LANE, width), np.uint32)
    cols[:, width - n:] = lanes.T
    t = _TABLE
    for j in range(LANE):
        reg = t[(reg ^ cols[j]) & 0xFF] ^ (reg >> 8)
    k = 0
    while reg.size > 1:
        reg = _shift(k)(reg[0::2]) ^ reg[1::2]
        k += 1
    return int(reg[0])


def _crc32c_numpy(data, crc=0):
    data = memoryview(data).cast("B")
    c = crc ^ 0xFFFFFFFF
    if len(data) < SHORT:
        return _advance_bytes(c, data) ^ 0xFFFFFFFF
    head = len(data) % LANE
    c = _advance_bytes(c, data[:head])
    return _advance_lanes(c, data[head:]) ^ 0xFFFFFFFF


def _pick():
    try:
        import crc32c as mod  # the crc32c package (ICRAR)
        return lambda data, crc=0: mod.crc32c(bytes(data), crc)
    except ImportError:
        pass
    try:
        import google_crc32c as mod
        return lambda data, crc=0: mod.extend(crc, bytes(data))
    except ImportError:
        pass
    return _crc32c_numpy


def crc32c(data, crc=0):
    """CRC32C of data (bytes-like), continuing from crc, the CRC of what
    came before (0 to start)."""
    return _impl(data, crc)


_impl = _pick()
