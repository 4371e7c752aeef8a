#!/usr/bin/env python3
"""wavcat_shard.py - check wavcat's shard streams against the whole run.

  wavcat_shard.py shard SHARD WHOLE K N
      SHARD is wavcat --shard K/N of the job WHOLE ran whole (the same
      inputs and options). formats/record.md, Shard streams: its header
      is WHOLE's (producer and stage aside) with shard=K/N added, job and
      clips included; its records are, byte for byte, WHOLE's records of
      the clips whose index is K modulo N, in order, and no other.

  wavcat_shard.py same-but-job NEW OLD
      NEW is OLD with a job pair (40 lowercase hex digits) added to its
      header, after clips, and nothing else changed: every other pair in
      order, every data record byte for byte, the trailer's counts (its
      checksum covers the header, so it differs).

Prints 'ok: ...' or the first difference (exit 1).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec_stream as rs  # noqa: E402


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    pairs, items, trailer = rs.read_stream(data, sources=True)
    raw = list(rs.split_records(data))[1:-1]
    if len(raw) != len(items):
        sys.exit("%s: %d records framed, %d read" % (path, len(raw),
                                                     len(items)))
    return pairs, list(zip(items, raw)), trailer


def strip(pairs, keys):
    return [(k, v) for k, v in pairs if k not in keys]


def check_job(pairs, path):
    jobs = [v for k, v in pairs if k == "job"]
    if len(jobs) != 1 or not re.fullmatch(rb"[0-9a-f]{40}", jobs[0]):
        sys.exit("%s: job pairs %r, wanted one of 40 lowercase hex digits"
                 % (path, jobs))


def shard(path, whole_path, k, n):
    sp, si, _ = load(path)
    wp, wi, _ = load(whole_path)
    check_job(sp, path)
    check_job(wp, whole_path)
    if dict(sp).get("shard") != b"%d/%d" % (k, n):
        sys.exit("%s: shard %r, wanted %d/%d" % (path, dict(sp).get("shard"),
                                                 k, n))
    mine = strip(sp, ("producer", "stage", "shard"))
    theirs = strip(wp, ("producer", "stage"))
    if mine != theirs:
        sys.exit("%s: header %r, the whole run's %r" % (path, mine, theirs))
    names = [k for k, _ in sp]
    if names.index("shard") != names.index("clips") + 1:
        sys.exit("%s: shard is not right after clips: %r" % (path, names))
    want = [(it, raw) for it, raw in wi if it.clip % n == k]
    if len(si) != len(want):
        sys.exit("%s: %d records, the whole run has %d of shard %d/%d"
                 % (path, len(si), len(want), k, n))
    for (a, ra), (b, rb) in zip(si, want):
        if ra != rb:
            sys.exit("%s: record %d (clip %d) differs from the whole run's "
                     "(clip %d)" % (path, a.index, a.clip, b.clip))
    print("ok: shard %d/%d, %d records" % (k, n, len(si)))


def same_but_job(new, old):
    np_, ni, nt = load(new)
    op, oi, ot = load(old)
    check_job(np_, new)
    names = [k for k, _ in np_]
    if names.index("job") != names.index("clips") + 1 or names[-1] != "job":
        sys.exit("%s: job is not the last pair, after clips: %r"
                 % (new, names))
    if dict(op).get("job") is not None:
        sys.exit("%s: already has a job" % old)
    if strip(np_, ("job",)) != op:
        sys.exit("header %r, old %r" % (strip(np_, ("job",)), op))
    if len(ni) != len(oi):
        sys.exit("%d records, old %d" % (len(ni), len(oi)))
    for (a, ra), (_, rb) in zip(ni, oi):
        if ra != rb:
            sys.exit("record %d (clip %d) differs" % (a.index, a.clip))
    for f in ("n_records", "n_items", "n_skipped"):
        if nt[f] != ot[f]:
            sys.exit("trailer %s %d, old %d" % (f, nt[f], ot[f]))
    print("ok: %d records the same, the header's job added" % len(ni))


def main():
    a = sys.argv[1:]
    if len(a) == 5 and a[0] == "shard":
        shard(a[1], a[2], int(a[3]), int(a[4]))
    elif len(a) == 3 and a[0] == "same-but-job":
        same_but_job(a[1], a[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
