#!/bin/sh
test_description='h5pack: the dataset layout, checked against the input'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/h5pack_check.py"
CHUNKS="$PYTHON $TEST_DIRECTORY/py/h5pack_chunks.py"

# count WHAT STREAM: records of the stream (Python's reading of it).
count() {
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import h5pack_mkrec as m
_, it, _ = m.read_stream(open(\"$2\", \"rb\").read())
w = \"$1\"
if w == \"skipped\": print(sum(i[\"type\"] == 4 for i in it))
elif w == \"clips\": print(len({i[\"clip\"] for i in it}))
else: print(sum(i[\"type\"] != 4 and i[\"split\"] == int(w) for i in it))"
}

test_expect_success 'every element type: values bit for bit, every table' '
	for dt in s16 f32 f16 bf16; do
		$MK --dtype $dt --clips 30 --rows 1:4 --skip 3,17 \
			--seed 7 >f_$dt.rec &&
		h5pack -q -o $dt.h5 f_$dt.rec &&
		$CHECK f_$dt.rec $dt.h5 || exit 1
	done
'

test_expect_success 'f16 is an IEEE half float, bf16 a 16-bit float too' '
	h5dump -H -d /training/features f16.h5 >f16.txt &&
	test_grep "16-bit little-endian floating-point" f16.txt &&
	$PYTHON -c "
import h5py, numpy as np
f = h5py.File(\"f16.h5\")
assert f[\"training/features\"].dtype == np.float16
t = h5py.File(\"bf16.h5\")[\"training/features\"].id.get_type()
assert t.get_size() == 2 and t.get_fields() == (15, 7, 8, 0, 7), t
assert t.get_ebias() == 127"
'

test_expect_success 'bf16 values outside f16 range survive (1e30, 1e-30)' '
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import h5pack_mkrec as m, numpy as np
v = np.array([[1e30], [-1e-30], [3.0e38], [0.0], [-0.0], [1.0]],
             dtype=np.float32)
it = dict(type=3, clip=0, key=b\"k\", dtype=4, dim0=6, dim1=1,
          data=m.bf16_bits(v).tobytes())
m.write_stream(open(\"big.rec\", \"wb\"), [(\"kind\", \"features\"),
               (\"dtype\", \"bf16\"), (\"clips\", 1)], [it])" &&
	h5pack -q -o big.h5 big.rec &&
	$CHECK big.rec big.h5
'

test_expect_success 'an audio stream: rows of samples [N, n_samples]' '
	$MK --kind audio --len 800 --clips 9 --skip 4 --seed 2 >a.rec &&
	h5pack -q -o a.h5 a.rec &&
	$CHECK a.rec a.h5 &&
	$PYTHON -c "
import h5py
f = h5py.File(\"a.h5\")
n = sum(f[g][\"features\"].shape[0] for g in (\"training\", \"validation\",
        \"testing\"))
assert n == 8 and f[\"testing/features\"].shape[1:] == (800,)"
'

test_expect_success 'described windows (segment): a row per window' '
	$MK --kind audio --len 100:3000 --clips 12 --skip 4 --seed 5 >v.rec &&
	segment -q --len 512 --hop 300 v.rec >w.rec &&
	segment -q --copy --len 512 --hop 300 v.rec >c.rec &&
	h5pack -q -o w.h5 w.rec &&
	$CHECK w.rec w.h5 &&
	h5pack -q -o c.h5 c.rec &&
	$PYTHON -c "
import h5py, numpy as np
a, b = h5py.File(\"w.h5\"), h5py.File(\"c.h5\")
def walk(f, out, p=\"\"):
    for k in f:
        if isinstance(f[k], h5py.Dataset): out[p + k] = f[k][()]
        else: walk(f[k], out, p + k + \"/\")
    return out
x, y = walk(a, {}), walk(b, {})
assert sorted(x) == sorted(y) and \"training/features\" in x, sorted(x)
for k in x:
    assert np.array_equal(x[k], y[k]), k
"
'

test_expect_success 'fixed-length streams: the fixed layout, said so' '
	$PYTHON -c "
import h5py
for name in (\"f16.h5\", \"a.h5\", \"w.h5\"):
    f = h5py.File(name)
    assert f.attrs[\"layout\"] == \"fixed\", name
    assert f.attrs[\"melpipe_hdf5_version\"] == 2, name
    assert f[\"training/features\"].attrs[\"layout\"] == \"fixed\", name
    assert \"start\" not in f[\"training\"], name"
'

test_expect_success 'clips of different lengths, every element type: ragged' '
	for dt in s16 f32 f16 bf16; do
		$MK --dtype $dt --clips 40 --frames 1:90 --shape 24,1 \
			--skip 3,17 --seed 8 >r_$dt.rec &&
		h5pack -q -o r_$dt.h5 r_$dt.rec &&
		$CHECK r_$dt.rec r_$dt.h5 || exit 1
	done
'

test_expect_success 'ragged: frame-major features, a row a contiguous slice' '
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import h5pack_mkrec as m, h5py, numpy as np
_, items, _ = m.read_stream(open(\"r_f32.rec\", \"rb\").read())
rows = [it for it in items if it[\"type\"] == 3 and it[\"split\"] == 1]
f = h5py.File(\"r_f32.h5\")
assert f.attrs[\"layout\"] == \"ragged\"
assert f.attrs[\"melpipe_hdf5_version\"] == 2
g = f[\"training\"]
assert g[\"features\"].attrs[\"layout\"] == \"ragged\"
assert g[\"features\"].shape == (sum(it[\"dim1\"] for it in rows), 24)
assert g[\"start\"].dtype == np.int64 and g[\"n_frames\"].dtype == np.int32
# formats/hdf5.md: reading a row
i = 2
start, n = g[\"start\"][i], g[\"n_frames\"][i]
x = g[\"features\"][start:start + n].T
assert x.shape == (24, rows[i][\"dim1\"])
assert np.array_equal(x, m.values(rows[i]))"
'

test_expect_success 'ragged, one frame records and a clip of many chunks' '
	$MK --clips 30 --frames 1:3 --shape 40,1 --seed 4 >r1.rec &&
	h5pack -q --chunk-size 4K -o r1.h5 r1.rec &&
	$CHECK r1.rec r1.h5 &&
	$MK --clips 6 --frames 400:900 --shape 40,1 --seed 4 >rl.rec &&
	h5pack -q --chunk-size 4K -o rl.h5 rl.rec &&
	$CHECK rl.rec rl.h5 &&
	$PYTHON -c "
import h5py
d = h5py.File(\"rl.h5\")[\"training\"][\"features\"]
assert d.chunks == (51, 40), d.chunks"
'

test_expect_success 'audio clips of different lengths: ragged samples' '
	$MK --kind audio --len 100:3000 --clips 12 --skip 4 --seed 5 >ra.rec &&
	h5pack -q -o ra.h5 ra.rec &&
	$CHECK ra.rec ra.h5 &&
	$MK --kind audio --channels 2 --dtype f32 --len 10:900 --clips 9 \
		--seed 6 >ra2.rec &&
	h5pack -q --chunk-size 4K -o ra2.h5 ra2.rec &&
	$CHECK ra2.rec ra2.h5 &&
	$PYTHON -c "
import h5py
a, b = h5py.File(\"ra.h5\"), h5py.File(\"ra2.h5\")
assert a[\"training/features\"].ndim == 1
assert b[\"training/features\"].ndim == 2
assert b[\"training/features\"].shape[1] == 2
assert a.attrs[\"layout\"] == b.attrs[\"layout\"] == \"ragged\""
'

test_expect_success 'ragged: a record of another width: exit 1 naming it' '
	$MK --clips 6 --frames 2:9 --bad-shape 4 --shape 40,1 --length-key none \
		>rb.rec &&
	h5pack -q -o rb0.h5 rb.rec &&
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import h5pack_mkrec as m
p, items, _ = m.read_stream(open(\"rb.rec\", \"rb\").read())
items[3][\"dim0\"] = 20
items[3][\"dim1\"] *= 2
m.write_stream(open(\"rw.rec\", \"wb\"), p, items)" &&
	test_expect_code 1 h5pack -o rw.h5 rw.rec 2>err &&
	test_grep "clip_0003.wav.: 20 mels, but the first record (.*) has 40" err &&
	test ! -e rw.h5
'

test_expect_success 'no splits: one group named all' '
	$MK --splits none --clips 12 --rows 2 >n.rec &&
	h5pack -q -o n.h5 n.rec &&
	$CHECK n.rec n.h5 &&
	$PYTHON -c "
import h5py
f = h5py.File(\"n.h5\")
assert sorted(f) == [\"all\", \"clips\", \"labels\", \"skipped\"], list(f)
assert f[\"all/features\"].shape == (24, 32, 1)"
'

test_expect_success 'splits: all three groups, even empty ones' '
	$MK --clips 1 --seed 1 >one.rec &&
	h5pack -q -o one.h5 one.rec &&
	$CHECK one.rec one.h5 &&
	$PYTHON -c "
import h5py
f = h5py.File(\"one.h5\")
assert {\"training\", \"validation\", \"testing\"} <= set(f)
assert \"all\" not in f
assert sorted(f[g][\"features\"].shape[0] for g in (\"training\",
        \"validation\", \"testing\")) == [0, 0, 1]"
'

test_expect_success 'no labels: an empty /labels, label -1 in rows and clips' '
	$MK --labels "" --clips 5 >nl.rec &&
	h5pack -q -o nl.h5 nl.rec &&
	$CHECK nl.rec nl.h5 &&
	$PYTHON -c "
import h5py
f = h5py.File(\"nl.h5\")
assert f[\"labels\"].shape == (0,)
assert (f[\"clips/label\"][...] == -1).all()"
'

test_expect_success 'file names with spaces, newlines, bytes not UTF-8' '
	$MK --odd-keys --clips 16 --skip 2,5 >odd.rec &&
	h5pack -q -o odd.h5 odd.rec &&
	$CHECK odd.rec odd.h5
'

test_expect_success 'a stream of no clips: exit 1, no file, the old one kept' '
	$MK --clips 0 >e.rec &&
	$MK --clips 2 >prev.rec &&
	h5pack -q -o e.h5 prev.rec &&
	cp e.h5 prev.h5 &&
	test_expect_code 1 h5pack -o e.h5 e.rec 2>err &&
	echo "h5pack: the stream holds no clips: not writing '"'"'e.h5'"'"'" >want &&
	test_cmp want err &&
	cmp e.h5 prev.h5 &&
	test_expect_code 1 h5pack -o e2.h5 e.rec &&
	test ! -e e2.h5 &&
	test -z "$(ls -A | grep "^\.e")"
'

test_expect_success 'only skipped inputs: exit 1 in one line, no file' '
	$MK --clips 3 --skip 0,1,2 >s.rec &&
	test_expect_code 1 h5pack -o s.h5 s.rec 2>err &&
	test $(wc -l <err) -eq 1 &&
	test_grep "^h5pack: no clip was usable: all 3 inputs were skipped (why: .*recdump.*); not writing .s.h5.$" err &&
	test ! -e s.h5 &&
	test -z "$(ls -A | grep "^\.s")"
'

test_expect_success 'some inputs skipped, one usable: written, exit 0' '
	$MK --clips 3 --skip 0,2 >s1.rec &&
	h5pack -q -o s1.h5 s1.rec &&
	$CHECK s1.rec s1.h5
'

test_expect_success 'many rows across many chunks and batches' '
	$MK --clips 300 --rows 5:9 --shape 32,4 --skip 7,99 --seed 9 >m.rec &&
	h5pack -q --chunk-size 4K -o m.h5 m.rec &&
	$CHECK m.rec m.h5 &&
	$PYTHON -c "
import h5py
d = h5py.File(\"m.h5\")[\"training/features\"]
assert d.chunks == (16, 32, 4), d.chunks
assert d.shape[0] > 8 * 16, d.shape"
'

# Speech Commands' shape: 40x101 f16 rows, 129 a 1 MiB chunk, some 130
# rows a group. A group's last features chunk is stored whole (up to a
# chunk of padding a group: the allowance), but the per-row columns get
# chunks no bigger than the clips the header announces.
test_expect_success 'a small dataset is not mostly padding' '
	$MK --clips 400 --shape 40,101 --length-key duration --len 16000 \
		--seed 3 >sc.rec &&
	h5pack -q -o sc.h5 sc.rec &&
	$CHECK sc.rec sc.h5 &&
	$CHUNKS padding sc.h5 1.3 $((3 * 129 * 8080 + 65536)) &&
	$PYTHON -c "
import h5py
f = h5py.File(\"sc.h5\")
for g in (\"training\", \"validation\", \"testing\"):
    assert f[g][\"features\"].chunks == (129, 40, 101)
    for c in (\"label\", \"clip\", \"segment\", \"offset\"):
        assert f[g][c].chunks == (400,), (g, c, f[g][c].chunks)"
'

# chunk_rows FILE: the chunk rows of training/label.
chunk_rows() {
	$PYTHON -c "import h5py; print(h5py.File(\"$1\")[\"training/label\"].chunks[0])"
}

test_expect_success 'windows per clip bound the chunks; big streams get large ones' '
	seg="--length-key duration --len 16000 --header segment_len=512" &&
	seg="$seg --header segment_hop=512" &&
	$MK $seg --header "stage=segment 0.1.0	segment --len 512" \
		--clips 200 --rows 2 >w1.rec &&
	h5pack -q --chunk-size 4K -o w1.h5 w1.rec &&
	$CHECK w1.rec w1.h5 &&
	echo 6400 >want && chunk_rows w1.h5 >got && test_cmp want got &&
	$MK $seg --header "stage=segment 0.1.0	segment --len 512" \
		--clips 3000 --rows 2 >w2.rec &&
	h5pack -q --chunk-size 4K -o w2.h5 w2.rec &&
	echo 65536 >want && chunk_rows w2.h5 >got && test_cmp want got &&
	# two segment stages, or no duration: not known, the largest chunks
	$MK $seg --header "stage=segment 0.1.0	segment --len 1024" \
		--header "stage=segment 0.1.0	segment --len 512" \
		--clips 200 --rows 2 >w3.rec &&
	h5pack -q --chunk-size 4K -o w3.h5 w3.rec &&
	chunk_rows w3.h5 >got && test_cmp want got &&
	h5pack -q --chunk-size 4K -o m3.h5 m.rec &&
	chunk_rows m3.h5 >got && test_cmp want got
'

test_expect_success 'the summary line counts rows per split, clips, skipped' '
	h5pack -o m2.h5 m.rec 2>sum.err &&
	tr=$(count 1 m.rec) && va=$(count 2 m.rec) && te=$(count 3 m.rec) &&
	cl=$(count clips m.rec) && sk=$(count skipped m.rec) &&
	echo "h5pack: wrote '"'"'m2.h5'"'"': $tr training, $va validation, $te testing rows from $cl clips, $sk skipped" >want &&
	test_cmp want sum.err
'

test_expect_success 'typed root attributes, provenance and the whole header' '
	$MK --clips 4 --header "power=2" --header "norm=slaney" \
		--header "amin=1e-10" --header "note=a" --header "note=b" \
		>at.rec &&
	h5pack -q -o at.h5 at.rec &&
	$CHECK at.rec at.h5 &&
	$PYTHON -c "
import h5py, numpy as np
a = h5py.File(\"at.h5\").attrs
assert a[\"n_mels\"] == 32 and a[\"n_mels\"].dtype == np.int64
assert a[\"power\"] == 2.0 and a[\"power\"].dtype == np.float64
assert a[\"amin\"] == 1e-10 and a[\"amin\"].dtype == np.float64
assert a[\"fmax\"] == 2048.5 and a[\"top_db\"] == \"none\"
assert a[\"norm\"] == \"slaney\" and list(a[\"note\"]) == [\"a\", \"b\"]
assert a[\"provenance\"][-1].startswith(\"h5pack 0.1.0\th5pack -q -o at.h5\")
assert a[\"kind\"] == \"features\" and a[\"dtype\"] == \"f16\""
'

test_expect_success 'standard input and a FILE give the same dataset' '
	h5pack -q -o in1.h5 <m.rec &&
	h5pack -q -o in2.h5 - <m.rec &&
	$CHECK m.rec in1.h5 &&
	$CHECK m.rec in2.h5
'

test_expect_success 'the same stream and command give the same bytes' '
	h5pack -q -o same.h5 m.rec &&
	mv same.h5 same1.h5 &&
	h5pack -q -o same.h5 m.rec &&
	cmp same.h5 same1.h5
'

test_expect_success 'a record of another shape: exit 1 naming it, no file' '
	$MK --clips 6 --bad-shape 4 >bad.rec &&
	test_expect_code 1 h5pack -o bad.h5 bad.rec 2>err &&
	test_grep "clip_0004.wav.: shape 32x2 differs from 32x1" err &&
	test ! -e bad.h5 &&
	test -z "$(ls -A | grep "^\.bad")"
'

test_expect_success 'a clip that never appears: exit 1, no file' '
	$MK --clips 6 --announce 7 >gap.rec &&
	test_expect_code 1 h5pack -o gap.h5 gap.rec 2>err &&
	test_grep "clip 6 of the 7 clips" err &&
	test ! -e gap.h5 &&
	$MK --clips 6 --announce 5 >over.rec &&
	test_expect_code 1 h5pack -o over.h5 over.rec 2>err &&
	test_grep "clip index 5, but the stream header says it holds 5" err &&
	test ! -e over.h5
'

test_expect_success 'streams of another kind or without a dtype: exit 1' '
	$PYTHON -c "
import sys; sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import h5pack_mkrec as m
m.write_stream(open(\"k2.rec\", \"wb\"), [(\"kind\", \"clips\"),
               (\"dtype\", \"f16\")], [])
m.write_stream(open(\"k3.rec\", \"wb\"), [(\"kind\", \"features\")], [])
m.write_stream(open(\"k4.rec\", \"wb\"), [(\"kind\", \"features\"),
               (\"dtype\", \"f16\"), (\"clips\", \"12x\")], [])" &&
	test_expect_code 1 h5pack -o k2.h5 k2.rec 2>err &&
	test_grep "stream kind is .clips." err &&
	test_expect_code 1 h5pack -o k3.h5 k3.rec 2>err &&
	test_grep "no usable dtype" err &&
	test_expect_code 1 h5pack -o k4.h5 k4.rec 2>err &&
	test_grep "clips=.12x., not a count" err &&
	test ! -e k2.h5 && test ! -e k3.h5 && test ! -e k4.h5
'

test_expect_success '-q is silent; -v reports; no progress off a terminal' '
	h5pack -q -o q.h5 m.rec 2>q.err &&
	test ! -s q.err &&
	h5pack -v -o v.h5 m.rec 2>v.err &&
	test_grep "read [0-9]* records" v.err &&
	test_grep "waiting for input" v.err &&
	! grep -q "$(printf "\r")" v.err
'

test_done
