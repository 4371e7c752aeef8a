#!/usr/bin/env python3
"""kaldi_torchaudio.py - gpumel --preset kaldi against the real
torchaudio.compliance.kaldi.fbank, where torch and torchaudio are
installed (the GPU machine).

    kaldi_torchaudio.py check IN.rec OUT.rec [kaldi_ref.py's options]
        [--torch-device cpu|cuda] [--tol 0.0023]

feeds torchaudio each audio record of IN as its users do for Kaldi's
scale (s16 samples as they are, float samples times 32768; float32),
with the same options (Kaldi's names as kaldi_ref.py takes them, sizes in
milliseconds), and compares OUT's matrices (gpumel's output for IN, CPU or
CUDA backend) with torchaudio's: |difference| <= tol in natural log (0.01
dB), but where kaldi_ref.py's float64 reference calls a band weak (below
what float32 FFTs resolve); there both must be within 10 times its floor.
Records shorter than a frame are left out (torchaudio refuses them, even
without snip_edges, where it mirrors the ends once only, and Kaldi as often
as needed), as is --dither (torch's own random numbers). Prints one
summary line; exit status 1 on a difference, 77 when torchaudio cannot be
imported.
"""
import argparse
import sys

import numpy as np

import kaldi_ref as kr
from gpumel_rec import T_FEATURES, read_stream

WINDOWS = {"hann": "hanning", "rect": "rectangular"}


def ta_kwargs(o, sr):
    return dict(num_mel_bins=o["num_mel_bins"],
                frame_length=o["frame_length_ms"],
                frame_shift=o["frame_shift_ms"],
                snip_edges=bool(o["snip_edges"]), dither=0.0,
                preemphasis_coefficient=o["preemphasis"],
                remove_dc_offset=bool(o["remove_dc_offset"]),
                window_type=WINDOWS.get(o["window"], o["window"]),
                round_to_power_of_two=bool(o["round_to_power_of_two"]),
                low_freq=o["low_freq"], high_freq=o["high_freq"],
                use_energy=bool(o["use_energy"]),
                energy_floor=o["energy_floor"],
                raw_energy=bool(o["raw_energy"]),
                sample_frequency=sr)


def check(a):
    try:
        import torch
        from torchaudio.compliance import kaldi as tak
    except ImportError as e:
        print("kaldi_torchaudio: no torchaudio.compliance.kaldi: %s" % e)
        return 77
    o = kr.Options.defaults()
    for k in o:
        v = getattr(a, k)
        if v is not None:
            o[k] = v
    if o["dither"] or o["win_length"] or o["hop_length"] or o["n_fft"]:
        print("kaldi_torchaudio: no --dither, sizes in milliseconds only")
        return 2
    pin, items_in, _ = read_stream(a.input)
    _, items_out, _ = read_stream(a.output)
    sr = float(kr.header(pin)["sample_rate"])
    w, _, _ = kr.sizes(sr, o)
    kw = ta_kwargs(o, sr)
    r0 = 1 if o["use_energy"] else 0
    n_feat = n_vals = n_weak = n_short = fails = 0
    worst = 0.0
    for i, (x, y) in enumerate(zip(items_in, items_out)):
        if y.type != T_FEATURES:
            continue
        if x.dim0 < w:
            n_short += 1
            continue
        wave = kr.kaldi_samples(x)
        t = torch.tensor(wave, dtype=torch.float32,
                         device=a.torch_device)[None, :]
        ta = tak.fbank(t, **kw).double().cpu().numpy()
        got = np.frombuffer(y.data, "<f4").astype(np.float64).reshape(
            y.dim0, y.dim1).T
        if ta.shape != got.shape:
            print("FAIL: record %d: shape %r, torchaudio %r" %
                  (i, got.shape, ta.shape))
            fails += 1
            continue
        _, bands, power, fsum = kr.fbank(wave, sr, o, detail=True)
        floor = kr.WEAK * power[:, None] * fsum[None, :]
        weak = np.zeros(got.shape, dtype=bool)
        weak[:, r0:] = (bands < floor) & (bands > kr.EPS)
        lim = np.zeros(got.shape)
        lim[:, r0:] = np.log(np.maximum(10 * floor, kr.EPS))
        err = np.abs(got - ta)
        bad = np.where(weak, (got > lim + a.tol) | (ta > lim + a.tol),
                       ~np.isfinite(got) | (err > a.tol))
        n_feat += 1
        n_vals += got.size
        n_weak += int(weak.sum())
        ok = ~bad & ~weak
        if ok.any():
            worst = max(worst, float(err[ok].max()))
        if bad.any():
            f, m = np.argwhere(bad)[0]
            if fails < 5:
                print("FAIL: record %d row %d frame %d: %r, torchaudio %r "
                      "(%d values off)" % (i, m, f, got[f, m], ta[f, m],
                                           int(bad.sum())))
            fails += 1
    if fails or n_feat == 0:
        print("kaldi_torchaudio check: %d records differ of %d" %
              (fails, n_feat))
        return 1
    print("kaldi_torchaudio check: %d feature records (%d shorter than a "
          "frame left out), %d values (%d below float32 resolution), worst "
          "|ln difference| %.3g (limit %g)" %
          (n_feat, n_short, n_vals, n_weak, worst, a.tol))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["check"])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--tol", type=float, default=0.0023)
    ap.add_argument("--torch-device", default="cpu")
    kr.add_options(ap)
    return check(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
