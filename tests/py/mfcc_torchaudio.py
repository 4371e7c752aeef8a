#!/usr/bin/env python3
"""mfcc_torchaudio.py - gpumel --mfcc against the real torchaudio, where
torch and torchaudio are installed (the GPU machine).

    mfcc_torchaudio.py kaldi IN.rec OUT.rec --n-mfcc N
        [--cepstral-lifter Q] [kaldi_ref.py's options]
    mfcc_torchaudio.py mel IN.rec OUT.rec --n-mfcc N --n-fft N --hop N
        --n-mels N [--top-db X|none]
    (both: [--torch-device cpu|cuda] [--rel 1e-3])

kaldi: torchaudio.compliance.kaldi.mfcc(waveform, num_ceps=N, ...) with
the same options, fed each audio record as its users do (s16 samples as
they are, float samples times 32768; float32). mel: torchaudio.transforms.
MFCC(sample_rate, n_mfcc=N, melkwargs=dict(n_fft, hop_length, n_mels))
with its own defaults otherwise (gpumel --preset torchaudio), its top_db
(80) or none. Compares OUT (gpumel's output for IN): |difference| <= rel
times the frame's largest |coefficient| (the issue's limit, 1e-3).
Records shorter than a frame are left out (torchaudio refuses them).
Prints one summary line; exit status 1 on a difference, 77 without
torchaudio.
"""
import argparse
import sys

import numpy as np

import kaldi_ref as kr
import kaldi_torchaudio as kt
from gpumel_rec import T_FEATURES, read_stream
from gpumel_ref import samples


def check(a):
    try:
        import torch
        import torchaudio
        from torchaudio.compliance import kaldi as tak
    except ImportError as e:
        print("mfcc_torchaudio: no torchaudio: %s" % e)
        return 77
    pin, items_in, _ = read_stream(a.input)
    _, items_out, _ = read_stream(a.output)
    sr = float(kr.header(pin)["sample_rate"])
    if a.bands == "kaldi":
        o = kr.Options.defaults()
        for k in o:
            v = getattr(a, k)
            if v is not None:
                o[k] = v
        kw = kt.ta_kwargs(o, sr)
        kw["num_ceps"] = a.n_mfcc
        if a.cepstral_lifter is not None:
            kw["cepstral_lifter"] = a.cepstral_lifter
        shortest, _, _ = kr.sizes(sr, o)

        def ta(x):
            t = torch.tensor(kr.kaldi_samples(x), dtype=torch.float32,
                             device=a.torch_device)[None, :]
            return tak.mfcc(t, **kw).double().cpu().numpy()
    else:
        top = None if a.top_db == "none" else float(a.top_db)
        tf = torchaudio.transforms.MFCC(
            sample_rate=int(sr), n_mfcc=a.n_mfcc,
            melkwargs=dict(n_fft=a.n_fft, hop_length=a.hop,
                           n_mels=a.n_mels)).to(a.torch_device)
        if top is None:
            tf.amplitude_to_DB.top_db = None
        shortest = a.n_fft // 2 + 1   # reflect padding needs more

        def ta(x):
            t = torch.tensor(samples(x), dtype=torch.float32,
                             device=a.torch_device)
            return tf(t).double().cpu().numpy().T
    n_feat = n_short = fails = 0
    worst = 0.0
    for i, (x, y) in enumerate(zip(items_in, items_out)):
        if y.type != T_FEATURES:
            continue
        if x.dim0 < shortest:
            n_short += 1
            continue
        ref = ta(x)
        got = np.frombuffer(y.data, "<f4").astype(np.float64).reshape(
            y.dim0, y.dim1).T
        if ref.shape != got.shape:
            print("FAIL: record %d: shape %r, torchaudio %r" %
                  (i, got.shape, ref.shape))
            fails += 1
            continue
        scale = np.abs(ref).max(axis=1, keepdims=True)
        err = np.abs(got - ref)
        bad = ~np.isfinite(got) | (err > a.rel * scale)
        n_feat += 1
        worst = max(worst, float((err / np.maximum(scale, 1e-300)).max()))
        if bad.any():
            f, c = np.argwhere(bad)[0]
            if fails < 5:
                print("FAIL: record %d frame %d coefficient %d: %r, "
                      "torchaudio %r (%d values off)" % (
                          i, f, c, got[f, c], ref[f, c], int(bad.sum())))
            fails += 1
    if fails or n_feat == 0:
        print("mfcc_torchaudio check: %d records differ of %d" %
              (fails, n_feat))
        return 1
    print("mfcc_torchaudio check (%s): %d feature records (%d shorter "
          "left out), worst |difference| %.3g of the frame's largest "
          "coefficient (limit %g)" % (a.bands, n_feat, n_short, worst,
                                      a.rel))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bands", choices=["kaldi", "mel"])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--n-mfcc", type=int, required=True)
    ap.add_argument("--rel", type=float, default=1e-3)
    ap.add_argument("--torch-device", default="cpu")
    ap.add_argument("--cepstral-lifter", type=float)
    ap.add_argument("--hop", type=int)
    ap.add_argument("--n-mels", type=int)
    ap.add_argument("--top-db", default="80")
    kr.add_options(ap)
    return check(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
