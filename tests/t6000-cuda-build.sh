#!/bin/sh
test_description='gpumel CUDA backend: the build, what it exports, how it
fails without a GPU, and the kernels arithmetic run on the CPU'
. "$(dirname "$0")/test-lib.sh"

SO=$MELPIPE_BIN/gpumel-cuda.so
need_cuda_so
MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
CMP="$PYTHON $TEST_DIRECTORY/py/cuda_cmp.py"

test_expect_success 'the .so exports its four entry points only' '
	nm -D --defined-only "$SO" | awk "{ print \$3 }" | sort >syms &&
	printf "%s\n" mel_cuda_crc32c_check mel_cuda_open \
		mel_cuda_time_kernels mel_cuda_warm >expect &&
	test_cmp expect syms
'

test_expect_success 'cuFFT dynamic, CUDA runtime static, loaded for good' '
	readelf -d "$SO" >dyn &&
	test_grep "NEEDED.*libcufft\.so" dyn &&
	test_must_fail grep -q "libcudart" dyn &&
	test_grep "NODELETE" dyn
'

test_expect_success 'kernel arithmetic on the CPU within 0.01 dB of float64' '
	gpumel-cuda-bench --emu >emu.out || { cat emu.out; false; } &&
	cat emu.out &&
	test_must_fail grep -q "^FAIL" emu.out &&
	test $(grep -c "^ok   emu" emu.out) -ge 20
'

test_expect_success 'an unknown MELPIPE_CUDA_FFT is refused by name' '
	test_expect_code 1 env MELPIPE_CUDA_FFT=fast \
		gpumel-cuda-bench --probe "$SO" >bad.out &&
	test_grep "MELPIPE_CUDA_FFT=.fast.: use auto, fused or cufft" bad.out
'

test_expect_success 'a stream to compute' '
	$MK --n 24 --len 1:5000 --dtype mixed --skip 4 --seed 3 >in.rec
'

if test_have_prereq GPU; then
	test_expect_success GPU 'the backend opens on this GPU' '
		gpumel-cuda-bench --probe "$SO" >probe.out &&
		cat probe.out &&
		test_grep "^open ok: cuda:[0-9]*: " probe.out
	'
else
	test_expect_success 'without a GPU the backend does not open, says why' '
		test_expect_code 1 gpumel-cuda-bench --probe "$SO" >probe.out &&
		cat probe.out &&
		test_grep "^open failed: .*[Cc][Uu][Dd][Aa]" probe.out
	'

	test_expect_success 'without a GPU --device cuda is an error saying why' '
		test_expect_code 1 gpumel --device cuda in.rec >out.rec 2>err &&
		cat err &&
		test_grep "no usable GPU for --device cuda: ." err
	'

	test_expect_success 'without a GPU --device auto falls back to the CPU' '
		gpumel --device auto in.rec >auto.rec 2>err &&
		test_grep "using the CPU" err &&
		gpumel -q --device cpu in.rec >cpu.rec &&
		$CMP same auto.rec cpu.rec
	'
fi

# The backend's host code on a CUDA runtime that runs on the CPU
# (tests/helper/cuda_mock.cu, built by make test-helpers).
MOCK=$TOP/build/obj/tests/helper/gpumel-cuda-mock.so
if test -f "$MOCK"; then
	test_expect_success 'mock runtime: the bench grid, graphs, cuFFT chunks' '
		MELPIPE_MOCK_STATS=1 MELPIPE_CUDA_CHUNK=13 \
			gpumel-cuda-bench --parity "$MOCK" >mock.out 2>stats ||
		{ cat mock.out stats; false; } &&
		cat mock.out stats &&
		test_must_fail grep -q "^FAIL" mock.out &&
		test $(grep -c "^ok   gpu" mock.out) -ge 40 &&
		test_grep "cuda mock: [1-9][0-9]* captures, [1-9][0-9]* graph" \
			stats
	'

	# gpumel opens the backend only where libcuda.so.1 loads; the mock
	# runtime never calls it, so an empty library stands in for the
	# driver on a machine without one
	test_expect_success 'mock runtime: gpumel in a folder with it' '
		cp "$MELPIPE_BIN/gpumel" ./gpumel &&
		cp "$MOCK" ./gpumel-cuda.so &&
		mkdir driver &&
		${CC:-cc} -shared -o driver/libcuda.so.1 -x c /dev/null &&
		$MK --n 30 --len 1:12000 --lens 12000,1,2,512,513 \
			--dtype mixed --skip 3 --seed 5 >m.rec
	'

	LD_LIBRARY_PATH=$PWD/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH

	# mock_vs_cpu NAME [gpumel options]: the mock GPU run (both FFT
	# paths) against the CPU backend, as t6100 does on a GPU
	mock_vs_cpu() {
		name=$1
		shift
		./gpumel -q --device cpu "$@" m.rec >"$name.cpu" &&
		./gpumel -q --device cuda "$@" m.rec >"$name.gpu" &&
		$CMP close "$name.gpu" "$name.cpu" --input m.rec &&
		MELPIPE_CUDA_FFT=cufft MELPIPE_CUDA_CHUNK=9 \
			./gpumel -q --device cuda "$@" m.rec >"$name.cufft" &&
		$CMP close "$name.cufft" "$name.cpu" --input m.rec
	}

	test_expect_success 'mock runtime: gpumel --device cuda equals cpu' '
		mock_vs_cpu a --n-fft 512 --hop 160 --top-db 60 --dtype f16 &&
		mock_vs_cpu b --preset torchaudio --batch 5 &&
		mock_vs_cpu c --n-fft 511 --hop 100 --log none --dtype f32 &&
		mock_vs_cpu d --n-fft 64 --hop 16 --pad-mode reflect \
			--n-mels 16 --log ln --dtype bf16 --batch 3
	'

	# mel_cuda_warm() runs in a thread from gpumel's start, before the
	# header is read: -v says how long it took and how much of it came
	# before the header (held back by 1 s here: all of it), and counts
	# the backend's start from gpumel's own (so at least that 1 s)
	test_expect_success 'mock runtime: the driver and context start early' '
		{ sleep 1; cat m.rec; } |
			./gpumel -v --device cuda >w.rec 2>err &&
		cat err &&
		test_grep "backend cuda:0: .*(started in .*the CUDA driver and context took [0-9.]* s, [0-9.]* s of it before the stream.s header came)" err &&
		took=$(sed -n "s/.*context took \([0-9.]*\) s, .*/\1/p" err) &&
		before=$(sed -n "s/.*s, \([0-9.]*\) s of it before.*/\1/p" err) &&
		test -n "$took" && test "$took" = "$before" &&
		since=$(sed -n "s/.*(started in \([0-9.]*\) s from gpumel.s own start.*/\1/p" err) &&
		awk -v t="$since" "BEGIN { exit !(t >= 1.0) }" &&
		./gpumel -q --device cuda m.rec >nw.rec &&
		$CMP same w.rec nw.rec
	'

	test_expect_success 'mock runtime: out of GPU memory is said so' '
		test_expect_code 1 env MELPIPE_MOCK_FAIL_MALLOC=9 \
			./gpumel --device cuda m.rec >x.rec 2>err &&
		cat err &&
		test_grep "out of GPU memory: cudaMalloc of [0-9]* bytes for" err
	'

	# A GPU that falls off the bus mid-run (the mock fails the 3rd wait
	# and everything after it, as a lost context does): gpumel stops
	# naming the device, says that the GPU stopped working, names the
	# call and the reason; it does not hang, and h5pack keeps nothing.
	STOPPED="cuda:0 (Mock GPU 0 (CPU)): the GPU stopped working: "
	LOST="^gpumel: $STOPPED"
	LOST_WHY="failed: unspecified launch failure (the CUDA context is lost"
	BATCH="GPU work of a batch ([0-9]* records, [0-9]* frames)"
	test_expect_success 'mock runtime: a GPU lost mid-run is said so' '
		test_expect_code 1 env MELPIPE_MOCK_LOSE_AT=3 timeout 60 \
			./gpumel --device cuda --batch 3 m.rec >x.rec 2>err &&
		cat err &&
		test_grep "$LOST$BATCH: cudaEventSynchronize $LOST_WHY" err
	'

	# Each status on its own (dash has no pipefail).
	test_expect_success 'mock runtime: GPU lost in a pipeline: no dataset' '
		{ MELPIPE_MOCK_LOSE_AT=4 timeout 60 ./gpumel --device cuda \
			--batch 3 m.rec 2>err-pipe; echo $? >gpumel.rc; } |
		{ timeout 60 h5pack -o lost.h5 2>h5.err; echo $? >h5.rc; } &&
		cat err-pipe h5.err &&
		test "$(cat gpumel.rc)" = 1 &&
		test_grep "$LOST$BATCH: .*$LOST_WHY" err-pipe &&
		test "$(cat h5.rc)" = 1 &&
		test ! -e lost.h5 &&
		test -z "$(ls -A | grep "^\.lost\.h5")"
	'

	# Lost while the backend starts (the first wait: the constants'
	# upload): --device cuda fails saying so, --device auto falls back to
	# the CPU (t6300's policy for a GPU that cannot start).
	UPLOAD="cudaDeviceSynchronize (uploading constants)"
	NO_GPU="no usable GPU for --device cuda"
	test_expect_success 'mock runtime: a GPU lost at start-up is said so' '
		test_expect_code 1 env MELPIPE_MOCK_LOSE_AT=1 timeout 60 \
			./gpumel --device cuda m.rec >x.rec 2>err &&
		cat err &&
		test_grep "^gpumel: $NO_GPU: $STOPPED$UPLOAD $LOST_WHY" err &&
		MELPIPE_MOCK_LOSE_AT=1 timeout 60 ./gpumel --device auto m.rec \
			>y.rec 2>err &&
		test_grep "($STOPPED$UPLOAD .*); using the CPU backend" err &&
		gpumel -q --device cpu m.rec >y-cpu.rec &&
		$CMP same y.rec y-cpu.rec
	'

	test_expect_success 'mock runtime: no device, or not that one' '
		test_expect_code 1 env MELPIPE_MOCK_DEVICES=0 \
			./gpumel --device cuda m.rec >x.rec 2>err &&
		test_grep "no usable GPU.*no CUDA-capable device" err &&
		test_expect_code 1 ./gpumel --device cuda:3 m.rec >x.rec 2>err &&
		test_grep "CUDA device 3 does not exist (1 found)" err &&
		MELPIPE_MOCK_DEVICES=0 ./gpumel --device auto m.rec >y.rec 2>err &&
		test_grep "using the CPU backend" err
	'
fi

test_done
