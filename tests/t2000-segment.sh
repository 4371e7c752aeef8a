#!/bin/sh
test_description='segment: windows, offsets and indices against a reference'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/segment_check.py"
SAME="$PYTHON $TEST_DIRECTORY/py/segment_check.py --same"
STAGES="$PYTHON $TEST_DIRECTORY/py/segment_stages.py"

test_expect_success 'set up audio streams' '
	# lengths from 0 to 3000 samples: empty clips, clips shorter than a
	# window, exact multiples; clips 2 and 5 are skipped inputs
	$MK --kind audio --clips 40 --len 0:3000 --skip 2,5 --seed 3 >a.rec &&
	$MK --kind audio --clips 6 --len 1024 --seed 4 >exact.rec
'

# seg_cut LEN HOP LAST [IN]: segment's output must equal the reference's,
# with the windows described (the default) and copied (--copy).
seg_cut() {
	segment -q --len $1 --hop $2 --last $3 ${4:-a.rec} >s.rec &&
	$CHECK ${4:-a.rec} s.rec --stage $1,$2,$3 &&
	segment -q --copy --len $1 --hop $2 --last $3 ${4:-a.rec} >c.rec &&
	$CHECK --copy ${4:-a.rec} c.rec --stage $1,$2,$3
}

test_expect_success 'hop = len, pad and drop' '
	seg_cut 512 512 pad &&
	seg_cut 512 512 drop
'

test_expect_success 'overlapping windows (hop < len), pad and drop' '
	seg_cut 1000 400 pad &&
	seg_cut 1000 400 drop &&
	seg_cut 700 1 drop
'

test_expect_success 'gaps between windows (hop > len), pad and drop' '
	seg_cut 300 1000 pad &&
	seg_cut 300 1000 drop
'

test_expect_success 'windows of one sample; a window longer than any clip' '
	seg_cut 1 1 pad &&
	seg_cut 5000 5000 pad &&
	seg_cut 5000 5000 drop
'

test_expect_success 'lengths at the edges: one sample more or less' '
	$MK --kind audio --clips 16 --skip 15 --seed 8 \
		--lengths 0,1,2,255,256,257,511,512,513,767,768,769,1023,1024,1025 \
		>edge.rec &&
	for args in "256 256 pad" "256 256 drop" "256 100 pad" "256 100 drop" \
		"100 256 pad" "100 256 drop" "257 1 pad"; do
		set -- $args &&
		seg_cut $1 $2 $3 edge.rec || exit 1
	done
'

test_expect_success '--last cover: the fewest windows that hold every sample' '
	seg_cut 1000 400 cover &&
	seg_cut 700 1 cover &&
	seg_cut 300 1000 cover &&
	seg_cut 512 512 cover &&
	seg_cut 5000 5000 cover &&
	for args in "256 256" "256 100" "100 256" "257 1" "256 128"; do
		set -- $args &&
		seg_cut $1 $2 cover edge.rec || exit 1
	done &&
	# the counts --help gives: pad 2 and 160, cover 1 and 159
	$MK --kind audio --clips 2 --lengths 512,40960 --seed 9 >h.rec &&
	segment -q --len 512 --hop 256 --last cover h.rec | recdump >hc &&
	test_grep "clip=0 .*n_windows=1 " hc &&
	test_grep "clip=1 .*n_windows=159 " hc &&
	segment -q --len 512 --hop 256 h.rec | recdump >hp &&
	test_grep "clip=0 .*n_windows=2 " hp &&
	test_grep "clip=1 .*n_windows=160 " hp &&
	segment -q --len 512 --hop 256 --last cover h.rec |
		recdump -n 1 | grep -q "segment_last=cover"
'

test_expect_success '--hop defaults to --len, --last to pad' '
	segment -q --len 700 a.rec >d.rec &&
	segment -q --len 700 --hop 700 --last pad a.rec >e.rec &&
	$SAME d.rec e.rec &&
	$CHECK a.rec d.rec --stage 700,700,pad
'

test_expect_success 'clips that are whole windows give no padded window' '
	segment --len 256 exact.rec >x.rec 2>x.err &&
	$CHECK exact.rec x.rec --stage 256 &&
	test_grep "into 24 windows (0 padded)" x.err
'

test_expect_success 'every dtype, two interleaved channels' '
	for dt in s16 f32 f16 bf16; do
		$MK --kind audio --dtype $dt --channels 2 --clips 12 \
			--len 0:2000 --skip 4 --seed 5 >c.rec &&
		mv c.rec in.rec &&
		seg_cut 300 250 pad in.rec &&
		seg_cut 300 250 drop in.rec || exit 1
	done
'

# Where the first stage pads, the second takes its windows as the clip's
# samples alone (t2003): segment_stages.py places the windows in the clip;
# segment_check.py cuts stage after stage, and agrees where no first-stage
# window is padded.
test_expect_success 'two stages: the second numbers windows within the clip' '
	segment -q --len 2048 --last drop a.rec |
		segment -q --len 512 --hop 256 --last drop >two.rec &&
	$CHECK a.rec two.rec --stage 2048,2048,drop --stage 512,256,drop &&
	segment -q --len 1024 a.rec | segment -q --len 100 >two.rec &&
	$STAGES a.rec two.rec --stage 1024 --stage 100 &&
	segment -q --len 1000 --hop 300 a.rec | segment -q --len 256 --hop 100 >two.rec &&
	$STAGES a.rec two.rec --stage 1000,300 --stage 256,100
'

test_expect_success 'two stages: described and copied windows mix' '
	segment -q --copy --len 1000 --hop 300 a.rec |
		segment -q --len 256 --hop 100 >two.rec &&
	$STAGES a.rec two.rec --stage 1000,300 --stage 256,100 &&
	segment -q --len 1000 --hop 300 a.rec |
		segment -q --copy --len 256 --hop 100 >two.rec &&
	$STAGES --copy a.rec two.rec --stage 1000,300 --stage 256,100
'

test_expect_success 'described windows: one record per clip, version 2' '
	segment -q --len 512 a.rec >w.rec &&
	segment -q --copy --len 512 a.rec >c.rec &&
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import h5pack_mkrec as m
_, a, _ = m.read_stream(open(\"a.rec\", \"rb\").read())
_, w, _ = m.read_stream(open(\"w.rec\", \"rb\").read())
_, c, _ = m.read_stream(open(\"c.rec\", \"rb\").read())
assert len(w) == len(a), (len(w), len(a))
assert any(i[\"type\"] == m.T_WINDOWS for i in w)
assert all(i[\"type\"] != m.T_WINDOWS for i in c)
assert m.expand_windows(w) == c
" &&
	test $(head -c 7 c.rec | tail -c 1 | od -An -tu1) = 1 &&
	test $(wc -c <w.rec) -lt $(wc -c <c.rec)
'

test_expect_success 'a clip with no window becomes a skipped record, warned' '
	segment --len 2000 --last drop a.rec >s.rec 2>err &&
	$CHECK a.rec s.rec --stage 2000,2000,drop &&
	n=$($PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import h5pack_mkrec as m
_, it, _ = m.read_stream(open(\"a.rec\", \"rb\").read())
print(sum(1 for i in it if i[\"type\"] == 2 and i[\"dim0\"] < 2000))") &&
	test $n -gt 0 &&
	test $(grep -c "shorter than one window (.*), skipped$" err) = $n &&
	test_grep "skipped $((n + 2)) ($n shorter than one window)" err &&
	segment -q --len 2000 --last drop a.rec >/dev/null 2>err.q &&
	test ! -s err.q
'

test_expect_success 'empty clips give a skipped record even with pad' '
	$MK --kind audio --clips 3 --len 0 >empty.rec &&
	segment --len 10 empty.rec >s.rec 2>err &&
	$CHECK empty.rec s.rec --stage 10 &&
	test_grep "(0 samples < 10)" err
'

test_expect_success 'the output header records the stage; a second one wins' '
	segment -q --len 1024 --hop 1024 a.rec |
		segment -q --len 256 --hop 256 --last drop >h.rec &&
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import h5pack_mkrec as m
p, _, _ = m.read_stream(open(\"h.rec\", \"rb\").read())
for k, v in p: print(k.decode() + \"=\" + v.decode())" >h.txt &&
	test_grep "^segment_len=256$" h.txt &&
	test_grep "^segment_hop=256$" h.txt &&
	test_grep "^segment_last=drop$" h.txt &&
	test $(grep -c "^segment_len=" h.txt) = 1 &&
	test $(grep -c "^stage=segment 0.1.0	segment -q --len" h.txt) = 2 &&
	test_grep "^producer=segment " h.txt
'

test_expect_success 'standard input, a FILE and -o FILE give the same stream' '
	segment -q --len 333 <a.rec >1.rec &&
	segment -q --len 333 - <a.rec >2.rec &&
	segment -q --len 333 -o 3.rec a.rec &&
	$SAME 1.rec 2.rec &&
	$SAME 1.rec 3.rec
'

test_expect_success '-v reports records, bytes and time' '
	segment -v --len 512 a.rec >/dev/null 2>v.err &&
	test_grep "read [0-9]* records" v.err &&
	test_grep "waiting for input" v.err &&
	test_grep "^segment: done: 38 records into" v.err
'

test_done
