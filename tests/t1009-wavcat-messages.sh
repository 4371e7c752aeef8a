#!/bin/sh
test_description='wavcat: what the end of a run says of --exclude and --duration'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"

# Clips of these lengths at 16 kHz; --duration 0.1 is 1600 samples.
FRAMES="800 1600 2400 3200 1000 4000"
N=$(set -- $FRAMES; echo $#)
test_expect_success 'set up clips of several lengths' '
	mkdir -p D/yes D/no &&
	i=0 &&
	for n in $FRAMES; do
		i=$((i + 1)) &&
		if [ $((i % 2)) = 0 ]; then l=yes; else l=no; fi &&
		$MK tone D/$l/c$i.wav --rate 16000 --frames $n --seed $i ||
			exit 1
	done
'

# counts N: "T P", the clips of FRAMES longer and shorter than N samples
counts() {
	t=0 p=0
	for n in $FRAMES; do
		[ "$n" -gt "$1" ] && t=$((t + 1))
		[ "$n" -lt "$1" ] && p=$((p + 1))
	done
	echo "$t $p"
}

test_expect_success '--duration: the summary says how many were trimmed and padded' '
	set -- $(counts 1600) &&
	wavcat --duration 0.1 D >d.rec 2>err &&
	test_grep "^wavcat: done $N clips ($1 trimmed and $2 padded to 0.1 s), skipped 0$" \
		err &&
	wavcat --rate 8000 --duration 0.1 D >d8.rec 2>err &&
	test_grep "^wavcat: done $N clips ($1 trimmed and $2 padded to 0.1 s), skipped 0$" \
		err &&
	recdump -s d.rec >d.sum &&
	test_grep "^clips $N$" d.sum
'

test_expect_success '--samples: the same, in samples' '
	set -- $(counts 2400) &&
	wavcat --samples 2400 D >s.rec 2>err &&
	test_grep "^wavcat: done $N clips ($1 trimmed and $2 padded to 2400 samples), skipped 0$" \
		err
'

test_expect_success 'without either the summary is as before; -q silences it' '
	wavcat D >n.rec 2>err &&
	test_grep "^wavcat: done $N clips, skipped 0$" err &&
	wavcat -q --duration 0.1 D >q.rec 2>err &&
	test_cmp /dev/null err
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
