"""Per-bin mean and standard deviation of a split: from the statistics
h5pack stores (formats/hdf5.md, Statistics) where the file has them,
else in one streaming pass.

In the pass, each block of values (a few chunks of the file) gives its count, mean and
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


def stored_stats(dataset, group):
    """Stats of dataset (a MelDataset) from its split group's stats_count,
    stats_sum and stats_sumsq (group: the open h5py group), or None when
    the file has none, or none that fit the rows (then the pass gives
    them). mean = sum / count; the variance is (sumsq - sum * mean) /
    count, the sum of squared deviations taken out of the sums, which
    loses only the digits of mean^2 / variance (a few for log-mel values
    around -60 dB) in float64, never below 0."""
    names = ("stats_count", "stats_sum", "stats_sumsq")
    if not all(n in group for n in names):
        return None
    count, s, q = (group[n][()] for n in names)
    if count.shape != (dataset._bins,) or s.shape != count.shape or \
            q.shape != count.shape:
        return None
    n = int(count[0]) if count.size else 0
    if n == 0:
        raise ValueError("'%s': split '%s' holds no values"
                         % (dataset.path, dataset.split))
    s, q = s.astype(np.float64), q.astype(np.float64)
    mean = s / n
    var = np.maximum((q - s * mean) / n, 0.0)
    return Stats(mean.astype(np.float32), np.sqrt(var).astype(np.float32),
                 n)
