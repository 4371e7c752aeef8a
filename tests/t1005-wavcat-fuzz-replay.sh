#!/bin/sh
# wavcat's decoder under mangled files, without libFuzzer: fuzz-decode's
# plain main (tests/helper/fuzz-decode.c) decodes the seed files of
# scripts/fuzz-seeds, deterministic mutations of each, and the inputs kept
# in tests/fuzz/decode/ (ones that once broke something, or reach an
# error path), under several wavcat configurations, and aborts on a crash,
# a sanitizer report or a broken promise of decode.c (see the helper's
# comment for the list). Under `make check` this also runs in the
# sanitizer build.

test_description='wavcat: the decoder survives mangled files and keeps its
promises (fuzz corpus replay)'
. "$(dirname "$0")/test-lib.sh"

KEPT=$TEST_DIRECTORY/fuzz/decode

# What to look at when fuzz-decode fails: its message, and the input it
# saved (moved to $1 when given). Returns 1.
show_failure() {
	grep -a "fuzz-decode:\|ERROR\|SUMMARY\|runtime error" err
	if [ -f fuzz-decode-failed ]; then
		saved=${1:-fuzz-decode-failed}
		[ "$saved" = fuzz-decode-failed ] || mv fuzz-decode-failed "$saved"
		echo "the input is in $TRASH_DIRECTORY/$saved" \
			"(tests/fuzz/README says how to keep it)"
	fi
	return 1
}

test_expect_success 'make the seed files' '
	"$TOP/scripts/fuzz-seeds" seeds 2>log &&
	cat log &&
	test $(ls seeds | wc -l) -ge 60 &&
	test -z "$(find seeds -name "*.wav" -size +4k)"
'

test_expect_success 'without numpy and soundfile: a message, not a traceback' '
	printf "#!/bin/sh\nexit 1\n" >nopy &&
	chmod +x nopy &&
	test_expect_code 1 env PYTHON=$PWD/nopy "$TOP/scripts/fuzz-seeds" \
		noseeds 2>err &&
	test_grep "^fuzz-seeds: no Python with numpy, soundfile at " err &&
	test_grep "(run make setup, or set PYTHON)" err &&
	test ! -e noseeds
'

test_expect_success 'make fuzz makes the venv (setup) before the seeds' '
	MAKEFLAGS= make -s -C "$TOP" -n fuzz FUZZ_TARGET=decode >plan &&
	test_grep "^scripts/setup$" plan &&
	test $(grep -n "scripts/setup$" plan | cut -d: -f1) -lt \
		$(grep -n "scripts/fuzz-seeds" plan | cut -d: -f1)
'

test_expect_success 'every seed decodes, and keeps every promise' '
	{ fuzz-decode -v seeds/* >out 2>err || show_failure; } &&
	test_grep "no fault" out &&
	n=$(ls seeds | wc -l) &&
	test $(grep -c ": --rate 16000, s16: ok [1-9]" out) = $n &&
	test $(grep -c ": --rate 16000, f32: ok [1-9]" out) = $n &&
	test $(grep -c ": --rate 44100 --samples 3000, f32: ok 3000$" out) = $n
'

test_expect_success 'the kept inputs replay without a fault' '
	ls "$KEPT" >kept &&
	test -s kept &&
	: >fails &&
	while read -r f; do
		fuzz-decode "$KEPT/$f" >out 2>err ||
			{ echo "$f:"; show_failure "failed-$f" || :; } >>fails
	done <kept &&
	cat fails &&
	test ! -s fails
'

# tests/fuzz/README lists each kept input with the reason decode.c gives
# for it: they go on reaching the error paths they were kept for.
test_expect_success 'README lists every kept input and nothing else' '
	sed -n "/^Kept inputs of decode/,/^Keeping/p" "$TEST_DIRECTORY/fuzz/README" |
		grep "	" >listed &&
	cut -f1 listed | sort >names &&
	sort kept >files &&
	test_cmp files names
'

test_expect_success 'each kept input gives the reason README says' '
	: >fails &&
	while IFS="	" read -r f want what; do
		[ "$want" = - ] && continue
		fuzz-decode -v "$KEPT/$f" >out 2>err || { echo "$f:"; show_failure; } ||
			return 1
		got=$(sed -n "s|^$KEPT/$f: --rate 16000, s16: ||p" out)
		case $want in
		"(decoded)") case $got in ok\ [1-9]*) continue ;; esac ;;
		*) printf "%s\n" "$got" | grep -q -E "^skip: ($want)" && continue ;;
		esac
		echo "$f: wanted \"$want\", got \"$got\"" >>fails
	done <listed &&
	cat fails &&
	test ! -s fails
'

# libsndfile 1.2 printf()s to stdout while decoding a damaged SDS file:
# that must not land in the record stream.
test_expect_success 'a codec printing to stdout leaves the stream intact' '
	mkdir sds && cp "$KEPT/sds-bad-block-prints.sds" sds/ &&
	wavcat --rate 16000 sds >sds.rec 2>sds.err &&
	recdump -q sds.rec &&
	test_grep "done 1 clip, skipped 0" sds.err
'

test_expect_success 'seeds and kept inputs, mangled: no crash, no broken promise' '
	{ fuzz-decode -m 120 seeds/* "$KEPT"/* >out 2>err || show_failure; } &&
	test_grep "no fault" out &&
	# The mutations must reach both outcomes, or they test nothing.
	grep -q "decoded [1-9][0-9]*, skipped [1-9][0-9]*," out
'

test_done
