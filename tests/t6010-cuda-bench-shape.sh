#!/bin/sh
test_description='gpumel-cuda-bench --bench: a shape from gpumel options
(--record-samples N -- GPUMEL-OPTIONS), on the mock CUDA runtime'
. "$(dirname "$0")/test-lib.sh"

need_cuda_so
MOCK=$TOP/build/obj/tests/helper/gpumel-cuda-mock.so
test -f "$MOCK" || skip_all "no mock CUDA runtime (make test-helpers)"
SMALL="--batch=3 --reps=2 --records=5 --pipe-batch=2"

test_expect_success 'Kaldi fbank of one-second clips: gpumel options, own table' '
	gpumel-cuda-bench --bench="$MOCK" $SMALL --record-samples=16000 \
		-- --preset kaldi --num-mel-bins 80 >out &&
	cat out &&
	frames=$(( 1 + (16000 - 400) / 160 )) &&
	test_grep "fbank, 16000 Hz, frame 400 every 160, n_fft 512, 80 rows x $frames frames of f32" out &&
	for in in s16 f32; do
		test_grep "^RESULT kernels path=auto in=$in top_db=none records=3 record_samples=16000 gsamples_per_s=" out || return 1
	done &&
	test $(grep -c "^RESULT pipe path=auto graphs=[01] records=5 record_samples=16000 " out) = 2
'

test_expect_success 'every gpumel option counts: a mel shape, its rate, its dtype' '
	gpumel-cuda-bench --bench="$MOCK" $SMALL --record-samples=8000 \
		--sample-rate=8000 -- --n-fft 256 --hop 128 --n-mels 40 \
		--no-center --dtype f16 >out &&
	frames=$(( 1 + (8000 - 256) / 128 )) &&
	test_grep "mel, 8000 Hz, frame 256 every 128, n_fft 256, 40 rows x $frames frames of f16" out &&
	test $(grep -c "^RESULT kernels path=auto " out) = 2
'

test_expect_success 'the default shape keeps its table beside a given one' '
	gpumel-cuda-bench --bench="$MOCK" $SMALL >default &&
	test $(grep -c "^RESULT kernels path=\(fused\|cufft\) in=\(s16\|f32\) top_db=\(none\|80\) gsamples_per_s=[0-9.]* median_ms=[0-9.]*\$" default) = 8 &&
	test $(grep -c "^RESULT pipe path=\(fused\|cufft\) graphs=[01] seconds=" default) = 4 &&
	gpumel-cuda-bench --bench="$MOCK" $SMALL --record-samples=512 -- \
		--preset torchaudio --n-fft 512 --hop 512 --n-mels 32 \
		--no-center --dtype f16 >given &&
	test_grep "^RESULT kernels path=auto in=s16 .*record_samples=512 " given
'

test_expect_success 'gpumel usage errors are gpumel messages, exit 2, before any run' '
	test_expect_code 2 gpumel-cuda-bench --bench=/nonexistent.so \
		--record-samples=16000 -- --preset kaldi --bogus 2>err &&
	test_grep "^gpumel-cuda-bench: unrecognized option .--bogus" err &&
	test_expect_code 2 gpumel-cuda-bench --bench=/nonexistent.so \
		--record-samples=16000 -- --preset kaldi --top-db 80 2>err &&
	test_grep "top-db does not apply to --preset kaldi" err &&
	test_expect_code 2 gpumel-cuda-bench --bench=/nonexistent.so \
		--record-samples=16000 -- --preset kaldi in.rec 2>err &&
	test_grep "without a FILE" err &&
	test_expect_code 2 gpumel-cuda-bench --emu --record-samples=16000 2>err &&
	test_grep "applies to --bench" err
'

test_done
