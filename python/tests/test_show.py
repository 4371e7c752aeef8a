"""python -m melpipe show: pictures of every kind of dataset the suite
writes, the row --clip picks, the axes, errors and their exit statuses,
and the message where matplotlib is missing."""
import os
import re
import shutil
import subprocess
import sys
import wave

import h5py
import numpy as np
import pytest

from conftest import BIN, GPUMEL, RATE, run_pipeline

pytest.importorskip("matplotlib")
import matplotlib.image  # noqa: E402

from melpipe import axes, show  # noqa: E402
from melpipe.__main__ import main  # noqa: E402

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def more(datasets, tmp_path_factory):
    """Beside the session's datasets: no labels, an empty validation
    split and the htk scale (gzip); no splits, audio, ragged."""
    d = tmp_path_factory.mktemp("show")
    data = os.path.join(os.path.dirname(datasets["feat-fixed", "none"]),
                        "DATA")
    nolab, nosplit = str(d / "nolab.h5"), str(d / "nosplit.h5")
    run_pipeline([["wavcat", "-q", "--rate", str(RATE), "--duration", "1",
                   "--split", "hash:0:50", "--no-labels", data],
                  GPUMEL + ["--mel-scale", "htk"],
                  ["h5pack", "-q", "-c", "gzip", "-o", nolab]], os.devnull)
    run_pipeline([["wavcat", "-q", "--rate", str(RATE), "--split", "none",
                   data], ["h5pack", "-q", "-o", nosplit]], os.devnull)
    return {"nolab": nolab, "nosplit": nosplit}


def check_png(path):
    img = matplotlib.image.imread(path)
    h, w = img.shape[:2]
    assert 300 <= h <= 6000 and 600 <= w <= 3000, (path, img.shape)
    colours = np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3),
                        axis=0)
    assert len(colours) > 20, (path, len(colours))


CASES = [("feat-fixed", "zstd"), ("feat-ragged", "gzip"),
         ("audio-fixed", "none"), ("audio-ragged", "zstd"),
         ("f16-fixed", "none"), ("bf16-ragged", "none"), "nolab", "nosplit"]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pictures_of_every_kind(datasets, more, tmp_path, case):
    path = more[case] if isinstance(case, str) else datasets[case]
    out = str(tmp_path / "rows.png")
    shown = show.show(path, out, rows=3)
    assert shown.pages == [out, str(tmp_path / "rows-summary.png")]
    for page in shown.pages:
        check_png(page)
    assert 1 <= len(shown.rows) <= 3
    if case == "nolab":
        assert {r.split for r in shown.rows} == {"training", "testing"}
    elif case == "nosplit":
        assert {r.split for r in shown.rows} == {"all"}
    else:  # one row of each of the three labels
        assert sorted(r.label for r in shown.rows) == [0, 1, 2]


def test_clip_picks_its_rows(datasets, tmp_path):
    path = datasets["feat-fixed", "none"]
    with h5py.File(path) as f:
        g = f["validation"]
        clip = int(g["clip"][3])
        key = f["clips/path"].asstr()[clip]
        want = sorted(int(s) for s in g["segment"][g["clip"][()] == clip])
    shown = show.show(path, str(tmp_path / "c.png"), clip=key, rows=2,
                      summary=False)
    assert shown.pages == [str(tmp_path / "c.png")]
    assert {r.path for r in shown.rows} == {key}
    assert [r.segment for r in shown.rows] == want[:2]
    assert all(key in t and "validation" in t for t in shown.titles)
    info = show.Info(path)
    for name in (key, "some/folder/" + key, key.split("/")[1]):
        rows, of = show.pick_clip(info, name, 50)
        assert {(r.path, r.split) for r in rows} == {(key, "validation")}
        assert [r.segment for r in rows] == want and of == len(want)


def test_rows_of_shard_files(shards, tmp_path):
    """A shard file's clip columns hold the whole job's clip indices:
    the rows drawn name their own clips' paths, and --clip finds a
    clip's rows, as in the whole run's file."""
    whole = show.Info(shards["whole"])
    for part in shards["parts"]:
        shown = show.show(part, str(tmp_path / "p.png"), rows=4,
                          summary=False)
        assert shown.rows
        for r in shown.rows:
            assert r.path == whole.clip_paths[r.clip], r
            assert r.path in shown.titles[shown.rows.index(r)]
        key = shown.rows[-1].path
        rows, of = show.pick_clip(show.Info(part), key, 50)
        want, n = show.pick_clip(whole, key, 50)
        assert [(r.clip, r.path, r.split, r.segment) for r in rows] == \
            [(r.clip, r.path, r.split, r.segment) for r in want]
        assert of == n


def test_axes_from_the_recorded_parameters():
    librosa = pytest.importorskip("librosa")
    for scale in ("slaney", "htk"):
        a = {"n_mels": 40, "fmin": 20.0, "fmax": 7600.0, "mel_scale": scale}
        want = librosa.mel_frequencies(42, fmin=20.0, fmax=7600.0,
                                       htk=scale == "htk")[1:-1]
        assert np.allclose(axes.mel_band_hz(a), want, rtol=1e-9)
    a = {"sample_rate": 16000, "hop_length": 160, "n_fft": 512, "center": 1}
    assert np.allclose(axes.frame_times(a, 3, 1600), [0.1, 0.11, 0.12])
    a["center"] = 0
    assert np.allclose(axes.frame_times(a, 2), [0.016, 0.026])
    assert axes.per_second(a, "features") == 100.0


def test_axes_of_kaldi_fbank():
    """gpumel --preset kaldi: bands on Kaldi's mel scale, frames centred
    on the middle of their window, as tests/py/kaldi_ref.py lays them."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                    "tests", "py"))
    import kaldi_ref
    a = {"feature": "fbank", "mel_scale": "kaldi", "n_mels": 23,
         "fmin": 20.0, "fmax": 8000.0, "sample_rate": 16000,
         "hop_length": 160, "win_length": 400, "snip_edges": 1}
    lo, hi = kaldi_ref.mel(20.0), kaldi_ref.mel(8000.0)
    assert np.allclose(kaldi_ref.mel(axes.mel_band_hz(a)),
                       lo + (hi - lo) / 24 * np.arange(1, 24), rtol=1e-12)
    for snip in (1, 0):
        a["snip_edges"] = snip
        starts = kaldi_ref.frame_starts(16000, 400, 160, snip)[:5]
        want = (800 + starts + 400 / 2) / 16000
        assert np.allclose(axes.frame_times(a, 5, 800), want)
        # MFCC of those bands (--preset kaldi --mfcc): the same frames
        mfcc = dict(a, feature="mfcc", mfcc_bands="fbank", n_mfcc=13)
        assert np.allclose(axes.frame_times(mfcc, 5, 800), want)


def test_cli_prints_pages_and_errors_in_one_line(datasets, tmp_path,
                                                 capsys):
    path = datasets["f16-fixed", "none"]
    out = str(tmp_path / "x.png")
    assert main(["show", path, "-o", out, "--rows", "1", "--no-summary"]) \
        == 0
    assert capsys.readouterr().out == out + "\n"
    check_png(out)
    cases = [([str(tmp_path / "none.h5")], 1, "cannot open"),
             ([path, "--clip", "word9/nothing.wav"], 1, "no clip"),
             ([__file__], 1, "melpipe show: '"),
             ([path, "-o", str(tmp_path / "no" / "x.png")], 1, "no folder"),
             ([path, "--rows", "0"], 2, "outside 1..256"),
             ([path, "--bogus"], 2, "unrecognized")]
    for args, status, text in cases:
        try:
            got = main(["show"] + args)
        except SystemExit as e:  # argparse's usage errors
            got = e.code
        err = capsys.readouterr().err
        assert got == status, (args, err)
        if status == 1:
            assert len(err.splitlines()) == 1, err
        assert text in err, (args, err)


def test_missing_matplotlib_named(datasets, tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from melpipe.__main__ import main; sys.exit(main())")
    r = subprocess.run([sys.executable, "-c", code, "show",
                        datasets["feat-fixed", "none"], "-o",
                        str(tmp_path / "m.png")], capture_output=True,
                       text=True, env=dict(os.environ,
                                           PYTHONPATH=PYTHON_DIR))
    assert r.returncode == 1
    assert r.stderr.strip() == ("melpipe show: matplotlib is not "
                                "installed: pip install matplotlib (or pip "
                                "install 'melpipe[plot]')"), r.stderr
    assert not os.path.exists(tmp_path / "m.png")


@pytest.fixture(scope="module")
def one_fbank(datasets, tmp_path_factory):
    """A one-row dataset of Kaldi filterbank features (gpumel --preset
    kaldi, 23 bins), and a copy whose feature attribute says mfcc; the
    same clip with the log energy row (--use-energy), as Kaldi's MFCC
    with the energy as c0 (--mfcc 13 --use-energy) and as librosa's MFCC
    (--mfcc 20, top_db 80)."""
    d = tmp_path_factory.mktemp("one")
    rate, n = 16000, 16000
    x = 0.3 * np.sin(2 * np.pi * 440 * np.arange(n) / rate)
    wav = str(d / "a.wav")
    with wave.open(wav, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((x * 32767).astype("<i2").tobytes())
    fbank, mfcc = str(d / "fbank.h5"), str(d / "mfcc.h5")
    run_pipeline([["wavcat", "-q", "--split", "none", wav],
                  ["gpumel", "-q", "--device", "cpu", "--preset", "kaldi"],
                  ["h5pack", "-q", "-o", fbank]], os.devnull)
    shutil.copy(fbank, mfcc)
    with h5py.File(mfcc, "r+") as f:
        f.attrs["feature"] = "mfcc"
    out = {"fbank": fbank, "mfcc": mfcc}
    for name, args in (("fbank-energy", ["--preset", "kaldi",
                                         "--use-energy"]),
                       ("mfcc-kaldi", ["--preset", "kaldi", "--mfcc", "13",
                                       "--use-energy"]),
                       ("mfcc-mel", ["--mfcc", "20"])):
        out[name] = str(d / (name + ".h5"))
        run_pipeline([["wavcat", "-q", "--split", "none", wav],
                      ["gpumel", "-q", "--device", "cpu"] + args,
                      ["h5pack", "-q", "-o", out[name]]], os.devnull)
    return out


@pytest.fixture
def figures(monkeypatch):
    """The figures show() draws, as it saves them."""
    from melpipe import _draw
    _draw.load()
    kept, save = [], _draw.save

    def keep(fig, out):
        save(fig, out)
        kept.append(fig)
    monkeypatch.setattr(_draw, "save", keep)
    return kept


def texts(fig):
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def test_one_row_is_counted_in_the_singular(one_fbank, tmp_path, figures):
    show.show(one_fbank["fbank"], str(tmp_path / "o.png"))
    words = "\n".join(t.get_text() for f in figures for t in texts(f))
    assert "1 row of 1," in words and "1 clip," in words, words
    assert not re.search(r"\b1 (rows|clips|labels|bins|frames)\b", words), \
        words


@pytest.mark.parametrize("feature,what,n", [
    ("fbank", "Kaldi filterbank features", "23 bins"),
    ("mfcc", "MFCC", "23 coefficients")])
def test_titles_say_the_feature(one_fbank, tmp_path, figures, feature, what,
                                n):
    show.show(one_fbank[feature], str(tmp_path / "f.png"), summary=False)
    title = figures[0]._suptitle.get_text()
    assert what + ": 1 row of 1" in title and (", %s," % n) in title, title
    assert "mel" not in title.replace("melpipe", ""), title


# what the summary names of each file: the attributes of its framing,
# its bands and its coefficients, as the file holds them
SAID = {
    "fbank": ("win_length", "hop_length", "snip_edges", "n_mels",
              "use_energy"),
    "fbank-energy": ("win_length", "hop_length", "snip_edges", "n_mels",
                     "use_energy"),
    "mfcc-kaldi": ("win_length", "hop_length", "snip_edges", "n_mels",
                   "n_mfcc", "mfcc_bands", "cepstral_lifter", "use_energy"),
    "mfcc-mel": ("n_fft", "hop_length", "center", "n_mels", "top_db",
                 "n_mfcc", "mfcc_bands"),
}


@pytest.mark.parametrize("name", sorted(SAID))
def test_summary_says_the_parameters(one_fbank, tmp_path, figures, name):
    """The summary's facts name each parameter the file records, with
    its value, and nothing the file lacks (no "None")."""
    show.show(one_fbank[name], str(tmp_path / "s.png"))
    facts = [t.get_text() for t in texts(figures[1])
             if "made by:" in t.get_text()]
    assert len(facts) == 1
    with h5py.File(one_fbank[name]) as f:
        a = {k: f.attrs[k] for k in SAID[name]}
        a = {k: v.decode() if isinstance(v, bytes) else v
             for k, v in a.items()}
        kaldi = "snip_edges" in f.attrs
        assert kaldi == ("center" not in f.attrs), list(f.attrs)
    for k, v in a.items():
        assert re.search(r"\b%s %s\b" % (k, re.escape(str(v))), facts[0]), \
            (k, v, facts[0])
    assert "None" not in facts[0], facts[0]
    if kaldi:
        assert "center" not in facts[0], facts[0]


@pytest.mark.parametrize("name,energy", [
    ("fbank", None), ("fbank-energy", "row 0"), ("mfcc-kaldi", "c0"),
    ("mfcc-mel", None)])
def test_energy_row_labelled(one_fbank, tmp_path, figures, name, energy):
    """Kaldi's --use-energy puts the frame's log energy first (fbank:
    a row before the n_mels bands; MFCC: coefficient 0): the rows page
    says so in its title and ticks that row "energy"; the bands keep
    their frequencies, one row up."""
    show.show(one_fbank[name], str(tmp_path / "e.png"), summary=False)
    fig = figures[0]
    title = fig._suptitle.get_text()
    ax = [x for x in fig.axes if x.get_ylabel()][0]
    ticks = dict(zip(ax.get_yticks(),
                     (t.get_text() for t in ax.get_yticklabels())))
    with h5py.File(one_fbank[name]) as f:
        n = f["all/features"].shape[1]
        attrs = dict(f.attrs)
    if energy is None:
        assert "energy" not in title and "energy" not in ticks.values()
    else:
        assert "(%s: log energy)" % energy in title, title
        assert ticks[0] == "energy", ticks
    if name.startswith("mfcc"):
        assert ax.get_ylabel() == "coefficient"
        assert all(v in ("energy", str(int(k))) for k, v in ticks.items())
        return
    first = 1 if energy else 0
    assert n == attrs["n_mels"] + first
    hz = axes.mel_band_hz(attrs)
    for row, label in ticks.items():
        if row >= first:
            want = hz[int(row) - first]
            got = float(label[:-1]) * 1000 if label.endswith("k") \
                else float(label)
            assert abs(got - want) <= 0.05 * want, (row, label, want)


def test_mfcc_rows_are_coefficients(one_fbank, tmp_path, figures):
    """MFCC rows are coefficients, not bands, even where n_mfcc is the
    bands' count: no frequencies on their axis."""
    show.show(one_fbank["mfcc"], str(tmp_path / "m.png"), summary=False)
    ax = [x for x in figures[0].axes if x.get_ylabel()][0]
    assert ax.get_ylabel() == "coefficient"
    assert [t.get_text() for t in ax.get_yticklabels()] == \
        [str(int(k)) for k in ax.get_yticks()]


@pytest.mark.parametrize("case", ["fbank", "fbank-energy",
                                  ("feat-fixed", "none")], ids=str)
def test_no_text_cut_off_at_the_edges(datasets, one_fbank, tmp_path, figures,
                                      case):
    """A narrow picture (one column of panels) keeps the colour bar's
    label and ticks inside it."""
    path = one_fbank[case] if isinstance(case, str) else datasets[case]
    show.show(path, str(tmp_path / "n.png"), rows=1, summary=False)
    fig = figures[0]
    assert fig.get_figwidth() < 9
    drawn = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    assert drawn.x0 >= 0 and drawn.y0 >= 0 and \
        drawn.x1 <= fig.get_figwidth() and \
        drawn.y1 <= fig.get_figheight(), (drawn, fig.get_size_inches())
