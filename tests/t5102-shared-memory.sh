#!/bin/sh
test_description='shared memory: payloads by reference between stages of one build'
. "$(dirname "$0")/test-lib.sh"

# Between two stages of this build on one host, a writer offers a ring of
# shared memory in its stream (formats/record.md, version 5); once its
# reader attached, payloads go in the ring and the pipe carries
# references, and segment passes wavcat's references on to gpumel. Every
# other reader (cat, tee, a file) gets the payloads themselves, and a
# recorded stream never holds a reference: the Python reader, which
# attaches no ring and refuses a reference, reads them. The path is on by
# default (MELPIPE_SHM=1 here all the same, whatever the caller's
# environment says), MELPIPE_SHM=0 turns it off. The dataset is the same in every case. Stages
# killed anywhere leave their neighbours with a clear message and no
# dataset.
MELPIPE_SHM=1
export MELPIPE_SHM

W="wavcat -v --rate 4096 DATA/"
S="segment -v --len 4096 --hop 2048"
G="gpumel -v --device cpu --n-fft 512 --hop 128 --n-mels 64 --no-center"
BYREF='payloads (.*) in shared memory'
READ='payloads (.*) read in shared memory'
# a slow last stage, whose input backs up into the rings
SLOW_G="gpumel -v --device cpu -j 1 --n-fft 1024 --hop 64 --n-mels 64"
CHECK="$PYTHON $TEST_DIRECTORY/py/rec_check.py"

test_expect_success 'set up 900 clips of 2 s' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" DATA --labels 3 \
		--per-label 300 --seconds 2 &&
	test $(find DATA -name "*.wav" | wc -l) = 900
'

test_expect_success 'every hop that carries samples carries them by reference' '
	$W 2>w.err | $S 2>s.err | $G 2>g.err | h5pack -v -o shm.h5 2>h.err &&
	test_grep "wavcat: output: [1-9][0-9]* $BYREF" w.err &&
	test_grep "segment: input: [1-9][0-9]* $READ" s.err &&
	test_grep "gpumel: input: [1-9][0-9]* $READ" g.err &&
	test_grep "gpumel: output: features in the stream, not in shared memory" g.err &&
	test_must_fail grep "h5pack: input: .* $READ" h.err
'

# gpumel's features stay in the stream (by reference h5pack's one thread
# would hash them); its -v says so only where the path could apply
test_expect_success 'gpumel says its features stay in the stream, only for a pipe with the path on' '
	test_grep "^gpumel: output: features in the stream, not in shared memory: shared memory carries samples only (audio and windows records)$" g.err &&
	$W 2>/dev/null | $S 2>/dev/null | $G -o gf.rec 2>gf.err &&
	$W 2>/dev/null | $S 2>/dev/null | $G >gs.rec 2>gs.err &&
	$W 2>/dev/null | $S 2>/dev/null | MELPIPE_SHM=off $G 2>g0.err |
		recdump -q &&
	for f in gf.err gs.err g0.err; do
		test_grep "^gpumel: done " $f &&
		! grep "features in the stream" $f || return 1
	done
'

test_expect_success 'segment passes wavcat'"'"'s references on, copying none' '
	test_grep "segment: output: [1-9][0-9]* $BYREF, [1-9][0-9]* of them passed on" s.err
'

# wavcat's decoding threads copy a decoded clip into the ring themselves
# (rec_writer_lease), once its writing thread has seen the ring attached
test_expect_success 'wavcat'"'"'s decoding threads put the samples in the ring' '
	test_grep "wavcat: output: [1-9][0-9]* $BYREF, 0 of them passed on from the input.s, [1-9][0-9]* put there by the decoding threads" w.err
'

test_expect_success 'on by default; off with MELPIPE_SHM=0: the same dataset, -v says so' '
	(
		unset MELPIPE_SHM &&
		$W 2>wd.err | $S 2>sd.err | $G 2>gd.err | h5pack -o on.h5
	) &&
	test_grep "wavcat: output: [1-9][0-9]* $BYREF" wd.err &&
	test_grep "segment: output: [1-9][0-9]* $BYREF" sd.err &&
	test_same_datasets shm.h5 on.h5 &&
	(
		MELPIPE_SHM=0 && export MELPIPE_SHM &&
		$W 2>w0.err | $S 2>s0.err | $G 2>g0.err | h5pack -o off.h5
	) &&
	test_grep "wavcat: output: payloads in the stream, not in shared memory: off (MELPIPE_SHM=0)$" w0.err &&
	test_grep "segment: output: .*not in shared memory: off (MELPIPE_SHM=0)$" s0.err &&
	! grep "in shared memory," s0.err g0.err &&
	test_same_datasets shm.h5 off.h5
'

test_expect_success 'MELPIPE_SHM takes on and off as words, in any case' '
	for v in off OFF No false; do
		(
			MELPIPE_SHM=$v && export MELPIPE_SHM &&
			$W 2>wv.err | $S 2>sv.err | recdump -q
		) &&
		test_grep "wavcat: output: payloads in the stream, not in shared memory: off (MELPIPE_SHM=$v)$" wv.err &&
		test_grep "segment: output: .*not in shared memory: off (MELPIPE_SHM=$v)$" sv.err ||
		return 1
	done &&
	for v in on ON Yes true 1; do
		(
			MELPIPE_SHM=$v && export MELPIPE_SHM &&
			$W 2>wv.err | $S 2>sv.err | recdump -q
		) &&
		test_grep "wavcat: output: [1-9][0-9]* $BYREF" wv.err &&
		test_grep "segment: input: [1-9][0-9]* $READ" sv.err ||
		return 1
	done
'

test_expect_success 'another MELPIPE_SHM is a usage error that says what to give' '
	wavcat --rate 4096 DATA/ >env.rec 2>/dev/null &&
	for v in x 3 maybe on2; do
		for p in "wavcat DATA/" "recdump env.rec" "h5pack -o x.h5 env.rec"; do
			MELPIPE_SHM=$v test_expect_code 2 $p >/dev/null 2>err &&
			test_grep "^${p%% *}: MELPIPE_SHM=$v: not a value it takes: give on (or 1, yes, true; the default), off (or 0, no, false), or 2 " err ||
			return 1
		done
	done &&
	test ! -e x.h5
'

test_expect_success 'MELPIPE_ZERO_COPY takes the same words; another value is a usage error' '
	MELPIPE_ZERO_COPY=Off $W 2>wz.err | $S >/dev/null 2>/dev/null &&
	test_grep "wavcat: output: copied (write), not vmsplice: MELPIPE_ZERO_COPY=Off$" wz.err &&
	MELPIPE_SHM=0 MELPIPE_ZERO_COPY=yes $W 2>wz.err | $S >/dev/null 2>/dev/null &&
	test_grep "wavcat: output: [0-9.]* of [0-9.]* MB handed to the pipe without a copy" wz.err &&
	MELPIPE_ZERO_COPY=2 test_expect_code 2 wavcat DATA/ >/dev/null 2>err &&
	test_grep "^wavcat: MELPIPE_ZERO_COPY=2: not a value it takes: give on (or 1, yes, true; the default) or off (or 0, no, false)$" err
'

test_expect_success 'every program'"'"'s --help says the environment, once' '
	for p in wavcat segment gpumel h5pack recdump recmerge; do
		$p --help >help &&
		test $(grep -c "^Environment:$" help) = 1 &&
		test_grep "^  MELPIPE_SHM  " help &&
		test_grep "carries references to them: on (the default; or 1,$" help &&
		test_grep "or 2: the ring offered to any one$" help &&
		test_grep "^  MELPIPE_SHM_RING_MB .*" help &&
		test_grep "1 to 65536 (default 64)$" help &&
		test_grep "^  MELPIPE_ZERO_COPY   on (the default" help ||
		return 1
	done
'

test_expect_success 'a file gets payloads, never references' '
	$W >clips.rec 2>f.err &&
	test_grep "wavcat: output: .*not in shared memory: the output is not a pipe$" f.err &&
	$CHECK clips.rec >/dev/null &&
	$S <clips.rec >segs.rec 2>/dev/null &&
	$G <segs.rec >feats.rec 2>/dev/null &&
	$CHECK feats.rec >/dev/null
'

test_expect_success 'through cat or tee the payloads travel in the stream' '
	$W 2>wc.err | cat | $S 2>sc.err >segs-cat.rec &&
	test_grep "wavcat: output: .*not in shared memory: reader pid [0-9]* (cat) is not a melpipe program$" wc.err &&
	cmp segs-cat.rec segs.rec &&
	$W 2>/dev/null | tee tee.rec | $S 2>/dev/null >segs-tee.rec &&
	cmp tee.rec clips.rec &&
	cmp segs-tee.rec segs.rec
'

test_expect_success 'recdump reads references and checks their CRCs' '
	$W 2>/dev/null | recdump >ref.txt &&
	recdump clips.rec >file.txt &&
	test_cmp file.txt ref.txt
'

# -v counts what the records carry: a payload by reference counts its
# bytes, not the reference's 16, so the counts are the stream's size in a
# file, by reference or not.
test_expect_success '-v counts the payloads'"'"' bytes, by reference or not; recdump -v says what came by reference' '
	size=$(wc -c <clips.rec) &&
	$S <clips.rec >segs-v.rec 2>/dev/null &&
	ssize=$(wc -c <segs-v.rec) &&
	test_grep "^wavcat: [0-9]* records, $size bytes in" f.err &&
	$W 2>wb.err | $S 2>sb.err | recdump -q -v 2>rb.err &&
	test_grep "^wavcat: [0-9]* records, $size bytes in" wb.err &&
	test_grep "^segment: input: [1-9][0-9]* $READ" sb.err &&
	test_grep "^recdump: [0-9]* records, $ssize bytes in" rb.err &&
	test_grep "^recdump: input: [1-9][0-9]* $READ" rb.err &&
	(
		MELPIPE_SHM=0 && export MELPIPE_SHM &&
		$W 2>w0b.err | $S 2>s0b.err | recdump -q -v 2>r0b.err
	) &&
	test_grep "^wavcat: [0-9]* records, $size bytes in" w0b.err &&
	test_grep "^recdump: [0-9]* records, $ssize bytes in" r0b.err &&
	! grep "shared memory" r0b.err &&
	sed -n "s/; waiting for input.*//p" sb.err >counts.shm &&
	sed -n "s/; waiting for input.*//p" s0b.err >counts.off &&
	test_grep "^segment: read [0-9]* records (.*), wrote" counts.shm &&
	test_cmp counts.off counts.shm
'

# segment does not hash a payload it passes on whole by reference (it
# reads none of its samples): the record it writes carries the CRC the
# payload must have, and the stage that reads the samples checks it. A
# payload it cuts it checks itself, before it reads a sample.
# (test-rec-shm corrupt changes one byte of a payload in its ring after
# the payload's record is made.)
test_expect_success 'a payload changed in the ring, passed on whole: the next reader finds it' '
	{ test-rec-shm corrupt 2>w.err | segment --len 1000 --hop 1000 \
		2>s.err | recdump -q >/dev/null 2>r.err; echo $? >rc; } &&
	test "$(cat rc)" = 1 &&
	test_grep "changed in the ring" w.err &&
	test_grep "^recdump: stdin: record [0-9]* at byte [0-9]*: checksum mismatch" r.err
'

test_expect_success 'a payload changed in the ring, cut: segment finds it' '
	{ test-rec-shm corrupt 2>w.err | segment --len 1000 --hop 1000 \
		--last drop >cut.rec 2>s.err; echo $? >rc; } &&
	test "$(cat rc)" = 1 &&
	test_grep "changed in the ring" w.err &&
	test_grep "^segment: stdin: record [0-9]* at byte [0-9]*: checksum mismatch of a payload in shared memory" s.err &&
	test_must_fail recdump -q cut.rec 2>/dev/null
'

test_expect_success 'a ring of 1 MiB fills: the writers wait for room' '
	MELPIPE_SHM_RING_MB=1 && export MELPIPE_SHM_RING_MB &&
	$W 2>w1.err | $S 2>s1.err | $SLOW_G 2>g1.err | h5pack -o full.h5 &&
	test_grep "wavcat: output: [1-9][0-9]* $BYREF.* ([1-9][0-9]* waits for room" w1.err &&
	MELPIPE_SHM=0 $W 2>/dev/null | $S 2>/dev/null | $SLOW_G 2>/dev/null |
		h5pack -o full0.h5 &&
	test_same_datasets full.h5 full0.h5
'

test_expect_success 'MELPIPE_SHM_RING_MB must be a number of MiB' '
	for v in 0 x 65537 -1; do
		MELPIPE_SHM_RING_MB=$v test_expect_code 2 wavcat DATA/ \
			>/dev/null 2>err &&
		test_grep "MELPIPE_SHM_RING_MB=$v: not a number of MiB" err ||
		return 1
	done
'

test_expect_success VALGRIND 'the pipeline by reference is clean under valgrind' '
	# MELPIPE_SHM=2: offered to whatever one process reads (valgrind'"'"'s
	# program runs the stage); only a stage that attaches gets
	# references. Each stage'"'"'s errors go to its log, which stays empty.
	# wavcat starts once the others have (valgrind starts slowly), so
	# that each stage finds its reader at its first payloads.
	VG="valgrind -q --leak-check=full --errors-for-leak-kinds=definite" &&
	MELPIPE_SHM=2 && export MELPIPE_SHM &&
	{ sleep 3 && exec $VG --log-file=vg.w.log wavcat -v --rate 4096 DATA/ \
		2>vw.err; } |
		$VG --log-file=vg.s.log $S 2>vs.err |
		$VG --log-file=vg.g.log $G 2>vg.err |
		$VG --log-file=vg.h.log h5pack -v -o vg.h5 2>vh.err &&
	cat vg.w.log vg.s.log vg.g.log vg.h.log >vg.log &&
	test_cmp /dev/null vg.log &&
	test_grep "wavcat: done 900 clips" vw.err &&
	test_grep "wavcat: output: [1-9][0-9]* $BYREF" vw.err &&
	test_grep "segment: output: [1-9][0-9]* $BYREF, [1-9][0-9]* of them passed on" vs.err &&
	test_grep "gpumel: input: [1-9][0-9]* $READ" vg.err
'

# late_reader PIDFILE CMD...: once the process whose pid PIDFILE holds
# has ended (gone, or a zombie not yet reaped), runs CMD in its place: a
# reader that reads its stream only after its writer exited.
late_reader() {
	until [ -s "$1" ]; do sleep 0.01; done
	pid=$(cat "$1") && shift
	while [ -d /proc/$pid ] &&
	      ! grep -q "^State:[[:space:]]*[ZX]" /proc/$pid/status 2>/dev/null
	do
		sleep 0.01
	done
	exec "$@"
}

# A writer offers its ring as soon as it sees its reader, and sends
# references only once the reader attached; a reader that comes to the
# offer after its writer exited (a small stream fits in the pipe) cannot
# open the ring, and nothing went by reference: -v says so in words, not
# as an errno.
test_expect_success 'an offer read after its writer ended: said plainly' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" FEW --labels 2 \
		--per-label 2 --seconds 1 &&
	(
		MELPIPE_SHM=2 && export MELPIPE_SHM &&
		sh -c "echo \$\$ >w.pid; exec wavcat -q --rate 4096 FEW/" |
		late_reader w.pid segment -v --len 4096 >late.rec 2>late.err
	) &&
	test_grep "^segment: input: no payload in shared memory: the stage that offered its ring (pid $(cat w.pid)) had finished before this one read the offer, so its payloads came in the stream$" late.err &&
	! grep "No such file" late.err &&
	recdump -q late.rec
'

test_expect_success 'a reader that stops early ends the stages, no hang' '
	timeout 300 sh -c "$W 2>/dev/null | $S 2>/dev/null | recdump -n 1 >first.txt" ;
	test $? != 124 &&
	test $(grep -c " windows clip=0 " first.txt) = 1
'

# kill_run STAGE SECONDS: the pipeline over KILL/ (60 MB of samples)
# with rings of 1 MiB; after SECONDS a stage after STAGE (w, s, g or h) is
# stopped (gpumel, which holds what it reads until its output moves, for
# wavcat and segment; else h5pack) so that the rings and pipes before it
# fill and references are in flight, then STAGE is killed with SIGKILL
# and the stopped stage let go; the survivors' messages in k.*.err.
# Fails when STAGE had ended before (the test proved nothing) or a
# dataset was written.
kill_run() {
	rm -f k.h5 k.*.err k.pid
	{
		sh -c "echo w \$\$ >>k.pid; exec $KW" 2>k.w.err |
		sh -c "echo s \$\$ >>k.pid; exec $S" 2>k.s.err |
		sh -c "echo g \$\$ >>k.pid; exec $G" 2>k.g.err |
		sh -c "echo h \$\$ >>k.pid; exec h5pack -o k.h5" 2>k.h.err
	} &
	until [ -s k.pid ] && [ $(wc -l <k.pid) = 4 ]; do sleep 0.01; done
	sleep "$2"
	case $1 in w|s) stop=g ;; *) stop=h ;; esac
	last=$(sed -n "s/^$stop //p" k.pid)
	victim=$(sed -n "s/^$1 //p" k.pid)
	kill -STOP $last
	sleep 0.5
	alive=0
	kill -0 $victim 2>/dev/null && alive=1
	kill -9 $victim 2>/dev/null
	kill -CONT $last
	wait
	[ $alive = 1 ] || { echo "$1 had ended before it was killed"; return 1; }
	test ! -e k.h5 || { echo "k.h5 exists after $1 was killed"; return 1; }
}

test_expect_success 'set up 120 clips of 60 s to kill stages in' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" KILL --labels 3 \
		--per-label 40 --seconds 60
'

KW="wavcat -v --rate 4096 KILL/"

# pause_after BYTES FILE: FILE's first BYTES, then after a second the
# rest: a reader of the pipe after it has stopped by then.
pause_after() {
	head -c $1 "$2" && sleep 1 && tail -c +$(($1 + 1)) "$2"
}

test_expect_success 'a reader that stops is named by the stage before it' '
	$KW >n.rec 2>/dev/null &&
	for shm in 1 0; do
		pause_after 4000000 n.rec |
			MELPIPE_SHM=$shm segment --len 4096 --hop 2048 2>n.err |
			recdump -q -n 1 >/dev/null &&
		test_grep "^segment: unable to write to standard output: Broken pipe (the next stage, recdump, pid [0-9]*, stopped reading)$" n.err ||
		return 1
	done &&
	pause_after 4000000 n.rec |
		MELPIPE_SHM=0 MELPIPE_ZERO_COPY=0 segment --len 4096 --hop 2048 \
		2>n.err | recdump -q -n 1 >/dev/null &&
	test_grep "^segment: unable to write to standard output: Broken pipe (the next stage stopped reading)$" n.err
'

# ended_by STAGE: what a reader says when STAGE, the one before it,
# stopped: its stream stopped short, naming STAGE from the stream's
# header; or, killed before it wrote its header, that it wrote nothing.
ended_by() {
	echo "stdin: record [0-9]* at byte [0-9]*: \(input ended [^:]*: the stream stopped short, most likely because the stage before, $1, stopped (killed, or failed with its own message)\|empty input (no header record): the stage before wrote nothing\)"
}

# kill_all TIMES: every stage killed after each of TIMES; each neighbour
# stops, the stage after naming it, the stage before saying its reader
# stopped (naming it when it had found it while it read).
kill_all() {
	for t in "$@"; do
		kill_run w $t &&
		test_grep "segment: $(ended_by wavcat)" k.s.err &&
		test_grep "gpumel: $(ended_by segment)" k.g.err &&
		kill_run s $t &&
		test_grep "wavcat: unable to write to standard output: Broken pipe (the next stage\(, segment, pid [0-9]*,\)\? stopped reading)" k.w.err &&
		test_grep "gpumel: $(ended_by segment)" k.g.err &&
		test_grep "h5pack: $(ended_by gpumel)" k.h.err &&
		kill_run g $t &&
		test_grep "segment: unable to write to standard output: Broken pipe (the next stage\(, gpumel, pid [0-9]*,\)\? stopped reading)" k.s.err &&
		test_grep "h5pack: $(ended_by gpumel)" k.h.err &&
		kill_run h $t &&
		test_grep "gpumel: unable to write to standard output: Broken pipe (the next stage\(, h5pack, pid [0-9]*,\)\? stopped reading)" k.g.err ||
		return 1
	done
}

test_expect_success 'a stage killed anywhere: the others stop, the next naming it' '
	MELPIPE_SHM_RING_MB=1 && export MELPIPE_SHM_RING_MB &&
	kill_all 0 0.05 0.15
'

test_expect_success 'the same with the shared-memory path off' '
	MELPIPE_SHM=0 && export MELPIPE_SHM &&
	kill_all 0.05 0.15
'

# A clip longer than --piece-samples comes in pieces: segment writes the
# windows inside each piece as pointing at the piece's own bytes, which
# go on by reference to wavcat's ring (those that begin before the piece
# are copied). 120 clips of 60 s in pieces of 16384 samples.
test_expect_success 'the windows inside pieces of long clips go on by reference' '
	PW="wavcat -v --rate 4096 --piece-samples 16384 KILL/" &&
	$PW 2>pw.err | $S 2>ps.err | $G 2>/dev/null | h5pack -o pon.h5 &&
	test_grep "wavcat: .* 120 clips longer than 16384 samples in 1800 pieces" \
		pw.err &&
	test_grep "segment: output: [1-9][0-9]* $BYREF, [1-9][0-9][0-9]* of them passed on" ps.err &&
	(
		MELPIPE_SHM=0 && export MELPIPE_SHM &&
		$PW 2>/dev/null | $S 2>/dev/null | $G 2>/dev/null |
			h5pack -o poff.h5
	) &&
	test_same_datasets pon.h5 poff.h5
'

test_done
