"""melpipe.torch: the torch classes and the DataLoader, where torch is
installed (skipped otherwise)."""
import pytest

import melpipe

torch = pytest.importorskip("torch")
import melpipe.torch as mt  # noqa: E402


def test_classes_are_torch_classes(datasets):
    ds = melpipe.MelDataset(datasets["feat-fixed", "zstd"])
    assert isinstance(ds, torch.utils.data.Dataset)
    s = melpipe.ChunkSampler(ds, batch_size=4)
    assert isinstance(s, torch.utils.data.Sampler)


@pytest.mark.parametrize("name", ["feat-fixed", "feat-ragged",
                                  "audio-ragged"])
@pytest.mark.parametrize("workers", [0, 2])
def test_loader_gives_every_row_once(datasets, name, workers):
    ds = melpipe.MelDataset(datasets[name, "zstd"])
    loader = mt.loader(ds, batch_size=5, num_workers=workers,
                       persistent_workers=False)
    loader.batch_sampler.set_epoch(1)
    seen, labels = [], []
    order = [i for b in loader.batch_sampler for i in b]
    for batch in loader:
        x, y = batch[0], batch[1]
        assert x.shape[0] == y.shape[0]
        if ds.layout == "ragged":
            n = batch[2]
            for b, i in enumerate(order[len(seen):len(seen) + len(y)]):
                want = torch.from_numpy(ds[i][0])
                got = x[b, ..., :n[b]] if ds.kind == "features" \
                    else x[b, :n[b]]
                assert torch.equal(got, want)
        seen += order[len(seen):len(seen) + len(y)]
        labels += y.tolist()
    assert sorted(seen) == list(range(len(ds)))
    assert labels == [ds[i][1] for i in seen]
