#!/bin/sh
test_description='gpumel --preset kaldi and --mfcc, CPU and CUDA backends,
against torchaudio.compliance.kaldi.fbank and .mfcc and torchaudio MFCC
(needs torch and torchaudio; the CUDA cases a GPU)'
. "$(dirname "$0")/test-lib.sh"

# torchaudio in whichever python has it (the GPU machine's python3)
TA_PY=
for py in "$PYTHON" python3; do
	if "$py" -c 'from torchaudio.compliance import kaldi' \
		>/dev/null 2>&1; then
		TA_PY=$py
		break
	fi
done
test -n "$TA_PY" || skip_all "no torchaudio.compliance.kaldi in $PYTHON or python3"

MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
TA="$TA_PY -W ignore $TEST_DIRECTORY/py/kaldi_torchaudio.py"
TM="$TA_PY -W ignore $TEST_DIRECTORY/py/mfcc_torchaudio.py"

# vs_ta DEVICE NAME IN [options]: gpumel --preset kaldi on DEVICE against
# torchaudio given the same options.
vs_ta() {
	dev=$1 name=$2 in=$3
	shift 3
	gpumel -q --device $dev --preset kaldi "$@" "$in" >"$name.$dev" &&
	$TA check "$in" "$name.$dev" "$@"
}

# each DEVICE: the option sets, 16 kHz s16 and f32, 8 kHz mixed types
each() {
	vs_ta $1 d s16.rec &&
	vs_ta $1 f f32.rec --num-mel-bins=80 &&
	vs_ta $1 n s16.rec --snip-edges=false --use-energy=true &&
	vs_ta $1 e f32.rec --use-energy=true --raw-energy=false \
		--energy-floor=0 --window=hamming &&
	vs_ta $1 w s16.rec --window=hann --round-to-power-of-two=false \
		--preemphasis=0 --remove-dc-offset=false &&
	vs_ta $1 b m8.rec --window=blackman --low-freq=64 --high-freq=-300 \
		--num-mel-bins=40 &&
	vs_ta $1 r m8.rec --window=rect --snip-edges=false \
		--frame-length-ms=32 --frame-shift-ms=8
}

# mfcc_ta DEVICE: --mfcc against torchaudio.compliance.kaldi.mfcc and
# torchaudio.transforms.MFCC, given the same options
mfcc_ta() {
	dev=$1
	gpumel -q --device $dev --preset kaldi --mfcc 13 s16.rec >m1.$dev &&
	$TM kaldi s16.rec m1.$dev --n-mfcc 13 &&
	gpumel -q --device $dev --preset kaldi --num-ceps 20 \
		--num-mel-bins 40 --use-energy --snip-edges=false \
		--cepstral-lifter 0 m8.rec >m2.$dev &&
	$TM kaldi m8.rec m2.$dev --n-mfcc 20 --num-mel-bins 40 \
		--use-energy=true --snip-edges=false --cepstral-lifter 0 &&
	gpumel -q --device $dev --preset kaldi --mfcc 13 --num-mel-bins 80 \
		--use-energy --raw-energy=false f32.rec >m3.$dev &&
	$TM kaldi f32.rec m3.$dev --n-mfcc 13 --num-mel-bins 80 \
		--use-energy=true --raw-energy=false &&
	gpumel -q --device $dev --preset torchaudio --n-fft 512 --hop 160 \
		--n-mels 64 --mfcc 40 f32.rec >m4.$dev &&
	$TM mel f32.rec m4.$dev --n-mfcc 40 --n-fft 512 --hop 160 \
		--n-mels 64 &&
	gpumel -q --device $dev --preset torchaudio --n-mels 40 --mfcc 13 \
		--top-db none s16.rec >m5.$dev &&
	$TM mel s16.rec m5.$dev --n-mfcc 13 --n-fft 400 --hop 200 \
		--n-mels 40 --top-db none
}

test_expect_success 'streams: 16 kHz s16 and f32, 8 kHz every type' '
	$MK --n 16 --len 400:40000 --lens 400,401,560 --dtype s16 \
		--rate 16000 --seed 51 >s16.rec &&
	$MK --n 12 --len 400:40000 --dtype f32 --rate 16000 --seed 52 \
		>f32.rec &&
	$MK --n 16 --len 256:20000 --lens 256,300 --dtype mixed \
		--rate 8000 --seed 53 >m8.rec
'

test_expect_success 'the CPU backend is torchaudio.compliance.kaldi.fbank' '
	each cpu
'

test_expect_success GPU 'the CUDA backend is torchaudio.compliance.kaldi.fbank' '
	test -f "$MELPIPE_BIN/gpumel-cuda.so" &&
	each cuda
'

test_expect_success 'the CPU backend is torchaudio.compliance.kaldi.mfcc and MFCC' '
	mfcc_ta cpu
'

test_expect_success GPU 'the CUDA backend is torchaudio.compliance.kaldi.mfcc and MFCC' '
	test -f "$MELPIPE_BIN/gpumel-cuda.so" &&
	mfcc_ta cuda
'

test_done
