"""MelDataset against what h5py reads directly, in every layout, kind,
element type and compression the suite writes."""
import multiprocessing
import os
import pickle
import shutil
import subprocess
import sys

import h5py
import hdf5plugin  # noqa: F401
import numpy as np
import pytest

import melpipe

SPLITS = ("training", "validation", "testing")


def direct(path, split):
    """Every row of split as formats/hdf5.md says to read it."""
    with h5py.File(path, "r") as f:
        g = f[split]
        feats, labels = g["features"], g["label"][()]
        rows = []
        for i in range(len(labels)):
            if "start" in g:
                s, n = int(g["start"][i]), int(g["n_frames"][i])
                x = feats[s:s + n]
                rows.append(x.T if f.attrs["kind"] == "features" else x)
            else:
                rows.append(feats[i])
        return rows, labels


def splits_of(path):
    """The split groups the file holds."""
    with h5py.File(path, "r") as f:
        return [s for s in SPLITS + ("all",) if s in f]


def test_every_item_as_h5py_reads_it(datasets):
    for (name, comp), path in sorted(datasets.items()):
        for split in splits_of(path):
            ds = melpipe.MelDataset(path, split)
            rows, labels = direct(path, split)
            assert len(ds) == len(rows), (name, comp, split)
            for i in range(len(ds)):
                x, y = ds[i]
                assert x.dtype == rows[i].dtype and x.shape == rows[i].shape
                assert np.array_equal(x, rows[i], equal_nan=True), (name, i)
                assert y == labels[i]
            assert np.array_equal(ds.lengths, [r.shape[ds.length_axis]
                                               for r in rows])


def test_batches_as_items(datasets):
    rng = np.random.default_rng(3)
    for (name, comp), path in sorted(datasets.items()):
        ds = melpipe.MelDataset(path, dtype="float32",
                                transform=lambda x: x * 2)
        n = len(ds)
        for idx in (rng.permutation(n)[:9], [n - 1, -1, 0, 0, 3],
                    list(range(4)) + [n - 2]):
            got = ds.__getitems__(idx)
            want = [ds[i] for i in idx]
            assert [y for _, y in got] == [y for _, y in want], name
            for (a, _), (b, _) in zip(got, want):
                assert a.dtype == b.dtype and np.array_equal(
                    a, b, equal_nan=True), (name, comp, idx)
    with pytest.raises(IndexError) as e:
        ds.__getitems__([0, n])
    # the message names the row, the split, the file and the rows it has
    assert str(e.value) == (
        "row %d is not in the %s split of %r, which has rows 0 to %d "
        "(or -%d to -1)" % (n, ds.split, ds.path, n - 1, n))
    with pytest.raises(IndexError, match="row -%d is not in" % (n + 1)):
        ds.meta(-n - 1)


def test_layouts_kinds_and_shapes(datasets):
    fx = melpipe.MelDataset(datasets["feat-fixed", "none"])
    rg = melpipe.MelDataset(datasets["feat-ragged", "zstd"])
    au = melpipe.MelDataset(datasets["audio-ragged", "gzip"])
    assert (fx.layout, fx.kind, fx.n_mels) == ("fixed", "features", 16)
    assert (rg.layout, au.layout, au.kind) == ("ragged", "ragged", "audio")
    assert fx[0][0].shape[0] == 16 and rg[3][0].shape[0] == 16
    assert au[0][0].ndim == 1 and len(set(au.lengths)) > 1
    assert len(set(rg.lengths)) > 1 and rg[0][0].flags.c_contiguous
    assert fx.labels == ["word0", "word1", "word2"] and fx.num_classes == 3
    assert melpipe.MelDataset(datasets["bf16-ragged", "none"])[0][0].dtype \
        == np.float32


def test_dtype_transform_and_meta(datasets):
    path = datasets["f16-fixed", "none"]
    ds = melpipe.MelDataset(path, "validation", dtype="float32",
                            transform=lambda x: x[:, :2])
    x, _ = ds[1]
    raw = melpipe.MelDataset(path, "validation")[1][0]
    assert raw.dtype == np.float16 and x.dtype == np.float32
    assert np.array_equal(x, raw.astype(np.float32)[:, :2])
    m = ds.meta(len(ds) - 1)
    with h5py.File(path) as f:
        g = f["validation"]
        clip = g["clip"][len(ds) - 1]
        assert m.path == f["clips/path"].asstr()[clip]
        assert (m.clip, m.segment, m.offset) == (
            clip, g["segment"][-1], g["offset"][-1])
    assert m.path.startswith("word") and m.path.endswith(".wav")


def test_stats_match_numpy(datasets):
    for name in ("feat-fixed", "feat-ragged"):
        ds = melpipe.MelDataset(datasets[name, "zstd"])
        rows, _ = direct(datasets[name, "zstd"], "training")
        allv = np.concatenate([r.astype(np.float64) for r in rows], axis=1)
        st = ds.stats()
        assert st.count == allv.shape[1] and st.mean.shape == (16,)
        assert np.allclose(st.mean, allv.mean(axis=1), rtol=1e-5, atol=1e-4)
        assert np.allclose(st.std, allv.std(axis=1), rtol=1e-5, atol=1e-4)
    au = melpipe.MelDataset(datasets["audio-fixed", "none"]).stats()
    assert au.mean.shape == (1,)


def without_stats(src, dst):
    """A copy of the file src without h5pack's statistics, as an h5pack
    that stored none wrote it."""
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        for g in ("training", "validation", "testing", "all"):
            for k in ("stats_count", "stats_sum", "stats_sumsq"):
                if g in f and k in f[g]:
                    del f[g][k]
    return dst


@pytest.mark.parametrize("name", ["feat-fixed", "feat-ragged", "f16-fixed",
                                  "bf16-ragged", "audio-ragged"])
def test_stats_stored_and_computed_agree(datasets, tmp_path, name):
    path = datasets.get((name, "zstd")) or datasets[name, "none"]
    with h5py.File(path) as f:
        assert "stats_sum" in f["training"]
    old = without_stats(path, tmp_path / "old.h5")
    ds, computed = melpipe.MelDataset(path), melpipe.MelDataset(old)
    a, b = ds.stats(), computed.stats()
    assert a.count == b.count
    assert np.allclose(a.mean, b.mean, rtol=1e-6, atol=1e-6)
    assert np.allclose(a.std, b.std, rtol=1e-4, atol=1e-5)


def test_stats_stored_read_without_the_features(datasets, monkeypatch):
    ds = melpipe.MelDataset(datasets["feat-fixed", "none"])
    monkeypatch.setattr(melpipe.stats, "streaming_stats",
                        lambda d: pytest.fail("a pass over the data"))
    monkeypatch.setattr(melpipe.dataset, "streaming_stats",
                        lambda d: pytest.fail("a pass over the data"))
    st = ds.stats()
    rows, _ = direct(datasets["feat-fixed", "none"], "training")
    allv = np.concatenate([r.astype(np.float64) for r in rows], axis=1)
    assert st.count == allv.shape[1]
    assert np.allclose(st.mean, allv.mean(axis=1), rtol=1e-6, atol=1e-5)
    assert np.allclose(st.std, allv.std(axis=1), rtol=1e-5, atol=1e-5)


def read_all(ds):
    return [(ds[i][0].tolist(), ds[i][1]) for i in range(len(ds))]


def read_some(args):
    ds, idx = args
    return [(ds[i][0].tolist(), ds[i][1]) for i in idx]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pickled_and_read_in_workers(datasets, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip("no %s here" % method)
    ds = melpipe.MelDataset(datasets["feat-ragged", "zstd"])
    want = read_all(ds)  # opens the file here, before the fork
    clone = pickle.loads(pickle.dumps(ds))
    assert clone._f is None and read_all(clone) == want
    ctx = multiprocessing.get_context(method)
    parts = [range(i, len(ds), 3) for i in range(3)]
    with ctx.Pool(3) as pool:
        got = pool.map(read_some, [(ds, p) for p in parts])
    for p, rows in zip(parts, got):
        assert rows == [want[i] for i in p]


def test_unknown_version_refused(datasets, tmp_path):
    path = str(tmp_path / "v9.h5")
    with open(datasets["feat-fixed", "none"], "rb") as a, \
            open(path, "wb") as b:
        b.write(a.read())
    with h5py.File(path, "r+") as f:
        f.attrs["melpipe_hdf5_version"] = np.int32(9)
    with pytest.raises(melpipe.FormatError,
                       match="melpipe HDF5 version 9.*reads versions 1 "
                       "and 2"):
        melpipe.MelDataset(path)
    with h5py.File(path, "r+") as f:
        del f.attrs["melpipe_hdf5_version"]
    with pytest.raises(melpipe.FormatError, match="not a melpipe dataset"):
        melpipe.MelDataset(path)


def test_default_split(datasets):
    """training where the file has splits, all where it has none"""
    assert melpipe.MelDataset(datasets["feat-ragged", "none"]).split == \
        "training"
    ds = melpipe.MelDataset(datasets["nosplit", "none"])
    with h5py.File(datasets["nosplit", "none"], "r") as f:
        assert [g for g in ("training", "all") if g in f] == ["all"]
        assert ds.split == "all" and len(ds) == f["all"]["label"].shape[0]
    with pytest.raises(KeyError, match="no split 'training'.*it has all"):
        melpipe.MelDataset(datasets["nosplit", "none"], "training")


def test_missing_split_named(datasets):
    with pytest.raises(KeyError, match="no split 'all'.*training, "
                       "validation, testing"):
        melpipe.MelDataset(datasets["feat-fixed", "none"], "all")


def test_missing_filter_says_what_to_install(datasets, tmp_path):
    # a Python without hdf5plugin, and no plugin folder HDF5 could search
    code = ("import sys; sys.modules['hdf5plugin'] = None; import melpipe\n"
            "try:\n    melpipe.MelDataset(sys.argv[1])\n"
            "except melpipe.MissingFilterError as e:\n    print(e)\n")
    env = dict(os.environ, HDF5_PLUGIN_PATH=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code,
                          datasets["feat-fixed", "zstd"]], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert "HDF5 filter 32015 (zstd)" in out, out
    assert "pip install hdf5plugin" in out and "HDF5_PLUGIN_PATH" in out
    assert "/training/features" in out


def test_clip_info_gives_the_files_own_rate(datasets, tmp_path):
    """/clips/source_rate and source_channels (the input file's own,
    from wavcat's source records) through MelDataset.clip_info(); 0 in a
    file written before h5pack stored them."""
    from conftest import RATE
    path = datasets["feat-ragged", "none"]
    ds = melpipe.MelDataset(path, "training")
    m = ds.meta(0)
    info = ds.clip_info(m.clip)
    assert isinstance(info, melpipe.ClipInfo)
    assert (info.path, info.label) == (m.path, m.label)
    assert info.split == "training" and info.n_samples > 0
    assert (info.sample_rate, info.source_rate, info.source_channels) == \
        (RATE, RATE, 1)
    old = str(tmp_path / "old.h5")
    shutil.copy(path, old)
    with h5py.File(old, "a") as f:
        del f["clips/source_rate"], f["clips/source_channels"]
    info = melpipe.MelDataset(old, "training").clip_info(m.clip)
    assert (info.source_rate, info.source_channels) == (0, 0)


def test_meta_and_clip_info_of_shard_files(shards):
    """A shard file's clip columns hold the whole job's clip indices,
    its /clips only the shard's clips (row r: clip K + r N,
    formats/hdf5.md, Shard files): meta and clip_info give what the
    whole run's file gives for the same clip; the merged file is the
    whole run's."""
    for path in shards["parts"] + [shards["merged"]]:
        for split in splits_of(path):
            ds = melpipe.MelDataset(path, split)
            whole = melpipe.MelDataset(shards["whole"], split)
            with h5py.File(path) as f:
                g = f[split]
                cols = [g[k][()] for k in ("clip", "segment", "offset")]
            for i in range(len(ds)):
                m = ds.meta(i)
                assert (m.clip, m.segment, m.offset) == \
                    tuple(int(c[i]) for c in cols)
                assert m.path == whole.clip_info(m.clip).path
                assert ds.clip_info(m.clip) == whole.clip_info(m.clip)
                if path == shards["merged"]:
                    assert m == whole.meta(i)
    whole = melpipe.MelDataset(shards["whole"])
    for k, part in enumerate(shards["parts"]):
        ds = melpipe.MelDataset(part)
        with h5py.File(part) as f:
            rows = f["clips/path"].shape[0]
        for clip in range(k, k + 3 * rows, 3):  # rows or not in ds's split
            assert ds.clip_info(clip) == whole.clip_info(clip)


def test_clip_info_out_of_range_says_which_clips(shards):
    """clip_info of a clip the file does not hold: IndexError naming the
    clip and the clips it holds, not h5py's bare one."""
    with h5py.File(shards["whole"]) as f:
        n = f["clips/path"].shape[0]
    whole = melpipe.MelDataset(shards["whole"])
    for clip in (n, n + 100, -1):
        with pytest.raises(IndexError) as e:
            whole.clip_info(clip)
        assert str(e.value) == "clip %d is not in '%s', which holds " \
            "clips 0 to %d" % (clip, shards["whole"], n - 1)
    part = shards["parts"][1]
    with h5py.File(part) as f:
        last = 1 + 3 * (f["clips/path"].shape[0] - 1)
    ds = melpipe.MelDataset(part)
    assert last + 3 >= n > last
    for clip in (0, 2, last + 3):
        with pytest.raises(IndexError) as e:
            ds.clip_info(clip)
        assert str(e.value) == "clip %d is not in '%s' (shard 1/3), " \
            "which holds clips 1, 4, ..., %d" % (clip, part, last)
