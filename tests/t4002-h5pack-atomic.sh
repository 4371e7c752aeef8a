#!/bin/sh
test_description='h5pack: OUT.h5 appears whole or not at all'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/h5pack_check.py"

test_expect_success 'set up streams and a previous dataset' '
	$MK --clips 300 --rows 1:4 --seed 5 >f.rec &&
	$MK --clips 40 --seed 6 >prev.rec &&
	$MK --clips 300 --rows 1:4 --seed 5 --no-trailer >cut.rec &&
	h5pack -q -o prev.h5 prev.rec &&
	cp prev.h5 prev.orig
'

test_expect_success 'a stream without its trailer: exit 1, no file, no temp' '
	test_expect_code 1 h5pack -o out.h5 cut.rec 2>err &&
	test_grep "^h5pack: " err &&
	test ! -e out.h5 &&
	test_no_temp
'

test_expect_success 'a stream cut inside a record: exit 1, no file' '
	size=$(wc -c <f.rec) &&
	head -c $((size / 2)) f.rec >half.rec &&
	test_expect_code 1 h5pack -o out.h5 <half.rec 2>err &&
	test_grep "^h5pack: " err &&
	test ! -e out.h5 &&
	test_no_temp
'

test_expect_success 'a failing stage upstream leaves no file' '
	{ head -c 20000 f.rec; exit 1; } | { h5pack -o out.h5; echo $? >rc; } &&
	test "$(cat rc)" = 1 &&
	test ! -e out.h5 &&
	test_no_temp
'

test_expect_success 'a flipped bit: exit 1, the previous file intact' '
	$PYTHON -c "
d = bytearray(open(\"f.rec\", \"rb\").read())
d[len(d) * 2 // 3] ^= 0x01
open(\"flip.rec\", \"wb\").write(d)" &&
	test_expect_code 1 h5pack -o prev.h5 flip.rec 2>err &&
	test_grep "^h5pack: " err &&
	cmp prev.h5 prev.orig &&
	test_no_temp
'

test_expect_success 'bad records keep the previous file intact too' '
	$MK --clips 20 --bad-shape 15 >bad.rec &&
	test_expect_code 1 h5pack -o prev.h5 bad.rec 2>err &&
	cmp prev.h5 prev.orig &&
	test_no_temp
'

test_expect_success 'an existing file is replaced by default' '
	cp prev.orig rep.h5 &&
	h5pack -q -o rep.h5 f.rec &&
	$CHECK f.rec rep.h5 &&
	test_no_temp
'

test_expect_success '-n refuses an existing file, writes a new one' '
	test_expect_code 1 h5pack -n -o prev.h5 f.rec 2>err &&
	test_grep "exists; not replacing it" err &&
	cmp prev.h5 prev.orig &&
	h5pack -q --no-clobber -o new.h5 f.rec &&
	$CHECK f.rec new.h5 &&
	test_no_temp
'

test_expect_success 'the target is a folder, or in a missing folder: exit 1' '
	mkdir adir &&
	test_expect_code 1 h5pack -o adir f.rec 2>err &&
	test_grep "unable to write .adir.: Is a directory" err &&
	test_expect_code 1 h5pack -o no/such/dir/x.h5 f.rec 2>err &&
	test_grep "no/such/dir" err &&
	test_grep "No such file or directory" err &&
	test_no_temp adir
'

test_expect_success 'the temporary file is in the target folder; mode by umask' '
	mkdir sub &&
	(umask 027 && h5pack -q -o sub/m.h5 f.rec) &&
	test "$(stat -c %a sub/m.h5)" = 640 &&
	(umask 022 && h5pack -q -o sub/m2.h5 f.rec) &&
	test "$(stat -c %a sub/m2.h5)" = 644 &&
	test_no_temp sub
'

# killed SIG: h5pack gets SIG mid-stream (after the temporary file
# exists) and must die of it, leaving no temp and prev.h5 intact.
killed() {
	rm -f p && mkfifo p &&
	cp prev.orig prev.h5 || return 1
	test_start_bg h5pack -o prev.h5 p 2>kill.err
	pid=$bg_pid &&
	exec 3>p &&
	head -c 30000 f.rec >&3 &&
	i=0 &&
	until ls -A | grep -q "^\.prev\.h5\."; do
		i=$((i + 1)) && test $i -lt 100 && sleep 0.1 || return 1
	done &&
	kill -$1 $pid &&
	rc=0 && { wait $pid || rc=$?; } &&
	exec 3>&- &&
	echo "exit status $rc" &&
	test $rc = $2 &&
	cmp prev.h5 prev.orig
}

test_expect_success 'SIGTERM mid-write: no temp left, previous file intact' '
	killed TERM 143 &&
	test_no_temp
'

test_expect_success 'SIGINT and SIGHUP mid-write: the same' '
	killed INT 130 &&
	test_no_temp &&
	killed HUP 129 &&
	test_no_temp
'

test_expect_success 'SIGKILL mid-write: previous file intact' '
	killed KILL 137 &&
	# only a hidden temporary file can remain: never the target
	ls -A | grep "^\.prev\.h5\.h5pack-[0-9]*-[0-9a-f]*\.......$" >stale &&
	test $(wc -l <stale) = 1
'

# The next run for that target on this machine removes what a killed one
# left, and only that: not the file of a process that still runs (this
# shell's pid), nor another machine's (another host tag).
test_expect_success 'the next run removes a killed run'"'"'s temporary file' '
	stale=$(cat stale) &&
	tag=$(echo "$stale" | sed "s/.*-\([0-9a-f]*\)\.......$/\1/") &&
	live=".prev.h5.h5pack-$$-$tag.AbCdEf" &&
	other=".prev.h5.h5pack-999999-00000000.AbCdEf" &&
	test "$tag" != 00000000 &&
	: >"$live" && : >"$other" &&
	h5pack -o prev.h5 prev.rec 2>next.err &&
	cat next.err &&
	test ! -e "$stale" &&
	test_grep "removed .*$stale.*killed" next.err &&
	test -e "$live" && test -e "$other" &&
	rm -f "$live" "$other" &&
	test_no_temp
'

if test_mount_small; then
test_expect_success 'a full disk (ENOSPC): a clear error, nothing left' '
	$MK --clips 400 --rows 2 --shape 32,40 >big.rec &&
	h5pack -q -o small/prev.h5 prev.rec &&
	cp small/prev.h5 prev.small &&
	rc=0 && { h5pack -o small/prev.h5 big.rec 2>full.err || rc=$?; } &&
	rc2=0 && { h5pack -o small/new.h5 big.rec 2>full2.err || rc2=$?; } &&
	ls -A small >left &&
	cmp small/prev.h5 prev.small >cmp.out 2>&1 || echo differ >>cmp.out &&
	umount small &&
	test $rc = 1 && test $rc2 = 1 &&
	test_grep "No space left on device" full.err &&
	test_grep "small/prev.h5" full.err &&
	echo prev.h5 >want.left && test_cmp want.left left &&
	test ! -s cmp.out
'
else
	test_skip 'a full disk (ENOSPC)' 'cannot mount a tmpfs'
fi
test_umount_small

test_done
