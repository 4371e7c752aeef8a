#!/bin/sh
test_description='h5pack: items in pieces joined into rows, bounded memory'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
PIECES="$PYTHON $TEST_DIRECTORY/py/h5pack_pieces.py"
SAME="$PYTHON $TEST_DIRECTORY/py/h5pack_same.py"
PTY="$PYTHON $TEST_DIRECTORY/py/h5pack_pty.py"
RSS="$PYTHON $TOP/scripts/bench-rss.py"
MEL="gpumel --device cpu --top-db 80 --n-mels 16 --n-fft 256 --hop 64"

test_expect_success 'set up streams: features (gpumel, f32 and f16) and audio' '
	$MK --kind audio --len 500:5000 --clips 20 --skip 3 --seed 3 >ar.rec &&
	$MK --kind audio --len 3000 --clips 12 --skip 5 --seed 4 >af.rec &&
	$MEL -q <ar.rec >g_ragged.rec &&
	$MEL -q <af.rec >g_fixed.rec &&
	$MK --dtype f16 --clips 25 --frames 1:150 --shape 24,1 --skip 2 \
		--seed 5 >h_ragged.rec &&
	$MK --dtype f16 --clips 25 --rows 1:3 --shape 24,90 --skip 2 \
		--seed 6 >h_fixed.rec &&
	$MK --kind audio --dtype s16 --channels 2 --len 100:3000 --clips 20 \
		--skip 7 --seed 7 >s_ragged.rec &&
	$MK --kind audio --dtype f32 --len 2000 --clips 15 --seed 8 \
		>f_fixed.rec &&
	$MK --kind audio --dtype s16 --len 700 --clips 15 --seed 9 \
		>s_fixed.rec
'

# Each stream, cut into pieces of N by rec-copy (each size with and
# without --unknown-length and --empty-last; the compressions in turn),
# gives the dataset of the stream itself. Features in pieces are
# gpumel's, clamped already: the floor h5pack gives them changes nothing.
test_expect_success 'a stream and its re-cuts into pieces give the same dataset' '
	i=0 && : >pairs &&
	for s in g_ragged g_fixed h_ragged h_fixed s_ragged f_fixed s_fixed; do
		for c in none gzip zstd; do
			h5pack -q -c $c --chunk-size 4K -o $s.$c.h5 $s.rec ||
			return 1
		done &&
		for n in 1 2 7 64 100 1000000; do
			for v in "" "--unknown-length --empty-last"; do
				c=$(echo none gzip zstd | cut -d" " -f$((i % 3 + 1))) &&
				i=$((i + 1)) &&
				rec-copy --pieces $n $v <$s.rec >p.rec &&
				h5pack -q -c $c --chunk-size 4K -o p$i.h5 p.rec &&
				echo $s.$c.h5 p$i.h5 >>pairs || return 1
			done
		done
	done &&
	$SAME $(cat pairs)
'

test_expect_success 'the re-cuts do come in pieces' '
	rec-copy --pieces 7 <g_ragged.rec >p.rec &&
	recdump p.rec >dump &&
	test_grep "piece=more,cont" dump &&
	rec-copy --pieces 64 <h_fixed.rec >p.rec &&
	recdump p.rec >dump &&
	test_grep "piece=more" dump
'

test_expect_success 'unclamped features in pieces get the top_db floor (float64 reference)' '
	for dt in f32 f16 bf16; do
		for layout in ragged fixed; do
			$PIECES make --dtype $dt --layout $layout --seed 11 \
				>u.rec &&
			h5pack -q -o u.h5 u.rec &&
			h5pack -q -c zstd -o uz.h5 u.rec &&
			$PIECES check u.rec u.h5 uz.h5 || return 1
		done
	done
'

# Items of many chunks: the frames already written are read back, raised
# and written again (compressed: decompressed and compressed once more).
test_expect_success 'the floor over items of many chunks, every compression' '
	for dt in f32 f16 bf16; do
		$PIECES make --dtype $dt --frames 1500 --clips 8 --seed 12 \
			>long.rec &&
		for c in none gzip zstd; do
			h5pack -q -c $c --chunk-size 4K -o long.$c.h5 \
				long.rec || return 1
		done &&
		$PIECES check long.rec long.none.h5 long.gzip.h5 \
			long.zstd.h5 || return 1
	done &&
	$PIECES make --dtype f16 --layout fixed --frames 700 --clips 12 \
		--seed 13 >lf.rec &&
	h5pack -q -c zstd --chunk-size 4K -o lf.h5 lf.rec &&
	$PIECES check lf.rec lf.h5
'

test_expect_success 'no floor without top_db, or in audio' '
	$PIECES make --dtype f32 --top-db none --seed 14 >n.rec &&
	h5pack -q -o n.h5 n.rec &&
	$PIECES check n.rec n.h5 &&
	for dt in s16 f32; do
		for layout in ragged fixed; do
			$PIECES make --kind audio --dtype $dt --layout $layout \
				--frames 2000 --seed 15 >a.rec &&
			h5pack -q --chunk-size 4K -o a.h5 a.rec &&
			$PIECES check a.rec a.h5 || return 1
		done
	done
'

test_expect_success 'cut short: the rows kept, a /skipped row, n_samples kept' '
	h5pack -q -o cut.h5 "$TEST_DIRECTORY/golden/good-pieces-cut-short.rec" &&
	$PIECES check "$TEST_DIRECTORY/golden/good-pieces-cut-short.rec" \
		cut.h5 &&
	$PYTHON -c "
import h5py
f = h5py.File(\"cut.h5\")
assert f[\"clips/n_samples\"][()].tolist() == [200, 80]
assert f[\"training/n_frames\"][()].tolist() == [200]
assert f[\"skipped/clip\"][()].tolist() == [0]
assert f[\"skipped/reason\"][0].startswith(b\"decoding failed after\")"
'

test_expect_success 'the golden streams in pieces' '
	for g in good-pieces-audio good-pieces-features good-pieces-zstd; do
		h5pack -q -o g.h5 "$TEST_DIRECTORY/golden/$g.rec" &&
		$PIECES check "$TEST_DIRECTORY/golden/$g.rec" g.h5 || return 1
	done
'

# Windows and segments of a long clip give clip_samples 0 until its
# length is known (formats/record.md, Records made from pieces).
test_expect_success '/clips n_samples: the largest clip_samples of a clip' '
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import rec_stream as rs
b = rs.Builder([(\"kind\", \"audio\"), (\"dtype\", \"s16\"),
                (\"sample_rate\", \"16000\"), (\"clips\", \"4\"),
                (\"segment_len\", \"4\"), (\"segment_hop\", \"4\")])
f = dict(dtype=1, dim1=1, sample_rate=16000)
A = rs.T_AUDIO
for s, cs in enumerate([0, 0, 12]):
    b.item(A, bytes(8), clip=0, key=b\"a\", segment=s, offset=4 * s,
           clip_samples=cs, dim0=4, **f)
b.item(rs.T_WINDOWS, bytes(16), clip=1, key=b\"w\", segment=0,
       clip_samples=0, dim0=8, win_len=4, win_hop=4, n_windows=2, **f)
b.item(rs.T_WINDOWS, bytes(8), clip=1, key=b\"w\", segment=2, offset=8,
       clip_samples=30, dim0=4, win_len=4, win_hop=4, n_windows=1, **f)
b.item(A, bytes(6), clip=2, key=b\"p\", clip_samples=0, dim0=3,
       piece=rs.F_MORE, **f)
b.item(A, bytes(2), clip=2, key=b\"p\", offset=3, clip_samples=40, dim0=1,
       piece=rs.F_CONT, **f)
b.item(A, bytes(4), clip=3, key=b\"c\", clip_samples=100, dim0=2,
       piece=rs.F_MORE, **f)
b.item(A, bytes(4), clip=3, key=b\"c\", offset=2, clip_samples=100,
       dim0=2, piece=rs.F_MORE | rs.F_CONT, **f)
b.item(rs.T_SKIPPED, b\"broke (4 samples kept)\", clip=3, key=b\"c\",
       offset=4, clip_samples=4, sample_rate=16000)
open(\"len.rec\", \"wb\").write(b.bytes())" &&
	h5pack -q -o len.h5 len.rec &&
	$PIECES check len.rec len.h5 &&
	$PYTHON -c "
import h5py
f = h5py.File(\"len.h5\")
assert f[\"clips/n_samples\"][()].tolist() == [12, 30, 40, 4]
assert f[\"all/features\"].shape == (8, 4)"
'

# mkfixed OUT SIZES...: a fixed-layout features stream (rows of 4x5):
# clip 0 a record of 5 frames, clip 1 an item in pieces of SIZES frames.
mkfixed() {
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import rec_stream as rs
sizes = [int(x) for x in sys.argv[2:]]
b = rs.Builder([(\"kind\", \"features\"), (\"dtype\", \"f32\"),
                (\"clips\", \"2\"), (\"segment_len\", \"800\"),
                (\"top_db\", \"80\")])
f = dict(dtype=2, dim0=4, sample_rate=16000, clip_samples=800)
b.item(rs.T_FEATURES, bytes(80), clip=0, key=b\"one.wav\", dim1=5, **f)
at = 0
for i, k in enumerate(sizes):
    flags = (rs.F_CONT if i else 0) | (rs.F_MORE if i < len(sizes) - 1
                                       else 0)
    b.item(rs.T_FEATURES, bytes(16 * k), clip=1, key=b\"long.wav\",
           dim1=k, offset=160 * at, piece=flags, **f)
    at += k
open(sys.argv[1], \"wb\").write(b.bytes())" "$@"
}

test_expect_success 'fixed layout: pieces that join to another length, refused' '
	mkfixed long.rec 3 3 &&
	test_expect_code 1 h5pack -o x.h5 long.rec 2>err &&
	test_grep "^h5pack: .long.wav.: shape 4x6 (its pieces so far) differs from 4x5 of the first record (.one.wav.)" err &&
	mkfixed short.rec 2 2 &&
	test_expect_code 1 h5pack -o x.h5 short.rec 2>err &&
	test_grep "^h5pack: .long.wav.: shape 4x4 (its pieces joined) differs from 4x5" err &&
	mkfixed ok.rec 1 3 1 &&
	h5pack -q -o ok.h5 ok.rec &&
	$PIECES check ok.rec ok.h5 &&
	test ! -e x.h5 &&
	test_no_temp
'

test_expect_success 'a stream that breaks inside an item: exit 1, no file' '
	rec-copy --pieces 7 <g_ragged.rec >p.rec &&
	rec-copy --limit 5 --no-trailer <p.rec >mid.rec &&
	recdump mid.rec 2>/dev/null | grep -q "piece=more" &&
	test_expect_code 1 h5pack -o x.h5 mid.rec 2>err &&
	test_grep "^h5pack: " err &&
	size=$(wc -c <p.rec) &&
	head -c $((size / 2)) p.rec >half.rec &&
	test_expect_code 1 h5pack -o x.h5 <half.rec 2>err &&
	test_grep "^h5pack: " err &&
	test ! -e x.h5 &&
	test_no_temp
'

test_expect_success 'progress on a terminal counts clips of a stream in pieces' '
	$MK --clips 3000 --frames 1:30 --shape 8,1 --seed 2 >pc.rec &&
	rec-copy --pieces 7 <pc.rec >pp.rec &&
	$PTY --stderr-pty --stdin pp.rec --pieces 20 --delay 0.1 -- \
		h5pack -o pp.h5 >pty.out &&
	tr "\r" "\n" <pty.out >lines &&
	test_grep "^h5pack: [0-9]*/3000 clips ([0-9]*%), [0-9]* rows" lines &&
	test_grep "h5pack: wrote .pp.h5.: .* from 3000 clips" lines
'

test_expect_success '--help says how items in pieces are stored' '
	h5pack --help >help &&
	test_grep "^An item that comes in pieces (record format 3) is one row" help &&
	test_grep "max - top_db" help &&
	test_grep "audio, features holds the samples, \[samples\] (mono)" help
'

# A features item of 2,000,000 frames (160 MB) in pieces of 1,000, most
# of its values below its floor: every chunk read back and rewritten.
# Peak memory is that of an item of 20,000 frames.
test_expect_success NOSAN 'a long features item in pieces: flat memory, the floor right' '
	for n in 20000 2000000; do
		rec-gen -t features -d f16 -l $n -n 1 |
		rec-copy --pieces 1000 --hop 160 |
		$PIECES set top_db=0.5 log=db |
		$RSS f$n.rss h5pack -q -o f$n.h5 - || return 1
	done &&
	small=$(cat f20000.rss) && big=$(cat f2000000.rss) &&
	echo "peak RSS: $small KiB at 20,000 frames, $big KiB at 2,000,000" &&
	test $big -le $((small + 4096)) &&
	rec-gen -t features -d f16 -l 2000000 -n 1 |
	$PIECES set top_db=0.5 log=db | h5pack -q -o one.h5 - &&
	$PIECES clamped one.h5 f2000000.h5
'

test_expect_success NOSAN 'a long audio item in pieces: flat memory, the same samples' '
	for n in 1000000 100000000; do
		rec-gen -t audio -l $n -n 1 | rec-copy --pieces 65536 |
		$RSS a$n.rss h5pack -q -o a$n.h5 - || return 1
	done &&
	small=$(cat a1000000.rss) && big=$(cat a100000000.rss) &&
	echo "peak RSS: $small KiB at 1M samples, $big KiB at 100M" &&
	test $big -le $((small + 4096)) &&
	rec-gen -t audio -l 100000000 -n 1 | h5pack -q -o one.h5 - &&
	$SAME one.h5 a100000000.h5
'

test_done
