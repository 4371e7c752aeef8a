#!/bin/sh
test_description='gpumel: the GPU released after the waiting process ends
(MELPIPE_GPUMEL_DETACH): same output, same exit, signals passed on'
. "$(dirname "$0")/test-lib.sh"

# tools/gpumel/detach.h: where gpumel may use a GPU it forks first, the
# child does the work and the parent, which the shell waits for, exits
# with the child's status once the output is complete. On this machine
# (the CPU backend) MELPIPE_GPUMEL_DETACH=on forces it; the GPU tests run
# it for real.
MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
SMALL="--device cpu --n-fft 256 --n-mels 16"
ulimit -c 0

# The child of process $1 (its only one), empty when it has none.
child_of() {
	cat /proc/"$1"/task/*/children 2>/dev/null | tr -d ' '
}

# until_mark: the file mark appears within 10 s.
until_mark() {
	test_wait_for test -e mark ||
	{ echo "no mark: the release was cut short"; return 1; }
}

# start_stuck [ARGS]: gpumel detached, with -o out.rec and ARGS, reading a
# fifo that holds the stream's first 3000 bytes and stays open (fd 3 of
# this shell, not passed on), so that it waits for the rest with its
# temporary file made. It runs under run_rc.py, which writes how it ended
# to rc (its exit status, or minus the signal that ended it): $bg_pid is
# run_rc.py, $parent the process the shell would wait for, $child the
# working one.
start_stuck() {
	rm -f fifo rc && mkfifo fifo && exec 3<>fifo &&
	head -c 3000 in.rec >&3 &&
	$PYTHON run_rc.py rc env MELPIPE_GPUMEL_DETACH=on gpumel $SMALL \
		-o out.rec "$@" fifo 2>bg.err &
	bg_pid=$!
	test_wait_for two_processes || {
		echo "gpumel did not start as two processes"
		kill -KILL $bg_pid $parent $child 2>/dev/null
		exec 3>&-
		return 1
	}
}

# two_processes: gpumel, started by start_stuck, has made its temporary
# file and forked: $parent and $child set.
two_processes() {
	ls -A | grep -q "^\.out\.rec\." &&
	parent=$(child_of $bg_pid) && [ -n "$parent" ] &&
	child=$(child_of $parent) && [ -n "$child" ]
}

# ended_as WANT: run_rc.py has written WANT to rc (within 10 s); the fifo
# closed either way, so that nothing waits on it.
ended_as() {
	wait $bg_pid
	exec 3>&-
	test "$(cat rc)" = "$1" || {
		echo "gpumel ended as $(cat rc), not $1"
		return 1
	}
}

# The state of process $1 (R, S, T, Z...), empty when it is gone.
state_of() {
	sed 's/.*) \(.\).*/\1/' /proc/"$1"/stat 2>/dev/null
}

# in_state PID LETTERS: process PID is in one of the states LETTERS; with
# Z among them, its being gone (reaped) counts too.
in_state() {
	case $(state_of "$1") in
	[$2]) return 0 ;;
	"") case $2 in *Z*) return 0 ;; esac ;;
	esac
	return 1
}

# until_state PID LETTERS: in_state within 10 s.
until_state() {
	test_wait_for in_state "$1" "$2" || {
		echo "process $1 is in state '$(state_of "$1")', not one of $2"
		return 1
	}
}

cat >run_rc.py <<'PY'
import signal, subprocess, sys
# run_rc.py RC CMD...: runs CMD with SIGINT and SIGQUIT at their default
# actions and no descriptor above 2; writes its return code to RC
# (negative: the signal that ended it).
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
rc = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write(f"{rc}\n")
PY

test_expect_success 'make a stream' '
	$MK --n 12 --len 300:4000 --rate 16000 --seed 3 >in.rec
'

test_expect_success 'detached, the output and the exit are those of one process' '
	MELPIPE_GPUMEL_DETACH=off gpumel -q $SMALL in.rec >one.rec &&
	MELPIPE_GPUMEL_DETACH=on gpumel -q $SMALL in.rec >two.rec &&
	cmp one.rec two.rec &&
	MELPIPE_GPUMEL_DETACH=off gpumel -q $SMALL -o o.rec in.rec &&
	mv o.rec one-o.rec &&
	MELPIPE_GPUMEL_DETACH=on gpumel -q $SMALL -o o.rec in.rec &&
	cmp one-o.rec o.rec &&
	MELPIPE_GPUMEL_DETACH=on gpumel -q $SMALL <in.rec | recdump -q &&
	test_no_temp
'

test_expect_success '-v says so, naming both processes; off and auto on the CPU do not fork' '
	MELPIPE_GPUMEL_DETACH=on gpumel -v $SMALL in.rec >/dev/null 2>on.err &&
	test_grep "^gpumel: exit: gpumel (pid [0-9]*) ends when its output is complete, and its process [0-9]* releases the backend (cpu: fftw3f, [0-9]* threads\?) after it (with MELPIPE_GPUMEL_DETACH=off, before it ends)$" on.err &&
	tail -n 1 on.err | grep -q "^gpumel: done 12 clips" &&
	for v in off OFF 0 no auto ""; do
		MELPIPE_GPUMEL_DETACH=$v gpumel -v $SMALL in.rec \
			>/dev/null 2>$v.err &&
		! grep "exit:" $v.err || return 1
	done &&
	env -u MELPIPE_GPUMEL_DETACH gpumel -v $SMALL in.rec >/dev/null \
		2>unset.err &&
	! grep "exit:" unset.err &&
	gpumel --help >help &&
	test_grep "^  MELPIPE_GPUMEL_DETACH$" help &&
	test_grep "auto (the default): where gpumel may use a GPU, it$" help
'

test_expect_success 'a value it does not take is a usage error' '
	MELPIPE_GPUMEL_DETACH=sometimes test_single_usage_error gpumel \
		$SMALL in.rec &&
	test_grep "MELPIPE_GPUMEL_DETACH=sometimes: not a value it takes: give auto (the default), on (or 1, yes, true) or off (or 0, no, false)" usage.err
'

test_expect_success 'the work failing: the same exit, the message once' '
	head -c 3000 in.rec >short.rec &&
	test_expect_code 1 env MELPIPE_GPUMEL_DETACH=off gpumel $SMALL \
		short.rec >/dev/null 2>one.err &&
	test_expect_code 1 env MELPIPE_GPUMEL_DETACH=on gpumel $SMALL \
		short.rec >/dev/null 2>two.err &&
	test_cmp one.err two.err &&
	test $(grep -c "input ended inside the record" two.err) = 1 &&
	test_expect_code 2 env MELPIPE_GPUMEL_DETACH=on gpumel $SMALL \
		--hop 0 in.rec 2>/dev/null
'

test_expect_success 'the waiting process holds neither pipe; the working one reads' '
	start_stuck &&
	test "$(readlink /proc/$parent/fd/0)" = /dev/null &&
	test "$(readlink /proc/$parent/fd/1)" = /dev/null &&
	test "$(readlink /proc/$child/fd/0)" = /dev/null &&
	ls -l /proc/$child/fd | grep -q "$PWD/fifo" &&
	kill -TERM $parent &&
	ended_as -15 &&
	test ! -d /proc/$child &&
	test_no_temp
'

# Each signal that ends gpumel, sent to the pid the shell knows: the work
# ends first (its temporary file removed, the process reaped), then the
# waiting process, of the same signal.
for sig in HUP:1 INT:2 QUIT:3 TERM:15 USR1:10 USR2:12; do
	test_expect_success "SIG${sig%:*} to the waiting process ends the work first, then it" "
		start_stuck &&
		kill -${sig%:*} \$parent &&
		ended_as -${sig#*:} &&
		test ! -d /proc/\$child &&
		test ! -e out.rec &&
		rm -f .out.rec.* &&
		test_no_temp
	"
done

test_expect_success 'SIGTSTP to the waiting process stops both; SIGCONT goes on' '
	start_stuck &&
	{ kill -TSTP $parent && until_state $parent T &&
	  until_state $child T && kill -CONT $parent &&
	  until_state $child SR && kill -TERM $parent ||
	  { kill -KILL $parent $child; ended_as x; return 1; }; } &&
	ended_as -15
'

test_expect_success 'SIGKILL to the waiting process: the work ends too' '
	start_stuck &&
	kill -KILL $parent &&
	ended_as -9 &&
	until_state $child Z &&
	test ! -e out.rec &&
	rm -f .out.rec.*
'

# (SIGABRT for a crash: under AddressSanitizer a SIGSEGV is its report
# and exit 1, in either process)
test_expect_success 'the working process killed: the waiting one dies of the same signal' '
	for sig in KILL:9 ABRT:6 USR1:10; do
		start_stuck &&
		kill -${sig%:*} $child &&
		ended_as -${sig#*:} &&
		test ! -e out.rec || return 1
	done &&
	rm -f .out.rec.*
'

test_expect_success 'a SIGCHLD ignored by the caller: the status still comes through' '
	$PYTHON -c "
import signal, subprocess, sys
# ignored in gpumel only (through exec), so that this process can wait
rc = subprocess.call(sys.argv[1:], preexec_fn=lambda:
                     signal.signal(signal.SIGCHLD, signal.SIG_IGN))
sys.exit(rc != 1)
" env MELPIPE_GPUMEL_DETACH=on gpumel $SMALL short.rec >/dev/null 2>ign.err &&
	test_grep "input ended inside the record" ign.err &&
	! grep "waiting for process" ign.err
'

# With standard input and output closed, the status pipe would take
# their numbers: gpumel would write its stream into it, and the waiting
# process exit with the stream's first byte.
test_expect_success 'standard input and output closed: the status pipe keeps clear' '
	test_expect_code 1 env MELPIPE_GPUMEL_DETACH=off gpumel $SMALL \
		in.rec <&- >&- 2>closed-off.err &&
	test_expect_code 1 env MELPIPE_GPUMEL_DETACH=on gpumel $SMALL \
		in.rec <&- >&- 2>closed-on.err &&
	test_cmp closed-off.err closed-on.err &&
	test_grep "unable to write to standard output" closed-on.err
'

# fault-io.so holds the working process 3 s in its exit (where the GPU's
# release would be), then creates the file mark: the shell and a reader
# of gpumel's output and errors see gpumel end before that (no mark yet),
# and the mark comes later (the release was not cut short). With the
# variable off, the mark is there when gpumel has ended.
delayed() {
	rm -f mark &&
	LD_PRELOAD=$FAULT MELPIPE_FAULT_EXIT_DELAY_MS=3000 \
		MELPIPE_FAULT_EXIT_MARK=$PWD/mark "$@"
}

test_expect_success NOSAN 'the caller does not wait for the release; the release is not cut short' '
	FAULT=$TOP/build/obj/tests/helper/fault-io.so &&
	test -f "$FAULT" &&
	delayed env MELPIPE_GPUMEL_DETACH=on gpumel -q $SMALL in.rec 2>&1 |
		cat >both.out &&
	test ! -e mark &&
	cmp both.out one.rec &&
	until_mark &&
	delayed env MELPIPE_GPUMEL_DETACH=on gpumel -q $SMALL in.rec <&- \
		2>&1 | cat >both-closed.out &&
	test ! -e mark &&
	cmp both-closed.out one.rec &&
	until_mark &&
	delayed env MELPIPE_GPUMEL_DETACH=off gpumel -q $SMALL in.rec 2>&1 |
		cat >one-p.out &&
	test -e mark &&
	cmp one-p.out one.rec
'

test_done
