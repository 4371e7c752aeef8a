"""Batches of rows of different lengths (the ragged layout), padded."""
import numpy as np


def pad_batch(items, axis=-1, pad_value=0):
    """(features, labels, lengths) of a list of (features, label) items:
    features stacked into [B, ...] with each item's axis `axis` padded at
    its end with pad_value to the longest; labels int64 [B]; lengths
    int64 [B], each item's length along axis before padding. axis is -1
    for features rows ([n_mels, n_frames]), 0 for audio rows ([n_samples]
    or [n_samples, channels]): MelDataset.length_axis."""
    xs = [np.asarray(x) for x, _ in items]
    labels = np.array([y for _, y in items], np.int64)
    if not xs:
        return np.zeros((0,)), labels, np.zeros(0, np.int64)
    axis = axis % xs[0].ndim
    lengths = np.array([x.shape[axis] for x in xs], np.int64)
    shape = list(xs[0].shape)
    shape[axis] = int(lengths.max())
    out = np.full([len(xs)] + shape, pad_value, xs[0].dtype)
    for b, x in enumerate(xs):
        index = [b] + [slice(None)] * x.ndim
        index[1 + axis] = slice(0, x.shape[axis])
        out[tuple(index)] = x
    return out, labels, lengths
