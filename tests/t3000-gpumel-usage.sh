#!/bin/sh
test_description='gpumel: options, usage errors, devices, bad streams'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
SMALL="--device cpu --n-fft 256 --n-mels 16"

test_expect_success 'make a small stream' '
	$MK --n 6 --len 300:2000 --rate 16000 --seed 1 >in.rec
'

test_expect_success '--help goes to stdout and exits 0' '
	gpumel --help >help.out 2>help.err &&
	test_grep "^Usage: gpumel" help.out &&
	test_grep "preset" help.out &&
	test_grep "top-db" help.out &&
	test ! -s help.err
'

test_expect_success '--version prints one line' '
	gpumel --version >v.out &&
	test $(wc -l <v.out) = 1 &&
	test_grep "^gpumel (melpipe) " v.out
'

# Each bad command line: exit 2, a message naming the option, the hint.
while read -r args; do
	test_expect_success "usage error: $args" "
		test_usage_error gpumel $args in.rec
	"
done <<'EOF'
--no-such-option
--n-fft 0
--n-fft abc
--n-fft 512x
--win-length 600 --n-fft 512
--win-length 0
--hop 0
--window blackman
--pad-mode edge
--n-mels 0
--fmin -1
--fmin 500 --fmax 400
--mel-scale mel
--norm l2
--power 3
--log log10
--amin 0
--top-db -1
--log ln --top-db 80
--dtype s16
--device gpu
--device cuda:x
--preset keras
--batch 0
-j 0
in.rec
EOF

test_expect_success 'the bad value is named in the message' '
	test_usage_error gpumel --window blackman in.rec &&
	test_grep "blackman" usage.err &&
	test_grep "hann, hamming or rect" usage.err
'

# Two names of one option with two values (names: NAME1 VAL1 NAME2 VAL2),
# in either order: exit 2, the message naming both as they were given.
test_expect_success 'two names of one option given two values: exit 2 naming both' '
	cat >names <<-\EOF &&
	n-mels 40 num-mel-bins 80
	num-mel-bins 80 n-mels 40
	mfcc 13 num-ceps 20
	fmin 10 low-freq 20.5
	fmax 7000 high-freq 6000.5
	high-freq -100 fmax 7900
	hop 100 hop-length 200
	preemphasis 0.97 preemphasis-coefficient 0.9
	EOF
	while read -r a va b vb; do
		test_single_usage_error gpumel --preset kaldi \
			--$a $va --$b $vb in.rec &&
		test_grep "^gpumel: --$a $va and --$b $vb are two names of one option: give one value$" \
			usage.err &&
		test_single_usage_error gpumel --$b $vb --n-fft 512 \
			--$a $va in.rec &&
		test_grep "^gpumel: --$b $vb and --$a $va are two names" \
			usage.err ||
		return 1
	done <names
'

# header_value FILE KEY: the value of KEY in the header of the stream FILE.
header_value() {
	recdump -n 1 "$1" | sed -n "s/^header $2=//p"
}

test_expect_success 'two names with one value, or one name twice: the last wins' '
	gpumel $SMALL --n-mels 20 --num-mel-bins 020 in.rec >a.rec &&
	test "$(header_value a.rec n_mels)" = 20 &&
	gpumel $SMALL --n-mels 40 --n-mels 24 in.rec >b.rec &&
	test "$(header_value b.rec n_mels)" = 24 &&
	gpumel $SMALL --n-mels 40 --num-mel-bins 24 --n-mels 24 in.rec \
		>c.rec &&
	test "$(header_value c.rec n_mels)" = 24 &&
	gpumel -q --device cpu --preset kaldi --preemphasis 0.5 \
		--preemphasis-coefficient 0.50 --low-freq 30 --fmin 30.0 \
		--hop 100 --hop-length 100 in.rec >d.rec &&
	test "$(header_value d.rec preemphasis)" = 0.5 &&
	test "$(header_value d.rec fmin)" = 30 &&
	test "$(header_value d.rec hop_length)" = 100 &&
	gpumel $SMALL --fmax 7000 --high-freq 7000.0 in.rec >e.rec &&
	test "$(header_value e.rec fmax)" = 7000
'

# --fmax and --high-freq are one option for every preset: a value above 0
# in Hz, else that far below the Nyquist frequency (Kaldi's reading).
test_expect_success '--fmax and --high-freq: one option, for every preset' '
	gpumel $SMALL --high-freq 7000 in.rec >h.rec &&
	gpumel $SMALL --fmax 7000 in.rec >f.rec &&
	gpumel $SMALL --fmax -1000 in.rec >n.rec &&
	test "$(header_value h.rec fmax)" = 7000 &&
	test "$(header_value n.rec fmax)" = 7000 &&
	for x in h f n; do
		"$PYTHON" "$TEST_DIRECTORY/py/gpumel_rec.py" dump $x.rec \
			>$x.dump || return 1
	done &&
	test_cmp f.dump h.dump &&
	test_cmp f.dump n.dump &&
	gpumel -q --device cpu --preset kaldi --fmax 4000 in.rec >kf.rec &&
	gpumel -q --device cpu --preset kaldi --high-freq 4000 in.rec >kh.rec &&
	test "$(header_value kf.rec fmax)" = 4000 &&
	for x in kf kh; do
		"$PYTHON" "$TEST_DIRECTORY/py/gpumel_rec.py" dump $x.rec \
			>$x.dump || return 1
	done &&
	test_cmp kf.dump kh.dump &&
	gpumel -q --device cpu --preset kaldi in.rec >k0.rec &&
	"$PYTHON" "$TEST_DIRECTORY/py/gpumel_rec.py" dump k0.rec >k0.dump &&
	! test_cmp k0.dump kf.dump >/dev/null &&
	gpumel --help >help &&
	tr "\n" " " <help >help.line &&
	test_grep "--high-freq, its other name" help.line &&
	test_grep "^      --high-freq=HZ     highest frequency (--fmax)" help
'

test_expect_success '--preset kaldi: a frame given in ms and in samples must agree' '
	test_expect_code 1 gpumel -q --device cpu --preset kaldi \
		--frame-length-ms 30 --win-length 400 in.rec >out 2>err &&
	test_grep "^gpumel: --frame-length-ms 30 is 480 samples at the stream.s sample_rate 16000, not the 400 of --win-length: give one of them$" err &&
	test $(wc -l <err) = 1 &&
	test ! -s out &&
	test_expect_code 1 gpumel -q --device cpu --preset kaldi \
		--hop-length 200 --frame-shift-ms 10 in.rec >out 2>err &&
	test_grep "^gpumel: --frame-shift-ms 10 is 160 samples at the stream.s sample_rate 16000, not the 200 of --hop: give one of them$" err &&
	gpumel -q --device cpu --preset kaldi --frame-length-ms 30 \
		--win-length 480 --frame-shift-ms 12.5 --hop 200 in.rec \
		>a.rec &&
	test "$(header_value a.rec win_length)" = 480 &&
	test "$(header_value a.rec hop_length)" = 200
'

test_expect_success '--help: two names of one option take one value' '
	gpumel --help >help.out &&
	test_grep "^option given twice takes its last value; two names of one option given$" \
		help.out &&
	test_grep "^name --num-mel-bins, --mfcc and --num-ceps, --fmin and --low-freq, --fmax$" \
		help.out &&
	test_grep "^and --high-freq, --hop and --hop-length, --preemphasis and$" \
		help.out &&
	test_grep "given in samples as well, the two must give the" help.out
'

test_expect_success 'refuses to write records to a terminal' '
	script -qec "gpumel $SMALL in.rec" /dev/null >tty.out 2>&1
	test $? = 2 &&
	test_grep "terminal" tty.out
'

test_expect_success '--device cpu: no notice' '
	gpumel $SMALL in.rec >out.rec 2>err &&
	! grep "using the CPU" err
'

have_cuda_so() {
	test -f "$MELPIPE_BIN/gpumel-cuda.so" && test_have_prereq GPU
}

# Whether the NVIDIA driver's library loads here (dlopen, as gpumel does).
have_driver() {
	$PYTHON -c "import ctypes; ctypes.CDLL(\"libcuda.so.1\")" 2>/dev/null
}

# Without libcuda.so.1 the notice names the missing driver, not what the
# CUDA runtime makes of it ("driver version is insufficient").
test_expect_success '--device auto without a usable GPU: one-line notice' '
	if have_cuda_so; then
		echo "a GPU is usable here: nothing to check"
	else
		gpumel --device auto --n-fft 256 --n-mels 16 in.rec \
			>out.rec 2>err &&
		grep "using the CPU" err >notice &&
		test $(wc -l <notice) = 1 &&
		if have_driver; then
			test_grep "^gpumel: no usable GPU (.*); using the CPU backend$" notice
		else
			echo "gpumel: no NVIDIA driver found (libcuda.so.1); using the CPU" >expect &&
			test_cmp expect notice
		fi &&
		test $(wc -l <err) = 2 &&
		test_grep "^gpumel: done 6" err
	fi
'

test_expect_success '--device cuda without the NVIDIA driver names it' '
	if have_driver; then
		echo "the NVIDIA driver loads here: nothing to check"
	else
		test_expect_code 1 gpumel --device cuda in.rec >out 2>err &&
		echo "gpumel: no usable GPU for --device cuda: no NVIDIA driver found (libcuda.so.1)" >expect &&
		test_cmp expect err
	fi
'

test_expect_success 'auto is the default; -q silences the notice' '
	if have_cuda_so; then
		echo "a GPU is usable here: nothing to check"
	else
		gpumel --n-fft 256 --n-mels 16 in.rec >out.rec 2>err &&
		test_grep "using the CPU" err &&
		gpumel -q --n-fft 256 --n-mels 16 in.rec >out.rec 2>err &&
		test ! -s err
	fi
'

test_expect_success '--device cuda without a usable GPU fails with a reason' '
	if have_cuda_so; then
		echo "a GPU is usable here: nothing to check"
	else
		test_expect_code 1 gpumel --device cuda in.rec >out 2>err &&
		test_grep "^gpumel: no usable GPU for --device cuda: ." err &&
		test ! -s out &&
		test_expect_code 1 gpumel --device cuda:3 in.rec >out 2>err &&
		test_grep "cuda:3" err
	fi
'

test_expect_success '--fmax above the stream Nyquist frequency: exit 1' '
	test_expect_code 1 gpumel $SMALL --fmax 9000 in.rec >out 2>err &&
	test_grep "fmax 9000" err &&
	test_grep "8000" err &&
	gpumel $SMALL --fmax 8000 in.rec >out.rec
'

test_expect_success '--fmin above the default fmax: exit 1' '
	test_expect_code 1 gpumel $SMALL --fmin 8500 in.rec >out 2>err &&
	test_grep "fmin" err
'

test_expect_success 'a missing input file: exit 1, named' '
	test_expect_code 1 gpumel $SMALL nosuch.rec >out 2>err &&
	test_grep "nosuch.rec" err
'

test_expect_success 'not a record stream: exit 1' '
	printf "RIFF....WAVEfmt this is not a stream" >bad.rec &&
	test_expect_code 1 gpumel $SMALL bad.rec >out 2>err &&
	test_grep "^gpumel: " err
'

test_expect_success 'a features stream as input: exit 1 naming the kind' '
	gpumel $SMALL in.rec >feat.rec &&
	test_expect_code 1 gpumel $SMALL feat.rec >out 2>err &&
	test_grep "features" err
'

test_expect_success 'a truncated stream: exit 1 and an output without trailer' '
	size=$(wc -c <in.rec) &&
	head -c $((size - 100)) in.rec >trunc.rec &&
	test_expect_code 1 gpumel $SMALL trunc.rec >trunc.out 2>err &&
	test_grep "trunc" err &&
	test_must_fail "$PYTHON" "$TEST_DIRECTORY/py/gpumel_rec.py" dump \
		trunc.out
'

test_expect_success 'a closed output: exit 1 with a message, no crash' '
	$MK --n 400 --len 20000:20000 --seed 2 >big.rec &&
	{ gpumel $SMALL --hop 16 big.rec 2>pipe.err; echo $? >rc; } |
		head -c 1000 >/dev/null &&
	test "$(cat rc)" = 1 &&
	test_grep "^gpumel: " pipe.err
'

test_expect_success '-o FILE writes the stream there; - reads stdin' '
	gpumel $SMALL -o file.rec - <in.rec &&
	gpumel $SMALL <in.rec >stdout.rec &&
	"$PYTHON" "$TEST_DIRECTORY/py/gpumel_rec.py" dump file.rec >a &&
	"$PYTHON" "$TEST_DIRECTORY/py/gpumel_rec.py" dump stdout.rec >b &&
	test_cmp a b &&
	test $(wc -l <a) = 6
'

test_expect_success '-o to an unwritable place: exit 1, named' '
	test_expect_code 1 gpumel $SMALL -o nodir/x.rec in.rec 2>err &&
	test_grep "nodir/x.rec" err
'

test_expect_success '-v reports records, bytes, times and the backend' '
	gpumel -v $SMALL in.rec >out.rec 2>err &&
	test_grep "cpu: fftw3f" err &&
	test_grep "read 6 records" err &&
	test_grep "waiting for input" err &&
	test_grep "^gpumel: done 6 clips, skipped 0 (0 here, 0 from upstream)$" err
'

test_expect_success 'the closing line counts windows after segment' '
	segment --len 400 --hop 400 in.rec 2>s.err >win.rec &&
	n=$(sed -n "s/^segment: done: .* into \([0-9]*\) windows .*/\1/p" s.err) &&
	test "$n" -gt 6 &&
	gpumel $SMALL win.rec >/dev/null 2>err &&
	test_grep "^gpumel: done $n windows, skipped 0 (0 here, 0 from upstream)$" err &&
	segment --len 5000 --last pad in.rec 2>/dev/null >one.rec &&
	gpumel $SMALL one.rec >/dev/null 2>err &&
	test_grep "^gpumel: done 6 windows, skipped 0" err
'

test_expect_success 'the later of -q and -v wins' '
	test_q_v_later_wins "^gpumel: done 6 clips, skipped 0" gpumel $SMALL in.rec
'

test_expect_success 'a missing option argument is one usage error' '
	test_single_usage_error gpumel -o </dev/null &&
	test_single_usage_error gpumel --no-such-option </dev/null &&
	test_usage_error gpumel -j 1025 in.rec &&
	gpumel $SMALL -j 1024 in.rec >/dev/null
'

test_expect_success 'option errors name the program, not the path run' '
	test_expect_code 2 "$MELPIPE_BIN/gpumel" --no-such-option </dev/null \
		2>err &&
	test_grep "^gpumel: unrecognized option .--no-such-option.$" err &&
	test_expect_code 2 "$MELPIPE_BIN/gpumel" -o </dev/null 2>err &&
	test_grep "^gpumel: option requires an argument -- .o.$" err
'

test_expect_success 'an empty stream gives an empty features stream' '
	$MK --n 0 >empty.rec &&
	gpumel $SMALL empty.rec >empty.out 2>err &&
	"$PYTHON" "$TEST_DIRECTORY/py/gpumel_rec.py" dump empty.out >d &&
	test ! -s d &&
	test_grep "done 0 clips, skipped 0" err
'

test_done
