"""ChunkSampler: every row once an epoch, disjoint equal shares for
ranks, each chunk read by one DataLoader worker, reproducible orders."""
import itertools

import numpy as np
import pytest

import melpipe


class Rows:
    """A stand-in dataset: n rows, chunk of each, lengths."""

    def __init__(self, chunk_of, lengths=None):
        self.chunk_of = np.asarray(chunk_of, np.int64)
        self.lengths = (np.ones(len(chunk_of), np.int64) if lengths is None
                        else np.asarray(lengths))
        self.cache = 0

    def row_chunks(self):
        return self.chunk_of

    def reserve_cache(self, n):
        self.cache = max(self.cache, n)


def fixed(n, per_chunk):
    return Rows(np.arange(n) // per_chunk)


def flat(batches):
    return [i for b in batches for i in b]


@pytest.mark.parametrize("n,per_chunk,bs,workers,world,drop", [
    (1000, 37, 16, 0, 1, False), (1000, 37, 16, 3, 1, False),
    (1000, 37, 16, 4, 2, False), (997, 10, 7, 5, 3, True),
    (50, 64, 8, 4, 4, False), (64, 8, 8, 2, 1, True), (5, 2, 3, 8, 1, False),
])
def test_rows_once_disjoint_equal_counts(n, per_chunk, bs, workers, world,
                                         drop):
    ds = fixed(n, per_chunk)
    seen, counts = [], []
    for rank in range(world):
        s = melpipe.ChunkSampler(ds, seed=3, batch_size=bs, window=2,
                                 num_workers=workers, rank=rank,
                                 world_size=world, drop_last=drop)
        s.set_epoch(5)
        batches = list(s)
        assert len(batches) == len(s)
        counts.append(len(batches))
        assert all(len(b) == bs for b in batches[:-1])
        if drop:
            assert all(len(b) == bs for b in batches)
        seen += flat(batches)
    assert len(set(counts)) == 1                      # equal batch counts
    assert len(seen) == len(set(seen))                # disjoint, no repeat
    share = n // world
    if not drop:
        assert len(seen) == share * world             # all but n mod world
    else:
        assert len(seen) == (share // bs) * bs * world


def test_row_form_covers_every_row_each_epoch():
    ds = fixed(500, 33)
    s = melpipe.ChunkSampler(ds, seed=1)
    a, b = list(s), list(s)                           # epochs 0 and 1
    assert sorted(a) == sorted(b) == list(range(500))
    assert a != b
    s.set_epoch(0)
    assert list(s) == a and list(s) == a              # set_epoch pins it
    assert list(melpipe.ChunkSampler(ds, seed=1, shuffle=False)) == \
        list(range(500))


def test_each_chunk_read_by_one_worker():
    per_chunk, workers = 20, 4
    ds = fixed(4000, per_chunk)
    s = melpipe.ChunkSampler(ds, seed=2, batch_size=32, window=3,
                             num_workers=workers)
    chunks = [set() for _ in range(workers)]
    # DataLoader hands batch k to worker k % num_workers
    for k, batch in enumerate(s):
        chunks[k % workers] |= {i // per_chunk for i in batch}
    shared = sum(len(a & b) for a, b in itertools.combinations(chunks, 2))
    assert shared <= workers - 1
    assert set().union(*chunks) == set(range(4000 // per_chunk))


def test_window_bounds_the_chunks_in_flight():
    per_chunk, window = 10, 3
    ds = fixed(3000, per_chunk)
    rows = list(melpipe.ChunkSampler(ds, seed=4, window=window))
    span = window * per_chunk
    for a in range(0, len(rows), span):
        assert len({i // per_chunk for i in rows[a:a + span]}) <= window
    assert ds.cache >= 2 * window


def test_seeds_differ_and_repeat():
    ds = fixed(300, 7)
    a = list(melpipe.ChunkSampler(ds, seed=1, batch_size=8))
    b = list(melpipe.ChunkSampler(ds, seed=1, batch_size=8))
    c = list(melpipe.ChunkSampler(ds, seed=2, batch_size=8))
    assert a == b and a != c


def test_bucketing_groups_similar_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 1000, 2000)
    ds = Rows(np.arange(2000) // 50, lengths)
    s = melpipe.ChunkSampler(ds, seed=0, batch_size=16, window=8,
                             bucket=True)
    batches = list(s)
    assert sorted(flat(batches)) == list(range(2000))
    spread = np.mean([np.ptp(lengths[b]) for b in batches])
    plain = np.mean([np.ptp(lengths[b]) for b in
                     melpipe.ChunkSampler(ds, seed=0, batch_size=16,
                                          window=8)])
    assert spread < plain / 4


def test_on_a_ragged_dataset(datasets):
    ds = melpipe.MelDataset(datasets["feat-ragged", "gzip"])
    s = melpipe.ChunkSampler(ds, batch_size=4, num_workers=2, bucket=True)
    assert sorted(flat(s)) == list(range(len(ds)))
    x, y, n = melpipe.pad_batch([ds[i] for i in next(iter(s))])
    assert x.shape[:2] == (len(n), 16) and x.shape[2] == n.max()
    assert ds.cache_chunks >= 2 * s.window


@pytest.mark.parametrize("name", ["feat-fixed", "audio-fixed"])
def test_batches_read_each_chunk_once(datasets, name):
    """A ChunkSampler epoch of batches through __getitems__ reads every
    chunk of a fixed-layout split exactly once, whole, in one HDF5 read
    each, and gives the rows h5py reads."""
    import h5py
    ds = melpipe.MelDataset(datasets[name, "none"])
    s = melpipe.ChunkSampler(ds, seed=3, batch_size=5, window=2)
    reads = []
    read = ds._read
    ds._read = lambda lo, hi: reads.append((lo, hi)) or read(lo, hi)
    got = {}
    for batch in s:
        for i, (x, y) in zip(batch, ds.__getitems__(batch)):
            got[i] = x
    per = ds.chunk_shape[0]
    n_chunks = -(-len(ds) // per)
    assert sorted(lo for lo, _ in reads) == [c * per
                                             for c in range(n_chunks)]
    assert all(hi - lo == min(per, len(ds) - lo) for lo, hi in reads)
    with h5py.File(datasets[name, "none"], "r") as f:
        rows = f["training"]["features"][()]
    assert sorted(got) == list(range(len(ds)))
    assert all(np.array_equal(got[i], rows[i]) for i in got)
