#!/bin/sh
test_description='gpumel --device cuda against --device cpu on the same
streams, over a grid of options and both FFT paths (needs a GPU)'
. "$(dirname "$0")/test-lib.sh"

SO=$MELPIPE_BIN/gpumel-cuda.so
need_cuda_so
MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
CMP="$PYTHON $TEST_DIRECTORY/py/cuda_cmp.py"
KREF="$PYTHON -W ignore $TEST_DIRECTORY/py/kaldi_ref.py"
PC="$PYTHON -W ignore $TEST_DIRECTORY/py/gpumel_pieces.py"
MREF="$PYTHON -W ignore $TEST_DIRECTORY/py/mfcc_ref.py"
GREF="$PYTHON -W ignore $TEST_DIRECTORY/py/gpumel_ref.py"

# gpu_vs_cpu NAME IN [gpumel options]: the GPU's features (fused FFT where
# n_fft allows, and through cuFFT in chunks of 1000 frames) equal the CPU
# backend's within 0.01 dB (or its equivalent; f16/bf16 within their
# rounding; values below float32 resolution only as small).
gpu_vs_cpu() {
	name=$1 in=$2
	shift 2
	gpumel -q --device cpu "$@" "$in" >"$name.cpu" &&
	gpumel -q --device cuda "$@" "$in" >"$name.gpu" &&
	$CMP close "$name.gpu" "$name.cpu" --input "$in" &&
	MELPIPE_CUDA_FFT=cufft MELPIPE_CUDA_CHUNK=1000 \
		gpumel -q --device cuda "$@" "$in" >"$name.cufft" &&
	$CMP close "$name.cufft" "$name.cpu" --input "$in"
}

test_expect_success GPU 'the backend opens on the GPU' '
	gpumel-cuda-bench --probe "$SO" >probe.out &&
	cat probe.out &&
	test_grep "^open ok: cuda:" probe.out
'

test_expect_success GPU 'the bench grid: within 0.01 dB of float64' '
	gpumel-cuda-bench --parity "$SO" >parity.out ||
	{ cat parity.out; false; } &&
	cat parity.out &&
	test_must_fail grep -q "^FAIL" parity.out &&
	test $(grep -c "^ok   gpu" parity.out) -ge 40
'

test_expect_success GPU 'streams: mixed input types, the 10-second job shape, short' '
	$MK --n 40 --len 1:30000 --lens 30000,1,2,255,256,511,512,513 \
		--dtype mixed --skip 5,9 --seed 21 >mixed.rec &&
	$MK --n 20000 --len 512:512 --dtype s16 --rate 4096 --seed 22 \
		>ten.rec &&
	$MK --n 300 --len 1:200 --lens 200 --dtype f32 --rate 8000 --seed 23 \
		>short.rec
'

test_expect_success GPU 'the 10-second job command: 512/512, 32 mels, no centre, f16' '
	gpu_vs_cpu ten ten.rec --n-fft 512 --hop 512 --n-mels 32 \
		--no-center --dtype f16
'

test_expect_success GPU '--preset librosa (n_fft 2048, top_db 80)' '
	gpu_vs_cpu librosa mixed.rec --preset librosa
'

test_expect_success GPU '--preset torchaudio (n_fft 400: cuFFT)' '
	gpu_vs_cpu torch mixed.rec --preset torchaudio
'

test_expect_success GPU 'short window, hamming, magnitude dB, reflect, bf16' '
	gpu_vs_cpu kws mixed.rec --n-fft 512 --win-length 400 --hop 160 \
		--window hamming --pad-mode reflect --power 1 --n-mels 40 \
		--fmin 20 --fmax 7600 --top-db 60 --dtype bf16
'

test_expect_success GPU 'ln, htk, no norm, rect window' '
	gpu_vs_cpu ln mixed.rec --n-fft 1024 --hop 256 --log ln \
		--mel-scale htk --norm none --window rect --dtype f32
'

test_expect_success GPU 'odd n_fft, no log, hop > n_fft' '
	gpu_vs_cpu odd mixed.rec --n-fft 511 --win-length 500 --hop 600 \
		--log none --n-mels 20 --dtype f32
'

test_expect_success GPU 'records shorter than the reflect padding' '
	gpu_vs_cpu short short.rec --n-fft 64 --hop 16 --n-mels 16 \
		--pad-mode reflect --top-db 40 --dtype f32
'

test_expect_success GPU 'n_fft 4096, the largest fused size' '
	gpu_vs_cpu big mixed.rec --n-fft 4096 --hop 1024 --n-mels 128 \
		--no-center --dtype f32
'

test_expect_success GPU 'f16 and bf16 are the GPU f32 output rounded' '
	gpumel -q --device cuda --top-db 80 mixed.rec >r32.rec &&
	gpumel -q --device cuda --top-db 80 --dtype f16 mixed.rec >r16.rec &&
	gpumel -q --device cuda --top-db 80 --dtype bf16 mixed.rec >rb16.rec &&
	$CMP cast r32.rec r16.rec &&
	$CMP cast r32.rec rb16.rec
'

test_expect_success GPU 'CUDA graphs on or off: the same bits' '
	gpumel -q --device cuda --n-fft 512 --hop 512 --n-mels 32 \
		--no-center --dtype f16 --batch 2000 ten.rec >g1.rec &&
	MELPIPE_CUDA_GRAPH=0 gpumel -q --device cuda --n-fft 512 --hop 512 \
		--n-mels 32 --no-center --dtype f16 --batch 2000 ten.rec \
		>g0.rec &&
	$CMP same g1.rec g0.rec
'

test_expect_success GPU 'batch size does not change the features' '
	gpumel -q --device cuda --n-fft 1024 --hop 256 mixed.rec >b0.rec &&
	gpumel -q --device cuda --n-fft 1024 --hop 256 --batch 1 mixed.rec \
		>b1.rec &&
	gpumel -q --device cuda --n-fft 1024 --hop 256 --batch 7 mixed.rec \
		>b7.rec &&
	$CMP same b0.rec b1.rec &&
	$CMP same b0.rec b7.rec &&
	MELPIPE_CUDA_FFT=cufft gpumel -q --device cuda --n-fft 1024 \
		--hop 256 --batch 3 mixed.rec >c3.rec &&
	$CMP close c3.rec b0.rec --input mixed.rec
'

test_expect_success GPU 'described windows give what copied windows give' '
	$MK --n 12 --len 40960:40960 --dtype s16 --rate 4096 --seed 24 \
		>clips.rec &&
	for seg in "mixed.rec --len 3000 --hop 1100" \
		"clips.rec --len 512 --hop 512" "clips.rec --len 4096 --hop 1300"
	do
		segment -q $seg >win.rec &&
		segment -q --copy $seg >cop.rec &&
		for opts in "--n-fft 512 --hop 128 --n-mels 40" \
			"--n-fft 512 --hop 512 --n-mels 32 --no-center --dtype f16"
		do
			gpumel -q --device cuda $opts win.rec >w.gpu &&
			gpumel -q --device cuda $opts cop.rec >c.gpu &&
			gpumel -q --device cpu $opts cop.rec >c.cpu &&
			$CMP same w.gpu c.gpu &&
			$CMP close w.gpu c.cpu --input cop.rec || exit 1
		done &&
		MELPIPE_CUDA_FFT=cufft MELPIPE_CUDA_CHUNK=1000 gpumel -q \
			--device cuda --n-fft 512 --hop 128 win.rec >w.cufft &&
		gpumel -q --device cpu --n-fft 512 --hop 128 cop.rec >c.cpu &&
		$CMP close w.cufft c.cpu --input cop.rec || exit 1
	done
'

# kaldi_gpu NAME IN [options]: --preset kaldi on the GPU, the fused
# kernel (where n_fft allows) and cuFFT, against the float64 reference of
# Kaldi fbank (kaldi_ref.py, the same options), and against the CPU
# backend (the same dither noise included).
kaldi_gpu() {
	name=$1 in=$2
	shift 2
	gpumel -q --device cuda --preset kaldi "$@" "$in" >"$name.gpu" &&
	$KREF check "$in" "$name.gpu" "$@" &&
	MELPIPE_CUDA_FFT=cufft MELPIPE_CUDA_CHUNK=1000 gpumel -q \
		--device cuda --preset kaldi "$@" "$in" >"$name.cufft" &&
	$KREF check "$in" "$name.cufft" "$@" &&
	gpumel -q --device cpu --preset kaldi "$@" "$in" >"$name.cpu" &&
	$CMP close "$name.gpu" "$name.cpu" --input "$in" &&
	$CMP close "$name.cufft" "$name.cpu" --input "$in"
}

test_expect_success GPU '--preset kaldi: fbank against float64 and the CPU' '
	$MK --n 30 --len 1:48000 --lens 0,1,79,80,399,400,401,561 \
		--dtype s16 --rate 16000 --seed 25 >k16.rec &&
	$MK --n 20 --len 1:24000 --lens 39,40,199,200,201 --dtype mixed \
		--rate 8000 --seed 26 >k8.rec &&
	kaldi_gpu kd k16.rec &&
	kaldi_gpu kn k16.rec --snip-edges=false --use-energy=true &&
	kaldi_gpu kw k16.rec --window=hamming --round-to-power-of-two=false \
		--use-energy=true --raw-energy=false &&
	kaldi_gpu kb k16.rec --window=blackman --preemphasis=0 \
		--remove-dc-offset=false --num-mel-bins=80 &&
	kaldi_gpu k8 k8.rec --snip-edges=false --window=rect --low-freq=0 \
		--high-freq=-200 --energy-floor=0 --use-energy=true &&
	kaldi_gpu k8h k8.rec --window=hann --frame-length-ms=32 \
		--frame-shift-ms=8
'

test_expect_success GPU '--preset kaldi --dither: the noise the CPU adds' '
	kaldi_gpu kdi k16.rec --dither=1 --seed=9 --snip-edges=false &&
	kaldi_gpu kdi8 k8.rec --dither=0.3 --use-energy=true
'

test_expect_success GPU '--preset kaldi: batches, graphs, windows, pieces' '
	o="--preset kaldi --dither=1 --snip-edges=false --use-energy=true" &&
	gpumel -q --device cuda $o k16.rec >kb0.rec &&
	gpumel -q --device cuda $o --batch 3 k16.rec >kb3.rec &&
	MELPIPE_CUDA_GRAPH=0 gpumel -q --device cuda $o --batch 3 k16.rec \
		>kg0.rec &&
	$CMP same kb3.rec kg0.rec &&
	$CMP close kb3.rec kb0.rec --input k16.rec &&
	segment -q --len 4000 --hop 1500 k16.rec >kwin.rec &&
	segment -q --copy --len 4000 --hop 1500 k16.rec >kcop.rec &&
	gpumel -q --device cuda $o kwin.rec >kw.gpu &&
	gpumel -q --device cuda $o kcop.rec >kc.gpu &&
	$CMP close kw.gpu kc.gpu --input kcop.rec &&
	rec-copy --pieces 777 <k16.rec >k16.p.rec &&
	MELPIPE_GPUMEL_FRAMES=7 gpumel -q --device cuda $o k16.p.rec \
		>kp.rec &&
	$PC join kb0.rec kp.rec --rel 1e-5 &&
	f="--preset kaldi --use-energy=true" &&
	gpumel -q --device cuda $f k8.rec >k32.gpu &&
	gpumel -q --device cuda $f --dtype f16 k8.rec >k16.gpu &&
	gpumel -q --device cuda $f --dtype bf16 k8.rec >kbf.gpu &&
	$CMP cast k32.gpu k16.gpu &&
	$CMP cast k32.gpu kbf.gpu &&
	MELPIPE_CUDA_FFT=fused gpumel -q --device cuda $f k8.rec >kfu.gpu &&
	$CMP same k32.gpu kfu.gpu &&
	test_expect_code 1 env MELPIPE_CUDA_FFT=fused gpumel -q \
		--device cuda --preset kaldi --frame-length-ms=10 k8.rec \
		>x.rec 2>err &&
	test_grep "fbank takes the fused kernel for n_fft 256 and more, not 128" err
'

# The librosa preset's bands at n_fft 512 and 1000 (fused and cuFFT
# paths), spelled out for mfcc_ref.py.
LIB="--win-length 512 --hop 128 --window hann --center 1 --pad-mode constant
--n-mels 40 --fmin 0 --fmax nyquist --mel-scale slaney --norm slaney
--power 2 --log db --amin 1e-10 --top-db 80 --bins rfft"

test_expect_success GPU '--mfcc on the GPU: Kaldi, librosa (both FFT paths) against float64' '
	$MK --n 16 --len 600:30000 --dtype f32 --rate 16000 --signal tone \
		--seed 27 >tone.rec &&
	gpumel -q --device cuda --preset kaldi --mfcc 13 k16.rec >m1.gpu &&
	$MREF kaldi k16.rec m1.gpu --n-mfcc 13 &&
	gpumel -q --device cuda --preset kaldi --num-ceps 20 \
		--num-mel-bins 40 --use-energy --snip-edges=false \
		--cepstral-lifter 0 --dither=1 --seed=3 k8.rec >m2.gpu &&
	$MREF kaldi k8.rec m2.gpu --n-mfcc 20 --num-mel-bins 40 \
		--use-energy=true --snip-edges=false --cepstral-lifter 0 \
		--dither=1 --seed=3 &&
	o="--preset librosa --n-fft 512 --hop 128 --n-mels 40 --mfcc 20" &&
	gpumel -q --device cuda $o tone.rec >m3.gpu &&
	$MREF mel tone.rec m3.gpu --n-mfcc 20 --n-fft 512 $LIB --dtype f32 &&
	MELPIPE_CUDA_FFT=cufft MELPIPE_CUDA_CHUNK=1000 \
		gpumel -q --device cuda $o tone.rec >m4.gpu &&
	$MREF mel tone.rec m4.gpu --n-mfcc 20 --n-fft 512 $LIB --dtype f32 &&
	gpumel -q --device cuda $o --batch 3 tone.rec >m5.gpu &&
	MELPIPE_CUDA_GRAPH=0 gpumel -q --device cuda $o --batch 3 \
		tone.rec >m6.gpu &&
	$CMP same m5.gpu m6.gpu &&
	$MREF mel tone.rec m5.gpu --n-mfcc 20 --n-fft 512 $LIB --dtype f32 &&
	gpumel -q --device cuda $o --dtype f16 tone.rec >m7.gpu &&
	$GREF cast m3.gpu m7.gpu &&
	# no top_db, n_fft 2048: 256-thread teams split the mel sums (40
	# and 128 mels) before the DCT
	for m in 40 128; do
		gpumel -q --device cuda --preset librosa --n-fft 2048 \
			--hop 512 --n-mels $m --mfcc 20 --top-db none \
			tone.rec >m8.gpu &&
		$MREF mel tone.rec m8.gpu --n-mfcc 20 --n-fft 2048 $LIB \
			--win-length 2048 --hop 512 --n-mels $m \
			--top-db none --dtype f32 || return 1
	done
'

test_expect_success GPU 'a GPU that does not exist is an error naming it' '
	test_expect_code 1 gpumel --device cuda:99 mixed.rec >x.rec 2>err &&
	cat err &&
	test_grep "CUDA device 99 does not exist" err
'

test_done
