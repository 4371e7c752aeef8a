#!/bin/sh
# The benchmark's own tools on small data: scripts/bench-rss.py's peak PSS
# (shared pages counted as a share) and its hands off the stages' pipes;
# scripts/bench end to end for both jobs on the CPU path, outputs checked;
# and, where a Python has torch and torchaudio ($MELPIPE_TORCH_PYTHON or
# python3), the torchaudio anchor's two loaders writing the same file.

test_description='bench-rss.py --pss, scripts/bench --job, the anchor loaders'
. "$(dirname "$0")/test-lib.sh"

RSS="$PYTHON $TOP/scripts/bench-rss.py"
MiB=1024

# A process holding 64 MiB of shared memory with a child that holds the
# same pages: the child touches every page first, then the parent, which
# lets go of them before the child does; so the parent maps each page
# only while the child maps it too.
cat >shared.py <<'EOF'
import mmap, os, time
size = 64 << 20
m = mmap.mmap(-1, size)
to_parent, to_child = os.pipe(), os.pipe()
pid = os.fork()
if pid == 0:
    for i in range(0, size, 4096):
        m[i] = 1
    os.write(to_parent[1], b"x")
    os.read(to_child[0], 1)
    os._exit(0)
os.read(to_parent[0], 1)
for i in range(0, size, 4096):
    m[i] += 1
time.sleep(0.5)
m.close()
os.write(to_child[1], b"x")
os.waitpid(pid, 0)
EOF

test_expect_success 'bench-rss.py --pss: peak RSS whole, peak PSS a share' '
	$RSS --pss 20 out $PYTHON shared.py &&
	cat out &&
	rss=$(sed -n 1p out) &&
	set -- $(sed -n 2p out) &&
	test "$1" = pss && pss=$2 && samples=$3 &&
	test "$rss" -ge $((64 * MiB)) &&
	test "$samples" -ge 5 &&
	# the 64 MiB count half in each of the two processes
	test "$pss" -ge $((32 * MiB)) &&
	test "$pss" -le $((rss - 24 * MiB))
'

test_expect_success 'bench-rss.py: the status passed on; one line without --pss' '
	test_expect_code 3 $RSS out sh -c "exit 3" &&
	test $(wc -l <out) = 1 &&
	test_expect_code 2 $RSS --pss 0 out true 2>err &&
	test_grep "^bench-rss: --pss takes milliseconds" err
'

test_expect_success 'bench-rss.py lets go of the pipes: the stages keep zero copy' '
	# more buffers than wavcat checks its readers at (the first, then
	# every power of two): some after the wrapper has let go
	$PYTHON $TOP/scripts/bench-gen.py --clips 200 data >/dev/null &&
	# (payloads in the stream: by reference, the buffers are short,
	# and short buffers are copied)
	MELPIPE_SHM=0 wavcat -v --rate 4096 data 2>err |
		$RSS --pss 20 rss.recdump recdump -q &&
	test_grep "without a copy (vmsplice)" err &&
	test -s rss.recdump
'

test_expect_success 'scripts/bench, the 10-second job on the CPU: every row, PSS' '
	OUT= $TOP/scripts/bench --cpu --clips 12 --runs 2 --dir ten \
		--bin "$MELPIPE_BIN" >out 2>err &&
	test_grep "^# melpipe benchmark results: the 10-second job" ten/bench.md &&
	test_grep "^| pipeline end to end (gpumel --device cpu) | " ten/bench.md &&
	test_grep "^| segment alone (clips.rec -> /dev/null) | " ten/bench.md &&
	test_grep "^| pipeline / parallel read floor | " ten/bench.md &&
	test_grep "^- pipeline output: 960 rows of \[32, 1\] = 12 clips x 80 " ten/bench.md &&
	test_grep "RSS / PSS: wavcat [0-9]* / [0-9]* MiB, segment" ten/bench.md
'

test_expect_success 'scripts/bench --job keyword-spotting: its data, no segment, its rows' '
	OUT= $TOP/scripts/bench --cpu --job keyword-spotting --clips 30 --runs 1 \
		--dir kws --bin "$MELPIPE_BIN" >out 2>err &&
	md=kws/bench-keyword-spotting.md &&
	test_grep "^# melpipe benchmark results: the keyword-spotting job" $md &&
	test_grep "30 clips of 1 s at 16000 Hz" $md &&
	test_grep "^- pipeline output: 30 rows of \[40, 97\] = 30 clips x 1 " $md &&
	test_grep "^- h5pack alone output: 30 rows of \[40, 97\]" $md &&
	test_grep "^| gpumel alone (clips.rec -> /dev/null) | " $md &&
	! grep -q "^| segment" $md &&
	test -d kws/kws-30/down &&
	test $(ls kws/kws-30 | grep -cv _list.txt) = 10
'

test_expect_success 'scripts/bench-kaldi on the CPU: the pipeline rows of both features' '
	OUT= $PYTHON $TOP/scripts/bench-kaldi --cpu --skip-anchor --clips 30 \
		--runs 1 --dir kaldi --bin "$MELPIPE_BIN" >out 2>err &&
	md=kaldi/bench-kaldi.md &&
	test_grep "^| melpipe: wavcat .* --device cpu .* | all 30 clips, median of 1 | [0-9.]* | [0-9,]* | [0-9.]* | [0-9,]* |$" $md
'

torch_py() {
	for py in ${MELPIPE_TORCH_PYTHON:-} python3; do
		"$py" -c "import torch, torchaudio, scipy, h5py" \
			>/dev/null 2>&1 && { echo "$py"; return 0; }
	done
	return 1
}

if TORCH=$(torch_py); then
	ANCHOR="$TORCH $TOP/scripts/bench-anchor-torch.py"
	test_expect_success 'the anchor: threads and DataLoader workers write the same file' '
		$PYTHON $TOP/scripts/bench-gen.py --clips 40 --seconds 1 \
			--rate 16000 --labels 10 kd >/dev/null &&
		args="--rate 16000 --seconds 1 --seg-len 4000 --n-fft 512 --hop 160 --n-mels 40 --batch 7" &&
		$ANCHOR $args --loader threads kd t.h5 >t.json 2>t.err &&
		$ANCHOR $args --loader workers --workers 3 kd w.h5 >w.json 2>w.err &&
		tail -n 1 w.json | grep -q "\"loader\": \"workers\", \"workers\": 3" &&
		tail -n 1 t.json | grep -q "\"loader\": \"threads\"" &&
		$PYTHON - t.h5 w.h5 <<-\EOF
		import sys, h5py, numpy as np
		def walk(p):
		    out = {}
		    with h5py.File(p, "r") as f:
		        out["/"] = dict(f.attrs)
		        f.visititems(lambda n, o: out.__setitem__(n, o[()])
		                     if isinstance(o, h5py.Dataset) else None)
		    return out
		a, b = walk(sys.argv[1]), walk(sys.argv[2])
		assert a.keys() == b.keys(), (a.keys(), b.keys())
		for k in a:
		    if k == "/":
		        assert a[k] == b[k], k
		    else:
		        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
		assert a["training/features"].shape[1:] == (40, 1 + (4000 - 512) // 160)
		print("same", len(a))
		EOF
	'

	test_expect_success 'scripts/bench --torch-anchors: both loaders, said to be a smoke test' '
		OUT= $TOP/scripts/bench --cpu --torch-anchors --torch-python "$TORCH" \
			--clips 12 --runs 1 --dir tt --bin "$MELPIPE_BIN" \
			>out 2>err &&
		test_grep "DataLoader workers (one a core)" tt/bench.md &&
		test_grep "a smoke test, not a measurement" tt/bench.md &&
		test_grep "wrote the same file" tt/bench.md
	'
else
	test_skip 'the anchor: threads and DataLoader workers write the same file' \
		'no Python with torch, torchaudio, scipy and h5py'
	test_skip 'scripts/bench --torch-anchors: both loaders' \
		'no Python with torch, torchaudio, scipy and h5py'
fi

test_done
