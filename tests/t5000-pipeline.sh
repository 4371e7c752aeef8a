#!/bin/sh
test_description='the four stages end to end'
. "$(dirname "$0")/test-lib.sh"

PIPE_W="wavcat --rate 4096 --duration 2 DATA/"
PIPE_S="segment --len 512 --hop 512"
PIPE_G="gpumel --device cpu --n-fft 512 --hop 512 --n-mels 32 --no-center --dtype f32"

test_expect_success 'make a small labelled dataset' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" DATA --labels 3 \
		--per-label 6 --seconds 2 &&
	test $(find DATA -name "*.wav" | wc -l) = 18
'

test_expect_success 'the issue command gives every clip, window, label and split' '
	$PIPE_W | $PIPE_S | $PIPE_G | h5pack -o out.h5 &&
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_check.py" DATA out.h5 \
		--len 512 --hop 512 >check.out &&
	cat check.out &&
	test_grep "18 clips" check.out
'

test_expect_success 'a stage swapped for its recorded stream gives the same dataset' '
	$PIPE_W >clips.rec &&
	$PIPE_S <clips.rec >segs.rec &&
	$PIPE_G <segs.rec >feats.rec &&
	recdump -q feats.rec &&
	h5pack -o replay.h5 <feats.rec &&
	"$PYTHON" -c "
import h5py, numpy as np, sys
a, b = h5py.File(\"out.h5\"), h5py.File(\"replay.h5\")
for g in (\"training\", \"validation\", \"testing\"):
    for d in (\"features\", \"label\", \"clip\", \"segment\", \"offset\"):
        if not np.array_equal(a[g][d][()], b[g][d][()]):
            sys.exit(g + \"/\" + d + \" differs\")
"
'

test_expect_success 'features-windows records: the dataset of their windows one by one' '
	recdump -s feats.rec >sum &&
	test_grep "^type features-windows 18$" sum &&
	test_grep "^feature_windows 288$" sum &&
	test_grep "^type features 0$" sum &&
	rec-copy --expand <feats.rec >featsx.rec &&
	recdump -s featsx.rec >sumx &&
	test_grep "^type features 288$" sumx &&
	for o in "-c zstd --chunk-size 4K -j 2" "--chunk-size 4K" ""; do
		h5pack $o -o fw.h5 <feats.rec &&
		h5pack $o -o fwx.h5 <featsx.rec &&
		HDF5_PLUGIN_PATH=$MELPIPE_BIN/plugins \
			test_same_datasets fw.h5 fwx.h5 || return 1
	done &&
	test_same_datasets replay.h5 fwx.h5
'

test_expect_success 'features-windows records in the ragged layout: the same too' '
	"$PYTHON" -c "
import sys
from melpipe.stream import read_stream, expand, Writer
pairs, items, _ = read_stream(open(\"feats.rec\", \"rb\").read(),
                              sources=True)
pairs = [(k, v) for k, v in pairs if k not in (\"segment_len\", \"duration\")]
for name, its in ((\"rw.rec\", items), (\"rx.rec\", list(expand(items)))):
    with open(name, \"wb\") as f, Writer(f, pairs) as w:
        for it in its:
            w.write(it)
" &&
	recdump -s rw.rec >rsum &&
	test_grep "^type features-windows 18$" rsum &&
	h5pack -o rw.h5 <rw.rec &&
	h5pack -o rx.h5 <rx.rec &&
	"$PYTHON" -c "
import h5py; assert \"start\" in h5py.File(\"rw.h5\")[\"training\"]" &&
	test_same_datasets rw.h5 rx.h5
'

test_expect_success 'clips in pieces: segment cuts them as whole, the same dataset' '
	rec-copy --pieces 1000 --unknown-length <clips.rec |
		$PIPE_S | $PIPE_G | h5pack -o pieces.h5 &&
	"$PYTHON" -c "
import h5py, numpy as np, sys
a, b = h5py.File(\"out.h5\"), h5py.File(\"pieces.h5\")
for g in (\"training\", \"validation\", \"testing\"):
    for d in (\"features\", \"label\", \"clip\", \"segment\", \"offset\"):
        if not np.array_equal(a[g][d][()], b[g][d][()]):
            sys.exit(g + \"/\" + d + \" differs\")
"
'

test_expect_success 'wavcat writes clips in pieces itself: the same dataset' '
	wavcat --piece-samples 1000 --rate 4096 --duration 2 DATA/ |
		$PIPE_S | $PIPE_G | h5pack -o wpieces.h5 &&
	"$PYTHON" -c "
import h5py, numpy as np, sys
a, b = h5py.File(\"out.h5\"), h5py.File(\"wpieces.h5\")
for g in (\"training\", \"validation\", \"testing\"):
    for d in (\"features\", \"label\", \"clip\", \"segment\", \"offset\"):
        if not np.array_equal(a[g][d][()], b[g][d][()]):
            sys.exit(g + \"/\" + d + \" differs\")
"
'

test_expect_success 'two segment stages in a row: 1024-sample windows cut into 512' '
	$PIPE_W | segment --len 1024 --hop 1024 | $PIPE_S | $PIPE_G |
		h5pack -o two.h5 &&
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_check.py" DATA two.h5 \
		--len 512 --hop 512
'

test_expect_success 'two stages with overlapping first windows: 2048/1024 then 512/256' '
	$PIPE_W | segment --len 2048 --hop 1024 | segment --len 512 --hop 256 |
		$PIPE_G | h5pack -o overlap.h5 &&
	"$PYTHON" -c "
import h5py, numpy as np, sys
f = h5py.File(\"overlap.h5\")
clip = np.concatenate([f[g][\"clip\"][()] for g in (\"training\", \"validation\", \"testing\")])
seg = np.concatenate([f[g][\"segment\"][()] for g in (\"training\", \"validation\", \"testing\")])
off = np.concatenate([f[g][\"offset\"][()] for g in (\"training\", \"validation\", \"testing\")])
# 8192 samples: parents at 0, 1024, ..., 7168, each cut into children at
# 0, 256, ..., 1792 (the last padded); the last parent holds 1024 samples
# of the clip and 1024 zeros, no audio: children at 0, 256, 512, 768 (the
# last padded) only. 7 x 8 + 4 per clip.
want_off = sorted([p + c for p in range(0, 7168, 1024)
                   for c in range(0, 2048, 256)] +
                  [7168 + c for c in range(0, 1024, 256)])
for c in np.unique(clip):
    s, o = seg[clip == c], off[clip == c]
    if list(s) != list(range(60)) or sorted(o) != want_off:
        sys.exit(\"clip %d: segments %s offsets %s\" % (c, s, o))
if len(np.unique(clip)) != 18:
    sys.exit(\"clips: %d\" % len(np.unique(clip)))
"
'

test_expect_success 'an unusable input is listed in /skipped and the run goes on' '
	cp -R DATA BAD &&
	printf "this is not audio" >BAD/word1/broken_nohash_0.wav &&
	wavcat --rate 4096 --duration 2 BAD/ 2>wavcat.err | $PIPE_S | $PIPE_G |
		h5pack -o bad.h5 &&
	test_grep "broken_nohash_0.wav" wavcat.err &&
	"$PYTHON" -c "
import h5py, sys
f = h5py.File(\"bad.h5\")
p = [x.decode() for x in f[\"skipped\"][\"path\"][()]]
sys.exit(0 if p == [\"word1/broken_nohash_0.wav\"] else str(p))
"
'

test_expect_success 'no usable input: the stages exit 0, h5pack 1 and no file' '
	mkdir -p NONE/word1 &&
	printf "not audio" >NONE/word1/a.wav &&
	printf "nor this" >NONE/word1/b.wav &&
	wavcat --rate 4096 --duration 2 NONE/ >none.rec 2>w.err &&
	test_grep "a.wav" w.err &&
	$PIPE_S <none.rec >none-s.rec &&
	$PIPE_G <none-s.rec >none-g.rec &&
	test_expect_code 1 h5pack -o none.h5 <none-g.rec 2>h.err &&
	test_grep "no clip was usable: all 2 inputs were skipped" h.err &&
	test ! -e none.h5
'

test_expect_success 'a failing stage leaves no dataset and fails the pipeline' '
	cp out.h5 keep.h5 &&
	cat >fail.sh <<-\EOS &&
	set -o pipefail 2>/dev/null || exit 0
	wavcat --rate 4096 --duration 2 DATA/ | head -c 100000 |
		segment --len 512 --hop 512 | h5pack -o out.h5
	EOS
	test_must_fail bash fail.sh 2>fail.err &&
	cmp out.h5 keep.h5 &&
	test -z "$(ls -A | grep "^\.out\.h5")"
'

test_expect_success 'an audio or HDF5 file for a stream, an empty pipe: said so' '
	wav=$(find DATA -name "*.wav" | head -n 1) &&
	for st in "segment --len 512" "gpumel --device cpu" "h5pack -o x.h5" \
		"recmerge" "recdump"; do
		test_expect_code 1 $st "$wav" 2>err &&
		test_grep "bad magic .*: this is an audio file (WAV); wavcat reads audio files$" err &&
		test_expect_code 1 $st out.h5 2>err &&
		test_grep "bad magic .*: this is an HDF5 file" err || return 1
	done &&
	for st in "segment --len 512" "gpumel --device cpu" "h5pack -o x.h5" \
		"recdump"; do
		(exit 1) | test_expect_code 1 $st 2>err &&
		test_grep "^${st%% *}: stdin: record 0 at byte 0: empty input (no header record): the stage before wrote nothing" err || return 1
	done &&
	test ! -e x.h5
'

test_expect_success VALGRIND 'every stage is clean under valgrind' '
	VG="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite" &&
	$VG wavcat --rate 4096 --duration 2 -j 2 DATA/ >vg-clips.rec &&
	for i in $(seq 100 220); do
		echo "gone/a_path_long_enough_to_fill_the_sort_buffer_$i.wav"
	done >vg-list.txt &&
	$VG wavcat -v --sort-buffer 4K --rate 4096 --duration 2 -j 2 DATA/ \
		@vg-list.txt 2>vg-spill.err >vg-spill.rec &&
	test_grep "spilled [0-9]* inputs" vg-spill.err &&
	$VG segment --len 512 --hop 512 <vg-clips.rec >vg-segs.rec &&
	$VG gpumel --device cpu -j 2 --n-fft 512 --hop 512 --n-mels 32 \
		--no-center <vg-segs.rec >vg-feats.rec &&
	$VG h5pack -o vg.h5 <vg-feats.rec &&
	$VG recdump -q vg-feats.rec &&
	test -f vg.h5
'

# threads_of PROG ERR: the thread count PROG's -v line in ERR reports.
threads_of() {
	case $1 in
	wavcat) sed -n "s/^wavcat: threads (\([0-9]*\),.*/\1/p" "$2" ;;
	gpumel) sed -n "s/^gpumel: backend cpu: fftw3f, \([0-9]*\) thread.*/\1/p" "$2" ;;
	h5pack) sed -n "s/.*compression threads (\([0-9]*\)).*/\1/p" "$2" ;;
	esac
}

test_expect_success TASKSET 'each stage defaults to the CPUs it may run on' '
	n=$(nproc) &&
	for cpus in "" 0; do
		run=${cpus:+taskset -c $cpus} &&
		$run wavcat -v --rate 4096 --duration 2 DATA/ 2>w.err |
		$run gpumel -v --device cpu --n-fft 512 --hop 512 --n-mels 32 \
			--no-center 2>g.err |
		$run h5pack -v -c zstd -o aff.h5 2>h.err &&
		all=${cpus:+1} &&
		all=${all:-$n} &&
		for p in wavcat gpumel h5pack; do
			err=$(echo $p | cut -c1).err &&
			# wavcat: no more than its 18 clips; h5pack: 8 at most
			case $p in
			wavcat) cap=18 ;; h5pack) cap=8 ;; *) cap=$all ;;
			esac &&
			echo $((all < cap ? all : cap)) >want &&
			threads_of $p $err >got &&
			test_cmp want got || exit 1
		done
	done
'

# gpumel frames a clip in pieces as the clip in one record and writes
# its features in pieces, unclamped; h5pack joins them and raises them to
# the item's maximum - top_db (80 here): the dataset of the clips whole.
test_expect_success 'clips in pieces through gpumel alone: the same dataset' '
	G2="gpumel --device cpu --n-fft 512 --hop 128 --n-mels 32" &&
	$G2 <clips.rec | h5pack -o gw.h5 &&
	rec-copy --pieces 1000 --unknown-length <clips.rec | $G2 >gp.rec &&
	recdump gp.rec | grep -q "piece=more" &&
	h5pack -o gp.h5 <gp.rec &&
	"$PYTHON" -c "
import h5py, numpy as np, sys
a, b = h5py.File(\"gw.h5\"), h5py.File(\"gp.h5\")
for g in (\"training\", \"validation\", \"testing\"):
    for d in a[g]:
        if not np.array_equal(a[g][d][()], b[g][d][()]):
            sys.exit(g + \"/\" + d + \" differs\")
"
'

test_expect_success 'h5pack joins the pieces of an item into one row' '
	G=$TEST_DIRECTORY/golden &&
	for f in good-pieces-audio good-pieces-features; do
		h5pack -q -o p.h5 <"$G/$f.rec" &&
		$PYTHON "$TEST_DIRECTORY/py/h5pack_pieces.py" check \
			"$G/$f.rec" p.h5 || return 1
	done
'

# One clip of one sample: every count in the -v and closing lines is 1
# or 0, and a count of 1 is singular ("1 input, 1 label", "1 sample").
test_expect_success 'counts of one are singular in every -v and closing line' '
	mkdir -p ONE/yes &&
	cp "$(find DATA -name "*.wav" | sort | head -n 1)" ONE/yes/ &&
	wavcat -v --samples 1 ONE/ 2>1w.err | segment -v --len 256 2>1s.err |
		gpumel -v --device cpu --n-fft 256 --hop 64 2>1g.err |
		h5pack -v -o one.h5 2>1h.err &&
	wavcat -q --shard 0/1 ONE/ | recmerge -v - 2>1m.err |
		recdump -q -v 2>1r.err &&
	test_grep "^wavcat: 1 input, 1 label, " 1w.err &&
	test_grep "^wavcat: done 1 clip (1 trimmed and 0 padded to 1 sample), skipped 0$" 1w.err &&
	test_grep "^wavcat: 1 sample; 0 clips longer than [0-9]* samples in 0 pieces$" 1w.err &&
	test_grep "^segment: done: 1 record into 1 window (1 padded)" 1s.err &&
	test_grep "^gpumel: done 1 window, " 1g.err &&
	test_grep "^recmerge: shard 0/1 .stdin.: 1 clip, " 1m.err &&
	test_grep "^recmerge: done: 1 clip from 1 shard in " 1m.err &&
	cat 1?.err >all.err &&
	! grep -E "(^|[^0-9.])1 (records|payloads|inputs|labels|clips|samples|pieces|bytes|windows|batches|copies|waits|runs|keys|rows|entries|shards)([^a-z]|$)" all.err
'

test_done
