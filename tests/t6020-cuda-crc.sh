#!/bin/sh
test_description='the CUDA backend CRC32C kernel (mel_cuda_launch_crc32c)
against lib crc32c, through gpumel-cuda-bench --crc: every length to 300
bytes at every even offset, the kernel part sizes, many payloads in one
launch, 64 MiB; on the mock CUDA runtime (the kernel split and arithmetic
run on the CPU) and on a GPU'
. "$(dirname "$0")/test-lib.sh"

SO=$MELPIPE_BIN/gpumel-cuda.so
need_cuda_so
MOCK=$TOP/build/obj/tests/helper/gpumel-cuda-mock.so
# the groups bench/crc.cu runs, the timed batch last
GROUPS=6

# crc_ok OUT: every group passed
crc_ok() {
	cat "$1" &&
	test_must_fail grep -q "^FAIL" "$1" &&
	test $(grep -c "^PASS crc " "$1") = $GROUPS
}

test_expect_success 'the backend exports the CRC hook' '
	nm -D --defined-only "$SO" >syms &&
	test_grep " T mel_cuda_crc32c_check$" syms
'

if test -f "$MOCK"; then
	test_expect_success 'mock runtime: every group equals lib crc32c' '
		MELPIPE_MOCK_STATS=1 gpumel-cuda-bench --crc="$MOCK" \
			--crc-payloads=64 --reps=2 >mock.out 2>stats ||
		{ cat mock.out stats; false; } &&
		crc_ok mock.out &&
		test_grep "crc timed: 64 x 80 KiB, median of 2: " mock.out &&
		test_grep "cuda mock: .* [1-9][0-9]* kernels" stats
	'

	test_expect_success 'mock runtime: a lost GPU fails every group' '
		test_expect_code 1 env MELPIPE_MOCK_LOSE_AT=1 \
			gpumel-cuda-bench --crc="$MOCK" --crc-payloads=2 \
			>lost.out &&
		cat lost.out &&
		test $(grep -c "^FAIL crc .* failed: unspecified launch failure$" \
			lost.out) = $GROUPS &&
		test_grep "^FAIL crc lengths 0\.\.300, .*: cudaEventSynchronize (the CRC kernels) failed" \
			lost.out &&
		test_must_fail grep -q "^PASS" lost.out
	'
fi

test_expect_success 'a count of timed payloads out of range is a usage error' '
	test_expect_code 2 gpumel-cuda-bench --crc="$SO" --crc-payloads=0 \
		2>err &&
	test_grep "crc-payloads: .0. is not a number in 1.." err
'

test_expect_success GPU 'GPU: every group equals lib crc32c, and its GB/s' '
	gpumel-cuda-bench --crc="$SO" >gpu.out ||
	{ cat gpu.out; false; } &&
	crc_ok gpu.out &&
	test_grep "crc timed: 40000 x 80 KiB, median of 30: .* GB/s" gpu.out
'

test_done
