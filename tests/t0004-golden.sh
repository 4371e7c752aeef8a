#!/bin/sh
# The golden streams of tests/golden/ (written by make-golden.py with the
# independent Python implementation): recdump accepts every good one and
# refuses every bad one at the record, byte and reason README gives; and
# lib/rec's writer produces the same bytes as the Python writer for the
# same content.

test_description='golden streams: accepted, refused, byte-identical'
. "$(dirname "$0")/test-lib.sh"

GOLDEN=$TEST_DIRECTORY/golden
FORGE="$PYTHON $TEST_DIRECTORY/py/rec_forge.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/rec_check.py"

test_expect_success 'README lists every golden file and nothing else' '
	(cd "$GOLDEN" && ls *.rec) | sort >files &&
	grep "^[a-z].*\.rec	" "$GOLDEN/README" | cut -f1 | sort >listed &&
	test_cmp files listed &&
	test $(grep -c "^good-" listed) -ge 5 &&
	test $(grep -c "^bad-" listed) -ge 30
'

test_expect_success 'every good stream is accepted' '
	for f in $(grep "^good-" listed); do
		recdump -q "$GOLDEN/$f" || { echo "refused: $f"; return 1; }
	done
'

test_expect_success 'every bad stream is refused where and why README says' '
	: >fails &&
	grep "^bad-.*\.rec	" "$GOLDEN/README" | while IFS="	" read -r f want why; do
		recdump -q "$GOLDEN/$f" >out 2>err
		rc=$?
		case "$(cat err)" in
		"recdump: $GOLDEN/$f: $want"*) ;;
		*) echo "$f: wanted \"$want\" ($why), got:" >>fails
		   cat err >>fails ;;
		esac
		[ $rc = 1 ] || echo "$f: exit $rc" >>fails
		[ $(wc -l <err) = 1 ] || echo "$f: not one line" >>fails
	done &&
	test_cmp /dev/null fails
'

test_expect_success 'the Python reader agrees on every golden file' '
	for f in $(cat listed); do
		case $f in
		good-*) $CHECK "$GOLDEN/$f" >/dev/null || return 1 ;;
		bad-*) test_expect_code 1 $CHECK "$GOLDEN/$f" 2>/dev/null ||
			return 1 ;;
		esac
	done
'

test_expect_success 'lib/rec writes the same bytes as the Python writer' '
	for f in "$GOLDEN"/good-*.rec; do
		$FORGE recompress 0 <"$f" >py.rec &&
		rec-copy <"$f" >c.rec &&
		cmp py.rec c.rec &&
		rec-copy --reserve --buffer 4096 <"$f" >c.rec &&
		cmp py.rec c.rec || { echo "differs: $f"; return 1; }
	done
'

test_expect_success 'uncompressed golden files are what lib/rec writes' '
	for f in minimal audio-s16 features-f32 features-f16 features-bf16 \
		odd-values pieces-audio pieces-features pieces-cut-short; do
		rec-copy <"$GOLDEN/good-$f.rec" | cmp - "$GOLDEN/good-$f.rec" ||
		return 1
	done
'

test_expect_success 'zstd payloads: the same bytes as libzstd through Python' '
	for level in 1 3 19; do
		for f in "$GOLDEN"/good-*.rec; do
			$FORGE recompress $level <"$f" >py.rec &&
			rec-copy -z $level <"$f" >c.rec &&
			cmp py.rec c.rec &&
			rec-copy -r -z $level <"$f" >c.rec &&
			cmp py.rec c.rec || { echo "differs: $f at $level"; return 1; }
		done
	done
'

test_expect_success 'C-compressed streams read back the same in Python' '
	rec-gen -n 20 -t mixed -s 3 -l 300 >g.rec &&
	rec-copy -z 7 <g.rec >z.rec &&
	test $(wc -c <z.rec) -lt $(wc -c <g.rec) &&
	$CHECK --stats g.rec | grep -v "^trailer" >a &&
	$CHECK --stats z.rec | grep -v "^trailer" >b &&
	test_cmp a b &&
	test $(grep -c "^[0-9]" a) = 56
'

test_done
