#!/usr/bin/env python3
"""bench-anchor-torch - the Python pipeline a user would write instead of
melpipe on a GPU machine: the anchor that scripts/bench compares against.

Usage:
  bench-anchor-torch.py [options] DATA OUT.h5
      Loads every DATA/<label>/*.wav (scipy.io.wavfile), cuts 512-sample
      windows, computes torchaudio's MelSpectrogram on the GPU in batches
      (pinned host memory, non-blocking copies), converts to dB
      (AmplitudeToDB), casts to float16 and writes OUT.h5 with h5py in
      melpipe's layout (formats/hdf5.md): training/validation/testing from
      DATA's Speech Commands lists, each with features [N, n_mels, 1],
      label, clip, segment, offset; /labels; /clips.
      --loader threads (the default): a thread pool in this process loads
      the files. --loader workers: a torch.utils.data.DataLoader does, as
      the VoxCeleb-style trainers do: --workers worker processes (default:
      the cores), pin_memory, --prefetch batches ahead each. Both write
      the same file for the same data.
      Without CUDA it runs on the CPU and says so: a smoke test of the
      script, not a measurement.
  bench-anchor-torch.py --mel-alone [--frames N] [--clip-samples S]
                        [--reps R]
      Times torchaudio's MelSpectrogram alone on a device-resident batch of
      N random rows of S samples (default n_fft: one frame a row; the
      keyword-spotting job's clips are 16000), CUDA events, median of R,
      and the whole chain from s16 (scale, mel, dB, f16) on the same batch.

Written the way a competent user writes it: straightforward, no tricks,
nothing held back. The last line of output is one JSON object with the
timings; everything else goes to stderr.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import time

T_START = time.perf_counter()

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import scipy.io.wavfile  # noqa: E402
import torch  # noqa: E402
import torchaudio  # noqa: E402

T_IMPORTED = time.perf_counter()

SPLITS = ("training", "validation", "testing")


def list_dataset(root):
    """Sorted relative paths of DATA/<label>/*.wav, label names, and the
    split of each path from the Speech Commands lists."""
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


def load_wav(root, rel, rate, n_samples):
    """DATA/rel's int16 samples (channels averaged), cut or zero-padded to
    n_samples."""
    sr, x = scipy.io.wavfile.read(os.path.join(root, rel))
    if x.ndim == 2:
        x = x.mean(axis=1).astype(np.int16)
    if sr != rate:
        raise ValueError(f"{rel}: {sr} Hz, expected {rate}")
    if len(x) >= n_samples:
        return x[:n_samples]
    return np.pad(x, (0, n_samples - len(x)))


def make_loader(root, rate, n_samples):
    return lambda rel: load_wav(root, rel, rate, n_samples)


class WavClips(torch.utils.data.Dataset):
    """The clips as a map-style dataset: item i is path i's samples."""

    def __init__(self, root, paths, rate, n_samples):
        self.root, self.paths = root, paths
        self.rate, self.n_samples = rate, n_samples

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return torch.from_numpy(load_wav(self.root, self.paths[i],
                                         self.rate, self.n_samples))


def thread_batches(a, paths, n_samples):
    """Batches of a.batch clips, in order, as int16 tensors [k, n_samples]
    in ordinary memory, loaded by a thread pool of a.threads."""
    load = make_loader(a.data, a.rate, n_samples)
    with concurrent.futures.ThreadPoolExecutor(a.threads) as ex:
        clips = ex.map(load, paths)
        for start in range(0, len(paths), a.batch):
            k = min(a.batch, len(paths) - start)
            yield torch.from_numpy(np.stack([next(clips) for _ in range(k)]))


def worker_batches(a, paths, n_samples, pin):
    """The same batches from a DataLoader of a.workers processes, each
    loading whole batches, a.prefetch ahead, pinned when pin."""
    # fork, Linux's usual start: the workers touch no CUDA and need no
    # fresh interpreter (spawn would import torch once more in each).
    return iter(torch.utils.data.DataLoader(
        WavClips(a.data, paths, a.rate, n_samples), batch_size=a.batch,
        shuffle=False, num_workers=a.workers, pin_memory=pin,
        prefetch_factor=a.prefetch, multiprocessing_context="fork"))


def run_pipeline(a):
    dev = torch.device(a.device)
    t0 = time.perf_counter()
    mel = torchaudio.transforms.MelSpectrogram(
        sample_rate=a.rate, n_fft=a.n_fft, hop_length=a.hop,
        n_mels=a.n_mels, center=False, power=2.0).to(dev)
    to_db = torchaudio.transforms.AmplitudeToDB(stype="power").to(dev)
    torch.zeros(1, device=dev).sum().item()   # CUDA context up front
    t_init = time.perf_counter() - t0

    paths, labels, clip_labels, splits = list_dataset(a.data)
    if not paths:
        sys.exit(f"bench-anchor-torch: no .wav files under '{a.data}'")
    n_samples = a.seconds * a.rate
    n_seg = n_samples // a.seg_len
    n_frames = 1 + (a.seg_len - a.n_fft) // a.hop
    f, feats, row_in_split = create_output(a.out, a, paths, labels,
                                           clip_labels, splits, n_seg,
                                           n_frames)
    if a.loader == "workers":
        batches = worker_batches(a, paths, n_samples, dev.type == "cuda")
    else:
        batches = thread_batches(a, paths, n_samples)
    t_load = t_gpu = t_write = 0.0
    for start in range(0, len(paths), a.batch):
        idx = np.arange(start, min(start + a.batch, len(paths)))
        t1 = time.perf_counter()
        x = next(batches)
        t2 = time.perf_counter()
        if dev.type == "cuda" and not x.is_pinned():
            x = x.pin_memory()
        x = x.to(dev, non_blocking=True).float().div_(32768.0)
        windows = x[:, :n_seg * a.seg_len].reshape(-1, a.seg_len)
        out = to_db(mel(windows)).half().cpu().numpy()
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
        t_gpu += t3 - t2
        t_write += t4 - t3
    # The loader's end: the thread pool joined, the workers stopped.
    for _ in batches:
        pass
    t5 = time.perf_counter()
    f.close()
    t_end = time.perf_counter()
    return {"clips": len(paths), "rows": len(paths) * n_seg,
            "import_s": T_IMPORTED - T_START, "init_s": t_init,
            "load_wait_s": t_load, "gpu_s": t_gpu,
            "write_s": t_write + (t_end - t5),
            "total_s": t_end - t0,
            "process_s": t_end - T_START,
            "loader": a.loader, **loader_info(a, dev), "batch_clips": a.batch,
            "torch": torch.__version__, "torchaudio": torchaudio.__version__,
            "device": torch.cuda.get_device_name(dev)
            if dev.type == "cuda" else "cpu" + a.cpu_note}


def loader_info(a, dev):
    if a.loader == "workers":
        return {"workers": a.workers, "prefetch_factor": a.prefetch,
                "pin_memory": dev.type == "cuda"}
    return {"threads": a.threads}


def pick_device(a):
    """a.device, or the CPU where CUDA is asked for and there is none: a
    smoke test of the script, said on stderr and in the result."""
    a.cpu_note = ""
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        a.cpu_note = " (no CUDA device: a smoke test, not a measurement)"
        print("bench-anchor-torch: no CUDA device; running on the CPU, "
              "a smoke test of this script, not a measurement",
              file=sys.stderr)
        a.device = "cpu"


def event_times(fn, xs, reps):
    """Milliseconds of fn(x) per call, timed with CUDA events, rotating
    over the inputs xs."""
    for x in xs:
        fn(x)
    torch.cuda.synchronize()
    times = []
    for r in range(reps):
        x = xs[r % len(xs)]
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        fn(x)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    return times


def run_mel_alone(a):
    dev = torch.device(a.device)
    if dev.type != "cuda":
        sys.exit("bench-anchor-torch: --mel-alone needs a CUDA device")
    mel = torchaudio.transforms.MelSpectrogram(
        sample_rate=a.rate, n_fft=a.n_fft, hop_length=a.hop,
        n_mels=a.n_mels, center=False, power=2.0).to(dev)
    to_db = torchaudio.transforms.AmplitudeToDB(stype="power").to(dev)
    g = torch.Generator(device=dev).manual_seed(1)
    # Two input sets of hundreds of MB each: never cache-resident.
    width = a.clip_samples or a.n_fft
    xf = [torch.randn(a.frames, width, device=dev, generator=g) * 0.1
          for _ in range(2)]
    xs = [torch.randint(-32768, 32768, (a.frames, width), device=dev,
                        dtype=torch.int32, generator=g).to(torch.int16)
          for _ in range(2)]
    with torch.inference_mode():
        t_mel = event_times(mel, xf, a.reps)
        t_chain = event_times(
            lambda x: to_db(mel(x.float().div_(32768.0))).half(), xs, a.reps)
    n = a.frames * width
    mel_ms = statistics.median(t_mel)
    chain_ms = statistics.median(t_chain)
    return {"frames": a.frames, "n_fft": a.n_fft, "clip_samples": width,
            "hop": a.hop, "reps": a.reps,
            "mel_ms_median": mel_ms, "mel_ms_min": min(t_mel),
            "mel_gsamples_s": n / mel_ms / 1e6,
            "chain_ms_median": chain_ms, "chain_ms_min": min(t_chain),
            "chain_gsamples_s": n / chain_ms / 1e6,
            "torch": torch.__version__, "torchaudio": torchaudio.__version__,
            "device": torch.cuda.get_device_name(dev)}


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--mel-alone", action="store_true")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--threads", type=int, default=None,
                    help="loader threads (default: the thread pool's "
                    "default, min(32, cores + 4))")
    ap.add_argument("--loader", choices=("threads", "workers"),
                    default="threads",
                    help="who loads the files: a thread pool in this "
                    "process, or DataLoader worker processes (default "
                    "threads)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="DataLoader worker processes with --loader "
                    "workers (default: the cores)")
    ap.add_argument("--prefetch", type=int, default=2,
                    help="batches each worker loads ahead (DataLoader's "
                    "prefetch_factor, default 2)")
    ap.add_argument("--batch", type=int, default=1024,
                    help="clips per GPU batch, and per DataLoader batch "
                    "(default 1024)")
    ap.add_argument("--rate", type=int, default=4096)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--seg-len", type=int, default=512)
    ap.add_argument("--n-fft", type=int, default=512)
    ap.add_argument("--hop", type=int, default=512)
    ap.add_argument("--n-mels", type=int, default=32)
    ap.add_argument("--frames", type=int, default=316480)
    ap.add_argument("--clip-samples", type=int, default=None,
                    help="--mel-alone: samples a row (default n_fft)")
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    if a.threads is None:
        a.threads = min(32, (os.cpu_count() or 1) + 4)
    if a.workers < 1 or a.prefetch < 1 or a.batch < 1:
        ap.error("--workers, --prefetch and --batch must be at least 1")
    if a.mel_alone:
        res = run_mel_alone(a)
    else:
        if not a.data or not a.out:
            ap.error("DATA and OUT.h5 are needed")
        pick_device(a)
        res = run_pipeline(a)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
