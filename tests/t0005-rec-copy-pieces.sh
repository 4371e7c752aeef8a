#!/bin/sh
# rec-copy --pieces, the test tool that re-cuts items into pieces for the
# stages' tests: its output is a valid stream (recdump) that joins back
# (rec_stream.join()) into the stream it was cut from, for audio and
# features, every dtype, piece sizes from 1 to more than an item, with
# --unknown-length and --empty-last.

test_description='rec-copy --pieces cuts items into pieces that join back'
. "$(dirname "$0")/test-lib.sh"

CHECK="$PYTHON $TEST_DIRECTORY/py/rec_join_check.py"

for t in audio features mixed; do
	[ $t = mixed ] && dtypes=s16 || dtypes="s16 f32 f16 bf16"
	for d in $dtypes; do
		test_expect_success "$t $d: pieces join back" '
			rec-gen -t $t -d $d -n 3 -l 300 -s 2 >whole.rec &&
			for n in 1 7 299 300 301; do
				for x in "" --unknown-length --empty-last \
					"--unknown-length --empty-last"; do
					rec-copy --pieces $n --hop 3 $x \
						<whole.rec >p.rec &&
					recdump -q p.rec &&
					$CHECK whole.rec p.rec $n >out &&
					case $n in
					300|301) test_grep "^[0-9]* items from" out ;;
					*) ! test_grep "^\([0-9]*\) items from \1 records" out ;;
					esac || return 1
				done
			done
		'
	done
done

test_expect_success 'pieces carry more, cont and offsets as the spec says' '
	rec-gen -t audio -n 1 -l 10 >one.rec &&
	rec-copy --pieces 4 <one.rec | recdump >dump &&
	grep "^[0-9] audio" dump | sed "s/.*offset=\([0-9]*\).*piece=\([a-z,]*\).*/\1 \2/" >got &&
	printf "0 more\n4 more,cont\n8 cont\n" >want &&
	test_cmp want got &&
	rec-copy --pieces 4 --hop 5 --empty-last --unknown-length <one.rec |
		recdump >dump &&
	grep "^[0-9] audio" dump | sed "s/.*offset=\([0-9]*\) clip_samples=\([0-9]*\).*dims=\([0-9]*\)x.*piece=\([a-z,]*\).*/\1 \2 \3 \4/" >got &&
	printf "0 0 4 more\n4 0 4 more,cont\n8 0 2 more,cont\n10 10 0 cont\n" >want &&
	test_cmp want got
'

# -n N counts data records, as its help says (and recdump -n does): the
# listing up to the Nth data record, source records before it included;
# with --shard, the shard's own.
test_expect_success '-n counts data records; source records come along' '
	S=$TEST_DIRECTORY/golden/good-source.rec &&
	recdump "$S" | grep -E "^[0-9]+ " >all &&
	ndata=$(grep -c -E "^[0-9]+ (audio|features|windows|skipped) " all) &&
	test $ndata -ge 3 &&
	n=1 &&
	while test $n -le $ndata; do
		awk -v n=$n "/^[0-9]+ (audio|features|windows|skipped) /{d++} {print} d==n{exit}" \
			all >want &&
		rec-copy -n $n --no-trailer <"$S" >c.rec &&
		{ recdump c.rec 2>/dev/null || :; } | grep -E "^[0-9]+ " >got &&
		test_cmp want got &&
		n=$((n + 1)) || return 1
	done &&
	J=0123456789abcdef0123456789abcdef01234567 &&
	rec-gen -n 7 >seven.rec &&
	rec-copy --shard 1/3 --job $J -n 2 <seven.rec | recdump >s.dump &&
	grep -E "^[0-9]+ (audio|features|windows|skipped) " s.dump |
		sed "s/.* clip=\([0-9]*\) .*/\1/" >clips &&
	printf "1\n4\n" >want &&
	test_cmp want clips
'

test_expect_success 'features pieces: offsets step by the hop' '
	rec-gen -t features -n 1 -l 10 >f.rec &&
	rec-copy --pieces 4 --hop 160 <f.rec | recdump >dump &&
	grep "^[0-9] features" dump | sed "s/.*offset=\([0-9]*\).*/\1/" >got &&
	printf "0\n640\n1280\n" >want &&
	test_cmp want got &&
	test_must_fail rec-copy --pieces 4 <f.rec >/dev/null 2>err &&
	test_grep "no hop_length" err
'

test_done
