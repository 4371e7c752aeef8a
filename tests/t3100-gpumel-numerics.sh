#!/bin/sh
test_description='gpumel: numbers against a float64 reference, librosa and
torchaudio presets, output types'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
REF="$PYTHON -W ignore $TEST_DIRECTORY/py/gpumel_ref.py"
DEV="--device ${MELPIPE_GPUMEL_DEVICE:-cpu}"

test_expect_success 'a grid of options within 0.01 dB of float64' '
	$PYTHON -W ignore "$TEST_DIRECTORY/py/gpumel_grid.py" \
		"$(command -v gpumel)" --combos 40 --seed 11 >grid.out ||
	{ cat grid.out; false; } &&
	tail -1 grid.out &&
	test_grep "^0 of 40 combinations failed" grid.out
'

test_expect_success '--preset librosa: librosa melspectrogram + power_to_db' '
	$MK --n 12 --len 2000:40000 --lens 1000,2048 --rate 22050 \
		--dtype f32 --seed 5 >lr.rec &&
	gpumel $DEV --preset librosa lr.rec >lr.out &&
	$REF check lr.rec lr.out --librosa --n-fft 2048 --win-length 2048 \
		--hop 512 --window hann --center 1 --pad-mode constant \
		--n-mels 128 --fmin 0 --fmax nyquist --mel-scale slaney \
		--norm slaney --power 2 --log db --amin 1e-10 --top-db 80 \
		--dtype f32 --expect-features 12 >check.out &&
	cat check.out
'

test_expect_success 'no preset: librosa defaults but hop = win_length / 4' '
	gpumel $DEV --n-fft 1024 lr.rec >def.out &&
	$REF check lr.rec def.out --librosa --n-fft 1024 --win-length 1024 \
		--hop 256 --window hann --center 1 --pad-mode constant \
		--n-mels 128 --fmin 0 --fmax nyquist --mel-scale slaney \
		--norm slaney --power 2 --log db --amin 1e-10 --top-db 80 \
		--dtype f32
'

test_expect_success 'librosa preset, power 1: amplitude_to_db' '
	gpumel $DEV --preset librosa --power 1 --n-mels 64 --fmin 100 \
		lr.rec >lr1.out &&
	$REF check lr.rec lr1.out --librosa --n-fft 2048 --win-length 2048 \
		--hop 512 --window hann --center 1 --pad-mode constant \
		--n-mels 64 --fmin 100 --fmax nyquist --mel-scale slaney \
		--norm slaney --power 1 --log db --amin 1e-10 --top-db 80 \
		--dtype f32
'

test_expect_success 'librosa, reflect padding, records shorter than the pad' '
	$MK --n 12 --len 3:5000 --lens 3,100,300,1023,1024,1025 \
		--dtype f32 --seed 12 >lrr.rec &&
	gpumel $DEV --preset librosa --pad-mode reflect --n-fft 1024 \
		lrr.rec >lrr.out &&
	$REF check lrr.rec lrr.out --librosa --n-fft 1024 --win-length 1024 \
		--hop 512 --window hann --center 1 --pad-mode reflect \
		--n-mels 128 --fmin 0 --fmax nyquist --mel-scale slaney \
		--norm slaney --power 2 --log db --amin 1e-10 --top-db 80 \
		--dtype f32 --expect-features 12
'

TORCH="--n-fft 400 --win-length 400 --hop 200 --window hann --center 1
	--pad-mode reflect --n-mels 128 --fmin 0 --mel-scale htk --norm none
	--power 2 --log db --amin 1e-10 --top-db none --dtype f32
	--bins linspace"

test_expect_success '--preset torchaudio: MelSpectrogram + AmplitudeToDB' '
	$MK --n 10 --len 100:30000 --lens 150,199,200 --rate 16000 \
		--dtype s16 --seed 6 >ta.rec &&
	gpumel $DEV --preset torchaudio ta.rec >ta.out &&
	$REF check ta.rec ta.out $TORCH --fmax 8000 --expect-features 10
'

test_expect_success 'torchaudio preset, odd sample rate: its fmax and bins' '
	$MK --n 6 --len 3000:9000 --rate 22051 --dtype f32 \
		--seed 7 >odd.rec &&
	gpumel $DEV --preset torchaudio odd.rec >odd.out &&
	$REF check odd.rec odd.out $TORCH --fmax 11025 &&
	test_must_fail $REF check odd.rec odd.out $TORCH --fmax 11025 \
		--bins rfft --ignore-header >bad.out &&
	test_grep "FAIL: record" bad.out
'

test_expect_success 'torchaudio preset with an odd n_fft: hop = win / 2' '
	gpumel $DEV --preset torchaudio --n-fft 401 --n-mels 40 \
		ta.rec >t401.out &&
	$REF check ta.rec t401.out $TORCH --fmax 8000 --n-fft 401 \
		--win-length 401 --hop 200 --n-mels 40
'

test_expect_success 'explicit options win over the preset, in any order' '
	gpumel $DEV --n-mels 40 --norm slaney --preset torchaudio \
		ta.rec >o1.rec &&
	gpumel $DEV --preset torchaudio --n-mels 40 --norm slaney \
		ta.rec >o2.rec &&
	$REF check ta.rec o1.rec $TORCH --fmax 8000 --n-mels 40 \
		--norm slaney &&
	$REF check ta.rec o2.rec $TORCH --fmax 8000 --n-mels 40 --norm slaney
'

test_expect_success '--top-db clamps each record to its own maximum' '
	$MK --n 8 --len 4000:20000 --signal tone --dtype f32 --seed 8 \
		>tone.rec &&
	for t in 80 40 none; do
		gpumel $DEV --n-fft 512 --hop 256 --n-mels 64 --top-db $t \
			tone.rec >tone.$t &&
		# without a clamp most bands of a pure tone lie below what
		# float32 resolves (see WEAK in gpumel_ref.py)
		weak=0.02 && test $t != none || weak=1 &&
		$REF check tone.rec tone.$t --n-fft 512 --win-length 512 \
			--hop 256 --window hann --center 1 \
			--pad-mode constant --n-mels 64 --fmin 0 \
			--fmax nyquist --mel-scale slaney --norm slaney \
			--power 2 --log db --amin 1e-10 --top-db $t \
			--dtype f32 --max-weak $weak || return 1
	done &&
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import numpy as np
from gpumel_rec import read_stream
from gpumel_ref import features
_, a, _ = read_stream(\"tone.40\")
_, b, _ = read_stream(\"tone.none\")
clamped = 0
for x, y in zip(a, b):
    fx, fy = features(x), features(y)
    assert np.isclose(fx.min(), fx.max() - 40, atol=1e-3), fx.min()
    clamped += int((fy < fy.max() - 40).sum())
assert clamped > 100, clamped
"
'

test_expect_success 'f16 and bf16 outputs are the f32 output rounded' '
	$MK --n 16 --len 1:9000 --dtype mixed --seed 9 >mix.rec &&
	for log in db ln none; do
		gpumel $DEV --n-fft 256 --hop 64 --n-mels 32 --log $log \
			mix.rec >m32.$log &&
		gpumel $DEV --n-fft 256 --hop 64 --n-mels 32 --log $log \
			--dtype f16 mix.rec >m16.$log &&
		gpumel $DEV --n-fft 256 --hop 64 --n-mels 32 --log $log \
			--dtype bf16 mix.rec >mb16.$log &&
		$REF cast m32.$log m16.$log &&
		$REF cast m32.$log mb16.$log || return 1
	done
'

test_expect_success 'f16 output within its rounding of the reference' '
	$REF check mix.rec m16.db --n-fft 256 --win-length 256 --hop 64 \
		--window hann --center 1 --pad-mode constant --n-mels 32 \
		--fmin 0 --fmax nyquist --mel-scale slaney --norm slaney \
		--power 2 --log db --amin 1e-10 --top-db 80 --dtype f16
'

test_done
