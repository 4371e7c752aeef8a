#!/usr/bin/env python3
"""gpumel_ref.py - a float64 reference for gpumel, and the checker.

The reference is written from the definitions, not from gpumel's code:
scipy's periodic windows, numpy.pad for the centring, numpy's float64
rfft, librosa.filters.mel(dtype=float64) for the filterbank on rfft bins
(both scales), and torchaudio's melscale_fbanks formula (written out here:
bins at linspace(0, sr // 2), points at linspace of mels) for the
torchaudio preset's bins.

    gpumel_ref.py check IN.rec OUT.rec --n-fft 512 ... [--tol-db 0.01]

reads gpumel's input and output, checks the output header's parameters
against the options given here (every one spelled out: this program has no
defaults of its own for them), every output record's metadata against its
input record, skipped records passed through, unusable ones turned into
skipped records, and every feature matrix against the reference. With
--librosa it also compares with librosa.feature.melspectrogram followed by
power_to_db / amplitude_to_db.

    gpumel_ref.py cast F32.rec OTHER.rec

checks that OTHER (f16 or bf16 output of the same run) is the f32 output
rounded to nearest even, bit for bit.

    gpumel_ref.py compare A.rec B.rec [--tol-db 0.01]

compares two features streams of the same input (say --device cpu and
--device cuda): the same records and shapes, values within tol-db (or its
equivalent for ln and linear output) wherever the first is within 80 dB
of its record's maximum; values further down (below what float32 FFTs
resolve, see WEAK) must be that far down in both. Needs numpy only.
"""
import argparse
import math
import sys

import numpy as np

from gpumel_rec import (T_AUDIO, T_FEATURES, T_SKIPPED, DTYPES, DTYPE_NAMES,
                        meta_tuple, read_stream)


# ---------------------------------------------------------------- reference

def window(p):
    import scipy.signal  # here: slow to load, and cast does not need it
    name = {"hann": "hann", "hamming": "hamming", "rect": "boxcar"}
    w = scipy.signal.get_window(name[p.window], p.win_length, fftbins=True)
    out = np.zeros(p.n_fft)
    left = (p.n_fft - p.win_length) // 2
    out[left:left + p.win_length] = w
    return out


def frames(x, p):
    """[n_frames][n_fft] float64 frames of x (a float64 array)."""
    if p.center:
        x = np.pad(x, p.n_fft // 2, mode=p.pad_mode)
    if len(x) < p.n_fft:
        return np.zeros((0, p.n_fft))
    n = 1 + (len(x) - p.n_fft) // p.hop
    idx = np.arange(p.n_fft)[None, :] + p.hop * np.arange(n)[:, None]
    return x[idx]


def htk_mel(f):
    return 2595.0 * np.log10(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def htk_hz(m):
    return 700.0 * (10.0 ** (np.asarray(m, dtype=np.float64) / 2595.0) - 1)


def slaney_mel(f):
    f = np.asarray(f, dtype=np.float64)
    logstep = math.log(6.4) / 27.0
    lin = f / (200.0 / 3)
    log = 15.0 + np.log(np.maximum(f, 1e-300) / 1000.0) / logstep
    return np.where(f >= 1000.0, log, lin)


def slaney_hz(m):
    m = np.asarray(m, dtype=np.float64)
    logstep = math.log(6.4) / 27.0
    return np.where(m >= 15.0, 1000.0 * np.exp(logstep * (m - 15.0)),
                    m * 200.0 / 3)


def torch_fbank(p):
    """torchaudio.functional.melscale_fbanks, [n_mels][n_bins], float64;
    with p.bins rfft (bins at k sr / n_fft) the same triangles are
    librosa.filters.mel's."""
    n_bins = p.n_fft // 2 + 1
    all_freqs = (np.linspace(0, p.rate // 2, n_bins) if p.bins == "linspace"
                 else np.arange(n_bins) * p.rate / p.n_fft)
    to_mel, to_hz = ((htk_mel, htk_hz) if p.mel_scale == "htk" else
                     (slaney_mel, slaney_hz))
    m_pts = np.linspace(to_mel(p.fmin), to_mel(p.fmax), p.n_mels + 2)
    f_pts = to_hz(m_pts)
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts[None, :] - all_freqs[:, None]
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    fb = np.maximum(0.0, np.minimum(down, up))
    if p.norm == "slaney":
        fb *= (2.0 / (f_pts[2:p.n_mels + 2] - f_pts[:p.n_mels]))[None, :]
    return fb.T


def fbank(p):
    """The filterbank: librosa.filters.mel for rfft bins where librosa is
    installed (not on the GPU machine: there the same formula as
    torchaudio's, on rfft bins)."""
    if p.bins == "linspace":
        return torch_fbank(p)
    try:
        import librosa
    except ImportError:
        return torch_fbank(p)
    return librosa.filters.mel(sr=p.rate, n_fft=p.n_fft, n_mels=p.n_mels,
                               fmin=p.fmin, fmax=p.fmax,
                               htk=p.mel_scale == "htk",
                               norm="slaney" if p.norm == "slaney" else None,
                               dtype=np.float64)


def to_log(S, p):
    if p.log == "none":
        return S
    if p.log == "ln":
        return np.log(np.maximum(p.amin, S))
    mul = 10.0 if p.power == 2 else 20.0
    L = mul * np.log10(np.maximum(p.amin, S))
    if p.top_db is not None and L.size:
        L = np.maximum(L, L.max() - p.top_db)
    return L


def melspec(x, p, fb, win, energy=None):
    """The [n_mels][n_frames] reference of one record (float64). With a
    list as energy, appends each frame's energy (sum of |X|^2)."""
    F = frames(x, p) * win[None, :]
    S = np.abs(np.fft.rfft(F, axis=1))
    if energy is not None:
        energy.extend((S * S).sum(axis=1))
    if p.power == 2:
        S = S * S
    return to_log(fb @ S.T, p)


def librosa_melspec(x, p):
    import librosa
    S = librosa.feature.melspectrogram(
        y=x, sr=p.rate, n_fft=p.n_fft, hop_length=p.hop,
        win_length=p.win_length,
        window={"rect": "boxcar"}.get(p.window, p.window),
        center=p.center, pad_mode=p.pad_mode, power=float(p.power),
        n_mels=p.n_mels, fmin=p.fmin, fmax=p.fmax,
        htk=p.mel_scale == "htk",
        norm="slaney" if p.norm == "slaney" else None)
    if p.log != "db":
        return to_log(S, p)
    if p.power == 2:
        return librosa.power_to_db(S, amin=p.amin, top_db=p.top_db)
    return librosa.amplitude_to_db(S, amin=p.amin, top_db=p.top_db)


# ---------------------------------------------------------------- decoding

def samples(it):
    """An audio item's samples as float64, as gpumel reads them."""
    name = DTYPE_NAMES[it.dtype]
    if name == "s16":
        return np.frombuffer(it.data, "<i2").astype(np.float64) / 32768
    if name == "f32":
        return np.frombuffer(it.data, "<f4").astype(np.float64)
    if name == "f16":
        return np.frombuffer(it.data, "<f2").astype(np.float64)
    bits = np.frombuffer(it.data, "<u2").astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


def features(it):
    name = DTYPE_NAMES[it.dtype]
    if name == "bf16":
        bits = np.frombuffer(it.data, "<u2").astype(np.uint32) << 16
        a = bits.view(np.float32)
    else:
        a = np.frombuffer(it.data, {"f32": "<f4", "f16": "<f2"}[name])
    return a.astype(np.float64).reshape(it.dim0, it.dim1)


def n_frames(n, p):
    if n == 0:
        return 0
    if p.center:
        n += 2 * (p.n_fft // 2)
    return 1 + (n - p.n_fft) // p.hop if n >= p.n_fft else 0


def half_ulp(v, dtype):
    """Half a unit in the last place of v in the output type."""
    if dtype == "f32":
        return np.zeros_like(v)
    bits = 10 if dtype == "f16" else 7
    e = np.floor(np.log2(np.maximum(np.abs(v), 2.0 ** -14)))
    return 2.0 ** (e - bits) / 2


# ---------------------------------------------------------------- checks

class Fail(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


def check_header(pairs, p):
    h = {}
    for k, v in pairs:
        h.setdefault(k, v)
    want = {
        "kind": "features", "dtype": p.dtype, "n_fft": str(p.n_fft),
        "win_length": str(p.win_length), "hop_length": str(p.hop),
        "window": p.window, "center": str(int(p.center)),
        "pad_mode": p.pad_mode, "n_mels": str(p.n_mels),
        "mel_scale": p.mel_scale, "norm": p.norm, "power": str(p.power),
        "log": p.log,
        "top_db": "none" if p.top_db is None else None,
    }
    for k, v in want.items():
        expect(k in h, "header has no %s" % k)
        if v is not None:
            expect(h[k] == v, "header %s=%s, want %s" % (k, h[k], v))
    for k, v in (("fmin", p.fmin), ("fmax", p.fmax), ("amin", p.amin)):
        expect(float(h[k]) == v, "header %s=%s, want %r" % (k, h[k], v))
    if p.top_db is not None:
        expect(float(h["top_db"]) == p.top_db, "header top_db=%s, want %r"
               % (h["top_db"], p.top_db))
    expect(h.get("bin_freqs") == p.bins, "header bin_freqs=%s, want %s" %
           (h.get("bin_freqs"), p.bins))
    stages = [v for k, v in pairs if k == "stage"]
    expect(stages and stages[-1].startswith("gpumel "),
           "last stage is not gpumel's: %r" % stages[-1:])
    expect(h.get("producer", "").startswith("gpumel "), "producer")


def tolerance(ref, p, tol_db):
    """Allowed |out - ref| per element, before the output's rounding."""
    if p.log == "db":
        return np.full_like(ref, tol_db)
    if p.log == "ln":
        return np.full_like(ref, tol_db * math.log(10) / 10)
    # linear: the relative error a tol_db error in dB would be
    rel = 10 ** (tol_db / 10) - 1
    return rel * np.abs(ref) + 1e-30


# The float32 FFT's rounding error in a bin is about eps * sqrt(E) for a
# frame of energy E (sum of |X|^2), whatever the bin holds; in a mel band,
# about the filter's weight sum times that (squared for power): some 1e-13
# of fsum * E. A band less than 100 dB above that ceiling's floor (WEAK:
# power ratio 1e-10, magnitude 1e-5) cannot be given to 0.01 dB by a
# float32 FFT (a float32 torch.stft or scipy.fft included): it happens
# where the exact spectrum is (nearly) zero, as for a 1- or 2-sample
# record reflected into a constant or alternating frame, or far from a
# pure tone. Such bands are only checked to come out as small as that.
WEAK = {2: 1e-10, 1: 1e-5}


def linear(v, p):
    """Output values back in S units (power or magnitude)."""
    if p.log == "db":
        return 10.0 ** (v / (10.0 if p.power == 2 else 20.0))
    if p.log == "ln":
        return np.exp(v)
    return v


def compare(i, out, ref, p, what, stats, ceiling):
    err = np.abs(out - ref)
    allow = tolerance(ref, p, p.tol_db) + half_ulp(ref, p.dtype)
    lin_ref, lin_out = linear(ref, p), linear(out, p)
    thr = ceiling * WEAK[p.power]
    weak = lin_ref < thr
    bad = np.where(weak, lin_out > np.maximum(10 * thr, 1.01 * lin_ref),
                   err > allow)
    if np.any(bad):
        k = np.argmax(bad)
        raise Fail("record %d: |out - %s| %.3g > %.3g at %s (out %.9g, "
                   "ref %.9g%s)" % (i, what, err.flat[k], allow.flat[k],
                                    np.unravel_index(k, err.shape),
                                    out.flat[k], ref.flat[k],
                                    ", weak" if weak.flat[k] else ""))
    stats["weak"] += int(weak.sum())
    stats["values"] += weak.size
    return float(err[~weak].max()) if np.any(~weak) else 0.0


def check_record(i, it, ot, p, fb, win, stats):
    x = samples(it)
    energy = []
    ref = melspec(x, p, fb, win, energy)
    e = np.array(energy) if p.power == 2 else np.sqrt(energy)
    ceiling = fb.sum(axis=1)[:, None] * e[None, :]
    expect(ot.type == T_FEATURES, "record %d: type %d, want features" %
           (i, ot.type))
    expect(DTYPE_NAMES.get(ot.dtype) == p.dtype, "record %d: dtype %d" %
           (i, ot.dtype))
    expect((ot.dim0, ot.dim1) == ref.shape, "record %d: shape %s, want %s"
           % (i, (ot.dim0, ot.dim1), ref.shape))
    out = features(ot)
    e = compare(i, out, ref, p, "ref", stats, ceiling)
    stats["max_err"] = max(stats["max_err"], e)
    if p.librosa:
        e = compare(i, out, librosa_melspec(x, p), p, "librosa", stats,
                    ceiling)
        stats["max_err_librosa"] = max(stats["max_err_librosa"], e)


def usable(it, p, rate):
    return (it.dim1 == 1 and it.sample_rate == rate and
            n_frames(it.dim0, p) > 0 and
            np.all(np.isfinite(samples(it))))


def check(a):
    p = a
    p.top_db = None if a.top_db == "none" else float(a.top_db)
    ipairs, items, _ = read_stream(a.input)
    opairs, outs, trailer = read_stream(a.output)
    rate = int(dict(ipairs)["sample_rate"])
    p.rate = rate
    p.fmax = rate / 2 if a.fmax == "nyquist" else float(a.fmax)
    if not a.ignore_header:
        check_header(opairs, p)
    in_stages = [v for k, v in ipairs if k == "stage"]
    out_stages = [v for k, v in opairs if k == "stage"]
    expect(out_stages[:-1] == in_stages, "stages not carried over")
    fb, win = fbank(p), window(p)
    expect(len(outs) == len(items), "%d records out, %d in" %
           (len(outs), len(items)))
    stats = {"max_err": 0.0, "max_err_librosa": 0.0, "features": 0,
             "skipped_here": 0, "skipped": 0, "weak": 0, "values": 0}
    for i, (it, ot) in enumerate(zip(items, outs)):
        expect(meta_tuple(ot) == meta_tuple(it),
               "record %d: metadata %r, want %r" %
               (i, meta_tuple(ot), meta_tuple(it)))
        if it.type == T_SKIPPED:
            expect(ot.type == T_SKIPPED and ot.data == it.data,
                   "record %d: skipped record not passed through" % i)
            stats["skipped"] += 1
        elif not usable(it, p, rate):
            expect(ot.type == T_SKIPPED and ot.dtype == 0 and
                   ot.dim0 == 0 and ot.dim1 == 0 and len(ot.data) > 0,
                   "record %d: unusable record not turned into a skipped "
                   "record with a reason" % i)
            stats["skipped_here"] += 1
        else:
            check_record(i, it, ot, p, fb, win, stats)
            stats["features"] += 1
    expect(trailer[1] == stats["features"], "trailer item count")
    for k in ("features", "skipped", "skipped_here"):
        want = getattr(a, "expect_" + k)
        expect(want is None or want == stats[k], "%d %s, want %d" %
               (stats[k], k, want if want is not None else -1))
    expect(a.max_weak is None or
           stats["weak"] <= a.max_weak * max(stats["values"], 1),
           "%d of %d values below float32 resolution" %
           (stats["weak"], stats["values"]))
    print("ok: %(features)d features, %(skipped)d skipped passed, "
          "%(skipped_here)d skipped here, max err %(max_err).3g "
          "(librosa %(max_err_librosa).3g), %(weak)d of %(values)d values "
          "below float32 resolution" % stats)


def round_to(out32, dtype):
    """f32 values -> f16/bf16 bits, round to nearest even (numpy)."""
    if dtype == "f16":
        return out32.astype(np.float16).view(np.uint16)
    u = out32.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def cast_check(a):
    _, r32, _ = read_stream(a.input)
    _, r16, _ = read_stream(a.output)
    expect(len(r32) == len(r16), "record counts differ")
    n = 0
    for i, (x, y) in enumerate(zip(r32, r16)):
        expect(meta_tuple(x) == meta_tuple(y) and x.type == y.type,
               "record %d differs in metadata" % i)
        if x.type != T_FEATURES:
            continue
        expect(x.dtype == DTYPES["f32"], "first stream is not f32")
        name = DTYPE_NAMES[y.dtype]
        want = round_to(np.frombuffer(x.data, "<f4"), name)
        got = np.frombuffer(y.data, "<u2")
        expect(np.array_equal(want, got), "record %d: %s is not the f32 "
               "output rounded (%d of %d differ)" %
               (i, name, int(np.sum(want != got)), len(want)))
        n += 1
    print("ok: %d records are the f32 output rounded" % n)


def compare_streams(a):
    hp, ra, _ = read_stream(a.input)
    _, rb, _ = read_stream(a.output)
    h = dict(hp)
    p = argparse.Namespace(log=h["log"], power=int(h["power"]))
    expect(len(ra) == len(rb), "record counts differ")
    worst = 0.0
    for i, (x, y) in enumerate(zip(ra, rb)):
        expect(meta_tuple(x) == meta_tuple(y) and x.type == y.type,
               "record %d differs in metadata" % i)
        if x.type != T_FEATURES:
            expect(x.data == y.data, "record %d: reasons differ" % i)
            continue
        expect((x.dim0, x.dim1) == (y.dim0, y.dim1),
               "record %d differs in shape" % i)
        fa, fb_ = features(x), features(y)
        la, lb = linear(fa, p), linear(fb_, p)
        floor = la.max() * (1e-8 if p.power == 2 else 1e-4)
        strong = la >= floor
        err = np.abs(fa - fb_)
        allow = (tolerance(fa, p, a.tol_db) +
                 half_ulp(fa, DTYPE_NAMES[x.dtype]) +
                 half_ulp(fa, DTYPE_NAMES[y.dtype]))
        bad = np.where(strong, err > allow, lb > 10 * floor)
        if np.any(bad):
            k = np.argmax(bad)
            raise Fail("record %d: %d values differ, first at %s: %.9g "
                       "vs %.9g" % (i, int(bad.sum()),
                                    np.unravel_index(k, bad.shape),
                                    fa.flat[k], fb_.flat[k]))
        if np.any(strong):
            worst = max(worst, float(err[strong].max()))
    print("ok: %d records, max difference %.3g" % (len(ra), worst))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["check", "cast", "compare"])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--n-fft", type=int)
    ap.add_argument("--win-length", type=int)
    ap.add_argument("--hop", type=int)
    ap.add_argument("--window")
    ap.add_argument("--center", type=int)
    ap.add_argument("--pad-mode")
    ap.add_argument("--n-mels", type=int)
    ap.add_argument("--fmin", type=float)
    ap.add_argument("--fmax")
    ap.add_argument("--mel-scale")
    ap.add_argument("--norm")
    ap.add_argument("--power", type=int)
    ap.add_argument("--log")
    ap.add_argument("--amin", type=float)
    ap.add_argument("--top-db")
    ap.add_argument("--dtype")
    ap.add_argument("--bins", default="rfft", choices=["rfft", "linspace"])
    ap.add_argument("--tol-db", type=float, default=0.01)
    ap.add_argument("--librosa", action="store_true")
    ap.add_argument("--ignore-header", action="store_true",
                    help="compare the numbers only (to show that the "
                    "comparison alone catches a wrong parameter)")
    ap.add_argument("--max-weak", type=float, default=0.02,
                    help="largest share of values allowed below float32 "
                    "resolution (default 0.02)")
    ap.add_argument("--expect-features", type=int)
    ap.add_argument("--expect-skipped", type=int)
    ap.add_argument("--expect-skipped-here", type=int)
    a = ap.parse_args()
    try:
        if a.mode == "cast":
            cast_check(a)
            return
        if a.mode == "compare":
            compare_streams(a)
            return
        need = ["n_fft", "win_length", "hop", "window", "center",
                "pad_mode", "n_mels", "fmin", "fmax", "mel_scale", "norm",
                "power", "log", "amin", "top_db", "dtype"]
        missing = [k for k in need if getattr(a, k) is None]
        if missing:
            ap.error("check needs every parameter; missing: " +
                     ", ".join("--" + k.replace("_", "-") for k in missing))
        check(a)
    except Fail as e:
        print("FAIL: %s" % e)
        sys.exit(1)


if __name__ == "__main__":
    main()
