#!/bin/sh
test_description='segment: audio items in pieces give the windows of the whole clip'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
PIECES="$PYTHON $TEST_DIRECTORY/py/segment_pieces.py"
STAGES="$PYTHON $TEST_DIRECTORY/py/segment_stages.py"
RSS="$PYTHON $TOP/scripts/bench-rss.py"

# seg_same IN N COPY_OPTS SEGMENT_ARGS...: segment's output for IN cut
# into pieces of N (rec-copy --pieces N COPY_OPTS) holds the windows of
# its output for IN, each record the clip_samples known when it was
# written and the clip's last one its length; recdump accepts it. The
# outputs are kept as po.K.rec and wo.K.rec and the comparison is added
# to the list "same" for seg_check (K counts the calls).
seg_same() {
	in=$1 n=$2 copt=$3 &&
	shift 3 &&
	k=$(($(wc -l <same) + 1)) &&
	rec-copy --pieces $n $copt <$in >p.rec &&
	segment -q "$@" p.rec >po.$k.rec &&
	segment -q "$@" $in >wo.$k.rec &&
	recdump -q po.$k.rec &&
	case "$copt" in
	*unknown*) unknown=--unknown-length ;;
	*) unknown= ;;
	esac &&
	echo "$in po.$k.rec wo.$k.rec --pieces $n $unknown" >>same
}

# seg_check: the comparisons seg_same listed, then a new list.
seg_check() {
	$PIECES same-each same
	ret=$?
	rm -f po.*.rec wo.*.rec &&
	: >same &&
	return $ret
}

# seg_sizes IN LEN HOP LAST: seg_same for pieces of 1, 2, 3, 7, around
# HOP and LEN, and bigger than any clip, described and copied; the pieces
# give the clip's length in turn from the start or only at the end, and
# end with a piece of samples or an empty one.
seg_sizes() {
	i=0 &&
	for n in 1 2 3 7 $(($3 - 1)) $3 $(($3 + 1)) $2 $(($2 + 1)) 1000000; do
		case $((i % 4)) in
		0) copt= ;;
		1) copt=--unknown-length ;;
		2) copt=--empty-last ;;
		3) copt="--unknown-length --empty-last" ;;
		esac
		i=$((i + 1)) &&
		seg_same $1 $n "$copt" --len $2 --hop $3 --last $4 &&
		seg_same $1 $n "$copt" --copy --len $2 --hop $3 --last $4 ||
		return 1
	done
}

test_expect_success 'set up audio streams' '
	# lengths at the edges of windows of 256 or 100 every 100 or 256
	# samples, one sample more or less; clip 33 is a skipped input
	$MK --kind audio --clips 34 --skip 33 --seed 8 \
		--lengths 0,1,2,3,7,99,100,101,199,200,201,255,256,257,299,300,301,355,356,357,455,456,457,511,512,513,767,768,769,1000,1024,1025,2047 \
		>edge.rec &&
	$MK --kind audio --clips 40 --len 0:3000 --skip 2,5 --seed 3 >a.rec &&
	$MK --kind audio --dtype f32 --channels 2 --clips 12 --len 0:2000 \
		--skip 4 --seed 5 >st.rec &&
	: >same
'

test_expect_success 'overlapping windows (len > hop), pad and drop' '
	seg_sizes edge.rec 256 100 pad &&
	seg_sizes edge.rec 256 100 drop &&
	seg_check
'

test_expect_success 'gaps between windows (len < hop), pad and drop' '
	seg_sizes edge.rec 100 256 pad &&
	seg_sizes edge.rec 100 256 drop &&
	seg_check
'

test_expect_success 'windows that touch (len = hop), pad and drop' '
	seg_sizes edge.rec 256 256 pad &&
	seg_sizes edge.rec 256 256 drop &&
	seg_check
'

test_expect_success '--last cover across pieces: overlapping, gaps, touching' '
	seg_sizes edge.rec 256 100 cover &&
	seg_sizes edge.rec 100 256 cover &&
	seg_sizes edge.rec 256 256 cover &&
	seg_check
'

test_expect_success 'clips of any length, two channels of f32' '
	seg_same a.rec 7 --unknown-length --len 1000 --hop 400 &&
	seg_same a.rec 401 "" --copy --len 1000 --hop 400 --last drop &&
	seg_same a.rec 999 --empty-last --len 300 --hop 1000 &&
	seg_same st.rec 3 --unknown-length --len 300 --hop 250 &&
	seg_same st.rec 251 --empty-last --copy --len 300 --hop 250 \
		--last drop &&
	seg_same a.rec 5 "" --len 1 --hop 1 &&
	seg_same a.rec 64 --unknown-length --len 5000 --last drop &&
	seg_check
'

test_expect_success 'against the reference cut, one stage and two' '
	rec-copy --pieces 37 --unknown-length <a.rec >p.rec &&
	segment -q --len 1000 --hop 400 p.rec >o.rec &&
	$PIECES check p.rec o.rec --stage 1000,400 &&
	segment -q --copy --len 300 --hop 1000 --last drop p.rec >o.rec &&
	$PIECES check p.rec o.rec --stage 300,1000,drop --copy &&
	segment -q --len 2048 --last drop p.rec |
		segment -q --len 512 --hop 256 --last drop >o.rec &&
	$PIECES check p.rec o.rec --stage 2048,2048,drop \
		--stage 512,256,drop &&
	segment -q --len 1000 --hop 300 p.rec |
		segment -q --copy --len 256 --hop 100 >o.rec &&
	$STAGES p.rec o.rec --stage 1000,300 --stage 256,100 --copy
'

test_expect_success 'two stages: the second cuts the first one'"'"'s windows' '
	for n in 1 299 1000 1001; do
		rec-copy --pieces $n --unknown-length <a.rec >p.rec &&
		segment -q --len 1000 --hop 300 p.rec |
			segment -q --len 256 --hop 100 >po.rec &&
		segment -q --len 1000 --hop 300 a.rec |
			segment -q --len 256 --hop 100 >wo.rec &&
		$PIECES same a.rec po.rec wo.rec --pieces $n --unknown-length &&
		segment -q --copy --len 1000 --hop 300 --last drop p.rec |
			segment -q --len 256 --hop 100 --last drop >po.rec &&
		segment -q --copy --len 1000 --hop 300 --last drop a.rec |
			segment -q --len 256 --hop 100 --last drop >wo.rec &&
		$PIECES same a.rec po.rec wo.rec --pieces $n --unknown-length ||
		return 1
	done
'

# 25 pieces: one windows record for the first, two for each after it, the
# windows that begin before the piece (copied from the hold, the carry
# and the piece) and those inside it (its own bytes, which go on by
# reference where the piece came in shared memory); the second begins at
# the piece'"'"'s first window, ceil(4096 k / 500) * 500.
test_expect_success 'a long clip: several windows records, in segment order' '
	$MK --kind audio --clips 1 --lengths 100000 >long.rec &&
	rec-copy --pieces 4096 --unknown-length <long.rec >p.rec &&
	segment -q --len 1000 --hop 500 p.rec >o.rec &&
	segment -q --len 1000 --hop 500 long.rec >wo.rec &&
	$PIECES same long.rec o.rec wo.rec --pieces 4096 --unknown-length &&
	recdump o.rec >dump &&
	test $(grep -c "^[0-9]* windows clip=0 " dump) = 49 &&
	sed -n "s/^[0-9]* windows .* offset=\([0-9]*\) .*/\1/p" dump \
		>offsets &&
	for k in $(seq 1 24); do
		first=$(( (4096 * k + 499) / 500 * 500 )) &&
		grep -qx "$first" offsets || return 1
	done &&
	sed -n "s/^[0-9]* windows .* segment=\([0-9]*\) .*/\1/p" dump >segs &&
	sort -n -c segs &&
	grep "^[0-9]* windows" dump | tail -n 1 >last &&
	test_grep "clip_samples=100000 " last &&
	test_grep "pad=yes" last
'

test_expect_success 'an item in pieces with no window is one skipped record' '
	$MK --kind audio --clips 2 --lengths 255,600 --seed 2 >short.rec &&
	rec-copy --pieces 7 --unknown-length --empty-last <short.rec >p.rec &&
	segment --len 256 --last drop p.rec >o.rec 2>err &&
	segment -q --len 256 --last drop short.rec >wo.rec &&
	$PIECES same short.rec o.rec wo.rec --pieces 7 --unknown-length &&
	test_grep "shorter than one window (255 samples < 256), skipped$" err &&
	test_grep "done: 2 records into 2 windows (0 padded), skipped 1 (1 shorter than one window)" err
'

# cut_short LEN HOP LAST [--copy]: items of edge.rec cut short after
# lengths around LEN and HOP (and after all their samples), in pieces of
# 1, 7 and 100, their length known or not: the reference's windows, then
# each skipped record with the segment index after them.
cut_short() {
	for n in 1 7 100; do
		for unknown in "" --unknown-length; do
			$PIECES cut-short edge.rec --pieces $n $unknown \
				--cut 1:1 --cut 4:7 --cut 6:99 --cut 7:100 \
				--cut 12:255 --cut 13:256 --cut 14:257 \
				--cut 16:299 --cut 17:300 --cut 22:457 \
				--cut 29:1000 --cut 30:1024 --cut 32:2000 \
				>c.rec &&
			segment -q --len $1 --hop $2 --last $3 $4 c.rec >o.rec &&
			recdump -q o.rec &&
			$PIECES check c.rec o.rec --stage $1,$2,$3 $4 \
				>/dev/null ||
			{ echo "differs: cut short, pieces of $n $unknown"; \
			  return 1; }
		done
	done
}

test_expect_success 'cut short: the last windows, then the skipped record' '
	cut_short 256 100 pad &&
	cut_short 256 100 drop --copy &&
	cut_short 100 256 drop &&
	cut_short 100 256 pad --copy &&
	cut_short 256 256 pad
'

test_expect_success 'cut short before any window: the skipped record alone' '
	$PIECES cut-short edge.rec --pieces 50 --cut 12:200 >c.rec &&
	segment -q --len 256 --last drop c.rec >o.rec &&
	$PIECES check c.rec o.rec --stage 256,256,drop &&
	recdump o.rec >dump &&
	grep " clip=12 " dump >c12 &&
	test $(wc -l <c12) = 1 &&
	test_grep "^[0-9]* skipped .*(200 samples kept): forged" c12
'

DUMP="$PYTHON $TEST_DIRECTORY/py/gpumel_rec.py dump"

# segments_in_order FILE: each clip's records in segment's output FILE
# take the segment indices 0, 1, 2, ... in turn, skipped records
# included (a windows record as many as its windows): recdump gives each
# record's n_windows, melpipe.stream (gpumel_rec.py dump) its clip and
# segment, skipped records' too.
segments_in_order() {
	recdump "$1" | grep -E "^[0-9]+ (audio|windows|skipped) " |
		sed "s/.* n_windows=\([0-9]*\) .*/\1/;t;s/.*/1/" >n.tmp &&
	$DUMP "$1" | cut -d" " -f2,5 >seg.tmp &&
	test $(wc -l <n.tmp) = $(wc -l <seg.tmp) &&
	paste -d" " seg.tmp n.tmp | awk "
		\$1 != clip { clip = \$1; want = 0 }
		\$2 != want { print \"clip \" \$1 \" segment \" \$2 \", want \" want; bad = 1 }
		{ want = \$2 + \$3 }
		END { exit bad }"
}

# skipped_kept IN OUT: IN's skipped records are in OUT, in order, as
# they were but for their segment index (field 5 of the dump); OUT may
# hold more (records that gave no window).
skipped_kept() {
	$DUMP "$1" | awk "\$1 == 4" | cut -d" " -f1-4,6- >sk.in &&
	$DUMP "$2" | awk "\$1 == 4" | cut -d" " -f1-4,6- >sk.out &&
	test -s sk.in &&
	grep -F -x -f sk.in sk.out >sk.both &&
	test_cmp sk.in sk.both
}

# two_stages IN A B: segment A | segment B on IN, whose clips are cut
# short in pieces (A, B: LEN,HOP,LAST,copy or describe). The output is
# a valid stream; every clip's records, skipped ones included, take the
# segment indices 0, 1, 2, ...; IN's skipped records are in it; and it
# is the reference's two-stage windows of the samples kept, each clip's
# skipped record after them (segment_stages.py).
two_stages() {
	set -- "$1" $(echo "$2" | tr , " ") $(echo "$3" | tr , " ") &&
	c1= c2= &&
	if test "$5" = copy; then c1=--copy; fi &&
	if test "$9" = copy; then c2=--copy; fi &&
	segment -q $c1 --len $2 --hop $3 --last $4 "$1" >s1.rec &&
	segment -q $c2 --len $6 --hop $7 --last $8 s1.rec >s2.rec &&
	recdump -q s2.rec &&
	segments_in_order s2.rec &&
	skipped_kept "$1" s2.rec &&
	$STAGES "$1" s2.rec --stage $2,$3,$4 --stage $6,$7,$8 $c2 >/dev/null
}

test_expect_success 'cut short: a second stage puts the skipped record after its windows' '
	$PIECES cut-short edge.rec --pieces 7 --unknown-length \
		--cut 1:1 --cut 14:257 --cut 29:1000 --cut 32:2000 >c.rec &&
	two_stages c.rec 256,100,pad,copy 100,37,pad,copy &&
	two_stages c.rec 256,100,pad,describe 100,37,drop,describe &&
	two_stages c.rec 100,256,drop,describe 64,16,cover,copy &&
	two_stages c.rec 256,256,pad,copy 300,300,drop,describe
'

test_expect_success 'a truncated WAV in pieces through two stages and gpumel' '
	$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py tone ok.wav \
		--frames 48000 --seed 8 &&
	mkdir T &&
	head -c $(($(wc -c <ok.wav) / 2)) ok.wav >T/cut.wav &&
	cp ok.wav T/whole.wav &&
	wavcat -q --piece-samples 4096 T >w.rec &&
	recdump -s w.rec >sum &&
	test_grep "^cut_short 1$" sum &&
	segment -q --copy --len 4000 w.rec |
		segment -q --copy --len 1000 --hop 300 >cc.rec &&
	segment -q --len 4000 w.rec |
		segment -q --len 1000 --hop 300 >dd.rec &&
	recdump -q cc.rec &&
	recdump -q dd.rec &&
	segments_in_order cc.rec &&
	segments_in_order dd.rec &&
	skipped_kept w.rec cc.rec &&
	skipped_kept w.rec dd.rec &&
	for s in cc dd; do
		gpumel -q --device cpu --n-fft 256 --n-mels 16 $s.rec >f.rec &&
		recdump -q f.rec &&
		skipped_kept w.rec f.rec || return 1
	done
'

# A clip of 100 MB (50M s16 samples) in pieces of 64K samples: segment
# keeps a window and a piece, not the clip (9 MiB here for either).
test_expect_success NOSAN 'peak memory: a clip of 50M samples as of 500K' '
	rec-gen -n 1 -l 500000 | rec-copy --pieces 65536 |
		$RSS small.rss segment -q --len 16000 --hop 8000 >/dev/null &&
	rec-gen -n 1 -l 50000000 | rec-copy --pieces 65536 |
		$RSS big.rss segment -q --len 16000 --hop 8000 >big.out &&
	rec-gen -n 1 -l 50000000 | rec-copy --pieces 65536 |
		$RSS copy.rss segment -q --copy --len 16000 --hop 8000 \
		>/dev/null &&
	small=$(cat small.rss) && big=$(cat big.rss) && copy=$(cat copy.rss) &&
	echo "peak RSS: $small KiB at 500K samples, $big KiB at 50M ($copy copied)" &&
	test $big -le $((small + 4096)) &&
	test $copy -le $((small + 4096)) &&
	recdump big.out | tail -n 2 | head -n 1 >last &&
	test_grep "clip_samples=50000000 " last
'

test_expect_success '--help says items in pieces are cut as one clip' '
	segment --help >help.out &&
	test_grep "item in pieces .* is cut as one clip" help.out
'

test_done
