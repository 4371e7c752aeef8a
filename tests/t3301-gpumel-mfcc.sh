#!/bin/sh
test_description='gpumel --mfcc: MFCCs of Kaldi fbank, librosa and
torchaudio bands against a float64 reference (and librosa.feature.mfcc),
threads, pieces, usage'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
REF="$PYTHON -W ignore $TEST_DIRECTORY/py/mfcc_ref.py"
GREF="$PYTHON -W ignore $TEST_DIRECTORY/py/gpumel_ref.py"
PC="$PYTHON -W ignore $TEST_DIRECTORY/py/gpumel_pieces.py"
CMP="$PYTHON $TEST_DIRECTORY/py/cuda_cmp.py"
DEV="--device ${MELPIPE_GPUMEL_DEVICE:-cpu}"
# librosa's own mfcc where librosa is installed (not on the GPU machine)
LIBROSA=
$PYTHON -c "import librosa" 2>/dev/null && LIBROSA=--librosa
# pieces against whole items: bit for bit on the CPU, within 1e-5
# relative on the GPU (other batches, other cuFFT kernels)
REL=
test "${MELPIPE_GPUMEL_DEVICE:-cpu}" = cpu || REL="--rel 1e-5"

# The mel bands' parameters, spelled out for the reference: the librosa
# preset with n_fft 512, hop 128, 40 mels; the torchaudio preset's own
# defaults with 64 mels at 16 kHz.
LIB="--n-fft 512 --win-length 512 --hop 128 --window hann --center 1
--pad-mode constant --n-mels 40 --fmin 0 --fmax nyquist --mel-scale slaney
--norm slaney --power 2 --log db --amin 1e-10 --bins rfft"
TORCH="--n-fft 400 --win-length 400 --hop 200 --window hann --center 1
--pad-mode reflect --n-mels 64 --fmin 0 --fmax 8000 --mel-scale htk
--norm none --power 2 --log db --amin 1e-10 --bins linspace"

# kaldi NAME IN N [gpumel options]: gpumel --preset kaldi --mfcc N, and
# the reference given the very same options.
kaldi() {
	name=$1 in=$2 n=$3
	shift 3
	gpumel -q $DEV --preset kaldi --mfcc $n "$@" "$in" >"$name.out" &&
	$REF kaldi "$in" "$name.out" --n-mfcc $n "$@" >"$name.chk" ||
	{ cat "$name.chk"; return 1; }
	cat "$name.chk"
}

test_expect_success 'make the streams' '
	$MK --n 24 --len 1:24000 \
		--lens 0,1,2,79,80,81,239,240,399,400,401,560,561 \
		--dtype s16 --rate 16000 --skip 20 --seed 61 >s16.rec &&
	$MK --n 12 --len 300:20000 --lens 400,401 --dtype f32 \
		--rate 16000 --seed 62 >f32.rec &&
	$MK --n 12 --len 600:20000 --dtype f32 --rate 16000 \
		--signal tone --seed 63 >tone.rec &&
	$MK --n 20 --len 1:12000 --lens 1,39,40,41,199,200,201,280 \
		--dtype mixed --rate 8000 --seed 64 >m8.rec
'

test_expect_success 'Kaldi: torchaudio.compliance.kaldi.mfcc defaults' '
	kaldi def s16.rec 13 &&
	recdump def.out >dump &&
	test_grep "header feature=mfcc" dump &&
	test_grep "header mfcc_bands=fbank" dump &&
	test_grep "header n_mfcc=13" dump &&
	test_grep "header n_features=13" dump &&
	test_grep "header n_mels=23" dump &&
	test_grep "header cepstral_lifter=22" dump &&
	gpumel -q $DEV --preset kaldi --num-ceps 13 s16.rec >ceps.out &&
	$CMP same def.out ceps.out
'

test_expect_success 'Kaldi: energy as c0, no lifter, 80 bins, 8 kHz, mirrored ends' '
	kaldi en s16.rec 13 --use-energy=true &&
	kaldi enr f32.rec 13 --use-energy=true --raw-energy=false \
		--energy-floor=0 &&
	kaldi nl f32.rec 20 --cepstral-lifter=0 --num-mel-bins=80 &&
	kaldi l8 m8.rec 23 --snip-edges=false --cepstral-lifter=13 &&
	kaldi w8 m8.rec 12 --window=hamming --low-freq=64 --high-freq=-300 \
		--num-mel-bins=40 &&
	kaldi di s16.rec 13 --dither=1 --seed=4 --snip-edges=false
'

test_expect_success 'the reference sees a wrong lifter, energy or count' '
	test_must_fail $REF kaldi s16.rec def.out --n-mfcc 13 \
		--cepstral-lifter=0 >x.chk &&
	test_grep "values off" x.chk &&
	test_must_fail $REF kaldi s16.rec en.out --n-mfcc 13 >x.chk &&
	test_grep "values off" x.chk &&
	test_must_fail $REF kaldi s16.rec def.out --n-mfcc 12 >x.chk &&
	test_grep "n_mfcc" x.chk
'

test_expect_success 'librosa: librosa.feature.mfcc, top_db clamped before the DCT' '
	gpumel -q $DEV --preset librosa --n-fft 512 --hop 128 --n-mels 40 \
		--mfcc 20 tone.rec >lt.out &&
	$REF mel tone.rec lt.out --n-mfcc 20 $LIB --top-db 80 --dtype f32 \
		$LIBROSA &&
	gpumel -q $DEV --preset librosa --n-fft 512 --hop 128 --n-mels 40 \
		--mfcc 20 f32.rec >lf.out &&
	$REF mel f32.rec lf.out --n-mfcc 20 $LIB --top-db 80 --dtype f32 \
		$LIBROSA &&
	recdump lt.out >dump &&
	test_grep "header mfcc_bands=mel" dump &&
	! grep -q cepstral_lifter dump &&
	test_must_fail $REF mel tone.rec lt.out --n-mfcc 20 $LIB \
		--top-db none --dtype f32 >x.chk &&
	test_grep "values off\|top_db" x.chk
'

test_expect_success 'torchaudio: MFCC clamps at 80 dB, its mel spectrogram does not' '
	gpumel -q $DEV --preset torchaudio --n-mels 64 --mfcc 40 tone.rec \
		>tt.out &&
	$REF mel tone.rec tt.out --n-mfcc 40 $TORCH --top-db 80 --dtype f32 &&
	recdump tt.out >dump &&
	test_grep "header top_db=80" dump &&
	gpumel -q $DEV --preset torchaudio --n-mels 64 tone.rec >tm.out &&
	recdump tm.out >dump &&
	test_grep "header top_db=none" dump &&
	gpumel -q $DEV --preset torchaudio --n-mels 64 --mfcc 40 \
		--top-db none tone.rec >tn.out &&
	$REF mel tone.rec tn.out --n-mfcc 40 $TORCH --top-db none --dtype f32
'

test_expect_success 'f16 and bf16 output are the f32 output rounded' '
	for t in f16 bf16; do
		gpumel -q $DEV --preset kaldi --mfcc 13 --use-energy \
			--dtype $t m8.rec >k.$t &&
		gpumel -q $DEV --preset librosa --n-fft 512 --hop 128 \
			--n-mels 40 --mfcc 20 --dtype $t tone.rec >l.$t || return 1
	done &&
	gpumel -q $DEV --preset kaldi --mfcc 13 --use-energy m8.rec >k.f32 &&
	$GREF cast k.f32 k.f16 && $GREF cast k.f32 k.bf16 &&
	$GREF cast lt.out l.f16 && $GREF cast lt.out l.bf16 &&
	$REF mel tone.rec l.f16 --n-mfcc 20 $LIB --top-db 80 --dtype f16
'

test_expect_success 'any -j and batch: the same bytes (records split between threads)' '
	o="--preset librosa --n-fft 512 --hop 128 --n-mels 40 --mfcc 20" &&
	gpumel -q $DEV $o -j 1 tone.rec >j1.out &&
	gpumel -q $DEV $o -j 3 --batch 2 tone.rec >j3.out &&
	gpumel -q $DEV $o -j 2 --batch 5 tone.rec >j2.out &&
	if test -z "$REL"; then
		$CMP same j1.out j3.out && $CMP same j1.out j2.out
	else
		$REF mel tone.rec j3.out --n-mfcc 20 $LIB --top-db 80 \
			--dtype f32 &&
		$REF mel tone.rec j2.out --n-mfcc 20 $LIB --top-db 80 \
			--dtype f32
	fi
'

test_expect_success 'Kaldi: items in pieces give the whole items frames' '
	rec-copy --pieces 333 <s16.rec >p.rec &&
	gpumel -q $DEV --preset kaldi --mfcc 13 --use-energy \
		--snip-edges=false s16.rec >w.out &&
	MELPIPE_GPUMEL_FRAMES=5 gpumel -q $DEV --preset kaldi --mfcc 13 \
		--use-energy --snip-edges=false p.rec >pk.out &&
	$PC join w.out pk.out $REL --min-pieced 5 &&
	MELPIPE_GPUMEL_FRAMES=5 gpumel -q $DEV --preset kaldi --mfcc 13 \
		p.rec >pk2.out &&
	$PC join def.out pk2.out $REL --min-pieced 5
'

test_expect_success 'top_db: a clip in pieces is skipped by name, --top-db none keeps it' '
	rec-copy --pieces 3000 <tone.rec >tp.rec &&
	o="--preset librosa --n-fft 512 --hop 128 --n-mels 40 --mfcc 20" &&
	MELPIPE_GPUMEL_FRAMES=5 gpumel $DEV $o tp.rec >tp.out 2>err &&
	test_grep "MFCC with --top-db needs the whole clip.s maximum" err &&
	test_grep "give --top-db none" err &&
	recdump tp.out >dump &&
	n_skip=$(grep -c "^[0-9]* skipped .*MFCC with --top-db" dump) &&
	n_feat=$(grep -c "^[0-9]* features " dump) &&
	test "$n_skip" -gt 0 && test "$n_feat" -gt 0 &&
	gpumel -q $DEV $o --top-db none tone.rec >tw.out &&
	MELPIPE_GPUMEL_FRAMES=5 gpumel -q $DEV $o --top-db none tp.rec \
		>tpn.out &&
	$PC join tw.out tpn.out $REL --min-pieced 5
'

test_expect_success 'h5pack stores the MFCC attributes, typed' '
	h5pack -q -o k.h5 en.out &&
	$PYTHON -c "
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], \"r\")
a = f.attrs
assert a[\"feature\"] == \"mfcc\", a[\"feature\"]
assert a[\"mfcc_bands\"] == \"fbank\"
assert a[\"n_mfcc\"] == 13 and a[\"n_mfcc\"].dtype.kind == \"i\"
assert a[\"n_features\"] == 13
assert a[\"cepstral_lifter\"] == 22.0 and a[\"cepstral_lifter\"].dtype.kind == \"f\"
" k.h5
'

test_expect_success 'usage errors' '
	test_usage_error gpumel --mfcc 0 s16.rec &&
	test_usage_error gpumel --preset kaldi --mfcc 24 s16.rec &&
	test_grep "more coefficients than the 23 mel bands" usage.err &&
	test_usage_error gpumel --n-mels 40 --mfcc 41 s16.rec &&
	test_usage_error gpumel --preset kaldi --cepstral-lifter 22 s16.rec &&
	test_grep "applies to MFCCs" usage.err &&
	test_usage_error gpumel --mfcc 13 --cepstral-lifter 22 s16.rec &&
	test_grep "applies to --preset kaldi only" usage.err
'

test_done
