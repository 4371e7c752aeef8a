# test-lib.sh - a small test library in the manner of git's t/test-lib.sh.
#
# A test script sets test_description, sources this file, runs
# test_expect_success blocks and ends with test_done. Output is TAP, so
# prove runs the scripts (in parallel with -j).
#
#   test_expect_success 'what it checks' '
#           step one &&
#           step two
#   '
#
# Each script runs in its own scratch folder tests/trash.<script>, removed
# when every test passed. The programs come from $MELPIPE_BIN (default:
# the build's bin/), the Python oracles from the venv made by scripts/setup.

TEST_DIRECTORY=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$TEST_DIRECTORY/.." && pwd)
MELPIPE_BIN=${MELPIPE_BIN:-$TOP/bin}
PATH=$MELPIPE_BIN:$TOP/build/obj/tests/helper:$PATH
[ "${MELPIPE_SAN:-0}" = 1 ] && PATH=$MELPIPE_BIN:$TOP/build/san/tests/helper:$PATH
PYTHON=$TOP/.dev/venv/bin/python
[ -x "$PYTHON" ] || PYTHON=python3
# The oracles in tests/py read and write streams with the package's
# melpipe.stream, taken from this checkout's python/, not installed.
PYTHONPATH=$TOP/python${PYTHONPATH:+:$PYTHONPATH}
export PATH PYTHON PYTHONPATH TOP TEST_DIRECTORY MELPIPE_BIN
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LC_ALL=C

test_name=$(basename "$0" .sh)
TRASH_DIRECTORY=$TEST_DIRECTORY/trash.$test_name
[ "${MELPIPE_SAN:-0}" = 1 ] && TRASH_DIRECTORY=$TRASH_DIRECTORY.san
rm -rf "$TRASH_DIRECTORY"
mkdir -p "$TRASH_DIRECTORY" || exit 1
cd "$TRASH_DIRECTORY" || exit 1

test_count=0
test_failed=0
test_skipped=0

say() { printf '%s\n' "$*"; }

# test_expect_success 'description' 'commands'
# test_expect_success PREREQ 'description' 'commands'
test_expect_success() {
	prereq=
	if [ $# = 3 ]; then prereq=$1; shift; fi
	test_count=$((test_count + 1))
	if [ -n "$prereq" ] && ! test_have_prereq "$prereq"; then
		test_skipped=$((test_skipped + 1))
		say "ok $test_count # skip $1 (missing $prereq)"
		return 0
	fi
	out=$TRASH_DIRECTORY/.test-output
	if (eval "set -e; $2") >"$out" 2>&1; then
		say "ok $test_count - $1"
	else
		test_failed=$((test_failed + 1))
		say "not ok $test_count - $1"
		sed -e 's/^/#   /' "$out"
		say "#   commands:"
		printf '%s\n' "$2" | sed -e 's/^/#   /'
	fi
}

# skip_all REASON: the whole file is skipped (TAP "1..0 # SKIP").
skip_all() {
	cd "$TEST_DIRECTORY" && rm -rf "$TRASH_DIRECTORY"
	say "1..0 # SKIP $1"
	exit 0
}

# need_cuda_so: skip the file unless the CUDA backend was built.
need_cuda_so() {
	test -f "$MELPIPE_BIN/gpumel-cuda.so" ||
		skip_all "gpumel-cuda.so not built (no nvcc, CUDA=0 or SAN=1)"
}

# test_have_prereq NAME: GPU (a usable CUDA GPU), NOSAN (not a sanitizer
# build), VALGRIND, TASKSET (taskset, and two CPUs or more to run on),
# LIBROSA (the Python has librosa, which the float64 references take
# their filterbanks from: make setup's venv has it; the GPU machine's
# python3 has not).
test_have_prereq() {
	case "$1" in
	GPU) command -v nvidia-smi >/dev/null 2>&1 &&
		nvidia-smi -L >/dev/null 2>&1 ;;
	NOSAN) [ "${MELPIPE_SAN:-0}" != 1 ] ;;
	VALGRIND) command -v valgrind >/dev/null 2>&1 &&
		[ "${MELPIPE_SAN:-0}" != 1 ] ;;
	TASKSET) command -v taskset >/dev/null 2>&1 &&
		[ "$(nproc)" -ge 2 ] ;;
	LIBROSA) "$PYTHON" -c "import librosa" >/dev/null 2>&1 ;;
	*) return 1 ;;
	esac
}

# test_expect_code CODE cmd...: cmd exits with exactly CODE.
test_expect_code() {
	want=$1; shift
	"$@"
	got=$?
	if [ "$got" != "$want" ]; then
		echo "test_expect_code: '$*' exited $got, wanted $want" >&2
		return 1
	fi
}

# test_usage_error PROG ARGS...: PROG refuses its command line: exit 2,
# nothing on stdout, "PROG: why" and "Try 'PROG --help' for more
# information." on stderr. stdin is the caller's. The stderr stays in usage.err, for a
# test_grep of the message.
test_usage_error() {
	test_expect_code 2 "$@" >usage.out 2>usage.err &&
	test ! -s usage.out &&
	test_grep "^$1: " usage.err >/dev/null &&
	test_grep "^Try '$1 --help' for more information" usage.err >/dev/null
}

# test_single_usage_error PROG ARGS...: test_usage_error, and the why is
# one line: usage.err holds it and the pointer to --help, nothing more.
test_single_usage_error() {
	test_usage_error "$@" &&
	if [ "$(wc -l <usage.err)" != 2 ]; then
		echo "test_single_usage_error: more than one message:" >&2
		cat usage.err >&2
		return 1
	fi
}

# test_q_v_later_wins PATTERN PROG ARGS...: of -q and -v the later
# wins: "PROG -q -v ARGS" says PATTERN on stderr, "PROG -v -q ARGS" says
# nothing there. Their outputs stay in qv.out, qv.err, vq.out, vq.err.
test_q_v_later_wins() {
	pattern=$1 prog=$2
	shift 2
	"$prog" -q -v "$@" >qv.out 2>qv.err &&
	test_grep "$pattern" qv.err >/dev/null &&
	"$prog" -v -q "$@" >vq.out 2>vq.err &&
	test_cmp /dev/null vq.err
}

# test_no_temp [DIR]: no temporary output file is left in DIR (default
# .): the hidden .TARGET.PROG-PID-HOST.XXXXXX of tools/common/outfile.h.
test_no_temp() {
	left=$(ls -A "${1:-.}" |
		grep "^\..*\.[a-z0-9]*-[0-9]*-[0-9a-f]\{8\}\.......$") || true
	if [ -n "$left" ]; then
		echo "temporary files left: $left" >&2
		return 1
	fi
}

# test_wait_for CMD...: runs CMD (a command or a function) every 0.05 s
# until it succeeds, 10 s at most; fails when it never did. Uses $tw_i.
test_wait_for() {
	tw_i=0
	until "$@"; do
		tw_i=$((tw_i + 1))
		[ $tw_i -gt 200 ] && return 1
		sleep 0.05
	done
}

# test_start_bg CMD...: starts CMD in the background with SIGINT and
# SIGQUIT at their default actions (a script's background job starts with
# them ignored); CMD's own pid in $bg_pid, for kill and wait.
test_start_bg() {
	$PYTHON -c "
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])" "$@" &
	bg_pid=$!
}

# test_mount_small: mounts a 1 MiB tmpfs on ./small, for a full disk
# (root only; false where it cannot). test_umount_small leaves no mount
# there, whatever the test did.
test_mount_small() {
	[ "$(id -u)" = 0 ] && mkdir -p small &&
		mount -t tmpfs -o size=1m tmpfs small 2>/dev/null
}

test_umount_small() {
	if mountpoint -q small 2>/dev/null; then umount small; fi
}

# test_skip 'description' REASON: one test, skipped for REASON.
test_skip() {
	test_count=$((test_count + 1))
	test_skipped=$((test_skipped + 1))
	say "ok $test_count # skip $1 ($2)"
}

# sys_python: prints the path of a python3 as a user without the test
# venv has one: Debian's /usr/bin/python3 with its h5py and no hdf5plugin
# (a module of that name that fails to import stands before any installed
# one). Made in the scratch folder on the first call.
sys_python() {
	d=$TRASH_DIRECTORY/.sys-python
	if [ ! -x "$d/python3" ]; then
		mkdir -p "$d" &&
		echo "raise ImportError('hidden by test-lib.sh')" \
			>"$d/hdf5plugin.py" &&
		printf '#!/bin/sh\nPYTHONPATH=%s exec /usr/bin/python3 "$@"\n' \
			"$d" >"$d/python3" &&
		chmod +x "$d/python3" || return 1
	fi
	echo "$d/python3"
}

# test_must_fail cmd...: cmd fails in a controlled way (exit 1..125, not a
# signal, not a sanitizer's crash).
test_must_fail() {
	"$@"
	got=$?
	if [ $got = 0 ]; then
		echo "test_must_fail: '$*' succeeded" >&2
		return 1
	elif [ $got -gt 125 ]; then
		echo "test_must_fail: '$*' died of a signal ($got)" >&2
		return 1
	fi
	return 0
}

# test_cmp expected actual
test_cmp() { diff -u "$1" "$2"; }

# test_tap NAME [ARG...]: runs the C helper NAME (a unit test printing TAP)
# with ARGs, its TAP in out.NAME followed by the ARGs; passes when it
# exits 0, printed a plan and no "not ok" line. Shows what failed
# otherwise.
test_tap() {
	log=$(printf 'out.%s' "$*" | tr ' ' '_')
	if ! command -v "$1" >/dev/null; then
		echo "$1 not found: run 'make test-helpers'"
		return 1
	fi
	rc=0
	"$@" >"$log" 2>&1 || rc=$?
	if [ $rc = 0 ] && grep -q '^1\.\.[1-9]' "$log" &&
	   ! grep -q '^not ok' "$log"; then
		return 0
	fi
	echo "$* exited $rc"
	grep -v '^ok ' "$log"
	return 1
}

# test_same_datasets A B: the HDF5 files A and B hold the same datasets
# and attributes but for h5pack's provenance lines (py/same_datasets.py).
test_same_datasets() {
	"$PYTHON" "$TEST_DIRECTORY/py/same_datasets.py" "$1" "$2"
}

# test_grep PATTERN FILE: like grep, but shows the file when it fails.
test_grep() {
	if ! grep -e "$1" "$2"; then
		echo "test_grep: no '$1' in $2:" >&2
		cat "$2" >&2
		return 1
	fi
}

test_done() {
	say "1..$test_count"
	if [ $test_failed = 0 ]; then
		cd "$TEST_DIRECTORY" && rm -rf "$TRASH_DIRECTORY"
		exit 0
	fi
	say "# failed $test_failed of $test_count"
	exit 1
}
