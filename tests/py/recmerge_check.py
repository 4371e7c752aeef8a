#!/usr/bin/env python3
"""recmerge_check.py MERGED WHOLE SHARD... - check recmerge's output.

MERGED is recmerge's stream of the shard streams SHARD... (any order),
WHOLE the stream of the same job run whole. Checks, from
formats/record.md's Shard streams:

- MERGED's header is shard 0's pairs without shard and stage, producer
  recmerge's, then for each shard in order each of its stage values as a
  shard_stage pair "K/N<TAB>value", then recmerge's own stage;
- its other pairs are WHOLE's (but for job, which only shards carry);
- its records are WHOLE's, record for record: type, flags (pieces),
  every metadata field and window field, the payload (uncompressed);
- its trailer counts are WHOLE's.

Prints 'ok: R records from N shards' or the first difference (exit 1).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rec_stream as rs  # noqa: E402


def read(path):
    with open(path, "rb") as f:
        return rs.read_stream(f.read())


def shard_of(pairs, path):
    v = dict(pairs).get("shard")
    if v is None:
        sys.exit("%s: no shard in its header" % path)
    k, n = v.split(b"/")
    return int(k), int(n)


def expected_header(shards, merged_pairs):
    """The header the spec gives, from the shards in shard order; the
    producer and the last stage are recmerge's, taken from MERGED."""
    n = len(shards)
    m = dict(merged_pairs)
    if not m.get("producer", b"").startswith(b"recmerge "):
        sys.exit("producer is %r" % m.get("producer"))
    want = []
    for k, v in shards[0]:
        if k in ("shard", "stage"):
            continue
        want.append((k, m["producer"] if k == "producer" else v))
    for i, pairs in enumerate(shards):
        want += [("shard_stage", b"%d/%d\t" % (i, n) + v)
                 for k, v in pairs if k == "stage"]
    last = merged_pairs[-1] if merged_pairs else ("", b"")
    if last[0] != "stage" or not last[1].startswith(b"recmerge "):
        sys.exit("the last pair is %r, not recmerge's stage" % (last,))
    return want + [last]


def strip(pairs, keys):
    return [(k, v) for k, v in pairs if k not in keys]


def same_item(a, b):
    if a.type != b.type:
        return "type %d, whole %d" % (a.type, b.type)
    fa, fb = rs.fields(a), rs.fields(b)
    for k in fa:
        if fa[k] != fb[k]:
            return "%s %r, whole %r" % (k, fa[k], fb[k])
    if bytes(a.data) != bytes(b.data):
        return "payload differs"
    return None


def main():
    merged, whole = read(sys.argv[1]), read(sys.argv[2])
    shards = {}
    n = None
    for path in sys.argv[3:]:
        pairs, _, _ = read(path)
        k, n = shard_of(pairs, path)
        shards[k] = pairs
    if sorted(shards) != list(range(n)):
        sys.exit("shards given: %s of %d" % (sorted(shards), n))
    shards = [shards[k] for k in range(n)]
    mp, mi, mt = merged
    wp, wi, wt = whole
    want = expected_header(shards, mp)
    if mp != want:
        for i, (x, y) in enumerate(zip(mp, want)):
            if x != y:
                sys.exit("header pair %d is %r, the spec gives %r"
                         % (i, x, y))
        sys.exit("header has %d pairs, the spec gives %d"
                 % (len(mp), len(want)))
    mine = strip(mp, ("producer", "stage", "shard_stage", "job"))
    theirs = strip(wp, ("producer", "stage", "shard_stage", "job"))
    if mine != theirs:
        sys.exit("header pairs %r, whole stream %r" % (mine, theirs))
    if len(mi) != len(wi):
        sys.exit("%d records, the whole stream %d" % (len(mi), len(wi)))
    for a, b in zip(mi, wi):
        why = same_item(a, b)
        if why:
            sys.exit("record %d (clip %d): %s" % (a.index, a.clip, why))
    for k in ("n_records", "n_items", "n_skipped"):
        if mt[k] != wt[k]:
            sys.exit("trailer %s %d, whole %d" % (k, mt[k], wt[k]))
    print("ok: %d records from %d shards" % (len(mi), n))


if __name__ == "__main__":
    main()
