#!/usr/bin/env python3
"""cuda_torchaudio.py - gpumel's CUDA backend against torchaudio on the GPU.

    cuda_torchaudio.py check IN.rec OUT.rec [--tol-db 0.01] [--range-db 60]
        OUT is gpumel's output for IN; every features record must equal
        torchaudio.transforms.MelSpectrogram (+ AmplitudeToDB for dB
        output) run on the GPU in float32 on the same samples, with the
        parameters OUT's header states: within tol-db for every value no
        more than range-db below its record's maximum (below that, float32
        FFT rounding, in torchaudio as in gpumel, outgrows 0.01 dB; those
        values are counted, not compared).

    cuda_torchaudio.py bench [--batch 262144] [--reps 30]
        the anchor of the benchmark: torchaudio's MelSpectrogram +
        AmplitudeToDB + cast to float16 on a device-resident batch of the
        10-second job's shape (records of 512 samples, n_fft 512, hop 512, 32 mels,
        no centring), timed with CUDA events (median); with float32 input
        and with int16 input converted on the GPU. Prints RESULT lines.

Needs torch, torchaudio, numpy and a CUDA device.
"""
import argparse
import sys

import numpy as np
import torch
import torchaudio

from gpumel_rec import (T_AUDIO, T_FEATURES, DTYPES, meta_tuple,
                        read_stream)


def header(pairs):
    h = {}
    for k, v in pairs:
        h.setdefault(k, v)
    return h


def samples(it):
    raw = it.data
    if it.dtype == DTYPES["s16"]:
        return np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    if it.dtype == DTYPES["f32"]:
        return np.frombuffer(raw, "<f4").astype(np.float32)
    if it.dtype == DTYPES["f16"]:
        return np.frombuffer(raw, "<f2").astype(np.float32)
    u = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
    return u.view(np.float32)


def features(it):
    raw = it.data
    if it.dtype == DTYPES["f32"]:
        a = np.frombuffer(raw, "<f4")
    elif it.dtype == DTYPES["f16"]:
        a = np.frombuffer(raw, "<f2")
    else:
        a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(
            np.float32)
    return a.astype(np.float64).reshape(it.dim0, it.dim1)


def transforms(h, rate):
    windows = {"hann": torch.hann_window, "hamming": torch.hamming_window,
               "rect": lambda n, **kw: torch.ones(n, **kw)}
    if h["bin_freqs"] != "linspace":
        sys.exit("cuda_torchaudio: bins at k*sr/n_fft are librosa's; run "
                 "gpumel with --preset torchaudio")
    mel = torchaudio.transforms.MelSpectrogram(
        sample_rate=rate, n_fft=int(h["n_fft"]),
        win_length=int(h["win_length"]), hop_length=int(h["hop_length"]),
        f_min=float(h["fmin"]), f_max=float(h["fmax"]), pad=0,
        n_mels=int(h["n_mels"]), window_fn=windows[h["window"]],
        power=float(h["power"]), normalized=False,
        center=h["center"] == "1", pad_mode=h["pad_mode"],
        norm=None if h["norm"] == "none" else "slaney",
        mel_scale=h["mel_scale"]).cuda()
    todb = None
    if h["log"] == "db":
        if float(h["amin"]) != 1e-10:
            sys.exit("cuda_torchaudio: AmplitudeToDB has amin 1e-10")
        todb = torchaudio.transforms.AmplitudeToDB(
            stype="power" if h["power"] == "2" else "magnitude",
            top_db=None if h["top_db"] == "none" else float(h["top_db"]))
    elif h["log"] != "none":
        sys.exit("cuda_torchaudio: torchaudio has no ln output")
    return mel, todb


def check(a):
    torch.backends.cuda.matmul.allow_tf32 = False
    _, ins, _ = read_stream(a.input)
    pairs, outs, _ = read_stream(a.output)
    h = header(pairs)
    audio = {meta_tuple(it): it for it in ins if it.type == T_AUDIO}
    feats = [it for it in outs if it.type == T_FEATURES]
    mel, todb = transforms(h, int(h["sample_rate"]))
    n_fft, center = int(h["n_fft"]), h["center"] == "1"
    bad = compared = skipped = short = 0
    worst = 0.0
    for i, y in enumerate(feats):
        x = audio.get(meta_tuple(y))
        if x is None:
            print("  features record %d has no audio record" % i)
            bad += 1
            continue
        if center and h["pad_mode"] == "reflect" and \
                x.dim0 <= n_fft // 2:
            short += 1   # torch.stft cannot reflect-pad it; gpumel can
            continue
        sig = torch.from_numpy(samples(x).copy()).cuda()
        with torch.no_grad():
            ref = mel(sig)
            if todb is not None:
                ref = todb(ref)
        ref = ref.double().cpu().numpy()
        got = features(y)
        if ref.shape != got.shape:
            print("  record %d: shape %s, torchaudio %s" %
                  (i, got.shape, ref.shape))
            bad += 1
            continue
        if todb is not None:
            keep = ref >= ref.max() - a.range_db
            err = np.abs(got - ref)
            tol = a.tol_db
        else:
            keep = ref >= ref.max() * 10 ** (-a.range_db / 10)
            err = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)
            tol = 10 ** (a.tol_db / 10) - 1
        # one unit in the last place of f16 / bf16 output: relative 2^-10
        # / 2^-7 at most (absolute in dB, relative without the log)
        rel = {DTYPES["f16"]: 2.0 ** -10, DTYPES["bf16"]: 2.0 ** -7}.get(
            y.dtype, 0.0)
        tol = tol + (np.abs(ref) * rel if todb is not None else rel)
        compared += int(keep.sum())
        skipped += int((~keep).sum())
        off = keep & (np.isnan(got) | (err > tol))
        if off.any():
            m, f = np.argwhere(off)[0]
            if bad < 5:
                print("  record %d mel %d frame %d: gpumel %r, torchaudio "
                      "%r" % (i, m, f, float(got[m, f]), float(ref[m, f])))
            bad += 1
        if keep.any():
            worst = max(worst, float(np.max(np.where(keep, err, 0.0))))
    print("cuda_torchaudio check: %d records (%d too short for torch's "
          "reflect), %d values compared, %d more than %g dB below their "
          "record's top, largest difference %.3g%s, %d records off" %
          (len(feats), short, compared, skipped, a.range_db, worst,
           " dB" if todb is not None else " (relative)", bad))
    return 1 if bad or compared == 0 else 0


def timed(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ms.append(e0.elapsed_time(e1))
    return float(np.median(ms))


def bench(a):
    torch.backends.cuda.matmul.allow_tf32 = False
    n = a.batch
    mel = torchaudio.transforms.MelSpectrogram(
        sample_rate=4096, n_fft=512, hop_length=512, n_mels=32, f_min=0.0,
        f_max=2048.0, center=False, power=2.0, norm="slaney",
        mel_scale="slaney").cuda()
    todb = torchaudio.transforms.AmplitudeToDB("power", top_db=None)
    g = torch.Generator(device="cuda").manual_seed(1)
    x32 = 0.3 * (2 * torch.rand(n, 512, device="cuda", generator=g) - 1)
    x16 = (x32 * 32767).to(torch.int16)

    def run32():
        with torch.no_grad():
            return todb(mel(x32)).half()

    def run16():
        with torch.no_grad():
            return todb(mel(x16.float() / 32768.0)).half()

    print("torchaudio %s on %s, batch of %d records x 512 samples, median "
          "of %d" % (torchaudio.__version__, torch.cuda.get_device_name(),
                     n, a.reps))
    for name, fn in (("f32", run32), ("s16", run16)):
        ms = timed(fn, a.reps)
        gs = n * 512 / (ms * 1e-3) / 1e9
        print("  in=%s  %.3f ms  %.1f Gsamples/s" % (name, ms, gs))
        print("RESULT torchaudio in=%s gsamples_per_s=%.2f median_ms=%.4f" %
              (name, gs, ms))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("check")
    c.add_argument("input")
    c.add_argument("output")
    c.add_argument("--tol-db", type=float, default=0.01)
    c.add_argument("--range-db", type=float, default=60.0)
    b = sub.add_parser("bench")
    b.add_argument("--batch", type=int, default=262144)
    b.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("cuda_torchaudio: no CUDA device for torch")
    return check(a) if a.mode == "check" else bench(a)


if __name__ == "__main__":
    sys.exit(main())
