#!/usr/bin/env python3
"""kaldi_ref.py - a float64 reference of Kaldi's filterbank features, and
the checker of gpumel --preset kaldi.

The reference follows Kaldi's algorithm (feature-window.cc: FrameExtraction
options, NumFrames, FirstSampleOfFrame, ExtractWindow's reflection,
ProcessWindow, the window functions; mel-computations.cc: MelBanks;
feature-fbank.cc: FbankComputer) as torchaudio.compliance.kaldi.fbank
mirrors it, in numpy float64, written from those definitions and not from
gpumel's code. Its defaults are torchaudio.compliance.kaldi.fbank's
(dither 0, energy_floor 1, use_energy false); samples in Kaldi's scale
(s16 as they are, other types times 32768). The dither's noise is the one
formats/record.md documents for gpumel (noise()), so that dithered output
can be checked too.

    kaldi_ref.py check IN.rec OUT.rec [--num-mel-bins 23] [--snip-edges 1]
        [--window povey] ... [--tol 0.0023] [--expect-features N]

reads gpumel's input and output, checks the output header's parameters,
every output record's metadata against its input record, and every
feature matrix ([n_features][n_frames], the log energy first with
--use-energy 1) against the reference: |difference| <= tol in natural log
(default 0.0023, 0.01 dB; narrow bands far below their frame's power come
near it, the rest within about 2e-4).
Bands the float32 FFT cannot resolve that well (below 1e-9 of the frame's
power times their filter's weight sum, WEAK) must only be as small.

As a module: fbank(x, sr, opts, clip=0, offset=0) -> [n_frames][n_rows],
opts a dict of the options below (Options.defaults()).
"""
import argparse
import math
import sys

import numpy as np

from gpumel_rec import (T_AUDIO, T_FEATURES, T_SKIPPED, DTYPES, meta_tuple,
                        read_stream)

EPS = float(np.finfo(np.float32).eps)
WEAK = 1e-9
M64 = (1 << 64) - 1


class Options:
    """torchaudio.compliance.kaldi.fbank's defaults, Kaldi's names."""

    DEFAULTS = dict(num_mel_bins=23, frame_length_ms=25.0,
                    frame_shift_ms=10.0, snip_edges=1, dither=0.0, seed=0,
                    preemphasis=0.97, remove_dc_offset=1, window="povey",
                    round_to_power_of_two=1, low_freq=20.0, high_freq=0.0,
                    use_energy=0, energy_floor=1.0, raw_energy=1,
                    win_length=0, hop_length=0, n_fft=0)
    # win_length, hop_length, n_fft (gpumel's names): the sizes in
    # samples when not 0, over the milliseconds and the power of two

    @classmethod
    def defaults(cls):
        return dict(cls.DEFAULTS)


# ----------------------------------------------------------------- noise

def _mix(z):
    """splitmix64's finaliser on uint64 arrays (wrapping)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
    return z ^ (z >> np.uint64(31))


def noise(seed, clip, pos, n):
    """The standard normal deviates of samples 0..n-1 of each frame of clip
    clip starting at clip samples pos (an array): [len(pos)][n]."""
    with np.errstate(over="ignore"):
        h = _mix(np.uint64((seed + 0x9e3779b97f4a7c15) & M64))
        h = _mix(h ^ np.uint64(clip))
        p = np.asarray(pos, dtype=np.int64).astype(np.uint64)
        h = _mix(h ^ p)[:, None]
        h = _mix(h ^ np.arange(n, dtype=np.uint64)[None, :])
        u1 = ((h >> np.uint64(11)) + np.uint64(1)).astype(np.float64) * \
            2.0 ** -53
        u2 = (_mix(h ^ np.uint64(0xd1b54a32d192ed03)) >>
              np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


# ----------------------------------------------------------------- Kaldi

def sizes(sr, o):
    """(window_size, window_shift, padded_window_size), as torchaudio
    computes them: int(sr * ms * 0.001), unless given in samples."""
    w = o.get("win_length") or int(sr * o["frame_length_ms"] * 0.001)
    s = o.get("hop_length") or int(sr * o["frame_shift_ms"] * 0.001)
    p = w
    if o["round_to_power_of_two"]:
        p = 1
        while p < w:
            p *= 2
    return w, s, o.get("n_fft") or p


def frame_starts(n, w, s, snip):
    """NumFrames and FirstSampleOfFrame."""
    if snip:
        nf = 0 if n < w else 1 + (n - w) // s
        return np.arange(nf, dtype=np.int64) * s
    nf = (n + s // 2) // s
    return np.arange(nf, dtype=np.int64) * s + s // 2 - w // 2


def window(name, w):
    """FeatureWindowFunction: symmetric, a = 2 pi / (N - 1)."""
    i = np.arange(w, dtype=np.float64)
    a = 2 * np.pi / (w - 1)
    if name in ("hann", "hanning"):
        return 0.5 - 0.5 * np.cos(a * i)
    if name == "hamming":
        return 0.54 - 0.46 * np.cos(a * i)
    if name == "povey":
        return (0.5 - 0.5 * np.cos(a * i)) ** 0.85
    if name == "blackman":
        return 0.42 - 0.5 * np.cos(a * i) + 0.08 * np.cos(2 * a * i)
    if name in ("rect", "rectangular"):
        return np.ones(w)
    raise ValueError("window %r" % name)


def mel(f):
    return 1127.0 * np.log(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def mel_banks(sr, padded, o):
    """MelBanks: [num_bins][padded // 2 + 1], the Nyquist column zero."""
    nyq = 0.5 * sr
    lo = o["low_freq"]
    hi = o["high_freq"] if o["high_freq"] > 0 else nyq + o["high_freq"]
    if not (0 <= lo < nyq and 0 < hi <= nyq and hi > lo):
        raise ValueError("bad low/high freq %g %g" % (lo, hi))
    nb = o["num_mel_bins"]
    mlo, mhi = mel(lo), mel(hi)
    delta = (mhi - mlo) / (nb + 1)
    fm = mel(np.arange(padded // 2) * (sr / padded))
    out = np.zeros((nb, padded // 2 + 1))
    for b in range(nb):
        left, centre, right = (mlo + b * delta, mlo + (b + 1) * delta,
                               mlo + (b + 2) * delta)
        up = (fm - left) / (centre - left)
        down = (right - fm) / (right - centre)
        wgt = np.where(fm <= centre, up, down)
        out[b, :padded // 2] = np.where((fm > left) & (fm < right), wgt,
                                        0.0)
    return out


def log_energy(f, o):
    e = np.log(np.maximum((f * f).sum(axis=1), EPS))
    if o["energy_floor"] > 0:
        e = np.maximum(e, math.log(o["energy_floor"]))
    return e


def frames(x, sr, o, clip=0, offset=0):
    """The processed frames [n_frames][window_size] and log energies."""
    w, s, _ = sizes(sr, o)
    n = len(x)
    st = frame_starts(n, w, s, o["snip_edges"])
    idx = st[:, None] + np.arange(w)[None, :]
    m = np.mod(idx, 2 * n) if n else idx
    m = np.where(m < n, m, 2 * n - 1 - m)
    f = x[m] if len(st) else np.zeros((0, w))
    if o["dither"] != 0 and len(st):
        f = f + o["dither"] * noise(o["seed"], clip, offset + st, w)
    if o["remove_dc_offset"]:
        f = f - f.mean(axis=1, keepdims=True)
    energy = log_energy(f, o) if o["raw_energy"] else None
    c = o["preemphasis"]
    if c != 0:
        g = f.copy()
        g[:, 1:] = f[:, 1:] - c * f[:, :-1]
        g[:, 0] = f[:, 0] - c * f[:, 0]
        f = g
    f = f * window(o["window"], w)[None, :]
    if not o["raw_energy"]:
        energy = log_energy(f, o)
    return f, energy


def fbank(x, sr, o, clip=0, offset=0, detail=False):
    """Kaldi's fbank of x (float64, Kaldi's scale): [n_frames][n_rows],
    the log energy first with use_energy. With detail also the linear
    bands, the frames' power (sum over bins) and the filters' sums."""
    _, _, padded = sizes(sr, o)
    f, energy = frames(x, sr, o, clip, offset)
    spec = np.abs(np.fft.rfft(f, n=padded, axis=1)) ** 2
    fb = mel_banks(sr, padded, o)
    bands = spec @ fb.T
    out = np.log(np.maximum(bands, EPS))
    if o["use_energy"]:
        out = np.concatenate([energy[:, None], out], axis=1)
    if detail:
        return out, bands, spec.sum(axis=1), fb.sum(axis=1)
    return out


def kaldi_samples(it):
    """An audio record's samples in Kaldi's scale, float64."""
    raw = it.data
    if it.dtype == DTYPES["s16"]:
        return np.frombuffer(raw, "<i2").astype(np.float64)
    if it.dtype == DTYPES["f32"]:
        x = np.frombuffer(raw, "<f4")
    elif it.dtype == DTYPES["f16"]:
        x = np.frombuffer(raw, "<f2")
    else:
        u = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
        x = u.view(np.float32)
    return x.astype(np.float64) * 32768.0


# ----------------------------------------------------------------- check

def header(pairs):
    h = {}
    for k, v in pairs:
        h.setdefault(k, v)
    return h


def check_header(h, sr, o, fails):
    w, s, p = sizes(sr, o)
    nyq = sr / 2
    hi = o["high_freq"] if o["high_freq"] > 0 else nyq + o["high_freq"]
    want = {"feature": "fbank", "n_fft": p, "win_length": w,
            "hop_length": s, "n_mels": o["num_mel_bins"],
            "n_features": o["num_mel_bins"] + o["use_energy"],
            "snip_edges": o["snip_edges"], "mel_scale": "kaldi",
            "log": "ln", "use_energy": o["use_energy"],
            "raw_energy": o["raw_energy"],
            "remove_dc_offset": o["remove_dc_offset"]}
    name = {"hann": "hann", "hanning": "hann", "rectangular": "rect"}
    want["window"] = name.get(o["window"], o["window"])
    for k, v in want.items():
        if str(h.get(k)) != str(v):
            fails.append("header %s: %r, want %r" % (k, h.get(k), v))
    for k, v in (("fmin", o["low_freq"]), ("fmax", hi),
                 ("dither", o["dither"]), ("preemphasis", o["preemphasis"]),
                 ("energy_floor", o["energy_floor"])):
        if not math.isclose(float(h.get(k, "nan")), v, rel_tol=1e-6):
            fails.append("header %s: %r, want %r" % (k, h.get(k), v))


def compare(got, ref, bands, power, fsum, o, tol):
    """(bad mask, weak mask, worst |difference| of the others), over
    [n_frames][n_rows]. A weak band (linear value below WEAK times the
    frame's power times its filter's sum) must only be as small: at most
    ln(10 WEAK ...) or within tol above the reference."""
    err = np.abs(got - ref)
    r0 = 1 if o["use_energy"] else 0
    floor = WEAK * power[:, None] * fsum[None, :]
    weak = np.zeros(ref.shape, dtype=bool)
    weak[:, r0:] = (bands < floor) & (bands > EPS)
    bad = ~np.isfinite(got) | (err > tol)
    lim = np.full(ref.shape, -np.inf)
    lim[:, r0:] = np.log(np.maximum(10 * floor, EPS))
    small = got <= np.maximum(lim, ref + tol)
    bad = np.where(weak, ~small | ~np.isfinite(got), bad)
    ok = ~bad & ~weak
    worst = float(err[ok].max()) if ok.any() else 0.0
    return bad, weak, worst


def check(a):
    o = Options.defaults()
    for k in o:
        v = getattr(a, k)
        if v is not None:
            o[k] = v
    pin, items_in, _ = read_stream(a.input)
    pout, items_out, _ = read_stream(a.output)
    hin, hout = header(pin), header(pout)
    sr = float(hin["sample_rate"])
    fails = []
    check_header(hout, sr, o, fails)
    if hout.get("kind") != "features" or hout.get("dtype") != "f32":
        fails.append("kind %s dtype %s" % (hout.get("kind"),
                                           hout.get("dtype")))
    w, s, _ = sizes(sr, o)
    n_feat = n_vals = n_weak = 0
    worst = 0.0
    rows = o["num_mel_bins"] + o["use_energy"]
    if len(items_in) != len(items_out):
        fails.append("%d records in, %d out" % (len(items_in),
                                                len(items_out)))
    for i, (x, y) in enumerate(zip(items_in, items_out)):
        if meta_tuple(x) != meta_tuple(y):
            fails.append("record %d: metadata differ" % i)
            continue
        if x.type == T_SKIPPED:
            if y.type != T_SKIPPED or y.data != x.data:
                fails.append("record %d: skipped record not passed on" % i)
            continue
        nf = len(frame_starts(x.dim0, w, s, o["snip_edges"]))
        usable = x.type == T_AUDIO and x.dim1 == 1 and x.sample_rate == sr
        if not usable or nf == 0:
            if y.type != T_SKIPPED:
                fails.append("record %d: unusable, not skipped" % i)
            continue
        if y.type != T_FEATURES or (y.dim0, y.dim1) != (rows, nf):
            fails.append("record %d: type %d shape %dx%d, want features "
                         "%dx%d" % (i, y.type, y.dim0, y.dim1, rows, nf))
            continue
        got = np.frombuffer(y.data, "<f4").astype(np.float64).reshape(
            rows, nf).T
        ref, bands, power, fsum = fbank(kaldi_samples(x), sr, o, x.clip,
                                        x.offset, detail=True)
        bad, weak, wst = compare(got, ref, bands, power, fsum, o, a.tol)
        n_feat += 1
        n_vals += got.size
        n_weak += int(weak.sum())
        worst = max(worst, wst)
        if bad.any():
            f, m = np.argwhere(bad)[0]
            fails.append("record %d (%s) row %d frame %d: %r, reference "
                         "%r (%d values off)" % (
                             i, x.key.decode(errors="replace"), m, f,
                             got[f, m], ref[f, m], int(bad.sum())))
    if a.expect_features is not None and n_feat != a.expect_features:
        fails.append("%d feature records, want %d" % (n_feat,
                                                      a.expect_features))
    for msg in fails[:8]:
        print("FAIL: " + msg)
    if fails:
        print("kaldi_ref check: %d failures" % len(fails))
        return 1
    print("kaldi_ref check: %d feature records, %d values (%d below "
          "float32 resolution), worst |ln difference| %.3g (limit %g)" %
          (n_feat, n_vals, n_weak, worst, a.tol))
    return 0


def flag(s):
    """A Kaldi boolean: true/false or 1/0."""
    if s in ("true", "1"):
        return 1
    if s in ("false", "0"):
        return 0
    raise argparse.ArgumentTypeError("expected true or false: %r" % s)


BOOLS = ("snip_edges", "remove_dc_offset", "round_to_power_of_two",
         "use_energy", "raw_energy")


def add_options(ap):
    """The reference's options, Kaldi's names (and gpumel's spelling of
    them: --preemphasis, --snip-edges=false), unset: the defaults."""
    for k, v in Options.DEFAULTS.items():
        t = flag if k in BOOLS else str if isinstance(v, str) else type(v)
        ap.add_argument("--" + k.replace("_", "-"), type=t, default=None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["check"])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--tol", type=float, default=0.0023)
    ap.add_argument("--expect-features", type=int)
    add_options(ap)
    return check(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
