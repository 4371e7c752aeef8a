#!/bin/sh
test_description='gpumel --preset kaldi: Kaldi filterbank features against a
float64 reference of Kaldi fbank, many option sets, dither, pieces'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
REF="$PYTHON -W ignore $TEST_DIRECTORY/py/kaldi_ref.py"
PC="$PYTHON -W ignore $TEST_DIRECTORY/py/gpumel_pieces.py"
CMP="$PYTHON $TEST_DIRECTORY/py/cuda_cmp.py"
DEV="--device ${MELPIPE_GPUMEL_DEVICE:-cpu}"

# The same frames computed in other batches: bit for bit on the CPU; on
# the GPU (scripts/gpu-check runs this file with MELPIPE_GPUMEL_DEVICE=
# cuda) cuFFT may take other kernels for another number of frames in a
# batch, so within 1e-5 relative there.
REL=
test "${MELPIPE_GPUMEL_DEVICE:-cpu}" = cpu || REL="--rel 1e-5"
# same_frames A B IN: A and B, two outputs for IN, hold those frames
same_frames() {
	if test -z "$REL"; then
		$CMP same "$1" "$2"
	else
		$CMP close "$1" "$2" --input "$3" --values-only
	fi
}

# kaldi NAME IN N [options]: gpumel --preset kaldi with the options, and
# the reference given the very same options (Kaldi's names, =true/=false),
# expecting N feature records (- : any number).
kaldi() {
	name=$1 in=$2 n=$3
	shift 3
	x=
	test "$n" = - || x="--expect-features $n"
	gpumel -q $DEV --preset kaldi "$@" "$in" >"$name.out" &&
	$REF check "$in" "$name.out" $x "$@" >"$name.chk" ||
	{ cat "$name.chk"; return 1; }
	cat "$name.chk"
}

# Lengths around a 16 kHz frame (400) and shift (160), and at 8 kHz
# (200, 80), down to those Kaldi mirrors more than once.
test_expect_success 'make the streams' '
	$MK --n 24 --len 1:24000 \
		--lens 0,1,2,79,80,81,239,240,399,400,401,560,561 \
		--dtype s16 --rate 16000 --skip 20 --seed 41 >s16.rec &&
	$MK --n 12 --len 300:20000 --lens 400,401 --dtype f32 \
		--rate 16000 --seed 42 >f32.rec &&
	$MK --n 20 --len 1:12000 --lens 1,39,40,41,199,200,201,280 \
		--dtype mixed --rate 8000 --seed 43 >m8.rec
'

test_expect_success 'the preset: torchaudio.compliance.kaldi.fbank defaults' '
	kaldi def s16.rec 14 &&
	recdump def.out >dump &&
	test_grep "header feature=fbank" dump &&
	test_grep "header n_features=23" dump &&
	test_grep "header window=povey" dump &&
	test_grep "header n_fft=512" dump &&
	test_grep "header snip_edges=1" dump
'

test_expect_success 'the mel presets say feature=mel' '
	gpumel -q $DEV --n-fft 256 f32.rec >mel.out &&
	recdump mel.out >dump &&
	test_grep "header feature=mel" dump
'

test_expect_success '--no-snip-edges and --snip-edges=false: mirrored ends' '
	kaldi ns s16.rec 19 --snip-edges=false &&
	gpumel -q $DEV --preset kaldi --no-snip-edges s16.rec >ns2.out &&
	$CMP same ns.out ns2.out
'

test_expect_success 'every window, snip_edges both ways' '
	for w in povey hann hamming rect blackman hanning rectangular; do
		kaldi w.$w s16.rec - --window=$w &&
		kaldi wn.$w s16.rec - --window=$w --snip-edges=false ||
		return 1
	done
'

test_expect_success 'energy: raw and not, floored or not' '
	kaldi e1 s16.rec - --use-energy=true &&
	recdump e1.out >dump &&
	test_grep "header n_features=24" dump &&
	kaldi e2 s16.rec - --use-energy=true --raw-energy=false \
		--snip-edges=false &&
	kaldi e3 f32.rec - --use-energy=true --energy-floor=0 &&
	kaldi e4 m8.rec - --use-energy=true --energy-floor=1e6 \
		--num-mel-bins=40
'

test_expect_success 'no pre-emphasis, no DC removal, no power of two' '
	kaldi p0 s16.rec - --preemphasis=0 &&
	kaldi dc s16.rec - --remove-dc-offset=false --snip-edges=false &&
	kaldi r2 s16.rec - --round-to-power-of-two=false --use-energy=true &&
	gpumel -q $DEV --preset kaldi --no-remove-dc-offset \
		--no-round-to-power-of-two --snip-edges=false s16.rec >r3.out &&
	$REF check s16.rec r3.out --remove-dc-offset=false \
		--round-to-power-of-two=false --snip-edges=false
'

test_expect_success 'low and high frequencies, 80 bins, other frame sizes' '
	kaldi f1 s16.rec - --low-freq=64 --high-freq=-400 &&
	kaldi f2 s16.rec - --num-mel-bins=80 --high-freq=7600 &&
	kaldi f3 f32.rec - --frame-length-ms=32 --frame-shift-ms=12 \
		--window=hamming &&
	gpumel -q $DEV --preset kaldi --win-length 480 --hop 80 \
		f32.rec >f4.out &&
	$REF check f32.rec f4.out --frame-length-ms=30 \
		--frame-shift-ms=5 >/dev/null &&
	test_must_fail $REF check f32.rec f4.out >f4.chk &&
	test_grep "header win_length" f4.chk &&
	gpumel -q $DEV --preset kaldi --n-fft 1024 f32.rec >f5.out &&
	recdump f5.out >dump &&
	test_grep "header n_fft=1024" dump
'

test_expect_success 'f32 input is scaled by 32768' '
	kaldi f32 f32.rec 12 &&
	kaldi f32n f32.rec - --snip-edges=false --use-energy=true
'

test_expect_success '8 kHz, every input type, both framings' '
	kaldi k8 m8.rec - &&
	kaldi k8n m8.rec - --snip-edges=false --window=hann \
		--use-energy=true &&
	kaldi k8r m8.rec - --round-to-power-of-two=false --preemphasis=0.5 \
		--low-freq=0 --high-freq=3800 --num-mel-bins=15
'

test_expect_success 'the reference sees a wrong framing or scale' '
	test_must_fail $REF check s16.rec ns.out >bad.chk &&
	test_grep "FAIL: " bad.chk &&
	test_must_fail $REF check s16.rec def.out --preemphasis=0.9 \
		>bad.chk &&
	test_grep "FAIL: record" bad.chk &&
	test_must_fail $REF check f32.rec f32.out --tol 1e-9 >bad.chk &&
	test_grep "FAIL: record" bad.chk
'

test_expect_success 'f16 and bf16 output are the f32 output rounded' '
	gpumel -q $DEV --preset kaldi --use-energy=true --dtype f16 m8.rec \
		>k16.out &&
	gpumel -q $DEV --preset kaldi --use-energy=true --dtype bf16 m8.rec \
		>kb16.out &&
	gpumel -q $DEV --preset kaldi --use-energy=true m8.rec >k32.out &&
	$CMP cast k32.out k16.out &&
	$CMP cast k32.out kb16.out
'

test_expect_success 'dither: the documented noise, the same for any -j' '
	kaldi d1 s16.rec - --dither=1 --seed=7 --snip-edges=false &&
	kaldi d2 m8.rec - --dither=0.5 --seed=3 --use-energy=true &&
	for j in 1 2 3 8; do
		gpumel -q $DEV -j $j --preset kaldi --dither=1 --seed=7 \
			--snip-edges=false s16.rec >d1.$j.out &&
		$CMP same d1.out d1.$j.out || return 1
	done &&
	gpumel -q $DEV --preset kaldi --dither=1 --seed=8 \
		--snip-edges=false s16.rec >d1.s8.out &&
	test_must_fail $CMP same d1.out d1.s8.out >/dev/null &&
	gpumel -q $DEV --preset kaldi --snip-edges=false s16.rec >d0.out &&
	test_must_fail $CMP same d0.out d1.out >/dev/null
'

test_expect_success 'dither: windows of segment give what copied ones give' '
	for seg in "--len 4000 --hop 1500" "--len 400 --hop 160"; do
		segment -q $seg s16.rec >win.rec &&
		segment -q --copy $seg s16.rec >cop.rec &&
		for o in "" "--snip-edges=false --use-energy=true"; do
			gpumel -q $DEV --preset kaldi --dither=2 $o win.rec \
				>w.out &&
			gpumel -q $DEV --preset kaldi --dither=2 $o cop.rec \
				>c.out &&
			same_frames w.out c.out cop.rec &&
			$REF check cop.rec c.out --dither=2 $o >/dev/null ||
			return 1
		done
	done
'

# pieces N... [options]: the output for the streams in pieces of each
# size, its features pieces joined, is the output for the whole streams,
# bit for bit (every frame computed by the same code from the same
# samples and the same noise), also with a piece framed a few frames at
# a time.
pieces() {
	sizes=$1
	shift
	for in in s16 m8; do
		gpumel -q $DEV --preset kaldi "$@" $in.rec >w.$in.out &&
		files= &&
		for n in $sizes; do
			rec-copy --pieces $n <$in.rec >$in.p$n.rec &&
			gpumel -q $DEV --preset kaldi "$@" $in.p$n.rec \
				>p.$in.$n.out &&
			MELPIPE_GPUMEL_FRAMES=3 gpumel -q $DEV --preset kaldi \
				"$@" $in.p$n.rec >p3.$in.$n.out &&
			files="$files p.$in.$n.out p3.$in.$n.out" || return 1
		done &&
		$PC join w.$in.out $files $REL >join.out ||
		{ cat join.out; return 1; }
	done
}

test_expect_success 'items in pieces: the same frames, snip_edges' '
	pieces "1 7 80 159 160 161 399 400 1000" --dither=1 --seed=5
'

test_expect_success 'items in pieces: the same frames, mirrored ends' '
	pieces "1 7 80 159 160 161 399 400 1000" --snip-edges=false \
		--dither=1 --use-energy=true &&
	pieces "3 101" --snip-edges=false --frame-shift-ms=2
'

test_expect_success 'items in pieces against the reference' '
	rec-copy --pieces 333 <s16.rec | MELPIPE_GPUMEL_FRAMES=5 \
		gpumel -q $DEV --preset kaldi --snip-edges=false >pj.out &&
	$PC join ns.out pj.out $REL
'

test_expect_success 'without --device: the GPU where there is one, else the CPU, the same numbers' '
	gpumel --preset kaldi s16.rec >auto.out 2>auto.err &&
	! grep -q "runs on the CPU unless" auto.err &&
	gpumel --preset kaldi --device cpu s16.rec >cpu.out 2>/dev/null &&
	$PYTHON -c "
import sys
import numpy as np
from melpipe.stream import read_stream
a, b = (read_stream(open(f, \"rb\").read())[1] for f in sys.argv[1:])
assert len(a) == len(b) == 24, (len(a), len(b))
for x, y in zip(a, b):
    assert (x.type, x.clip, x.dim0, x.dim1) == (y.type, y.clip, y.dim0, y.dim1)
    if x.type != 3:
        assert x.data == y.data
        continue
    u, v = (np.frombuffer(r.data, np.float32) for r in (x, y))
    # natural log: the limit of the parity tests (0.0023) with a margin
    assert np.abs(u - v).max(initial=0) <= 1e-3, np.abs(u - v).max()" \
		auto.out cpu.out
'

test_expect_success 'options of the other feature are usage errors' '
	test_usage_error gpumel --dither 1 s16.rec &&
	test_grep "dither applies to --preset kaldi only" usage.err &&
	test_usage_error gpumel --snip-edges=false s16.rec &&
	test_usage_error gpumel --use-energy s16.rec &&
	test_usage_error gpumel --window povey s16.rec &&
	test_usage_error gpumel --preset kaldi --top-db 80 s16.rec &&
	test_grep "top-db does not apply to --preset kaldi" usage.err &&
	test_usage_error gpumel --preset kaldi --center s16.rec &&
	test_usage_error gpumel --preset kaldi --snip-edges=maybe s16.rec &&
	test_grep "expected true or false" usage.err &&
	test_usage_error gpumel --preset kaldi --window hanning2 s16.rec
'

test_expect_success 'parameters that do not suit the stream: exit 1' '
	test_expect_code 1 gpumel -q --preset kaldi --high-freq 9000 \
		s16.rec >x.out 2>err &&
	test_grep "high-freq" err &&
	test_expect_code 1 gpumel -q --preset kaldi --low-freq 8000 \
		s16.rec >x.out 2>err &&
	test_expect_code 1 gpumel -q --preset kaldi --no-snip-edges \
		--frame-shift-ms 30 s16.rec >x.out 2>err &&
	test_grep "longer than the frame" err &&
	test_expect_code 1 gpumel -q --preset kaldi --n-fft 256 \
		s16.rec >x.out 2>err &&
	test_grep "shorter than the frame" err
'

test_expect_success 'h5pack stores the feature and n_features' '
	h5pack -q -o e1.h5 <e1.out &&
	$PYTHON -c "
import sys, h5py, numpy as np
a = h5py.File(sys.argv[1], \"r\").attrs
assert a[\"feature\"] == \"fbank\", a[\"feature\"]
n = a[\"n_features\"]
assert n == 24 and n.dtype == np.dtype(\"<i8\"), (n, n.dtype)" e1.h5
'

# Kaldi's coefficient is a float; the header says what was given (0.97),
# not that float widened to double (0.97000002861022949), and h5pack's
# attribute is the same number.
test_expect_success 'the preemphasis as given: header and attribute' '
	recdump -n 1 e1.out >e1.head &&
	test_grep "^header preemphasis=0\.97$" e1.head &&
	gpumel -q --preset kaldi --preemphasis 0.1 s16.rec >p1.out &&
	recdump -n 1 p1.out >p1.head &&
	test_grep "^header preemphasis=0\.1$" p1.head &&
	h5pack -q -o p1.h5 <p1.out &&
	$PYTHON -c "
import sys, h5py
assert h5py.File(sys.argv[1], \"r\").attrs[\"preemphasis\"] == 0.97
assert h5py.File(sys.argv[2], \"r\").attrs[\"preemphasis\"] == 0.1
" e1.h5 p1.h5
'

test_expect_success '--help documents the preset and its options' '
	gpumel --help >help &&
	for o in preset=NAME frame-length-ms frame-shift-ms snip-edges \
		no-snip-edges dither seed preemphasis remove-dc-offset \
		povey round-to-power-of-two low-freq high-freq use-energy \
		energy-floor raw-energy num-mel-bins "programs: 1)"; do
		test_grep "$o" help >/dev/null || return 1
	done
'

test_done
