#!/bin/sh
test_description='h5pack: full chunks written on a thread of their own
while the next one fills: the file one thread writes, whatever records
come between the chunks; a failure on that thread reported; no race'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/h5pack_check.py"
SAME="$PYTHON $TEST_DIRECTORY/py/h5pack_same.py"
FAULT=$TOP/build/obj/tests/helper/fault-io.so
H5PACK_TSAN=$TOP/build/obj/tests/helper/h5pack-tsan

# Small chunks (4K), so that every group fills many whole chunks, each
# handed to the writing thread: f16 rows of 240 bytes (17 a chunk) over
# three groups, with more clips than a block of /clips (4,096) and
# skipped records, whose writes come between chunks; the same re-cut into
# pieces (joined rows, a chunk filled by the last piece of an item);
# f32 rows of 384 bytes; s16 audio rows of 8,000 bytes (a chunk each: a
# hand-over per row); f16 whose testing group first appears after many
# chunks went to the thread (its datasets made while others are there).
STREAMS="f16 pieces f32 s16 late"

test_expect_success 'set up streams: features in three groups, pieces, audio' '
	$MK --dtype f16 --clips 5000 --rows 1:2 --shape 40,3 --skip 5,77,4500 \
		--splits hash --seed 31 >f16.rec &&
	rec-copy --pieces 2 <f16.rec >pieces.rec &&
	$MK --dtype f32 --clips 300 --rows 1:6 --shape 32,3 --seed 32 \
		>f32.rec &&
	$MK --kind audio --dtype s16 --clips 150 --lengths 4000 --seed 33 \
		>s16.rec &&
	$MK --dtype f16 --clips 3000 --rows 1:2 --shape 40,3 --splits hash \
		--testing-from 2500 --seed 34 >late.rec
'

# pack S: S.rec into out.h5 with 4K chunks, h5pack -v's lines in S.err.
pack() {
	h5pack -v -c none --chunk-size 4K -o out.h5 $1.rec 2>$1.err
}

# rows_of S FILE: FILE holds the rows of S.rec (float64 check); the
# pieces the dataset of the stream they were cut from.
rows_of() {
	if test $1 = pieces
	then
		$SAME f16.h5 $2
	else
		$CHECK $1.rec $2
	fi
}

test_expect_success 'the rows are the stream'"'"'s, written on the thread' '
	for s in $STREAMS; do
		pack $s && mv out.h5 $s.h5 &&
		test_grep "s on a writing thread" $s.err >/dev/null &&
		rows_of $s $s.h5 || exit 1
	done
'

# Where no thread can be started (fault-io.so's pthread_create fails
# after the first, the reader's read-ahead), the chunks and their
# statistics are written by h5pack's own thread: the same bytes.
test_expect_success NOSAN 'the file is the one written without threads' '
	for s in $STREAMS; do
		env LD_PRELOAD="$FAULT" MELPIPE_FAULT_THREADS_AFTER=1 \
			h5pack -v -c none --chunk-size 4K -o out.h5 $s.rec \
			2>err &&
		! grep "writing thread" err &&
		cmp $s.h5 out.h5 || exit 1
	done
'

# A write that fails on the writing thread (fault-io.so fails the pwrite
# calls made off the first thread, after the n-th) ends the run as one
# on h5pack's own thread does: exit 1, the file and the reason named, the
# previous file as it was, no temporary file.
test_expect_success NOSAN 'set up a previous dataset' '
	h5pack -q -o prev.h5 f32.rec &&
	cp prev.h5 prev.orig
'

for n in 0 3 40; do
	test_expect_success NOSAN "EIO at the writing thread's write $((n + 1)): exit 1, reported" '
		test_expect_code 1 env LD_PRELOAD="$FAULT" \
			MELPIPE_FAULT_PWRITE_THREAD=1 \
			MELPIPE_FAULT_PWRITE_AFTER='$n' \
			h5pack --chunk-size 4K -o prev.h5 f16.rec 2>err &&
		cat err &&
		test_grep "^h5pack: unable to write rows in '"'"'prev.h5'"'"': Input/output error" err &&
		test $(wc -l <err) = 1 &&
		cmp prev.h5 prev.orig &&
		test_no_temp
	'
done

# h5pack --merge reads its shards with the library on its own thread:
# it has no writing thread, so every pwrite is the first thread's (with
# fault-io.so failing any other, it still succeeds).
test_expect_success 'set up shard files of the features stream' '
	job=$($PYTHON $TEST_DIRECTORY/py/recmerge_job.py f16.rec) &&
	for k in 0 1 2; do
		rec-copy --shard $k/3 --job $job <f16.rec >f16.$k.rec &&
		h5pack -q -c none --chunk-size 4K -o f16.$k.h5 f16.$k.rec ||
		exit 1
	done
'

test_expect_success 'h5pack --merge: the rows of the whole stream' '
	h5pack -v --merge -c none --chunk-size 4K -o merged.h5 \
		f16.0.h5 f16.1.h5 f16.2.h5 2>err &&
	$PYTHON $TEST_DIRECTORY/py/h5merge_same.py f16.h5 merged.h5 \
		f16.0.h5 f16.1.h5 f16.2.h5 &&
	mv merged.h5 merged1.h5
'

test_expect_success NOSAN 'h5pack --merge with writes off the first thread failing' '
	env LD_PRELOAD="$FAULT" MELPIPE_FAULT_PWRITE_THREAD=1 \
		MELPIPE_FAULT_PWRITE_AFTER=0 \
		h5pack -v --merge -c none --chunk-size 4K -o merged.h5 \
		f16.0.h5 f16.1.h5 f16.2.h5 2>err &&
	cmp merged1.h5 merged.h5
'

# h5pack built with ThreadSanitizer (tests/build.mk): the groups' buffers
# and counts and the statistics change hands only through the threads'
# locks (-j 8: four statistics threads, each its bins of a chunk; one
# for audio, whose rows are not split by bins). Not in sanitizer builds
# (TSan and ASan do not mix), nor where the compiler cannot link it.
test_expect_success NOSAN 'no data race between the threads (ThreadSanitizer)' '
	if ! test -x "$H5PACK_TSAN"; then
		say "# skipped: no h5pack-tsan (the compiler lacks TSan)"
		exit 0
	fi &&
	for s in $STREAMS; do
		TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$H5PACK_TSAN" -v \
			-j 8 -c none --chunk-size 4K -o t.h5 $s.rec 2>err ||
		{ cat err; exit 1; }
		test_grep "s on a writing thread" err >/dev/null &&
		case $s in s16) n="1 thread,";; *) n="4 threads,";; esac &&
		test_grep "beside on $n" err >/dev/null &&
		rows_of $s t.h5 || exit 1
	done
'

test_done
