#!/bin/sh
test_description='the build id: in every program, checked in /proc, made by make'
. "$(dirname "$0")/test-lib.sh"

# Every program carries its build's id behind a marker (lib/buildid.h); a
# writer hands its pages to a pipe with vmsplice only when every reader
# runs a stage that carries the writer's own id, read from the file the
# reader's process runs (/proc/PID/exe). buildid-check (tests/helper) runs
# lib/buildid's checks from the shell.

# Payloads in the stream: with them in shared memory a stage's buffers
# are short, and short buffers are copied whatever the readers.
MELPIPE_SHM=0
export MELPIPE_SHM

PROGS="wavcat segment gpumel h5pack recdump recmerge"
MARK=MELPIPE-BUILD-ID:
SPLICED='output: .* MB handed to the pipe without a copy (vmsplice)'
NOT='output: copied (write), not vmsplice'

# marks FILE: the markers in FILE, one line each: its offset and the 32
# characters after it.
marks() {
	"$PYTHON" - "$1" "$MARK" <<-\EOF
	import sys
	b, m = open(sys.argv[1], "rb").read(), sys.argv[2].encode()
	i = b.find(m)
	while i >= 0:
	    j = i + len(m)
	    print(i, b[j:j + 32].decode("ascii", "replace"))
	    i = b.find(m, i + 1)
	EOF
}

# other_build FILE: changes the first digit of the id behind FILE's one
# marker: a program that any check takes for one of another build.
other_build() {
	"$PYTHON" - "$1" "$MARK" <<-\EOF
	import sys
	p, m = sys.argv[1], sys.argv[2].encode()
	b = bytearray(open(p, "rb").read())
	if b.count(m) != 1:
	    sys.exit("%s: %d markers" % (p, b.count(m)))
	j = b.find(m) + len(m)
	b[j] = ord("1") if b[j] == ord("0") else ord("0")
	open(p, "wb").write(b)
	EOF
}

test_expect_success 'every program carries this build id, once' '
	id=$(buildid-check id) &&
	echo "$id" | grep -q "^[0-9a-f]\{32\}$" &&
	for p in $PROGS; do
		marks "$MELPIPE_BIN/$p" >m.$p &&
		test $(wc -l <m.$p) = 1 &&
		test "$(cut -d" " -f2 m.$p)" = "$id" &&
		buildid-check file "$MELPIPE_BIN/$p" >c.$p &&
		test_grep ": of this build$" c.$p || exit 1
	done
'

test_expect_success 'other programs carry none; a changed digit is another build' '
	test_expect_code 1 buildid-check file /bin/cat "$PYTHON" >c.out &&
	test $(grep -c ": not a melpipe program$" c.out) = 2 &&
	cp "$MELPIPE_BIN/recdump" recdump.other &&
	other_build recdump.other &&
	test_expect_code 1 buildid-check file recdump.other >c.other &&
	test_grep ": a melpipe program of another build$" c.other &&
	./recdump.other --version
'

test_expect_success '-v --version says the build id; --version alone one line' '
	for p in $PROGS; do
		$p --version >v.$p &&
		test $(wc -l <v.$p) = 1 &&
		$p -v --version >vv.$p &&
		test $(wc -l <vv.$p) = 2 &&
		test "$(sed -n 2p vv.$p)" = "build id $(buildid-check id)" &&
		test "$(sed -n 1p vv.$p)" = "$(cat v.$p)" || exit 1
	done
'

test_expect_success '-v after --version counts too; -q after -v does not' '
	for p in $PROGS; do
		$p -v --version >vv.$p &&
		$p --version -v >a.$p &&
		test_cmp vv.$p a.$p &&
		$p -V --verbose >a.$p &&
		test_cmp vv.$p a.$p &&
		$p -Vv >a.$p &&
		test_cmp vv.$p a.$p &&
		$p -V -v -q >a.$p &&
		test $(wc -l <a.$p) = 1 || exit 1
	done
'

test_expect_success 'set up 16 MB of clips' '
	rec-gen -n 100 -l 40000 -d f32 >clips.rec
'

test_expect_success 'the readers of a pipe: named when not of this build' '
	buildid-check readers recdump <clips.rec 2>r.ok | recdump -q &&
	test_grep "^readers: of this build$" r.ok &&
	buildid-check readers <clips.rec 2>r.cat | cat >/dev/null &&
	test_grep "^readers: reader pid [0-9]* (cat) is not a melpipe program$" \
		r.cat &&
	buildid-check readers <clips.rec 2>r.other | ./recdump.other -q &&
	test_grep "^readers: reader pid [0-9]* (recdump.other) is a melpipe program of another build$" \
		r.other &&
	buildid-check readers recdump <clips.rec 2>r.helper |
		rec-copy >/dev/null &&
	test_grep "^readers: reader pid [0-9]* (rec-copy) is of this build but not a stage$" \
		r.helper
'

# The copy of bin/ the old rule trusted: the same folder, the same names.
test_expect_success 'a stage of another build in the same folder gets copies' '
	mkdir same &&
	cp "$MELPIPE_BIN/segment" "$MELPIPE_BIN/recdump" same/ &&
	same/segment -v --len 512 <clips.rec 2>s1.err | same/recdump -q &&
	test_grep "segment: $SPLICED" s1.err &&
	other_build same/recdump &&
	same/segment -v --len 512 <clips.rec 2>s2.err | same/recdump -q &&
	test_grep "segment: $NOT: reader pid [0-9]* (recdump) is a melpipe program of another build$" \
		s2.err &&
	same/segment --len 512 <clips.rec >segs.rec &&
	same/segment --len 512 <clips.rec | same/recdump >dump.piped &&
	same/recdump segs.rec >dump.file &&
	test_cmp dump.file dump.piped
'

# waits (5 s at most) until process $1 runs the program $2
wait_exe() {
	n=0
	until test "$(readlink /proc/$1/exe)" = "$2"; do
		n=$((n + 1))
		test $n -lt 500 || return 1
		sleep 0.01
	done
}

test_expect_success 'the check reads what a process runs, deleted or replaced since' '
	mkdir run &&
	cp "$MELPIPE_BIN/recdump" run/recdump &&
	mkfifo fifo1 fifo2 &&
	run/recdump -q fifo1 >/dev/null 2>&1 & pid1=$! &&
	wait_exe $pid1 "$PWD/run/recdump" &&
	rm run/recdump &&
	cp recdump.other run/recdump &&
	readlink /proc/$pid1/exe >exe1 &&
	test_grep "recdump (deleted)$" exe1 &&
	buildid-check pid $pid1 >p1 &&
	test_grep "^$pid1: of this build$" p1 &&
	run/recdump -q fifo2 >/dev/null 2>&1 & pid2=$! &&
	wait_exe $pid2 "$PWD/run/recdump" &&
	rm run/recdump &&
	cp "$MELPIPE_BIN/recdump" run/recdump &&
	test_expect_code 1 buildid-check pid $pid2 >p2 &&
	test_grep "^$pid2: a melpipe program of another build$" p2 &&
	: >fifo1 && : >fifo2 &&
	{ wait $pid1 || :; } && { wait $pid2 || :; }
'

# The id's inputs: lib/, tools/, the Makefile and its fragments.
copy_sources() {
	mkdir -p "$1/tests" &&
	cp -R "$TOP/lib" "$TOP/tools" "$TOP/Makefile" "$1/" &&
	cp "$TOP/tests/build.mk" "$1/tests/"
}

# id_of DIR [VAR=VALUE...]: the id make makes for the sources in DIR.
id_of() {
	d=$1 && shift &&
	MAKEFLAGS= make -s -C "$d" "$@" build/obj/gen/buildid_id.h \
		>/dev/null 2>&1 &&
	sed -n 's/^#define MELPIPE_BUILD_ID_HEX "\(.*\)"$/\1/p' \
		"$d/build/obj/gen/buildid_id.h"
}

test_expect_success 'make: one id for the same sources and flags, another for a change' '
	copy_sources a && copy_sources b &&
	ida=$(id_of a) && idb=$(id_of b) &&
	echo "$ida" | grep -q "^[0-9a-f]\{32\}$" &&
	test "$ida" = "$idb" &&
	touch -d 2000-01-01 a/build/obj/gen/buildid_id.h &&
	test "$(id_of a)" = "$ida" &&
	test -z "$(find a/build/obj/gen/buildid_id.h -newermt 2001-01-01)" &&
	echo "/* a comment */" >>b/lib/xio.c &&
	idc=$(id_of b) && test "$idc" != "$ida" &&
	test -n "$(find b/build/obj/gen/buildid_id.h -newermt 2001-01-01)" &&
	echo "/* a comment */" >>b/tools/recdump/recdump.c &&
	test "$(id_of b)" != "$idc" &&
	test "$(id_of a OPT=-O1)" != "$ida"
'

test_done
