"""melpipe - read melpipe's HDF5 datasets of log-mel spectrograms fast,
in numpy or PyTorch, and its record streams.

    import melpipe
    ds = melpipe.MelDataset("out.h5", split="training")
    x, y = ds[0]                     # [n_mels, n_frames], label id

    import melpipe.torch             # with torch installed
    loader = melpipe.torch.loader(ds, batch_size=64, num_workers=4)

melpipe.stream reads and writes the record streams the programs pass
along (formats/record.md).
"""
from ._h5 import FormatError, MissingFilterError
from .collate import pad_batch
from .dataset import MelDataset, Meta, Stats
from .sampler import ChunkSampler

__version__ = "0.1.0"
__all__ = ["MelDataset", "ChunkSampler", "Meta", "Stats", "pad_batch",
           "FormatError", "MissingFilterError", "__version__"]
