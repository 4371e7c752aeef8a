#!/bin/sh
test_description='wavcat: samples against a float64 reference (decode,
downmix, resample, pad/trim, s16/f32, clipping, short clips, silence)'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"
RR="$PYTHON $TEST_DIRECTORY/py/wavcat_readrec.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/wavcat_check.py samples"

test_expect_success 'formats at one rate (16 kHz)' '
	mkdir F &&
	$MK tone F/pcm16.wav --seed 1 &&
	$MK tone F/pcm16.flac --seed 2 &&
	$MK tone F/pcm16.aiff --seed 3 &&
	$MK tone F/pcm16.au --seed 4 &&
	$MK tone F/pcm16.caf --seed 5 &&
	$MK tone F/pcm16.w64 --seed 6 &&
	$MK tone F/pcm24.wav --subtype PCM_24 --seed 7 &&
	$MK tone F/pcm24.flac --subtype PCM_24 --seed 8 &&
	$MK tone F/pcm32.wav --subtype PCM_32 --seed 9 &&
	$MK tone F/u8.wav --subtype PCM_U8 --seed 10 &&
	$MK tone F/float.wav --subtype FLOAT --seed 11 &&
	$MK tone F/double.wav --subtype DOUBLE --seed 12 &&
	$MK tone F/ext.wav --format WAVEX --seed 13 &&
	$MK tone F/ulaw.wav --subtype ULAW --seed 14 &&
	$MK tone F/vorbis.ogg --subtype VORBIS --seed 15 &&
	$MK tone F/opus.opus --format OGG --subtype OPUS --seed 16 &&
	$MK tone F/layer3.mp3 --format MP3 --subtype MPEG_LAYER_III \
		--seed 17 &&
	test $(ls F | wc -l) = 17
'

test_expect_success 's16, not resampled: exactly the rounded reference' '
	wavcat F >f.rec 2>err &&
	test_grep "done 17 clips, skipped 0" err &&
	$CHECK f.rec F >check.out &&
	test $(wc -l <check.out) = 17
'

test_expect_success 'f32, not resampled: the reference within float32' '
	wavcat -q --dtype f32 F >f32.rec &&
	$CHECK f32.rec F >check.out &&
	test $(wc -l <check.out) = 17
'

# Files up to 4 MiB are read whole and decoded from memory; larger ones
# are read as decoding goes: both ways must give the reference.
test_expect_success 'a file over 4 MiB (read as it decodes) and a small one' '
	mkdir BIG &&
	$MK tone BIG/long.wav --frames 1200000 --channels 2 --seed 21 &&
	$MK tone BIG/long.flac --frames 1200000 --channels 2 --seed 22 &&
	$MK tone BIG/short.wav --frames 1000 --seed 23 &&
	test $(wc -c <BIG/long.wav) -gt 4194304 &&
	wavcat BIG >big.rec 2>err &&
	test_grep "done 3 clips, skipped 0" err &&
	$CHECK big.rec BIG >check.out &&
	test $(wc -l <check.out) = 3
'

test_expect_success '16-bit PCM copied bit for bit (s16 and f32)' '
	wavcat -q F/pcm16.wav >one.rec &&
	wavcat -q --dtype f32 F/pcm16.wav >one32.rec &&
	"$PYTHON" -c "
import sys, numpy as np, soundfile as sf
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
x, _ = sf.read(\"F/pcm16.wav\", dtype=\"int16\")
a = rr.load(\"one.rec\")[1][0].samples
b = rr.load(\"one32.rec\")[1][0].samples
assert a.dtype == np.int16 and np.array_equal(a, x)
assert b.dtype == np.float32 and np.array_equal(b, x / np.float32(32768))
"
'

test_expect_success 'channels are averaged (2, 3, 6 channels)' '
	mkdir M &&
	$MK tone M/st.wav --channels 2 --seed 21 &&
	$MK tone M/three.flac --channels 3 --seed 22 &&
	$MK tone M/six.wav --channels 6 --seed 23 &&
	$MK tone M/stf.wav --channels 2 --subtype FLOAT --seed 24 &&
	wavcat -q M >m.rec &&
	$CHECK m.rec M &&
	wavcat -q --dtype f32 M >m32.rec &&
	$CHECK m32.rec M
'

test_expect_success 'a stereo file of opposite channels mixes to silence' '
	"$PYTHON" -c "
import numpy as np, soundfile as sf
x = np.sin(np.arange(4000) * 0.01) * 0.5
sf.write(\"opp.wav\", np.stack([x, -x], axis=1), 16000, subtype=\"PCM_16\")
" &&
	wavcat -q opp.wav >opp.rec &&
	"$PYTHON" -c "
import sys, numpy as np
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
s = rr.load(\"opp.rec\")[1][0].samples
assert len(s) == 4000 and not s.any(), s
"
'

test_expect_success 'resampled to 4096 Hz from several rates: within 1e-3' '
	mkdir R &&
	$MK tone R/a16k.wav --rate 16000 --frames 16000 --noise 0 \
		--fmax 800 --seed 31 &&
	$MK tone R/b44k.wav --rate 44100 --frames 30000 --noise 0 \
		--fmax 800 --seed 32 --channels 2 &&
	$MK tone R/c8k.flac --rate 8000 --frames 8001 --noise 0 \
		--fmax 800 --seed 33 &&
	$MK tone R/d22k.wav --rate 22050 --frames 22050 --noise 0 \
		--fmax 800 --seed 34 --subtype FLOAT &&
	$MK tone R/e48k.wav --rate 48000 --frames 47999 --noise 0 \
		--fmax 800 --seed 35 &&
	$MK tone R/f4k.wav --rate 4096 --frames 4096 --noise 0 \
		--fmax 800 --seed 36 &&
	wavcat -q --rate 4096 --dtype f32 R >r.rec &&
	$CHECK r.rec R >check.out &&
	cat check.out &&
	test $(wc -l <check.out) = 6 &&
	wavcat -q --rate 4096 R >r16.rec &&
	$CHECK r16.rec R
'

test_expect_success 'resampled up to 16 kHz and 48 kHz: within 1e-3' '
	wavcat -q --rate 16000 --dtype f32 R >up.rec &&
	$CHECK up.rec R &&
	wavcat -q --rate 48000 --dtype f32 R >up48.rec &&
	$CHECK up48.rec R
'

test_expect_success 'resampled lengths are n * rate / file rate, rounded' '
	"$PYTHON" -c "
import sys
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
want = {b\"a16k.wav\": (16000, 16000), b\"b44k.wav\": (30000, 44100),
        b\"c8k.flac\": (8001, 8000), b\"d22k.wav\": (22050, 22050),
        b\"e48k.wav\": (47999, 48000), b\"f4k.wav\": (4096, 4096)}
for r in rr.load(\"r.rec\")[1]:
    n, rate = want[r.key]
    # round half up, by hand: n * 4096 / rate + 1/2, floored
    exp = (2 * n * 4096 + rate) // (2 * rate)
    assert r.dim0 == exp, (r.key, r.dim0, exp)
"
'

test_expect_success 'a clip at the output rate is not touched by --rate' '
	wavcat -q F/pcm16.wav >a.rec &&
	wavcat -q --rate 16000 F/pcm16.wav >b.rec &&
	$RR a.rec --raw-hash >ha &&
	$RR b.rec --raw-hash >hb &&
	test_cmp ha hb
'

test_expect_success '--duration and --samples pad with zeros or trim' '
	wavcat -q --samples 3000 R/a16k.wav R/f4k.wav --rate 4096 >p.rec &&
	$CHECK p.rec . &&
	wavcat -q --duration 0.25 --rate 4096 R >t.rec &&
	$CHECK t.rec R &&
	$RR t.rec --header >h &&
	test_grep "^duration=1024$" h &&
	wavcat -q --duration 3 --dtype f32 F >pad.rec &&
	$CHECK pad.rec F &&
	$RR pad.rec --header >h &&
	test_grep "^duration=48000$" h
'

test_expect_success 'without --duration, no duration in the header' '
	$RR r.rec --header >h &&
	! grep "^duration=" h &&
	test_grep "^sample_rate=4096$" h &&
	test_grep "^dtype=f32$" h &&
	test_grep "^kind=audio$" h &&
	test_grep "^clips=6$" h &&
	test_grep "^producer=wavcat " h &&
	test_grep "^stage=wavcat .*--rate 4096 --dtype f32 R$" h
'

test_expect_success 'clips shorter than the resampler delay keep their length' '
	mkdir S &&
	for n in 1 2 3 5 7 11 40; do
		$MK tone S/s16k_$n.wav --rate 16000 --frames $n --seed $n &&
		$MK tone S/s44k_$n.wav --rate 44100 --frames $n --seed $n &&
		$MK tone S/s8k_$n.wav --rate 8000 --frames $n --seed $n ||
		exit 1
	done &&
	for rate in 4096 16000 48000; do
		wavcat -q --rate $rate --dtype f32 S >s$rate.rec &&
		$CHECK s$rate.rec S >/dev/null || exit 1
	done &&
	"$PYTHON" -c "
import sys
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
for rate in (4096, 16000, 48000):
    recs = rr.load(\"s%d.rec\" % rate)[1]
    assert len(recs) == 21
    for r in recs:
        name = r.key.decode()
        fr = {\"s16k\": 16000, \"s44k\": 44100,
              \"s8k\": 8000}[name.split(\"_\")[0]]
        n = int(name.split(\"_\")[1][:-4])
        assert r.type == rr.T_AUDIO, (name, r.reason)
        assert r.dim0 == (2 * n * rate + fr) // (2 * fr), (name, rate, r.dim0)
"
'

test_expect_success 'a one-frame clip resampled up still carries its sample' '
	"$PYTHON" -c "
import sys, numpy as np, soundfile as sf
sf.write(\"one.wav\", np.array([0.5]), 8000, subtype=\"PCM_16\")
" &&
	wavcat -q --rate 48000 --dtype f32 one.wav >one.rec &&
	"$PYTHON" -c "
import sys, numpy as np
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
s = rr.load(\"one.rec\")[1][0].samples
assert len(s) == 6 and np.abs(s).max() > 0.05, s
"
'

test_expect_success 'silence stays exact zeros (and is kept)' '
	$MK silence Z.wav --frames 16000 &&
	wavcat -q Z.wav >z.rec &&
	wavcat -q --rate 4096 --dtype f32 Z.wav >z2.rec &&
	"$PYTHON" -c "
import sys
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
for f, n in ((\"z.rec\", 16000), (\"z2.rec\", 4096)):
    r = rr.load(f)[1][0]
    assert r.type == rr.T_AUDIO and r.dim0 == n and not r.samples.any()
"
'

test_expect_success 's16 clips out-of-range samples, counts them with -v' '
	$MK tone over.wav --subtype FLOAT --over 37 --seed 41 &&
	wavcat -v over.wav >o.rec 2>err &&
	test_grep "^wavcat: 37 samples clipped to 16 bits$" err &&
	wavcat -q --dtype f32 over.wav >o32.rec &&
	"$PYTHON" -c "
import sys, numpy as np, soundfile as sf
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
x, _ = sf.read(\"over.wav\", dtype=\"float64\")
a = rr.load(\"o.rec\")[1][0].samples
b = rr.load(\"o32.rec\")[1][0].samples
ref = np.clip(np.rint(x * 32768), -32768, 32767)
assert np.array_equal(a, ref) and (a == 32767).sum() >= 37
assert np.array_equal(b, x.astype(np.float32)) and (b == 1.5).sum() == 37
"
'

test_expect_success 'files at another rate without --rate stop the run' '
	mkdir X &&
	$MK tone X/a.wav --rate 16000 --seed 51 --noise 0 --fmax 1000 &&
	$MK tone X/b.wav --rate 8000 --seed 52 --noise 0 --fmax 1000 &&
	test_expect_code 1 wavcat X >x.rec 2>err &&
	test_grep "X/b.wav.: sample rate 8000 Hz differs from the 16000 Hz" err &&
	test_grep "16000 Hz of .X/a.wav.; give --rate to resample" err &&
	wavcat -q --rate 8000 X >x.rec &&
	$CHECK x.rec X
'

test_expect_success 'the stream rate comes from the first usable clip' '
	mkdir Y &&
	printf "garbage" >Y/0bad.wav &&
	$MK tone Y/a.wav --rate 8000 --seed 53 &&
	wavcat Y >y.rec 2>err &&
	test_grep "0bad.wav" err &&
	$RR y.rec --header >h &&
	test_grep "^sample_rate=8000$" h
'

test_expect_success 'the same bytes for -j 1, -j 3 and -j 8' '
	mkdir all && cp -R F R S M all/ &&
	printf "junk" >all/junk.wav &&
	wavcat -q -j 1 --rate 16000 all >j1.rec &&
	wavcat -q -j 3 --rate 16000 all >j3.rec &&
	wavcat -q --jobs=8 --rate 16000 all >j8.rec &&
	$RR j1.rec --same-as j3.rec &&
	$RR j1.rec --same-as j8.rec &&
	$RR j1.rec --records >r1 &&
	test $(wc -l <r1) = $(find all -type f | wc -l)
'

test_expect_success '--zstd: the same samples, compressed payloads' '
	wavcat -q --zstd 3 F >z.rec &&
	$CHECK z.rec F >/dev/null &&
	test $(wc -c <z.rec) -lt $(wc -c <f.rec) &&
	recdump -q z.rec
'

test_done
