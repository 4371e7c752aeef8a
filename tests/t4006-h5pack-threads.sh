#!/bin/sh
test_description='h5pack: chunks compressed in threads (--jobs)'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/h5pack_check.py"
CHUNKS="$PYTHON $TEST_DIRECTORY/py/h5pack_chunks.py"
PLUGINS=$MELPIPE_BIN/plugins
STREAMS="f16 f32 s16 r16 ra16"

# Small chunks (4K) so that every group fills many whole chunks, which
# the threads compress, and ends in a partial one, which the library
# does: f16 rows of 240 bytes (17 a chunk), f32 rows of 384 bytes (10),
# s16 audio rows of 8,000 bytes (a chunk each); ragged f16 frames of 80
# bytes (51 a chunk), a clip's frames often across two chunks, and ragged
# s16 audio, a clip of many chunks. The f16 stream has more
# clips than a block of /clips (4,096), whose write lands between chunks:
# the files are the same only if every --jobs writes in the same order.
test_expect_success 'set up streams: f16 and f32 features, s16 audio, ragged' '
	$MK --dtype f16 --clips 5000 --rows 1:2 --shape 40,3 --skip 5,77 \
		--seed 21 >f16.rec &&
	$MK --dtype f32 --clips 300 --rows 1:6 --shape 32,3 --seed 22 \
		>f32.rec &&
	$MK --kind audio --dtype s16 --clips 150 --lengths 4000 --seed 23 \
		>s16.rec &&
	$MK --dtype f16 --clips 600 --frames 1:90 --shape 40,1 --skip 5 \
		--seed 24 >r16.rec &&
	$MK --kind audio --dtype s16 --clips 40 --len 100:9000 --seed 25 \
		>ra16.rec &&
	for s in $STREAMS; do
		h5pack -q -c none --chunk-size 4K -o $s-none.h5 $s.rec || exit 1
	done
'

# packed S METHOD LEVEL: S.rec with --jobs 1, 3 and 8, each file checked
# against the stream.
packed() {
	for j in 1 3 8; do
		h5pack -q -j $j -c $2:$3 --chunk-size 4K -o $1-$2-$j.h5 $1.rec &&
		$CHECK --filter $2 $1.rec $1-$2-$j.h5 || return 1
	done
}

for m in gzip:6 zstd:5; do
	method=${m%:*} level=${m#*:}
	test_expect_success "$m: every --jobs writes the stream's rows" '
		for s in $STREAMS; do
			packed $s $method $level || exit 1
		done
	'

	test_expect_success "$m: the file is the same for any --jobs" '
		for s in $STREAMS; do
			$CHUNKS same $s-$method-1.h5 $s-$method-3.h5 \
				$s-$method-8.h5 || exit 1
		done
	'

	test_expect_success "$m: chunks decode by the filters' definitions" '
		for s in $STREAMS; do
			$CHUNKS decode $s-none.h5 $s-$method-3.h5 $method ||
				exit 1
		done &&
		# features compress (the s16 stream is noise, which does not)
		test $(wc -c <f16-$method-3.h5) -lt $(wc -c <f16-none.h5) &&
		test $(wc -c <f32-$method-3.h5) -lt $(wc -c <f32-none.h5)
	'

	test_expect_success "$m: chunks are what the library's filters make" '
		for s in $STREAMS; do
			HDF5_PLUGIN_PATH=$PLUGINS $CHUNKS library \
				$s-$method-8.h5 $method $level || exit 1
		done
	'
done

# chunks_done ERR: the chunks the threads compressed, from h5pack -v.
chunks_done() {
	sed -n "s/.*compression threads ([0-9]*): [0-9.]* s, \([0-9]*\) chunks.*/\1/p" "$1"
}

test_expect_success '-v: the threads (at most 16) compressed the whole chunks' '
	h5pack -v -j 3 -c zstd --chunk-size 4K -o v.h5 f16.rec 2>err &&
	test_grep "compression threads (3): " err &&
	# every whole chunk of every group but none of the partial last ones
	$PYTHON -c "
import h5py
f = h5py.File(\"f16-none.h5\")
print(sum(f[g][\"features\"].shape[0] // 17 for g in
          (\"training\", \"validation\", \"testing\")))" >want &&
	chunks_done err >got &&
	test_cmp want got &&
	test $(cat got) -gt 100 &&
	h5pack -v -j 40 -c gzip --chunk-size 4K -o v.h5 f16.rec 2>err &&
	test_grep "compression threads (16): " err &&
	chunks_done err >got &&
	test_cmp want got &&
	h5pack -v -j 3 -o v.h5 f16.rec 2>err &&
	! grep "compression threads" err
'

test_expect_success '--jobs out of range or not a number: usage error' '
	for j in 0 1025 x ""; do
		test_usage_error h5pack -j "$j" -c zstd -o u.h5 f16.rec &&
		test_grep "jobs" usage.err || exit 1
	done &&
	test ! -e u.h5
'

test_expect_success 'a stream cut short with threads busy: exit 1, no file' '
	$MK --dtype f16 --clips 400 --rows 1:6 --shape 40,3 --seed 21 \
		--no-trailer >cut.rec &&
	test_expect_code 1 h5pack -j 4 -c zstd:19 --chunk-size 4K -o cut.h5 \
		cut.rec 2>err &&
	test_grep "^h5pack: " err &&
	test ! -e cut.h5 &&
	! ls -A | grep "^\.cut\.h5\."
'

test_done
