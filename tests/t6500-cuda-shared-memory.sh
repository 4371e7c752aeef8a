#!/bin/sh
test_description='gpumel --device cuda takes payloads from the rings of
shared memory: copied to the GPU from where they lie, their CRCs checked
on the GPU (the CUDA mock runtime here, the GPU where there is one)'
. "$(dirname "$0")/test-lib.sh"

# With the shared-memory path on (MELPIPE_SHM=1), gpumel's CUDA backend
# registers each ring it reads from with the GPU (cudaHostRegister) and
# copies each s16 payload that came by reference straight from the ring
# to the device, adjacent payloads in one copy; the ring's slot stays held
# until the copy is done, and the payload's CRC32C is computed on the GPU
# and compared with the record's. Where a ring cannot be registered the
# host copies the payloads into the batch and the GPU still checks them.
# Where there is no GPU, the backend's host code runs on the mock CUDA
# runtime (tests/helper/cuda_mock.cu), which runs the CRC kernel's
# arithmetic on the CPU.
need_cuda_so
MOCK=$TOP/build/obj/tests/helper/gpumel-cuda-mock.so
MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
CMP="$PYTHON $TEST_DIRECTORY/py/cuda_cmp.py"
MELPIPE_SHM=1
export MELPIPE_SHM

if test_have_prereq GPU; then
	G=gpumel
else
	test -f "$MOCK" || skip_all "no GPU and no mock runtime (make test-helpers)"
	MOCKED=1
	# as t6000: gpumel beside the mock, an empty library for the driver
	cp "$MELPIPE_BIN/gpumel" ./gpumel &&
	cp "$MOCK" ./gpumel-cuda.so &&
	mkdir driver &&
	${CC:-cc} -shared -o driver/libcuda.so.1 -x c /dev/null ||
		skip_all "cannot set up the mock runtime"
	LD_LIBRARY_PATH=$PWD/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
	G=./gpumel
fi
GO="--device cuda --n-fft 64 --hop 64 --n-mels 8"
DMA='shared memory to the GPU: [1-9][0-9]* payloads (.*) copied from the rings by DMA in [1-9][0-9]* copies, their CRCs checked on the GPU'

# 600 records: a writer looks for its reader's answer at payloads 1, 2,
# 4, 8, ..., so a reader that attaches late still gets most by reference
test_expect_success 'set up: 600 s16 records, 2,000-20,000 samples' '
	$MK --n 600 --len 2000:20000 --dtype s16 --rate 16000 --seed 3 >in.rec
'

# segment makes the windows records (its own ring: its input is a file);
# gpumel takes their samples from the ring
test_expect_success 'windows by reference: by DMA, the same features as inline' '
	segment --len 4000 --hop 4000 in.rec | $G -v $GO >shm.rec 2>g.err &&
	test_grep "$DMA" g.err &&
	MELPIPE_SHM=0 segment --len 4000 --hop 4000 in.rec |
		MELPIPE_SHM=0 $G -q $GO >off.rec &&
	$CMP same shm.rec off.rec
'

# tools/gpumel/detach.h: on a GPU (auto), or forced (the mock), the child
# gives the rings back and lets the waiting process end before it lets
# the GPU go; the features are the same
test_expect_success 'detached: the rings given back, the same features' '
	mode=on &&
	if test_have_prereq GPU; then mode=auto; fi &&
	segment --len 4000 --hop 4000 in.rec |
		MELPIPE_GPUMEL_DETACH=$mode $G -v $GO >det.rec 2>det.err &&
	test_grep "$DMA" det.err &&
	test_grep "^gpumel: exit: gpumel (pid [0-9]*) ends when its output is complete, and its process [0-9]* releases the backend (cuda:" det.err &&
	$CMP same det.rec off.rec &&
	segment --len 4000 --hop 4000 in.rec |
		MELPIPE_GPUMEL_DETACH=off $G -v $GO >one.rec 2>one.err &&
	! grep "exit:" one.err &&
	$CMP same one.rec off.rec
'

# a device that admits one process at a time (exclusive-process compute
# mode, which the mock can pretend): gpumel ends only once it has let the
# device go, so that the next process can have it
test_expect_success 'an exclusive-process device: no early end' '
	if test -z "$MOCKED"; then
		say "# (skipped on a real GPU: its mode is not ours to set)"
		return 0
	fi &&
	FAULT=$TOP/build/obj/tests/helper/fault-io.so &&
	test -f "$FAULT" &&
	segment --len 4000 --hop 4000 in.rec >win.rec &&
	rm -f mark &&
	MELPIPE_MOCK_EXCLUSIVE=1 MELPIPE_GPUMEL_DETACH=on LD_PRELOAD=$FAULT \
		MELPIPE_FAULT_EXIT_DELAY_MS=2000 MELPIPE_FAULT_EXIT_MARK=$PWD/mark \
		$G -v $GO <win.rec >excl.rec 2>excl.err &&
	test -e mark &&
	test_grep "^gpumel: exit: gpumel (pid [0-9]*) ends once its process [0-9]* has released the backend (cuda:.*), which admits one process at a time$" excl.err &&
	$CMP same excl.rec off.rec &&
	rm -f mark &&
	MELPIPE_GPUMEL_DETACH=on LD_PRELOAD=$FAULT \
		MELPIPE_FAULT_EXIT_DELAY_MS=2000 MELPIPE_FAULT_EXIT_MARK=$PWD/mark \
		$G -q $GO <win.rec >shared.rec &&
	test ! -e mark &&
	{ test_wait_for test -e mark ||
	  { echo "no mark: the release was cut short"; false; }; }
'

# a ring of 1 MiB holds less than one of gpumel's batches (8 MiB): a
# batch is passed on once it holds a quarter of the ring, so that segment,
# waiting for room, never waits on a batch that waits for its records
test_expect_success 'a ring smaller than a batch: batches go early, no stall' '
	MELPIPE_SHM_RING_MB=1 segment -v --len 4000 --hop 4000 in.rec \
		2>s.err | $G -v $GO >small.rec 2>g.err &&
	test_grep "$DMA" g.err &&
	test_grep "shared memory: [1-9][0-9]* batches passed on before they were full" g.err &&
	$CMP same small.rec off.rec
'

# recmerge passes audio records on (its own ring for their payloads)
test_expect_success 'audio records by reference: by DMA, the same features' '
	JOB=0123456789abcdef0123456789abcdef01234567 &&
	rec-copy --shard 0/2 --job $JOB <in.rec >s0.rec &&
	rec-copy --shard 1/2 --job $JOB <in.rec >s1.rec &&
	recmerge s0.rec s1.rec 2>/dev/null | $G -v $GO >ashm.rec 2>a.err &&
	test_grep "$DMA" a.err &&
	$G -q $GO in.rec >aoff.rec &&
	$CMP same ashm.rec aoff.rec
'

# samples no window covers may stay in a windows record's payload
# (formats/record.md): the copy and the CRC take the whole payload,
# past the batch's last window
test_expect_success 'windows payloads past their last window: the same features' '
	"$PYTHON" -c "
import sys
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import numpy as np
from rec_stream import Builder, T_WINDOWS
n = 2000
b = Builder(pairs=((\"kind\", \"audio\"), (\"sample_rate\", \"16000\"),
                   (\"clips\", str(n))))
rng = np.random.default_rng(1)
for c in range(n):
    x = (rng.standard_normal(9000) * 3000).astype(\"<i2\")
    b.item(T_WINDOWS, x.tobytes(), clip=c, clip_samples=9000, dtype=1,
           key=b\"k%d\" % c, dim0=9000, dim1=1, win_len=2000, win_hop=3000,
           n_windows=2)
sys.stdout.buffer.write(b.bytes())
" >tail.rec &&
	JOB=0123456789abcdef0123456789abcdef01234567 &&
	rec-copy --shard 0/2 --job $JOB <tail.rec >t0.rec &&
	rec-copy --shard 1/2 --job $JOB <tail.rec >t1.rec &&
	recmerge t0.rec t1.rec 2>/dev/null | $G -v $GO >tshm.rec 2>t.err &&
	test_grep "$DMA" t.err &&
	$G -q $GO tail.rec >toff.rec &&
	$CMP same tshm.rec toff.rec
'

# (gpumel straight in the pipeline, not under a shell function: the
# writer offers its ring to the process that reads its pipe)
test_expect_success 'a payload changed in the ring: the GPU finds it, no output' '
	{ test-rec-shm corrupt 2>w.err | $G $GO >bad.rec 2>bad.err;
	  echo $? >rc; } &&
	test "$(cat rc)" = 1 &&
	test_grep "changed in the ring" w.err &&
	test_grep "^gpumel: clip [0-9]* (.a.wav.): checksum mismatch of a payload in shared memory, 8192 bytes (its CRC32C must be 0x[0-9a-f]*, the cuda:[0-9]*: .* computed 0x[0-9a-f]*): changed after it was sent$" bad.err &&
	test_must_fail grep -q "^gpumel: .*record [0-9]* at byte" bad.err &&
	test_must_fail recdump -q bad.rec 2>/dev/null
'

test_expect_success 'with --device cpu the reader finds it on the CPU' '
	{ test-rec-shm corrupt 2>wc.err | $G --device cpu --n-fft 256 \
		--hop 64 --n-mels 32 >/dev/null 2>cpu.err; echo $? >rc; } &&
	test "$(cat rc)" = 1 &&
	test_grep "changed in the ring" wc.err &&
	test_grep "checksum mismatch of a payload in shared memory" cpu.err
'

if test -n "$MOCKED"; then
	# (payloads that are not neighbours in the ring, segment's windows
	# here, go to the device in one batched copy a batch)
	test_expect_success 'the rings are registered with the GPU, and undone' '
		segment --len 4000 --hop 4000 in.rec |
			MELPIPE_MOCK_STATS=1 $G -q $GO >/dev/null 2>stats &&
		test_grep "[1-9][0-9]* host registrations, [1-9][0-9]* undone, [1-9][0-9]* batched copies" stats &&
		sed -n "s/.* \([0-9]*\) host registrations, \([0-9]*\) undone.*/\1 \2/p" stats >n &&
		read r u <n && test "$r" = "$u"
	'

	test_expect_success 'a ring the GPU will not register: the host copies, the GPU checks' '
		segment --len 4000 --hop 4000 in.rec |
			MELPIPE_MOCK_FAIL_REGISTER=1 $G -v $GO >reg.rec 2>reg.err &&
		test_grep "shared memory to the GPU: [1-9][0-9]* payloads (.*), .* of them copied by the CPU (.*cudaHostRegister of a ring of shared memory" reg.err &&
		$CMP same reg.rec off.rec
	'
fi

test_done
