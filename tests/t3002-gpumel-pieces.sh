#!/bin/sh
test_description='gpumel: items in pieces framed as one record, features
written in pieces, cut short items, bounded memory'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
PC="$PYTHON -W ignore $TEST_DIRECTORY/py/gpumel_pieces.py"

# The parameters gpumel_pieces.py ref needs, every one (N_FFT HOP CENTER
# PAD_MODE TOP_DB DTYPE), and gpumel's options for the same transform.
ref_params() {
	echo "--n-fft $1 --win-length $1 --hop $2 --window hann" \
	     "--center $3 --pad-mode $4 --n-mels 8 --fmin 0 --fmax nyquist" \
	     "--mel-scale slaney --norm slaney --power 2 --log db" \
	     "--amin 1e-10 --top-db $5 --dtype $6"
}
gpumel_params() {
	c=--center
	test "$3" = 1 || c=--no-center
	echo "$c --n-fft $1 --win-length $1 --hop $2 --window hann" \
	     "--pad-mode $4 --n-mels 8 --fmin 0 --mel-scale slaney" \
	     "--norm slaney --power 2 --log db --amin 1e-10 --top-db $5" \
	     "--dtype $6"
}

# Items around every size that matters (0, 1, 2, n_fft / 2 +- 1 of the
# transforms below, a little more), in every input type, with a skipped,
# a stereo and another rate's record, which pieces must not change.
test_expect_success 'make the streams, whole and in pieces' '
	$MK --n 16 --len 1:2500 \
		--lens 0,1,2,30,31,32,33,255,256,257,513,2400,1700 \
		--dtype mixed --skip 15 --stereo 13 --other-rate 14 \
		--seed 7 >in.rec &&
	rec-copy --pieces 7 <in.rec >in.7.rec &&
	rec-copy --pieces 7 --unknown-length <in.rec >in.7u.rec &&
	rec-copy --pieces 7 --empty-last <in.rec >in.7e.rec &&
	rec-copy --pieces 33 --unknown-length --empty-last <in.rec \
		>in.33ue.rec &&
	recdump in.7u.rec | grep "piece=more" | grep -q "clip_samples=0" &&
	recdump in.7e.rec | grep -q "dims=0x1 piece=cont"
'

# grid N_FFT HOP SIZES...: for each padding, gpumel's output for the stream
# in pieces of each size (and of 7 and 33 with the length unknown until the
# last piece, or an empty last piece), joined, is its output for the
# stream unpieced, bit for bit (the CPU backend computes every frame with
# the same code on the same samples, the padding's included).
grid() {
	nf=$1 hop=$2
	shift 2
	for pm in "--center --pad-mode reflect" "--center --pad-mode constant" \
		"--no-center"; do
		g="--device cpu -q --n-fft $nf --hop $hop --n-mels 8" &&
		g="$g --top-db none"
		gpumel $g $pm in.rec >w.rec &&
		files= &&
		for n in "$@" 7u 7e 33ue; do
			{ test -f in.$n.rec ||
			  rec-copy --pieces $n <in.rec >in.$n.rec; } &&
			gpumel $g $pm in.$n.rec >p.$n.rec &&
			recdump p.$n.rec >/dev/null &&
			files="$files p.$n.rec" || return 1
		done &&
		$PC join w.rec $files >join.out ||
		{ cat join.out; return 1; }
	done
}

test_expect_success 'n_fft 512, hop 128: pieces join into the whole output' '
	grid 512 128 1 2 7 127 128 129 256 257 512 1000
'

test_expect_success 'n_fft 63, hop 10 (odd n_fft): the same' '
	grid 63 10 1 2 7 9 10 11 31 32 63 1000
'

test_expect_success 'n_fft 64, hop 100 (hop above n_fft): the same' '
	grid 64 100 1 2 7 99 100 101 32 33 64 1000
'

test_expect_success 'n_fft 256, hop 256: the same' '
	grid 256 256 1 2 7 255 256 257 128 129 1000
'

# The float64 reference of each item, at every frame, and again alone at
# the frames that span two input pieces and at each features piece's
# first and last frame; with top_db 80 joined and clamped as the spec
# tells the joiner to.
test_expect_success LIBROSA 'the joined output is the float64 reference' '
	for c in "512 128 1 reflect 7" "512 128 1 constant 129" \
		"512 128 0 constant 257" "63 10 1 reflect 11" \
		"64 100 1 constant 33" "256 256 0 constant 7u"; do
		set -- $c &&
		gpumel --device cpu -q $(gpumel_params $1 $2 $3 $4 80 f32) \
			in.$5.rec >r.rec &&
		$PC ref in.$5.rec r.rec $(ref_params $1 $2 $3 $4 80 f32) \
			>ref.out || { cat ref.out; return 1; }
		cat ref.out &&
		grep -q "^ok: .* [1-9][0-9]* frames across input" ref.out ||
		return 1
	done
'

test_expect_success LIBROSA 'the reference sees a wrong padding' '
	gpumel --device cpu -q $(gpumel_params 64 16 1 constant none f32) \
		in.7.rec >r.rec &&
	test_must_fail $PC ref in.7.rec r.rec \
		$(ref_params 64 16 1 reflect none f32) >ref.out &&
	test_grep "FAIL: record .*|out - ref|" ref.out
'

# top_db: an item written in pieces is unclamped (its maximum comes at
# its end); joined and clamped it is the item in one record, which gpumel
# clamps as before. f16 and bf16: the joiner's floor is the f16 maximum
# minus top_db, rounded again, so it may be one unit in the last place
# off.
test_expect_success 'top_db: pieces unclamped, the joiner clamps' '
	$MK --n 8 --len 1:5000 --lens 0,1,2,300,4000 --dtype mixed \
		--signal tone --seed 4 >tone.rec &&
	rec-copy --pieces 100 <tone.rec >tone.p.rec &&
	for dt in f32 f16 bf16; do
		g="--device cpu -q --n-fft 256 --hop 64 --n-mels 16" &&
		g="$g --dtype $dt" &&
		gpumel $g tone.rec >tw.rec &&
		gpumel $g tone.p.rec >tp.rec &&
		ulp= && { test $dt = f32 || ulp=--ulp; } &&
		$PC join tw.rec tp.rec --top-db 80 $ulp --min-pieced 2 &&
		test_must_fail $PC join tw.rec tp.rec --min-pieced 2 >j.out &&
		test_grep "values differ" j.out || return 1
	done
'

# Frames split between features pieces of at most 3 frames (the payload
# cap's rule, made small), pieces of 5000 samples framed a few frames at
# a time.
test_expect_success 'features pieces split where they would be too big' '
	$MK --n 4 --len 6000:9000 --dtype mixed --seed 3 >long4.rec &&
	rec-copy --pieces 5000 <long4.rec >long4.p.rec &&
	g="--device cpu -q --n-fft 64 --hop 16 --n-mels 8 --top-db none" &&
	gpumel $g long4.rec >w.rec &&
	MELPIPE_GPUMEL_FRAMES=3 gpumel $g long4.p.rec >p3.rec &&
	MELPIPE_GPUMEL_FRAMES=1 gpumel $g --no-center long4.p.rec >p1.rec &&
	gpumel $g --no-center long4.rec >w1.rec &&
	$PC join w.rec p3.rec --min-pieced 4 &&
	$PC join w1.rec p1.rec --min-pieced 4 &&
	recdump p3.rec | sed -n "s/.*dims=8x\([0-9]*\) piece.*/\1/p" |
		sort -n | tail -1 >max &&
	echo 3 >want && test_cmp want max
'

# Cut short: a skipped record from upstream after a piece flagged more
# (clips 1 and 3), a NaN in a piece (clips 2 and 4): the frames of the
# samples kept, with the end padding there, in pieces flagged more, then
# the skipped record; compared with the output for the samples kept in
# one record.
test_expect_success 'items cut short upstream or by a NaN' '
	$MK --n 6 --len 3000:5000 --dtype f32 --seed 5 >f.rec &&
	$PC forge f.rec cut.rec cutw.rec --pieces 300 --cut 1:1000 \
		--cut 3:299 --nan 2:1234 --nan 4:300 --unknown-length &&
	for pm in "--center --pad-mode reflect" "--center --pad-mode constant" \
		"--no-center"; do
		g="--device cpu --n-fft 256 --hop 64 --n-mels 16" &&
		g="$g --top-db none" &&
		gpumel $g $pm cut.rec >pc.rec 2>err &&
		gpumel -q $g $pm cutw.rec >wc.rec &&
		recdump pc.rec >/dev/null &&
		$PC join wc.rec pc.rec --cut >j.out &&
		test_grep "ok: 6 items, 6 in .* pieces, 4 cut short" j.out &&
		test_grep "clip002.wav.: sample 1234 is not a finite number" \
			err &&
		test_grep "(1234 samples kept), skipped" err &&
		test_grep "done 2 clips, skipped 4 (2 here, 2 from upstream)" err ||
		return 1
	done
'

test_expect_success LIBROSA 'a cut short item against the reference' '
	g="--device cpu -q --n-fft 64 --hop 16 --n-mels 8 --top-db none" &&
	$PC forge f.rec cut2.rec cut2w.rec --pieces 50 --cut 1:777 \
		--nan 2:1000 &&
	gpumel $g --center --pad-mode reflect cut2.rec >pc2.rec &&
	$PC ref cut2.rec pc2.rec $(ref_params 64 16 1 reflect none f32)
'

# A NaN before the item gives any frame (the first sample with --center;
# the first n_fft without): skipped whole at its end, the very record its
# one-record form gives; and an item too short for a frame says so
# first, NaN or not, as one record does.
test_expect_success 'a NaN before any frame: the item skipped as one record' '
	$PC forge f.rec n.p.rec n.w.rec --pieces 7 --nan 1:100 --nan 2:0 \
		--unknown-length --whole-nan &&
	g="--device cpu --n-fft 512 --hop 128 --n-mels 8" &&
	gpumel $g --no-center n.w.rec >nw.rec 2>/dev/null &&
	gpumel $g --no-center n.p.rec >np.rec 2>err &&
	$PC join nw.rec np.rec --min-pieced 3 &&
	test_grep "clip001.wav.: sample 100 is not a finite number, skipped" \
		err &&
	test_grep "clip002.wav.: sample 0 is not a finite number, skipped" \
		err &&
	$PC forge f.rec n0.p.rec n0.w.rec --pieces 7 --nan 2:0 --whole-nan &&
	gpumel $g n0.w.rec >nw.rec 2>/dev/null &&
	gpumel $g n0.p.rec >np.rec 2>err &&
	$PC join nw.rec np.rec --min-pieced 5 &&
	$MK --n 4 --len 400:400 --dtype f32 --nan 1,2 --seed 9 >s.rec &&
	rec-copy --pieces 7 --unknown-length <s.rec >s.p.rec &&
	gpumel $g --no-center s.rec >sw.rec 2>/dev/null &&
	gpumel $g --no-center s.p.rec >sp.rec 2>err &&
	$PC join sw.rec sp.rec --min-pieced 0 &&
	test_grep "clip001.wav.: too short: 400 samples" err
'

# Refusals of a whole item (channels, sample rate) hold for pieces: the
# skipped record comes at the item's end, with its length, as the
# one-record item gives it (compared in the grids above); and a cut short
# item refused so says both why.
test_expect_success 'a refused item cut short upstream: one skipped record' '
	$MK --n 3 --len 2000:2000 --dtype s16 --other-rate 1 --seed 2 >o.rec &&
	$PC forge o.rec o.cut.rec o.w.rec --pieces 300 --cut 1:700 &&
	gpumel --device cpu o.cut.rec >o.out 2>err &&
	recdump o.out >o.dump &&
	test $(grep -c "clip=1 " o.dump) = 1 &&
	test_grep "skipped clip=1 clip_samples=700 .*differs from the" o.dump &&
	test_grep "Hz (cut short upstream: decoding failed after" o.dump
'

test_expect_success 'the golden streams in pieces' '
	G=$TEST_DIRECTORY/golden &&
	for f in good-pieces-audio good-pieces-cut-short good-pieces-zstd; do
		gpumel --device cpu -q --n-fft 64 --hop 16 --n-mels 4 \
			"$G/$f.rec" >$f.out &&
		recdump $f.out >$f.dump || return 1
	done &&
	grep -A1 "key=.yes/broken-late.mp3" good-pieces-cut-short.dump >cs &&
	test_grep "features clip=0 .* piece=more,cont" cs &&
	test_grep "skipped clip=0 clip_samples=200 .*200 samples kept" cs
'

# The mock CUDA runtime (t6000): the backend's host code with the
# kernels' arithmetic run on the CPU, both FFT paths; the stretches
# (padded by the host, not clamped) against its own unpieced output.
MOCK=$TOP/build/obj/tests/helper/gpumel-cuda-mock.so
if ! test -f "$MOCK" || ! test -f "$MELPIPE_BIN/gpumel-cuda.so"; then
	test_skip 'the CUDA backend (mock runtime): the same' \
		'no gpumel-cuda.so or no mock runtime'
else test_expect_success 'the CUDA backend (mock runtime): the same' '
	mkdir -p mock/driver &&
	cp "$MELPIPE_BIN/gpumel" mock/gpumel &&
	cp "$MOCK" mock/gpumel-cuda.so &&
	${CC:-cc} -shared -o mock/driver/libcuda.so.1 -x c /dev/null &&
	LD_LIBRARY_PATH=$PWD/mock/driver${LD_LIBRARY_PATH:+:}$LD_LIBRARY_PATH &&
	export LD_LIBRARY_PATH &&
	for fft in fused cufft; do
		for pm in "--center --pad-mode reflect" "--no-center"; do
			g="-q --device cuda --n-fft 64 --hop 16 --n-mels 8" &&
			MELPIPE_CUDA_FFT=$fft mock/gpumel $g $pm --top-db none \
				in.rec >cw.rec &&
			MELPIPE_CUDA_FFT=$fft MELPIPE_CUDA_CHUNK=5 \
				mock/gpumel $g $pm --top-db none in.7.rec \
				>cp7.rec &&
			MELPIPE_CUDA_FFT=$fft mock/gpumel $g $pm --top-db none \
				in.33.rec >cp33.rec &&
			$PC join cw.rec cp7.rec cp33.rec &&
			MELPIPE_CUDA_FFT=$fft mock/gpumel $g $pm tone.rec \
				>ctw.rec &&
			MELPIPE_CUDA_FFT=$fft mock/gpumel $g $pm tone.p.rec \
				>ctp.rec &&
			$PC join ctw.rec ctp.rec --top-db 80 || return 1
		done
	done
'
fi

# The same on a GPU, both FFT paths. cuFFT may take other kernels for
# another number of frames in a batch (a stretch of a piece is a batch of
# its own more often than a whole record is), so the last bits of a value
# may differ: 1e-5 relative; the fused kernel computes each frame alone.
test_expect_success GPU 'the CUDA backend on the GPU: the same' '
	for fft in fused cufft; do
		for c in 1 0; do
			pm=$(gpumel_params 64 16 $c reflect none f32) &&
			g="-q --device cuda" &&
			MELPIPE_CUDA_FFT=$fft gpumel $g $pm in.rec >gw.rec &&
			MELPIPE_CUDA_FFT=$fft gpumel $g $pm in.7.rec >gp7.rec &&
			MELPIPE_CUDA_FFT=$fft gpumel $g $pm in.33.rec \
				>gp33.rec &&
			$PC join gw.rec gp7.rec gp33.rec --rel 1e-5 &&
			pm=$(gpumel_params 64 16 $c reflect 80 f32) &&
			MELPIPE_CUDA_FFT=$fft gpumel $g $pm tone.rec >gtw.rec &&
			MELPIPE_CUDA_FFT=$fft gpumel $g $pm tone.p.rec \
				>gtp.rec &&
			$PC join gtw.rec gtp.rec --top-db 80 --rel 1e-5 &&
			# the float64 reference takes the filterbank of librosa:
			# where there is none (a GPU machine), the join above
			# with the whole run on the GPU is the check
			{ ! test_have_prereq LIBROSA ||
			  $PC ref in.7.rec gp7.rec \
				$(ref_params 64 16 $c reflect none f32); } ||
			return 1
		done
	done
'

# 30 million samples (31 minutes at 16 kHz) in pieces of 64K: memory
# stays that of a few batches, where the clip in one record takes five
# times as much.
test_expect_success NOSAN 'a long item in pieces: small peak memory' '
	rec-gen -n 1 -l 30000000 >long.rec &&
	rec-copy --pieces 65536 <long.rec >long.p.rec &&
	/usr/bin/time -f %M gpumel --device cpu -q -j 2 long.p.rec \
		>long.out 2>rss &&
	recdump long.out | tail -2 >tail &&
	test_grep "piece=cont" tail &&
	test $(tail -1 rss) -lt 65536
'

test_expect_success '--help says what pieces become' '
	gpumel --help >help &&
	test_grep "An item in pieces" help &&
	test_grep "features written in pieces" help
'

test_done
