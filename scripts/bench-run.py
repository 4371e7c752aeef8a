#!/usr/bin/env python3
"""bench-run - the body of scripts/bench (run that, not this).

Makes the data of a job (the 10-second job, or with --job
keyword-spotting the keyword-spotting job), then measures side by side,
in alternated rounds, the parallel read floor, the melpipe pipeline end
to end, the Python anchors a user would write instead, each stage alone
on a recorded stream and gpumel's kernels alone (bin/gpumel-cuda-bench);
prints a table and writes it as markdown. docs/BENCHMARKS.md says what
every row means.
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

import bench_report

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SPLITS = ("training", "validation", "testing")
PSS_INTERVAL_MS = 20           # how often bench-rss.py samples each stage


class Job:
    """A benchmark job (docs/BENCHMARKS.md, "The jobs"): its data, its
    pipeline's options, its anchors' options and its outputs' shape."""

    def __init__(self, name, title, clips, rate, seconds, labels, wavcat,
                 seg, n_fft, hop, n_mels, data_dir, anchor_args,
                 kernel_batch, stem):
        self.name, self.title, self.clips = name, title, clips
        self.rate, self.seconds, self.labels = rate, seconds, labels
        self.wavcat_opts, self.seg = wavcat, seg
        self.n_fft, self.hop, self.n_mels = n_fft, hop, n_mels
        self.data_dir, self.anchor_args = data_dir, anchor_args
        self.kernel_batch, self.stem = kernel_batch, stem
        samples = rate * seconds
        # Rows a clip gives, and the samples and mel frames of each row.
        if seg:
            self.rows_per_clip = (samples - seg[0]) // seg[1] + 1
            self.row_samples = seg[0]
        else:
            self.rows_per_clip, self.row_samples = 1, samples
        self.frames = 1 + (self.row_samples - n_fft) // hop
        self.stages = ("wavcat", "segment", "gpumel", "h5pack") if seg \
            else ("wavcat", "gpumel", "h5pack")

    def sample_bytes(self, clips):
        return clips * 2 * self.rate * self.seconds

    def gpumel_opts(self):
        return f"--n-fft {self.n_fft} --hop {self.hop} " \
            f"--n-mels {self.n_mels} --no-center --log db --dtype f16"


JOBS = {
    # 10 s clips at 4096 Hz, 512-sample windows with hop 512, one frame
    # of 32 mels each (n_fft 512), dB, f16. The anchors' defaults are
    # this job's; the kernels-alone batch is 3,956 clips' windows.
    "ten-second": Job(
        "ten-second", "the 10-second job", 39563, 4096, 10, None,
        "--rate 4096", (512, 512), 512, 512, 32, "data-{n}", [],
        316480, "bench"),
    # Speech Commands' shape: 1 s clips at 16 kHz, no segmenting, 97
    # frames of 40 mels (n_fft 512, hop 160), dB, f16; the kernels-alone
    # batch is a tenth of the clips, as the 10-second job's.
    "keyword-spotting": Job(
        "keyword-spotting", "the keyword-spotting job", 105829, 16000, 1,
        10, "--rate 16000 --duration 1", None, 512, 160, 40, "kws-{n}",
        ["--rate", "16000", "--seconds", "1", "--seg-len", "16000",
         "--n-fft", "512", "--hop", "160", "--n-mels", "40"],
        10583, "bench-keyword-spotting"),
}


class BenchError(Exception):
    pass


def say(msg=""):
    print(msg, flush=True)


def note(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def q(s):
    return shlex.quote(str(s))


# ---------------------------------------------------------------------------
# The machine and the tools


def settle():
    """Before each timed run: the writes of what ran before (the data
    made, an anchor's file, a previous round's output) go to the disk
    now, so that no run's final fsync (h5pack's) waits on another's."""
    os.sync()


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

    def __init__(self, a, gpu, job):
        self.job = job
        self.bin = os.path.abspath(a.bin)
        self.env = dict(os.environ)
        # the programs' defaults, whatever this shell says: the payloads
        # in shared memory where they can (the rows with the pipes set
        # MELPIPE_SHM=0 themselves)
        self.env.pop("MELPIPE_SHM", None)
        self.env.pop("MELPIPE_GPUMEL_DETACH", None)
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

    def prog(self, name):
        return os.path.join(self.bin, name)

    def v(self, name):
        return " -v" if self.verbose[name] else ""

    def wavcat(self, data):
        return f"{q(self.prog('wavcat'))}{self.v('wavcat')} " \
            f"{self.job.wavcat_opts} {q(data)}"

    def segment(self):
        return f"{q(self.prog('segment'))}{self.v('segment')} " \
            f"--len {self.job.seg[0]} --hop {self.job.seg[1]}"

    def gpumel(self):
        # The torchaudio preset makes the pipeline compute exactly what
        # the anchors compute (HTK mel scale, no filter norm); the options
        # after it are the job's.
        preset = " --preset torchaudio" if self.preset else ""
        return f"{q(self.prog('gpumel'))}{self.v('gpumel')}{preset} " \
            f"{self.job.gpumel_opts()} --device {self.device}"

    def h5pack(self, out):
        return f"{q(self.prog('h5pack'))}{self.v('h5pack')} -o {q(out)}"

    def rss_wrap(self, cmd, rss_file):
        """cmd (one program and its arguments) run so that its peak RSS
        and its peak PSS, sampled, land in rss_file."""
        return f"{q(sys.executable)} {q(os.path.join(HERE, 'bench-rss.py'))}" \
            f" --pss {PSS_INTERVAL_MS} {q(rss_file)} {cmd}"


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
        settle()
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
        settle()
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


def gen_data(job, root, clips):
    d = os.path.join(root, job.data_dir.format(n=clips))
    need = clips * 44 + job.sample_bytes(clips)
    if not os.path.exists(os.path.join(d, ".bench-params.json")):
        free = shutil.disk_usage(root).free
        if free < need * 1.1:
            raise BenchError(f"'{root}' has {free / 1e9:.1f} GB free; "
                             f"{clips} clips need {need / 1e9:.1f} GB")
    t0 = time.perf_counter()
    labels = ["--labels", str(job.labels)] if job.labels else []
    p = subprocess.run([sys.executable, os.path.join(HERE, "bench-gen.py"),
                        "--clips", str(clips), "--rate", str(job.rate),
                        "--seconds", str(job.seconds), *labels, d],
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
    info["sample_bytes"] = job.sample_bytes(clips)
    return info


def check_h5(job, path, data, what):
    """Checks that an HDF5 dataset holds every row (window) of every clip
    in the right split, in the job's shape; returns a one-line summary."""
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
    per = job.rows_per_clip
    shape = (job.n_mels, job.frames)
    want = {s: data[s] * per for s in SPLITS}
    clips = data["params"]["clips"]
    with h5py.File(path, "r") as f:
        got = {}
        for s in SPLITS:
            if s not in f:
                raise BenchError(f"{what}: '{path}' has no group '{s}'")
            feats = f[s]["features"]
            if feats.shape[1:] != shape or feats.dtype != np.float16:
                raise BenchError(f"{what}: '{path}' {s}/features is "
                                 f"{feats.shape} {feats.dtype}, expected "
                                 f"[N, {shape[0]}, {shape[1]}] float16")
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
            f"(= clips x {per} per split), {clips} clips, 0 "
            "skipped")
    return f"{total} rows of [{shape[0]}, {shape[1]}] = {clips} clips x " \
        f"{per} " \
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
    """(peak RSS, peak PSS) in KiB from bench-rss.py's FILE; None for what
    it could not tell."""
    rss = pss = None
    try:
        with open(path) as f:
            lines = f.read().splitlines()
        rss = int(lines[0])
        if len(lines) > 1 and lines[1].split()[1] != "-":
            pss = int(lines[1].split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return rss, pss


def same_h5(a_path, b_path):
    """None when two HDF5 files hold the same datasets, values and
    attributes (h5py), else what differs, in words."""
    import h5py
    import numpy as np

    def walk(f):
        out = {"/": dict(f.attrs)}
        f.visititems(lambda n, o: out.__setitem__(
            n, (o[()], dict(o.attrs)) if isinstance(o, h5py.Dataset)
            else dict(o.attrs)))
        return out

    def same(x, y):
        if isinstance(x, tuple):
            return same(x[0], y[0]) and same(x[1], y[1])
        if isinstance(x, dict):
            return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
        x, y = np.asarray(x), np.asarray(y)
        return x.shape == y.shape and x.dtype == y.dtype and \
            np.array_equal(x, y)

    with h5py.File(a_path, "r") as fa, h5py.File(b_path, "r") as fb:
        wa, wb = walk(fa), walk(fb)
    bad = sorted(set(wa) ^ set(wb))
    bad += [k for k in sorted(set(wa) & set(wb)) if not same(wa[k], wb[k])]
    return ", ".join(bad) if bad else None


# ---------------------------------------------------------------------------
# The measurements


def floor_cmds(data_dir, nproc, clips):
    per = max(1, -(-clips // (4 * nproc)))
    find = f"cd {q(data_dir)} && find . -name '*.wav' -print0"
    return (f"{find} | xargs -0 -P {nproc} -n {per} cat > /dev/null",
            f"{find} | xargs -0 cat > /dev/null")


def stage_cmds(t, data_dir, out):
    cmds = {"wavcat": t.wavcat(data_dir), "segment": t.segment()
            if t.job.seg else None, "gpumel": t.gpumel(),
            "h5pack": t.h5pack(out)}
    return [(n, cmds[n]) for n in t.job.stages]


def pipeline_cmd(t, data_dir, out, rss_dir=None):
    stages = stage_cmds(t, data_dir, out)
    if rss_dir:
        stages = [(n, t.rss_wrap(c, os.path.join(rss_dir, f"rss.{n}")))
                  for n, c in stages]
    return " | ".join(c for _, c in stages)


def pipeline_rss(t, runner, data, out, rss_dir, tag):
    """One pipeline run with each stage's peak RSS and sampled peak PSS
    recorded (also the warm-up); returns ({stage: RSS KiB}, {stage: PSS
    KiB}, seconds)."""
    for n in t.job.stages:
        p = os.path.join(rss_dir, f"rss.{n}")
        if os.path.exists(p):
            os.unlink(p)
    # gpumel in one process, so that its memory is that process's (by
    # default the work is in a child that the wrapper would not see)
    env = dict(t.env, MELPIPE_GPUMEL_DETACH="off")
    dt = runner.run(f"pipeline-rss-{tag}",
                    pipeline_cmd(t, data["dir"], out, rss_dir), env,
                    check_out=out)
    check_h5(t.job, out, data, f"pipeline ({tag} clips)")
    got = {n: read_rss(os.path.join(rss_dir, f"rss.{n}"))
           for n in t.job.stages}
    return ({n: v[0] for n, v in got.items()},
            {n: v[1] for n, v in got.items()}, dt)


def run_cuda_bench(t, runner, fft_path):
    """bin/gpumel-cuda-bench --bench on the torchaudio-alone batch size:
    its output, its RESULT lines, and the kernels' time for the job (s16
    in, no top_db) on the FFT path gpumel itself chose (fft_path)."""
    job = t.job
    h = sh_out([t.cuda_bench, "--help"], t.env) or ""
    so = os.path.join(t.bin, "gpumel-cuda.so")
    argv = [t.cuda_bench]
    if "--bench" in h:
        argv.append(f"--bench={so}")
    if "--batch" in h:
        argv.append(f"--batch={job.kernel_batch}")
    if job.name != "ten-second":
        # --bench times the 10-second job's shape by default; another
        # job's goes through gpumel's own parser.
        if "--record-samples" not in h:
            return {"argv": " ".join(argv), "output": "", "results": [],
                    "skipped": "gpumel-cuda-bench has no --record-samples"}
        argv += [f"--record-samples={job.row_samples}",
                 f"--sample-rate={job.rate}", "--", "--preset",
                 "torchaudio", *job.gpumel_opts().split()]
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
           "frames": job.kernel_batch, "results": []}
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
    job = JOBS[a.job]
    clips = a.clips or job.clips
    info = machine_info()
    gpu = bool(info["gpus"]) and not a.cpu
    nproc = info["nproc"]
    say(f"# melpipe benchmark: {job.title}")
    say(f"machine: {nproc} cores, {info['cpu']}, "
        + (f"{info['mem_gib']:.0f} GiB RAM, " if info["mem_gib"] else "")
        + f"Linux {info['kernel']}")
    say("gpu: " + ("; ".join(info["gpus"]) if info["gpus"] else "none")
        + ("" if gpu or not info["gpus"] else " (not used: --cpu)"))
    t = Tools(a, gpu, job)
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
    data = gen_data(job, root, clips)
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
    res = {"job": job.name, "machine": info, "gpu": gpu, "clips": clips,
           "runs": a.runs, "anchor_runs": a.anchor_runs,
           "rss_tool": "wait4, and /proc/PID/smaps_rollup every "
           f"{PSS_INTERVAL_MS} ms for PSS (scripts/bench-rss.py)",
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
    md = bench_report.report(job, res, rows, sample_bytes, clips, gpu)
    say("")
    say(md)
    outs = [root] + ([os.environ["OUT"]] if os.environ.get("OUT") else [])
    for path in [os.path.join(d, f"{job.stem}.md") for d in outs] + \
            [os.path.join(root, f"{job.stem}-{stamp}.md")]:
        with open(path, "w") as f:
            f.write(md)
    res["rows"] = {r.key: {"what": r.what, "times": r.times,
                           "median": r.median, "min": r.min,
                           "skipped": r.skipped, **r.extra} for r in rows}
    for d in outs:
        with open(os.path.join(d, f"{job.stem}.json"), "w") as f:
            json.dump(res, f, indent=1, default=str)
    say(f"\nwritten: {os.path.join(root, job.stem + '.md')}, "
        f"{job.stem}.json"
        + (f"; $OUT/{job.stem}.md" if os.environ.get("OUT") else ""))
    return 0 if res.get("targets_ok", True) or not a.strict else 1


class Anchor:
    """One anchor script run: its rows (in process, wall clock), its
    command and its output file. short names it in the ratios."""

    def __init__(self, key, short, what, wall, script, extra_args,
                 smoke=False):
        self.key, self.script, self.extra_args = key, script, extra_args
        self.smoke = smoke
        tag = " (on the CPU: a smoke test, not a measurement)" \
            if smoke else ""
        self.row = Row(key, f"{what} (in process){tag}")
        self.wall = Row(f"{key}_wall", f"{wall}, wall clock incl. Python "
                        f"start and imports{tag}")
        for r in (self.row, self.wall):
            r.extra["short"] = short + tag
        self.argv = None
        self.out = None
        self.failed = False

    def setup(self, job, py, data_dir, outdir, sb, clips, skipped):
        for r in (self.row, self.wall):
            r.unit_bytes, r.clips = sb, clips
        if py is None:
            self.row.skipped = skipped
            note(f"{self.key} skipped: {skipped}")
            return
        self.out = os.path.join(outdir, f"{self.key}.h5")
        self.argv = [py, os.path.join(HERE, self.script), *job.anchor_args,
                     *self.extra_args, data_dir, self.out]
        self.row.extra["python"] = py


def make_anchors(a, t, data, outdir, gpu):
    """The anchors this run measures: on a GPU machine the torchaudio
    script with each loader; on a CPU one the numpy script, and with
    --torch-anchors the torchaudio ones beside it, on the CPU."""
    if a.skip_anchor:
        return []
    job, d = t.job, data["dir"]
    sb, clips = data["sample_bytes"], data["params"]["clips"]
    anchors = []
    if not gpu:
        py = python_with(["numpy", "h5py", "soundfile"],
                         [a.anchor_python, "/usr/bin/python3"]) or \
            python_with(["numpy", "h5py"],
                        [a.anchor_python, "/usr/bin/python3",
                         sys.executable])
        n = Anchor("anchor", "the numpy anchor", "anchor: Python, threaded "
                   "soundfile loading, numpy rfft + mel, h5py", "anchor",
                   "bench-anchor-numpy.py", [])
        n.setup(job, py, d, outdir, sb, clips, "no Python with numpy, h5py")
        anchors.append(n)
    if gpu or a.torch_anchors:
        py = python_with(["torch", "torchaudio", "scipy.io.wavfile",
                          "h5py"], [a.torch_python, "python3"])
        # The rows of the threaded anchor keep their names; on the CPU
        # path "anchor" is the numpy one's.
        dev = "GPU" if gpu else "CPU"
        th = Anchor("anchor" if gpu else "anchor_torch",
                    "the threaded torchaudio anchor", "anchor: Python, "
                    f"threaded scipy loading, torchaudio on the {dev}, h5py",
                    "anchor" if gpu else "threaded torchaudio anchor",
                    "bench-anchor-torch.py", ["--loader", "threads"],
                    smoke=not gpu)
        wk = Anchor("anchor_workers", "the DataLoader torchaudio anchor",
                    "anchor: Python, DataLoader workers (one a core) "
                    f"loading with scipy, torchaudio on the {dev}, h5py",
                    "DataLoader anchor", "bench-anchor-torch.py",
                    ["--loader", "workers"], smoke=not gpu)
        for x in (th, wk):
            x.setup(job, py, d, outdir, sb, clips,
                    "no Python with torch, torchaudio, scipy, h5py")
        anchors += [th, wk]
    return anchors


def record_streams(t, runner, d, rec):
    """Each stage's input recorded once; returns {name: path} of clips.rec,
    segs.rec (jobs that segment) and feats.rec, and what reads each."""
    job = t.job
    paths = {n: os.path.join(rec, f"{n}.rec")
             for n in ("clips", "segs", "feats")}
    cmds = [("clips", f"{t.wavcat(d)} > {q(paths['clips'])}")]
    mel_in = paths["clips"]
    if job.seg:
        cmds.append(("segs", f"{t.segment()} < {q(paths['clips'])} > "
                     f"{q(paths['segs'])}"))
        mel_in = paths["segs"]
    else:
        del paths["segs"]
    cmds.append(("feats", f"{t.gpumel()} < {q(mel_in)} > "
                 f"{q(paths['feats'])}"))
    for name, cmd in cmds:
        dt = runner.run(f"record-{name}.rec", cmd, t.env)
        say(f"  {name}.rec: {os.path.getsize(paths[name]) / 1e9:.2f} GB in "
            f"{dt:.2f} s")
    return paths, mel_in


def measure(a, t, runner, data, rec, outdir, nproc, gpu):
    job = t.job
    clips = data["params"]["clips"]
    d = data["dir"]
    sb = data["sample_bytes"]
    extra = {}
    par, one = floor_cmds(d, nproc, clips)
    out_pipe = os.path.join(outdir, "pipeline.h5")
    out_alone = os.path.join(outdir, "h5pack-alone.h5")

    say("\nwarming the page cache (every file read once)")
    runner.run("warm", par, t.plain_env)

    say("pipeline once with per-stage peak RSS and PSS (also its warm-up)")
    rss, pss, dt = pipeline_rss(t, runner, data, out_pipe, outdir,
                                str(clips))
    extra["rss_kib"] = rss
    extra["pss_kib"] = pss
    extra["pipeline_cmd"] = pipeline_cmd(t, d, out_pipe)
    say(f"  {dt:.3f} s; " + check_h5(job, out_pipe, data, "pipeline"))

    say("recording the streams of each stage")
    paths, mel_in = record_streams(t, runner, d, rec)
    extra["stream_bytes"] = {n: os.path.getsize(p) for n, p in
                             paths.items()}

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
    # The same two with the payloads in the pipes (MELPIPE_SHM=0, the
    # stream alone): what the shared-memory path, on by default, gives,
    # side by side in each round.
    noshm_env = dict(t.env, MELPIPE_SHM="0")
    pipe0 = Row("pipeline_pipes", "pipeline, MELPIPE_SHM=0 (payloads in "
                "the pipes)", sb, clips)
    hop0 = Row("hop_pipes", "one pipe hop, MELPIPE_SHM=0", sb, clips)
    mel_rec = os.path.basename(mel_in)
    st = {
        "wavcat": Row("wavcat", "wavcat alone (files -> /dev/null)", sb,
                      clips),
        "segment": Row("segment", "segment alone (clips.rec -> /dev/null)",
                       sb, clips),
        "gpumel": Row("gpumel", f"gpumel alone ({mel_rec} -> /dev/null)",
                      sb, clips),
        "h5pack": Row("h5pack", "h5pack alone (feats.rec -> .h5)", sb,
                      clips),
    }
    # Each stage alone on what it reads in the pipeline (built only for
    # the job's stages: a job without segment has no segs.rec).
    alone = {
        "wavcat": lambda: (f"{t.wavcat(d)} > /dev/null", None),
        "segment": lambda: (f"{t.segment()} < {q(paths['clips'])} > "
                            "/dev/null", None),
        "gpumel": lambda: (f"{t.gpumel()} < {q(mel_in)} > /dev/null", None),
        "h5pack": lambda: (f"{t.h5pack(out_alone)} < {q(paths['feats'])}",
                           out_alone),
    }
    anchors = make_anchors(a, t, data, outdir, gpu)
    # One round: the floor, the pipeline and the anchors one after the
    # other (the ratios that matter most, taken close together), then
    # the rest. Rounds repeat, so that drift hits every row alike.
    before = [(floor_par, par, t.plain_env, None),
              (floor_one, one, t.plain_env, None),
              (pipe, pipeline_cmd(t, d, out_pipe), t.env, out_pipe),
              (pipe0, pipeline_cmd(t, d, out_pipe), noshm_env, out_pipe)]
    after = [(hop, f"{t.wavcat(d)} | {q(t.prog('recdump'))} -q", t.env,
              None),
             (hop0, f"{t.wavcat(d)} | {q(t.prog('recdump'))} -q",
              noshm_env, None)]
    for n in job.stages:
        cmd, chk = alone[n]()
        after.append((st[n], cmd, t.env, chk))
    rows = [floor_par, floor_one, pipe, pipe0]
    for x in anchors:
        rows += [x.row, x.wall]
    rows += [r for r, *_ in after]

    say(f"\nmeasuring: {a.runs} rounds, each row once per round"
        + (f", the anchors in the first {a.anchor_runs}"
           if anchors and a.anchor_runs < a.runs else ""))
    for r in range(a.runs):
        for row, cmd, env, chk in before:
            row.times.append(runner.run(row.key, cmd, env, check_out=chk))
        if r == 0:
            check_h5(job, out_pipe, data, "pipeline")
        for x in anchors:
            if x.argv and not x.failed and r < a.anchor_runs:
                run_anchor(t, runner, x, data, r)
        for row, cmd, env, chk in after:
            row.times.append(runner.run(row.key, cmd, env, check_out=chk))
            if chk == out_alone and r == 0:
                extra["h5pack_alone_check"] = check_h5(
                    job, out_alone, data, "h5pack alone")
        say(f"  round {r + 1}: " + ", ".join(
            f"{row.key} {row.times[-1]:.2f}" for row in rows if row.times
            and len(row.times) == r + 1))
    extra["pipeline_check"] = check_h5(job, out_pipe, data, "pipeline")
    with open(os.path.join(runner.logdir, "pipeline.log"),
              errors="replace") as f:
        extra["pipeline_stderr"] = f.read()[-4000:]
    extra["anchors"] = anchor_results(anchors, out_pipe)
    extra["anchor_argv"] = [" ".join(map(q, x.argv)) for x in anchors
                            if x.argv]
    if gpu:
        rows += kernels_alone(a, t, runner, extra)
    return rows, extra


def run_anchor(t, runner, x, data, r):
    """One run of anchor x: its times in its rows; its output checked in
    the first round. An anchor that fails is said, its row marked, and
    not run again: the rest of the run goes on."""
    try:
        if x.out and os.path.exists(x.out):
            os.unlink(x.out)
        wall, res = runner.run_json(x.key, x.argv, t.plain_env)
        if r == 0:
            x.row.extra["check"] = check_h5(t.job, x.out, data, x.key)
    except BenchError as e:
        note(f"{e}\n{x.key}: not run again")
        x.row.skipped = f"failed in round {r + 1} (logs/{x.key}.log)"
        x.failed = True
        return
    x.row.times.append(res["total_s"])
    x.wall.times.append(wall)
    x.row.extra.setdefault("runs", []).append(res)


def anchor_results(anchors, out_pipe):
    """Per anchor that ran: its output's check, its features against the
    pipeline's; and whether the torchaudio anchors' two loaders wrote the
    same file."""
    out = []
    ran = [x for x in anchors if x.row.times and not x.row.skipped]
    for x in ran:
        out.append({"key": x.key, "what": x.row.what, "smoke": x.smoke,
                    "check": x.row.extra.get("check"),
                    "agreement": compare_h5(out_pipe, x.out),
                    "runs": x.row.extra.get("runs", []),
                    "argv": " ".join(map(q, x.argv))})
    torch_runs = [x for x in ran if x.script == "bench-anchor-torch.py"]
    if len(torch_runs) == 2:
        diff = same_h5(torch_runs[0].out, torch_runs[1].out)
        out.append({"key": "loaders_same", "same": diff is None,
                    "differ": diff})
        if diff:
            note(f"the torchaudio anchor's two loaders wrote different "
                 f"files: {diff}")
    return out


def kernels_alone(a, t, runner, extra):
    """gpumel's kernels alone and torchaudio's MelSpectrogram alone, on
    the job's kernels-alone batch."""
    job = t.job
    n = job.kernel_batch
    what = f"{n} frames of {job.n_fft}" if job.seg else \
        f"{n} clips of {job.row_samples} samples"
    kern = Row("kernels", "gpumel kernels alone, device-resident "
               "(gpumel-cuda-bench)")
    tmel = Row("torch_mel", f"torchaudio MelSpectrogram alone, {what} on "
               "the GPU")
    tchain = Row("torch_chain", "torchaudio s16 -> mel -> dB -> f16, "
                 "same batch")
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
            kern.skipped = cb.get("skipped") or "no RESULT line for s16 " \
                "input, top_db none in its output"
    else:
        kern.skipped = "bin/gpumel-cuda-bench not built"
    py = python_with(["torch", "torchaudio", "scipy.io.wavfile", "h5py"],
                     [a.torch_python, "python3"])
    if py:
        say("torchaudio MelSpectrogram alone")
        argv = [py, os.path.join(HERE, "bench-anchor-torch.py"),
                *job.anchor_args, "--mel-alone", "--frames", str(n)]
        if not job.seg:
            argv += ["--clip-samples", str(job.row_samples)]
        _, m = runner.run_json("torch-mel-alone", argv, t.plain_env)
        extra["torch_mel"] = m
        tmel.times = [m["mel_ms_median"] / 1e3]
        tmel.extra.update(gsamples_s=m["mel_gsamples_s"],
                          min_s=m["mel_ms_min"] / 1e3)
        tchain.times = [m["chain_ms_median"] / 1e3]
        tchain.extra.update(gsamples_s=m["chain_gsamples_s"],
                            min_s=m["chain_ms_min"] / 1e3)
    else:
        tmel.skipped = tchain.skipped = "no Python with torch"
    return [kern, tmel, tchain]


def scaling(a, t, runner, root, outdir):
    """Time per clip and peak RSS and PSS per stage at each size."""
    sizes = a.scaling_sizes
    say(f"\nscaling: {', '.join(map(str, sizes))} clips")
    out = {"sizes": {}}
    sets = {}
    for n in sizes:
        data = gen_data(t.job, root, n)
        par, _ = floor_cmds(data["dir"], len(os.sched_getaffinity(0)), n)
        runner.run(f"warm-{n}", par, t.plain_env)
        h5 = os.path.join(outdir, f"scaling-{n}.h5")
        rss, pss, _ = pipeline_rss(t, runner, data, h5, outdir, str(n))
        sets[n] = (data, h5)
        out["sizes"][n] = {"times": [], "rss_kib": rss, "pss_kib": pss}
    # Rounds over the sizes, so that drift hits every size alike.
    for _ in range(a.runs):
        for n in sizes:
            data, h5 = sets[n]
            out["sizes"][n]["times"].append(runner.run(
                f"scaling-{n}", pipeline_cmd(t, data["dir"], h5), t.env,
                check_out=h5))
    for n in sizes:
        data, h5 = sets[n]
        check_h5(t.job, h5, data, f"pipeline ({n} clips)")
        s = out["sizes"][n]
        med = statistics.median(s["times"])
        s.update(median=med, per_clip_ms=med / n * 1e3)
        say(f"  {n} clips: median {med:.3f} s, "
            f"{med / n * 1e6:.1f} us/clip; peak RSS / PSS "
            + ", ".join(f"{k} {kib(v)} / {kib(s['pss_kib'][k])} MiB"
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
    for m in ("rss_kib", "pss_kib"):
        out[m.replace("_kib", "_growth")] = {
            k: s_hi[m][k] / s_lo[m][k] if s_lo[m][k] and s_hi[m][k]
            else None for k in s_lo[m]}
    return out


def kib(v):
    """KiB as MiB for the log, or '?'."""
    return f"{v / 1024:.0f}" if v else "?"


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="scripts/bench",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Benchmark melpipe against the read floor and the "
        "Python anchors,\non the 10-second job or the keyword-spotting job "
        "(docs/BENCHMARKS.md).\nRun from anywhere; prints a table and "
        "writes it as markdown to\nDIR/bench.md (the keyword-spotting job: "
        "DIR/bench-keyword-spotting.md),\nand to $OUT when OUT is set.",
        epilog="Rows: the read floor (parallel and one cat), the pipeline "
        "end to end,\nthe anchors (torchaudio with threads and with "
        "DataLoader workers on a\nGPU machine, numpy on a CPU one), one "
        "pipe hop, each stage alone on a\nrecorded stream, gpumel's "
        "kernels and torchaudio's MelSpectrogram\nalone (GPU). Each round "
        "runs every row once, in that order; the\nfigures of issue 17 are "
        "medians of --runs 5. See docs/BENCHMARKS.md.\nExit status: 0 "
        "done, 1 a stage failed (or a target was missed with\n--strict), 2 "
        "usage.")
    ap.add_argument("--job", choices=sorted(JOBS), default="ten-second",
                    help="the job: its data, pipeline and anchors "
                    "(default ten-second)")
    ap.add_argument("--clips", type=int, default=None,
                    help="clips in the dataset (default: the job's, 39563 "
                    "or 105829)")
    ap.add_argument("--runs", type=int, default=3,
                    help="rounds; each row runs once per round "
                    "(default 3)")
    ap.add_argument("--anchor-runs", type=int, default=None,
                    help="rounds that also run the anchors (default: "
                    "--runs)")
    ap.add_argument("--dir", default="/tmp/melpipe-bench",
                    help="work dir: data-N/ or kws-N/, out/, logs/, "
                    "bench.md (default /tmp/melpipe-bench)")
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
                    help="skip the end-to-end anchors (the torchaudio "
                    "MelSpectrogram-alone timing still runs)")
    ap.add_argument("--cpu", action="store_true",
                    help="the CPU path even where there is a GPU")
    ap.add_argument("--torch-anchors", action="store_true",
                    help="on the CPU path, also run the torchaudio anchors "
                    "(both loaders) on the CPU: a smoke test of them, not "
                    "a measurement")
    ap.add_argument("--scaling", action="store_true",
                    help="also time the pipeline and its peak RSS and PSS "
                    "per stage at --scaling-sizes clips")
    ap.add_argument("--scaling-sizes", default="4000,40000",
                    help="comma-separated clip counts (default "
                    "4000,40000)")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when a target is missed")
    ap.add_argument("--torch-python", default=os.environ.get(
        "MELPIPE_TORCH_PYTHON"), help="Python for the torch anchors "
        "(default $MELPIPE_TORCH_PYTHON, else python3)")
    ap.add_argument("--anchor-python", default=os.environ.get(
        "MELPIPE_ANCHOR_PYTHON"), help="Python for the numpy anchor "
        "(default $MELPIPE_ANCHOR_PYTHON, else /usr/bin/python3)")
    a = ap.parse_args(argv)
    if (a.clips is not None and a.clips < 1) or a.runs < 1:
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
