"""The report of scripts/bench (scripts/bench-run.py measures, this writes
it up): the table, the ratios, the targets, the scaling check and the
details, as markdown. docs/BENCHMARKS.md says what every line means."""

# Targets (docs/BENCHMARKS.md), as (key, text, goal, higher_is_better),
# by job and path.
STRONGER = ("speedup_stronger_wall", "pipeline vs the faster torchaudio "
            "anchor, wall clock (x faster)", 15.0, 1)
TARGETS = {
    ("ten-second", "gpu"): [
        ("speedup_anchor", "pipeline vs torchaudio anchor, threads, in "
         "process (x faster)", 8.0, 1),
        STRONGER,
        ("pipe_over_floor", "pipeline / parallel read floor", 3.0, 0),
        ("pipe_over_slowest", "pipeline / slowest stage alone", 1.3, 0),
        ("gpumel_gbs", "gpumel alone, GB/s of s16 input", 3.0, 1),
        ("kernels_vs_torch", "gpumel kernels vs torchaudio MelSpectrogram "
         "(x faster, same batch)", 5.0, 1),
    ],
    ("ten-second", "cpu"): [
        ("speedup_anchor", "pipeline vs numpy anchor (x faster; issue 4's "
         "2-core target)", 5.0, 1),
        ("pipe_over_slowest", "pipeline / slowest stage alone", 1.3, 0),
    ],
    ("keyword-spotting", "gpu"): [
        STRONGER,
        ("pipe_over_slowest", "pipeline / slowest stage alone", 1.3, 0),
    ],
    ("keyword-spotting", "cpu"): [
        ("pipe_over_slowest", "pipeline / slowest stage alone", 1.3, 0),
    ],
}


def fmt_s(x):
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 100 else f"{x:.1f}"


def fmt_x(x):
    if x is None:
        return "-"
    return f"{x:.2f}x" if x < 100 else f"{x:.0f}x"


def mib(v):
    return f"{v / 1024:.0f}" if v else "?"


def is_anchor(key):
    return key.startswith("anchor")


def report(job, res, rows, sample_bytes, clips, gpu):
    """The markdown report; sets res["targets_ok"]."""
    by = {r.key: r for r in rows}
    L = header(job, res, sample_bytes, clips, gpu)
    L += table(rows, by)
    L += ratios(res, rows, by)
    ok, m = targets(job, res, by, sample_bytes, gpu, L)
    L += scaling(res.get("scaling"))
    ok &= res.get("scaling", {}).get("ok", True)
    res["targets_ok"] = ok
    res["measured"] = m
    L += details(res)
    return "\n".join(L) + "\n"


def header(job, res, sample_bytes, clips, gpu):
    info = res["machine"]
    L = [f"# melpipe benchmark results: {job.title}", ""]
    L.append(f"- date: {res['date']}")
    L.append(f"- machine: {info['nproc']} cores, {info['cpu']}"
             + (f", {info['mem_gib']:.0f} GiB RAM" if info["mem_gib"]
                else "") + f", Linux {info['kernel']}")
    L.append("- GPU: " + ("; ".join(info["gpus"]) or "none")
             + ("" if gpu or not info["gpus"] else " (not used: --cpu)"))
    what = "windows" if job.seg else "rows"
    L.append(f"- path: {'GPU' if gpu else 'CPU'}; {clips} clips of "
             f"{job.seconds} s at {job.rate} Hz s16 ({sample_bytes / 1e9:.2f}"
             f" GB of samples, {clips * job.rows_per_clip} {what} of "
             f"[{job.n_mels}, {job.frames}]); {res['runs']} "
             f"round{'s' if res['runs'] > 1 else ''}"
             + (f" (the anchors in {res['anchor_runs']})"
                if res["anchor_runs"] < res["runs"] else "")
             + ", median (min)")
    L.append("- programs: " + "; ".join(
        v or f"{p} (no --version)" for p, v in res["versions"].items()))
    L.append("")
    return L


def table(rows, by):
    anchor = by.get("anchor")
    anchor_t = anchor.median if anchor and anchor.times else None
    floor = by["floor_par"].median
    L = ["| what | median s | min s | vs anchor | vs floor | throughput |",
         "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        if r.skipped:
            L.append(f"| {r.what} | skipped: {r.skipped} | | | | |")
            continue
        if not r.times:
            continue
        med = r.median
        mn = r.extra.get("min_s", r.min)
        vs_anchor = anchor_t / med if anchor_t and r.clips and \
            not is_anchor(r.key) else None
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
    L.append("vs anchor: the threaded anchor's time in process / this time "
             "(x faster than it); vs floor: this time / parallel read "
             "floor.")
    return L


def per_round(num, den):
    """num[r] / den[r] over the rounds both ran: (lowest, highest)."""
    q = [a / b for a, b in zip(num, den) if b]
    return (min(q), max(q)) if q else None


def ratios(res, rows, by):
    """Pipeline against each anchor (medians; in process and by wall
    clock, with the range of the ratios of single rounds) and against
    the read floor."""
    pipe = by["pipeline"]
    floor = by["floor_par"]
    L = ["", "## Ratios", "",
         "| ratio | medians | rounds (lowest-highest) |", "|---|---:|---|"]
    for r in rows:
        if not is_anchor(r.key) or not r.times:
            continue
        how = "wall clock" if r.key.endswith("_wall") else "in process"
        rr = per_round(r.times, pipe.times)
        L.append(f"| pipeline vs {r.extra['short']}, {how} (x faster) | "
                 f"{fmt_x(r.median / pipe.median)} | "
                 + (f"{rr[0]:.2f}-{rr[1]:.2f}" if rr else "-") + " |")
    rr = per_round(pipe.times, floor.times)
    L.append(f"| pipeline / parallel read floor | "
             f"{pipe.median / floor.median:.2f} | "
             + (f"{rr[0]:.2f}-{rr[1]:.2f}" if rr else "-") + " |")
    same = [x for x in res.get("anchors", []) if x["key"] == "loaders_same"]
    if same:
        L.append("")
        L.append("The torchaudio anchor's two loaders (threads, DataLoader "
                 "workers) wrote "
                 + ("the same file: every dataset, value and attribute "
                    "equal." if same[0]["same"] else
                    f"DIFFERENT files: {same[0]['differ']}."))
    return L


def targets(job, res, by, sample_bytes, gpu, L):
    stage_t = {k: by[k].median for k in job.stages}
    slowest = max(stage_t, key=stage_t.get)
    pipe_t = by["pipeline"].median
    floor = by["floor_par"].median
    anchor = by.get("anchor")
    m = {"speedup_anchor": anchor.median / pipe_t
         if anchor and anchor.times else None,
         "pipe_over_floor": pipe_t / floor,
         "pipe_over_slowest": pipe_t / stage_t[slowest],
         "gpumel_gbs": sample_bytes / stage_t["gpumel"] / 1e9}
    # The stronger anchor: the torchaudio one the user waits least for.
    walls = [r.median for k, r in by.items() if gpu and k in
             ("anchor_wall", "anchor_workers_wall") and r.times]
    if walls:
        m["speedup_stronger_wall"] = min(walls) / pipe_t
    if gpu and by.get("kernels") and by["kernels"].times and \
            by.get("torch_mel") and by["torch_mel"].times:
        m["kernels_vs_torch"] = by["torch_mel"].median / \
            by["kernels"].median
    L += ["", "## Targets", "", "| target | measured | goal | met |",
          "|---|---:|---:|---|"]
    ok_all = True
    for key, text, goal, higher in TARGETS[(job.name,
                                            "gpu" if gpu else "cpu")]:
        val = m.get(key)
        if val is None:
            L.append(f"| {text} | not measured | "
                     f"{'>=' if higher else '<='} {goal:g} | - |")
            continue
        ok = val >= goal if higher else val <= goal
        ok_all &= ok
        L.append(f"| {text} | {val:.2f} | {'>=' if higher else '<='} "
                 f"{goal:g} | {'yes' if ok else 'NO'} |")
    if not gpu and job.name == "ten-second" and \
            res["machine"]["nproc"] != 2:
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
    return ok_all, m


def flat(lo_kib, hi_kib):
    """{stage: (lo, hi)} of the stages measured at both sizes, and whether
    each is flat: at most 20% or 16 MiB more, whichever is larger
    (per-clip tables such as /clips legitimately add a little)."""
    grow = {k: (lo_kib[k], hi_kib[k]) for k in lo_kib
            if lo_kib[k] and hi_kib[k]}
    return grow, all(h - lo <= max(0.2 * lo, 16 * 1024)
                     for lo, h in grow.values())


def scaling(sc):
    if not sc:
        return []
    sizes = sorted(sc["sizes"])
    stages = " / ".join(sc["sizes"][sizes[0]]["rss_kib"])
    L = ["", "## Scaling", "",
         f"| clips | median s | us per clip | peak RSS MiB ({stages}) | "
         f"peak PSS MiB ({stages}) |", "|---:|---:|---:|---|---|"]
    for n in sizes:
        s = sc["sizes"][n]
        rss = " / ".join(mib(v) for v in s["rss_kib"].values())
        pss = " / ".join(mib(v) for v in s["pss_kib"].values())
        L.append(f"| {n} | {s['median']:.3f} | "
                 f"{s['per_clip_ms'] * 1e3:.1f} | {rss} | {pss} |")
    ratio = sc["per_clip_ratio"]
    lin = abs(ratio - 1) <= 0.15
    L.append("")
    L.append(f"- time per clip, {sizes[-1]} vs {sizes[0]} clips: "
             f"{ratio:.3f} (goal within 15% of 1: "
             f"{'yes' if lin else 'NO'})")
    L.append(f"- as a line through the two ends: fixed cost "
             f"{sc['fixed_s']:.3f} s + {sc['marginal_us_per_clip']:.1f}"
             " us per clip" + "".join(
                 f"; {n} clips {d * 100:+.1f}% off the line"
                 for n, d in sc["line_dev"].items()))
    ok = lin
    for key, name in (("rss_kib", "peak RSS"), ("pss_kib", "peak PSS")):
        grow, is_flat = flat(sc["sizes"][sizes[0]][key],
                             sc["sizes"][sizes[-1]][key])
        ok &= is_flat
        L.append(f"- {name}, largest vs smallest: " + (", ".join(
            f"{k} {(h - lo) / 1024:+.0f} MiB ({h / lo:.2f}x)"
            for k, (lo, h) in grow.items()) or "not measured")
            + " (goal: flat, at most +20% or +16 MiB: "
            + f"{'yes' if is_flat else 'NO'})")
    sc["ok"] = ok
    return L


def details(res):
    L = ["", "## Details", ""]
    rss, pss = res.get("rss_kib") or {}, res.get("pss_kib") or {}
    L.append("- peak memory per stage in the pipeline, RSS / PSS: "
             + ", ".join(f"{k} {mib(v)} / {mib(pss.get(k))} MiB"
                         for k, v in rss.items())
             + f" (measured with {res.get('rss_tool')})")
    sbytes = res.get("stream_bytes", {})
    L.append("- recorded streams: " + ", ".join(
        f"{k}.rec {v / 1e9:.2f} GB" for k, v in sbytes.items()))
    L.append(f"- pipeline output: {res.get('pipeline_check')}")
    if res.get("h5pack_alone_check"):
        L.append(f"- h5pack alone output: {res['h5pack_alone_check']}")
    for x in res.get("anchors", []):
        if x["key"] == "loaders_same":
            continue
        L += anchor_details(x)
    tm = res.get("torch_mel")
    if tm:
        L.append(f"- torchaudio MelSpectrogram alone: {tm['frames']} "
                 + ("frames" if tm.get("clip_samples", tm["n_fft"]) ==
                    tm["n_fft"] else f"clips of {tm['clip_samples']}")
                 + f", median {tm['mel_ms_median']:.3f} ms = "
                 f"{tm['mel_gsamples_s']:.1f} Gsamples/s; s16 -> f16 dB "
                 f"chain {tm['chain_ms_median']:.3f} ms "
                 f"({tm['reps']} reps, CUDA events; torch {tm['torch']}, "
                 f"torchaudio {tm['torchaudio']}, {tm['device']})")
    L += ["", "Commands:", "", "```", res.get("pipeline_cmd", "")]
    L += res.get("anchor_argv") or []
    L.append("```")
    cb = res.get("cuda_bench")
    if cb and cb.get("output"):
        L += ["", f"gpumel-cuda-bench (`{cb['argv']}`):", "", "```",
              cb["output"][-3000:], "```"]
    if res.get("pipeline_stderr", "").strip():
        L += ["", "Stage reports of the last pipeline run (-v):", "", "```",
              res["pipeline_stderr"].strip(), "```"]
    return L


def anchor_details(x):
    L = [f"- {x['key']} output: {x['check']}"]
    ag = x.get("agreement")
    if ag:
        L.append(f"- pipeline vs {x['key']} features, first rows of each "
                 f"split: max |diff| {ag[0]:.3f} dB, 99.9th percentile "
                 f"{ag[1]:.3f} dB (f16 output: steps of 0.0156 dB at 16-32"
                 f" dB, 0.03 at 32-64)")
    else:
        L.append(f"- pipeline vs {x['key']} features: not compared (rows "
                 "not in the same order)")
    runs = x.get("runs")
    if runs:
        keys = [k for k in ("import_s", "init_s", "load_wait_s", "gpu_s",
                            "dsp_s", "write_s", "total_s") if k in runs[0]]
        L.append(f"- {x['key']} breakdown per run (s): " + "; ".join(
            ", ".join(f"{k[:-2]} {r[k]:.2f}" for k in keys) for r in runs))
        info = {k: runs[0][k] for k in (
            "loader", "threads", "workers", "prefetch_factor", "pin_memory",
            "batch_clips", "torch", "torchaudio", "device", "python")
            if k in runs[0]}
        L.append(f"- {x['key']}: " + ", ".join(f"{k} {v}"
                                               for k, v in info.items()))
    return L
