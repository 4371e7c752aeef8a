#!/usr/bin/env python3
"""bench-run - the body of scripts/bench (run that, not this).

Makes the data of the 10-second job, then measures side by side, in
rounds, the parallel read floor, the melpipe pipeline end to end, each
stage alone on a recorded stream, gpumel's kernels alone
(bin/gpumel-cuda-bench), and the Python anchor a user would write
instead; prints a table and writes it as markdown. docs/BENCHMARKS.md
says what every row means.
"""
import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The 10-second job (docs/BENCHMARKS.md): 10 s clips at 4096 Hz, 512
# sample windows with hop 512, n_fft 512, hop 512, 32 mels, dB, f16.
RATE, SECONDS = 4096, 10
SEG_LEN, SEG_HOP = 512, 512
N_FFT, HOP, N_MELS = 512, 512, 32
SEGS_PER_CLIP = (RATE * SECONDS - SEG_LEN) // SEG_HOP + 1
MEL_FRAMES = 316480            # kernels-alone batch: 3,956 clips' windows
SPLITS = ("training", "validation", "testing")

# Targets (docs/BENCHMARKS.md), as (key, text, goal, higher_is_better).
TARGETS_GPU = [
    ("speedup_anchor", "pipeline vs torchaudio anchor (x faster)", 8.0, 1),
    ("pipe_over_floor", "pipeline / parallel read floor", 3.0, 0),
    ("pipe_over_slowest", "pipeline / slowest stage alone", 1.3, 0),
    ("gpumel_gbs", "gpumel alone, GB/s of s16 input", 3.0, 1),
    ("kernels_vs_torch", "gpumel kernels vs torchaudio MelSpectrogram "
     "(x faster, same batch)", 5.0, 1),
]
TARGETS_CPU = [
    ("speedup_anchor", "pipeline vs numpy anchor (x faster; issue 4's "
     "2-core target)", 5.0, 1),
    ("pipe_over_slowest", "pipeline / slowest stage alone", 1.3, 0),
]


class BenchError(Exception):
    pass


def say(msg=""):
    print(msg, flush=True)


def note(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def q(s):
    return shlex.quote(str(s))


def fmt_s(x):
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 100 else f"{x:.1f}"


def fmt_x(x):
    if x is None:
        return "-"
    return f"{x:.2f}x" if x < 100 else f"{x:.0f}x"


# ---------------------------------------------------------------------------
# The machine and the tools


def sh_out(cmd, env=None):
    """stdout of a command, or None when it fails or is missing."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                           timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def machine_info():
    info = {"nproc": len(os.sched_getaffinity(0)),
            "kernel": platform.release(), "cpu": "?", "mem_gib": None,
            "gpus": []}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    info["mem_gib"] = int(line.split()[1]) / 2**20
    except OSError:
        pass
    if shutil.which("nvidia-smi"):
        out = sh_out(["nvidia-smi", "-L"])
        if out:
            info["gpus"] = [ln for ln in out.splitlines()
                            if ln.startswith("GPU")]
    return info


_PROBED = {}


def python_with(modules, candidates):
    """The first interpreter of candidates that imports all modules."""
    code = "import " + ", ".join(modules)
    for py in candidates:
        if not py or not shutil.which(py):
            continue
        key = (shutil.which(py), code)
        if key not in _PROBED:
            _PROBED[key] = subprocess.run(
                [py, "-c", code], capture_output=True).returncode == 0
        if _PROBED[key]:
            return key[0]
    return None


def help_text(prog, env):
    p = subprocess.run([prog, "--help"], capture_output=True, text=True,
                       env=env)
    if p.returncode != 0:
        raise BenchError(f"'{prog} --help' failed (exit {p.returncode}): "
                         f"{(p.stderr or p.stdout).strip()[-400:]}")
    return p.stdout + p.stderr


class Tools:
    """Paths, environments and the program command lines."""

    def __init__(self, a, gpu):
        self.bin = os.path.abspath(a.bin)
        self.env = dict(os.environ)
        libs = a.libs or os.environ.get("MELPIPE_LIBS")
        paths = []
        if libs:
            if not os.path.isdir(libs):
                raise BenchError(f"libs folder '{libs}' is not a folder")
            paths.append(os.path.abspath(libs))
        for d in ("/usr/local/cuda/lib64",
                  "/usr/local/cuda/targets/x86_64-linux/lib"):
            if gpu and os.path.isdir(d):
                paths.append(d)
        if self.env.get("LD_LIBRARY_PATH"):
            paths.append(self.env["LD_LIBRARY_PATH"])
        # Only the melpipe programs get this environment: the carried
        # libraries must not leak into Python, cat or find.
        if paths:
            self.env["LD_LIBRARY_PATH"] = ":".join(paths)
        self.plain_env = dict(os.environ)
        for p in ("wavcat", "segment", "gpumel", "h5pack"):
            path = os.path.join(self.bin, p)
            if not os.access(path, os.X_OK):
                raise BenchError(f"'{path}' is missing or not executable "
                                 "(make, or --bin DIR)")
        self.help = {p: help_text(self.prog(p), self.env)
                     for p in ("wavcat", "segment", "gpumel", "h5pack")}
        self.versions = {p: sh_out([self.prog(p), "--version"], self.env)
                         for p in self.help}
        self.device = "cuda" if gpu else "cpu"
        self.verbose = {p: "--verbose" in h or re.search(r"(?<![\w-])-v\b", h)
                        is not None for p, h in self.help.items()}
        self.preset = "--preset" in self.help["gpumel"] and \
            "torchaudio" in self.help["gpumel"]
        cb = os.path.join(self.bin, "gpumel-cuda-bench")
        self.cuda_bench = cb if os.access(cb, os.X_OK) else None
        time_bin = "/usr/bin/time"
        self.time_bin = time_bin if os.access(time_bin, os.X_OK) else None

    def prog(self, name):
        return os.path.join(self.bin, name)

    def v(self, name):
        return " -v" if self.verbose[name] else ""

    def wavcat(self, data):
        return f"{q(self.prog('wavcat'))}{self.v('wavcat')} --rate {RATE} " \
            f"{q(data)}"

    def segment(self):
        return f"{q(self.prog('segment'))}{self.v('segment')} " \
            f"--len {SEG_LEN} --hop {SEG_HOP}"

    def gpumel(self):
        # The torchaudio preset makes the pipeline compute exactly what
        # the anchors compute (HTK mel scale, no filter norm); the options
        # after it are the 10-second job's.
        preset = " --preset torchaudio" if self.preset else ""
        return f"{q(self.prog('gpumel'))}{self.v('gpumel')}{preset} " \
            f"--n-fft {N_FFT} --hop {HOP} --n-mels {N_MELS} --no-center " \
            f"--log db --dtype f16 --device {self.device}"

    def h5pack(self, out):
        return f"{q(self.prog('h5pack'))}{self.v('h5pack')} -o {q(out)}"

    def rss_wrap(self, cmd, rss_file):
        """cmd (one program and its arguments) run so that its peak RSS
        lands in rss_file."""
        if self.time_bin:
            return f"{self.time_bin} -f %M -o {q(rss_file)} {cmd}"
        return f"{q(sys.executable)} {q(os.path.join(HERE, 'bench-rss.py'))}" \
            f" {q(rss_file)} {cmd}"


# ---------------------------------------------------------------------------
# Running and timing


class Runner:
    def __init__(self, logdir):
        self.logdir = logdir

    def run(self, name, cmd, env, check_out=None):
        """Runs cmd in bash with pipefail; returns wall seconds. A failure
        (non-zero exit, or check_out not made) stops the benchmark with the
        command's stderr."""
        log = os.path.join(self.logdir, re.sub(r"[^A-Za-z0-9_.-]", "_", name)
                           + ".log")
        if check_out and os.path.exists(check_out):
            os.unlink(check_out)
        with open(log, "w") as lf:
            t0 = time.perf_counter()
            p = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd],
                               env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=lf)
            dt = time.perf_counter() - t0
        if p.returncode != 0 or (check_out and not os.path.exists(check_out)):
            with open(log, errors="replace") as lf:
                tail = lf.read()[-3000:]
            why = f"exit {p.returncode}" if p.returncode else \
                f"'{check_out}' was not made"
            raise BenchError(f"{name} failed ({why})\n  command: {cmd}\n"
                             f"  stderr ({log}):\n{tail}")
        return dt

    def run_json(self, name, argv, env):
        """Runs a Python helper whose last stdout line is JSON; returns
        (wall seconds, the object)."""
        log = os.path.join(self.logdir, name + ".log")
        with open(log, "w") as lf:
            t0 = time.perf_counter()
            p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=lf, text=True)
            dt = time.perf_counter() - t0
        if p.returncode != 0:
            with open(log, errors="replace") as lf:
                tail = lf.read()[-3000:]
            raise BenchError(f"{name} failed (exit {p.returncode})\n"
                             f"  command: {' '.join(map(q, argv))}\n"
                             f"  stderr ({log}):\n{tail}")
        try:
            return dt, json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise BenchError(f"{name}: no JSON result on its last line:\n"
                             f"{p.stdout[-1000:]}")


class Row:
    def __init__(self, key, what, unit_bytes=None, clips=None):
        self.key, self.what = key, what
        self.times = []
        self.unit_bytes, self.clips = unit_bytes, clips
        self.extra = {}
        self.skipped = None

    @property
    def median(self):
        return statistics.median(self.times) if self.times else None

    @property
    def min(self):
        return min(self.times) if self.times else None


# ---------------------------------------------------------------------------
# Data, checks


def gen_data(a, root, clips):
    d = os.path.join(root, f"data-{clips}")
    need = clips * (44 + 2 * RATE * SECONDS)
    if not os.path.exists(os.path.join(d, ".bench-params.json")):
        free = shutil.disk_usage(root).free
        if free < need * 1.1:
            raise BenchError(f"'{root}' has {free / 1e9:.1f} GB free; "
                             f"{clips} clips need {need / 1e9:.1f} GB")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, os.path.join(HERE, "bench-gen.py"),
                        "--clips", str(clips), "--rate", str(RATE),
                        "--seconds", str(SECONDS), d],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError(f"making the data in '{d}' failed:\n{p.stderr}")
    info = json.loads(p.stdout.strip().splitlines()[-1])
    say(f"data: {d}: {clips} clips ({need / 1e9:.2f} GB), "
        f"{info['training']}/{info['validation']}/{info['testing']} "
        f"training/validation/testing; "
        + ("reused" if info["reused"] else
           f"made in {time.perf_counter() - t0:.1f} s"))
    info["dir"] = d
    info["bytes"] = need
    info["sample_bytes"] = clips * 2 * RATE * SECONDS
    return info


def check_h5(path, data, what):
    """Checks that an HDF5 dataset holds every window of every clip in the
    right split, in the 10-second job's shape; returns a one-line
    summary."""
    try:
        import h5py
        import numpy as np
    except ImportError as e:
        raise BenchError(f"checking '{path}' needs h5py and numpy in "
                         f"{sys.executable}: {e}")
    try:
        import hdf5plugin  # noqa: F401  (registers the zstd filter)
    except ImportError:
        pass
    want = {s: data[s] * SEGS_PER_CLIP for s in SPLITS}
    clips = data["params"]["clips"]
    with h5py.File(path, "r") as f:
        got = {}
        for s in SPLITS:
            if s not in f:
                raise BenchError(f"{what}: '{path}' has no group '{s}'")
            feats = f[s]["features"]
            if feats.shape[1:] != (N_MELS, 1) or feats.dtype != np.float16:
                raise BenchError(f"{what}: '{path}' {s}/features is "
                                 f"{feats.shape} {feats.dtype}, expected "
                                 f"[N, {N_MELS}, 1] float16")
            got[s] = feats.shape[0]
            for d in ("label", "clip", "segment", "offset"):
                if f[s][d].shape[0] != got[s]:
                    raise BenchError(f"{what}: '{path}' {s}/{d} has "
                                     f"{f[s][d].shape[0]} rows, features "
                                     f"{got[s]}")
            if got[s]:
                try:
                    x = feats[:min(got[s], 4096)].astype(np.float32)
                except OSError as e:
                    raise BenchError(f"{what}: unable to read '{path}' "
                                     f"{s}/features: {e} (a compression "
                                     "filter missing? hdf5plugin or "
                                     "HDF5_PLUGIN_PATH)")
                if not np.isfinite(x).all():
                    raise BenchError(f"{what}: '{path}' {s}/features has "
                                     "non-finite values")
        n_clips = f["clips"]["path"].shape[0]
        n_skip = f["skipped"]["path"].shape[0] if "skipped" in f else 0
    total = sum(got.values())
    if got != want or n_clips != clips or n_skip:
        raise BenchError(
            f"{what}: '{path}' holds {got} rows, {n_clips} clips, "
            f"{n_skip} skipped; expected {want} "
            f"(= clips x {SEGS_PER_CLIP} per split), {clips} clips, 0 "
            "skipped")
    return f"{total} rows = {clips} clips x {SEGS_PER_CLIP} " \
        f"({got['training']}/{got['validation']}/{got['testing']})"


def compare_h5(a_path, b_path, rows=20000):
    """Largest and 99.9th-percentile absolute difference (dB) between the
    features of two datasets, over the first rows of each split, matched
    by clip path and segment."""
    import h5py
    import numpy as np
    diffs = []
    with h5py.File(a_path, "r") as fa, h5py.File(b_path, "r") as fb:
        pa, pb = fa["clips"]["path"][()], fb["clips"]["path"][()]
        for s in SPLITS:
            n = min(rows, fa[s]["features"].shape[0])
            if n == 0:
                continue
            ka = [(pa[c], g) for c, g in zip(fa[s]["clip"][:n],
                                             fa[s]["segment"][:n])]
            kb = [(pb[c], g) for c, g in zip(fb[s]["clip"][:n],
                                             fb[s]["segment"][:n])]
            if ka != kb:
                return None
            x = fa[s]["features"][:n].astype(np.float64)
            y = fb[s]["features"][:n].astype(np.float64)
            diffs.append(np.abs(x - y).ravel())
    if not diffs:
        return None
    d = np.concatenate(diffs)
    return float(d.max()), float(np.percentile(d, 99.9))


def read_rss(path):
    try:
        with open(path) as f:
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


# ---------------------------------------------------------------------------
# The measurements


def floor_cmds(data_dir, nproc, clips):
    per = max(1, -(-clips // (4 * nproc)))
    find = f"cd {q(data_dir)} && find . -name '*.wav' -print0"
    return (f"{find} | xargs -0 -P {nproc} -n {per} cat > /dev/null",
            f"{find} | xargs -0 cat > /dev/null")


def pipeline_cmd(t, data_dir, out, rss_dir=None):
    stages = [("wavcat", t.wavcat(data_dir)), ("segment", t.segment()),
              ("gpumel", t.gpumel()), ("h5pack", t.h5pack(out))]
    if rss_dir:
        stages = [(n, t.rss_wrap(c, os.path.join(rss_dir, f"rss.{n}")))
                  for n, c in stages]
    return " | ".join(c for _, c in stages)


def pipeline_rss(t, runner, data, out, rss_dir, tag):
    """One pipeline run with each stage's peak RSS recorded (also the
    warm-up); returns ({stage: KiB}, seconds)."""
    for n in ("wavcat", "segment", "gpumel", "h5pack"):
        p = os.path.join(rss_dir, f"rss.{n}")
        if os.path.exists(p):
            os.unlink(p)
    dt = runner.run(f"pipeline-rss-{tag}",
                    pipeline_cmd(t, data["dir"], out, rss_dir), t.env,
                    check_out=out)
    check_h5(out, data, f"pipeline ({tag} clips)")
    return {n: read_rss(os.path.join(rss_dir, f"rss.{n}"))
            for n in ("wavcat", "segment", "gpumel", "h5pack")}, dt


def run_cuda_bench(t, runner, fft_path):
    """bin/gpumel-cuda-bench --bench on the torchaudio-alone batch size:
    its output, its RESULT lines, and the kernels' time for the 10-second
    job (s16 in, no top_db) on the FFT path gpumel itself chose (fft_path)."""
    h = sh_out([t.cuda_bench, "--help"], t.env) or ""
    so = os.path.join(t.bin, "gpumel-cuda.so")
    argv = [t.cuda_bench]
    if "--bench" in h:
        argv.append(f"--bench={so}")
    if "--batch" in h:
        argv.append(f"--batch={MEL_FRAMES}")
    log = os.path.join(runner.logdir, "gpumel-cuda-bench.log")
    p = subprocess.run(argv, capture_output=True, text=True, env=t.env)
    with open(log, "w") as f:
        f.write(p.stdout + p.stderr)
    if p.returncode != 0:
        raise BenchError(f"gpumel-cuda-bench failed (exit {p.returncode}):"
                         f"\n  command: {' '.join(argv)}\n"
                         f"{(p.stderr + p.stdout)[-2000:]}")
    out = p.stdout + p.stderr
    res = {"argv": " ".join(argv), "output": out.strip(),
           "frames": MEL_FRAMES, "results": []}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            f = line.split()
            res["results"].append(
                {"what": f[1], **dict(kv.split("=", 1) for kv in f[2:]
                                      if "=" in kv)})
    pick = [r for r in res["results"] if r["what"] == "kernels" and
            r.get("in") == "s16" and r.get("top_db") == "none"]
    pick = [r for r in pick if r.get("path") == fft_path] or pick
    if pick:
        best = pick[0]
        res["path"] = best.get("path")
        res["gsamples_s"] = float(best["gsamples_per_s"])
        res["median_ms"] = float(best["median_ms"])
    return res


def remove_stale(folder):
    """Removes the recorded streams that runs killed before their clean-up
    left in folder (melpipe-bench-PID or rec-PID of a process now gone)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        m = re.fullmatch(r"(?:melpipe-bench|rec)-([0-9]+)", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def main_bench(a):
    info = machine_info()
    gpu = bool(info["gpus"]) and not a.cpu
    nproc = info["nproc"]
    say("# melpipe benchmark")
    say(f"machine: {nproc} cores, {info['cpu']}, "
        + (f"{info['mem_gib']:.0f} GiB RAM, " if info["mem_gib"] else "")
        + f"Linux {info['kernel']}")
    say("gpu: " + ("; ".join(info["gpus"]) if info["gpus"] else "none")
        + ("" if gpu or not info["gpus"] else " (not used: --cpu)"))
    t = Tools(a, gpu)
    say("programs: " + "; ".join(f"{v or p + ' ?'}"
                                 for p, v in t.versions.items())
        + f" (from {t.bin}; LD_LIBRARY_PATH="
        + (t.env.get("LD_LIBRARY_PATH") or "unset") + ")")
    say(f"path: {'GPU' if gpu else 'CPU'} (gpumel --device {t.device})")

    root = os.path.abspath(a.dir)
    os.makedirs(root, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    logdir = os.path.join(root, "logs")
    os.makedirs(logdir, exist_ok=True)
    runner = Runner(logdir)
    data = gen_data(a, root, a.clips)
    clips = a.clips
    sample_bytes = data["sample_bytes"]

    # Recorded streams: in /dev/shm when it has room (memory, like a pipe),
    # else in the work dir. Those of killed runs go first.
    shm = "/dev/shm"
    remove_stale(shm)
    remove_stale(root)
    need = int(data["bytes"] * 3) + (1 << 30)
    if os.path.isdir(shm) and shutil.disk_usage(shm).free > need:
        rec = os.path.join(shm, f"melpipe-bench-{os.getpid()}")
    else:
        rec = os.path.join(root, f"rec-{os.getpid()}")
    os.makedirs(rec, exist_ok=True)
    outdir = os.path.join(root, "out")
    os.makedirs(outdir, exist_ok=True)
    res = {"machine": info, "gpu": gpu, "clips": clips, "runs": a.runs,
           "rss_tool": t.time_bin or "wait4 (scripts/bench-rss.py)",
           "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
           "versions": t.versions, "data": data["dir"], "rec": rec}
    try:
        rows, extra = measure(a, t, runner, data, rec, outdir, nproc, gpu)
        res.update(extra)
    finally:
        if not a.keep:
            shutil.rmtree(rec, ignore_errors=True)
    if a.scaling:
        res["scaling"] = scaling(a, t, runner, root, outdir)
    md = report(a, res, rows, sample_bytes, clips, gpu)
    for path in [os.path.join(root, "bench.md"),
                 os.path.join(root, f"bench-{stamp}.md")] + \
            ([os.path.join(os.environ["OUT"], "bench.md")]
             if os.environ.get("OUT") else []):
        with open(path, "w") as f:
            f.write(md)
    res["rows"] = {r.key: {"what": r.what, "times": r.times,
                           "median": r.median, "min": r.min,
                           "skipped": r.skipped, **r.extra} for r in rows}
    for path in [os.path.join(root, "bench.json")] + \
            ([os.path.join(os.environ["OUT"], "bench.json")]
             if os.environ.get("OUT") else []):
        with open(path, "w") as f:
            json.dump(res, f, indent=1, default=str)
    say(f"\nwritten: {os.path.join(root, 'bench.md')}, bench.json"
        + ("; $OUT/bench.md" if os.environ.get("OUT") else ""))
    return 0 if res.get("targets_ok", True) or not a.strict else 1


def measure(a, t, runner, data, rec, outdir, nproc, gpu):
    clips = data["params"]["clips"]
    d = data["dir"]
    sb = data["sample_bytes"]
    extra = {}
    par, one = floor_cmds(d, nproc, clips)
    out_pipe = os.path.join(outdir, "pipeline.h5")
    out_alone = os.path.join(outdir, "h5pack-alone.h5")
    clips_rec = os.path.join(rec, "clips.rec")
    segs_rec = os.path.join(rec, "segs.rec")
    feats_rec = os.path.join(rec, "feats.rec")

    say("\nwarming the page cache (every file read once)")
    runner.run("warm", par, t.plain_env)

    say("pipeline once with per-stage peak RSS (also its warm-up)")
    rss, dt = pipeline_rss(t, runner, data, out_pipe, outdir, str(clips))
    extra["rss_kib"] = rss
    extra["pipeline_cmd"] = pipeline_cmd(t, d, out_pipe)
    say(f"  {dt:.3f} s; " + check_h5(out_pipe, data, "pipeline"))

    say("recording the streams of each stage")
    rec_cmds = [("clips.rec", f"{t.wavcat(d)} > {q(clips_rec)}",
                 clips_rec),
                ("segs.rec", f"{t.segment()} < {q(clips_rec)} > "
                 f"{q(segs_rec)}", segs_rec),
                ("feats.rec", f"{t.gpumel()} < {q(segs_rec)} > "
                 f"{q(feats_rec)}", feats_rec)]
    for name, cmd, path in rec_cmds:
        dt = runner.run("record-" + name, cmd, t.env)
        say(f"  {name}: {os.path.getsize(path) / 1e9:.2f} GB in {dt:.2f} s")
    extra["stream_bytes"] = {n: os.path.getsize(p) for n, p in
                             (("clips", clips_rec), ("segs", segs_rec),
                              ("feats", feats_rec))}

    rows = []
    floor_par = Row("floor_par", f"floor: read all files, {nproc} parallel "
                    "cats", sb, clips)
    floor_one = Row("floor_one", "floor: read all files, one cat", sb, clips)
    pipe = Row("pipeline", "pipeline end to end "
               f"(gpumel --device {t.device})", sb, clips)
    # What one pipe hop allows: wavcat's stream read and checked by a
    # program that does nothing else. Every pipeline of these stages
    # carries the samples through such a hop, so it cannot beat this row.
    hop = Row("hop", "one pipe hop: wavcat -> recdump -q (decoded, "
              "checked, nothing else)", sb, clips)
    st = {
        "wavcat": Row("wavcat", "wavcat alone (files -> /dev/null)", sb,
                      clips),
        "segment": Row("segment", "segment alone (clips.rec -> /dev/null)",
                       sb, clips),
        "gpumel": Row("gpumel", "gpumel alone (segs.rec -> /dev/null)", sb,
                      clips),
        "h5pack": Row("h5pack", "h5pack alone (feats.rec -> .h5)", sb,
                      clips),
    }
    cmds = [
        (floor_par, par, t.plain_env, None),
        (floor_one, one, t.plain_env, None),
        (pipe, pipeline_cmd(t, d, out_pipe), t.env, out_pipe),
        (hop, f"{t.wavcat(d)} | {q(t.prog('recdump'))} -q", t.env, None),
        (st["wavcat"], f"{t.wavcat(d)} > /dev/null", t.env, None),
        (st["segment"], f"{t.segment()} < {q(clips_rec)} > /dev/null",
         t.env, None),
        (st["gpumel"], f"{t.gpumel()} < {q(segs_rec)} > /dev/null", t.env,
         None),
        (st["h5pack"], f"{t.h5pack(out_alone)} < {q(feats_rec)}", t.env,
         out_alone),
    ]
    rows += [floor_par, floor_one, pipe, hop] + list(st.values())

    anchor = None
    anchor_argv = None
    if not a.skip_anchor:
        if gpu:
            py = python_with(["torch", "torchaudio", "scipy.io.wavfile",
                              "h5py"], [a.torch_python, "python3"])
            anchor = Row("anchor", "anchor: Python, threaded scipy loading,"
                         " torchaudio on the GPU, h5py (in process)", sb,
                         clips)
            script = "bench-anchor-torch.py"
        else:
            py = python_with(["numpy", "h5py", "soundfile"],
                             [a.anchor_python, "/usr/bin/python3"]) or \
                python_with(["numpy", "h5py"],
                            [a.anchor_python, "/usr/bin/python3",
                             sys.executable])
            anchor = Row("anchor", "anchor: Python, threaded soundfile "
                         "loading, numpy rfft + mel, h5py (in process)",
                         sb, clips)
            script = "bench-anchor-numpy.py"
        if py is None:
            anchor.skipped = "no Python with " + (
                "torch, torchaudio, scipy, h5py" if gpu else "numpy, h5py")
            note(f"anchor skipped: {anchor.skipped}")
        else:
            out_anchor = os.path.join(outdir, "anchor.h5")
            anchor_argv = [py, os.path.join(HERE, script), d, out_anchor]
            anchor.extra["python"] = py
        anchor_wall = Row("anchor_wall", "anchor, wall clock incl. Python "
                          "start and imports", sb, clips)
        rows += [anchor, anchor_wall]

    say(f"\nmeasuring: {a.runs} rounds, each row once per round")
    for r in range(a.runs):
        for row, cmd, env, chk in cmds:
            row.times.append(runner.run(f"{row.key}", cmd, env,
                                        check_out=chk))
            if chk == out_pipe and r == 0:
                check_h5(out_pipe, data, "pipeline")
            if chk == out_alone and r == 0:
                extra["h5pack_alone_check"] = check_h5(out_alone, data,
                                                       "h5pack alone")
        if anchor_argv and r < a.anchor_runs:
            wall, res = runner.run_json("anchor", anchor_argv,
                                        t.plain_env)
            if r == 0:
                extra["anchor_check"] = check_h5(anchor_argv[-1], data,
                                                 "anchor")
            anchor.times.append(res["total_s"])
            anchor_wall.times.append(wall)
            anchor.extra.setdefault("runs", []).append(res)
        say(f"  round {r + 1}: " + ", ".join(
            f"{row.key} {row.times[-1]:.2f}" for row in rows if row.times
            and len(row.times) == r + 1))
    extra["pipeline_check"] = check_h5(out_pipe, data, "pipeline")
    with open(os.path.join(runner.logdir, "pipeline.log"),
              errors="replace") as f:
        extra["pipeline_stderr"] = f.read()[-4000:]
    if anchor_argv and anchor.times:
        cmp = compare_h5(out_pipe, anchor_argv[-1])
        extra["agreement"] = cmp
    extra["anchor_argv"] = " ".join(map(q, anchor_argv)) \
        if anchor_argv else None

    # gpumel's kernels alone and torchaudio's MelSpectrogram alone.
    if gpu:
        kern = Row("kernels", "gpumel kernels alone, device-resident "
                   "(gpumel-cuda-bench)")
        tmel = Row("torch_mel", f"torchaudio MelSpectrogram alone, "
                   f"{MEL_FRAMES} frames of {N_FFT} on the GPU")
        tchain = Row("torch_chain", "torchaudio s16 -> mel -> dB -> f16, "
                     "same batch")
        rows += [kern, tmel, tchain]
        if t.cuda_bench:
            say("gpumel-cuda-bench")
            m = re.search(r"cuda[:0-9]*: .*\((\w+) fft\)",
                          extra["pipeline_stderr"])
            cb = run_cuda_bench(t, runner, m.group(1) if m else "fused")
            extra["cuda_bench"] = cb
            if "median_ms" in cb:
                kern.what += f", {cb['path']} FFT path, s16 in"
                kern.extra["gsamples_s"] = cb["gsamples_s"]
                kern.times = [cb["median_ms"] / 1e3]
            else:
                kern.skipped = "no RESULT line for s16 input, top_db " \
                    "none in its output"
        else:
            kern.skipped = "bin/gpumel-cuda-bench not built"
        py = python_with(["torch", "torchaudio", "scipy.io.wavfile",
                          "h5py"], [a.torch_python, "python3"])
        if py:
            say("torchaudio MelSpectrogram alone")
            _, m = runner.run_json("torch-mel-alone", [
                py, os.path.join(HERE, "bench-anchor-torch.py"),
                "--mel-alone", "--frames", str(MEL_FRAMES)], t.plain_env)
            extra["torch_mel"] = m
            tmel.times = [m["mel_ms_median"] / 1e3]
            tmel.extra.update(gsamples_s=m["mel_gsamples_s"],
                              min_s=m["mel_ms_min"] / 1e3)
            tchain.times = [m["chain_ms_median"] / 1e3]
            tchain.extra.update(gsamples_s=m["chain_gsamples_s"],
                                min_s=m["chain_ms_min"] / 1e3)
        else:
            tmel.skipped = tchain.skipped = "no Python with torch"
    return rows, extra


def scaling(a, t, runner, root, outdir):
    """Time per clip and peak RSS per stage at each size."""
    sizes = a.scaling_sizes
    say(f"\nscaling: {', '.join(map(str, sizes))} clips")
    out = {"sizes": {}}
    sets = {}
    for n in sizes:
        data = gen_data(a, root, n)
        par, _ = floor_cmds(data["dir"], len(os.sched_getaffinity(0)), n)
        runner.run(f"warm-{n}", par, t.plain_env)
        h5 = os.path.join(outdir, f"scaling-{n}.h5")
        rss, _ = pipeline_rss(t, runner, data, h5, outdir, str(n))
        sets[n] = (data, h5)
        out["sizes"][n] = {"times": [], "rss_kib": rss}
    # Rounds over the sizes, so that drift hits every size alike.
    for _ in range(a.runs):
        for n in sizes:
            data, h5 = sets[n]
            out["sizes"][n]["times"].append(runner.run(
                f"scaling-{n}", pipeline_cmd(t, data["dir"], h5), t.env,
                check_out=h5))
    for n in sizes:
        data, h5 = sets[n]
        check_h5(h5, data, f"pipeline ({n} clips)")
        s = out["sizes"][n]
        med = statistics.median(s["times"])
        s.update(median=med, per_clip_ms=med / n * 1e3)
        say(f"  {n} clips: median {med:.3f} s, "
            f"{med / n * 1e6:.1f} us/clip; peak RSS "
            + ", ".join(f"{k} {v / 1024:.0f} MiB" if v else f"{k} ?"
                        for k, v in s["rss_kib"].items()))
        if not a.keep:
            os.unlink(h5)
    lo, hi = min(sizes), max(sizes)
    s_lo, s_hi = out["sizes"][lo], out["sizes"][hi]
    out["per_clip_ratio"] = s_hi["per_clip_ms"] / s_lo["per_clip_ms"]
    # The line through the two ends: a fixed cost (start-up: process
    # launch, CUDA context, plans) plus a cost per clip; sizes between the
    # ends are checked against it.
    marg = (s_hi["median"] - s_lo["median"]) / (hi - lo)
    out["marginal_us_per_clip"] = marg * 1e6
    out["fixed_s"] = s_lo["median"] - marg * lo
    out["line_dev"] = {n: out["sizes"][n]["median"] /
                       (out["fixed_s"] + marg * n) - 1
                       for n in sizes if n not in (lo, hi)}
    out["rss_growth"] = {k: (s_hi["rss_kib"][k] / s_lo["rss_kib"][k]
                             if s_lo["rss_kib"][k] and s_hi["rss_kib"][k]
                             else None) for k in s_lo["rss_kib"]}
    return out


# ---------------------------------------------------------------------------
# The report


def report(a, res, rows, sample_bytes, clips, gpu):
    by = {r.key: r for r in rows}
    floor = by["floor_par"].median
    anchor = by.get("anchor")
    anchor_t = anchor.median if anchor and anchor.times else None
    info = res["machine"]
    L = []
    L.append("# melpipe benchmark results")
    L.append("")
    L.append(f"- date: {res['date']}")
    L.append(f"- machine: {info['nproc']} cores, {info['cpu']}"
             + (f", {info['mem_gib']:.0f} GiB RAM" if info["mem_gib"]
                else "") + f", Linux {info['kernel']}")
    L.append("- GPU: " + ("; ".join(info["gpus"]) or "none")
             + ("" if gpu or not info["gpus"] else " (not used: --cpu)"))
    L.append(f"- path: {'GPU' if gpu else 'CPU'}; {clips} clips of "
             f"{SECONDS} s at {RATE} Hz s16 ({sample_bytes / 1e9:.2f} GB "
             f"of samples, {clips * SEGS_PER_CLIP} windows); "
             f"{res['runs']} round{'s' if res['runs'] > 1 else ''}, "
             "median (min)")
    L.append("- programs: " + "; ".join(
        v or f"{p} (no --version)" for p, v in res["versions"].items()))
    L.append("")
    L.append("| what | median s | min s | vs anchor | vs floor | "
             "throughput |")
    L.append("|---|---:|---:|---:|---:|---|")
    for r in rows:
        if r.skipped:
            L.append(f"| {r.what} | skipped: {r.skipped} | | | | |")
            continue
        if not r.times:
            continue
        med = r.median
        mn = r.extra.get("min_s", r.min)
        vs_anchor = anchor_t / med if anchor_t and r.clips and \
            r.key not in ("anchor", "anchor_wall") else None
        vs_floor = med / floor if floor and r.clips else None
        if r.clips:
            tp = f"{r.clips / med:,.0f} clips/s, " \
                f"{r.unit_bytes / med / 1e9:.2f} GB/s s16"
        else:
            tp = f"{r.extra['gsamples_s']:.1f} Gsamples/s" \
                if "gsamples_s" in r.extra else ""
        unit_ms = not r.clips
        L.append(f"| {r.what} | "
                 + (f"{med * 1e3:.3f} ms" if unit_ms else fmt_s(med))
                 + " | " + (f"{mn * 1e3:.3f} ms" if unit_ms else fmt_s(mn))
                 + f" | {fmt_x(vs_anchor)} | "
                 + (fmt_x(vs_floor) if vs_floor else "-") + f" | {tp} |")
    L.append("")
    L.append("vs anchor: anchor time / this time (x faster than the "
             "anchor); vs floor: this time / parallel read floor.")

    # Targets.
    stage_keys = ("wavcat", "segment", "gpumel", "h5pack")
    stage_t = {k: by[k].median for k in stage_keys}
    slowest = max(stage_t, key=stage_t.get)
    pipe_t = by["pipeline"].median
    m = {"speedup_anchor": anchor_t / pipe_t if anchor_t else None,
         "pipe_over_floor": pipe_t / floor,
         "pipe_over_slowest": pipe_t / stage_t[slowest],
         "gpumel_gbs": sample_bytes / stage_t["gpumel"] / 1e9}
    if gpu and by.get("kernels") and by["kernels"].times and \
            by.get("torch_mel") and by["torch_mel"].times:
        m["kernels_vs_torch"] = by["torch_mel"].median / \
            by["kernels"].median
    L.append("")
    L.append("## Targets")
    L.append("")
    L.append("| target | measured | goal | met |")
    L.append("|---|---:|---:|---|")
    ok_all = True
    for key, text, goal, higher in (TARGETS_GPU if gpu else TARGETS_CPU):
        val = m.get(key)
        if val is None:
            L.append(f"| {text} | not measured | "
                     f"{'>=' if higher else '<='} {goal:g} | - |")
            continue
        ok = val >= goal if higher else val <= goal
        ok_all &= ok
        L.append(f"| {text} | {val:.2f} | {'>=' if higher else '<='} "
                 f"{goal:g} | {'yes' if ok else 'NO'} |")
    if not gpu and res["machine"]["nproc"] != 2:
        L.append("")
        L.append(f"(issue 4's CPU target is for a 2-core machine; this one "
                 f"has {res['machine']['nproc']}.)")
    L.append("")
    L.append(f"Slowest stage alone: {slowest} ({stage_t[slowest]:.3f} s).")
    hop_row = by.get("hop")
    if hop_row and hop_row.times:
        L.append(f"One pipe hop (wavcat -> recdump -q): "
                 f"{hop_row.median:.3f} s, {hop_row.median / floor:.2f}x "
                 "the parallel read floor; no pipeline of these stages "
                 "can be faster.")
    sc = res.get("scaling")
    if sc:
        sizes = sorted(sc["sizes"])
        L.append("")
        L.append("## Scaling")
        L.append("")
        L.append("| clips | median s | us per clip | peak RSS MiB "
                 "(wavcat / segment / gpumel / h5pack) |")
        L.append("|---:|---:|---:|---|")
        for n in sizes:
            s = sc["sizes"][n]
            rss = " / ".join(f"{v / 1024:.0f}" if v else "?"
                             for v in s["rss_kib"].values())
            L.append(f"| {n} | {s['median']:.3f} | "
                     f"{s['per_clip_ms'] * 1e3:.1f} | {rss} |")
        ratio = sc["per_clip_ratio"]
        lin = abs(ratio - 1) <= 0.15
        ok_all &= lin
        L.append("")
        L.append(f"- time per clip, {sizes[-1]} vs {sizes[0]} clips: "
                 f"{ratio:.3f} (goal within 15% of 1: "
                 f"{'yes' if lin else 'NO'})")
        L.append(f"- as a line through the two ends: fixed cost "
                 f"{sc['fixed_s']:.3f} s + {sc['marginal_us_per_clip']:.1f}"
                 " us per clip" + "".join(
                     f"; {n} clips {d * 100:+.1f}% off the line"
                     for n, d in sc["line_dev"].items()))
        lo_rss = sc["sizes"][sizes[0]]["rss_kib"]
        hi_rss = sc["sizes"][sizes[-1]]["rss_kib"]
        grow = {k: (lo_rss[k], hi_rss[k]) for k in lo_rss
                if lo_rss[k] and hi_rss[k]}
        # Flat: at most 20% or 16 MiB more, whichever is larger (per-clip
        # tables such as /clips legitimately add a little).
        flat = all(h - lo <= max(0.2 * lo, 16 * 1024)
                   for lo, h in grow.values())
        ok_all &= flat
        L.append("- peak RSS, largest vs smallest: " + ", ".join(
            f"{k} {(h - lo) / 1024:+.0f} MiB ({h / lo:.2f}x)"
            for k, (lo, h) in grow.items())
            + " (goal: flat, at most +20% or +16 MiB: "
            + f"{'yes' if flat else 'NO'})")
    res["targets_ok"] = ok_all

    L.append("")
    L.append("## Details")
    L.append("")
    rss = res.get("rss_kib") or {}
    L.append("- peak RSS per stage in the pipeline: " + ", ".join(
        f"{k} {v / 1024:.0f} MiB" if v else f"{k} ?" for k, v in rss.items())
        + f" (measured with {res.get('rss_tool')})")
    sbytes = res.get("stream_bytes", {})
    L.append("- recorded streams: " + ", ".join(
        f"{k}.rec {v / 1e9:.2f} GB" for k, v in sbytes.items()))
    L.append(f"- pipeline output: {res.get('pipeline_check')}")
    if res.get("anchor_check"):
        L.append(f"- anchor output: {res['anchor_check']}")
    ag = res.get("agreement")
    if ag:
        L.append(f"- pipeline vs anchor features, first rows of each split:"
                 f" max |diff| {ag[0]:.3f} dB, 99.9th percentile "
                 f"{ag[1]:.3f} dB (f16 output: steps of 0.0156 dB at 16-32"
                 f" dB, 0.03 at 32-64)")
    elif anchor and anchor.times:
        L.append("- pipeline vs anchor features: not compared (rows not "
                 "in the same order)")
    if anchor and anchor.extra.get("runs"):
        r0 = anchor.extra["runs"]
        keys = [k for k in ("import_s", "init_s", "load_wait_s", "gpu_s",
                            "dsp_s", "write_s", "total_s") if k in r0[0]]
        L.append("- anchor breakdown per run (s): " + "; ".join(
            ", ".join(f"{k[:-2]} {r[k]:.2f}" for k in keys) for r in r0))
        extra_info = {k: r0[0][k] for k in ("loader", "torch", "torchaudio",
                                            "device", "threads",
                                            "batch_clips", "python")
                      if k in r0[0]}
        L.append("- anchor: " + ", ".join(f"{k} {v}"
                                          for k, v in extra_info.items()))
    tm = res.get("torch_mel")
    if tm:
        L.append(f"- torchaudio MelSpectrogram alone: {tm['frames']} frames, "
                 f"median {tm['mel_ms_median']:.3f} ms = "
                 f"{tm['mel_gsamples_s']:.1f} Gsamples/s; s16 -> f16 dB "
                 f"chain {tm['chain_ms_median']:.3f} ms "
                 f"({tm['reps']} reps, CUDA events; torch {tm['torch']}, "
                 f"torchaudio {tm['torchaudio']}, {tm['device']})")
    L.append("")
    L.append("Commands:")
    L.append("")
    L.append("```")
    L.append(res.get("pipeline_cmd", ""))
    if res.get("anchor_argv"):
        L.append(res["anchor_argv"])
    L.append("```")
    cb = res.get("cuda_bench")
    if cb:
        L.append("")
        L.append(f"gpumel-cuda-bench (`{cb['argv']}`):")
        L.append("")
        L.append("```")
        L.append(cb["output"][-3000:])
        L.append("```")
    if res.get("pipeline_stderr", "").strip():
        L.append("")
        L.append("Stage reports of the last pipeline run (-v):")
        L.append("")
        L.append("```")
        L.append(res["pipeline_stderr"].strip())
        L.append("```")
    md = "\n".join(L) + "\n"
    say("")
    say(md)
    return md


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="scripts/bench",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Benchmark melpipe against the read floor and the "
        "Python anchor,\non the 10-second job (docs/BENCHMARKS.md). Run "
        "from anywhere; prints\na table and writes it as markdown to "
        "DIR/bench.md (and $OUT/bench.md\nwhen OUT is set).",
        epilog="Rows: the read floor (parallel and one cat), the pipeline "
        "end to end,\neach stage alone on a recorded stream, gpumel's "
        "kernels alone (GPU),\ntorchaudio's MelSpectrogram alone (GPU), "
        "and the anchor. See\ndocs/BENCHMARKS.md. Exit status: 0 done, 1 a "
        "stage failed (or a target\nwas missed with --strict), 2 usage.")
    ap.add_argument("--clips", type=int, default=39563,
                    help="clips in the dataset (default 39563, the 10-second "
                    "job's)")
    ap.add_argument("--runs", type=int, default=3,
                    help="rounds; each row runs once per round "
                    "(default 3)")
    ap.add_argument("--anchor-runs", type=int, default=None,
                    help="rounds that also run the anchor (default: "
                    "--runs)")
    ap.add_argument("--dir", default="/tmp/melpipe-bench",
                    help="work dir: data-N/, out/, logs/, bench.md "
                    "(default /tmp/melpipe-bench)")
    ap.add_argument("--bin", default=os.environ.get(
        "MELPIPE_BIN", os.path.join(ROOT, "bin")),
        help="the programs' folder (default $MELPIPE_BIN or bin/)")
    ap.add_argument("--libs", default=None,
                    help="folder of shared libraries the programs need "
                    "(default $MELPIPE_LIBS); LD_LIBRARY_PATH for them "
                    "alone")
    ap.add_argument("--keep", action="store_true",
                    help="keep the recorded streams and outputs")
    ap.add_argument("--skip-anchor", action="store_true",
                    help="skip the end-to-end anchor (the torchaudio "
                    "MelSpectrogram-alone timing still runs)")
    ap.add_argument("--cpu", action="store_true",
                    help="the CPU path even where there is a GPU")
    ap.add_argument("--scaling", action="store_true",
                    help="also time the pipeline and its peak RSS per "
                    "stage at --scaling-sizes clips")
    ap.add_argument("--scaling-sizes", default="4000,40000",
                    help="comma-separated clip counts (default "
                    "4000,40000)")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when a target is missed")
    ap.add_argument("--torch-python", default=os.environ.get(
        "MELPIPE_TORCH_PYTHON"), help="Python for the torch anchor "
        "(default $MELPIPE_TORCH_PYTHON, else python3)")
    ap.add_argument("--anchor-python", default=os.environ.get(
        "MELPIPE_ANCHOR_PYTHON"), help="Python for the numpy anchor "
        "(default $MELPIPE_ANCHOR_PYTHON, else /usr/bin/python3)")
    a = ap.parse_args(argv)
    if a.clips < 1 or a.runs < 1:
        ap.error("--clips and --runs must be at least 1")
    if a.anchor_runs is None:
        a.anchor_runs = a.runs
    try:
        a.scaling_sizes = sorted({int(x) for x in
                                  a.scaling_sizes.split(",")})
    except ValueError:
        ap.error(f"--scaling-sizes: '{a.scaling_sizes}' is not a list of "
                 "numbers")
    if a.scaling and (len(a.scaling_sizes) < 2 or
                      min(a.scaling_sizes) < 1):
        ap.error("--scaling-sizes needs two or more positive counts")
    return a


def main(argv):
    a = parse_args(argv)
    try:
        return main_bench(a)
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
