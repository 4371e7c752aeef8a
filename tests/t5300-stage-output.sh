#!/bin/sh
test_description='wavcat, segment and gpumel: -o FILE appears whole or not
at all (a cut input stream, a signal, a failing disk), as h5pack'"'"'s
dataset does (t4002)'
. "$(dirname "$0")/test-lib.sh"

MKDATA="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"
MKREC="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
FAULT=$TOP/build/obj/tests/helper/fault-io.so
SMALL="--n-fft 256 --n-mels 16 --device cpu"

test_expect_success 'set up clips, a stream and previous outputs' '
	mkdir -p D/yes D/no &&
	$MKDATA tone D/yes/a.wav --frames 16000 --seed 1 &&
	$MKDATA tone D/no/b.wav --frames 8000 --seed 2 &&
	$MKREC --n 30 --len 4000:20000 --seed 3 >in.rec &&
	size=$(wc -c <in.rec) &&
	head -c $((size - 100)) in.rec >cut.rec &&
	wavcat -q -o wprev.rec D &&
	segment -q --len 100 -o sprev.rec in.rec &&
	gpumel -q $SMALL -o gprev.rec in.rec &&
	for s in w s g; do cp ${s}prev.rec ${s}prev.orig || exit 1; done
'

# the options each stage runs with here
ARGS_segment="--len 100"
ARGS_gpumel=$SMALL

# run_STAGE OUT: the stage on its usual input, writing -o OUT
run_wavcat() { wavcat -o "$1" D; }
run_segment() { segment $ARGS_segment -o "$1" in.rec; }
run_gpumel() { gpumel $ARGS_gpumel -o "$1" in.rec; }

# with_fault VAR=VALUE CMD...: CMD with fault-io.so preloaded
# (tests/helper/fault-io.c) and VAR set for it
with_fault() {
	(LD_PRELOAD=$FAULT && export LD_PRELOAD "$1" && shift && "$@")
}

test_expect_success 'a cut input stream: exit 1, no file, the previous intact' '
	test_expect_code 1 segment --len 100 -o s.rec cut.rec 2>err &&
	test_grep "cut.rec" err &&
	test ! -e s.rec &&
	test_expect_code 1 segment --len 100 -o sprev.rec cut.rec 2>err &&
	cmp sprev.rec sprev.orig &&
	test_expect_code 1 gpumel $SMALL -o g.rec cut.rec 2>err &&
	test_grep "cut.rec" err &&
	test ! -e g.rec &&
	test_expect_code 1 gpumel $SMALL -o gprev.rec cut.rec 2>err &&
	cmp gprev.rec gprev.orig &&
	test_no_temp
'

test_expect_success 'wavcat --strict on a bad clip: the previous file intact' '
	printf "not audio" >D/yes/z.wav &&
	test_expect_code 1 wavcat --strict -o wprev.rec D 2>err &&
	rm D/yes/z.wav &&
	test_grep "z.wav" err &&
	cmp wprev.rec wprev.orig &&
	test_no_temp
'

test_expect_success 'a complete run replaces the file; special files as before' '
	cp sprev.orig rep.rec &&
	segment -q --len 50 -o rep.rec in.rec &&
	recdump -q rep.rec &&
	test_must_fail cmp -s rep.rec sprev.orig &&
	segment -q --len 50 -o /dev/null in.rec &&
	gpumel -q $SMALL -o /dev/null in.rec &&
	wavcat -q -o /dev/null D &&
	test -c /dev/null &&
	test_no_temp
'

# A rename replaces the name only: another name of the file replaced
# keeps it whole.
test_expect_success 'a file replaced: its other names keep it' '
	for stage in wavcat segment gpumel; do
		run_$stage rep.rec 2>/dev/null &&
		cp rep.rec rep.first &&
		ln rep.rec kept.rec &&
		run_$stage rep.rec 2>/dev/null &&
		test "$(stat -c %h kept.rec)" = 1 &&
		test "$(stat -c %h rep.rec)" = 1 &&
		cmp kept.rec rep.first &&
		recdump -q rep.rec &&
		rm kept.rec rep.first rep.rec &&
		test_no_temp || return 1
	done
'

# interrupt SIG STATUS TARGET CMD...: runs CMD in the background, sends it
# SIG once its temporary file for TARGET exists, and checks that it died
# of it (exit STATUS). CMD must not be able to end on its own.
interrupt() {
	sig=$1 status=$2 target=$3
	shift 3
	test_start_bg "$@" 2>int.err
	i=0
	until ls -A | grep -q "^\.$target\."; do
		i=$((i + 1))
		if [ $i -gt 300 ]; then
			kill -KILL $bg_pid; wait $bg_pid; return 1
		fi
		sleep 0.1
	done
	kill -$sig $bg_pid
	rc=0 && { wait $bg_pid || rc=$?; } &&
	echo "exit status $rc" &&
	test $rc = $status
}

# The input is a fifo that holds the stream's first 3000 bytes and stays
# open (descriptor 3): the stage waits for the rest, with its temporary
# file made.
open_fifo() {
	rm -f fifo && mkfifo fifo && exec 3<>fifo && head -c 3000 in.rec >&3
}

for stage in segment gpumel; do
	p=$(echo $stage | cut -c1)
	eval "args=\$ARGS_$stage"
	test_expect_success "$stage: SIGINT, SIGTERM mid-run: no file, no temp" '
		open_fifo &&
		interrupt INT 130 new.rec '$stage' $args -o new.rec fifo &&
		test ! -e new.rec &&
		open_fifo &&
		interrupt TERM 143 '$p'prev.rec '$stage' $args \
			-o '$p'prev.rec fifo &&
		exec 3>&- &&
		cmp '$p'prev.rec '$p'prev.orig &&
		test_no_temp
	'
done

# wavcat reads files, not fifos: its writes to the file hang instead.
test_expect_success NOSAN 'wavcat: SIGINT mid-run: no file, no temp' '
	interrupt INT 130 new.rec env LD_PRELOAD="$FAULT" \
		MELPIPE_FAULT_WRITE_HANG=1 wavcat -o new.rec D &&
	test ! -e new.rec &&
	interrupt INT 130 wprev.rec env LD_PRELOAD="$FAULT" \
		MELPIPE_FAULT_WRITE_HANG=1 wavcat -o wprev.rec D &&
	cmp wprev.rec wprev.orig &&
	test_no_temp
'

# A disk that fails writes (fault-io.so: write(2) and writev(2) to files),
# the final sync or the rename: exit 1 naming the file, the previous one
# intact, no temporary file left.
for stage in wavcat segment gpumel; do
	p=$(echo $stage | cut -c1)
	for fault in MELPIPE_FAULT_WRITE_AFTER=0 MELPIPE_FAULT_FSYNC=1 \
		     MELPIPE_FAULT_RENAME=1; do
		test_expect_success NOSAN "$stage: EIO ($fault): no file" '
			test_expect_code 1 with_fault '$fault' \
				run_'$stage' new.rec 2>err &&
			test_grep "new.rec.*Input/output error" err &&
			test ! -e new.rec &&
			test_expect_code 1 with_fault '$fault' \
				run_'$stage' '$p'prev.rec 2>err &&
			cmp '$p'prev.rec '$p'prev.orig &&
			test_no_temp
		'
	done
done

if test_mount_small; then
test_expect_success 'a full disk (ENOSPC): a clear error, nothing left' '
	$MKDATA tone D/yes/long.wav --frames 400000 --seed 4 &&
	rc=0 && { wavcat --dtype f32 -o small/w.rec D 2>w.err || rc=$?; } &&
	rm D/yes/long.wav &&
	ls -A small >w.left &&
	rc2=0 && { segment --len 100 --hop 25 --copy -o small/s.rec in.rec \
		2>s.err || rc2=$?; } &&
	ls -A small >s.left &&
	rc3=0 && { gpumel $SMALL --hop 8 -o small/g.rec in.rec 2>g.err ||
		rc3=$?; } &&
	ls -A small >g.left &&
	umount small &&
	test "$rc $rc2 $rc3" = "1 1 1" &&
	for s in w s g; do
		test_grep "small/$s.rec.*No space left on device" $s.err &&
		test_cmp /dev/null $s.left || exit 1
	done
'
else
	test_skip 'a full disk (ENOSPC)' 'cannot mount a tmpfs'
fi
test_umount_small

test_done
