#!/usr/bin/env python3
"""soak_run.py - the body of scripts/soak (see there for the usage).

Generates N/10 and N clips (soak_gen.py), runs the CPU pipeline over each
with every stage's memory watched, accounts for every input in the dataset
(soak_check.py), and compares each stage's peak RSS at N with N/10.

Memory: each stage's peak resident set is its kernel high-water mark,
taken by running it under /usr/bin/time -f %M (the peak of a process
spawned by this Python directly would include this process's own 40 MiB
and more: Linux counts the parent's pages at the fork and at the exec;
time is a small C program, whose 1 MiB is below every stage's). Without
/usr/bin/time, the highest VmHWM sampled is used. Each stage's RSS is also
sampled from /proc every 0.2 s (written to DIR/rss-N.tsv) to show how it
moves during the run. A stage passes when its peak at N exceeds its peak
at N/10 by no more than max(10% of the N/10 peak, 4 MiB), wavcat
included: its sorted list of inputs is held in --sort-buffer (1M here)
and spilled to a temporary file beyond that, so it may add at most that
buffer and its merge's read buffers (1.5 MiB) whatever N is:

- every stage's buffers have sizes fixed by its options, so its peak is
  reached in the first seconds and stays: the N/10 run is already in that
  state (about 80,000 windows);
- what may still differ is allocator drift (freed blocks that glibc keeps
  scattered) and caches warming up to their fixed sizes: at most 1 to
  2 MiB in the runs measured, under the floor;
- a leak of 50 bytes a clip, or any table kept per clip, adds 4.3 MiB or
  more from 10,000 to 100,000 clips, and fails.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_check  # noqa: E402
import soak_gen  # noqa: E402

RATE = 8000
SEG_LEN, SEG_HOP = 2000, 1000
STAGES = ("wavcat", "segment", "gpumel", "h5pack")
SAMPLE_S = 0.2
TIME_BIN = "/usr/bin/time"
TOL_PCT, TOL_MIB = 10.0, 4.0
# wavcat lists and sorts every input before it decodes one (the order is
# the dataset's, and the header announces the count). It keeps that list
# in --sort-buffer and spills it to a temporary file beyond (sort(1)'s
# way): with a buffer of 1M (the default N's run spills), the list's
# memory is at most 1.5 MiB (the buffer, and 16 read buffers of 1/32 of it
# while merging) at any N, under the 4 MiB floor: wavcat is held flat like
# every stage.
# (The default, 64M, would hold 100,000 inputs' paths in memory, bounded
# but still growing with N up to the buffer's size.)
WAVCAT_SORT_BUFFER = "1M"


def say(msg):
    print(msg, flush=True)


def commands(bindir, data, out):
    """The four stages; windows of 0.25 s at 8000 Hz, half overlapping."""
    args = [
        ["-v", "--rate", str(RATE), "--split", "hash:10:10",
         "--sort-buffer", WAVCAT_SORT_BUFFER, data],
        ["-v", "--len", str(SEG_LEN), "--hop", str(SEG_HOP)],
        ["-v", "--device", "cpu", "--n-fft", "256", "--hop", "128",
         "--n-mels", "32", "--no-center", "--dtype", "f16"],
        ["-v", "-o", out],
    ]
    return [[os.path.join(bindir, s)] + a for s, a in zip(STAGES, args)]


def status_kib(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def stage_pid(pid, wrapped):
    """The stage's own pid: the child of /usr/bin/time when wrapped."""
    if not wrapped:
        return pid
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
    except OSError:
        return None
    return int(kids[0]) if kids else None


class Sampler(threading.Thread):
    """Reads each live stage's VmRSS and VmHWM every SAMPLE_S seconds."""

    def __init__(self, pids, wrapped, t0, shm=False):
        super().__init__(daemon=True)
        self.pids, self.wrapped, self.t0 = pids, wrapped, t0
        self.shm = shm
        self.stage = [None] * len(pids)
        self.live = set(pids)
        self.rows = []
        self.hwm = [0] * len(pids)
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def gone(self, pid):
        with self.lock:
            self.live.discard(pid)

    def sample(self):
        t = time.monotonic() - self.t0
        with self.lock:
            live = set(self.live)
        for i, pid in enumerate(self.pids):
            if pid not in live:
                continue
            if self.stage[i] is None:
                self.stage[i] = stage_pid(pid, self.wrapped)
            if self.stage[i] is None:
                continue
            v = status_kib(self.stage[i], "VmRSS")
            h = status_kib(self.stage[i], "VmHWM")
            if self.shm and v is not None:
                # the rings' pages are shared, bounded by their size
                # (64 MiB), not by the clips: the stage's own memory is
                # what it holds besides them, its peak the highest seen
                v -= status_kib(self.stage[i], "RssShmem") or 0
                h = v
            if v is not None:
                self.rows.append((t, STAGES[i], v))
            if h is not None:
                self.hwm[i] = max(self.hwm[i], h)

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(SAMPLE_S)


def read_peak(path):
    """/usr/bin/time -o's %M: the last line (a line about a non-zero exit
    status may come first)."""
    try:
        with open(path) as f:
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def run_pipeline(cmds, logdir, tag, shm=False):
    """Runs the stages in a pipe; returns (wall s, {stage: dict}). With
    shm, each stage reads the one before straight from the pipe (a ring
    of shared memory is offered only to a stage of the suite, not to
    /usr/bin/time), and its peak is the highest resident set sampled
    less its shared pages (the rings, fixed in size)."""
    procs, logs, prev = [], [], None
    wrapped = os.access(TIME_BIN, os.X_OK) and not shm
    t0 = time.monotonic()
    for i, cmd in enumerate(cmds):
        log = open(os.path.join(logdir, "%s-%s.log" % (tag, STAGES[i])),
                   "wb")
        peak = os.path.join(logdir, "%s-%s.peak" % (tag, STAGES[i]))
        if wrapped:
            cmd = [TIME_BIN, "-f", "%M", "-o", peak] + cmd
        last = i == len(cmds) - 1
        p = subprocess.Popen(cmd, stdin=prev or subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL if last else
                             subprocess.PIPE, stderr=log)
        if prev:
            prev.close()  # the stage before now writes to p alone
        prev = p.stdout
        procs.append(p)
        logs.append(log)
    sampler = Sampler([p.pid for p in procs], wrapped, t0, shm)
    sampler.start()
    res = {}
    for i, p in enumerate(procs):
        p.wait()
        sampler.gone(p.pid)
        peak = os.path.join(logdir, "%s-%s.peak" % (tag, STAGES[i]))
        res[STAGES[i]] = dict(rc=p.returncode, end=time.monotonic() - t0,
                              peak=read_peak(peak) if wrapped else None)
    wall = time.monotonic() - t0
    sampler.stop.set()
    sampler.join()
    for i, s in enumerate(STAGES):
        res[s]["hwm"] = sampler.hwm[i]
        if res[s]["peak"] is None:
            res[s]["peak"] = sampler.hwm[i]
    for log in logs:
        log.close()
    with open(os.path.join(logdir, "rss-%s.tsv" % tag), "w") as f:
        f.write("# seconds\tstage\tVmRSS KiB\n")
        for t, s, v in sampler.rows:
            f.write("%.2f\t%s\t%d\n" % (t, s, v))
    for s in STAGES:
        series = [(t, v) for t, st, v in sampler.rows if st == s]
        res[s]["series"] = series
    return wall, res


def half_rss(series):
    """Max sampled RSS in the first and in the second half of a stage's
    life (KiB); None where it lived too briefly to sample."""
    if len(series) < 4:
        return None, None
    mid = series[-1][0] / 2
    a = [v for t, v in series if t <= mid]
    b = [v for t, v in series if t > mid]
    return (max(a) if a else None), (max(b) if b else None)


def prepare(base, n, bad, jobs, seed):
    """The folder of n clips, made unless an earlier run left it."""
    d = os.path.join(base, "clips-%d" % n)
    params = dict(clips=n, bad=bad, seed=seed, gen=1)
    pfile = os.path.join(d, ".soak-params.json")
    try:
        with open(pfile) as f:
            if json.load(f) == params and os.path.exists(
                    os.path.join(d, soak_gen.MANIFEST)):
                say("  %s: reusing %d clips" % (d, n))
                return d
    except (OSError, ValueError):
        pass
    shutil.rmtree(d, ignore_errors=True)
    t0 = time.monotonic()
    soak_gen.generate(d, n, bad, jobs, seed)
    with open(pfile, "w") as f:
        json.dump(params, f)
    say("  %s: %d clips generated in %.1f s" % (d, n,
                                                 time.monotonic() - t0))
    return d


# With --shm: the -v line of each stage that must have sent its samples
# by reference, the payloads by reference in group 1
SHM_LINES = {
    "wavcat": r"^wavcat: output: (\d+) payloads? \(.*\) in shared memory",
    "segment": r"^segment: output: (\d+) payloads? \(.*\) in shared "
               r"memory, (\d+) of them passed on",
}


def shm_used(base, n):
    """Why the samples did not go by reference through the run of n clips
    (--shm), or None when every hop that carries them used the rings."""
    for stage, pat in SHM_LINES.items():
        path = os.path.join(base, "%d-%s.log" % (n, stage))
        with open(path, errors="replace") as f:
            m = [re.search(pat, line) for line in f]
        m = [x for x in m if x]
        if not m or int(m[0].group(1)) == 0:
            return "%s sent no payload by reference (%s)" % (stage, path)
    return None


def one_run(base, bindir, n, bad, jobs, seed, shm=False):
    data = prepare(base, n, bad, jobs, seed)
    out = os.path.join(base, "out-%d.h5" % n)
    cmds = commands(bindir, data, out)
    say("  %s%s" % ("MELPIPE_SHM=1: " if shm else "",
                    " | ".join(shlex.join(c) for c in cmds)))
    wall, res = run_pipeline(cmds, base, str(n), shm)
    failed = [s for s in STAGES if res[s]["rc"] != 0]
    say("  %d clips: pipeline %.1f s; exit status %s" % (
        n, wall, " ".join("%s %d" % (s, res[s]["rc"]) for s in STAGES)))
    acc, err = None, None
    if failed:
        err = "stage(s) failed: %s (logs: %s/%d-*.log)" % (
            ", ".join(failed), base, n)
    elif shm and shm_used(base, n):
        err = shm_used(base, n)
    else:
        try:
            acc = soak_check.check(data, out, RATE, SEG_LEN, SEG_HOP)
        except soak_check.Mismatch as ex:
            err = "accounting: %s" % ex
    if err:
        say("  FAIL: %s" % err)
    else:
        say("  every input accounted for: %(clips)d clips, %(usable)d "
            "usable, %(skipped)d in /skipped; %(rows)d rows" % acc)
    return dict(n=n, wall=wall, res=res, acc=acc, err=err)


def mib(kib):
    return kib / 1024.0


def table(small, big):
    """The per-stage memory table; returns (lines, failures)."""
    lines, fails = [], []
    lines.append("| stage | peak RSS %d clips | peak RSS %d clips | growth "
                 "| limit | per extra clip | RSS 1st half -> 2nd half "
                 "(%d clips) | verdict |" % (small["n"], big["n"],
                                              big["n"]))
    lines.append("|---|---:|---:|---:|---:|---:|---|---|")
    extra = big["n"] - small["n"]
    for s in STAGES:
        a, b = small["res"][s]["peak"], big["res"][s]["peak"]
        lim = max(a * TOL_PCT / 100.0, TOL_MIB * 1024)
        grow = b - a
        ok = grow <= lim
        h1, h2 = half_rss(big["res"][s]["series"])
        halves = ("%.1f -> %.1f MiB" % (mib(h1), mib(h2))
                  if h1 is not None and h2 is not None else "-")
        lines.append("| %s | %.1f MiB | %.1f MiB | %+.1f MiB | %.1f MiB | "
                     "%+.0f B | %s | %s |" % (
                         s, mib(a), mib(b), mib(grow), mib(lim),
                         grow * 1024.0 / extra if extra else 0, halves,
                         "ok" if ok else "FAIL"))
        if not ok:
            fails.append("%s peak RSS grew %.1f MiB from %d to %d clips "
                         "(limit %.1f MiB)" % (s, mib(grow), small["n"],
                                               big["n"], mib(lim)))
    return lines, fails


def main():
    p = argparse.ArgumentParser(prog="soak", description="The pipeline "
                                "over N generated clips: every clip "
                                "accounted for, every stage's memory flat.")
    p.add_argument("--clips", type=int, default=100000,
                   help="clips in the big run (default 100000); the small "
                   "run has a tenth")
    p.add_argument("--keep", metavar="DIR",
                   help="keep the clips, datasets, logs and RSS samples in "
                   "DIR (and reuse clips an earlier run left there)")
    p.add_argument("--bad", type=int, default=5,
                   help="broken files of each kind: zero-byte, garbage, "
                   "truncated WAV (default 5)")
    p.add_argument("--bin", default=None,
                   help="the programs' folder (default: the build's bin/)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="generator processes (default: online CPUs)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--shm", action="store_true",
                   help="with the shared-memory path on (MELPIPE_SHM=1): "
                   "the stages straight in the pipeline, their peaks from "
                   "/proc, and each hop that carries samples must have "
                   "sent them by reference")
    a = p.parse_args()
    if a.shm:
        os.environ["MELPIPE_SHM"] = "1"
    if a.clips < 10:
        p.error("--clips must be at least 10")
    top = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    bindir = os.path.abspath(a.bin or os.path.join(top, "bin"))
    missing = [s for s in STAGES
               if not os.access(os.path.join(bindir, s), os.X_OK)]
    if missing:
        print("soak: no %s in '%s': build them first (make %s)" % (
            ", ".join(missing), bindir,
            " ".join("bin/" + s for s in missing)), file=sys.stderr)
        return 1
    if a.keep:
        base = os.path.abspath(a.keep)
        os.makedirs(base, exist_ok=True)
    else:
        base = tempfile.mkdtemp(prefix="melpipe-soak.")
    t0 = time.monotonic()
    try:
        runs = []
        for n in (a.clips // 10, a.clips):
            say("soak: %d clips (%d broken of each kind)" % (n, a.bad))
            runs.append(one_run(base, bindir, n, a.bad, a.jobs, a.seed,
                                a.shm))
        fails = ["%d clips: %s" % (r["n"], r["err"]) for r in runs
                 if r["err"]]
        say("")
        lines, mfails = table(*runs)
        for line in lines:
            say(line)
        fails += mfails
        say("")
        for r in runs:
            acc = r["acc"]
            if acc:
                say("%d clips: pipeline %.1f s; %d clips in /clips (%d "
                    "usable, %d skipped: %s); %d rows (%s)" % (
                        r["n"], r["wall"], acc["clips"], acc["usable"],
                        acc["skipped"], ", ".join(
                            "%s '%s'" % (k, v) for k, v in
                            sorted(acc["reasons"].items())),
                        acc["rows"], ", ".join("%s %d clips" % kv for kv in
                                               acc["splits"].items())))
        say("limit: a stage's peak at %d clips may exceed its peak at %d "
            "by max(%g%%, %g MiB), wavcat's too (--sort-buffer %s); RSS "
            "sampled every %g s in %s/rss-N.tsv"
            % (a.clips, a.clips // 10, TOL_PCT, TOL_MIB, WAVCAT_SORT_BUFFER,
               SAMPLE_S, base if a.keep else "DIR (--keep DIR)"))
        say("soak: %s in %.0f s" % ("FAILED" if fails else "passed",
                                    time.monotonic() - t0))
        for f in fails:
            say("soak: %s" % f)
        return 1 if fails else 0
    finally:
        if not a.keep:
            say("soak: removing %s" % base)
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
