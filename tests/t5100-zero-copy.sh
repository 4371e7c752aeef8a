#!/bin/sh
test_description='zero copy: vmsplice into pipes read by melpipe programs only'
. "$(dirname "$0")/test-lib.sh"

# The stages hand full output buffers to a pipe with vmsplice(2) when every
# reader of the pipe is one of the suite's programs of the writer's own
# build (the build id in the program its process runs, wherever it lies:
# t5101 tests the id and its check), and copy with write(2) otherwise or
# with MELPIPE_ZERO_COPY=0. Every stream that went through vmsplice must
# equal the one that was copied, byte for byte or dataset for dataset.
# The payloads themselves go through the pipes here: the shared-memory
# path, which would carry them outside (t5102), is off.
MELPIPE_SHM=0
export MELPIPE_SHM

W="wavcat -v --rate 4096 DATA/"
S="segment -v --len 512 --hop 512"
G="gpumel -v --device cpu --n-fft 512 --hop 512 --n-mels 32 --no-center"
# A slow reader of segment's output: one thread, an FFT twice the window,
# small batches, and its own output drained slowly (slowcat.py) so that it
# stops reading now and then while segment's pages sit in the pipe.
SLOW_G="gpumel --device cpu -j 1 --batch 4 --n-fft 1024 --hop 128 --n-mels 32"
SPLICED='output: .* MB handed to the pipe without a copy (vmsplice)'
COPIED='output: copied (write)'
# why not: the reader found, MELPIPE_ZERO_COPY, the system
NOT="$COPIED, not vmsplice"
FILE_OUT="$NOT: standard output is a file, not a pipe"

test_expect_success 'set up 20 MB of clips, a splicing relay, a slow drain' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" DATA --labels 3 \
		--per-label 40 --seconds 20 &&
	test $(find DATA -name "*.wav" | wc -l) = 120 &&
	cat >splice.py <<-\EOF &&
	# Moves stdin to stdout with splice(2): the pages a writer handed to
	# the input pipe would go on to the output pipe, not a copy of them.
	import os
	while os.splice(0, 1, 1 << 20):
	    pass
	EOF
	cat >slowcat.py <<-\EOF &&
	# Copies stdin to stdout in 16 KiB pieces with a pause after each.
	import os, time
	while True:
	    b = os.read(0, 16384)
	    if not b:
	        break
	    os.write(1, b)
	    time.sleep(0.0005)
	EOF
	$W >clips.rec 2>clips.err &&
	test_grep "wavcat: $FILE_OUT" clips.err &&
	recdump -q clips.rec
'

test_expect_success 'wavcat, segment and gpumel vmsplice into melpipe readers' '
	$W 2>w.err | $S 2>s.err | $G 2>g.err | h5pack -o zc.h5 &&
	test_grep "wavcat: $SPLICED" w.err &&
	test_grep "segment: $SPLICED" s.err &&
	test_grep "gpumel: $SPLICED" g.err
'

test_expect_success 'wavcat vmsplices into recdump' '
	$W 2>wr.err | recdump -q &&
	test_grep "wavcat: $SPLICED" wr.err
'

test_expect_success 'a reader of this build from another folder gets the pages' '
	mkdir -p elsewhere &&
	cp "$MELPIPE_BIN/recdump" elsewhere/ &&
	$W 2>we.err | elsewhere/recdump >else.txt &&
	test_grep "wavcat: $SPLICED" we.err &&
	recdump clips.rec >here.txt &&
	test_cmp here.txt else.txt
'

test_expect_success 'with MELPIPE_ZERO_COPY=0 they copy, into the same dataset' '
	(
		MELPIPE_ZERO_COPY=0 && export MELPIPE_ZERO_COPY &&
		$W 2>w0.err | $S 2>s0.err | $G 2>g0.err | h5pack -o copy.h5
	) &&
	test_grep "wavcat: $NOT: MELPIPE_ZERO_COPY=0" w0.err &&
	test_grep "segment: $NOT: MELPIPE_ZERO_COPY=0" s0.err &&
	test_grep "gpumel: $NOT: MELPIPE_ZERO_COPY=0" g0.err &&
	test_same_datasets zc.h5 copy.h5
'

test_expect_success 'a reader that is not a melpipe program (cat) gets copies' '
	$W 2>wc.err | cat | $S 2>sc.err >segs-cat.rec &&
	test_grep "wavcat: $NOT: reader pid [0-9]* (cat) is not a melpipe program$" \
		wc.err &&
	$S <clips.rec 2>/dev/null >segs.rec &&
	recdump -q segs-cat.rec &&
	cmp segs-cat.rec segs.rec
'

test_expect_success 'a reader that splices onward (os.splice) gets copies' '
	$W 2>ws.err | "$PYTHON" splice.py | recdump -q &&
	test_grep "wavcat: $NOT: reader pid [0-9]* (python[0-9.]*) is not a melpipe program$" \
		ws.err &&
	$W 2>/dev/null | "$PYTHON" splice.py >spliced.rec &&
	cmp spliced.rec clips.rec
'

test_expect_success NOSAN 'where vmsplice is refused, the stages write' '
	# fault-io.so makes vmsplice fail with EINVAL, as a sandbox or a
	# kernel without it would
	(
		LD_PRELOAD=$TOP/build/obj/tests/helper/fault-io.so &&
		MELPIPE_FAULT_VMSPLICE=1 &&
		export LD_PRELOAD MELPIPE_FAULT_VMSPLICE &&
		$W 2>wf.err | $S 2>sf.err >segs-fault.rec
	) &&
	test_grep "wavcat: $NOT: vmsplice refused by the system: Invalid argument" \
		wf.err &&
	test_grep "segment: $FILE_OUT" sf.err &&
	$S <clips.rec 2>/dev/null >segs.rec &&
	cmp segs-fault.rec segs.rec
'

test_expect_success 'a slow melpipe reader gets what a copy would give' '
	$S <clips.rec 2>s1.err | $SLOW_G | "$PYTHON" slowcat.py >feats-zc.rec &&
	test_grep "segment: $SPLICED" s1.err &&
	(
		MELPIPE_ZERO_COPY=0 && export MELPIPE_ZERO_COPY &&
		$S <clips.rec 2>s2.err | $SLOW_G >feats-copy.rec
	) &&
	test_grep "segment: $COPIED" s2.err &&
	recdump -q feats-zc.rec &&
	cmp feats-zc.rec feats-copy.rec
'

# timeout turns a hang into a failure (it signals its whole process group).
test_expect_success '-v says an output that is no pipe is a file or a device' '
	$W -o clips-o.rec 2>wo.err &&
	test_grep "wavcat: $NOT: .clips-o.rec. is a file, not a pipe$" wo.err &&
	$S <clips.rec -o segs-o.rec 2>so.err &&
	test_grep "segment: $NOT: .segs-o.rec. is a file, not a pipe$" so.err &&
	$G <segs.rec >/dev/null 2>gd.err &&
	test_grep "gpumel: $NOT: standard output is a device, not a pipe$" gd.err &&
	$W --shard 0/1 -o shard.rec 2>/dev/null &&
	recmerge -v shard.rec >merged.rec 2>rm.err &&
	test_grep "recmerge: $FILE_OUT$" rm.err &&
	! grep "vmsplice only into a pipe" wo.err so.err gd.err rm.err
'

test_expect_success 'a melpipe reader that stops early ends the stages, no hang' '
	timeout 300 sh -c "$W 2>we.err | $S 2>se.err | recdump -n 1 >first.txt" &&
	test_grep "segment: .*Broken pipe" se.err &&
	test $(grep -c " windows clip=0 " first.txt) = 1
'

test_done
