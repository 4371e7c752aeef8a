#!/bin/sh
test_description='gpumel: the same output for any -j and --batch'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
REF="$PYTHON -W ignore $TEST_DIRECTORY/py/gpumel_ref.py"
DUMP="$PYTHON $TEST_DIRECTORY/py/gpumel_rec.py dump"

# Many short records and a few long ones (a long record is split between
# threads, and its --top-db clamp then waits for all of them), mixed types.
test_expect_success 'make streams' '
	$MK --n 300 --len 1:3000 --dtype mixed --skip 5,77 --seed 21 \
		>many.rec &&
	$MK --n 6 --len 100000:400000 --lens 700000 --signal tone \
		--dtype s16 --seed 22 >long.rec
'

# run INPUT TAG OPTIONS...: TAG.rec and its dump TAG.dump
run() {
	run_in=$1 run_tag=$2; shift 2
	gpumel -q --device cpu --n-fft 400 --hop 160 --n-mels 40 \
		--top-db 60 "$@" $run_in >$run_tag.rec &&
	$DUMP $run_tag.rec >$run_tag.dump
}

test_expect_success '-j 1, 2, 3, 4, 7: bit for bit the same' '
	for s in many long; do
		run $s.rec $s.j1 -j 1 &&
		for j in 2 3 4 7; do
			run $s.rec $s.j$j -j $j &&
			test_cmp $s.j1.dump $s.j$j.dump || return 1
		done
	done &&
	test $(wc -l <many.j1.dump) = 300
'

test_expect_success 'and right: checked against the reference' '
	$REF check long.rec long.j4.rec --n-fft 400 --win-length 400 \
		--hop 160 --window hann --center 1 --pad-mode constant \
		--n-mels 40 --fmin 0 --fmax nyquist --mel-scale slaney \
		--norm slaney --power 2 --log db --amin 1e-10 --top-db 60 \
		--dtype f32
'

test_expect_success '--batch 1, 7, 1000: the same as the default batches' '
	for b in 1 7 1000; do
		run many.rec many.b$b -j 3 --batch $b &&
		test_cmp many.j1.dump many.b$b.dump &&
		run long.rec long.b$b -j 2 --batch $b &&
		test_cmp long.j1.dump long.b$b.dump || return 1
	done
'

test_expect_success 'f16 output: the same for any -j too' '
	run many.rec h1 -j 1 --dtype f16 &&
	run many.rec h4 -j 4 --dtype f16 &&
	test_cmp h1.dump h4.dump
'

# The host loop with an asynchronous backend (several batches in flight):
# on a GPU machine, the same records in the same order for any --batch,
# and the same numbers as the CPU backend.
test_expect_success GPU 'CUDA backend: any --batch, and as the CPU backend' '
	gpumel -q --device cuda --n-fft 400 --hop 160 many.rec >g0.rec &&
	$DUMP g0.rec >g0.dump &&
	for b in 1 7 1000; do
		gpumel -q --device cuda --batch $b --n-fft 400 --hop 160 \
			many.rec >g$b.rec &&
		$DUMP g$b.rec >g$b.dump &&
		test_cmp g0.dump g$b.dump || return 1
	done &&
	gpumel -q --device cpu --n-fft 400 --hop 160 many.rec >c0.rec &&
	$REF compare c0.rec g0.rec
'

test_expect_success VALGRIND 'no memory errors under valgrind' '
	$MK --n 30 --len 1:3000 --dtype mixed --skip 3 --lens 0,1 \
		--seed 23 >vg.rec &&
	valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite gpumel -q --device cpu -j 3 \
		--batch 4 --n-fft 256 --hop 100 --top-db 40 --dtype bf16 \
		--pad-mode reflect vg.rec >vg.out &&
	$DUMP vg.out >vg.dump &&
	test $(wc -l <vg.dump) = 30
'

test_done
