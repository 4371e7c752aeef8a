#!/usr/bin/env python3
"""bench-anchor-kaldi - what a torchaudio user writes instead of melpipe for
Kaldi filterbank features or MFCC: the anchors that scripts/bench-kaldi
compares the suite with.

Usage:
  bench-anchor-kaldi.py loop [--loader L,...] [options] DATA OUT.h5
      The looped anchor, as torchaudio.compliance.kaldi users write it: a
      Python loop over the utterances (--limit M of them, spread evenly
      over DATA's sorted clips), each WAV loaded (scipy.io.wavfile, int16:
      Kaldi's scale, torchaudio.load's floats times 32768), moved to the
      device, torchaudio.compliance.kaldi.fbank(wave, num_mel_bins=B) (or
      .mfcc(wave, num_ceps=C, num_mel_bins=B)) and the features written
      row by row with h5py into OUT.h5, in the suite's layout
      (training/validation/testing: features [n, rows, frames] float32,
      label, clip; clips/path), OUT-L.h5 for loader L. --loader picks who
      loads (several, comma-separated, run one after the other):
        main         the loop itself (the plain anchor)
        workers      a DataLoader with W workers loads the WAVs; the loop
                     computes on the device and writes
        cpu-workers  the DataLoader's W workers load and compute on the CPU
                     (the data-pipeline style of wenet and ESPnet); the
                     loop writes
  bench-anchor-kaldi.py batched [options] [--check-data DATA]
      The same arithmetic as fbank/mfcc in batched torch ops: a
      device-resident [batch, samples] float32 tensor in Kaldi's scale,
      framed by unfold (snip_edges), DC removed, pre-emphasis, povey
      window, zero-padded rfft, power, Kaldi's mel bank, ln(max(x, eps));
      MFCC: the DCT and lifter of torchaudio.compliance.kaldi. First
      checked against torchaudio.compliance.kaldi on a few clips of DATA
      (noise without DATA): times only when the largest difference is
      within 1e-3; then timed with CUDA events (median of --reps runs on
      two alternating random batches).

The last line of output is one JSON object with the timings; everything
else goes to stderr.
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

import h5py
import numpy as np
import torch
import torchaudio
import torchaudio.compliance.kaldi as kaldi

HERE = os.path.dirname(os.path.abspath(__file__))
SPLITS = ("training", "validation", "testing")
LOADERS = ("main", "workers", "cpu-workers")
TOLERANCE = 1e-3       # natural log (fbank), the same units (mfcc)


def torch_anchor():
    """scripts/bench-anchor-torch.py: its dataset listing and WAV loader
    (scipy.io.wavfile, cut or padded to the clip length)."""
    spec = importlib.util.spec_from_file_location(
        "bench_anchor_torch", os.path.join(HERE, "bench-anchor-torch.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def log(msg):
    print(f"bench-anchor-kaldi: {msg}", file=sys.stderr, flush=True)


def features(a, wave):
    """torchaudio.compliance.kaldi on one utterance [1, n]: [frames, rows]."""
    if a.feature == "mfcc":
        return kaldi.mfcc(wave, num_ceps=a.num_ceps,
                          num_mel_bins=a.num_mel_bins,
                          sample_frequency=a.rate, dither=0.0)
    return kaldi.fbank(wave, num_mel_bins=a.num_mel_bins,
                       sample_frequency=a.rate, dither=0.0)


def n_rows(a):
    return a.num_ceps if a.feature == "mfcc" else a.num_mel_bins


def n_frames(a):
    win, hop = a.rate * 25 // 1000, a.rate * 10 // 1000
    return 1 + (a.rate * a.seconds - win) // hop


# ---------------------------------------------------------------------------
# The looped anchor


class Clips(torch.utils.data.Dataset):
    """One utterance an item: (index, int16 samples), or with compute its
    features on the CPU, (index, [rows, frames] float32)."""

    def __init__(self, a, load, paths, compute):
        self.a, self.load, self.paths = a, load, paths
        self.compute = compute

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        x = self.load(self.paths[i])
        if not self.compute:
            return i, x
        wave = torch.from_numpy(x).float().unsqueeze(0)
        return i, features(self.a, wave).T.numpy()


def subset(n, m):
    """m indices spread evenly over range(n) (all when m >= n)."""
    if m >= n:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, m).round().astype(np.int64))


def create_output(path, a, paths, labels, clip_labels, splits):
    """OUT.h5 in the suite's layout for the chosen clips; returns (file,
    per-split features datasets, (split, row) of each clip)."""
    f = h5py.File(path, "w")
    str_t = h5py.string_dtype()
    f.create_dataset("labels", data=np.array(labels, dtype=object),
                     dtype=str_t)
    c = f.create_group("clips")
    c.create_dataset("path", data=np.array(paths, dtype=object), dtype=str_t)
    c.create_dataset("label", data=clip_labels)
    feats, where = {}, [None] * len(paths)
    for k, name in enumerate(SPLITS):
        clips = np.flatnonzero(splits == k)
        for row, i in enumerate(clips):
            where[i] = (k, row)
        g = f.create_group(name)
        feats[k] = g.create_dataset("features",
                                    (len(clips), n_rows(a), n_frames(a)),
                                    dtype=np.float32)
        g.create_dataset("label", data=clip_labels[clips])
        g.create_dataset("clip", data=clips.astype(np.int32))
    return f, feats, where


def loop_out(out, loader):
    """OUT.h5 of one loader: OUT-LOADER.h5."""
    base = out[:-3] if out.endswith(".h5") else out
    return f"{base}-{loader}.h5"


def run_loops(a):
    """Each loader of --loader in turn, in one process (the imports and
    the CUDA context once): a result each."""
    ta = torch_anchor()
    dev = torch.device(a.device)
    all_paths, labels, all_labels, all_splits = ta.list_dataset(a.data)
    if not all_paths:
        sys.exit(f"bench-anchor-kaldi: no .wav files under '{a.data}'")
    pick = subset(len(all_paths), a.limit or len(all_paths))
    load = ta.make_loader(a.data, a.rate, a.rate * a.seconds)
    # Not timed: the CUDA context and torchaudio's first call.
    t0 = time.perf_counter()
    warm = torch.zeros(1, a.rate * a.seconds, device=dev)
    features(a, warm).sum().item()
    t_init = time.perf_counter() - t0
    out = []
    for loader in a.loader.split(","):
        r = run_loop(a, loader, dev, load, [all_paths[i] for i in pick],
                     labels, all_labels[pick], all_splits[pick],
                     loop_out(a.out, loader))
        r.update({"clips_total": len(all_paths),
                  "scaled_s": r["first_s"] + r["per_clip_s"] *
                  (len(all_paths) - 1), "init_s": t_init})
        log(f"loop {loader} {a.feature}: {r['seconds']:.2f} s for "
            f"{r['clips']} clips")
        out.append(r)
    return {"mode": "loop", "feature": a.feature, "loops": out,
            "device": device_name(dev), "torch": torch.__version__,
            "torchaudio": torchaudio.__version__}


def run_loop(a, loader, dev, load, paths, labels, clip_labels, splits,
             out):
    f, feats, where = create_output(out, a, paths, labels, clip_labels,
                                    splits)
    t0 = time.perf_counter()
    t_first = None
    if loader == "main":
        for i, rel in enumerate(paths):
            x = load(rel)
            # int16 values: Kaldi's scale (torchaudio.load's x 32768)
            wave = torch.from_numpy(x).to(dev).float().unsqueeze(0)
            y = features(a, wave).T.cpu().numpy()
            k, row = where[i]
            feats[k][row] = y
            if t_first is None:
                t_first = time.perf_counter() - t0
    else:
        cpu = loader == "cpu-workers"
        # fork: the loader is a closure, and the workers touch no CUDA
        dl = torch.utils.data.DataLoader(
            Clips(a, load, paths, cpu), batch_size=None, shuffle=False,
            num_workers=a.workers, multiprocessing_context="fork")
        for i, x in dl:
            if cpu:
                y = x.numpy()
            else:
                wave = x.to(dev).float().unsqueeze(0)
                y = features(a, wave).T.cpu().numpy()
            k, row = where[int(i)]
            feats[k][row] = y
            if t_first is None:
                t_first = time.perf_counter() - t0
    f.close()
    total = time.perf_counter() - t0
    n = len(paths)
    # The first item carries the start (workers forked, first batch):
    # once per run, whatever the clip count; the rest is per clip.
    per_clip = (total - t_first) / (n - 1) if n > 1 else total
    return {"loader": loader, "out": out, "clips": n,
            "workers": a.workers if loader != "main" else 0,
            "seconds": total, "first_s": t_first, "per_clip_s": per_clip}


# ---------------------------------------------------------------------------
# The batched version


def batched_fn(a, dev):
    """fn(x): x [batch, samples] float32 on dev in Kaldi's scale ->
    [batch, frames, rows], the arithmetic of torchaudio.compliance.kaldi's
    fbank (or mfcc) with its defaults, in batched ops."""
    win, hop = a.rate * 25 // 1000, a.rate * 10 // 1000
    n_fft = 1 << (win - 1).bit_length()
    bank, _ = kaldi.get_mel_banks(a.num_mel_bins, n_fft, float(a.rate),
                                  20.0, 0.0, 100.0, -500.0, 1.0)
    # [n_fft / 2 + 1, bins]: the Nyquist bin has no weight
    bank = torch.nn.functional.pad(bank, (0, 1)).T.contiguous().to(dev)
    window = torch.hann_window(win, periodic=False, device=dev).pow(0.85)
    eps = torch.finfo(torch.float32).eps
    dct = None
    if a.feature == "mfcc":
        dct = (kaldi._get_dct_matrix(a.num_ceps, a.num_mel_bins) *
               kaldi._get_lifter_coeffs(a.num_ceps, 22.0).unsqueeze(0))
        dct = dct.to(dev)

    def fn(x):
        frames = x.unfold(1, win, hop)                      # a view
        frames = frames - frames.mean(dim=2, keepdim=True)
        # x[i] - 0.97 x[i - 1], x[0] - 0.97 x[0]
        prev = torch.cat((frames[..., :1], frames[..., :-1]), dim=2)
        frames = frames.sub_(prev.mul_(0.97)).mul_(window)
        spec = torch.fft.rfft(frames, n=n_fft)
        power = torch.view_as_real(spec).square().sum(-1)
        mel = torch.matmul(power, bank).clamp_min_(eps).log_()
        return mel if dct is None else torch.matmul(mel, dct)
    return fn


def check_batched(a, fn, dev):
    """Largest |batched - torchaudio.compliance.kaldi| over a few clips."""
    n = a.rate * a.seconds
    if a.check_data:
        ta = torch_anchor()
        paths = ta.list_dataset(a.check_data)[0]
        load = ta.make_loader(a.check_data, a.rate, n)
        pick = subset(len(paths), a.check_clips)
        x = np.stack([load(paths[i]) for i in pick]).astype(np.float32)
        what = f"{len(pick)} clips of {a.check_data}"
    else:
        g = np.random.default_rng(1)
        x = (g.standard_normal((a.check_clips, n)) * 3000).astype(
            np.float32)
        what = f"{a.check_clips} clips of noise"
    x = torch.from_numpy(x).to(dev)
    with torch.inference_mode():
        got = fn(x)
        want = torch.stack([features(a, x[i:i + 1]) for i in range(len(x))])
    diff = float((got - want).abs().max())
    return diff, what, tuple(got.shape[1:])


def event_times(fn, xs, reps):
    """Milliseconds of fn(x) per call, CUDA events, over alternating xs."""
    for x in xs:
        fn(x)
    torch.cuda.synchronize()
    times = []
    for r in range(reps):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        fn(xs[r % len(xs)])
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    return times


def wall_times(fn, xs, reps):
    for x in xs:
        fn(x)
    times = []
    for r in range(reps):
        t0 = time.perf_counter()
        fn(xs[r % len(xs)])
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def run_batched(a):
    dev = torch.device(a.device)
    fn = batched_fn(a, dev)
    diff, what, shape = check_batched(a, fn, dev)
    res = {"mode": "batched", "feature": a.feature, "batch": a.batch,
           "max_diff": diff, "tolerance": TOLERANCE, "checked_on": what,
           "shape": shape, "match": diff <= TOLERANCE,
           "device": device_name(dev), "torch": torch.__version__,
           "torchaudio": torchaudio.__version__}
    log(f"batched {a.feature}: largest difference from "
        f"torchaudio.compliance.kaldi {diff:.3g} on {what}")
    if not res["match"]:
        return res
    g = torch.Generator(device=dev).manual_seed(1)
    n = a.rate * a.seconds
    # Two batches, alternated: never cache-resident. Random int16 values.
    xs = [torch.randint(-32768, 32768, (a.batch, n), device=dev,
                        generator=g).float() for _ in range(2)]
    with torch.inference_mode():
        ms = (event_times if dev.type == "cuda" else wall_times)(
            fn, xs, a.reps)
    med = statistics.median(ms)
    res.update({"reps": a.reps, "median_ms": med, "min_ms": min(ms),
                "per_clip_us": med * 1e3 / a.batch,
                "timer": "cuda events" if dev.type == "cuda" else "wall"})
    return res


def device_name(dev):
    return torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("mode", choices=("loop", "batched"))
    ap.add_argument("data", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--feature", choices=("fbank", "mfcc"), default="fbank")
    ap.add_argument("--num-mel-bins", type=int, default=80)
    ap.add_argument("--num-ceps", type=int, default=13)
    ap.add_argument("--rate", type=int, default=16000)
    ap.add_argument("--seconds", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--loader", default="main",
                    help="main, workers, cpu-workers, or several, "
                    "comma-separated (default main)")
    ap.add_argument("--workers", type=int,
                    default=min(16, len(os.sched_getaffinity(0))))
    ap.add_argument("--limit", type=int, default=0,
                    help="loop over this many clips, spread evenly "
                    "(default all)")
    ap.add_argument("--batch", type=int, default=16384)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--check-data")
    ap.add_argument("--check-clips", type=int, default=8)
    a = ap.parse_intermixed_args()
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("bench-anchor-kaldi: torch has no CUDA device here "
                 "(--device cpu)")
    if a.mode == "loop":
        if not a.data or not a.out:
            ap.error("loop needs DATA and OUT.h5")
        bad = [x for x in a.loader.split(",") if x not in LOADERS]
        if bad or not a.loader:
            ap.error(f"--loader takes {', '.join(LOADERS)}, not "
                     f"'{','.join(bad)}'")
        if a.loader.replace("main", "").strip(",") and a.workers < 1:
            ap.error("--loader workers and cpu-workers need --workers >= 1")
        res = run_loops(a)
    else:
        res = run_batched(a)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
