#!/usr/bin/env python3
"""Usage: PROG FILE.h5
Print what a melpipe HDF5 dataset holds.

Shows what the file holds (the feature: mel, fbank or mfcc; or audio),
which shard of a job a shard file is, the split groups with their
feature shapes and per-label row counts, the label table, the clips (with their files' own sample rates and
channels) and skipped inputs, and the provenance chain.
zstd-compressed datasets (h5pack --compress zstd) need HDF5 filter 32015:
h5info.py uses hdf5plugin where it is installed, and otherwise points
HDF5_PLUGIN_PATH, unless it names a folder already, at melpipe's plugin
folder beside the script: bin/plugins in the source tree (the script in
scripts/), lib/melpipe/hdf5-plugins beside the bin/ it is installed in.
"""
import os
import signal
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
PLUGIN_DIRS = (os.path.join(HERE, "..", "bin", "plugins"),
               os.path.join(HERE, "..", "lib", "melpipe", "hdf5-plugins"))
FILTER_NAMES = {32015: "zstd"}


def use_plugin_dir():
    """HDF5_PLUGIN_PATH for the HDF5 library h5py loads, which reads it
    once: the caller's when it names a folder, else the first of
    PLUGIN_DIRS that exists."""
    given = os.environ.get("HDF5_PLUGIN_PATH", "")
    if any(os.path.isdir(d) for d in given.split(":") if d):
        return
    for d in PLUGIN_DIRS:
        if os.path.isdir(d):
            os.environ["HDF5_PLUGIN_PATH"] = os.path.normpath(d)
            return


h5py = np = None


def load_modules():
    """Imports h5py and numpy (hdf5plugin where installed), or says what
    to install and returns False."""
    global h5py, np
    use_plugin_dir()
    try:
        import hdf5plugin  # noqa: F401  (registers the zstd filter)
    except ImportError:
        pass
    try:
        import h5py as h5py_
        import numpy as np_
    except ImportError as e:
        print(f"h5info.py: {e.name} is missing for {sys.executable} "
              "(Debian: apt-get install python3-h5py; or pip install "
              "h5py)", file=sys.stderr)
        return False
    h5py, np = h5py_, np_
    return True


def missing_filters(f):
    """{filter id: [datasets that need it]} for the filters of f's
    datasets that this HDF5 cannot load."""
    missing = {}

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset):
            return
        plist = obj.id.get_create_plist()
        for i in range(plist.get_nfilters()):
            fid = plist.get_filter(i)[0]
            if not h5py.h5z.filter_avail(fid):
                missing.setdefault(fid, []).append("/" + name)
    f.visititems(visit)
    return missing


def say_missing(path, missing):
    for fid, dsets in sorted(missing.items()):
        more = f" and {len(dsets) - 1} more" if len(dsets) > 1 else ""
        print(f"h5info: '{path}': {dsets[0]}{more} need HDF5 filter {fid} "
              f"({FILTER_NAMES.get(fid, 'a filter plugin')}), which this "
              "h5py cannot load", file=sys.stderr)
    print("h5info: install hdf5plugin for this Python (pip install "
          "hdf5plugin), or set HDF5_PLUGIN_PATH to the folder of "
          "melpipe's libh5zstd.so (bin/plugins in the source tree, "
          "PREFIX/lib/melpipe/hdf5-plugins once installed)",
          file=sys.stderr)


def count(n, what):
    """'1 clip', '2 clips'."""
    return f"{n} {what}" + ("" if n == 1 else "s")


def text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    return str(v)


def source_summary(clips):
    """The clips' own rates and channels (/clips/source_rate and
    source_channels, the input files' before wavcat resampled them, 0:
    unknown): "16000 Hz x 900, 44100 Hz x 12 (stereo 12)", rates in
    increasing order, unknown last, channels other than mono in
    brackets; "not recorded" for a file written before h5pack stored
    them."""
    if "source_rate" not in clips or "source_channels" not in clips:
        return "not recorded (the file predates them)"
    rates = clips["source_rate"][()]
    channels = clips["source_channels"][()]
    if rates.shape[0] == 0:
        return "none (no clips)"
    counts = [(r, int((rates == r).sum())) for r in np.unique(rates)]
    said = [f"{r} Hz x {n}" for r, n in counts if r > 0]
    said += [f"unknown x {n}" for r, n in counts if r <= 0]
    ch = []
    for c in np.unique(channels):
        n = int(((channels == c) & (rates > 0)).sum())
        if c == 1 or n == 0:
            continue
        name = ("stereo" if c == 2 else "channels unknown" if c <= 0
                else f"{c} channels")
        ch.append((c <= 0, int(c), f"{name} {n}"))  # unknown last
    more = " (" + ", ".join(w for *_, w in sorted(ch)) + ")" if ch else ""
    return ", ".join(said) + more


def feature_summary(attrs):
    """What the rows hold, from the root attributes (formats/hdf5.md):
    "mel, 128 rows a frame", "mfcc of fbank bands, 13 rows a frame",
    "none: audio samples"."""
    if text(attrs.get("kind", "")) == "audio":
        return "none: audio samples"
    if "feature" not in attrs:
        return "not recorded (the file predates the attribute)"
    what = text(attrs["feature"])
    if what == "mfcc" and "mfcc_bands" in attrs:
        what += f" of {text(attrs['mfcc_bands'])} bands"
    if "n_features" in attrs:
        what += f", {count(int(attrs['n_features']), 'row')} a frame"
    return what


def shard_summary(attrs):
    """Which shard of which job a shard file is (its `shard` K/N, `job`
    and `clips` attributes: its clips are the job's K, K + N, ...); None
    for a whole dataset."""
    if "shard" not in attrs:
        return None
    said = text(attrs["shard"])
    try:
        k, n = (int(x) for x in said.split("/"))
        of = f" of {int(attrs['clips'])}" if "clips" in attrs else ""
        said += f" (the job's clips {k}, {k + n}, {k + 2 * n}, ...{of})"
    except ValueError:
        pass
    if "job" in attrs:
        said += f", job {text(attrs['job'])}"
    return said


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        # the name it was called by, as its usage line says it
        print(__doc__.strip().replace("PROG", os.path.basename(argv[0]),
                                      1))
        return 0 if len(argv) == 2 else 2
    if not load_modules():
        return 1
    try:
        f = h5py.File(argv[1], "r")
    except OSError as e:
        if not os.path.exists(argv[1]):
            why = "No such file or directory"
        elif os.path.isfile(argv[1]) and not h5py.is_hdf5(argv[1]):
            why = "not an HDF5 file"
        else:
            why = str(e)
        print(f"h5info.py: unable to open '{argv[1]}': {why}",
              file=sys.stderr)
        return 1
    with f:
        if "melpipe_hdf5_version" not in f.attrs:
            print(f"h5info.py: '{argv[1]}' is an HDF5 file but not a "
                  "melpipe dataset (no melpipe_hdf5_version attribute)",
                  file=sys.stderr)
            return 1
        missing = missing_filters(f)
        if missing:
            say_missing(argv[1], missing)
            return 1
        labels = [text(x) for x in f["labels"][()]] if "labels" in f else []
        print(f"{argv[1]}:")
        print(f"  feature: {feature_summary(f.attrs)}")
        shard = shard_summary(f.attrs)
        if shard is not None:
            print(f"  shard: {shard}")
        print(f"  labels ({len(labels)}): {', '.join(labels)}")
        for name in ("training", "validation", "testing", "all"):
            if name not in f:
                continue
            g = f[name]
            feats = g["features"]
            lab = g["label"][()]
            counts = np.bincount(lab[lab >= 0], minlength=len(labels))
            per = ", ".join(f"{labels[i]} {c}" for i, c in enumerate(counts))
            # the ragged layout: rows of any length, frames [F, width]
            rag = ""
            if "start" in g:
                nf = g["n_frames"][()]
                rag = (f" ragged: {count(nf.shape[0], 'row')}, "
                       + count(feats.shape[0], 'sample' if feats.ndim == 1
                               else 'frame') + " in all" + (f" ({nf.min()} to {nf.max()} per row)"
                                 if nf.shape[0] else ""))
            print(f"  {name}: features {feats.shape} {feats.dtype}{rag}, "
                  f"{count(len(np.unique(g['clip'][()])), 'clip')}; {per}")
            if feats.shape[0]:
                x = feats[: min(feats.shape[0], 1000)].astype(np.float32)
                print(f"    values of the first rows: min {x.min():.2f} "
                      f"max {x.max():.2f} mean {x.mean():.2f}")
        if "clips" in f:
            print(f"  clips: {f['clips']['path'].shape[0]}")
            print(f"  source rates: {source_summary(f['clips'])}")
        if "skipped" in f:
            sk = f["skipped"]
            n = sk["path"].shape[0]
            print(f"  skipped: {n}")
            for p, r in zip(sk["path"][()], sk["reason"][()]):
                print(f"    {text(p)}: {text(r)}")
        prov = f.attrs.get("provenance")
        if prov is not None:
            print("  provenance:")
            for line in np.atleast_1d(prov):
                print(f"    {text(line)}")
    return 0


if __name__ == "__main__":
    # a reader that goes away (h5info.py x.h5 | head) ends us quietly,
    # as it does any Unix tool, instead of a BrokenPipeError traceback
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv))
