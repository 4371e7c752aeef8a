"""MelDataset: the rows of one split of a melpipe HDF5 dataset
(formats/hdf5.md) as (features, label) items, for training loops and
PyTorch's DataLoader."""
import collections
import importlib.util
import os

import numpy as np

from . import _h5
from .stats import Stats, stored_stats, streaming_stats

Meta = collections.namedtuple("Meta", "path clip segment offset label")
ClipInfo = collections.namedtuple(
    "ClipInfo", "path label split n_samples sample_rate source_rate "
    "source_channels")
SPLIT_NAMES = ("none", "training", "validation", "testing")

_torch = None


def torch_installed():
    global _torch
    if _torch is None:
        _torch = importlib.util.find_spec("torch") is not None
    return _torch


class MelDataset:
    """A map-style dataset of the rows of one split (group) of a melpipe
    HDF5 file. Item i is (features, label): features a numpy array, label
    the row's label id (an int, -1 for none).

    features: [n_mels, n_frames] for features rows, ragged rows
    transposed back from frame-major storage; for audio rows the samples
    as stored, [n_samples] (mono) or [n_samples, channels]. In the
    file's element type (float32, float16 or int16; bf16 is read as
    float32) unless dtype is given; then transform(features), if given.

    Where torch is installed it is a torch.utils.data.Dataset (the class
    melpipe.torch.MelDataset, made when the dataset is). It is
    picklable, and opens its file lazily, once in each process that reads
    from it (DataLoader workers included), never sharing an HDF5 handle
    across a fork.

    split: the group to read, "training", "validation", "testing" or
    "all" (a dataset written without splits); by default "training",
    or "all" where the file has no splits.

    cache_chunks: the chunk cache of that handle, in chunks of features
    (at least 1 MiB); a ChunkSampler raises it to what its window needs.
    A batch (__getitems__, which DataLoader calls) of fixed-layout rows
    is read a whole chunk at a time, each chunk kept, as a numpy array,
    among the last cache_chunks this process read: a ChunkSampler's
    batches then read each chunk of an epoch once, in one HDF5 call,
    instead of one call per row.
    """

    def __new__(cls, *args, **kwargs):
        if cls is MelDataset and torch_installed():
            from .torch import MelDataset as TorchMelDataset
            cls = TorchMelDataset
        return object.__new__(cls)

    def __init__(self, path, split=None, dtype=None, transform=None,
                 cache_chunks=4):
        self.path = os.fspath(path)
        self.split = split
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.transform = transform
        self.cache_chunks = cache_chunks
        self._stats = None
        self._reset()
        with _h5.open_file(self.path) as f:
            self._describe(f)

    def _reset(self):
        self._f = self._ds = self._pid = None
        self._chunks = collections.OrderedDict()
        self._open_cache = None
        self._cols = None
        self._paths = None

    def _describe(self, f):
        self.version = _h5.check_version(f, self.path)
        self.attrs = _h5.root_attrs(f)
        self.layout = self.attrs.get("layout", "fixed")
        if self.layout not in ("fixed", "ragged"):
            raise _h5.FormatError("'%s': unknown layout '%s'"
                                  % (self.path, self.layout))
        self.kind = self.attrs.get("kind", "features")
        groups = [g for g in ("training", "validation", "testing", "all")
                  if g in f]
        if self.split is None:
            self.split = "all" if groups == ["all"] else "training"
        if self.split not in groups:
            raise KeyError("'%s' has no split '%s' (it has %s)"
                           % (self.path, self.split, ", ".join(groups)))
        g = f[self.split]
        ds = g["features"]
        _h5.check_filters(ds, self.path)
        self.labels = [_h5.text(x) for x in f["labels"][()]]
        self.stored_dtype = ds.dtype
        self.chunk_shape = ds.chunks or ds.shape
        self.chunk_bytes = int(np.prod(self.chunk_shape)) * ds.dtype.itemsize
        self._row_shape = ds.shape[1:]
        self._n = int(g["label"].shape[0])
        # n_mels: [N, n_mels, n_frames] fixed, [F, n_mels] ragged
        self.n_mels = int(ds.shape[1]) if self.kind == "features" else None
        channels = len(self._row_shape) == (2 if self.layout == "fixed"
                                            else 1)
        self._bins = self.n_mels or (self._row_shape[-1] if channels else 1)
        self._cols = self._load_columns(f)

    def _load_columns(self, f):
        g = f[self.split]
        cols = {"label": g["label"][()]}
        if self.layout == "ragged":
            cols["start"] = g["start"][()]
            cols["n_frames"] = g["n_frames"][()]
        return cols

    # -- pickling: no HDF5 handle and no per-row columns travel

    def __getstate__(self):
        state = self.__dict__.copy()
        for k in ("_f", "_ds", "_pid", "_open_cache", "_cols", "_paths"):
            state[k] = None
        state["_chunks"] = collections.OrderedDict()
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    # -- the handle of this process

    def _features(self):
        want = max(1 << 20, self.cache_chunks * self.chunk_bytes)
        if self._pid != os.getpid() or self._open_cache != want:
            # a handle inherited across fork is dropped, never used
            self._f = self._ds = None
            self._chunks = collections.OrderedDict()
            self._f = _h5.open_file(self.path, want)
            self._ds = self._f[self.split]["features"]
            self._pid, self._open_cache = os.getpid(), want
        return self._ds

    def _columns(self):
        if self._cols is None:
            self._features()
            self._cols = self._load_columns(self._f)
        return self._cols

    def reserve_cache(self, chunks):
        """Makes the chunk cache hold at least chunks chunks (from the
        next read of a process that opens the file)."""
        self.cache_chunks = max(self.cache_chunks, int(chunks))

    def close(self):
        """Closes this process's handle (the next read opens it again)."""
        if self._f is not None and self._pid == os.getpid():
            self._f.close()
        self._f = self._ds = self._pid = None

    def _read(self, lo, hi):
        """Rows (or frames, ragged) lo..hi of features, as stored."""
        ds = self._features()
        shape = (hi - lo,) + self._row_shape
        out = np.empty(shape, self.stored_dtype)
        if hi > lo:
            import h5py
            fs = ds.id.get_space()
            fs.select_hyperslab((lo,) + (0,) * len(self._row_shape), shape)
            ds.id.read(h5py.h5s.create_simple(shape), fs, out)
        return out

    # -- items

    def __len__(self):
        return self._n

    def _row_index(self, i):
        """i as a row number from 0, or IndexError."""
        if not -self._n <= i < self._n:
            raise IndexError("row %d is not in the %s split of %r, which "
                             "has rows 0 to %d (or -%d to -1)"
                             % (i, self.split, self.path, self._n - 1,
                                self._n) if self._n else
                             "row %d: the %s split of %r has no rows"
                             % (i, self.split, self.path))
        return i % self._n

    def features(self, i, limit=None):
        """Row i's features (or samples), before transform; with limit,
        only its first limit frames (samples), which for a ragged row is
        all that is read (a picture of a two-hour clip)."""
        i = self._row_index(i)
        if self.layout == "fixed":
            x = self._read(i, i + 1)[0]
            if limit is not None:
                x = x[..., :limit] if self.kind == "features" else x[:limit]
        else:
            c = self._columns()
            start, n = int(c["start"][i]), int(c["n_frames"][i])
            if limit is not None:
                n = min(n, max(0, int(limit)))
            x = self._read(start, start + n)
            if self.kind == "features":
                x = np.ascontiguousarray(x.T)
        if self.dtype is not None and x.dtype != self.dtype:
            x = x.astype(self.dtype)
        return x

    def __getitem__(self, i):
        x = self.features(int(i))
        if self.transform is not None:
            x = self.transform(x)
        return x, int(self._columns()["label"][i])

    def _chunk(self, c):
        """The rows of chunk c (fixed layout), read whole and kept among
        the last cache_chunks chunks read in this process."""
        self._features()    # first: a new process drops the chunks
        rows = self._chunks.get(c)
        if rows is not None:
            self._chunks.move_to_end(c)
            return rows
        per = self.chunk_shape[0]
        rows = self._read(c * per, min(self._n, (c + 1) * per))
        self._chunks[c] = rows
        while len(self._chunks) > max(1, self.cache_chunks):
            self._chunks.popitem(last=False)
        return rows

    def __getitems__(self, indices):
        """A batch of items (DataLoader reads a batch in one call). Rows
        of the fixed layout come from whole chunks (see the class)."""
        if self.layout != "fixed":
            return [self[i] for i in indices]
        labels = self._columns()["label"]
        per = self.chunk_shape[0]
        out = []
        for i in indices:
            i = self._row_index(int(i))
            x = self._chunk(i // per)[i % per]
            # a copy (astype copies): the item is the caller's, the chunk
            # stays intact
            x = x.astype(x.dtype if self.dtype is None else self.dtype)
            if self.transform is not None:
                x = self.transform(x)
            out.append((x, int(labels[i])))
        return out

    # -- what the rows are

    @property
    def num_classes(self):
        return len(self.labels)

    @property
    def label_ids(self):
        """Every row's label id, int32 [N] (-1: none)."""
        return self._columns()["label"]

    @property
    def length_axis(self):
        """The axis of an item along which rows differ in length: -1
        (frames) for features, 0 (samples) for audio."""
        return -1 if self.kind == "features" else 0

    @property
    def lengths(self):
        """Frames (samples, for audio) of every row, int64 [N]: the same
        for every row in the fixed layout, each clip's own in ragged."""
        if self.layout == "ragged":
            return self._columns()["n_frames"].astype(np.int64)
        n = self._row_shape[1] if self.kind == "features" else \
            self._row_shape[0]
        return np.full(self._n, n, np.int64)

    def meta(self, i):
        """Meta(path, clip, segment, offset, label) of row i: the input
        file (relative to its folder; undecodable bytes kept as
        surrogates), its clip index (what clip_info takes: the row of
        /clips in a whole file; the whole job's index in a shard file,
        as its clip columns hold it), the segment index and first sample
        in the clip."""
        i = self._row_index(i)
        self._features()
        g = self._f[self.split]
        clip = int(g["clip"][i])
        if self._paths is None:
            self._paths = self._f["clips/path"][()]
        row = _h5.clip_row(self.attrs, clip, len(self._paths), self.path)
        return Meta(_h5.text(self._paths[row]), clip, int(g["segment"][i]),
                    int(g["offset"][i]), int(self._columns()["label"][i]))

    def clip_info(self, clip):
        """ClipInfo(path, label, split, n_samples, sample_rate,
        source_rate, source_channels) of clip index clip (a row's clip:
        meta(i).clip; in a shard file K/N, row (clip - K) / N of
        /clips): the input file, its label id, split name, samples and
        rate as stored (after wavcat's resampling), and the file's own
        rate and channels before it, 0 where unknown (a skipped input
        that could not be opened, or a file written before h5pack stored
        them). IndexError, naming the clips the file holds, for a clip
        it does not hold."""
        self._features()
        c = self._f["clips"]
        row = _h5.clip_row(self.attrs, int(clip), c["path"].shape[0],
                           self.path)

        def own(name):
            return int(c[name][row]) if name in c else 0
        return ClipInfo(_h5.text(c["path"][row]), int(c["label"][row]),
                        SPLIT_NAMES[int(c["split"][row])],
                        int(c["n_samples"][row]),
                        int(c["sample_rate"][row]), own("source_rate"),
                        own("source_channels"))

    # -- chunks, for ChunkSampler

    def row_chunks(self):
        """The chunk of features each row starts in, int64 [N]: rows in
        order, so a chunk's rows are consecutive."""
        if self.layout == "fixed":
            return np.arange(self._n, dtype=np.int64) // self.chunk_shape[0]
        return self._columns()["start"].astype(np.int64) // \
            self.chunk_shape[0]

    def stats(self):
        """Stats(mean, std, count): the split's mean and (population)
        standard deviation per mel bin (per channel for audio), float32
        [n_mels], and the values each is over. From the statistics h5pack
        stores in the split's group (stats_count, stats_sum, stats_sumsq:
        formats/hdf5.md), without reading the features; for a file
        without them, the first call computes them in one streaming
        pass over the split's features, chunk by chunk, in float64
        (melpipe.stats). The result is kept (and pickled with the
        dataset). Non-finite values make their bin's result NaN (or
        inf from the stored sums)."""
        if self._stats is None:
            with _h5.open_file(self.path) as f:
                self._stats = stored_stats(self, f[self.split])
            if self._stats is None:
                self._stats = streaming_stats(self)
        return self._stats

    def _stats_slabs(self, rows_per_read):
        """The split's values as [values, bins] float64 blocks."""
        total = self._n if self.layout == "fixed" else \
            int(self._features().shape[0])
        for lo in range(0, total, rows_per_read):
            x = self._read(lo, min(total, lo + rows_per_read))
            x = x.astype(np.float64)
            if self.kind == "features" and self.layout == "fixed":
                x = x.transpose(0, 2, 1)
            yield x.reshape(-1, self._bins)

    def __repr__(self):
        return ("MelDataset('%s', split=%r: %d rows, %s %s, %s)"
                % (self.path, self.split, self._n, self.layout, self.kind,
                   self.stored_dtype))


__all__ = ["MelDataset", "Meta", "Stats"]
