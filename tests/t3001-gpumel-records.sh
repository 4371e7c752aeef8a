#!/bin/sh
test_description='gpumel: records in, records out: metadata, skipped and
unusable records, the header'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
REF="$PYTHON -W ignore $TEST_DIRECTORY/py/gpumel_ref.py"
DUMP="$PYTHON $TEST_DIRECTORY/py/gpumel_rec.py dump"

# gpumel's options and the same parameters spelled out for the checker.
G="--device cpu --n-fft 512 --hop 128 --n-mels 40 --no-center"
P="--n-fft 512 --win-length 512 --hop 128 --window hann --center 0
   --pad-mode constant --n-mels 40 --fmin 0 --fmax nyquist
   --mel-scale slaney --norm slaney --power 2 --log db --amin 1e-10
   --top-db 80 --dtype f32"

test_expect_success 'make a stream with skipped, short and unusable records' '
	$MK --n 40 --len 1:6000 --lens 0,1,511,512,513,100 --skip 7,8,30 \
		--stereo 11 --other-rate 12 --nan 13 --dtype mixed \
		--seed 3 >in.rec
'

test_expect_success 'every record comes out in order with its metadata' '
	gpumel $G in.rec >out.rec 2>err &&
	$REF check in.rec out.rec $P --expect-skipped 3 >check.out &&
	cat check.out &&
	test_grep "^ok: " check.out
'

test_expect_success 'records with no frame become skipped records, warned' '
	test_grep "a/clip000.wav.: no samples, skipped" err &&
	test_grep "b/clip001.wav.: too short: 1 sample gives no frame" err &&
	test_grep "c/clip002.wav.: too short: 511 samples" err &&
	! grep "clip003.wav" err
'

test_expect_success 'unusable records become skipped records naming why' '
	test_grep "clip011.wav.: 2 channels" err &&
	test_grep "clip012.wav.: sample rate 32000 Hz differs" err &&
	test_grep "clip013.wav.: sample .* is not a finite number" err &&
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
from gpumel_rec import read_stream
_, items, t = read_stream(\"out.rec\")
why = {it.key.decode(): it.data.decode() for it in items
       if it.type == 4}
assert why[\"a/clip000.wav\"] == \"no samples\", why
assert \"2 channels\" in why[\"c/clip011.wav\"], why
assert why[\"c/clip008.wav\"] == \"cannot decode: test 8\", why
print(t)
"
'

test_expect_success 'the summary counts them' '
	n_short=$(grep -c "too short\|no samples" err) &&
	n_here=$((n_short + 3)) &&
	done=$((40 - 3 - n_here)) skipped=$((3 + n_here)) &&
	test_grep "done $done clips, skipped $skipped ($n_here here, 3 from" err
'

test_expect_success 'the checker is not fooled by a wrong header' '
	test_must_fail $REF check in.rec out.rec $P --hop 129 >bad.out &&
	test_grep "FAIL: header hop_length" bad.out
'

test_expect_success 'the numbers alone catch a wrong window or padding' '
	gpumel $G --window hamming in.rec >ham.rec &&
	test_must_fail $REF check in.rec ham.rec $P --ignore-header >bad.out &&
	test_grep "FAIL: record .*|out - ref|" bad.out &&
	$REF check in.rec ham.rec $P --window hamming --ignore-header &&
	gpumel $G --center --pad-mode reflect in.rec >refl.rec &&
	test_must_fail $REF check in.rec refl.rec $P --center 1 \
		--ignore-header >bad.out &&
	test_grep "FAIL: record .*|out - ref|" bad.out &&
	$REF check in.rec refl.rec $P --center 1 --pad-mode reflect
'

test_expect_success 'the header: kind, dtype, every parameter, a stage' '
	gpumel --device cpu --n-fft 400 --win-length 300 --hop 100 \
		--window hamming --pad-mode reflect --n-mels 20 --fmin 30 \
		--fmax 7000 --mel-scale htk --norm none --power 1 --log ln \
		--amin 1e-5 --dtype f16 in.rec >h.rec &&
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
from gpumel_rec import read_stream
pairs, _, _ = read_stream(\"h.rec\")
h = {}
for k, v in pairs:
    h.setdefault(k, v)
want = dict(kind=\"features\", dtype=\"f16\", n_fft=\"400\",
            win_length=\"300\", hop_length=\"100\", window=\"hamming\",
            center=\"1\", pad_mode=\"reflect\", n_mels=\"20\", fmin=\"30\",
            fmax=\"7000\", mel_scale=\"htk\", norm=\"none\", power=\"1\",
            log=\"ln\", amin=\"1.0000000000000001e-05\", top_db=\"none\",
            sample_rate=\"16000\", bin_freqs=\"rfft\", clips=\"40\")
for k, v in want.items():
    assert h.get(k) == v, (k, h.get(k), v)
st = [v for k, v in pairs if k == \"stage\"]
assert len(st) == 2 and st[0].startswith(\"gpumel_mkrec\"), st
assert st[1].startswith(\"gpumel \") and \"--window hamming\" in st[1], st
assert h[\"producer\"].startswith(\"gpumel \"), h[\"producer\"]
labels = [v for k, v in pairs if k == \"label\"]
assert labels == [\"a\", \"b\", \"c\"], labels
"
'

test_expect_success 'a record larger than a batch, between small ones' '
	$MK --n 5 --lens 3000,2200000,2000,2500000,100 --dtype f32 \
		--seed 4 >big.rec &&
	gpumel $G big.rec >big.out &&
	$REF check big.rec big.out $P --expect-features 4 >check.out &&
	cat check.out
'

# same A B: the data records of two feature streams are equal, field by
# field and byte by byte, as are their trailers' counts.
same() {
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
from gpumel_rec import read_stream, record_tuple
_, a, ta = read_stream(\"$1\")
_, b, tb = read_stream(\"$2\")
assert ta[:3] == tb[:3], (ta, tb)
assert len(a) == len(b), (len(a), len(b))
for x, y in zip(a, b):
    assert record_tuple(x) == record_tuple(y), (x.key, x.segment, y.segment)
print(len(a), \"records\")
"
}

test_expect_success 'described windows give what copied windows give' '
	for seg in "--len 1000 --hop 400" "--len 512 --last drop" \
		"--len 700 --hop 1000" "--len 3000 --hop 250"; do
		for opts in "$G" "$G --center --dtype f16" "$G --batch 3"; do
			segment -q $seg in.rec | gpumel $opts >w.rec 2>w.err &&
			segment -q --copy $seg in.rec |
				gpumel $opts >c.rec 2>c.err &&
			recdump -s w.rec >w.sum &&
			test_grep "^type features-windows [1-9]" w.sum &&
			rec-copy --expand <w.rec >wx.rec &&
			same wx.rec c.rec &&
			test_cmp c.err w.err || exit 1
		done
	done &&
	test_grep "clip013.wav.: sample .* is not a finite number" w.err &&
	test_grep "clip011.wav.: 2 channels" w.err
'

test_expect_success 'the output is the same read from a pipe' '
	cat in.rec | gpumel $G >pipe.rec &&
	$DUMP pipe.rec >a &&
	$DUMP out.rec >b &&
	test_cmp a b
'

test_done
