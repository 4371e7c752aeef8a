#!/bin/sh
test_description='h5pack: the disk reports an I/O error (EIO) while the
dataset is written or synced: exit 1 naming the file and the reason, the
previous OUT.h5 intact, no temporary file left'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
FAULT=$TOP/build/obj/tests/helper/fault-io.so

# with_eio VAR=VALUE h5pack ARGS: h5pack with fault-io.so preloaded
# (tests/helper/fault-io.c): writes or syncs fail with EIO.
with_eio() {
	env LD_PRELOAD="$FAULT" "$@"
}

test_expect_success NOSAN 'set up a previous dataset and a stream' '
	test -f "$FAULT" &&
	$MK --clips 400 --rows 2 --shape 32,40 --seed 3 >big.rec &&
	$MK --clips 30 --seed 4 >prev.rec &&
	h5pack -q -o prev.h5 prev.rec &&
	cp prev.h5 prev.orig
'

# The n-th pwrite(2) of the run fails, from the file's creation to the
# last rows: each must end the same way.
for n in 0 2 5 12; do
	test_expect_success NOSAN "EIO at write $((n + 1)): exit 1, previous file intact" '
		test_expect_code 1 with_eio MELPIPE_FAULT_PWRITE_AFTER='$n' \
			h5pack -o prev.h5 big.rec 2>err &&
		cat err &&
		test_grep "^h5pack: unable to .*'"'"'prev.h5'"'"': Input/output error" err &&
		cmp prev.h5 prev.orig &&
		test_no_temp
	'
done

test_expect_success NOSAN 'EIO from fsync: exit 1, previous file intact' '
	test_expect_code 1 with_eio MELPIPE_FAULT_FSYNC=1 \
		h5pack -o prev.h5 big.rec 2>err &&
	cat err &&
	test_grep "unable to sync .*prev.h5.*Input/output error" err &&
	cmp prev.h5 prev.orig &&
	test_no_temp
'

test_expect_success NOSAN 'and without a fault the same run succeeds' '
	h5pack -q -o prev.h5 big.rec &&
	test_must_fail cmp -s prev.h5 prev.orig &&
	test_no_temp
'

test_done
