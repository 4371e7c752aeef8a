"""The long-clip test's generator and checker (tests/L9000-two-hour-clip.sh).

    long_clip.py make OUT.wav --seconds S --rate R
writes S seconds of 16-bit mono: two tones whose second frequency steps
every second, a little seeded noise, and one second of digital silence
at the middle (so that top_db has something to raise), block by block
(memory bounded).

    long_clip.py check OUT.wav OUT.h5 --piece P [--tol-db X]
checks the dataset h5pack made from OUT.wav (whole clip, gpumel's
defaults: n_fft 2048, hop 512, 128 mels, slaney, --center,
power 2, dB, top_db 80; gpumel's default --center pads zeros,
as librosa's): one row of 1 + n // hop frames; the frames
within n_fft of every piece boundary (multiples of P samples), and the
first and last frames, against a float64 reference computed from the
WAV's samples (zeros past the ends); every value at least the
row's maximum - 80 dB, and the silence raised to it."""
import argparse
import sys

import h5py
import librosa
import numpy as np
import soundfile as sf

N_FFT, HOP, N_MELS, TOP_DB, AMIN = 2048, 512, 128, 80.0, 1e-10


def make(a):
    n = int(a.seconds * a.rate)
    rng = np.random.default_rng(7)
    quiet = (n // 2 // a.rate * a.rate, n // 2 // a.rate * a.rate + a.rate)
    with sf.SoundFile(a.out, "w", a.rate, 1, "PCM_16") as f:
        for s in range(0, n, 10 * a.rate):
            e = min(n, s + 10 * a.rate)
            t = np.arange(s, e, dtype=np.float64)
            f2 = 300.0 + 37.0 * ((t // a.rate) % 60)
            x = (0.3 * np.sin(2 * np.pi * 440.0 * t / a.rate) +
                 0.2 * np.sin(2 * np.pi * f2 * t / a.rate) +
                 0.01 * rng.standard_normal(e - s))
            lo, hi = max(s, quiet[0]), min(e, quiet[1])
            if lo < hi:
                x[lo - s:hi - s] = 0.0
            f.write(np.round(x * 32767).astype(np.int16))


def check(a):
    info = sf.info(a.wav)
    n, sr = info.frames, info.samplerate
    f = h5py.File(a.h5, "r")
    g = f["all"]
    nf = g["n_frames"][()]
    want = 1 + n // HOP
    if len(nf) != 1 or nf[0] != want:
        sys.exit("rows %s, wanted one of %d frames" % (nf, want))
    feats = g["features"]            # [frames][n_mels], frame-major
    if feats.shape != (want, N_MELS):
        sys.exit("features %s" % (feats.shape,))
    top = -np.inf
    low = np.inf
    for s in range(0, want, 65536):
        blk = feats[s:s + 65536].astype(np.float64)
        top, low = max(top, blk.max()), min(low, blk.min())
    floor = top - TOP_DB
    if low < floor - 1e-3:
        sys.exit("a value %.4f below the maximum - 80 dB (%.4f)"
                 % (low, floor))
    if low > floor + 1e-3:
        sys.exit("nothing raised to the maximum - 80 dB (%.4f; lowest "
                 "%.4f): the silence should be" % (floor, low))
    spots = [0, want - 1] + [b // HOP for b in range(a.piece, n, a.piece)]
    worst, checked = 0.0, 0
    for c in spots:
        t0 = max(0, c - N_FFT // HOP - 1)
        t1 = min(want, c + N_FFT // HOP + 2)
        s0 = max(0, t0 * HOP - N_FFT)
        s1 = min(n, (t1 - 1) * HOP + N_FFT)
        x, _ = sf.read(a.wav, start=s0, stop=s1, dtype="float64")
        ref, weak = reference(x, sr, s0, t0, t1, n)
        ref = np.maximum(ref, floor)
        out = feats[t0:t1].astype(np.float64).T
        d = np.where(weak, 0.0, np.abs(out - ref))
        if np.any(weak & (out > np.maximum(ref, floor + 1.0))):
            sys.exit("frames %d..%d: a band far below its frame's energy "
                     "came out more than 1 dB above both the reference "
                     "and the floor" % (t0, t1))
        worst = max(worst, d.max())
        checked += t1 - t0
        if d.max() > a.tol_db:
            i = np.unravel_index(np.argmax(d), d.shape)
            sys.exit("frame %d mel %d: %.5f dB against %.5f (reference)"
                     % (t0 + i[1], i[0], out[i], ref[i]))
    print("%d frames, %d checked at %d piece boundaries and both ends, "
          "worst %.2g dB" % (want, checked, len(spots) - 2, worst))


def reference(x, sr, s0, t0, t1, n):
    """(dB, weak) for frames t0..t1-1 of a clip of n samples, given its
    samples s0.. in x (float64), centred with zeros past the clip's
    ends (--pad-mode constant). weak marks the bands a float32 FFT cannot give to 0.01
    dB (below 1e-10 of the frame's energy times the filter's weight, as
    tests/py/gpumel_ref.py explains)."""
    pad = N_FFT // 2
    idx = np.arange(t0 * HOP - pad, (t1 - 1) * HOP + pad)
    inside = (idx >= 0) & (idx < n)
    if idx[inside].min() < s0 or idx[inside].max() >= s0 + len(x):
        raise ValueError("frames %d..%d need samples not read" % (t0, t1))
    seg = np.where(inside, x[np.clip(idx, s0, s0 + len(x) - 1) - s0], 0.0)
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)
    fr = np.lib.stride_tricks.sliding_window_view(seg, N_FFT)[::HOP]
    S = np.abs(np.fft.rfft(fr * win, axis=1)) ** 2
    fb = librosa.filters.mel(sr=sr, n_fft=N_FFT, n_mels=N_MELS,
                             dtype=np.float64)
    M = fb @ S.T
    ceiling = fb.sum(axis=1)[:, None] * S.sum(axis=1)[None, :]
    return 10 * np.log10(np.maximum(AMIN, M)), M < 1e-10 * ceiling


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("out")
    m.add_argument("--seconds", type=float, required=True)
    m.add_argument("--rate", type=int, required=True)
    c = sub.add_parser("check")
    c.add_argument("wav")
    c.add_argument("h5")
    c.add_argument("--piece", type=int, required=True)
    c.add_argument("--tol-db", type=float, default=0.01)
    a = ap.parse_args()
    make(a) if a.cmd == "make" else check(a)


if __name__ == "__main__":
    main()
