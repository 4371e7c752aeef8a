"""Datasets made with the suite's programs (bin/ of the checkout, or
MELPIPE_BIN), once per test session: features and audio, fixed and
ragged, none, gzip and zstd, from a small labelled tree of WAV files
written here with the standard library."""
import os
import shutil
import struct
import subprocess
import sys
import wave

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
# this checkout's package, wherever pytest starts (make python-check
# starts it in python/, where melpipe is importable already), for the
# tests and the Pythons they start
PACKAGE_DIR = os.path.dirname(HERE)
sys.path.insert(0, PACKAGE_DIR)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [PACKAGE_DIR] + [p for p in [os.environ.get("PYTHONPATH")] if p])
BIN = os.environ.get("MELPIPE_BIN", os.path.join(ROOT, "bin"))
GOLDEN = os.path.join(ROOT, "tests", "golden")
RATE = 4096
GPUMEL = ["gpumel", "-q", "--device", "cpu", "--n-fft", "256", "--hop", "64",
          "--n-mels", "16"]
COMPRESS = ("none", "gzip", "zstd")
# name: (wavcat's arguments after --rate, the stages between it and h5pack)
STREAMS = {
    "feat-fixed": (["--duration", "1"], [["segment", "-q", "--len", "512",
                                          "--hop", "256"], GPUMEL]),
    "feat-ragged": ([], [GPUMEL]),
    "audio-fixed": (["--duration", "1"], [["segment", "-q", "--len", "512",
                                           "--hop", "512"]]),
    "audio-ragged": ([], []),
    "f16-fixed": (["--duration", "1"], [["segment", "-q", "--len", "512"],
                                        GPUMEL + ["--dtype", "f16"]]),
    "bf16-ragged": ([], [GPUMEL + ["--dtype", "bf16"]]),
    "nosplit": (["--split", "none"], [GPUMEL]),
}


def write_tree(root, labels=3, per_label=6):
    """root/word<l>/<hash>_nohash_<k>.wav: 16-bit mono tone and noise of
    lengths from 0.3 to 2 s, and Speech Commands split lists."""
    rng = np.random.default_rng(5)
    names = []
    for li in range(labels):
        os.makedirs(os.path.join(root, "word%d" % li))
        for k in range(per_label):
            n = 1200 + 1100 * k + 300 * li
            t = np.arange(n) / RATE
            x = 0.3 * np.sin(2 * np.pi * (200 + 150 * li + 9 * k) * t)
            x += 0.05 * rng.standard_normal(n)
            name = "word%d/%08x_nohash_%d.wav" % (li, rng.integers(1 << 32), k)
            with wave.open(os.path.join(root, name), "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(RATE)
                w.writeframes(struct.pack("<%dh" % n,
                                          *(x * 32767).astype(int)))
            names.append(name)
    for fname, part in (("validation_list.txt", names[1::5]),
                        ("testing_list.txt", names[2::7])):
        with open(os.path.join(root, fname), "w") as f:
            f.write("".join(p + "\n" for p in part))


def run_pipeline(cmds, out):
    """cmds piped one into the next, stdout into the file out."""
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"])
    procs, prev = [], None
    with open(out, "wb") as f:
        for i, cmd in enumerate(cmds):
            p = subprocess.Popen(cmd, stdin=prev, env=env,
                                 stdout=f if i == len(cmds) - 1
                                 else subprocess.PIPE)
            if prev is not None:
                prev.close()
            prev = p.stdout
            procs.append(p)
    for cmd, p in zip(cmds, procs):
        if p.wait() != 0:
            raise RuntimeError("%s failed" % cmd[0])


@pytest.fixture(scope="session")
def datasets(tmp_path_factory):
    """{(stream name, compression): path of its .h5}."""
    if not all(os.access(os.path.join(BIN, p), os.X_OK)
               for p in ("wavcat", "segment", "gpumel", "h5pack")):
        pytest.skip("the suite's programs are not built in %s (make -j2)"
                    % BIN)
    d = tmp_path_factory.mktemp("data")
    write_tree(str(d / "DATA"))
    out = {}
    for name, (wargs, stages) in STREAMS.items():
        rec = str(d / (name + ".rec"))
        run_pipeline([["wavcat", "-q", "--rate", str(RATE)] + wargs +
                      [str(d / "DATA")]] + stages, rec)
        for c in COMPRESS if name in ("feat-fixed", "feat-ragged",
                                      "audio-fixed", "audio-ragged") \
                else ("none",):
            h5 = str(d / ("%s-%s.h5" % (name, c)))
            run_pipeline([["h5pack", "-q", "-c", c, "--chunk-size", "4K",
                           "-o", h5, rec]], os.devnull)
            out[name, c] = h5
    return out


@pytest.fixture(scope="session")
def have_recdump():
    return os.access(os.path.join(BIN, "recdump"), os.X_OK) and \
        shutil.which("true") is not None


@pytest.fixture(scope="session")
def shards(datasets, tmp_path_factory):
    """The feat-fixed stream run whole, as its 3 shards (wavcat --shard
    K/3, each its own h5pack file: docs/shards.md) and as those shards
    merged (h5pack --merge): {"whole": path, "merged": path, "parts":
    [path of shard K]}."""
    d = tmp_path_factory.mktemp("shards")
    data = os.path.join(os.path.dirname(datasets["feat-fixed", "none"]),
                        "DATA")
    wargs, stages = STREAMS["feat-fixed"]
    wavcat = ["wavcat", "-q", "--rate", str(RATE)] + wargs

    def run(shard, out):
        cmd = wavcat + (["--shard", shard] if shard else []) + [data]
        run_pipeline([cmd] + stages + [["h5pack", "-q", "-o", out]],
                     os.devnull)
    out = {"whole": str(d / "whole.h5"), "merged": str(d / "merged.h5"),
           "parts": [str(d / ("part-%d.h5" % k)) for k in range(3)]}
    run(None, out["whole"])
    for k, part in enumerate(out["parts"]):
        run("%d/3" % k, part)
    run_pipeline([["h5pack", "-q", "--merge", "-o", out["merged"]] +
                  out["parts"]], os.devnull)
    return out
