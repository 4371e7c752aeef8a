#!/bin/sh
test_description='wavcat: clips longer than --piece-samples come in pieces
(format version 3): the pieces joined are the clip in one record, bit for
bit; clips cut short; no deadlock for any -j; memory bounded'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"
PC="$PYTHON $TEST_DIRECTORY/py/wavcat_pieces.py"

# Larger than every clip here: one record each.
WHOLE=1M

test_expect_success 'set up clips: WAV, FLAC, MP3, float stereo, short' '
	mkdir C &&
	$MK tone C/a.wav --frames 6007 --seed 1 &&
	$MK tone C/b.flac --frames 6001 --rate 22050 --channels 2 --seed 2 &&
	$MK tone C/c.mp3 --frames 9000 --rate 44100 --format MP3 \
		--subtype MPEG_LAYER_III --seed 3 &&
	$MK tone C/d.wav --frames 5000 --subtype FLOAT --channels 2 \
		--seed 4 &&
	$MK tone C/e.wav --frames 300 --seed 5
'

# The length of the only clip of a stream.
clip_len() {
	recdump "$1" | sed -n "s/^[0-9]* audio .* dims=\([0-9]*\)x1 .*/\1/p"
}

# For each clip and options: a stream in one record, and the same with
# pieces of 1, 7, 1000, 4096, the clip's length and one less. Beside the
# Python check, the pieces are the records rec-copy --pieces cuts the
# stream in one record into (the length unknown in an MP3's pieces but
# when padded or trimmed).
test_expect_success 'each clip in pieces of 1, 7, 1000, 4096, L, L - 1' '
	: >pairs &&
	k=0 &&
	for f in a.wav b.flac c.mp3 d.wav e.wav; do
		while read -r opts; do
			k=$((k + 1)) &&
			wavcat -q --piece-samples $WHOLE $opts C/$f \
				>w$k.rec &&
			len=$(clip_len w$k.rec) &&
			test -n "$len" &&
			case $f,$opts in
			*.mp3,*--samples*) unknown= ;;
			*.mp3,*) unknown=--unknown-length ;;
			*) unknown= ;;
			esac &&
			for n in 1 7 1000 4096 $len $((len - 1)); do
				wavcat -q --piece-samples $n $opts C/$f \
					>p$k.$n.rec &&
				recdump -q p$k.$n.rec &&
				rec-copy --pieces $n $unknown <w$k.rec \
					>q$k.$n.rec &&
				$PC records p$k.$n.rec q$k.$n.rec &&
				echo "w$k.rec p$k.$n.rec $n" >>pairs ||
				return 1
			done || return 1
		done <<-\EOF || return 1
		--dtype s16
		--rate 16000
		--rate 24000 --dtype f32
		--rate 8000 --samples 9001
		--rate 16000 --samples 3001
		--samples 2000 --dtype f32
		EOF
	done &&
	test $(wc -l <pairs) = 180 &&
	$PC same pairs >same.out &&
	# pieces indeed: a.wav (6007 samples) in pieces of 7
	test_grep "^p1.7.rec: 1 clips, 859 pieces$" same.out &&
	# MP3, length unknown before the end: clip_samples 0 but last
	recdump p13.1000.rec >mp3.out &&
	test_grep "^2 audio .* offset=0 clip_samples=0 .*piece=more key" mp3.out &&
	test_grep "piece=cont key=.C/c.mp3.$" mp3.out &&
	! grep "piece=more" mp3.out | grep -v " clip_samples=0 "
'

test_expect_success 'resampled: the length is known in every piece' '
	recdump p3.1000.rec >rs.out &&
	test_grep "^2 audio .*offset=0 clip_samples=9011 .*piece=more key" rs.out &&
	recdump p8.1000.rec >rs.out &&
	test_grep "^2 audio .*offset=0 clip_samples=4354 .*piece=more key" rs.out
'

test_expect_success 'a clip of exactly one piece is the same bytes' '
	wavcat -q --piece-samples 6007 C/a.wav >one.rec &&
	wavcat -q --piece-samples $WHOLE C/a.wav >w.rec &&
	$PC records one.rec w.rec &&
	wavcat -q C/a.wav >def.rec &&
	$PC records def.rec w.rec
'

test_expect_success 'many clips, -j 1, 2 and 5: the same stream, in order' '
	wavcat -q --rate 16000 --piece-samples $WHOLE C >all.w &&
	for n in 1 999; do
		for j in 1 2 5; do
			wavcat -q -j $j --rate 16000 --piece-samples $n C \
				>all.$n.$j || return 1
		done &&
		$PC records all.$n.1 all.$n.2 &&
		$PC records all.$n.1 all.$n.5 &&
		echo "all.w all.$n.1 $n" >>pairs.all || return 1
	done &&
	$PC same pairs.all
'

# A long clip before many short ones, and two long ones together: the
# decoders of later clips wait on the writer, which waits on the long
# clip's decoder; none may wait forever (timeout). Pieces of 1 make a
# piece handed on per sample.
test_expect_success 'long clips among many short ones: no deadlock, any -j' '
	mkdir -p M &&
	"$PYTHON" -c "
import numpy as np, soundfile as sf
rng = np.random.default_rng(6)
def clip(name, n):
    sf.write(\"M/\" + name, 0.3 * rng.standard_normal(n).clip(-3, 3) / 3,
             16000, subtype=\"PCM_16\")
clip(\"a0_long.wav\", 12000)
for i in range(40):
    clip(\"b%d.wav\" % i, 100)
clip(\"c_long.flac\", 9000)
clip(\"c_long2.wav\", 9000)
clip(\"d.wav\", 100)
" &&
	wavcat -q --piece-samples $WHOLE M >m.w &&
	: >pairs.m &&
	for n in 1 64 7000; do
		for j in 1 2 3 8 16; do
			timeout 120 wavcat -q -j $j --piece-samples $n M \
				>m.$n.$j || return 1
			$PC records m.$n.1 m.$n.$j || return 1
		done &&
		echo "m.w m.$n.1 $n" >>pairs.m || return 1
	done &&
	$PC same pairs.m >same.out &&
	test_grep "^m.1.1: 44 clips, 34100 pieces$" same.out
'

# The writer stops in the middle of a clip's pieces while its decoder
# waits to hand on the next, and others decode the clips after it.
test_expect_success 'the output fails in the middle of a clip: exit 1' '
	mkdir F &&
	$PC gen F/a.wav --seconds 300 --rate 16000 &&
	cp M/b1.wav M/b2.wav M/c_long.flac F/ &&
	test_expect_code 1 timeout 120 wavcat -j 3 --piece-samples 1000 F \
		>/dev/full 2>err &&
	test_grep "^wavcat: unable to write to standard output: No space left on device$" \
		err
'

test_expect_success 'the summary counts clips, samples and pieces' '
	wavcat -v --piece-samples 1000 C/a.wav C/e.wav >/dev/null 2>err &&
	test_grep "^wavcat: done 2 clips, skipped 0$" err &&
	test_grep "^wavcat: 10 records, " err &&
	test_grep "^wavcat: 6307 samples; 1 clip longer than 1000 samples in 7 pieces$" err &&
	test_grep "handing on pieces [0-9.]* s" err
'

test_expect_success '--piece-samples: sizes, its limits, --help' '
	wavcat -q --piece-samples 4K C/a.wav >k.rec &&
	recdump k.rec >k.out &&
	test_grep "^2 audio .*dims=4096x1 piece=more " k.out &&
	test_usage_error wavcat --piece-samples 0 C &&
	test_usage_error wavcat --piece-samples x C &&
	test_usage_error wavcat --piece-samples 129M C &&
	wavcat -q --piece-samples 128M C/e.wav >/dev/null &&
	test_usage_error wavcat --dtype f32 --piece-samples 65M C &&
	wavcat -q --dtype f32 --piece-samples 64M C/e.wav >/dev/null &&
	wavcat --help >help.out &&
	test_grep "^  --piece-samples=N " help.out &&
	test_grep "comes as several, its" help.out &&
	test_grep "cut short" help.out
'

# A float WAV with a NaN at frame 2500 of 5000 (decoding fails there),
# a FLAC cut in the middle (it ends early), a FLAC with a damaged frame.
test_expect_success 'set up files that fail in the middle' '
	mkdir -p X &&
	"$PYTHON" -c "
import numpy as np, soundfile as sf
x = 0.25 * np.sin(np.arange(5000) / 7.0)
sf.write(\"X/clean.wav\", x, 16000, subtype=\"FLOAT\")
x[2500] = np.nan
sf.write(\"X/nan.wav\", x, 16000, subtype=\"FLOAT\")
" &&
	$MK tone X/flac_ok.flac --frames 48000 --seed 7 &&
	head -c $(($(wc -c <X/flac_ok.flac) / 2)) X/flac_ok.flac \
		>X/flac_cut.flac &&
	$MK bad flac_crc X/flac_crc.flac
'

test_expect_success 'NaN after some pieces: cut short there, the rest kept' '
	wavcat --piece-samples 1000 X/nan.wav C/e.wav >n.rec 2>err &&
	recdump n.rec >n.out &&
	test_grep "^wavcat: .X/nan.wav.: decoding failed after 0.2 s (2500 samples kept): NaN or infinite sample at frame 2500$" err &&
	test_grep "^wavcat: done 1 clip whole and 1 cut short (kept up to the failure), skipped 0$" err &&
	test_grep "^2 audio clip=0 .*dims=300x1 key=.C/e.wav.$" n.out &&
	test_grep "^4 audio clip=1 .*offset=0 clip_samples=5000 .*dims=1000x1 piece=more key=.X/nan.wav.$" n.out &&
	test_grep "^6 audio clip=1 .*offset=2000 clip_samples=5000 .*dims=500x1 piece=more,cont key=.X/nan.wav.$" n.out &&
	test_grep "^7 skipped clip=1 clip_samples=2500 .*key=.X/nan.wav. reason=\"decoding failed after 0.2 s (2500 samples kept): NaN" n.out &&
	test_grep "trailer records=7 items=4 skipped=1" n.out &&
	wavcat -q --piece-samples $WHOLE X/clean.wav >clean.w &&
	$PC cut n.rec X/nan.wav 2500 --prefix-of clean.w
'

test_expect_success 'NaN on a piece boundary: no empty piece' '
	wavcat -q --piece-samples 500 X/nan.wav >nb.rec &&
	recdump nb.rec >nb.out &&
	test_grep "^6 audio .*offset=2000 .*dims=500x1 piece=more,cont" nb.out &&
	test_grep "^7 skipped .*clip_samples=2500" nb.out &&
	$PC cut nb.rec X/nan.wav 2500
'

test_expect_success 'NaN within the first piece: skipped whole, as before' '
	wavcat --piece-samples 5000 X/nan.wav X/clean.wav >nw.rec 2>err &&
	test_grep "^wavcat: .X/nan.wav.: NaN or infinite sample at frame 2500$" err &&
	test_grep "^wavcat: done 1 clip, skipped 1$" err &&
	recdump nw.rec >nw.out &&
	test_grep "^4 skipped clip=1 clip_samples=0 .*key=.X/nan.wav" nw.out &&
	wavcat -q --piece-samples 2600 X/nan.wav X/clean.wav >nw2.rec &&
	recdump nw2.rec >nw2.out &&
	test_grep "^5 skipped clip=1 clip_samples=0 .*key=.X/nan.wav" nw2.out
'

test_expect_success 'cut short, resampled and padded: announced, then kept' '
	wavcat -q --rate 8000 --samples 4000 --piece-samples 300 \
		X/nan.wav >r.rec &&
	recdump r.rec >r.out &&
	test_grep "^2 audio .*offset=0 clip_samples=4000 .*piece=more key" r.out &&
	$PC cut r.rec X/nan.wav any >reason &&
	test_grep "^decoding failed after 0\.1 s ([0-9]* samples kept): NaN or infinite sample at frame 2500$" reason &&
	wavcat -q --rate 8000 --samples 4000 --piece-samples $WHOLE \
		X/clean.wav >rclean.w &&
	$PC cut r.rec X/nan.wav any --prefix-of rclean.w
'

test_expect_success 'a FLAC cut in the middle: kept up to where it ends' '
	wavcat --piece-samples 4096 X/flac_cut.flac >f.rec 2>err &&
	test_grep "^wavcat: .X/flac_cut.flac.: decoding failed after [0-9.]* s ([0-9]* samples kept): decoded [0-9]* of the 48000 frames its header gives" err &&
	recdump -q f.rec &&
	wavcat -q X/flac_ok.flac >fok.w &&
	$PC cut f.rec X/flac_cut.flac any --prefix-of fok.w >reason &&
	kept=$(sed "s/.*(\([0-9]*\) samples kept).*/\1/" reason) &&
	got=$(sed "s/.*decoded \([0-9]*\) of the.*/\1/" reason) &&
	test "$kept" = "$got" &&
	test "$kept" -gt 4096
'

# A WAV whose data chunk runs past the end of the file ends early as a
# FLAC cut in the middle does: libsndfile reads the frames there are, the
# data chunk size says how many there should have been. Either is kept
# up to where it ends whatever the piece size: the same samples and the
# same skipped record in pieces of 4096 as in one piece.
test_expect_success 'a WAV and a FLAC truncated alike: cut short for any piece size' '
	mkdir T &&
	for e in wav flac; do
		$MK tone T/ok.$e --frames 48000 --seed 8 &&
		head -c $(($(wc -c <T/ok.$e) / 2)) T/ok.$e >T/cut.$e || exit 1
	done &&
	frames=$($PYTHON -c "import soundfile as sf; print(sf.info(\"T/cut.wav\").frames)") &&
	test "$frames" -gt 4096 && test "$frames" -lt 48000 &&
	wavcat --piece-samples 4096 T/cut.wav T/cut.flac >t.rec 2>err &&
	test_grep "^wavcat: .T/cut.wav.: decoding failed after [0-9.]* s ($frames samples kept): decoded $frames of the 48000 frames its header gives (truncated: the data chunk claims 96000 bytes, the file holds [0-9]*)$" err &&
	test_grep "^wavcat: .T/cut.flac.: decoding failed after [0-9.]* s ([0-9]* samples kept): decoded [0-9]* of the 48000 frames its header gives (truncated or damaged)$" err &&
	test_grep "^wavcat: done 0 clips whole and 2 cut short (kept up to the failure), skipped 0$" err &&
	recdump -q t.rec &&
	wavcat -q T/ok.wav >wok.w &&
	$PC cut t.rec T/cut.wav $frames --prefix-of wok.w &&
	wavcat -q T/ok.flac >fok.w &&
	$PC cut t.rec T/cut.flac any --prefix-of fok.w &&
	wavcat -v T/cut.wav T/cut.flac T/ok.wav >t1.rec 2>err &&
	test_grep "^wavcat: sample rate [0-9]* Hz, from .T/cut.flac.$" err &&
	test_grep "^wavcat: .T/cut.wav.: decoding failed after [0-9.]* s ($frames samples kept): decoded $frames of the 48000 frames its header gives (truncated: " err &&
	test_grep "^wavcat: .T/cut.flac.: decoding failed after [0-9.]* s ([0-9]* samples kept): decoded [0-9]* of the 48000 frames" err &&
	test_grep "^wavcat: done 1 clip whole and 2 cut short (kept up to the failure), skipped 0$" err &&
	test_grep "^wavcat: [0-9]* samples; 0 clips longer than [0-9]* samples in 0 pieces$" err &&
	recdump t1.rec >t1.out &&
	test_grep "^[0-9]* audio clip=1 segment=0 offset=0 clip_samples=48000 .*dims=${frames}x1 piece=more key=.T/cut.wav.$" t1.out &&
	test_grep "^[0-9]* skipped clip=1 clip_samples=$frames .*key=.T/cut.wav." t1.out &&
	$PC scan t.rec | cut -d" " -f1-3,5 >scan.pieces &&
	$PC scan t1.rec | cut -d" " -f1-3,5 | head -n 2 >scan.whole &&
	test_cmp scan.pieces scan.whole &&
	recdump t.rec | sed -n "s/^[0-9]* skipped //p" >skipped.pieces &&
	recdump t1.rec | sed -n "s/^[0-9]* skipped //p" >skipped.whole &&
	test $(wc -l <skipped.whole) = 2 &&
	test_cmp skipped.pieces skipped.whole
'

# Resampled to 8 kHz, nan.wav gives fewer samples than a piece before
# its NaN: skipped whole.
test_expect_success 'a FLAC with a damaged frame, resampled, -j 3' '
	wavcat -j 3 --rate 8000 --piece-samples 1000 X >x.rec 2>err &&
	recdump -q x.rec &&
	$PC cut x.rec flac_crc.flac any >reason &&
	test_grep "samples kept): decoded [0-9]* of the 48000 frames" reason &&
	$PC cut x.rec flac_cut.flac any >/dev/null &&
	test_grep "^wavcat: .X/nan.wav.: NaN or infinite sample at frame 2500$" err &&
	test_grep "^wavcat: done 2 clips whole and 2 cut short (kept up to the failure), skipped 1$" err
'

test_expect_success '--strict stops at a clip cut short' '
	test_expect_code 1 wavcat --strict --piece-samples 1000 X/nan.wav \
		>s.rec 2>err &&
	test_grep "^wavcat: .X/nan.wav.: decoding failed after 0.2 s" err &&
	test_must_fail recdump -q s.rec 2>/dev/null
'

# A clip cut short gives samples at its rate: it may set the rate, the
# same with pad and trim; one that fails in its first piece does not.
test_expect_success 'the rate from a long clip, or one cut short' '
	mkdir R &&
	cp X/nan.wav R/a_nan.wav &&
	cp C/a.wav R/b.wav &&
	wavcat -v --piece-samples 100 R >rp.rec 2>err &&
	test $(grep -c "a_nan.wav.: " err) = 1 &&
	test_grep "sample rate 16000 Hz, from .R/a_nan.wav." err &&
	$PC cut rp.rec a_nan.wav 2500 &&
	wavcat -v --samples 3000 --piece-samples 100 R >rt.rec 2>err &&
	test_grep "sample rate 16000 Hz, from .R/a_nan.wav." err &&
	$PC cut rt.rec a_nan.wav 2500 &&
	wavcat -v --samples 2000 --piece-samples 100 R >rt.rec 2>err &&
	test_grep "sample rate 16000 Hz, from .R/a_nan.wav." err &&
	$PC cut rt.rec a_nan.wav 2000 &&
	wavcat -v --duration 0.25 --piece-samples 100 R >rd.rec 2>err &&
	test_grep "sample rate 16000 Hz, from .R/a_nan.wav." err &&
	$PC cut rd.rec a_nan.wav 2500 &&
	wavcat -v --piece-samples 3000 R >rq.rec 2>err &&
	test $(grep -c "a_nan.wav.: " err) = 1 &&
	test_grep "sample rate 16000 Hz, from .R/b.wav." err &&
	test_expect_code 1 wavcat --piece-samples 3000 R/a_nan.wav \
		>/dev/null 2>err &&
	test_grep "no usable input" err &&
	wavcat -v --piece-samples 100 C/b.flac >rb.rec 2>err &&
	test_grep "sample rate 22050 Hz, from .C/b.flac." err &&
	test_grep "1 clip longer than 100 samples in 61 pieces" err
'

# Minutes of audio in pieces of 64K samples: the peak memory grows by a
# few pieces (of 256 KiB, f32; two buffers of the clip's slot, what the
# writer holds), at most 48 of them, not by the clip (220 pieces, 55 MiB)
# as when a clip was one record; the same run on a short clip gives the
# base. Not a timing test.
test_expect_success NOSAN 'a clip of minutes: every sample, memory flat' '
	$PC gen long.wav --seconds 300 --rate 48000 &&
	rss() {
		/usr/bin/time -f %M -o rss.one "$@" >/dev/null 2>&1 &&
		cat rss.one
	} &&
	small=$(rss wavcat -j 2 --dtype f32 --piece-samples 64K C/e.wav) &&
	big=$(rss wavcat -j 2 --dtype f32 --piece-samples 64K long.wav) &&
	echo "peak RSS: short clip $small KiB, long clip $big KiB" &&
	test $((big - small)) -lt $((48 * 256)) &&
	wavcat -j 2 --piece-samples 64K long.wav 2>err | $PC scan - \
		--gen-s16 20000 >scan.out &&
	test_grep "^0 long.wav 14400000 220 " scan.out
'

test_done
