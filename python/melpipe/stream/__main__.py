"""python -m melpipe.stream dump [--summary] [--max-record N] FILE|-

Reads a record stream, checking it all, and prints it: the header's
pairs, a line per data record (a windows or features-windows record's
with its window fields), the trailer (as recdump does). A stream
that breaks a rule gives one line on stderr, "melpipe.stream: FILE:
record N at byte B: reason", and exit status 1; a bad command line 2.
"""
import argparse
import sys

from ._format import (DEFAULT_MAX_DATA, DTYPES, F_CONT, F_MORE, SPLITS,
                      T_FWINDOWS, T_SKIPPED, T_SOURCE, T_WINDOWS, WIN_PAD,
                      WINDOWED, type_name)
from .reader import Reader, StreamError

PROG = "melpipe.stream"


def escape(s, quote):
    """bytes as text a line can hold: printable ASCII and valid UTF-8 as
    they are, control and other bytes escaped."""
    text = s.decode("utf-8", "backslashreplace")
    out = []
    for ch in text:
        if ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif ch == '"' and quote:
            out.append('\\"')
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    body = "".join(out)
    return '"%s"' % body if quote else body


def label_text(labels, label):
    if 0 <= label < len(labels):
        return "(%s)" % escape(labels[label], False)
    return ""


def source_line(labels, it):
    """A source record: the clip's fields, then KEY="VALUE" a pair."""
    line = "%d source clip=%d label=%d%s split=%s key=%s" % (
        it.index, it.clip, it.label, label_text(labels, it.label),
        SPLITS[it.split], escape(it.key, True))
    for k, v in it.pairs():
        line += " %s=%s" % (k, escape(v, True))
    return line


def item_line(labels, it):
    if it.type == T_SOURCE:
        return source_line(labels, it)
    line = "%d %s clip=%d" % (it.index, type_name(it.type), it.clip)
    if it.type != T_SKIPPED:
        line += " segment=%d offset=%d" % (it.segment, it.offset)
    line += " clip_samples=%d rate=%d label=%d" % (
        it.clip_samples, it.sample_rate, it.label)
    line += label_text(labels, it.label)
    line += " split=" + SPLITS[it.split]
    if it.type != T_SKIPPED:
        line += " dtype=%s dims=%dx%d" % (DTYPES[it.dtype][0], it.dim0,
                                          it.dim1)
        if it.type in WINDOWED:
            line += " win_len=%d win_hop=%d n_windows=%d pad=%s" % (
                it.win_len, it.win_hop, it.n_windows,
                "yes" if it.win_flags & WIN_PAD else "no")
        if it.flags:
            names = ["more"] if it.flags & F_MORE else []
            names += ["cont"] if it.flags & F_CONT else []
            line += " piece=" + ",".join(names)
    line += " key=" + escape(it.key, True)
    if it.type == T_SKIPPED:
        line += " reason=" + escape(it.data, True)
    return line


def dump(f, out, summary):
    r = Reader(f, sources=True)
    r.next_record()  # the header, or the reason why the stream has none
    for k, v in r.header:
        out.write("header %s=%s\n" % (k, escape(v, False)))
    labels = [v for k, v in r.header if k == "label"]
    counts = dict.fromkeys(("audio", "features", "skipped", "windows",
                            "features-windows", "source"), 0)
    # the windows of windows records, and of features-windows records
    n_windows = {T_WINDOWS: 0, T_FWINDOWS: 0}
    for it in r:
        if not summary:
            out.write(item_line(labels, it) + "\n")
        elif not it.flags & F_CONT:  # an item in pieces counts once
            counts[type_name(it.type)] += 1
            if it.type in n_windows:
                n_windows[it.type] += it.n_windows
    if summary:
        # (the lines of windows, features-windows and source records
        # only where the stream holds some)
        for name, n in counts.items():
            if n or name not in ("windows", "features-windows", "source"):
                out.write("type %s %d\n" % (name, n))
            if name == "windows" and n_windows[T_WINDOWS]:
                out.write("windows %d\n" % n_windows[T_WINDOWS])
            if name == "features-windows" and n_windows[T_FWINDOWS]:
                out.write("feature_windows %d\n" % n_windows[T_FWINDOWS])
    t = r.trailer
    out.write("trailer records=%d items=%d skipped=%d checksum=0x%08x\n"
              % (t["n_records"], t["n_items"], t["n_skipped"],
                 t["checksum"]))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m " + PROG,
                                 description="Read and check a melpipe "
                                 "record stream.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="print the stream, checking it all")
    d.add_argument("--summary", action="store_true",
                   help="counts per record type instead of a line each")
    d.add_argument("--max-record", type=int, default=DEFAULT_MAX_DATA,
                   help="payload cap in bytes (default 256 MiB)")
    d.add_argument("file", help="the stream, or - for stdin")
    a = ap.parse_args(argv)
    name = "stdin" if a.file == "-" else a.file
    try:
        f = sys.stdin.buffer if a.file == "-" else open(a.file, "rb")
    except OSError as e:
        sys.stderr.write("%s: cannot open '%s': %s\n"
                         % (PROG, a.file, e.strerror))
        return 1
    try:
        with f:
            dump(f, sys.stdout, a.summary)
    except StreamError as e:
        sys.stdout.flush()
        sys.stderr.write("%s: %s: %s\n" % (PROG, name, e))
        return 1
    except BrokenPipeError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
