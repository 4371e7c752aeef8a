#!/bin/sh
# scripts/h5info.py's summary of a dataset: the feature it holds (mel,
# fbank, mfcc or audio) and which shard of a job a shard file is; the
# ragged layout counted in rows and frames (samples for audio) with the
# shortest and longest row, the clips' own sample rates and channels
# (/clips/source_rate and source_channels), a reader that goes away
# (| head) ending it without a traceback, and files it cannot show named
# in one line, with no traceback.

test_description='h5info.py: feature, shard, ragged counts, source rates, a closed pipe, refusals'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
H5INFO="$PYTHON $TOP/scripts/h5info.py"

test_expect_success 'ragged features: rows, frames in all, shortest and longest' '
	$MK --dtype f32 --clips 30 --frames 1:90 --shape 8,1 --seed 3 >r.rec &&
	h5pack -q -o r.h5 r.rec &&
	$H5INFO r.h5 >out &&
	$PYTHON -c "
import h5py
g = h5py.File(\"r.h5\")[\"training\"]
n = g[\"n_frames\"][()]
print(\"ragged: %d rows, %d frames in all (%d to %d per row)\"
      % (n.shape[0], n.sum(), n.min(), n.max()))" >want &&
	grep -F -q -- "$(cat want)" out
'

test_expect_success 'the clips'\'' own rates and channels, as soundfile reads the inputs' '
	MKD="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py" &&
	mkdir -p SRC/a SRC/b &&
	for k in 1 2 3; do
		$MKD tone SRC/a/16k-$k.wav --rate 16000 --frames 4000 \
			--seed $k || return 1
	done &&
	$MKD tone SRC/a/44k-stereo.wav --rate 44100 --channels 2 \
		--frames 9000 --seed 4 &&
	$MKD tone SRC/b/44k-stereo.flac --rate 44100 --channels 2 \
		--frames 9000 --seed 5 &&
	$MKD tone SRC/b/8k-3ch.wav --rate 8000 --channels 3 --frames 3000 \
		--seed 6 &&
	$MKD tone SRC/b/22k.wav --rate 22050 --frames 5000 --seed 7 &&
	$MKD bad garbage SRC/b/junk.wav &&
	wavcat -q --rate 16000 SRC/ | h5pack -q -o src.h5 &&
	$H5INFO src.h5 >out &&
	# what the line should say, from the input files themselves
	$PYTHON -c "
import collections, os, sys
import soundfile as sf
rates, chans = collections.Counter(), collections.Counter()
for d, _, names in os.walk(sys.argv[1]):
    for n in names:
        try:
            i = sf.info(os.path.join(d, n))
        except RuntimeError:
            rates[0] += 1
            continue
        rates[i.samplerate] += 1
        chans[i.channels] += 1
said = [\"%d Hz x %d\" % (r, rates[r]) for r in sorted(rates) if r]
said += [\"unknown x %d\" % rates[0]] if rates[0] else []
ch = [(\"stereo\" if c == 2 else \"%d channels\" % c) + \" %d\" % chans[c]
      for c in sorted(chans) if c != 1]
print(\"  source rates: \" + \", \".join(said)
      + (\" (%s)\" % \", \".join(ch) if ch else \"\"))" SRC >want &&
	test_grep "x 3, .*unknown x 1 (stereo 2, 3 channels 1)$" want &&
	grep -F -x -- "$(cat want)" out &&
	# the rest of the summary as it was: the clips line before it
	grep -B1 -F -x -- "$(cat want)" out | head -n 1 >before &&
	test_grep "^  clips: 8$" before
'

test_expect_success 'source rates of a file written before h5pack stored them' '
	cp src.h5 old.h5 &&
	$PYTHON -c "
import h5py
with h5py.File(\"old.h5\", \"a\") as f:
    del f[\"clips/source_rate\"], f[\"clips/source_channels\"]" &&
	$H5INFO old.h5 >out &&
	test_grep "^  source rates: not recorded" out &&
	! grep -q Traceback out
'

# The feature and the shard, from what made the file: the stages' own
# options, the shard asked of wavcat and its clips there.
test_expect_success 'the feature, and which shard a shard file is' '
	MKD="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py" &&
	mkdir -p F/a F/b &&
	for k in 1 2 3 4 5; do
		$MKD tone F/a/x$k.wav --frames 3000 --seed $k &&
		$MKD tone F/b/y$k.wav --frames 3000 --seed 1$k || return 1
	done &&
	wavcat -q F | gpumel -q --device cpu --n-mels 40 | h5pack -q -o mel.h5 &&
	wavcat -q F | gpumel -q --device cpu --preset kaldi |
		h5pack -q -o fbank.h5 &&
	wavcat -q --shard 2/3 F |
		gpumel -q --device cpu --preset kaldi --mfcc 13 |
		h5pack -q -o mfcc-2.h5 &&
	wavcat -q F | h5pack -q -o audio.h5 &&
	for x in mel fbank mfcc-2 audio; do
		$H5INFO $x.h5 >$x.out || return 1
	done &&
	test_grep "^  feature: mel, 40 rows a frame$" mel.out &&
	test_grep "^  feature: fbank, 23 rows a frame$" fbank.out &&
	test_grep "^  feature: mfcc of fbank bands, 13 rows a frame$" mfcc-2.out &&
	test_grep "^  feature: none: audio samples$" audio.out &&
	job=$(wavcat -q F | recdump -n 1 - | sed -n "s/^header job=//p") &&
	test -n "$job" &&
	test_grep "^  shard: 2/3 (the job.s clips 2, 5, 8, ... of 10), job $job$" \
		mfcc-2.out &&
	! grep -q "^  shard:" mel.out &&
	# the two lines come right after the file name
	sed -n 2,3p mfcc-2.out >top &&
	test_grep "^  feature: " top &&
	test_grep "^  shard: " top
'

test_expect_success 'a reader that goes away: no traceback, no message' '
	# more lines (one per skipped input) than a pipe holds
	$MK --dtype f32 --clips 6000 --frames 1:3 --shape 2,1 --seed 4 \
		--skip $(seq -s, 1 2 5999) >many.rec &&
	h5pack -q -o many.h5 many.rec &&
	$H5INFO many.h5 2>err | head -n 1 >first &&
	test_grep "many.h5:" first &&
	$H5INFO many.h5 | wc -c >size &&
	test $(cat size) -gt 100000 &&
	! test -s err
'

test_expect_success 'no file, not HDF5, not melpipe: one line each, exit 1' '
	test_expect_code 1 $H5INFO nosuch.h5 2>err &&
	test_grep "^h5info.py: unable to open .nosuch.h5.: No such file or directory$" err &&
	printf "RIFF" >x.wav &&
	test_expect_code 1 $H5INFO x.wav 2>err &&
	test_grep "^h5info.py: unable to open .x.wav.: not an HDF5 file$" err &&
	$PYTHON -c "import h5py; h5py.File(\"plain.h5\", \"w\")[\"x\"] = [1]" &&
	test_expect_code 1 $H5INFO plain.h5 >out 2>err &&
	test_grep "h5info.py: .plain.h5. is an HDF5 file but not a melpipe dataset" err &&
	! test -s out
'

test_expect_success 'without h5py: what to install, also for --help' '
	# a Python whose h5py import fails
	mkdir noh5 &&
	echo "raise ImportError(name=\"h5py\")" >noh5/h5py.py &&
	PYTHONPATH=$PWD/noh5 $H5INFO --help >help &&
	test_grep "^Usage: h5info.py FILE.h5" help &&
	test_expect_code 1 env PYTHONPATH=$PWD/noh5 $H5INFO r.h5 2>err &&
	test_grep "h5info.py: h5py is missing for .*python3-h5py" err &&
	! grep -q Traceback err
'

test_done
