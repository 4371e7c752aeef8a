#!/bin/sh
test_description='wavcat: what the end of a run says of --exclude'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"

test_expect_success 'set up clips' '
	mkdir -p D/yes D/no &&
	i=0 &&
	for n in 800 1600 2400 3200 1000 4000; do
		i=$((i + 1)) &&
		if [ $((i % 2)) = 0 ]; then l=yes; else l=no; fi &&
		$MK tone D/$l/c$i.wav --rate 16000 --frames $n --seed $i ||
			exit 1
	done
'

test_expect_success '--exclude GLOB that leaves nothing out is warned about, once' '
	wavcat --exclude "D/yes" --exclude "yes" --exclude "nope*" \
		--exclude "nope*" D >e.rec 2>err &&
	test_grep "^wavcat: --exclude .D/yes. matched no input (patterns are matched against keys such as .[a-z]*/c[0-9].wav.)$" \
		err &&
	test_grep "^wavcat: --exclude .nope\*. matched no input" err &&
	test $(grep -c "nope" err) = 1 &&
	! test_grep "exclude .yes. matched" err &&
	test_grep "^wavcat: done 3 clips, skipped 0$" err
'

test_expect_success '--exclude: a pattern matching what another left out is no warning' '
	wavcat --exclude "yes" --exclude "yes/c2.wav" --exclude "*/c2.wav" \
		D >e2.rec 2>err &&
	! test_grep "matched no input" err &&
	wavcat --exclude "_noise" D >e3.rec 2>err &&
	test_grep "exclude ._noise. matched no input" err
'

test_expect_success '--exclude: a pattern for a folder left out for its _ is no warning' '
	mkdir -p U/yes U/_background_noise_ &&
	cp D/yes/c2.wav U/yes/ &&
	cp D/no/c1.wav U/_background_noise_/n.wav &&
	wavcat --exclude "_background_noise_" U >u.rec 2>err &&
	! test_grep "matched no input" err
'

test_expect_success '--exclude: -q silences the warning with the others' '
	wavcat -q --exclude "nope" D >q.rec 2>err &&
	test_cmp /dev/null err
'

test_done
