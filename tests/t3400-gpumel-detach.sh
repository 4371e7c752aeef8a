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

# gone PID: process PID has ended (gone, or a zombie nobody has reaped
# yet), within 10 s.
gone() {
	i=0
	while [ -d /proc/"$1" ] &&
	      [ "$(sed 's/.*) \(.\).*/\1/' /proc/"$1"/stat 2>/dev/null)" != Z ]
	do
		i=$((i + 1))
		[ $i -gt 1000 ] && { echo "process $1 still runs"; return 1; }
		sleep 0.01
	done
}

# start_stuck [ARGS]: gpumel detached, with -o out.rec and ARGS, reading a
# fifo that holds the stream's first 3000 bytes and stays open (fd 3), so
# that it waits for the rest with its temporary file made; $bg_pid the
# waiting process, $child the working one.
start_stuck() {
	rm -f fifo && mkfifo fifo && exec 3<>fifo &&
	head -c 3000 in.rec >&3 &&
	test_start_bg env MELPIPE_GPUMEL_DETACH=on gpumel $SMALL -o out.rec \
		"$@" fifo 2>bg.err &&
	i=0 &&
	until ls -A | grep -q "^\.out\.rec\." && child=$(child_of $bg_pid) &&
	      [ -n "$child" ]; do
		i=$((i + 1))
		if [ $i -gt 300 ]; then
			kill -KILL $bg_pid; wait $bg_pid; return 1
		fi
		sleep 0.05
	done
}

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
	test_grep "^gpumel: exit: output complete; gpumel ends now (pid [0-9]*) and its process [0-9]* releases the GPU after it (MELPIPE_GPUMEL_DETACH=off: before it ends)$" on.err &&
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
	test "$(readlink /proc/$bg_pid/fd/0)" = /dev/null &&
	test "$(readlink /proc/$bg_pid/fd/1)" = /dev/null &&
	test "$(readlink /proc/$child/fd/0)" = /dev/null &&
	ls -l /proc/$child/fd | grep -q "$PWD/fifo" &&
	kill -TERM $bg_pid &&
	test_expect_code 143 wait $bg_pid &&
	exec 3>&- &&
	test ! -d /proc/$child &&
	test_no_temp
'

# Each signal that ends gpumel, sent to the pid the shell knows: the work
# ends first (its temporary file removed, the process reaped), then the
# waiting process, of the same signal.
for sig in HUP:129 INT:130 QUIT:131 TERM:143; do
	test_expect_success "SIG${sig%:*} to the waiting process ends the work first" "
		start_stuck &&
		kill -${sig%:*} \$bg_pid &&
		test_expect_code ${sig#*:} wait \$bg_pid &&
		exec 3>&- &&
		test ! -d /proc/\$child &&
		test ! -e out.rec &&
		test_no_temp
	"
done

test_expect_success 'SIGKILL to the waiting process: the work ends too' '
	start_stuck &&
	kill -KILL $bg_pid &&
	test_expect_code 137 wait $bg_pid &&
	exec 3>&- &&
	gone $child &&
	test ! -e out.rec
'

test_expect_success 'the working process killed: the waiting one dies of the same signal' '
	for sig in KILL:137 SEGV:139 USR1:138; do
		start_stuck &&
		kill -${sig%:*} $child &&
		test_expect_code ${sig#*:} wait $bg_pid &&
		exec 3>&- &&
		test ! -e out.rec || return 1
	done &&
	rm -f .out.rec.*
'

test_done
