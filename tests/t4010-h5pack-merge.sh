#!/bin/sh
test_description='h5pack --merge: a job'"'"'s shard files give the whole job'"'"'s dataset'
. "$(dirname "$0")/test-lib.sh"

# Each stream is cut into N shard streams (rec-copy --shard, as wavcat
# --shard writes them), each shard is packed on its own (another
# compression and chunk size than the whole run's, to show they do not
# matter), and h5pack --merge of the shard files must equal h5pack of
# the whole stream: every dataset, chunk shape and filter, every
# attribute; provenance, stream_header and job are checked against the
# shards (tests/py/h5merge_same.py), statistics within 1e-12.

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
JOBOF="$PYTHON $TEST_DIRECTORY/py/recmerge_job.py"
SAME="$PYTHON $TEST_DIRECTORY/py/h5merge_same.py"
MEL="gpumel --device cpu --top-db 80 --n-mels 16 --n-fft 256 --hop 64"

# merge_is_whole STREAM COMPRESS N...: for each N, STREAM's shard files
# merged (-c COMPRESS, 4K chunks) equal STREAM packed whole alike.
merge_is_whole() {
	s=$1 c=$2
	shift 2
	job=$($JOBOF $s.rec) &&
	h5pack -q -c $c --chunk-size 4K -o $s.whole.h5 $s.rec || return 1
	for n in "$@"; do
		files= k=0
		while [ $k -lt $n ]; do
			rec-copy --shard $k/$n --job $job <$s.rec >$s.$k.rec &&
			h5pack -q -c zstd --chunk-size 8K -o $s.$n.$k.h5 \
				$s.$k.rec &&
			files="$s.$n.$k.h5 $files" &&
			k=$((k + 1)) || return 1
		done
		h5pack -q --merge -c $c --chunk-size 4K -o $s.$n.h5 $files &&
		$SAME $s.whole.h5 $s.$n.h5 $files || return 1
	done
}

test_expect_success 'set up streams: features and audio, fixed and ragged, unusable inputs' '
	$MK --kind audio --len 500:5000 --clips 20 --skip 3,11 --seed 3 >ar.rec &&
	$MK --kind audio --len 3000 --clips 12 --skip 5 --seed 4 >af.rec &&
	$MEL -q <ar.rec >g_ragged.rec &&
	$MEL -q <af.rec >g_fixed.rec &&
	$MK --dtype f16 --clips 25 --rows 1:3 --shape 24,90 --skip 2 \
		--seed 6 >h_fixed.rec &&
	$MK --dtype bf16 --clips 15 --frames 1:150 --shape 24,1 --skip 2 \
		--seed 5 >b_ragged.rec &&
	$MK --kind audio --dtype s16 --channels 2 --len 100:3000 --clips 20 \
		--skip 7 --seed 7 >s_ragged.rec &&
	$MK --kind audio --dtype f32 --len 2000 --clips 15 --seed 8 \
		>f_fixed.rec &&
	$MK --clips 5 --rows 1:2 --shape 8,30 --skip 1 --seed 9 >small.rec &&
	rec-copy --pieces 7 <g_ragged.rec >gp_ragged.rec &&
	rec-copy --pieces 100 --unknown-length <ar.rec >ap_ragged.rec &&
	rec-copy --pieces 64 <h_fixed.rec >hp_fixed.rec
'

test_expect_success 'features, ragged and fixed: 1, 2, 3, 7 shards' '
	merge_is_whole g_ragged none 1 2 3 7 &&
	merge_is_whole g_fixed gzip 1 2 3 7
'

test_expect_success 'f16 and bf16 rows, several a clip' '
	merge_is_whole h_fixed zstd 1 2 3 7 &&
	merge_is_whole b_ragged none 2 3 7
'

test_expect_success 'audio: stereo s16 ragged, mono f32 fixed' '
	merge_is_whole s_ragged gzip 1 2 3 7 &&
	merge_is_whole f_fixed none 2 7
'

test_expect_success 'items in pieces (rec-copy --pieces), audio and features' '
	merge_is_whole gp_ragged zstd 2 3 7 &&
	merge_is_whole ap_ragged none 3 7 &&
	merge_is_whole hp_fixed gzip 2 3
'

test_expect_success '7 shards of 5 clips: empty shard files merge' '
	merge_is_whole small none 7 &&
	"$PYTHON" -c "import h5py, sys; f = h5py.File(sys.argv[1], \"r\"); \
assert f[\"clips/path\"].shape == (0,)" small.7.6.h5
'

test_expect_success 'the default compression and chunk size are h5pack'"'"'s' '
	h5pack -q -o d.whole.h5 g_fixed.rec &&
	h5pack -q --merge -o d.h5 g_fixed.3.0.h5 g_fixed.3.1.h5 g_fixed.3.2.h5 &&
	$SAME d.whole.h5 d.h5 g_fixed.3.0.h5 g_fixed.3.1.h5 g_fixed.3.2.h5
'

# Refusals: one line naming the file and the field; no output, and a
# previous output untouched.
refused() {
	cp before.h5 out.h5 &&
	test_must_fail h5pack --merge -o out.h5 "$@" 2>err &&
	test $(wc -l <err) = 1 &&
	cmp before.h5 out.h5 &&
	test_no_temp
}

test_expect_success 'set up refusals: shards of another job and other parameters' '
	cp g_ragged.whole.h5 before.h5 &&
	G=g_ragged.3 &&
	rec-copy --shard 1/3 --job 0123456789abcdef0123456789abcdef01234567 \
		<g_ragged.rec >other.rec &&
	h5pack -q -o other-job.h5 other.rec &&
	gpumel --device cpu --top-db 80 --n-mels 8 --n-fft 256 --hop 64 -q \
		<ar.rec >m8.rec &&
	rec-copy --shard 1/3 --job $($JOBOF g_ragged.rec) <m8.rec >m8s.rec &&
	h5pack -q -o other-mels.h5 m8s.rec &&
	head -c 3000 $G.1.h5 >cut.h5 &&
	cp $G.1.h5 bad.h5 &&
	printf "XXXXXXXX" | dd of=bad.h5 conv=notrunc 2>/dev/null &&
	sz=$(wc -c <$G.1.h5) &&
	head -c $((sz - 200)) $G.1.h5 >tail.h5
'

test_expect_success 'refused: a missing shard, a shard twice' '
	G=g_ragged.3 &&
	refused $G.0.h5 $G.2.h5 && test_grep "shard 1/3 is missing" err &&
	refused $G.0.h5 $G.1.h5 $G.2.h5 $G.1.h5 &&
	test_grep "$G.1.h5.: shard 1/3 is given twice (also .$G.1.h5.)" err &&
	refused $G.0.h5 g_ragged.2.1.h5 $G.2.h5 &&
	test_grep "g_ragged.2.1.h5.: shard is .1/2., in .$G.0.h5. .0/3.: another number of shards" err
'

test_expect_success 'refused: another job, other parameters, a whole dataset' '
	G=g_ragged.3 &&
	refused $G.0.h5 other-job.h5 $G.2.h5 &&
	test_grep "other-job.h5.: job is .0123456789abcdef.*a shard of another job" err &&
	refused $G.0.h5 other-mels.h5 $G.2.h5 &&
	test_grep "other-mels.h5.: n_mels is .8., in .$G.0.h5. .16.: the shards do not agree" err &&
	refused g_ragged.whole.h5 &&
	test_grep "g_ragged.whole.h5.: no .shard. in its header: a whole dataset" err
'

test_expect_success 'refused: a cut or corrupt file, not HDF5 at all (the library'"'"'s reason)' '
	G=g_ragged.3 &&
	refused $G.0.h5 cut.h5 $G.2.h5 &&
	test_grep "unable to .*cut.h5" err &&
	refused $G.0.h5 bad.h5 $G.2.h5 &&
	test_grep "unable to open .bad.h5.: " err &&
	refused $G.0.h5 g_ragged.rec $G.2.h5 &&
	test_grep "unable to open .g_ragged.rec.: " err &&
	refused $G.0.h5 tail.h5 $G.2.h5 &&
	test_grep "tail.h5" err
'

test_expect_success 'usage: --merge needs files, not stdin; -o; --merge without a shard writes nothing' '
	test_usage_error h5pack --merge -o x.h5 &&
	test_usage_error h5pack --merge -o x.h5 - &&
	test_usage_error h5pack --merge a.h5 &&
	! test -e x.h5
'

test_done
