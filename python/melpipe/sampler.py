"""ChunkSampler: an epoch's rows in an order that reads each chunk of the
file once, shuffled enough to train on.

A compressed chunk (about 1 MiB of rows) is decompressed whole whenever
one of its rows is read and it is not in the chunk cache. The sampler
shuffles the chunks, then the rows within a window of `window` chunks,
and the dataset's chunk cache is sized to hold a window (twice over,
for batches that straddle two windows), so each chunk is decompressed
once per epoch.

DataLoader hands batch k of an epoch to worker k % num_workers. Given
num_workers, the batch form (batch_size=, used as batch_sampler=) lays
the batches out so that each worker's batches come from its own stretch
of the chunk order: each chunk is read by one worker, but for the chunks
where one worker's stretch ends and the next one's begins (at most
num_workers - 1 an epoch). The row form (no batch_size) suits a loop
without workers.

Distributed training: rank r of world_size takes the r-th of world_size
equal shares of the epoch's row order, so ranks get disjoint rows and the
same number of batches; the N mod world_size rows at the end of the
order are dropped (other rows each epoch), never padded with repeats.
"""
import numpy as np

from .dataset import torch_installed


class ChunkSampler:
    """Iterating gives row indices, or with batch_size lists of them
    (batches; the last one shorter unless drop_last).

    seed, set_epoch(e): the order of epoch e is a function of (seed, e)
    alone; without set_epoch, each iteration moves to the next epoch.
    window: chunks whose rows are shuffled together. shuffle=False keeps
    the file's order (rows still dealt to ranks and workers). bucket:
    sort each window's rows by length before batching and shuffle the
    batches instead (less padding for ragged rows). Where torch is
    installed it is a torch.utils.data.Sampler."""

    def __new__(cls, *args, **kwargs):
        if cls is ChunkSampler and torch_installed():
            from .torch import ChunkSampler as TorchChunkSampler
            cls = TorchChunkSampler
        return object.__new__(cls)

    def __init__(self, dataset, seed=0, batch_size=None, window=8,
                 shuffle=True, drop_last=False, num_workers=0, rank=0,
                 world_size=1, bucket=False):
        if not 0 <= rank < world_size:
            raise ValueError("rank %d outside 0..%d" % (rank, world_size - 1))
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.seed, self.window, self.shuffle = seed, max(1, window), shuffle
        self.batch_size, self.drop_last = batch_size, drop_last
        self.num_workers = max(0, num_workers)
        self.rank, self.world_size = rank, world_size
        self.bucket = bucket
        self.epoch, self._auto = 0, True
        self._chunk_of = np.asarray(dataset.row_chunks(), np.int64)
        self._lengths = np.asarray(dataset.lengths) if bucket else None
        if hasattr(dataset, "reserve_cache"):
            dataset.reserve_cache(2 * self.window + 1)

    def set_epoch(self, epoch):
        """The epoch whose order the next iteration gives."""
        self.epoch, self._auto = epoch, False

    @property
    def share(self):
        """Rows of this rank in an epoch."""
        return len(self._chunk_of) // self.world_size

    def __len__(self):
        if self.batch_size is None:
            return self.share
        if self.drop_last:
            return self.share // self.batch_size
        return -(-self.share // self.batch_size)

    def __iter__(self):
        epoch = self.epoch
        if self._auto:
            self.epoch += 1
        rng = np.random.default_rng([self.seed, epoch])
        rows, chunks = self._order(rng)
        lo = self.rank * self.share
        rows, chunks = rows[lo:lo + self.share], chunks[lo:lo + self.share]
        if self.batch_size is None:
            yield from (int(i) for i in self._shuffled(rows, chunks, rng))
            return
        yield from self._batches(rows, chunks, rng)

    def _order(self, rng):
        """Every row, chunk by chunk in the epoch's chunk order, and the
        chunk of each."""
        n_chunks = int(self._chunk_of[-1]) + 1 if len(self._chunk_of) else 0
        order = rng.permutation(n_chunks) if self.shuffle else \
            np.arange(n_chunks)
        first = np.searchsorted(self._chunk_of, np.arange(n_chunks + 1))
        counts = np.diff(first)[order]
        starts = first[:-1][order]
        # rows of chunk order[k]: starts[k] .. starts[k] + counts[k]
        pos = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts,
                                                  counts)
        rows = np.repeat(starts, counts) + pos
        return rows, np.repeat(order, counts)

    def _shuffled(self, rows, chunks, rng):
        """rows shuffled within windows of self.window chunks (as they
        come: a window is that many changes of chunk)."""
        if not self.shuffle or len(rows) == 0:
            return rows
        new = np.flatnonzero(np.diff(chunks)) + 1
        bounds = np.concatenate(([0], new[self.window - 1::self.window],
                                 [len(rows)]))
        out = rows.copy()
        for a, b in zip(bounds[:-1], bounds[1:]):
            part = out[a:b]
            rng.shuffle(part)
            if self.bucket:
                part[:] = part[np.argsort(self._lengths[part],
                                          kind="stable")]
        return out

    def _batches(self, rows, chunks, rng):
        bs = self.batch_size
        n_batches = len(self)
        used = n_batches * bs if self.drop_last else len(rows)
        workers = max(1, self.num_workers)
        # worker j gets batches j, j + workers, ...: a stretch of rows
        per = [len(range(j, n_batches, workers)) for j in range(workers)]
        sizes = [p * bs for p in per]
        if not self.drop_last and n_batches and used % bs:
            sizes[(n_batches - 1) % workers] -= bs - used % bs
        streams, lo = [], 0
        for j in range(workers):
            part = self._shuffled(rows[lo:lo + sizes[j]],
                                  chunks[lo:lo + sizes[j]], rng)
            lo += sizes[j]
            batches = [part[k:k + bs].tolist()
                       for k in range(0, len(part), bs)]
            if self.bucket and self.shuffle:
                batches = self._mix(batches, rng)
            streams.append(batches)
        for k in range(n_batches):
            yield streams[k % workers][k // workers]

    def _mix(self, batches, rng):
        """Batches shuffled within blocks of a window's worth of rows."""
        rows = max(1, self.window * int(np.bincount(self._chunk_of).max()))
        block = max(1, rows // self.batch_size)
        out = []
        for a in range(0, len(batches), block):
            part = batches[a:a + block]
            out += [part[i] for i in rng.permutation(len(part))]
        return out
