"""melpipe.torch - MelDataset and ChunkSampler as torch classes, the
padding collate of ragged rows, and a DataLoader tuned for the datasets.

    import melpipe, melpipe.torch
    ds = melpipe.MelDataset("out.h5")
    loader = melpipe.torch.loader(ds, batch_size=64, num_workers=4)
    for epoch in range(10):
        loader.batch_sampler.set_epoch(epoch)
        for x, y in loader:                 # ragged: x, y, lengths
            ...

Importing this module imports torch.
"""
import torch
import torch.utils.data as tud

from . import dataset as _dataset
from . import sampler as _sampler
from .collate import pad_batch


class MelDataset(_dataset.MelDataset, tud.Dataset):
    """melpipe.MelDataset, a torch.utils.data.Dataset (melpipe.MelDataset
    gives one of these where torch is installed)."""


class ChunkSampler(_sampler.ChunkSampler, tud.Sampler):
    """melpipe.ChunkSampler, a torch.utils.data.Sampler."""


class PadCollate:
    """collate_fn for ragged rows: (features, labels, lengths) tensors,
    features padded with pad_value at the end of axis (MelDataset's
    length_axis). A class, so that it pickles for spawned workers."""

    def __init__(self, axis=-1, pad_value=0):
        self.axis, self.pad_value = axis, pad_value

    def __call__(self, items):
        items = [(x.numpy() if torch.is_tensor(x) else x, y)
                 for x, y in items]
        x, y, n = pad_batch(items, self.axis, self.pad_value)
        return torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(n)


def pad_collate(items):
    """PadCollate() for features rows: [B, n_mels, max_frames]."""
    return PadCollate()(items)


def _distributed():
    if tud.get_worker_info() is None and torch.distributed.is_available() \
            and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def loader(dataset, batch_size, shuffle=True, seed=0, num_workers=4,
           window=8, drop_last=False, rank=None, world_size=None,
           bucket=None, pin_memory=None, prefetch_factor=4,
           persistent_workers=None, collate_fn=None, **kwargs):
    """A DataLoader over dataset (a MelDataset) whose batches come from a
    ChunkSampler laid out for num_workers workers, so that each worker
    decompresses its own chunks once per epoch. rank and world_size
    default to torch.distributed's when it is initialised. Ragged
    datasets get PadCollate (batches of (features, labels, lengths)) and
    length bucketing unless bucket=False. pin_memory defaults to whether
    CUDA is available; workers persist between epochs. Call
    loader.batch_sampler.set_epoch(e) each epoch for reproducible orders
    (without it, each pass over the loader moves to the next epoch).
    Other keyword arguments go to DataLoader."""
    if rank is None or world_size is None:
        rank, world_size = _distributed()
    ragged = getattr(dataset, "layout", "fixed") == "ragged"
    if bucket is None:
        bucket = ragged
    if collate_fn is None and ragged:
        collate_fn = PadCollate(getattr(dataset, "length_axis", -1))
    sampler = ChunkSampler(dataset, seed=seed, batch_size=batch_size,
                           window=window, shuffle=shuffle,
                           drop_last=drop_last, num_workers=num_workers,
                           rank=rank, world_size=world_size, bucket=bucket)
    if pin_memory is None:
        pin_memory = torch.cuda.is_available()
    if num_workers > 0:
        kwargs.setdefault("prefetch_factor", prefetch_factor)
        kwargs.setdefault("persistent_workers",
                          True if persistent_workers is None
                          else persistent_workers)
    return tud.DataLoader(dataset, batch_sampler=sampler,
                          num_workers=num_workers, pin_memory=pin_memory,
                          collate_fn=collate_fn, **kwargs)


__all__ = ["MelDataset", "ChunkSampler", "PadCollate", "pad_collate",
           "loader"]
