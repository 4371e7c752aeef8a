"""melpipe - read melpipe's HDF5 datasets of log-mel spectrograms fast,
in numpy or PyTorch, and its record streams.

    import melpipe
    ds = melpipe.MelDataset("out.h5", split="training")
    x, y = ds[0]                     # [n_mels, n_frames], label id

    import melpipe.torch             # with torch installed
    loader = melpipe.torch.loader(ds, batch_size=64, num_workers=4)

melpipe.stream reads and writes the record streams the programs pass
along (formats/record.md); it needs numpy, not h5py, which the names
below import when first used.
"""
import importlib

__version__ = "0.1.0"

_NAMES = {"MelDataset": "dataset", "Meta": "dataset", "ClipInfo": "dataset",
          "Stats": "stats",
          "ChunkSampler": "sampler", "pad_batch": "collate",
          "FormatError": "_h5", "MissingFilterError": "_h5"}
__all__ = sorted(_NAMES) + ["__version__"]


def __getattr__(name):
    if name not in _NAMES:
        raise AttributeError("module 'melpipe' has no attribute %r" % name)
    value = getattr(importlib.import_module("." + _NAMES[name], __name__),
                    name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
