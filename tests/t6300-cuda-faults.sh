#!/bin/sh
test_description='gpumel on a real GPU whose memory another process holds:
a clear error naming the allocation, no crash, no hang, and a pipeline
that renames nothing (needs a GPU and python3 with torch on CUDA)'
. "$(dirname "$0")/test-lib.sh"

need_cuda_so
MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"

# torch on CUDA, in whichever python has it (the GPU machine's python3)
TORCH_PY=
for py in python3 "$PYTHON"; do
	if "$py" -c 'import torch; assert torch.cuda.is_available()' \
		>/dev/null 2>&1; then
		TORCH_PY=$py
		break
	fi
done

# hold_gpu: a process that takes all but HEADROOM MiB of the GPU's free
# memory and keeps it until killed; its pid in holder.pid. Waits until
# the memory is taken.
hold_gpu() {
	"$TORCH_PY" -c '
import sys, time, torch
free, total = torch.cuda.mem_get_info()
keep = int(sys.argv[1]) << 20
x = torch.empty(max(free - keep, 0), dtype=torch.uint8, device="cuda")
print("held", x.numel() >> 20, "MiB of", total >> 20, flush=True)
time.sleep(300)
' "$1" >holder.out 2>holder.err &
	echo $! >holder.pid
	for i in $(seq 1 300); do
		grep -q held holder.out 2>/dev/null && return 0
		kill -0 "$(cat holder.pid)" 2>/dev/null || break
		sleep 0.1
	done
	cat holder.out holder.err
	return 1
}

release_gpu() {
	kill "$(cat holder.pid)" 2>/dev/null
	wait "$(cat holder.pid)" 2>/dev/null
	:
}

test_expect_success GPU 'a stream of clips' '
	$MK --n 64 --len 40960:40960 --dtype s16 --seed 3 >in.rec &&
	recdump -q in.rec
'

if test -n "$TORCH_PY"; then
	test_expect_success GPU 'GPU memory taken: --device cuda fails and says why' '
		hold_gpu 4 &&
		{ timeout 120 gpumel --device cuda in.rec >out.rec 2>err;
		  echo $? >rc; release_gpu; } &&
		cat err &&
		test "$(cat rc)" = 1 &&
		test_grep "out of GPU memory\|out of memory" err &&
		test_must_fail grep -qi "segmentation\|core dumped\|abort" err
	'

	test_expect_success GPU 'GPU memory taken: --device auto says so and uses the CPU' '
		hold_gpu 4 &&
		{ timeout 120 gpumel --device auto in.rec >auto.rec 2>err;
		  echo $? >rc; release_gpu; } &&
		cat err &&
		test "$(cat rc)" = 0 &&
		test_grep "using the CPU backend" err &&
		recdump -q auto.rec
	'

	# Each status on its own (dash has no pipefail); gpumel's message
	# shows that the pipeline ran and failed where it should.
	test_expect_success GPU 'GPU memory taken: the pipeline fails, no dataset' '
		hold_gpu 4 &&
		{ { timeout 120 gpumel --device cuda in.rec 2>err-pipe;
		    echo $? >gpumel.rc; } |
		  { timeout 120 h5pack -o out.h5 2>h5.err; echo $? >h5.rc; };
		  release_gpu; } &&
		cat err-pipe h5.err &&
		test "$(cat gpumel.rc)" = 1 &&
		test_grep "^gpumel: .*out of \(GPU \)\?memory" err-pipe &&
		test "$(cat h5.rc)" = 1 &&
		test ! -e out.h5 &&
		test -z "$(ls -A | grep "^\.out\.h5")"
	'
else
	say "# torch with CUDA not found: the GPU memory tests are skipped"
fi

test_done
