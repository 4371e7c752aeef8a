#!/usr/bin/env python3
"""bench-ab - two builds of melpipe side by side, on one machine, in one run.

Usage: scripts/bench-ab.py [--job ten-second|keyword-spotting] [--runs N]
                           [--clips N] [--dir D] [--libs DIR] [--cpu]
                           A_BIN B_BIN

A_BIN and B_BIN are two folders of built programs (bin/ of two commits).
The script makes the job's data (scripts/bench-gen.py, reused when
present), records each stage's input once with A's programs, then times,
in N rounds, every row with A and with B, alternating which goes first
(ABBA...), so that drift of the machine falls on both alike:

  pipeline   wavcat | [segment |] gpumel | h5pack, to a file
  wavcat     wavcat alone, to /dev/null
  segment    segment alone on the recorded audio stream (10-second job)
  gpumel     gpumel alone on the recorded stream it reads in the pipeline
  h5pack     h5pack alone on the recorded features stream

It prints, per row, the median and the spread (min-max) of each build and
the ratio B/A of the medians, as a markdown table (also DIR/ab.md, and
$OUT/ab.md when OUT is set), and checks that both builds' datasets hold the
same features and tables. Exit status: 0 done, 1 a run failed or the
datasets differ, 2 usage.

The jobs (docs/BENCHMARKS.md defines them):
  ten-second        39,563 clips of 10 s at 4096 Hz, cut into 512-sample
                    windows, one frame of 32 mels each, f16
  keyword-spotting  105,829 clips of 1 s at 16 kHz, 40 mels, n_fft 512,
                    hop 160, no centring (97 frames), f16
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

JOBS = {
    "ten-second": {
        "clips": 39563, "rate": 4096, "seconds": 10,
        "labels": 5, "wavcat": "--rate 4096",
        "segment": "--len 512 --hop 512",
        "gpumel": "--preset torchaudio --n-fft 512 --hop 512 --n-mels 32 "
                  "--no-center --log db --dtype f16",
    },
    "keyword-spotting": {
        "clips": 105829, "rate": 16000, "seconds": 1,
        "labels": 10, "wavcat": "--rate 16000 --duration 1",
        "segment": None,
        "gpumel": "--preset torchaudio --n-fft 512 --hop 160 --n-mels 40 "
                  "--no-center --log db --dtype f16",
    },
}


def q(s):
    return shlex.quote(str(s))


class Failed(Exception):
    pass


def run(cmd, env, log):
    """Runs cmd in bash with pipefail; returns wall seconds."""
    with open(log, "a") as lf:
        lf.write(f"$ {cmd}\n")
        lf.flush()
        t0 = time.perf_counter()
        p = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd],
                           env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=lf)
        dt = time.perf_counter() - t0
    if p.returncode != 0:
        with open(log, errors="replace") as lf:
            tail = lf.read()[-2000:]
        raise Failed(f"failed (exit {p.returncode}): {cmd}\n{tail}")
    return dt


def rows_for(job, b, data, rec, out, dev):
    """The rows' commands for the programs in folder b."""
    w = f"{q(b)}/wavcat {job['wavcat']} {q(data)}"
    s = f"{q(b)}/segment {job['segment']}" if job["segment"] else None
    g = f"{q(b)}/gpumel {job['gpumel']} {dev}"
    h = f"{q(b)}/h5pack -o {q(out)}"
    pipe = " | ".join(x for x in (w, s, g, h) if x)
    rows = [("pipeline", pipe), ("wavcat", f"{w} > /dev/null")]
    if s:
        rows.append(("segment", f"{s} < {q(rec['audio'])} > /dev/null"))
    g_in = rec["windows"] if s else rec["audio"]
    rows.append(("gpumel", f"{g} < {q(g_in)} > /dev/null"))
    rows.append(("h5pack", f"{h} < {q(rec['features'])}"))
    return rows


def same_dataset(py, a, b):
    """Both files hold the same features and tables (h5py): every dataset
    both hold is equal; those only one holds are named."""
    code = r"""
import sys, h5py, numpy as np
def walk(f):
    out = {}
    f.visititems(lambda n, o: out.__setitem__(n, o[...])
                 if isinstance(o, h5py.Dataset) else None)
    return out
a, b = (walk(h5py.File(p, "r")) for p in sys.argv[1:3])
bad = [k for k in sorted(set(a) & set(b))
       if a[k].shape != b[k].shape or not np.array_equal(a[k], b[k])]
# datasets one build adds (a newer format's additions) are named, not
# failed: the two builds agree on what both write
only = ["only in %s: %s" % (w, " ".join(sorted(set(x) - set(y))))
        for w, x, y in (("A", a, b), ("B", b, a)) if set(x) - set(y)]
print(" ".join(bad) or "same" + "".join("; " + o for o in only))
sys.exit(1 if bad else 0)
"""
    p = subprocess.run([py, "-c", code, a, b], capture_output=True,
                       text=True)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


def pick_python():
    for py in (os.environ.get("MELPIPE_BENCH_PYTHON"), "python3",
               "/usr/bin/python3",
               os.path.join(os.path.dirname(HERE), ".dev/venv/bin/python")):
        if not py:
            continue
        try:
            if subprocess.run([py, "-c", "import numpy, h5py"],
                              capture_output=True).returncode == 0:
                return py
        except OSError:
            pass
    return None


def main(argv):
    ap = argparse.ArgumentParser(
        prog="scripts/bench-ab.py",
        description="Two builds of melpipe side by side (see the top of "
                    "this file).")
    ap.add_argument("a_bin")
    ap.add_argument("b_bin")
    ap.add_argument("--job", choices=sorted(JOBS), default="ten-second")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--clips", type=int, default=None,
                    help="clips (default: the job's)")
    ap.add_argument("--dir", default="/tmp/melpipe-ab")
    ap.add_argument("--libs", default=os.environ.get("MELPIPE_LIBS"),
                    help="folder of shared libraries for the programs")
    ap.add_argument("--cpu", action="store_true",
                    help="gpumel --device cpu")
    a = ap.parse_args(argv)
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    py = pick_python()
    if not py:
        print("bench-ab: no Python 3 with numpy and h5py", file=sys.stderr)
        return 1
    job = JOBS[a.job]
    clips = a.clips or job["clips"]
    os.makedirs(a.dir, exist_ok=True)
    log = os.path.join(a.dir, "ab.log")
    open(log, "w").close()
    env = dict(os.environ)
    if a.libs:
        env["LD_LIBRARY_PATH"] = os.path.abspath(a.libs) + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH")
            else "")
    bins = {"A": os.path.abspath(a.a_bin), "B": os.path.abspath(a.b_bin)}
    dev = "--device cpu" if a.cpu else ""

    data = os.path.join(a.dir, f"data-{a.job}-{clips}")
    p = subprocess.run([py, os.path.join(HERE, "bench-gen.py"), "--clips",
                        str(clips), "--rate", str(job["rate"]), "--seconds",
                        str(job["seconds"]), "--labels", str(job["labels"]),
                        data], capture_output=True,
                       text=True)
    if p.returncode != 0:
        print(f"bench-ab: making the data failed:\n{p.stderr}",
              file=sys.stderr)
        return 1

    # Each stage's input, recorded once with A's programs.
    A = bins["A"]
    rec = {k: os.path.join(a.dir, f"{k}.rec")
           for k in ("audio", "windows", "features")}
    try:
        run(f"{q(A)}/wavcat {job['wavcat']} {q(data)} > {q(rec['audio'])}",
            env, log)
        g_in = rec["audio"]
        if job["segment"]:
            run(f"{q(A)}/segment {job['segment']} < {q(rec['audio'])} > "
                f"{q(rec['windows'])}", env, log)
            g_in = rec["windows"]
        run(f"{q(A)}/gpumel {job['gpumel']} {dev} < {q(g_in)} > "
            f"{q(rec['features'])}", env, log)
        outs = {k: os.path.join(a.dir, f"out-{k}.h5") for k in bins}
        rows = {k: rows_for(job, b, data, rec, outs[k], dev)
                for k, b in bins.items()}
        times = {}
        for r in range(a.runs):
            order = "AB" if r % 2 == 0 else "BA"
            for name_i in range(len(rows["A"])):
                for k in order:
                    name, cmd = rows[k][name_i]
                    # no run's final fsync pays for freeing the output
                    # it replaces, or for another's writes
                    if os.path.exists(outs[k]):
                        os.unlink(outs[k])
                    os.sync()
                    dt = run(cmd, env, log)
                    times.setdefault(name, {}).setdefault(k, []).append(dt)
            print(f"bench-ab: round {r + 1}/{a.runs} done", file=sys.stderr,
                  flush=True)
    except Failed as e:
        print(f"bench-ab: {e}", file=sys.stderr)
        return 1

    same, why = same_dataset(py, outs["A"], outs["B"])
    lines = [f"job: {a.job}, {clips} clips, {a.runs} alternated rounds; "
             f"A = {bins['A']}, B = {bins['B']}", "",
             "| row | A median (s) | A min-max | B median (s) | B min-max "
             "| B / A |", "|---|---:|---|---:|---|---:|"]
    for name, t in times.items():
        ma, mb = statistics.median(t["A"]), statistics.median(t["B"])
        lines.append(f"| {name} | {ma:.3f} | {min(t['A']):.3f}-"
                     f"{max(t['A']):.3f} | {mb:.3f} | {min(t['B']):.3f}-"
                     f"{max(t['B']):.3f} | {mb / ma:.3f} |")
    lines += ["", "datasets: " + ("the same features and tables" if same
                                  else f"DIFFER: {why}")]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(a.dir, "ab.md"), "w") as f:
        f.write(text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "ab.md"), "w") as f:
            f.write(text)
        with open(os.path.join(os.environ["OUT"], "ab.json"), "w") as f:
            json.dump(times, f)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
