#!/usr/bin/env python3
"""cuda_cmp.py - compares two gpumel outputs of the same input stream, for
the CUDA backend's tests (gpumel --device cuda against --device cpu, one
FFT path against the other, one batch size against another).

    cuda_cmp.py close A.rec B.rec [--input IN.rec] [--tol-db 0.01]
        the same records in the same order (type, metadata, shape, skipped
        reasons) and every feature within tolerance: 0.01 dB for dB output,
        its equivalent 0.01 ln(10)/10 for ln, relative 0.23% for none, plus
        one unit in the last place for f16 and bf16 (both sides are
        roundings of float32 values). With IN (the input of both runs) the
        values a float32 FFT cannot resolve to 0.01 dB are told apart as
        gpumel_ref.py does: bands below 1e-10 (power; 1e-5 magnitude) of
        their filter's weight sum times the frame's energy. Those only have
        to be as small on both sides (neither above 10 times that floor
        unless within 1% of the other); for Kaldi fbank (feature=fbank)
        the bands kaldi_ref.py calls weak. Without IN, none output allows
        an absolute 1e-5 of the record's largest value instead;
    cuda_cmp.py cast F32.rec OTHER.rec
        OTHER (f16 or bf16 output of the same run) is F32 rounded to
        nearest even, bit for bit, top_db included (the clamp commutes with
        the rounding);
    cuda_cmp.py same A.rec B.rec
        byte-identical records (features bit for bit).

Prints one summary line; exit status 1 on a difference, with the first
ones named. Needs numpy; reads streams with gpumel_rec (formats/record.md).
"""
import argparse
import math
import sys

import numpy as np

from gpumel_rec import T_FEATURES, DTYPES, meta_tuple, read_stream

NP = {DTYPES["f32"]: "<f4", DTYPES["f16"]: "<f2", DTYPES["bf16"]: "<u2"}
MEL_KEYS = ("feature", "n_fft", "win_length", "hop_length", "window",
            "center", "pad_mode", "n_mels", "n_features", "fmin", "fmax",
            "mel_scale", "norm", "power", "log", "amin", "top_db",
            "bin_freqs", "snip_edges", "dither", "seed", "preemphasis",
            "remove_dc_offset", "use_energy", "raw_energy", "energy_floor")


def values(it):
    """A features record as float64 [dim0][dim1] (bf16 widened exactly)."""
    a = np.frombuffer(it.data, dtype=NP[it.dtype])
    if it.dtype == DTYPES["bf16"]:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64).reshape(it.dim0, it.dim1)


def ulp(v, dtype):
    """One unit in the last place of dtype at |v| (0 for f32)."""
    if dtype == DTYPES["f32"]:
        return np.zeros_like(v)
    mant, lo = (10, -14) if dtype == DTYPES["f16"] else (7, -126)
    a = np.abs(v)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(np.where(a > 0, e, lo), lo)
    return np.exp2(e - mant)


def samples(it):
    """An audio item's samples as float64, as gpumel reads them."""
    raw = it.data
    if it.dtype == DTYPES["s16"]:
        return np.frombuffer(raw, "<i2").astype(np.float64) / 32768
    if it.dtype == DTYPES["f32"]:
        return np.frombuffer(raw, "<f4").astype(np.float64)
    if it.dtype == DTYPES["f16"]:
        return np.frombuffer(raw, "<f2").astype(np.float64)
    u = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
    return u.view(np.float32).astype(np.float64)


class Weak:
    """Where a float32 FFT cannot give 0.01 dB: the floor of each value,
    fsum[m] * energy[frame] * WEAK (as gpumel_ref.py), from the input
    samples and the header's parameters (filterbank weight sums written
    out as mel_fb.c builds them; only the floor depends on them)."""

    WEAK = {2: 1e-10, 1: 1e-5}

    def __init__(self, h):
        self.n_fft = int(h["n_fft"])
        self.hop = int(h["hop_length"])
        self.center = h["center"] == "1"
        self.pad = h["pad_mode"]
        self.power = int(h["power"])
        self.log = h["log"]
        self.win = self.window(h["window"], int(h["win_length"]))
        self.fsum = self.filter_sums(h)

    def window(self, name, wl):
        n = np.arange(wl)
        c = np.cos(2 * np.pi * n / wl)
        w = {"hann": 0.5 - 0.5 * c, "hamming": 0.54 - 0.46 * c,
             "rect": np.ones(wl)}[name]
        out = np.zeros(self.n_fft)
        left = (self.n_fft - wl) // 2
        out[left:left + wl] = w
        return out

    def filter_sums(self, h):
        sr, bins = float(h["sample_rate"]), self.n_fft // 2 + 1
        if h.get("bin_freqs") == "linspace":
            f = np.linspace(0, math.floor(sr / 2), bins)
        else:
            f = np.arange(bins) * sr / self.n_fft
        htk = h["mel_scale"] == "htk"

        def mel(x):
            x = np.asarray(x, dtype=np.float64)
            if htk:
                return 2595 * np.log10(1 + x / 700)
            lin = x / (200 / 3)
            return np.where(x >= 1000, 15 + np.log(np.maximum(x, 1e-300) /
                                                   1000) / (np.log(6.4) /
                                                            27), lin)

        def hz(m):
            if htk:
                return 700 * (10 ** (m / 2595) - 1)
            return np.where(m >= 15, 1000 * np.exp(np.log(6.4) / 27 *
                                                   (m - 15)), m * 200 / 3)

        nm = int(h["n_mels"])
        pts = hz(np.linspace(mel(float(h["fmin"])), mel(float(h["fmax"])),
                             nm + 2))
        lo = (f[None, :] - pts[:-2, None]) / (pts[1:-1] - pts[:-2])[:, None]
        hi = (pts[2:, None] - f[None, :]) / (pts[2:] - pts[1:-1])[:, None]
        w = np.maximum(0, np.minimum(lo, hi))
        if h["norm"] == "slaney":
            w *= (2 / (pts[2:] - pts[:-2]))[:, None]
        return w.sum(axis=1)

    def floor(self, item):
        """[n_mels][n_frames] floors, in the output's units."""
        x = samples(item)
        if self.center:
            x = np.pad(x, self.n_fft // 2, mode=self.pad)
        n = 1 + (len(x) - self.n_fft) // self.hop
        idx = np.arange(self.n_fft)[None, :] + self.hop * np.arange(n)[:,
                                                                      None]
        X = np.fft.rfft(x[idx] * self.win[None, :], axis=1)
        e = (np.abs(X) ** 2).sum(axis=1)
        if self.power == 1:
            e = np.sqrt(e)
        return self.WEAK[self.power] * self.fsum[:, None] * e[None, :]

    def linear(self, v):
        if self.log == "db":
            return 10 ** (v / (10.0 if self.power == 2 else 20.0))
        if self.log == "ln":
            return np.exp(v)
        return v


class KaldiWeak:
    """Weak for fbank: kaldi_ref.py's float64 bands and its floor (WEAK
    times the frame's power times the filter's weight sum), the energy
    row never weak."""

    def __init__(self, h):
        import kaldi_ref
        self.ref = kaldi_ref
        self.sr = float(h["sample_rate"])
        o = kaldi_ref.Options.defaults()
        o.update(num_mel_bins=int(h["n_mels"]),
                 snip_edges=int(h["snip_edges"]),
                 dither=float(h["dither"]), seed=int(h["seed"]),
                 preemphasis=float(h["preemphasis"]),
                 remove_dc_offset=int(h["remove_dc_offset"]),
                 window=h["window"], low_freq=float(h["fmin"]),
                 high_freq=float(h["fmax"]),
                 use_energy=int(h["use_energy"]),
                 energy_floor=float(h["energy_floor"]),
                 raw_energy=int(h["raw_energy"]))
        o.update(win_length=int(h["win_length"]),
                 hop_length=int(h["hop_length"]), n_fft=int(h["n_fft"]))
        self.o = o

    def floor(self, item):
        x = self.ref.kaldi_samples(item)
        _, bands, power, fsum = self.ref.fbank(
            x, self.sr, self.o, item.clip, item.offset, detail=True)
        fl = self.ref.WEAK * power[:, None] * fsum[None, :]
        if self.o["use_energy"]:
            fl = np.concatenate([np.zeros((len(fl), 1)), fl], axis=1)
        return fl.T

    def linear(self, v):
        return np.exp(v)


def header(pairs):
    h = {}
    for k, v in pairs:
        h.setdefault(k, v)
    return h


class Failures:
    def __init__(self):
        self.n = 0

    def add(self, msg):
        if self.n < 5:
            print("  " + msg)
        self.n += 1


def same_records(a_items, b_items, fails):
    if len(a_items) != len(b_items):
        fails.add("%d records against %d" % (len(a_items), len(b_items)))
        return []
    pairs = []
    for i, (x, y) in enumerate(zip(a_items, b_items)):
        if (x.type, meta_tuple(x), x.dtype, x.dim0, x.dim1) != \
                (y.type, meta_tuple(y), y.dtype, y.dim0, y.dim1):
            fails.add("record %d: type, metadata or shape differ" % i)
        elif x.type != T_FEATURES:
            if x.data != y.data:
                fails.add("record %d: skipped reasons differ" % i)
        else:
            pairs.append((i, x, y))
    return pairs


def tolerance(b, log, tol_db, dtype, floor):
    if log == "db":
        base = np.full_like(b, tol_db)
    elif log == "ln":
        base = np.full_like(b, tol_db * math.log(10) / 10)
    else:
        rel = 10 ** (tol_db / 10) - 1
        base = rel * np.abs(b)
        if floor:
            base += 1e-5 * np.max(np.abs(b), initial=0.0)
    return base + ulp(b, dtype)


def close(args):
    pa, ia, _ = read_stream(args.a)
    pb, ib, _ = read_stream(args.b)
    ha, hb = header(pa), header(pb)
    fails = Failures()
    keys = MEL_KEYS if not args.values_only else ()
    for k in keys:
        if ha.get(k) != hb.get(k):
            fails.add("header %s: %r against %r" % (k, ha.get(k), hb.get(k)))
    log = ha.get("log", "db")
    weak, inputs = None, {}
    if args.input:
        weak = KaldiWeak(hb) if hb.get("feature") == "fbank" else Weak(hb)
        for it in read_stream(args.input)[1]:
            inputs[meta_tuple(it)] = it
    worst, n_vals, n_feat, n_weak = 0.0, 0, 0, 0
    for i, x, y in same_records(ia, ib, fails):
        a, b = values(x), values(y)
        n_feat += 1
        n_vals += a.size
        both_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
        err = np.where(both_inf, 0.0, np.abs(a - b))
        tol = tolerance(b, log, args.tol_db, x.dtype, weak is None)
        bad = np.isnan(a) | np.isnan(b) | (err > tol)
        if weak is not None and meta_tuple(x) in inputs:
            fl = weak.floor(inputs[meta_tuple(x)])
            la, lb = weak.linear(a), weak.linear(b)
            w = (la < fl) | (lb < fl)
            small = ((la <= np.maximum(10 * fl, 1.01 * lb)) &
                     (lb <= np.maximum(10 * fl, 1.01 * la)))
            bad = np.where(w, ~small | np.isnan(a) | np.isnan(b), bad)
            tol = np.where(w, 0.0, tol)
            n_weak += int(w.sum())
        if bad.any():
            m, f = np.argwhere(bad)[0]
            key = x.key.decode(errors="replace")
            fails.add("record %d (%s) mel %d frame %d: %r against %r "
                      "(%d values off)" % (i, key, m, f, float(a[m, f]),
                                           float(b[m, f]), bad.sum()))
        ok = ~bad & (tol > 0)
        if ok.any():
            worst = max(worst, float(np.max(err[ok] / tol[ok])))
    if fails.n:
        print("cuda_cmp close: %d differences (%d feature records, %d "
              "values)" % (fails.n, n_feat, n_vals))
        return 1
    print("cuda_cmp close: %d feature records, %d values (%d below "
          "float32 resolution), worst %.3f of the tolerance (%s, %g dB)" %
          (n_feat, n_vals, n_weak, worst, log, args.tol_db))
    return 0


def round_bits(f32, dtype):
    """float32 values rounded to dtype, as raw 16-bit patterns."""
    f32 = np.asarray(f32, dtype=np.float32)
    if dtype == DTYPES["f16"]:
        return f32.astype(np.float16).view(np.uint16)
    u = f32.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def cast(args):
    _, ia, _ = read_stream(args.a)
    _, ib, _ = read_stream(args.b)
    fails = Failures()
    n_vals = 0
    if len(ia) != len(ib):
        fails.add("%d records against %d" % (len(ia), len(ib)))
    for i, (x, y) in enumerate(zip(ia, ib)):
        if (x.type, meta_tuple(x), x.dim0, x.dim1) != \
                (y.type, meta_tuple(y), y.dim0, y.dim1):
            fails.add("record %d: type, metadata or shape differ" % i)
            continue
        if x.type != T_FEATURES:
            continue
        if x.dtype != DTYPES["f32"] or y.dtype == DTYPES["f32"]:
            fails.add("record %d: want f32 and f16/bf16" % i)
            continue
        want = round_bits(np.frombuffer(x.data, dtype="<f4"), y.dtype)
        got = np.frombuffer(y.data, dtype="<u2")
        n_vals += got.size
        if want.size != got.size or (want != got).any():
            k = int(np.argmax(want != got)) if want.size == got.size else 0
            fails.add("record %d element %d: bits %04x, rounding gives "
                      "%04x" % (i, k, got[k], want[k]))
    if fails.n:
        print("cuda_cmp cast: %d differences" % fails.n)
        return 1
    print("cuda_cmp cast: %d values are the f32 output rounded" % n_vals)
    return 0


def same(args):
    _, ia, _ = read_stream(args.a)
    _, ib, _ = read_stream(args.b)
    fails = Failures()
    if len(ia) != len(ib):
        fails.add("%d records against %d" % (len(ia), len(ib)))
    for i, (x, y) in enumerate(zip(ia, ib)):
        if (x.type, meta_tuple(x), x.dtype, x.dim0, x.dim1, x.data) != \
                (y.type, meta_tuple(y), y.dtype, y.dim0, y.dim1, y.data):
            fails.add("record %d differs" % i)
    if fails.n:
        print("cuda_cmp same: %d differences" % fails.n)
        return 1
    print("cuda_cmp same: %d records identical" % len(ia))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["close", "cast", "same"])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tol-db", type=float, default=0.01)
    ap.add_argument("--values-only", action="store_true",
                    help="close: skip the header comparison")
    ap.add_argument("--input", help="close: the input stream of both runs")
    args = ap.parse_args()
    return {"close": close, "cast": cast, "same": same}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
