#!/bin/sh
test_description='h5pack: a shard stream gives a shard file'
. "$(dirname "$0")/test-lib.sh"

# Shard streams are made from whole streams with rec-copy --shard, as
# wavcat --shard writes them (formats/record.md, Shard streams). A shard
# file (formats/hdf5.md, Shard files) holds the shard's own clips: /clips
# row r is clip K + r*N, every clip column holds the global index.

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
JOBOF="$PYTHON $TEST_DIRECTORY/py/recmerge_job.py"
FORGE="$PYTHON $TEST_DIRECTORY/py/recmerge_forge.py"

test_expect_success 'set up a features stream of 10 clips, 2 unusable' '
	$MK --clips 10 --rows 1:3 --shape 8,20 --skip 3,4 --seed 2 >f.rec &&
	JOB=$($JOBOF f.rec) && echo $JOB >job &&
	rec-copy --shard 1/3 --job $JOB <f.rec >s1.rec &&
	rec-copy --shard 4/7 --job $JOB <f.rec >s4.rec &&
	$MK --clips 2 --shape 8,20 --seed 3 >two.rec &&
	rec-copy --shard 5/7 --job $JOB <two.rec >empty.rec &&
	$MK --clips 6 --shape 8,20 --skip 1,4 --seed 4 >sk.rec &&
	rec-copy --shard 1/3 --job $($JOBOF sk.rec) <sk.rec >onlyskip.rec
'
JOB=$(cat job 2>/dev/null)

test_expect_success 'the shard file: its clips, global indices, shard and job' '
	h5pack -q -o s1.h5 s1.rec &&
	"$PYTHON" - s1.h5 $JOB <<-\PY
	import sys, h5py, numpy as np
	f = h5py.File(sys.argv[1], "r")
	assert f.attrs["shard"] == "1/3", f.attrs["shard"]
	assert f.attrs["job"] == sys.argv[2]
	assert f.attrs["clips"] == 10
	paths = [p.decode() for p in f["clips/path"][()]]
	assert len(paths) == 3, paths              # clips 1, 4, 7
	rows = np.concatenate([f[g]["clip"][()] for g in
	                       ("training", "validation", "testing")])
	assert sorted(set(rows.tolist())) == [1, 7], rows
	assert f["skipped/clip"][()].tolist() == [4]
	assert f["skipped/path"][0].decode() == paths[1]
	PY
'

test_expect_success 'a shard without a clip, or without a usable one, still gives a file' '
	h5pack -o e.h5 empty.rec 2>err &&
	test_grep "0 testing rows from 0 clips" err &&
	h5pack -q -o o.h5 onlyskip.rec &&
	"$PYTHON" - e.h5 o.h5 <<-\PY
	import sys, h5py
	for p, clips, skipped in ((sys.argv[1], 0, 0), (sys.argv[2], 2, 2)):
	    f = h5py.File(p, "r")
	    assert f["clips/path"].shape == (clips,), p
	    assert f["skipped/path"].shape == (skipped,), p
	    for g in ("training", "validation", "testing"):
	        assert f[g]["label"].shape == (0,), (p, g)
	        assert f[g]["stats_count"][()].sum() == 0, (p, g)
	PY
'

test_expect_success 'a whole stream without a clip is still refused' '
	$MK --clips 0 >none.rec &&
	test_must_fail h5pack -o n.h5 none.rec 2>err &&
	test_grep "holds no clips" err &&
	! test -e n.h5
'

test_expect_success 'a shard that lacks one of its clips, or holds another shard'"'"'s, is refused' '
	$FORGE s1.rec lack.rec --clips 1,7 &&
	test_must_fail h5pack -o x.h5 lack.rec 2>err &&
	test_grep "clip 4 of the 3 clips of shard 1/3 never appeared" err &&
	$FORGE s1.rec late.rec --clips 1,4 &&
	test_must_fail h5pack -o x.h5 late.rec 2>err &&
	test_grep "clip 7 of the 3 clips of shard 1/3" err &&
	$FORGE f.rec other.rec --clips 0,1,2 --set shard=1/3 --set job=$JOB &&
	test_must_fail h5pack -o x.h5 other.rec 2>err &&
	test_grep "clip index 0 in shard 1/3, which holds the clips whose index is 1 modulo 3" err &&
	$FORGE s1.rec bad.rec --set shard=3/3 &&
	test_must_fail h5pack -o x.h5 bad.rec 2>err &&
	test_grep "shard=.3/3., not K/N" err &&
	! test -e x.h5
'

test_expect_success 'a merged stream: shard_stage in provenance, job kept, no shard_stage attribute' '
	rec-copy --shard 0/2 --job $JOB <f.rec >a.rec &&
	rec-copy --shard 1/2 --job $JOB <f.rec >b.rec &&
	recmerge a.rec b.rec >m.rec &&
	h5pack -q -o m.h5 m.rec &&
	"$PYTHON" - m.h5 $JOB <<-\PY
	import sys, h5py
	f = h5py.File(sys.argv[1], "r")
	prov = [p.decode() if isinstance(p, bytes) else p
	        for p in f.attrs["provenance"]]
	assert "shard_stage" not in f.attrs
	assert f.attrs["job"] == sys.argv[2]
	shards = [p.split("\t")[0] for p in prov[:-2]]
	assert shards == sorted(shards) and set(shards) == {"0/2", "1/2"}, prov
	assert prov[-2].startswith("recmerge "), prov
	assert prov[-1].startswith("h5pack "), prov
	PY
'

test_done
