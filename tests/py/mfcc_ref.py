#!/usr/bin/env python3
"""mfcc_ref.py - a float64 reference of gpumel --mfcc, and its checker.

The bands come from the float64 references of the other tests, written
from the definitions: kaldi_ref.fbank (Kaldi's log filterbank, the log
energy first with --use-energy) or gpumel_ref.melspec (the log-mel
spectrogram of the librosa and torchaudio presets, top_db applied over
the record). The coefficients are scipy.fft.dct(type=2, norm='ortho') of
the log bands along the band axis, the first N kept (librosa.feature.mfcc,
torchaudio's MFCC, torchaudio.compliance.kaldi.mfcc); for Kaldi's bands
each coefficient c is then multiplied by 1 + Q/2 sin(pi c / Q) (Q the
cepstral lifter, 0: none) and, with use_energy, c0 replaced by the log
energy.

    mfcc_ref.py kaldi IN.rec OUT.rec --n-mfcc N [--cepstral-lifter Q]
        [kaldi_ref.py's options] [--rel 1e-3] [--expect-features K]
    mfcc_ref.py mel IN.rec OUT.rec --n-mfcc N --n-fft ... (gpumel_ref.py's
        transform options, every one given) [--librosa] [--rel 1e-3]

check the output header (feature=mfcc, n_mfcc, n_features, mfcc_bands,
cepstral_lifter), every record's metadata against its input, skipped
records, and every coefficient: |out - ref| <= rel times the frame's
largest |coefficient| (the issue's limit, 1e-3), plus half a unit in the
last place of f16 and bf16 output. --librosa also compares with
librosa.feature.mfcc(S=power_to_db(melspectrogram)) as its users call it.
"""
import argparse
import math
import sys

import numpy as np
import scipy.fft

import gpumel_ref as gr
import kaldi_ref as kr
from gpumel_rec import (T_AUDIO, T_FEATURES, T_SKIPPED, DTYPE_NAMES,
                        meta_tuple, read_stream)


def dct(bands, n):
    """[n_frames][n_bands] log bands -> [n_frames][n] coefficients."""
    if bands.shape[0] == 0:
        return np.zeros((0, n))
    return scipy.fft.dct(bands, type=2, norm="ortho", axis=1)[:, :n]


def lifter(c, q):
    if q == 0:
        return c
    i = np.arange(c.shape[1])
    return c * (1.0 + 0.5 * q * np.sin(math.pi * i / q))[None, :]


def kaldi_mfcc(x, sr, o, n, q, clip=0, offset=0):
    """torchaudio.compliance.kaldi.mfcc in float64: [n_frames][n]."""
    f = kr.fbank(x, sr, o, clip, offset)
    r0 = 1 if o["use_energy"] else 0
    c = lifter(dct(f[:, r0:], n), q)
    if o["use_energy"]:
        c[:, 0] = f[:, 0]
    return c


def mel_mfcc(x, p, fb, win, n):
    """DCT of gpumel_ref's log-mel (top_db over the record)."""
    return dct(gr.melspec(x, p, fb, win).T, n)


def librosa_mfcc(x, p, n):
    import librosa
    S = librosa.feature.melspectrogram(
        y=x, sr=p.rate, n_fft=p.n_fft, hop_length=p.hop,
        win_length=p.win_length,
        window={"rect": "boxcar"}.get(p.window, p.window),
        center=p.center, pad_mode=p.pad_mode, power=2.0,
        n_mels=p.n_mels, fmin=p.fmin, fmax=p.fmax,
        htk=p.mel_scale == "htk",
        norm="slaney" if p.norm == "slaney" else None)
    return librosa.feature.mfcc(S=librosa.power_to_db(S, amin=p.amin,
                                                      top_db=p.top_db),
                                n_mfcc=n).T


def header(pairs):
    h = {}
    for k, v in pairs:
        h.setdefault(k, v)
    return h


def compare(got, ref, rel, dtype):
    """Per frame: |got - ref| <= rel * max|ref| (+ half ulp); returns
    (number of bad values, first bad (frame, c), worst ratio)."""
    if ref.size == 0:
        return 0, None, 0.0
    scale = np.abs(ref).max(axis=1, keepdims=True)
    allow = rel * scale + gr.half_ulp(ref, dtype)
    err = np.abs(got - ref)
    bad = ~np.isfinite(got) | (err > allow)
    worst = float((err / np.maximum(scale, 1e-300)).max())
    first = tuple(np.argwhere(bad)[0]) if bad.any() else None
    return int(bad.sum()), first, worst


def check(a):
    pin, items_in, _ = read_stream(a.input)
    pout, items_out, trailer = read_stream(a.output)
    hin, hout = header(pin), header(pout)
    sr = float(hin["sample_rate"])
    fails = []
    n = a.n_mfcc
    want = {"kind": "features", "feature": "mfcc", "n_mfcc": str(n),
            "n_features": str(n),
            "mfcc_bands": "fbank" if a.bands == "kaldi" else "mel"}
    if a.bands == "kaldi":
        o = kr.Options.defaults()
        for k in o:
            v = getattr(a, k)
            if v is not None:
                o[k] = v
        q = 22.0 if a.cepstral_lifter is None else a.cepstral_lifter
        w, s, _ = kr.sizes(sr, o)
        if not math.isclose(float(hout.get("cepstral_lifter", "nan")), q):
            fails.append("header cepstral_lifter %r, want %r" %
                         (hout.get("cepstral_lifter"), q))
        sub = []
        kr.check_header(hout, sr, o, sub)
        # fbank's own header keys, but for what MFCC changes
        fails += [m for m in sub if not m.startswith(("header feature",
                                                      "header n_features"))]
        n_frames = lambda it: len(kr.frame_starts(it.dim0, w, s,  # noqa
                                                  o["snip_edges"]))
        ref_of = lambda it: kaldi_mfcc(kr.kaldi_samples(it), sr, o, n,  # noqa
                                       q, it.clip, it.offset)
    else:
        p = a
        p.top_db = None if a.top_db == "none" else float(a.top_db)
        p.rate = int(sr)
        p.fmax = sr / 2 if a.fmax == "nyquist" else float(a.fmax)
        p.tol_db = 0.01
        fb, win = gr.fbank(p), gr.window(p)
        if "cepstral_lifter" in hout:
            fails.append("header has cepstral_lifter for mel bands")
        try:
            gr.check_header(pout, p)
        except gr.Fail as e:
            fails.append(str(e))
        n_frames = lambda it: gr.n_frames(it.dim0, p)  # noqa
        ref_of = lambda it: mel_mfcc(gr.samples(it), p, fb, win, n)  # noqa
    for k, v in want.items():
        if hout.get(k) != v:
            fails.append("header %s=%r, want %r" % (k, hout.get(k), v))
    dtype = hout.get("dtype", "f32")
    if len(items_in) != len(items_out):
        fails.append("%d records in, %d out" % (len(items_in),
                                                len(items_out)))
    n_feat = n_lib = 0
    worst = worst_lib = 0.0
    for i, (x, y) in enumerate(zip(items_in, items_out)):
        if meta_tuple(x) != meta_tuple(y):
            fails.append("record %d: metadata differ" % i)
            continue
        if x.type == T_SKIPPED:
            if y.type != T_SKIPPED or y.data != x.data:
                fails.append("record %d: skipped record not passed on" % i)
            continue
        nf = n_frames(x)
        if x.type != T_AUDIO or x.dim1 != 1 or x.sample_rate != sr or \
                nf == 0:
            if y.type != T_SKIPPED:
                fails.append("record %d: unusable, not skipped" % i)
            continue
        if y.type != T_FEATURES or (y.dim0, y.dim1) != (n, nf):
            fails.append("record %d: type %d shape %dx%d, want features "
                         "%dx%d" % (i, y.type, y.dim0, y.dim1, n, nf))
            continue
        got = gr.features(y).T
        ref = ref_of(x)
        nbad, first, wst = compare(got, ref, a.rel, dtype)
        n_feat += 1
        worst = max(worst, wst)
        if nbad:
            f, c = first
            fails.append("record %d (%s) frame %d coefficient %d: %r, "
                         "reference %r (%d values off)" % (
                             i, x.key.decode(errors="replace"), f, c,
                             got[f, c], ref[f, c], nbad))
        if a.bands == "mel" and a.librosa:
            nbad, first, wst = compare(got, librosa_mfcc(gr.samples(x), p,
                                                         n), a.rel, dtype)
            n_lib += 1
            worst_lib = max(worst_lib, wst)
            if nbad:
                fails.append("record %d: %d values off librosa's mfcc" %
                             (i, nbad))
    if trailer[1] != n_feat:
        fails.append("trailer counts %d items, %d features records" %
                     (trailer[1], n_feat))
    if a.expect_features is not None and n_feat != a.expect_features:
        fails.append("%d feature records, want %d" % (n_feat,
                                                      a.expect_features))
    for msg in fails[:8]:
        print("FAIL: " + msg)
    if fails:
        print("mfcc_ref check: %d failures" % len(fails))
        return 1
    print("mfcc_ref check: %d feature records, worst |difference| %.3g of "
          "the frame's largest coefficient (limit %g)%s" % (
              n_feat, worst, a.rel,
              ", librosa %.3g over %d records" % (worst_lib, n_lib)
              if n_lib else ""))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bands", choices=["kaldi", "mel"])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--n-mfcc", type=int, required=True)
    ap.add_argument("--rel", type=float, default=1e-3)
    ap.add_argument("--expect-features", type=int)
    ap.add_argument("--cepstral-lifter", type=float)
    ap.add_argument("--librosa", action="store_true")
    kr.add_options(ap)
    # gpumel_ref's transform options (kaldi_ref's window and n_fft are
    # shared: --window, --n-fft, --win-length, --hop-length)
    for name, t in (("--hop", int), ("--center", int), ("--pad-mode", str),
                    ("--n-mels", int), ("--fmin", float), ("--fmax", str),
                    ("--mel-scale", str), ("--norm", str),
                    ("--power", int), ("--log", str), ("--amin", float),
                    ("--top-db", str), ("--dtype", str)):
        ap.add_argument(name, type=t)
    ap.add_argument("--bins", default="rfft", choices=["rfft", "linspace"])
    a = ap.parse_args()
    if a.bands == "mel":
        a.n_fft, a.win_length = int(a.n_fft), int(a.win_length)
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
