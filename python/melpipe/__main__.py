"""python -m melpipe show FILE.h5 [--clip PATH] [--rows N] [--no-summary]
                        [--max-seconds S] [-o OUT.png]

Draws a melpipe HDF5 dataset (formats/hdf5.md) into two pictures:
OUT.png, some of its rows (log-mel spectrograms, Kaldi filterbank
features or MFCC, as the file's feature attribute says, or waveforms for
audio datasets), and OUT-summary.png (rows per split and label, skipped
inputs, a histogram of the values). Prints the paths it wrote. Errors:
one line on stderr, exit status 1; a bad command line 2.
"""
import argparse
import os
import sys

PROG = "melpipe show"

EPILOG = """\
pages:
  OUT (default: FILE with .png for .h5) holds the rows: features rows as
  images titled by the file's feature attribute (mel: log-mel
  spectrograms; fbank: Kaldi filterbank features; mfcc: MFCC), time in
  seconds in the clip (from the file's hop_length, sample_rate and
  center, or Kaldi's win_length and snip_edges), the mel bands' centre
  frequencies in Hz (from n_mels, fmin, fmax and mel_scale, slaney, htk
  or kaldi) or MFCC's coefficient numbers, the log energy row of
  Kaldi's use_energy (fbank's row 0, MFCC's c0) ticked "energy", one
  colour scale; audio rows as waveforms (the samples as stored, s16
  scaled to full scale), long ragged rows cut to --max-seconds. Without
  --clip, rows spread over the labels and, within a label, over the
  file (so over the splits). OUT-summary.png (OUT's name with -summary
  before its extension) holds the facts of the file (the parameters its
  attributes record: the framing, the bands, MFCC's n_mfcc, mfcc_bands
  and cepstral_lifter, top_db), rows per split and label, the skipped
  inputs and their reasons, a histogram of the values (of up to 2M
  values a split, whole chunks spread over it) and, for ragged
  files, the rows' lengths. The extension picks the format (.png, .svg,
  .pdf). Needs matplotlib (pip install matplotlib, or the melpipe[plot]
  extra); zstd files need hdf5plugin or HDF5_PLUGIN_PATH.
"""


def positive(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number" % text)
    if not 1 <= v <= 256:
        raise argparse.ArgumentTypeError("%d is outside 1..256" % v)
    return v


def seconds(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number" % text)
    if not v > 0:
        raise argparse.ArgumentTypeError("%s is not above 0" % text)
    return v


def parser():
    ap = argparse.ArgumentParser(prog="python -m melpipe",
                                 description="Tools for melpipe datasets.")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    s = sub.add_parser("show", help="draw a dataset's rows and a summary",
                       description="Draw a melpipe HDF5 dataset: some rows "
                       "into OUT, a summary page into OUT-summary.png.",
                       epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("file", metavar="FILE.h5", help="the dataset")
    s.add_argument("--clip", metavar="PATH",
                   help="draw the rows of this clip: its path as in "
                   "/clips/path (yes/a.wav), or a path ending with it")
    s.add_argument("--rows", type=positive, default=8, metavar="N",
                   help="rows to draw, 1-256 (default 8; with --clip, "
                   "the clip's first N)")
    s.add_argument("--max-seconds", type=seconds, default=30.0,
                   metavar="S", help="draw at most the first S seconds "
                   "of a row (default 30)")
    s.add_argument("--no-summary", action="store_true",
                   help="draw the rows page alone")
    s.add_argument("-o", "--output", metavar="OUT.png",
                   help="the rows page (default: FILE.png)")
    return ap


def one_line(e):
    return " ".join(str(e).split())


def main(argv=None):
    a = parser().parse_args(argv)
    out = a.output or os.path.splitext(a.file)[0] + ".png"
    from . import _h5
    from ._draw import MissingMatplotlib
    from .show import ShowError, show
    try:
        shown = show(a.file, out, clip=a.clip, rows=a.rows,
                     max_seconds=a.max_seconds, summary=not a.no_summary)
    except (ShowError, MissingMatplotlib, _h5.FormatError,
            _h5.MissingFilterError) as e:
        sys.stderr.write("%s: %s\n" % (PROG, one_line(e)))
        return 1
    except OSError as e:  # not HDF5, unreadable, cannot write OUT
        where = e.filename or a.file
        sys.stderr.write("%s: '%s': %s\n" % (PROG, where,
                                             one_line(e.strerror or e)))
        return 1
    for p in shown.pages:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
