#!/usr/bin/env python3
"""Check wavcat's samples against a float64 reference made from the
source files, independently of the program.

wavcat_check.py samples STREAM ROOT [--tol T] [--edge E] [--lsb L]
    For every audio record: the source ROOT/KEY (or KEY when absolute or
    ROOT is '-') read with soundfile in float64, channels averaged,
    resampled with scipy.signal.resample_poly (Kaiser window, long filter)
    when its rate is not the stream's, cut or padded to
    round(n * rate / file rate) (halves up), then to the stream's
    duration. Compared with the record:
      - not resampled, s16: exactly the reference rounded to nearest
        (halves to even) and clipped (or within L LSB, default 0);
      - not resampled, f32: the reference within float32 rounding;
      - resampled, or lossy (Vorbis, Opus, MP3: soundfile's decoders may
        differ a little from the system's libsndfile):
        |record - reference| < T (default 1e-3 of full scale)
        except E samples (default 64, times the upsampling factor) at
        each end, plus 1 LSB for s16;
      - padding is exact zeros, and the length is exact.
    Prints one line per record (key, length, max error) and exits 1 on
    the first mismatch.

wavcat_check.py which_set NAME... --val V --test T
    TensorFlow's which_set() for each name, one split per line.
"""
import argparse
import hashlib
import math
import os
import re
import sys
from fractions import Fraction

import numpy as np
import scipy.signal
import soundfile as sf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wavcat_readrec as rr  # noqa: E402

MAX_NUM_WAVS_PER_CLASS = 2 ** 27 - 1


def which_set(filename, validation_percentage, testing_percentage):
    """tensorflow/examples/speech_commands/input_data.py, as published."""
    base_name = os.path.basename(filename)
    hash_name = re.sub(r'_nohash_.*$', '', base_name)
    hash_name_hashed = hashlib.sha1(
        hash_name.encode("utf-8", "surrogateescape")).hexdigest()
    percentage_hash = ((int(hash_name_hashed, 16) %
                        (MAX_NUM_WAVS_PER_CLASS + 1)) *
                       (100.0 / MAX_NUM_WAVS_PER_CLASS))
    if percentage_hash < validation_percentage:
        result = 'validation'
    elif percentage_hash < (testing_percentage + validation_percentage):
        result = 'testing'
    else:
        result = 'training'
    return result


def out_len(n, rate_out, rate_in):
    """n * rate_out / rate_in rounded to nearest, halves up."""
    return (n * rate_out + rate_in // 2) // rate_in


def reference(path, rate):
    """float64 mono at the stream rate, and 0 when not resampled, else
    the upsampling factor rounded up (1 when downsampling)."""
    x, r = sf.read(path, dtype="float64", always_2d=True)
    x = x.mean(axis=1)
    if r == rate:
        return x, 0
    f = Fraction(rate, r)
    y = scipy.signal.resample_poly(x, f.numerator, f.denominator,
                                   window=("kaiser", 10.0))
    n = out_len(len(x), rate, r)
    y = np.concatenate([y, np.zeros(max(0, n - len(y)))])[:n]
    return y, max(1, math.ceil(rate / r))


def to_s16(x):
    return np.clip(np.rint(x * 32768.0), -32768, 32767)


def check_record(r, root, rate, dtype, duration, a):
    key = os.fsdecode(r.key)
    path = key if root == "-" or os.path.isabs(key) else \
        os.path.join(root, key)
    ref, resampled = reference(path, rate)
    info = sf.info(path)
    n = len(ref)
    want_len = duration if duration else n
    got = r.samples.astype(np.float64)
    if len(got) != want_len:
        return "length %d, want %d" % (len(got), want_len)
    if r.clip_samples != want_len or r.sample_rate != rate or r.dim1 != 1:
        return "clip_samples/sample_rate/dim1 fields wrong"
    m = min(n, want_len)
    if np.any(got[m:] != 0):
        return "padding is not zeros"
    got, ref = got[:m], ref[:m]
    # lossy codecs: libsndfile here and soundfile's own may differ a bit
    lossy = info.format in ("OGG", "MP3")
    if dtype == "s16" and not resampled and not lossy:
        err = np.max(np.abs(got - to_s16(ref)), initial=0)
        return None if err <= a.lsb else "max error %g LSB" % err, err
    if dtype == "f32" and not resampled and not lossy:
        err = np.max(np.abs(got - ref), initial=0)
        return None if err <= 6e-8 * max(1.0, np.max(np.abs(ref),
                                                      initial=0)) \
            else "max error %g" % err, err
    scale = 32768.0 if dtype == "s16" else 1.0
    # the filters' edge effects last some input samples: more output
    # samples when upsampling
    e = a.edge * resampled
    inner = slice(e, max(e, m - e))
    err = np.max(np.abs(got[inner] / scale - ref[inner]), initial=0)
    tol = a.tol + (1.0 / 32768 if dtype == "s16" else 0.0)
    return None if err < tol else "max error %g >= %g" % (err, tol), err


def samples(a):
    header, recs, _ = rr.load(a.stream)
    rate = int(rr.header_values(header, "sample_rate")[0])
    dtype = rr.header_values(header, "dtype")[0]
    d = rr.header_values(header, "duration")
    duration = int(d[0]) if d else 0
    n_audio = 0
    for r in recs:
        if r.type != rr.T_AUDIO:
            continue
        n_audio += 1
        res = check_record(r, a.root, rate, dtype, duration, a)
        if isinstance(res, str):
            res = (res, float("nan"))
        why, err = res
        print("%r %d %g" % (r.key, len(r.samples), err))
        if why:
            sys.exit("%r: %s" % (r.key, why))
    if n_audio == 0:
        sys.exit("no audio records")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("samples")
    s.add_argument("stream")
    s.add_argument("root")
    s.add_argument("--tol", type=float, default=1e-3)
    s.add_argument("--edge", type=int, default=64)
    s.add_argument("--lsb", type=float, default=0)
    w = sub.add_parser("which_set")
    w.add_argument("names", nargs="+")
    w.add_argument("--val", type=float, required=True)
    w.add_argument("--test", type=float, required=True)
    a = ap.parse_args()
    if a.cmd == "samples":
        samples(a)
    else:
        for n in a.names:
            print(which_set(n, a.val, a.test))


if __name__ == "__main__":
    main()
