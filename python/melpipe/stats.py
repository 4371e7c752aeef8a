"""Per-bin mean and standard deviation of a split in one streaming pass.

Each block of values (a few chunks of the file) gives its count, mean and
sum of squared deviations in float64; blocks are merged with Chan et
al.'s pairwise update, which does not lose precision where the mean is
large beside the spread (log-mel values around -60 dB)."""
import collections

import numpy as np

Stats = collections.namedtuple("Stats", "mean std count")


def merge(a, b):
    """(n, mean, m2) of two blocks taken together."""
    na, ma, sa = a
    nb, mb, sb = b
    if na == 0:
        return b
    n = na + nb
    d = mb - ma
    return n, ma + d * (nb / n), sa + sb + d * d * (na * nb / n)


def block(x):
    """(n, mean, m2) of x [values, bins]."""
    n = x.shape[0]
    if n == 0:
        return 0, np.zeros(x.shape[1]), np.zeros(x.shape[1])
    m = x.mean(axis=0)
    return n, m, ((x - m) ** 2).sum(axis=0)


def streaming_stats(dataset, chunks_per_read=8):
    """Stats of dataset (a MelDataset) over every value of its split."""
    rows = max(1, dataset.chunk_shape[0] * chunks_per_read)
    acc = None
    for x in dataset._stats_slabs(rows):
        b = block(x)
        acc = b if acc is None else merge(acc, b)
    if acc is None or acc[0] == 0:
        raise ValueError("'%s': split '%s' holds no values"
                         % (dataset.path, dataset.split))
    n, mean, m2 = acc
    return Stats(mean.astype(np.float32), np.sqrt(m2 / n).astype(np.float32),
                 int(n))
