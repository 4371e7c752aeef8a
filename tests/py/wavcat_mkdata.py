#!/usr/bin/env python3
"""Make audio files for the wavcat tests.

wavcat_mkdata.py tone OUT [--rate R] [--channels C] [--frames N]
                 [--subtype S] [--format F] [--seed K] [--amp A]
    A deterministic signal: per channel two sines below --fmax Hz plus a
    little noise (--noise 0 for none: resampling tests keep everything
    inside the passband so that two good resamplers agree). --over N sets
    N frames to 1.5 (float files only keep that). Written with soundfile
    (format from the extension unless --format is given).

wavcat_mkdata.py bad KIND OUT
    An unusable input of the given kind (see BAD below).

wavcat_mkdata.py silence OUT [--rate R] [--frames N]
    All-zero 16-bit mono.
"""
import argparse
import struct
import sys

import numpy as np
import soundfile as sf


def signal(frames, rate, channels, seed, amp, fmax=None, noise=0.0):
    """Two sines per channel below fmax Hz (default 0.12 of the rate),
    plus white noise of relative level noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / rate
    x = np.empty((frames, channels))
    fmax = fmax or 0.12 * rate
    for c in range(channels):
        f1, f2 = rng.uniform(0.05, 1.0, 2) * fmax
        x[:, c] = amp * (0.6 * np.sin(2 * np.pi * f1 * t + c) +
                         0.3 * np.sin(2 * np.pi * f2 * t))
        x[:, c] += amp * noise * rng.standard_normal(frames)
    return np.clip(x, -1.0, 1.0 - 2.0 ** -15)


def tone(a):
    x = signal(a.frames, a.rate, a.channels, a.seed, a.amp, a.fmax,
               a.noise)
    if a.over:   # a stretch beyond full scale, for clipping tests
        x[len(x) // 2:len(x) // 2 + a.over, :] = 1.5
    kw = {}
    if a.format:
        kw["format"] = a.format
    sf.write(a.out, x, a.rate, subtype=a.subtype, **kw)


def wav_bytes(data, channels=1, rate=16000, bits=16, fmt_tag=1,
              data_size=None, extra=b""):
    """A RIFF WAVE file with a hand-made header: any field can lie."""
    align = channels * bits // 8
    fmt = struct.pack("<HHIIHH", fmt_tag, channels, rate, rate * align,
                      align, bits)
    size = len(data) if data_size is None else data_size
    body = (b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + extra +
            b"data" + struct.pack("<I", size) + data)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def pcm16(n=1600, seed=1):
    x = signal(n, 16000, 1, seed, 0.5)[:, 0]
    return (np.round(x * 32768).astype("<i2")).tobytes()


def flac_bytes(path):
    x = signal(48000, 16000, 1, 7, 0.5)
    sf.write(path, x, 16000, subtype="PCM_16", format="FLAC")
    with open(path, "rb") as f:
        return bytearray(f.read())


def ogg_bytes(path):
    x = signal(48000, 16000, 1, 8, 0.5)
    sf.write(path, x, 16000, format="OGG", subtype="VORBIS")
    with open(path, "rb") as f:
        return bytearray(f.read())


def bad(kind, out):
    """Returns the bytes of an unusable file of the given kind."""
    if kind == "empty":
        return b""
    if kind == "garbage":
        return b"this is not audio, only text in a .wav file\n" * 20
    if kind == "wav_data_too_big":      # header claims more than the file
        return wav_bytes(pcm16(), data_size=len(pcm16()) + 10000)
    if kind == "wav_data_zero":         # a writer that never finished
        return wav_bytes(pcm16(), data_size=0)
    if kind == "wav_data_ffff":         # the streaming writers' "unknown"
        return wav_bytes(pcm16(), data_size=0xFFFFFFFF)
    if kind == "wav_zero_frames":       # finished, and holding no samples
        return wav_bytes(b"")
    if kind == "wav_odd_length":        # half a 16-bit sample at the end
        return wav_bytes(pcm16() + b"\x01") + b"\x00"
    if kind == "wav_truncated":         # cut inside the data chunk
        return wav_bytes(pcm16(3200))[:3000]
    if kind in ("wav_nan", "wav_inf"):
        x = np.full(800, 0.25, dtype="<f4")
        x[400] = np.nan if kind == "wav_nan" else np.inf
        return wav_bytes(x.tobytes(), bits=32, fmt_tag=3)
    if kind == "wav_channels0":
        return wav_bytes(pcm16(), channels=0)
    if kind == "wav_channels300":
        return wav_bytes(b"\0" * 600 * 10, channels=300)
    if kind == "wav_rate0":
        return wav_bytes(pcm16(), rate=0)
    if kind == "wav_rate_huge":
        return wav_bytes(pcm16(), rate=1000000)
    if kind == "flac_crc":              # a flipped byte inside a frame
        b = flac_bytes(out)
        b[len(b) // 2] ^= 0x55
        return bytes(b)
    if kind == "flac_truncated":
        b = flac_bytes(out)
        return bytes(b[:len(b) // 2])
    if kind == "flac_unknown_length":   # STREAMINFO total samples = 0
        b = flac_bytes(out)
        # STREAMINFO starts at 8; total samples: low 4 bits of byte 21
        # and bytes 22..25 of the file.
        b[21] &= 0xF0
        b[22:26] = b"\0\0\0\0"
        return bytes(b)
    if kind == "ogg_truncated":
        b = ogg_bytes(out)
        return bytes(b[:len(b) // 2])
    if kind == "ogg_garbage_tail":
        b = ogg_bytes(out)
        n = len(b)
        b[n // 3:] = bytes((i * 37) & 0xFF for i in range(n - n // 3))
        return bytes(b)
    sys.exit("unknown kind " + kind)


BAD = ["empty", "garbage", "wav_data_too_big", "wav_data_zero",
       "wav_odd_length", "wav_truncated", "wav_nan", "wav_inf",
       "wav_channels0", "wav_channels300", "wav_rate0", "wav_rate_huge",
       "flac_crc", "flac_truncated", "flac_unknown_length", "ogg_truncated",
       "ogg_garbage_tail", "wav_data_ffff", "wav_zero_frames"]


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tone")
    t.add_argument("out")
    t.add_argument("--rate", type=int, default=16000)
    t.add_argument("--channels", type=int, default=1)
    t.add_argument("--frames", type=int, default=16000)
    t.add_argument("--subtype", default="PCM_16")
    t.add_argument("--format", default=None)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--amp", type=float, default=0.5)
    t.add_argument("--fmax", type=float, default=None)
    t.add_argument("--noise", type=float, default=0.02)
    t.add_argument("--over", type=int, default=0)
    b = sub.add_parser("bad")
    b.add_argument("kind", choices=BAD + ["list"])
    b.add_argument("out", nargs="?")
    s = sub.add_parser("silence")
    s.add_argument("out")
    s.add_argument("--rate", type=int, default=16000)
    s.add_argument("--frames", type=int, default=16000)
    a = ap.parse_args()
    if a.cmd == "tone":
        tone(a)
    elif a.cmd == "silence":
        sf.write(a.out, np.zeros(a.frames), a.rate, subtype="PCM_16")
    elif a.kind == "list":
        print("\n".join(BAD))
    else:
        data = bad(a.kind, a.out)
        with open(a.out, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
