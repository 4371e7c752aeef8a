#!/bin/sh
test_description='wavcat: a list of inputs larger than --sort-buffer is
sorted in runs on a temporary file and merged; the stream is the same
record for record, memory does not grow with the number of inputs'
. "$(dirname "$0")/test-lib.sh"

RR="$PYTHON $TEST_DIRECTORY/py/wavcat_readrec.py"

# Makes the layouts: two input folders with nested and oddly named
# folders and files (spaces, newlines, bytes that are not UTF-8, bytes
# below '/'), a third folder D3 of files under keys of D1 (which no run
# may take together with D1), unusable inputs, Speech
# Commands lists at D1's root, loose files named by path and in lists, a
# labels file. Writes the keys each run must give (expect-*.keys, one
# Python repr per line, in no particular order).
cat >gen.py <<-\EOF
import os, random, sys
sys.path.insert(0, sys.argv[1])
import wavcat_mkdata as m

rnd = random.Random(1006)
keys = {"D1": [], "D2": [], "D3": []}

def wav(path, seed):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(m.wav_bytes(m.pcm16(8 + seed % 24, seed=seed)))

folders = [b"yes", b"no", b"a b", b"nl\nx", b"\xff\xfe", b"-dash",
           b"+plus", b"yes/deep/er", b"!x/#y", b""]
names = [b"clip %d.wav", b"c\n%d.wav", b"\xe9t\xe9%d.wav", b"a-%d.WAV",
         b"a.b%d.wav", b"!%d.wav", b"%d+.flac.wav",
         b"long_name_to_fill_the_buffer_quickly_%05d_nohash_1.wav"]
seed = 1
for root in ("D1", "D2"):
    for i in range(1000):
        d = rnd.choice(folders)
        k = (d + b"/" if d else b"") + rnd.choice(names) % i
        dup = root == "D2" and i % 7 == 0 and keys["D1"]
        if dup:
            k = rnd.choice(keys["D1"])  # a key of D1, in D3
        at = "D3" if dup else root
        if root == "D2" and not dup and k in keys["D1"]:
            continue  # D1 and D2 go together: no key in both
        p = os.path.join(os.fsencode(at), k)
        if os.path.exists(p):
            continue
        seed += 1
        if i % 41 == 0:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "wb").close()  # empty: a skipped record
        elif i % 43 == 0:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(b"not audio at all" * 3)
        else:
            wav(p, seed)
        keys[at].append(k)
    # hidden files and other files are not inputs
    wav(os.path.join(root, "yes", ".hidden.wav"), 1)
    with open(os.path.join(root, "README.txt"), "w") as f:
        f.write("not an input\n")
os.mkfifo(b"D1/no/fifo.wav")
keys["D1"].append(b"no/fifo.wav")
os.symlink("nowhere", b"D1/no/dangling.wav")
keys["D1"].append(b"no/dangling.wav")

# Speech Commands lists at D1's root, naming some keys and one that is
# not there.
d1 = sorted(keys["D1"])
with open("D1/validation_list.txt", "wb") as f:
    f.write(b"\n".join(k for k in d1[::5] if b"\n" not in k) +
            b"\nnot/there.wav\n")
with open("D1/testing_list.txt", "wb") as f:
    f.write(b"\r\n".join(k for k in d1[::3] if b"\n" not in k) + b"\n")

# Loose files: by path, in a list file, in a NUL-separated list.
loose = []
for i in range(120):
    p = b"L/p/f%03d.wav" % i if i < 40 else b"L/sub %d/f%03d.wav" % (i % 3, i)
    wav(p, 5000 + i)
    loose.append(p)
nl = [b"L/new\nline %d.wav" % i for i in range(30)]
for i, p in enumerate(nl):
    wav(p, 6000 + i)
with open("list.txt", "wb") as f:
    f.write(b"\n".join(loose[40:]) + b"\nL/missing.wav\n")
with open("list0.txt", "wb") as f:
    f.write(b"\0".join(nl + loose[:10]) + b"\0")
with open("list0b.txt", "wb") as f:
    f.write(b"\0".join(loose[60:]) + b"\0")
with open("args.txt", "wb") as f:
    f.write(b"\n".join(loose[:40]) + b"\n")

# A labels file for some keys of D1 and D2, and entries naming nothing.
allk = sorted(set(keys["D1"]) | set(keys["D2"]))
with open("labels.csv", "wb") as f:
    f.write(b"path,label\n")
    for i, k in enumerate(allk):
        if i % 4 and b"\n" not in k and b"," not in k and b'"' not in k:
            f.write(b"%s,L%d\n" % (k, i % 6))
    f.write(b"gone/nothing.wav,L9\n")

def put(name, ks):
    with open(name, "w") as f:
        for k in ks:
            f.write(repr(k) + "\n")

put("expect-folders.keys", keys["D1"] + keys["D2"])
put("expect-mixed.keys", keys["D1"] + keys["D2"] + loose[:40] +
    loose[40:] + [b"L/missing.wav"])
put("expect-nul.keys", keys["D2"] + nl + loose[:10] + loose[60:])
EOF

# Checks a stream's keys: sorted bytewise, one per expected input.
cat >check.py <<-\EOF
import ast, sys
sys.path.insert(0, sys.argv[1])
from wavcat_readrec import read_stream
hdr, recs, _ = read_stream(open(sys.argv[2], "rb").read())
got = [r.key for r in recs]
want = [ast.literal_eval(l) for l in open(sys.argv[3])]
if got != sorted(got):
    sys.exit("keys not in bytewise order")
if sorted(got) != sorted(want):
    sys.exit("keys differ: %d given, %d expected" % (len(got), len(want)))
if [r.clip for r in recs] != list(range(len(recs))):
    sys.exit("clip numbers not 0..n-1")
clips = dict(hdr)[b"clips"]
if int(clips) != len(recs):
    sys.exit("header clips %s, %d records" % (clips, len(recs)))
EOF

# same ARGS...: the default run and --sort-buffer 4K (and 16K) give the
# same records, the same header but for the command line, the same
# messages; the keys are the expected ones in order (expect file $EXPECT).
# Standard input comes from the file $STDIN.
same() {
	wavcat "$@" <"${STDIN:-/dev/null}" >def.rec 2>def.err &&
	wavcat --sort-buffer 4K "$@" <"${STDIN:-/dev/null}" \
		>small.rec 2>small.err &&
	wavcat --sort-buffer=16K -j 3 "$@" <"${STDIN:-/dev/null}" \
		>mid.rec 2>mid.err &&
	$RR small.rec --same-as def.rec &&
	$RR mid.rec --same-as def.rec &&
	$RR def.rec --header | grep -v "^stage=" >def.hdr &&
	$RR small.rec --header | grep -v "^stage=" >small.hdr &&
	$RR mid.rec --header | grep -v "^stage=" >mid.hdr &&
	test_cmp def.hdr small.hdr &&
	test_cmp def.hdr mid.hdr &&
	sort def.err >def.serr &&
	sort small.err >small.serr &&
	sort mid.err >mid.serr &&
	test_cmp def.serr small.serr &&
	test_cmp def.serr mid.serr &&
	$PYTHON check.py "$TEST_DIRECTORY/py" small.rec "$EXPECT"
}

test_expect_success 'set up the layouts' '
	$PYTHON gen.py "$TEST_DIRECTORY/py" &&
	test -f expect-folders.keys
'

test_expect_success '4K spills the list into runs, merged on the way' '
	wavcat -v --sort-buffer 4K D1 D2 >v.rec 2>err &&
	test_grep "spilled [0-9]* inputs to a temporary file in" err &&
	test_grep "(over --sort-buffer 4096 bytes)" err &&
	sed -n "s/.*: \([0-9]*\) runs written, \([0-9]*\) merged.*/\1 \2/p" \
		err >runs &&
	read runs merged <runs &&
	test "$runs" -ge 17 && test "$merged" -ge 16 &&
	wavcat -v D1 D2 >d.rec 2>err &&
	! grep "temporary file" err
'

test_expect_success 'folders, duplicate keys, unusable files, split lists' '
	EXPECT=expect-folders.keys same D1 D2 &&
	test_grep "fifo" def.err &&
	$RR def.rec --header | grep "^splits=lists" &&
	$RR def.rec --records | grep " validation " &&
	$RR def.rec --records | grep " testing "
'

test_expect_success 'the same with the folders the other way round' '
	EXPECT=expect-folders.keys same D2/ D1
'

test_expect_success 'two files under one key stop the run, any --sort-buffer' '
	test_expect_code 1 wavcat D1 D3 >o.rec 2>err &&
	test_expect_code 1 wavcat --sort-buffer 4K D1 D3 >o.rec 2>err4 &&
	test_cmp err err4 &&
	test_expect_code 1 wavcat --sort-buffer 4K D3 D1 >o.rec 2>err5 &&
	n=$(find D3 -type f -printf x | wc -c) &&
	test "$n" -gt 50 &&
	test $(grep -c "^wavcat: .D1/.*. and .D3/.*. have the same key" err) = $n &&
	test_grep "^wavcat: $n keys name two different files" err &&
	test_cmp err err5
'

test_expect_success 'files by path, @LIST, hash split' '
	EXPECT=expect-mixed.keys same --split hash:10:20 D1 $(cat args.txt) \
		D2 @list.txt &&
	test_grep "L/missing.wav" def.err &&
	$RR def.rec --header | grep "^splits=hash:10:20" &&
	$RR def.rec --records | grep " validation "
'

# Entries larger than the whole buffer (paths of 5,000 to 9,000 bytes,
# which open() refuses: skipped records) among ordinary ones.
test_expect_success 'entries larger than --sort-buffer' '
	$PYTHON - <<-\EOF &&
	keys = [b"L/p/f%03d.wav" % i for i in range(40)]
	keys += [b"L/" + b"x" * (5000 + 97 * i) + b"%d.wav" % i
		 for i in range(40)]
	with open("list-long.txt", "wb") as f:
	    f.write(b"\n".join(keys[::-1]) + b"\n")
	with open("expect-long.keys", "w") as f:
	    f.write("".join(repr(k) + "\n" for k in keys))
	EOF
	EXPECT=expect-long.keys same @list-long.txt &&
	test_grep "File name too long" def.err &&
	wavcat -v --sort-buffer 4K @list-long.txt 2>err >/dev/null &&
	test_grep "spilled [0-9]* inputs" err
'

test_expect_success '- and @LIST with -0 (names with newlines), no labels' '
	STDIN=list0.txt EXPECT=expect-nul.keys same -0 --no-labels \
		--split none D2 - @list0b.txt &&
	! $RR def.rec --header | grep "^label="
'

test_expect_success '--labels FILE: ids, entries naming nothing, unlabelled' '
	EXPECT=expect-folders.keys same --labels labels.csv D1 D2 &&
	test_grep "more clips are not in .labels.csv.: label -1" def.err &&
	wavcat -v --sort-buffer 4K --labels labels.csv D1 D2 >v.rec 2>err &&
	test_grep "1 of .* entries of .labels.csv. names no input" err &&
	test_grep "1 of .* entries of .D1/validation_list.txt. names no" err &&
	$RR v.rec --same-as def.rec &&
	$RR def.rec --header | grep -c "^label=" >n &&
	echo 7 >expect &&
	test_cmp expect n
'

test_expect_success 'a missing TMPDIR: a clear error, exit 1, when spilling' '
	TMPDIR=$PWD/no-such-dir test_expect_code 1 \
		wavcat --sort-buffer 4K -o out.rec D1 2>err &&
	test_grep "unable to create a temporary file in .$PWD/no-such-dir" err &&
	test_grep "No such file or directory" err &&
	! test -e out.rec &&
	TMPDIR=$PWD/no-such-dir wavcat -q D1 >ok.rec &&
	: >afile &&
	TMPDIR=$PWD/afile test_expect_code 1 \
		wavcat --sort-buffer 4K D1 2>err >/dev/null &&
	test_grep "temporary file in .$PWD/afile.* Not a directory" err
'

if test "$(id -u)" != 0; then
test_expect_success 'a TMPDIR not writable: a clear error, exit 1' '
	mkdir ro && chmod 555 ro &&
	TMPDIR=$PWD/ro test_expect_code 1 \
		wavcat --sort-buffer 4K D1 2>err >/dev/null &&
	chmod 755 ro &&
	test_grep "temporary file in .$PWD/ro.* Permission denied" err
'
fi

# A full disk stands in for the file size limit: write() fails with
# EFBIG instead of ENOSPC, through the same path.
test_expect_success 'writing the temporary file fails: a clear error, exit 1' '
	mkdir tmp &&
	(trap "" XFSZ; ulimit -f 16 &&
	 TMPDIR=$PWD/tmp exec wavcat --sort-buffer 4K -o out.rec D1 D2) \
		2>err; test $? = 1 &&
	test_grep "unable to write a temporary file in .$PWD/tmp.: File" err &&
	test_grep "File too large" err &&
	! test -e out.rec
'

test_expect_success 'the temporary file is gone: none left in TMPDIR' '
	rm -rf tmp2 && mkdir tmp2 &&
	TMPDIR=$PWD/tmp2 wavcat -q --sort-buffer 4K D1 >/dev/null &&
	ls -A tmp2 >left &&
	test ! -s left
'

# Peak RSS (KiB) of a run, by GNU time (a small parent: a Python parent's
# own RSS would count, as the child's high-water mark before exec()).
rss() {
	/usr/bin/time -f %M -o rss.one "$@" >/dev/null 2>&1 &&
	cat rss.one
}

# Tiny clips, padded to 1000 samples: every run writes megabytes, so that
# the output's buffers are as full (and as resident) in the small run as
# in the large one, and only the list of inputs can make a difference.
test_expect_success NOSAN 'peak RSS: flat from 2,000 to 20,000 inputs' '
	$PYTHON -c "
import os, sys
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_mkdata as m
clip = m.wav_bytes(m.pcm16(4, seed=3))
pad = \"x\" * 190
for d, n in ((\"R/a\", 2000), (\"R/b\", 18000)):
    os.makedirs(d)
    for i in range(n):
        with open(\"%s/%s%s%06d.wav\" % (d, d[-1], pad, i), \"wb\") as f:
            f.write(clip)
" &&
	for b in 1M 64M; do
		for set in "R/a" "R/a R/b"; do
			rss wavcat -q -j 2 --samples 1000 --sort-buffer $b \
				$set >>rss.$b || return 1
		done
	done &&
	cat rss.1M rss.64M &&
	{ read small; read big; } <rss.1M &&
	test $((big - small)) -lt 2048 &&
	{ read small; read big; } <rss.64M &&
	test $((big - small)) -gt 2048
'

test_done
