#!/bin/sh
test_description='recmerge: the shards of a job merged give the whole stream'
. "$(dirname "$0")/test-lib.sh"

# Shards are made from a whole stream with rec-copy --shard (the clips
# whose index is K modulo N, the header's shard and job set as wavcat
# --shard writes them). recmerge of them must give the whole stream
# record for record, and the header formats/record.md's Shard streams
# gives (tests/py/recmerge_check.py checks both).

CHECK="$PYTHON $TEST_DIRECTORY/py/recmerge_check.py"
FORGE="$PYTHON $TEST_DIRECTORY/py/recmerge_forge.py"
W="wavcat --rate 4096 --duration 1 DATA/"
G="gpumel --device cpu --n-fft 512 --hop 512 --n-mels 32 --no-center --dtype f32"

# make_shards STREAM N: STREAM.N.K.rec for K = 0..N-1, and in $shards
# their names, in reverse order (the order on the command line must not
# matter).
make_shards() {
	shards=
	k=0
	while [ $k -lt $2 ]; do
		rec-copy --shard $k/$2 --job $JOB <$1.rec >$1.$2.$k.rec &&
		shards="$1.$2.$k.rec $shards" &&
		k=$((k + 1)) || return 1
	done
}

# merge_is_whole STREAM N...: for each N, STREAM cut into N shards and
# merged again is STREAM.
merge_is_whole() {
	s=$1
	shift
	for n in "$@"; do
		make_shards $s $n &&
		recmerge $shards >$s.$n.merged &&
		$CHECK $s.$n.merged $s.rec $shards || return 1
	done
}

test_expect_success 'set up audio, windows and features streams, two inputs unusable' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" DATA --labels 3 \
		--per-label 4 --seconds 1 &&
	printf "not audio" >DATA/word0/broken_nohash_0.wav &&
	printf "" >DATA/word2/empty_nohash_0.wav &&
	$W >audio.rec 2>wavcat.err &&
	test_grep "skipped 2" wavcat.err &&
	JOB=$("$PYTHON" "$TEST_DIRECTORY/py/recmerge_job.py" audio.rec) &&
	echo $JOB >job &&
	segment --len 512 --hop 256 <audio.rec >windows.rec &&
	$G <windows.rec >features.rec &&
	$G <audio.rec >clipfeat.rec &&
	rec-copy --pieces 1000 --unknown-length <audio.rec >audio-p.rec &&
	rec-copy --pieces 3 <clipfeat.rec >features-p.rec &&
	$FORGE audio-p.rec cut.rec --cut-short 3 &&
	rec-gen -n 5 -t mixed -l 100 >small.rec &&
	recdump -s features-p.rec >sum.txt &&
	test_grep "pieces" sum.txt
'
JOB=$(cat job 2>/dev/null)

test_expect_success 'audio: 1, 2, 3, 7 and 20 shards (empty ones) merge to the whole' '
	merge_is_whole audio 1 2 3 7 20
'

test_expect_success 'windows (several records a clip): 1, 2, 3, 7 shards' '
	merge_is_whole windows 1 2 3 7
'

test_expect_success 'features: 1, 2, 3, 7 shards' '
	merge_is_whole features 1 2 3 7
'

test_expect_success 'items in pieces, audio and features: 1, 2, 3, 7 shards' '
	merge_is_whole audio-p 1 2 3 7 &&
	merge_is_whole features-p 1 2 3 7
'

test_expect_success 'an item cut short (a skipped record after a piece) passes' '
	merge_is_whole cut 2 3
'

test_expect_success 'fewer clips than shards: 7 shards of 5 clips, two empty' '
	JOB=$("$PYTHON" "$TEST_DIRECTORY/py/recmerge_job.py" small.rec) &&
	merge_is_whole small 7 &&
	recdump -s small.7.6.rec >empty.txt &&
	test_grep "records=0" empty.txt
'

test_expect_success 'any order on the command line, stdin among them' '
	make_shards audio 3 &&
	recmerge audio.3.1.rec audio.3.0.rec audio.3.2.rec >o1.rec &&
	recmerge audio.3.2.rec - audio.3.1.rec <audio.3.0.rec >o2.rec &&
	recdump o1.rec | grep -v "^header stage=recmerge\|^trailer" >d1 &&
	recdump o2.rec | grep -v "^header stage=recmerge\|^trailer" >d2 &&
	test_cmp d1 d2 &&
	$CHECK o2.rec audio.rec audio.3.0.rec audio.3.1.rec audio.3.2.rec
'

test_expect_success '-o FILE; compressed shards come out raw, --zstd compresses again' '
	make_shards features 2 &&
	recmerge -o merged.rec features.2.0.rec features.2.1.rec &&
	$CHECK merged.rec features.rec features.2.0.rec features.2.1.rec &&
	recmerge --zstd 19 features.2.0.rec features.2.1.rec >z.rec &&
	$CHECK z.rec features.rec features.2.0.rec features.2.1.rec &&
	test $(wc -c <z.rec) -lt $(wc -c <merged.rec) &&
	test_no_temp &&
	make_shards audio 2 &&
	rec-copy --shard 0/2 --job $JOB --zstd 3 <audio.rec >fz0.rec &&
	rec-copy --shard 1/2 --job $JOB --zstd 3 <audio.rec >fz1.rec &&
	recmerge fz1.rec fz0.rec >unz.rec &&
	$CHECK unz.rec audio.rec fz0.rec fz1.rec &&
	cp audio.2.0.rec fr0.rec && cp audio.2.1.rec fr1.rec &&
	recmerge fr1.rec fr0.rec >raw.rec &&
	test $(wc -c <unz.rec) = $(wc -c <raw.rec) &&
	test $(wc -c <fz0.rec) -lt $(wc -c <fr0.rec)
'

test_expect_success 'shards from fifos' '
	make_shards windows 3 &&
	mkfifo f0 f1 f2 &&
	{ cat windows.3.2.rec >f2 & } &&
	{ cat windows.3.0.rec >f0 & } &&
	{ cat windows.3.1.rec >f1 & } &&
	recmerge f0 f1 f2 >fifo.rec &&
	wait &&
	$CHECK fifo.rec windows.rec windows.3.0.rec windows.3.1.rec \
		windows.3.2.rec
'

test_expect_success 'a slow shard through process substitution: waited for, -v names it' '
	make_shards audio 3 &&
	bash -c "recmerge -v audio.3.0.rec \
		<(head -c 100 audio.3.1.rec; sleep 1; tail -c +101 audio.3.1.rec) \
		audio.3.2.rec" >slow.rec 2>slow.err &&
	cat slow.err &&
	$CHECK slow.rec audio.rec audio.3.0.rec audio.3.1.rec audio.3.2.rec &&
	# records: those of each clip, and the source record of each clip whose
	# file opened (all but the 2 skipped)
	test_grep "shard 0/3 .audio.3.0.rec.: 5 clips, 9 records" slow.err &&
	test_grep "waited most for shard 1/3 ./dev/fd/[0-9]*.: \\(0\\.[5-9]\\|[1-9]\\)" slow.err &&
	test_grep "done: 14 clips from 3 shards in 26 records, skipped 2" \
		slow.err
'

test_expect_success '-q says nothing; -v after it reports' '
	make_shards audio 2 &&
	recmerge -q audio.2.0.rec audio.2.1.rec >q.rec 2>q.err &&
	test_cmp /dev/null q.err &&
	test_q_v_later_wins "waited most for shard" recmerge \
		audio.2.0.rec audio.2.1.rec
'

test_expect_success 'each shard through its own stages, merged: the whole pipeline stream' '
	$W 2>/dev/null | segment --len 512 --hop 256 | $G >pipe.rec &&
	make_shards audio 3 &&
	for k in 0 1 2; do
		segment --len 512 --hop 256 <audio.3.$k.rec |
			$G >pipe.3.$k.rec 2>/dev/null || return 1
	done &&
	recmerge pipe.3.2.rec pipe.3.1.rec pipe.3.0.rec >pipe.merged &&
	$CHECK pipe.merged pipe.rec pipe.3.0.rec pipe.3.1.rec pipe.3.2.rec &&
	recdump pipe.merged >pipe.txt &&
	test_grep "shard_stage=2/3.tgpumel 0.1.0" pipe.txt
'

test_expect_success 'h5pack: the same dataset from the merged stream as from the whole' '
	make_shards features 3 &&
	recmerge features.3.0.rec features.3.1.rec features.3.2.rec |
		h5pack -o merged.h5 &&
	h5pack -o whole.h5 <features.rec &&
	"$PYTHON" "$TEST_DIRECTORY/py/recmerge_h5same.py" merged.h5 whole.h5 &&
	make_shards audio 7 &&
	recmerge $shards | h5pack -o amerged.h5 &&
	h5pack -o awhole.h5 <audio.rec &&
	"$PYTHON" "$TEST_DIRECTORY/py/recmerge_h5same.py" amerged.h5 awhole.h5
'

test_expect_success 'zero copy: into recmerge from segment, from recmerge into recdump' '
	rec-gen -n 4000 -l 2000 >big.rec &&
	make_shards big 2 &&
	SPLICED="output: .* MB handed to the pipe without a copy (vmsplice)" &&
	bash -c "recmerge -v <(segment -v --len 100 <big.2.0.rec 2>s0.err) \
		<(segment -v --len 100 <big.2.1.rec 2>s1.err)" 2>m.err |
		recdump -q &&
	test_grep "segment: $SPLICED" s0.err &&
	test_grep "segment: $SPLICED" s1.err &&
	test_grep "recmerge: $SPLICED" m.err &&
	recmerge big.2.0.rec big.2.1.rec | recdump >spliced.txt &&
	MELPIPE_ZERO_COPY=0 recmerge big.2.0.rec big.2.1.rec >copied.rec &&
	recdump copied.rec >copied.txt &&
	test_cmp copied.txt spliced.txt &&
	rm big*.rec
'

# peak_rss CLIPS: recmerge's maximum resident set (KiB) merging the 3
# shards of a CLIPS-clip stream, 4 KiB a clip, fed through fifos by
# rec-copy --shard (the shards are not stored). Clip lengths are the
# same for any CLIPS, so that only their number changes.
peak_rss() {
	rm -f p0 p1 p2 &&
	mkfifo p0 p1 p2 &&
	rec-gen -n $1 -t mixed -l 2000 >gen.rec &&
	for k in 0 1 2; do
		{ rec-copy --shard $k/3 --job $JOB <gen.rec >p$k & } ||
			return 1
	done &&
	/usr/bin/time -v recmerge -q p0 p1 p2 2>time.$1 >/dev/null &&
	wait &&
	rm gen.rec &&
	sed -n "s/.*Maximum resident set size (kbytes): //p" time.$1
}

test_expect_success NOSAN 'memory: the same for 40000 clips as for 4000' '
	test -x /usr/bin/time &&
	small=$(peak_rss 4000) &&
	large=$(peak_rss 40000) &&
	echo "peak RSS: $small KiB for 4000 clips, $large KiB for 40000" >&2 &&
	test "$small" -gt 0 &&
	test "$large" -lt $((small + small / 5 + 4096))
'

test_expect_success '--help says how to call it, what it refuses, the exit statuses' '
	recmerge --help >help &&
	test_grep "^Usage: recmerge \[OPTION\]... STREAM..." help &&
	test_grep "<(ssh a .wavcat --shard 0/2" help &&
	test_grep "^Exit status: 0 merged, 1 failure" help &&
	recmerge --version >version &&
	test_grep "^recmerge (melpipe) " version
'

test_expect_success 'the summary of one clip in one shard is in the singular' '
	rec-gen -n 1 -t audio -l 100 |
		rec-copy --shard 0/1 --job 0123456789abcdef0123456789abcdef01234567 \
		>one.rec &&
	recmerge one.rec >one.out 2>err &&
	test_grep "^recmerge: done: 1 clip from 1 shard in 1 record, skipped 0$" err
'

test_done
