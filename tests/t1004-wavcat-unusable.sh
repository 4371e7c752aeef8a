#!/bin/sh
test_description='wavcat: unusable inputs are reported, recorded as skipped
records and counted; the run goes on; --strict stops'
. "$(dirname "$0")/test-lib.sh"

# libsndfile 1.2 leaks the vorbis_info of an Ogg file it fails to open
# (the error path of its Ogg Vorbis reader): not wavcat's to free.
printf "leak:vorbis_info_init\n" >"$TRASH_DIRECTORY/lsan.supp"
LSAN_OPTIONS="suppressions=$TRASH_DIRECTORY/lsan.supp:print_suppressions=0\
${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"
RR="$PYTHON $TEST_DIRECTORY/py/wavcat_readrec.py"

# kind, file name, the reason expected (an extended regular expression,
# for grep -E and Python's re). A file that ends before the frames its
# header gives is cut short: kept up to there, however short.
cut='decoding failed after [0-9.]+ s \([0-9]+ samples kept\): '
cat >kinds <<EOF
empty e0.wav empty file \(0 bytes\)
garbage e1.wav unable to decode: format not recognised
wav_data_too_big e2.wav ${cut}decoded 1600 of the 6600 frames its header gives \(truncated: the data chunk claims 13200 bytes, the file holds 3200\)
wav_data_zero e3.wav data chunk size is 0
wav_odd_length e4.wav data length 3201 is not a whole number of 2-byte frames
wav_truncated e5.wav ${cut}decoded 1478 of the 3200 frames its header gives \(truncated: the data chunk claims 6400 bytes, the file holds 2956\)
wav_nan e6.wav NaN or infinite sample at frame 400
wav_inf e7.wav NaN or infinite sample at frame 400
wav_channels0 e8.wav no channels \(0\)
wav_channels300 e9.wav absurd channel count 300 \(over 256\)
wav_rate0 f0.wav absurd sample rate 0 Hz
wav_rate_huge f1.wav absurd sample rate 1000000 Hz
flac_crc f2.flac ${cut}decoded [0-9]+ of the 48000 frames its header gives
flac_truncated f3.flac ${cut}decoded [0-9]+ of the 48000 frames its header gives
flac_unknown_length f4.flac unknown length \(libsndfile reports SF_COUNT_MAX
ogg_truncated f5.ogg unknown length
ogg_garbage_tail f6.ogg (unknown length|unable to decode: .*malformed)
EOF

test_expect_success 'make one file of each unusable kind among good ones' '
	mkdir -p U/w &&
	while read -r kind name reason; do
		$MK bad $kind U/w/$name || exit 1
	done <kinds &&
	$MK tone U/w/a_good.wav --seed 1 &&
	$MK tone U/w/f4z_good.flac --seed 2 &&
	$MK tone U/w/zz_good.wav --seed 3 &&
	test $(ls U/w | wc -l) = 20
'

test_expect_success 'every unusable input: warned, skipped, run goes on' '
	wavcat U >u.rec 2>err &&
	cat err &&
	while read -r kind name reason; do
		grep -q -E "^wavcat: .U/w/$name.: $reason" err ||
		{ echo "no message for $kind"; exit 1; }
	done <kinds &&
	test_grep "^wavcat: done 3 clips whole and 4 cut short (kept up to the failure), skipped 13$" err &&
	test $(wc -l <err) = 18
'

test_expect_success 'the stream: a record for every input, reasons carried' '
	recdump -q u.rec &&
	"$PYTHON" -c "
import re, sys
import soundfile as sf
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
h, recs, tr = rr.load(\"u.rec\")
assert rr.header_values(h, \"clips\") == [\"20\"]
clips = {}
for r in recs:
    clips.setdefault(r.clip, []).append(r)
assert sorted(clips) == list(range(20))
assert tr[\"n_skipped\"] == 17 and tr[\"n_items\"] == 7
want = {}
for line in open(\"kinds\"):
    kind, name, reason = line.rstrip(\"\\n\").split(\" \", 2)
    want[\"w/\" + name] = reason
for c, rs in clips.items():
    k = rs[0].key.decode()
    if k.endswith(\"_good.wav\") or k.endswith(\"_good.flac\"):
        assert len(rs) == 1, k
        assert rs[0].type == rr.T_AUDIO and rs[0].dim0 == 16000, k
        continue
    *kept, r = rs
    assert r.type == rr.T_SKIPPED, k
    assert re.match(want[k], r.reason), (k, r.reason)
    assert r.dtype == 0 and r.dim0 == 0 and r.label == 0, k
    if not r.reason.startswith(\"decoding failed after\"):
        assert not kept and r.clip_samples == 0, k
        continue
    # cut short: one piece of the frames decoded, then the skipped
    # record; from a WAV, the frames the file holds (as libsndfile
    # reads them)
    n = int(r.reason.split(\"): decoded \")[1].split()[0])
    assert len(kept) == 1 and kept[0].flags == rr.rs.F_MORE, k
    assert kept[0].dim0 == r.clip_samples == r.offset == n > 0, k
    assert \"(%d samples kept)\" % n in r.reason, k
    if k.endswith(\".wav\"):
        x, rate = sf.read(\"U/\" + k, dtype=\"int16\")
        assert len(x) == n and (kept[0].samples == x).all(), k
print(\"ok\")
"
'

test_expect_success '-q: no messages, the same records' '
	wavcat -q U >q.rec 2>err &&
	test ! -s err &&
	$RR u.rec --same-as q.rec
'

test_expect_success '--strict: stops at the first, exit 1, no trailer' '
	test_expect_code 1 wavcat --strict -j 4 U >s.rec 2>err &&
	test_grep "^wavcat: .U/w/e0.wav.: empty file" err &&
	test $(wc -l <err) = 1 &&
	test_must_fail recdump -q s.rec 2>rd.err &&
	test_must_fail $RR s.rec --records 2>rr.err &&
	test_grep "empty input\|input ended before the trailer" rr.err &&
	"$PYTHON" -c "
import sys
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
data = open(\"s.rec\", \"rb\").read()
# what was written before the stop is whole records (none at all when
# the first clip stops it), never a record cut short
try:
    rr.read_stream(data)
except rr.BadStream as e:
    assert \"empty input\" in str(e) or \\
        \"input ended before the trailer\" in str(e), e
"
'

test_expect_success '--strict with good inputs only: a normal stream' '
	wavcat -q --strict U/w/a_good.wav U/w/zz_good.wav >ok.rec &&
	recdump -q ok.rec
'

test_expect_success 'with --rate the unusable inputs are the same' '
	wavcat -q --rate 8000 U >r.rec &&
	$RR r.rec --records >actual &&
	test $(grep -c skipped actual) = 17 &&
	test $(grep -c " audio " actual) = 7
'

test_expect_success 'a clip longer than a record holds comes in pieces' '
	"$PYTHON" -c "
import struct
n = (1 << 27) + 1          # one sample more than 256 MiB of s16 holds
with open(\"long.wav\", \"wb\") as f:
    fmt = struct.pack(\"<HHIIHH\", 1, 1, 16000, 32000, 2, 16)
    f.write(b\"RIFF\" + struct.pack(\"<I\", 36 + 2 * n) + b\"WAVE\" +
            b\"fmt \" + struct.pack(\"<I\", 16) + fmt +
            b\"data\" + struct.pack(\"<I\", 2 * n))
    f.truncate(44 + 2 * n)  # sparse: no disk used
" &&
	cp U/w/a_good.wav short.wav &&
	wavcat -v --rate 16000 long.wav short.wav 2>err |
		recdump >actual &&
	test_grep "done 2 clips, skipped 0" err &&
	! grep "too long" err &&
	test_grep "1 clip longer than 4194304 samples in 33 pieces" err &&
	# its source record, 32 pieces of 2^22 samples, a last one of 1,
	# then the source record of short.wav and that clip whole
	test $(grep -c "^[0-9]* audio clip=0 .*dims=4194304x1 piece=more" \
		actual) = 32 &&
	test_grep "^34 audio clip=0 .*offset=134217728 clip_samples=134217729 .*dims=1x1 piece=cont key=.long.wav" actual &&
	test_grep "^36 audio clip=1 .*dims=16000x1 key=.short.wav" actual
'

test_expect_success 'clips of silence and tiny clips are kept' '
	$MK silence Z/silent.wav --frames 16000 2>/dev/null ||
	{ mkdir Z && $MK silence Z/silent.wav --frames 16000; } &&
	"$PYTHON" -c "
import numpy as np, soundfile as sf
sf.write(\"Z/one.wav\", np.array([0.25]), 16000, subtype=\"PCM_16\")
" &&
	wavcat --rate 8000 Z >z.rec 2>err &&
	test_grep "done 2 clips, skipped 0" err
'

test_expect_success 'a WAV of 0 frames is not called unfinished' '
	mkdir -p W &&
	$MK bad wav_zero_frames W/zero.wav &&
	$MK bad wav_data_ffff W/ffff.wav &&
	$MK bad wav_data_zero W/unfinished.wav &&
	$MK tone W/ok.wav --seed 4 &&
	wavcat W >w.rec 2>err &&
	test_grep "^wavcat: .W/zero.wav.: no samples (0 frames)$" err &&
	test_grep "^wavcat: .W/ffff.wav.: data chunk size is 0xFFFFFFFF with 3200 bytes after it (a file never finished?)$" err &&
	test_grep "^wavcat: .W/unfinished.wav.: data chunk size is 0 with 3200 bytes after it (a file never finished?)$" err &&
	test_grep "done 1 clip, skipped 3" err
'

# 30 minutes at 48 kHz: more samples than the probe for the rate once
# took (64 Mi: a record of f32), fewer than a record of s16 holds.
test_expect_success 'set up a clip of 30 minutes at 48 kHz' '
	"$PYTHON" -c "
import numpy as np, soundfile as sf
x = np.zeros(30 * 60 * 48000, dtype=np.int16)
x[::48000] = 1000
sf.write(\"long48k.flac\", x, 48000, subtype=\"PCM_16\", format=\"FLAC\")
"
'

test_expect_success 'a long clip alone sets the rate' '
	wavcat -v long48k.flac >/dev/null 2>err &&
	test_grep "sample rate 48000 Hz, from .long48k.flac." err &&
	test_grep "done 1 clip, skipped 0" err &&
	wavcat -v --samples 100 long48k.flac >short.rec 2>err &&
	test_grep "sample rate 48000 Hz" err &&
	$RR short.rec --records >actual &&
	test_grep "^0 audio" actual
'

test_expect_success 'longer than a record of f32: in pieces, and sets the rate' '
	cp U/w/e1.wav a_junk.wav &&
	wavcat -v --dtype f32 a_junk.wav long48k.flac 2>err |
		recdump >actual &&
	test_grep "^wavcat: .a_junk.wav.: unable to decode" err &&
	test_grep "sample rate 48000 Hz, from .long48k.flac." err &&
	test_grep "done 1 clip, skipped 1" err &&
	! grep "too long" err &&
	# 86,400,000 samples: its source record, 20 pieces of 2^22 and a
	# last of 2,513,920
	test_grep "1 clip longer than 4194304 samples in 21 pieces" err &&
	test_grep "^23 audio clip=1 .*offset=83886080 clip_samples=86400000 .*dtype=f32 dims=2513920x1 piece=cont" actual
'

test_expect_success 'unusable inputs before the one that sets the rate: warned once' '
	cp U/w/a_good.wav b_good.wav &&
	wavcat a_junk.wav b_good.wav >o.rec 2>err &&
	test $(grep -c "a_junk.wav" err) = 1 &&
	test_grep "done 1 clip, skipped 1" err &&
	$RR o.rec --records >actual &&
	test_grep "^0 skipped" actual &&
	test_expect_code 1 wavcat --strict a_junk.wav b_good.wav >o.rec 2>err &&
	test $(wc -l <err) = 1 &&
	test_expect_code 1 wavcat --strict a_junk.wav >o.rec 2>err &&
	test_grep "^wavcat: .a_junk.wav.: unable to decode" err &&
	test_grep "^wavcat: no usable input: the only input is unusable$" err
'

test_done
