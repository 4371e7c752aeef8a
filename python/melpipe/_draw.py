"""The two pages of `python -m melpipe show`, drawn with matplotlib's Agg
canvas (no display, and no change to pyplot's backend for a caller that
uses pyplot itself). matplotlib is optional: load() says how to get it."""
import numpy as np

from . import axes
from .show import counted

PLOT_HINT = ("matplotlib is not installed: pip install matplotlib "
             "(or pip install 'melpipe[plot]')")
MAX_LABELS = 40  # rows of the split-by-label table drawn
MAX_POINTS = 20000  # a waveform's points before it is drawn as an envelope
COLOUR_BAR = 1.5  # inches right of the spectrograms: bar, ticks, label


class MissingMatplotlib(ImportError):
    pass


def load():
    """This module, once matplotlib imports; MissingMatplotlib (whose
    message names what to install) otherwise."""
    global Figure, FigureCanvasAgg
    try:
        from matplotlib.figure import Figure
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        raise MissingMatplotlib(PLOT_HINT) from None
    import sys
    return sys.modules[__name__]


def save(fig, out):
    FigureCanvasAgg(fig)
    fig.savefig(out, dpi=100)


def header(info):
    a = info.attrs
    text = "%s: %s %s, %s" % (info.path, info.layout, info.kind, info.dtype)
    n = axes.n_features(a)
    if info.kind == "features" and n is not None:
        _, one, many = axes.feature_words(a)
        text += ", %s, hop %s at %s Hz" % (counted(n, one, many), a.get(
            "hop_length", "?"), a.get("sample_rate", "?"))
    elif "sample_rate" in a:
        text += ", %s Hz" % a["sample_rate"]
    return text


def energy_note(a):
    """The words that say a frame's first value is its log energy
    (Kaldi's use_energy), " (row 0: log energy)" or " (c0: log
    energy)"; "" where it is not."""
    if axes.energy_row(a) is None:
        return ""
    return " (%s: log energy)" % ("c0" if axes.feature(a) == "mfcc"
                                  else "row 0")


# -- the rows page


def rows_page(info, panels, of, clip, out):
    n = max(1, len(panels))
    per_s = axes.per_second(info.attrs, info.kind)
    short = per_s is not None and all(
        length(p, info.kind) <= 6 * per_s for p in panels)
    ncols = 2 if n >= 4 and short else 1
    nrows = -(-n // ncols)
    height = 1.4 + 2.5 * nrows  # inches: the title, then the panels
    width = 7 * ncols + 1
    fig = Figure(figsize=(width, height))
    # the tick labels' width: "energy" is wider than "7.1k"
    left = 0.56 + (0.2 if info.kind == "features" and
                   axes.energy_row(info.attrs) is not None else 0)
    # features keep COLOUR_BAR inches on the right for the colour bar,
    # its ticks and its label, whatever the width
    grid = fig.add_gridspec(nrows, ncols, hspace=0.9, wspace=0.25,
                            left=left / width, right=1 - (
                                COLOUR_BAR if info.kind == "features"
                                else 0.25) / width,
                            top=1 - 1.15 / height, bottom=0.45 / height)
    what = (axes.feature_words(info.attrs)[0] + energy_note(info.attrs)
            if info.kind == "features"
            else "waveforms (the samples as stored)")
    if clip:
        which = "clip '%s', %s" % (
            clip, ("its " + counted(of, "row")) if len(panels) == of else
            "the first %d of its %s" % (len(panels), counted(of, "row")))
    else:
        which = "%s of %d, spread over labels and splits" % (
            counted(len(panels), "row"), of)
    fig.suptitle("%s\n%s: %s" % (header(info), what, which), fontsize=11)
    if not panels:
        fig.text(0.5, 0.5, "no rows", ha="center")
    grid_axes = [fig.add_subplot(grid[i // ncols, i % ncols])
                 for i in range(len(panels))]
    if info.kind == "features":
        draw_spectrograms(fig, info, panels, grid_axes)
    else:
        for ax, p in zip(grid_axes, panels):
            draw_waveform(ax, info, p)
    save(fig, out)


def colour_limits(panels):
    vals = [p.values[np.isfinite(p.values)] for p in panels]
    vals = np.concatenate([v.ravel() for v in vals] or [np.zeros(0)])
    if vals.size == 0:
        return 0.0, 1.0
    lo, hi = np.percentile(vals, [1, 100])
    return float(lo), float(hi if hi > lo else lo + 1)


def feature_ticks(info, n_rows):
    """Rows of a frame to tick, their labels and the axis' name: the
    bands' centre frequencies (mel, fbank) or the rows' numbers (MFCC,
    or a file without the bands' parameters), and "energy" on the log
    energy row of Kaldi's use_energy."""
    a = info.attrs
    energy = axes.energy_row(a)
    first = 0 if energy is None else 1  # the energy row comes first
    hz = axes.mel_band_hz(a) if axes.feature(a) != "mfcc" else None
    if hz is not None and len(hz) == n_rows - first:
        bands = spread_ticks(len(hz), 6)
        if first and len(bands) > 2:
            bands = bands[1:]  # a label beside "energy" would overlap it
        idx = [first + i for i in bands]
        labels = ["%.1fk" % (hz[i] / 1000) if hz[i] >= 1000 else
                  "%.0f" % hz[i] for i in bands]
        name = "Hz (%s mel bands)" % a.get("mel_scale", "slaney")
    else:
        idx = spread_ticks(n_rows, 6)
        labels = [str(i) for i in idx]
        name = axes.feature_words(a)[1]
    if energy is not None and n_rows:
        if energy not in idx:
            idx, labels = [energy] + idx, [""] + labels
        labels[idx.index(energy)] = "energy"
    return idx, labels, name


def spread_ticks(n, k):
    return sorted(set(np.round(np.linspace(0, max(0, n - 1),
                                           min(n, k))).astype(int)))


def draw_spectrograms(fig, info, panels, grid_axes):
    vmin, vmax = colour_limits(panels)
    image = None
    for ax, p in zip(grid_axes, panels):
        x = np.ma.masked_invalid(p.values)
        n_mels, n = x.shape
        t = axes.frame_times(info.attrs, n, p.picked.offset)
        if t is not None and n:
            dt = (t[1] - t[0]) if n > 1 else \
                int(info.attrs["hop_length"]) / axes.sample_rate(info.attrs)
            extent = (t[0] - dt / 2, t[-1] + dt / 2, -0.5, n_mels - 0.5)
            ax.set_xlabel("seconds in the clip", fontsize=8)
        else:
            extent = (-0.5, n - 0.5, -0.5, n_mels - 0.5)
            ax.set_xlabel("frame", fontsize=8)
        if n == 0:
            ax.text(0.5, 0.5, "0 frames", ha="center", va="center",
                    transform=ax.transAxes)
        else:
            image = ax.imshow(x, origin="lower", aspect="auto",
                              interpolation="nearest", extent=extent,
                              cmap="magma", vmin=vmin, vmax=vmax)
        if axes.energy_row(info.attrs) is not None and n:
            ax.axhline(0.5, color="white", lw=0.8)  # energy | the rest
        ticks, labels, name = feature_ticks(info, n_mels)
        ax.set_yticks(ticks)
        ax.set_yticklabels(labels, fontsize=8)
        ax.set_ylabel(name, fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
        ax.set_title(cut_title(p, info.kind), fontsize=9)
    if image is not None:
        width = fig.get_figwidth()
        cax = fig.add_axes([1 - (COLOUR_BAR - 0.2) / width, 0.15,
                            0.14 / width, 0.7])
        bar = fig.colorbar(image, cax=cax)
        bar.set_label(axes.value_unit(info.attrs), fontsize=8)
        bar.ax.tick_params(labelsize=8)


def length(p, kind):
    """Frames (samples) of panel p drawn."""
    return p.values.shape[-1] if kind == "features" else len(p.values)


def cut_title(p, kind):
    """The panel's title, saying where only the row's start is drawn."""
    n = length(p, kind)
    if n < p.full_length:
        return p.title + "  (first %d of %d)" % (n, p.full_length)
    return p.title


def envelope(t, y):
    """(t, low, high) of y reduced to at most MAX_POINTS buckets."""
    step = -(-len(y) // MAX_POINTS)
    m = len(y) // step * step
    lo = y[:m].reshape(-1, step).min(axis=1)
    hi = y[:m].reshape(-1, step).max(axis=1)
    return t[:m:step], lo, hi


def draw_waveform(ax, info, p):
    x = p.values.reshape(len(p.values), -1)  # [samples, channels]
    t = axes.sample_times(info.attrs, len(x), p.picked.offset)
    ax.set_xlabel("seconds in the clip" if t is not None else "sample",
                  fontsize=8)
    if t is None:
        t = np.arange(len(x)) + p.picked.offset
    if len(x) == 0:
        ax.text(0.5, 0.5, "0 samples", ha="center", va="center",
                transform=ax.transAxes)
    for c in range(x.shape[1]):
        y = np.nan_to_num(x[:, c])
        name = "channel %d" % c if x.shape[1] > 1 else None
        if len(y) > MAX_POINTS:
            tt, lo, hi = envelope(t, y)
            ax.fill_between(tt, lo, hi, lw=0, alpha=0.7, label=name)
        elif len(y):
            ax.plot(t, y, lw=0.6, label=name)
    if x.shape[1] > 1:
        ax.legend(fontsize=7, loc="upper right")
    ax.set_ylabel("amplitude (full scale)", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.set_title(cut_title(p, info.kind), fontsize=9)


# -- the summary page


def summary_page(info, summary, out):
    fig = Figure(figsize=(13, 9.5))
    grid = fig.add_gridspec(3, 2, height_ratios=[0.45, 2, 1], hspace=0.4,
                            wspace=0.3, left=0.12, right=0.97, top=0.95,
                            bottom=0.06)
    fig.suptitle("%s: summary" % info.path, fontsize=12)
    text_block(fig.add_subplot(grid[0, :]), facts(info, summary))
    split_label_table(fig.add_subplot(grid[1, 0]), info, summary)
    value_histogram(fig.add_subplot(grid[1, 1]), info, summary)
    text_block(fig.add_subplot(grid[2, 0]), skipped_lines(info))
    row_lengths(fig.add_subplot(grid[2, 1]), info, summary)
    save(fig, out)


def text_block(ax, lines):
    ax.axis("off")
    ax.text(0, 1, "\n".join(lines), va="top", ha="left", family="monospace",
            fontsize=9, transform=ax.transAxes)


def facts(info, summary):
    a = info.attrs
    rows = ", ".join("%s %d" % (g, len(summary[g][1])) for g in info.groups)
    lines = [header(info),
             "rows: %s; %s, %d skipped; %s" % (
                 rows, counted(len(info.clip_paths), "clip"),
                 len(info.skipped), counted(len(info.labels), "label")),
             "features %s; compression %s; %.1f MB" % (
                 ", ".join("%s %s" % (g, list(s))
                           for g, s in info.shapes.items()),
                 "+".join(info.filters), info.size / 1e6)]
    if info.kind == "features":
        lines += parameter_lines(a)
    prov = a.get("provenance", [])
    if isinstance(prov, str):
        prov = [prov]
    lines.append("made by: " + " | ".join(s.split("\t")[0] for s in prov))
    return lines


def said(a, *keys):
    """["key value", ...] for each of keys the attributes a hold, in
    order: what the file says, and nothing for what it does not."""
    return ["%s %s" % (k, a[k]) for k in keys if k in a]


def samples_ms(a, key):
    """["key N (T ms)"] for a length in samples, the time where the
    file gives its rate; [] where it lacks key."""
    if key not in a:
        return []
    sr = axes.sample_rate(a)
    try:
        ms = " (%g ms)" % (1000.0 * float(a[key]) / sr) if sr else ""
    except (TypeError, ValueError):
        ms = ""
    return ["%s %s%s" % (key, a[key], ms)]


def parameter_lines(a):
    """How a features file's frames were made, in the attributes' own
    names and values (formats/hdf5.md): the framing (Kaldi's
    win_length, hop_length and snip_edges; or n_fft, hop_length and
    center), the bands and, for MFCC, the coefficients."""
    name = axes.feature(a)
    if axes.kaldi_framing(a):
        frames = (samples_ms(a, "win_length") + samples_ms(a, "hop_length")
                  + said(a, "n_fft", "snip_edges", "window"))
    else:
        frames = (said(a, "n_fft") + samples_ms(a, "win_length")
                  + samples_ms(a, "hop_length") + said(a, "center",
                                                       "window"))
    bands = said(a, "n_mels")
    if "mel_scale" in a:
        bands.append("%s scale" % a["mel_scale"])
    if "fmin" in a and "fmax" in a:
        bands.append("fmin %s to fmax %s Hz" % (a["fmin"], a["fmax"]))
    bands += said(a, "log", "top_db")
    # Kaldi's use_energy: fbank's row 0, MFCC's c0 (energy_note says)
    energy = [s + energy_note(a) for s in said(a, "use_energy")] \
        if axes.kaldi_framing(a) else []
    coefs = said(a, "n_mfcc", "mfcc_bands", "cepstral_lifter") + energy
    if name != "mfcc":
        bands, coefs = bands + energy, []
    return ["%s: %s" % (what, ", ".join(items)) for what, items in
            (("frames", frames), ("bands", bands), ("MFCC", coefs))
            if items]


def split_label_table(ax, info, summary):
    ids = sorted({y for g in info.groups for y in summary[g][0]},
                 key=lambda y: (y < 0, y))
    totals = {y: sum(summary[g][0].get(y, 0) for g in info.groups)
              for y in ids}
    shown = sorted(ids, key=lambda y: -totals[y])[:MAX_LABELS]
    shown = [y for y in ids if y in shown]
    m = np.array([[summary[g][0].get(y, 0) for g in info.groups]
                  for y in shown], float).reshape(len(shown),
                                                  len(info.groups))
    ax.imshow(m, aspect="auto", cmap="Blues", vmin=0,
              vmax=max(1.0, m.max()))
    ax.set_xticks(range(len(info.groups)))
    ax.set_xticklabels(["%s\n%d" % (g, len(summary[g][1]))
                        for g in info.groups], fontsize=8)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([info.label_name(y) for y in shown],
                       fontsize=8 if len(shown) <= 20 else 6)
    if len(shown) <= 20:
        for (i, j), v in np.ndenumerate(m):
            ax.text(j, i, "%d" % v, ha="center", va="center", fontsize=7,
                    color="white" if v > 0.6 * m.max() else "black")
    more = "" if len(shown) == len(ids) else \
        " (the %d largest of %s)" % (len(shown), counted(len(ids), "label"))
    ax.set_title("rows per split and label" + more, fontsize=10)


def value_histogram(ax, info, summary):
    drawn = False
    all_values = [summary[g][2] for g in info.groups]
    finite = [v[np.isfinite(v)] for v in all_values]
    pool = np.concatenate(finite) if finite else np.zeros(0)
    if pool.size:
        lo, hi = float(pool.min()), float(pool.max())
        bins = np.linspace(lo, hi if hi > lo else lo + 1, 81)
        for g, v in zip(info.groups, finite):
            if v.size:
                ax.hist(v, bins=bins, histtype="step", lw=1.2,
                        label="%s (%.0f%% of its values)"
                        % (g, 100 * summary[g][3]))
                drawn = True
    if drawn:
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no values", ha="center", transform=ax.transAxes)
    bad = sum(int((~np.isfinite(v)).sum()) for v in all_values)
    unit = axes.value_unit(info.attrs) if info.kind == "features" else \
        "amplitude (full scale)"
    ax.set_xlabel(unit + ("; %s left out" % counted(bad, "non-finite value")
                          if bad else ""), fontsize=8)
    ax.set_ylabel("values", fontsize=8)
    ax.set_title("histogram of the values", fontsize=10)
    ax.tick_params(labelsize=8)


def skipped_lines(info):
    if not info.skipped:
        return ["skipped inputs: none"]
    reasons = {}
    for _, r in info.skipped:
        reasons[r] = reasons.get(r, 0) + 1
    lines = ["skipped inputs: %d" % len(info.skipped)]
    for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:6]:
        lines.append("  %5d  %s" % (n, r[:70]))
    lines.append("first:")
    lines += ["  " + p[:80] for p, _ in info.skipped[:4]]
    return lines


def row_lengths(ax, info, summary):
    """Ragged: a histogram of the rows' lengths (in seconds where the
    file says its rate); fixed: the rows' one length, said."""
    per_s = axes.per_second(info.attrs, info.kind)
    n = np.concatenate([np.asarray(summary[g][1]) for g in info.groups])
    unit = "frames" if info.kind == "features" else "samples"
    if info.layout == "fixed" or n.size == 0:
        ax.axis("off")
        one = int(n[0]) if n.size else 0
        said = "every row: %s" % counted(one, unit[:-1])
        if per_s:
            said += " (%.3f s)" % (one / per_s)
        ax.text(0, 1, said, va="top", transform=ax.transAxes, fontsize=9,
                family="monospace")
        return
    ax.hist(n / per_s if per_s else n, bins=40)
    ax.set_xlabel("row length (%s)" % ("seconds" if per_s else unit),
                  fontsize=8)
    ax.set_ylabel("rows", fontsize=8)
    ax.set_title("row lengths", fontsize=10)
    ax.tick_params(labelsize=8)
