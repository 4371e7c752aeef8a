#!/bin/sh
# shellcheck disable=SC1091,SC2016,SC2034 # test-lib.sh: eval'd bodies
test_description='gpumel loses its GPU in the middle of a run (a card
falling off the bus, a fatal ECC error): exit 1 with a message naming the
CUDA call and the reason, no crash, no hang, no stream or dataset that
looks complete. The loss is real: tests/helper/gpu-trap.so, preloaded,
runs a kernel that executes "trap" in the primary context gpumel works in,
which breaks that context for good (the card itself is untouched). Needs
a GPU.'
. "$(dirname "$0")/test-lib.sh"

need_cuda_so
test_have_prereq NOSAN ||
	skip_all "a preloaded library cannot go before the sanitizer runtime"
TRAP=$TOP/build/obj/tests/helper/gpu-trap.so
test -f "$TRAP" || skip_all "gpu-trap.so not built (make test-helpers)"
MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"

# The trap fires TRAP_MS after gpumel starts (its backend starts well
# within a second). The producer sends the first HEAD_MIB of the stream at
# once (three 8 MiB batches: gpumel computes and writes them out as soon as
# its backend is up) and the rest at RATE MiB/s, 10 s more, so gpumel is
# still reading input when the trap fires. trap_fired_mid_run and
# computed_before_trap fail the test, saying why, when the trap came too
# late (gpumel had finished: the stream was too short) or too early.
TRAP_MS=3000
HEAD_MIB=24
RATE=4
# gpu-trap.so's line when the trap went off; the reason follows
TRAP_LINE='^gpu-trap: trap kernel launched at [0-9]* ms on device [0-9]*: '
# gpumel -v's line for its backend, "cuda:N: NAME (FFT PATH) (started in
# ...)": \1 the device, \2 its name
STARTED_LINE='^gpumel: backend \(cuda:[0-9]*\): \(.*\) ([a-z ]*) (started in .*'
# what names the step that failed: a CUDA or cuFFT call, a kernel launch
CALL='\(\(cuda\|cufft\)[A-Z][A-Za-z]*\|launching the [a-z_ ]* kernel\)'

# gpumel_trapped DEVICE ERR: the slow producer into gpumel -v, writing to
# stdout, the trap preloaded into gpumel alone (not into timeout); gpumel's
# stderr in ERR, its exit status in ERR.rc.
gpumel_trapped() {
	"$PYTHON" slow_cat.py in.rec "$HEAD_MIB" "$RATE" 2>prod.err | {
		timeout 120 env LD_PRELOAD="$TRAP" \
			MELPIPE_TEST_GPU_TRAP_MS="$TRAP_MS" \
			gpumel -v --device "$1" 2>"$2"
		echo $? >"$2.rc"
	}
}

# line_of PATTERN FILE: the number of the first line of FILE matching
# PATTERN, empty when none does.
line_of() {
	grep -n -e "$1" "$2" | head -n 1 | cut -d: -f1
}

# trap_fired_mid_run ERR: gpu-trap.so broke the context while gpumel was
# running on the GPU, after its CUDA backend had started; otherwise says
# why the test does not test a loss in the middle of a run.
trap_fired_mid_run() {
	trap_at=$(line_of "$TRAP_LINE" "$1")
	if test -z "$trap_at"; then
		if grep "^gpu-trap: no trap" "$1"; then
			echo "gpu-trap.so could not break the context (above)"
		elif test "$(cat "$1.rc")" = 0; then
			echo "gpumel finished before the trap fired at" \
			     "$TRAP_MS ms: the stream is too short"
		else
			echo "no line from gpu-trap.so: the trap never fired"
		fi
		cat "$1"
		return 1
	fi
	if grep "^gpu-trap: .*(CUresult 0)" "$1"; then
		echo "the trap kernel did not break the context"
		return 1
	fi
	started=$(line_of "^gpumel: backend cuda:.*(started in" "$1")
	if test -z "$started" || test "$started" -gt "$trap_at"; then
		echo "the trap fired before gpumel's CUDA backend started:" \
		     "raise TRAP_MS (gpumel fell back to the CPU, or failed" \
		     "to open the GPU, which t6300 tests)"
		cat "$1"
		return 1
	fi
}

# computed_before_trap OUT: OUT holds at least one features record. None
# can be computed after the trap (the context is broken), so gpumel was
# computing when it fired.
computed_before_trap() {
	n=$(recdump "$1" 2>/dev/null | grep -c "^[0-9]* features ") || true
	if test "${n:-0}" -lt 1; then
		echo "no features record before the trap: gpumel had not" \
		     "computed anything yet (raise TRAP_MS or HEAD_MIB)"
		return 1
	fi
	echo "$n features records computed before the trap"
}

# failed_cleanly ERR: exit 1 (not 124, a hang; not over 128, a signal);
# gpumel says that the GPU it started on (named as its -v line names it)
# stopped working, with the CUDA or cuFFT call or kernel launch that found
# out and the reason the trap gave (after cuFFT's own, where a cuFFT call
# found out); nothing crashed.
failed_cleanly() {
	cat "$1" &&
	reason=$(sed -n "s/$TRAP_LINE\(.*\) (CUresult [0-9]*)\$/\1/p" "$1") &&
	test -n "$reason" &&
	test "$(cat "$1.rc")" = 1 &&
	dev=$(sed -n "s/$STARTED_LINE/\1 (\2)/p" "$1" | head -n 1) &&
	test -n "$dev" &&
	grep -F -e "gpumel: $dev: the GPU stopped working: " "$1" >lost.err &&
	grep "$CALL.* failed: " lost.err &&
	grep -i -F -e "failed: $reason (the CUDA context is lost" \
		-e "the CUDA runtime says: $reason (the CUDA context is lost" \
		lost.err &&
	test_must_fail grep -i "segmentation\|core dumped\|abort" "$1"
}
test_expect_success GPU 'a stream of 64 MB and its slow producer' '
	$MK --n 200 --len 160000:160000 --dtype s16 --seed 3 >in.rec &&
	recdump -q in.rec &&
	cat >slow_cat.py <<-\EOF &&
	import os, sys, time
	f = open(sys.argv[1], "rb")
	head, rate = int(sys.argv[2]) << 20, float(sys.argv[3]) * (1 << 20)
	chunk = 1 << 18
	try:
	    data = f.read(head)
	    while data:
	        while data:
	            data = data[os.write(1, data):]
	        time.sleep(chunk / rate)
	        data = f.read(chunk)
	except BrokenPipeError:
	    sys.exit(1)
	EOF
	"$PYTHON" slow_cat.py in.rec 60 1000 | cmp - in.rec
'

test_expect_success GPU 'lost GPU, --device cuda: exit 1 naming GPU and call' '
	gpumel_trapped cuda err >out.rec &&
	trap_fired_mid_run err &&
	computed_before_trap out.rec &&
	failed_cleanly err
'

test_expect_success GPU 'lost GPU: the output is a broken stream' '
	test -s out.rec &&
	test_must_fail recdump -q out.rec
'

test_expect_success GPU 'lost GPU, --device auto: exit 1, no switch to CPU' '
	gpumel_trapped auto err-auto >auto.rec &&
	trap_fired_mid_run err-auto &&
	computed_before_trap auto.rec &&
	failed_cleanly err-auto &&
	test_must_fail grep "using the CPU backend" err-auto &&
	test_must_fail recdump -q auto.rec
'

# The cuFFT path (n_fft 400 is not a power of two), which has cuFFT calls
# of its own that may be the first to meet the broken context: then
# cuFFT's own reason is said, and the runtime's after it.
test_expect_success GPU 'lost GPU on the cuFFT path: exit 1 naming it' '
	"$PYTHON" slow_cat.py in.rec "$HEAD_MIB" "$RATE" 2>prod.err | {
		timeout 120 env LD_PRELOAD="$TRAP" \
			MELPIPE_TEST_GPU_TRAP_MS="$TRAP_MS" \
			gpumel -v --device cuda --n-fft 400 --hop 160 \
			2>err-fft >fft.rec
		echo $? >err-fft.rc
	} &&
	test_grep "(cufft)" err-fft &&
	trap_fired_mid_run err-fft &&
	computed_before_trap fft.rec &&
	failed_cleanly err-fft &&
	test_must_fail recdump -q fft.rec
'

# Each status on its own: dash has no pipefail.
test_expect_success GPU 'lost GPU in a pipeline: it fails, no dataset' '
	{ gpumel_trapped cuda err-pipe |
		timeout 120 h5pack -o out.h5 2>h5.err; echo $? >h5.rc; } &&
	cat h5.err &&
	trap_fired_mid_run err-pipe &&
	failed_cleanly err-pipe &&
	test "$(cat h5.rc)" = 1 &&
	test ! -e out.h5 &&
	test -z "$(ls -A | grep "^\.out\.h5")"
'

test_expect_success NOSAN 'gpu-trap.so does nothing unless asked' '
	$MK --n 4 --len 4000:4000 --seed 1 >small.rec &&
	LD_PRELOAD="$TRAP" gpumel --device cpu small.rec >small.out \
		2>err-none &&
	recdump -q small.out &&
	test_must_fail grep gpu-trap err-none
'

test_expect_success NOSAN 'gpu-trap.so says why it cannot set the trap' '
	LD_PRELOAD="$TRAP" MELPIPE_TEST_GPU_TRAP_MS=soon \
		gpumel --device cpu small.rec >small.out 2>err-bad &&
	test_grep "^gpu-trap: no trap: MELPIPE_TEST_GPU_TRAP_MS=.soon. is not" \
		err-bad
'

test_done
