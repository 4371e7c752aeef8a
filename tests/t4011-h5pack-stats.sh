#!/bin/sh
test_description='h5pack: each split group'"'"'s statistics of its stored frames'
. "$(dirname "$0")/test-lib.sh"

# formats/hdf5.md, Statistics: stats_count, stats_sum and stats_sumsq per
# feature (mel bin; audio: channel) over every stored frame, of the
# values as stored. tests/py/h5merge_stats.py computes them exactly
# (math.fsum) from the features dataset; h5pack's must be within 1e-12.

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
PIECES="$PYTHON $TEST_DIRECTORY/py/h5pack_pieces.py"
STATS="$PYTHON $TEST_DIRECTORY/py/h5merge_stats.py"
MEL="gpumel --device cpu --top-db 80 --n-mels 16 --n-fft 256 --hop 64"

test_expect_success 'every element type and layout, features and audio' '
	$MK --kind audio --len 500:5000 --clips 12 --skip 3 --seed 3 >ar.rec &&
	$MEL -q <ar.rec >g_ragged.rec &&
	$MEL -q --dtype f16 <ar.rec >h_ragged.rec &&
	$MK --dtype bf16 --clips 15 --rows 1:3 --shape 24,90 --seed 6 \
		>b_fixed.rec &&
	$MK --dtype f32 --clips 15 --rows 1:3 --shape 24,90 --seed 6 \
		>f_fixed.rec &&
	$MK --dtype f16 --clips 15 --rows 1:3 --shape 24,301 --seed 10 \
		>e_fixed.rec &&
	$MK --kind audio --dtype s16 --channels 2 --len 100:3000 --clips 20 \
		--skip 7 --seed 7 >s_ragged.rec &&
	$MK --kind audio --dtype f32 --len 2000 --clips 15 --seed 8 \
		>a_fixed.rec &&
	$MK --kind audio --dtype s16 --channels 3 --len 700 --clips 9 \
		--splits none --seed 9 >c_fixed.rec &&
	for s in g_ragged h_ragged b_fixed f_fixed e_fixed s_ragged a_fixed c_fixed; do
		h5pack -q -c zstd --chunk-size 4K -o $s.h5 $s.rec &&
		$STATS $s.h5 || return 1
	done
'

test_expect_success 'the same statistics for any chunk size, compression or --jobs' '
	h5pack -q -c gzip -j 3 -o g2.h5 g_ragged.rec &&
	"$PYTHON" - g_ragged.h5 g2.h5 <<-\PY
	import sys, h5py, numpy as np
	a, b = (h5py.File(p, "r") for p in sys.argv[1:])
	for g in ("training", "validation", "testing"):
	    assert np.array_equal(a[g]["stats_count"][()], b[g]["stats_count"][()])
	    for k in ("stats_sum", "stats_sumsq"):
	        x, y = a[g][k][()], b[g][k][()]
	        assert np.all(np.abs(x - y) <= 1e-13 * np.abs(x)), (g, k)
	PY
'

test_expect_success 'items in pieces: the statistics are of the values raised to the floor' '
	for dt in f32 f16 bf16; do
		for layout in ragged fixed; do
			$PIECES make --dtype $dt --layout $layout --seed 11 \
				>u.rec &&
			h5pack -q -o u.h5 u.rec &&
			$PIECES check u.rec u.h5 &&
			$STATS u.h5 || return 1
		done
	done
'

# Ragged items of many chunks: the frames already in the file are read
# back, raised and rewritten; their statistics are taken out and counted
# again.
test_expect_success 'items in pieces over many chunks, raised in the file' '
	for dt in f32 f16; do
		$PIECES make --dtype $dt --frames 1500 --clips 8 --seed 12 \
			>long.rec &&
		for c in none zstd; do
			h5pack -q -c $c --chunk-size 4K -o long.$c.h5 long.rec &&
			$PIECES check long.rec long.$c.h5 &&
			$STATS long.$c.h5 || return 1
		done
	done
'

# Uncompressed, a full chunk's statistics are counted beside its write;
# rows [n_mels][n_frames] by up to four threads (half of --jobs), each
# its own bins (13 here: 3, 3, 3 and 4 of them). Every element type
# (f32 and bf16 values are summed one by one, f16 in exact blocks),
# chunks of one to three rows; the sums must be those of one thread to
# the last bit, for 1, 2 and 4 threads. Audio, whose rows are not split
# by bins, gets one thread.
SAME_STATS='
import sys, h5py
fs = [h5py.File(p, "r") for p in sys.argv[1:]]
for g in ("training", "validation", "testing"):
    assert fs[0][g]["features"].shape[0] > 6, g
    for k in ("stats_count", "stats_sum", "stats_sumsq"):
        a = fs[0][g][k][()]
        for f in fs[1:]:
            assert a.tobytes() == f[g][k][()].tobytes(), (f.filename, g, k)
'
test_expect_success 'statistics on 1 to 4 threads: the same sums, bit for bit' '
	for t in f32 f16 bf16; do
		$MK --dtype $t --clips 40 --rows 1:3 --shape 13,50 \
			--seed 11 >bins_$t.rec &&
		for j in 1 4 8; do
			h5pack -v -c none --chunk-size 4K -j $j -o b_${t}_$j.h5 \
				bins_$t.rec 2>err_${t}_$j || return 1
		done &&
		test_grep "statistics counted beside on 1 thread," err_${t}_1 &&
		test_grep "statistics counted beside on 2 threads" err_${t}_4 &&
		test_grep "statistics counted beside on 4 threads" err_${t}_8 &&
		$STATS b_${t}_8.h5 &&
		"$PYTHON" -c "$SAME_STATS" b_${t}_1.h5 b_${t}_4.h5 \
			b_${t}_8.h5 || return 1
	done &&
	$MK --kind audio --dtype s16 --len 3000 --clips 30 --seed 12 >au.rec &&
	h5pack -v -c none --chunk-size 4K -j 8 -o au.h5 au.rec 2>err_au &&
	test_grep "statistics counted beside on 1 thread," err_au &&
	$STATS au.h5
'

# The same with 3 of the 4 threads (fault-io.so refuses the later ones,
# as at a process's thread limit: h5pack's reading thread, then three
# statistics threads). Not in sanitizer builds: fault-io.so is preloaded.
FAULT=$TOP/build/obj/tests/helper/fault-io.so
test_expect_success NOSAN 'statistics on the threads that could start: the same sums' '
	for t in f32 f16 bf16; do
		env LD_PRELOAD="$FAULT" MELPIPE_FAULT_THREADS_AFTER=4 \
			h5pack -v -c none --chunk-size 4K -j 8 -o b_${t}_f.h5 \
			bins_$t.rec 2>err_${t}_f &&
		test_grep "statistics counted beside on 3 threads" err_${t}_f &&
		"$PYTHON" -c "$SAME_STATS" b_${t}_1.h5 b_${t}_f.h5 || return 1
	done
'

test_expect_success 'empty groups: zero counts, n_mels features' '
	$MK --clips 2 --shape 8,20 --seed 3 >two.rec &&
	h5pack -q -o two.h5 two.rec &&
	$STATS two.h5 &&
	"$PYTHON" - two.h5 <<-\PY
	import sys, h5py
	f = h5py.File(sys.argv[1], "r")
	for g in ("training", "validation", "testing"):
	    c = f[g]["stats_count"][()]
	    assert c.shape == (8,) and f[g]["stats_sum"].dtype == "f8", g
	    assert (c == f[g]["label"].shape[0] * 20).all(), (g, c)
	PY
'

test_done
