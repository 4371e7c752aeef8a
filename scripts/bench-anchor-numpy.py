#!/usr/bin/env python3
"""bench-anchor-numpy - the Python script a user would write instead of
melpipe on a machine with no GPU: the anchor that scripts/bench compares
the CPU pipeline against.

Usage: bench-anchor-numpy.py [options] DATA OUT.h5

Loads every DATA/<label>/*.wav with a thread pool (soundfile; scipy's
wavfile reader or the wave module where soundfile is missing), cuts
512-sample windows, applies a periodic Hann window, numpy's rfft, power,
an HTK mel filterbank built in numpy (torchaudio's MelSpectrogram
defaults: no norm, 0 Hz to Nyquist), 10*log10 with a 1e-10 floor (dB, as
torchaudio's AmplitudeToDB), casts to float16 and writes OUT.h5 with h5py
in melpipe's layout (formats/hdf5.md): training/validation/testing from
DATA's Speech Commands lists, each with features [N, n_mels, 1], label,
clip, segment, offset; /labels; /clips.

Meant to run with the Debian packages python3-numpy, python3-h5py and
python3-soundfile (/usr/bin/python3). Written the way a competent user
writes it: straightforward, nothing held back. The last line of output is
one JSON object with the timings.
"""
import argparse
import concurrent.futures
import json
import os
import sys
import time

T_START = time.perf_counter()

import h5py  # noqa: E402
import numpy as np  # noqa: E402

try:
    import soundfile
    LOADER = "soundfile " + soundfile.__version__
except ImportError:  # not the intended set-up, but still honest
    soundfile = None
    try:
        import scipy.io.wavfile
        LOADER = "scipy.io.wavfile"
    except ImportError:
        import wave
        LOADER = "wave"

T_IMPORTED = time.perf_counter()

SPLITS = ("training", "validation", "testing")


def hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank(rate, n_fft, n_mels, fmin=0.0, fmax=None):
    """[n_fft/2+1, n_mels] triangular HTK filters, no normalisation (as
    torchaudio.functional.melscale_fbanks)."""
    fmax = rate / 2.0 if fmax is None else fmax
    freqs = np.linspace(0.0, rate / 2.0, n_fft // 2 + 1)
    f_pts = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax),
                                  n_mels + 2))
    f_diff = np.diff(f_pts)
    slopes = f_pts[None, :] - freqs[:, None]
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return np.maximum(0.0, np.minimum(down, up))


def list_dataset(root):
    """Sorted relative paths of DATA/<label>/*.wav, label names, the label
    and the split of each path (Speech Commands lists)."""
    labels = sorted(e.name for e in os.scandir(root) if e.is_dir())
    paths = []
    for lab in labels:
        for dirpath, _, files in os.walk(os.path.join(root, lab)):
            rel = os.path.relpath(dirpath, root)
            paths += [os.path.join(rel, f) for f in files
                      if f.lower().endswith(".wav")]
    paths.sort()
    lists = {}
    for split, fname in ((1, "validation_list.txt"),
                         (2, "testing_list.txt")):
        p = os.path.join(root, fname)
        if os.path.exists(p):
            with open(p) as f:
                for line in f:
                    if line.strip():
                        lists[line.strip()] = split
    splits = np.array([lists.get(p, 0) for p in paths], dtype=np.int64)
    label_of = {lab: i for i, lab in enumerate(labels)}
    clip_labels = np.array([label_of[p.split(os.sep)[0]] for p in paths],
                           dtype=np.int32)
    return paths, labels, clip_labels, splits


def create_output(path, a, paths, labels, clip_labels, splits, n_seg,
                  n_frames):
    """Opens OUT.h5 with every dataset made; returns (file, per-split
    features datasets, row of each clip within its split)."""
    f = h5py.File(path, "w")
    f.attrs["sample_rate"] = a.rate
    f.attrs["n_fft"] = a.n_fft
    f.attrs["hop_length"] = a.hop
    f.attrs["n_mels"] = a.n_mels
    f.attrs["segment_len"] = a.seg_len
    str_t = h5py.string_dtype()
    f.create_dataset("labels", data=np.array(labels, dtype=object),
                     dtype=str_t)
    c = f.create_group("clips")
    c.create_dataset("path", data=np.array(paths, dtype=object), dtype=str_t)
    c.create_dataset("label", data=clip_labels)
    c.create_dataset("split", data=splits.astype(np.int8) + 1)
    c.create_dataset("n_samples", data=np.full(len(paths), n_seg * a.seg_len,
                                               dtype=np.int64))
    c.create_dataset("sample_rate", data=np.full(len(paths), a.rate,
                                                 dtype=np.int32))
    s = f.create_group("skipped")
    s.create_dataset("path", shape=(0,), dtype=str_t)
    s.create_dataset("reason", shape=(0,), dtype=str_t)
    feats = {}
    row_in_split = np.zeros(len(paths), dtype=np.int64)
    for k, name in enumerate(SPLITS):
        clips = np.flatnonzero(splits == k)
        row_in_split[clips] = np.arange(len(clips)) * n_seg
        n = len(clips) * n_seg
        g = f.create_group(name)
        feats[k] = g.create_dataset("features", (n, a.n_mels, n_frames),
                                    dtype=np.float16)
        g.create_dataset("label", data=np.repeat(clip_labels[clips], n_seg))
        g.create_dataset("clip", data=np.repeat(clips, n_seg)
                         .astype(np.int32))
        g.create_dataset("segment", data=np.tile(
            np.arange(n_seg, dtype=np.int32), len(clips)))
        g.create_dataset("offset", data=np.tile(
            np.arange(n_seg, dtype=np.int64) * a.seg_len, len(clips)))
    return f, feats, row_in_split


def read_samples(path):
    """(float32 mono samples in [-1, 1), sample rate)."""
    if soundfile is not None:
        x, sr = soundfile.read(path, dtype="float32", always_2d=False)
    elif LOADER == "scipy.io.wavfile":
        sr, x = scipy.io.wavfile.read(path)
        x = x.astype(np.float32) / 32768.0
    else:
        with wave.open(path) as w:
            sr = w.getframerate()
            x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
            x = x.reshape(-1, w.getnchannels()).astype(np.float32) / 32768.0
    if x.ndim == 2:
        x = x.mean(axis=1)
    return x, sr


def make_loader(root, rate, n_samples):
    def load(rel):
        x, sr = read_samples(os.path.join(root, rel))
        if sr != rate:
            raise ValueError(f"{rel}: {sr} Hz, expected {rate}")
        if len(x) >= n_samples:
            return x[:n_samples]
        return np.pad(x, (0, n_samples - len(x)))
    return load


def run(a):
    t0 = time.perf_counter()
    paths, labels, clip_labels, splits = list_dataset(a.data)
    if not paths:
        sys.exit(f"bench-anchor-numpy: no .wav files under '{a.data}'")
    n_samples = a.seconds * a.rate
    n_seg = n_samples // a.seg_len
    n_frames = 1 + (a.seg_len - a.n_fft) // a.hop
    f, feats, row_in_split = create_output(a.out, a, paths, labels,
                                           clip_labels, splits, n_seg,
                                           n_frames)
    n = np.arange(a.n_fft)
    window = (0.5 - 0.5 * np.cos(2.0 * np.pi * n / a.n_fft)) \
        .astype(np.float32)
    fb = mel_filterbank(a.rate, a.n_fft, a.n_mels)
    load = make_loader(a.data, a.rate, n_samples)
    t_load = t_dsp = t_write = 0.0
    with concurrent.futures.ThreadPoolExecutor(a.threads) as ex:
        clips = ex.map(load, paths)
        for start in range(0, len(paths), a.batch):
            idx = np.arange(start, min(start + a.batch, len(paths)))
            t1 = time.perf_counter()
            batch = np.stack([next(clips) for _ in idx])
            t2 = time.perf_counter()
            segs = batch[:, :n_seg * a.seg_len].reshape(-1, a.seg_len)
            # Frames of each segment (one when n_fft == seg_len, no
            # centring): [segments, n_frames, n_fft].
            idx_f = np.arange(n_frames)[:, None] * a.hop + n[None, :]
            frames = segs[:, idx_f] * window
            spec = np.fft.rfft(frames, axis=-1)
            power = spec.real ** 2 + spec.imag ** 2
            mel = power @ fb                     # [segments, frames, mels]
            db = 10.0 * np.log10(np.maximum(mel, 1e-10))
            out = db.transpose(0, 2, 1).astype(np.float16)
            out = out.reshape(len(idx), n_seg, a.n_mels, n_frames)
            t3 = time.perf_counter()
            for k in range(len(SPLITS)):
                sel = idx[splits[idx] == k]
                if len(sel):
                    r0 = row_in_split[sel[0]]
                    feats[k][r0:r0 + len(sel) * n_seg] = \
                        out[sel - start].reshape(-1, a.n_mels, n_frames)
            t4 = time.perf_counter()
            t_load += t2 - t1
            t_dsp += t3 - t2
            t_write += t4 - t3
    t5 = time.perf_counter()
    f.close()
    t_end = time.perf_counter()
    return {"clips": len(paths), "rows": len(paths) * n_seg,
            "import_s": T_IMPORTED - T_START, "load_wait_s": t_load,
            "dsp_s": t_dsp, "write_s": t_write + (t_end - t5),
            "total_s": t_end - t0, "process_s": t_end - T_START,
            "threads": a.threads, "batch_clips": a.batch,
            "loader": LOADER, "numpy": np.__version__,
            "h5py": h5py.__version__, "python": sys.executable}


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=None,
                    help="loader threads (default: the thread pool's "
                    "default, min(32, cores + 4))")
    ap.add_argument("--batch", type=int, default=64,
                    help="clips per batch (default 64; 1 to 128 all run "
                    "about as fast, larger ones slower)")
    ap.add_argument("--rate", type=int, default=4096)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--seg-len", type=int, default=512)
    ap.add_argument("--n-fft", type=int, default=512)
    ap.add_argument("--hop", type=int, default=512)
    ap.add_argument("--n-mels", type=int, default=32)
    a = ap.parse_args()
    if a.threads is None:
        a.threads = min(32, (os.cpu_count() or 1) + 4)
    if a.n_fft > a.seg_len:
        ap.error("--n-fft must not exceed --seg-len (no centring)")
    print(json.dumps(run(a)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
