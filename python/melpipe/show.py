"""Pictures of a melpipe dataset: what `python -m melpipe show` draws.

show() picks rows (spread over the labels and splits, or the rows of one
clip), reads them and what the summary page needs, and has
melpipe._draw draw two pages: the rows (log-mel spectrograms with time
and mel-band axes, or waveforms for audio datasets) and a summary (rows
per split and label, skipped inputs, a histogram of the values). This
module reads; _draw alone imports matplotlib."""
import collections
import os

import numpy as np

from . import _h5, axes
from .dataset import MelDataset

GROUPS = ("training", "validation", "testing", "all")
VALUE_BUDGET = 1 << 21  # values sampled per split for the histogram

Picked = collections.namedtuple("Picked",
                                "split row clip path label segment offset")
Panel = collections.namedtuple("Panel", "picked title values full_length")
Shown = collections.namedtuple("Shown", "rows titles pages")


class ShowError(Exception):
    """A dataset or a clip that cannot be shown (one line)."""


def counted(n, one, many=None):
    """n and the noun that goes with it: "1 row", "2 rows", "0 rows"."""
    return "%d %s" % (n, one if n == 1 else (many or one + "s"))


def summary_path(out):
    """The summary page's file beside out: out.png -> out-summary.png."""
    stem, ext = os.path.splitext(out)
    return stem + "-summary" + (ext or ".png")


class Info:
    """What the pictures say about the file: its attributes, groups,
    labels and tables, and a MelDataset per group (split) for rows."""

    def __init__(self, path):
        self.path = path
        with _h5.open_file(path) as f:
            _h5.check_version(f, path)
            self.attrs = _h5.root_attrs(f)
            self.groups = [g for g in GROUPS if g in f]
            self.labels = [_h5.text(x) for x in f["labels"][()]]
            self.clip_paths = [_h5.text(x) for x in f["clips/path"][()]]
            self.skipped = [(_h5.text(p), _h5.text(r)) for p, r in
                            zip(f["skipped/path"][()],
                                f["skipped/reason"][()])]
            self.columns = {g: {"label": f[g]["label"][()],
                                "clip": f[g]["clip"][()],
                                "segment": f[g]["segment"][()],
                                "offset": f[g]["offset"][()]}
                            for g in self.groups}
            feats = f[self.groups[0]]["features"]
            self.filters = filter_names(feats)
            self.shapes = {g: f[g]["features"].shape for g in self.groups}
        self.sets = {g: MelDataset(path, g) for g in self.groups}
        first = self.sets[self.groups[0]]
        self.layout, self.kind = first.layout, first.kind
        self.dtype = str(self.attrs.get("dtype", first.stored_dtype))
        self.size = os.path.getsize(path)
        # row r of /clips is clip index first + r * step (shard files)
        self.first_clip, self.clip_step = _h5.clip_rows(self.attrs)

    def label_name(self, label):
        if 0 <= label < len(self.labels):
            return self.labels[label]
        return "(no label)"

    def clip_path(self, clip):
        """The path of clip index clip (a clip column's value), "?"
        where /clips has no row for it."""
        try:
            row = _h5.clip_row(self.attrs, clip, len(self.clip_paths),
                               self.path)
        except IndexError:
            return "?"
        return self.clip_paths[row]

    def picked(self, split, row):
        c = self.columns[split]
        clip = int(c["clip"][row])
        return Picked(split, int(row), clip, self.clip_path(clip),
                      int(c["label"][row]), int(c["segment"][row]),
                      int(c["offset"][row]))


def filter_names(ds):
    plist = ds.id.get_create_plist()
    ids = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    names = [_h5.FILTER_NAMES.get(i, "filter %d" % i) for i in ids]
    return [n for n in names if n != "shuffle"] or ["none"]


def spread(n, k):
    """k positions of 0..n-1, evenly spaced, first and last included."""
    if k >= n:
        return list(range(n))
    return sorted(set(np.round(np.linspace(0, n - 1, k)).astype(int)))


def pick_rows(info, k):
    """Up to k rows, the same every time: as many labels as possible,
    the first panels one row of each; a label's picks go round its
    splits (starting from a different split for each label) and are
    spread evenly over each split's rows of that label."""
    rows = {}  # label -> {split: [rows]}
    for g in info.groups:
        labels = info.columns[g]["label"]
        for y in np.unique(labels):
            rows.setdefault(int(y), {})[g] = np.flatnonzero(labels == y)
    order = sorted(rows, key=lambda y: (y < 0, y))
    taken = {(y, g): 0 for y in order for g in rows[y]}
    cells, turn = [], 0
    while len(cells) < k:
        grew = False
        for j, y in enumerate(order):
            free = [g for g in info.groups if g in rows[y]
                    and taken[y, g] < len(rows[y][g])]
            if len(cells) < k and free:
                g = free[(j + turn) % len(free)]
                cells.append((y, g, taken[y, g]))
                taken[y, g] += 1
                grew = True
        turn += 1
        if not grew:
            break
    out = []
    for y, g, c in cells:
        n, m = len(rows[y][g]), taken[y, g]
        out.append(info.picked(g, rows[y][g][(c * n) // m]))
    return out


def find_clip(info, name):
    """The clip index of the clip named by name: its key (the input's
    path relative to its folder), or a path that ends with the key or
    that the key ends with (demo/data/yes/a.wav, yes/a.wav, a.wav)."""
    paths = info.clip_paths
    hits = [i for i, p in enumerate(paths) if p == name]
    if not hits:
        tail = name.lstrip("./")
        hits = [i for i, p in enumerate(paths)
                if tail.endswith("/" + p) or p.endswith("/" + tail)]
    if not hits:
        example = " (one is '%s')" % paths[0] if paths else ""
        raise ShowError("no clip '%s' among the %s of '%s'%s"
                        % (name, counted(len(paths), "clip"), info.path,
                           example))
    if len(hits) > 1:
        raise ShowError("'%s' names %d clips ('%s', '%s', ...): give more "
                        "of its path" % (name, len(hits), paths[hits[0]],
                                         paths[hits[1]]))
    return info.first_clip + hits[0] * info.clip_step


def pick_clip(info, name, k):
    """The first k rows of the clip name names, in segment order."""
    clip = find_clip(info, name)
    out = []
    for g in info.groups:
        for r in np.flatnonzero(info.columns[g]["clip"] == clip):
            out.append(info.picked(g, r))
    if not out:
        path = info.clip_path(clip)
        why = [r for p, r in info.skipped if p == path]
        raise ShowError("clip '%s' has no rows in '%s'%s"
                        % (path, info.path,
                           ": skipped, " + why[0] if why else ""))
    out.sort(key=lambda p: (p.segment, p.offset))
    return out[:k], len(out)


def read_panel(info, p, max_seconds):
    """The values of picked row p (float32, at most max_seconds of
    them) and its title."""
    ds = info.sets[p.split]
    full = int(ds.lengths[p.row])
    per_s = axes.per_second(info.attrs, info.kind)
    limit = int(max_seconds * per_s) + 1 if per_s and max_seconds else None
    x = ds.features(p.row, limit=limit)
    if info.dtype == "s16":
        x = x.astype(np.float32) / 32768.0  # full scale
    x = np.asarray(x, np.float32)
    title = "%s  %s row %d" % (info.label_name(p.label), p.split, p.row)
    detail = p.path
    if info.attrs.get("segment_len") is not None or p.segment:
        detail += "  segment %d" % p.segment
    return Panel(p, title + "\n" + detail, x, full)


def sample_values(ds, budget=VALUE_BUDGET):
    """About budget values of the split, whole chunks spread over its
    features (decompressed once each), as float32; and the fraction of
    the split they are."""
    total = len(ds) if ds.layout == "fixed" else \
        int(ds._features().shape[0])
    if total == 0:
        return np.zeros(0, np.float32), 1.0
    per = max(1, int(np.prod(ds._row_shape)))
    step = max(1, int(ds.chunk_shape[0]))
    n_chunks = -(-total // step)
    k = max(1, min(n_chunks, budget // (step * per)))
    parts = []
    for c in spread(n_chunks, k):
        lo = c * step
        parts.append(ds._read(lo, min(total, lo + step)).ravel())
    x = np.concatenate(parts).astype(np.float32)
    if ds.stored_dtype == np.int16:
        x /= 32768.0
    return x, min(1.0, x.size / float(total * per))


def gather_summary(info):
    """{split: (label counts, lengths, sampled values, fraction)}."""
    out = {}
    for g in info.groups:
        ds = info.sets[g]
        labels = info.columns[g]["label"]
        counts = collections.Counter(int(y) for y in labels)
        values, frac = sample_values(ds)
        out[g] = (counts, ds.lengths, values, frac)
    return out


def show(path, out, clip=None, rows=8, max_seconds=30.0, summary=True):
    """Draws the dataset at path: rows (up to rows of them, or the rows
    of the clip named clip) into out, and unless summary is False the
    summary page into summary_path(out). Returns Shown(rows: the Picked
    rows drawn, titles: their panel titles, pages: the files written)."""
    from . import _draw
    draw = _draw.load()  # before any reading: says what to install
    path, out = os.fspath(path), os.fspath(out)
    if not os.path.isfile(path):
        why = "no such file" if not os.path.exists(path) else "not a file"
        raise ShowError("cannot open '%s': %s" % (path, why))
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        raise ShowError("cannot write '%s': no folder '%s'" % (out, folder))
    info = Info(path)
    if clip is not None:
        picked, of = pick_clip(info, clip, rows)
    else:
        picked = pick_rows(info, rows)
        of = sum(len(c["label"]) for c in info.columns.values())
    panels = [read_panel(info, p, max_seconds) for p in picked]
    pages = [out] + ([summary_path(out)] if summary else [])
    draw.rows_page(info, panels, of, clip, pages[0])
    if summary:
        draw.summary_page(info, gather_summary(info), pages[1])
    return Shown(picked, [p.title for p in panels], pages)
