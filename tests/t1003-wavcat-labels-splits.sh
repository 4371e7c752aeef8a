#!/bin/sh
test_description='wavcat: label table and ids, labels file, Speech Commands
lists and the which_set hash split'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"
RR="$PYTHON $TEST_DIRECTORY/py/wavcat_readrec.py"
CHK="$PYTHON $TEST_DIRECTORY/py/wavcat_check.py"

test_expect_success 'set up a Speech Commands-like folder' '
	mkdir -p SC/yes SC/no SC/_background_noise_ SC/Up/x &&
	for f in yes/aa_nohash_0 yes/aa_nohash_1 yes/bb_nohash_0 \
		no/cc_nohash_0 no/dd_nohash_0 Up/x/ee_nohash_0 \
		_background_noise_/noise top; do
		$MK tone SC/$f.wav --frames 64 --seed 1 || exit 1
	done &&
	printf "yes/aa_nohash_1.wav\nno/cc_nohash_0.wav\n" \
		>SC/validation_list.txt &&
	printf "no/dd_nohash_0.wav\r\nyes/aa_nohash_1.wav\nnot/there.wav\n" \
		>SC/testing_list.txt
'

test_expect_success 'labels: top folders, sorted bytewise, ids from 0' '
	wavcat -q --split none SC >sc.rec &&
	$RR sc.rec --header | grep "^label=" >actual &&
	cat >expect <<-\EOF &&
	label=Up
	label=no
	label=yes
	EOF
	test_cmp expect actual &&
	$RR sc.rec --records | cut -d" " -f1,3,6 >actual &&
	cat >expect <<-\EOF &&
	0 0 b'"'"'Up/x/ee_nohash_0.wav'"'"'
	1 1 b'"'"'no/cc_nohash_0.wav'"'"'
	2 1 b'"'"'no/dd_nohash_0.wav'"'"'
	3 -1 b'"'"'top.wav'"'"'
	4 2 b'"'"'yes/aa_nohash_0.wav'"'"'
	5 2 b'"'"'yes/aa_nohash_1.wav'"'"'
	6 2 b'"'"'yes/bb_nohash_0.wav'"'"'
	EOF
	test_cmp expect actual
'

test_expect_success 'folders starting with _ are left out, with a note' '
	wavcat --split none SC >sc2.rec 2>err &&
	$RR sc.rec --same-as sc2.rec &&
	test_grep "^wavcat: left out 1 file in folders starting with .\_. (such as .\_background_noise_.); --include-underscore keeps them$" err &&
	$RR sc2.rec --header | grep "^clips=7$" &&
	wavcat -q --split none --include-underscore SC >inc.rec &&
	$RR inc.rec --header | grep "^label=" >actual &&
	printf "label=Up\nlabel=_background_noise_\nlabel=no\nlabel=yes\n" \
		>expect &&
	test_cmp expect actual &&
	$RR inc.rec --records | cut -d" " -f3,6 | sed -n 2p >actual &&
	echo "1 b'"'"'_background_noise_/noise.wav'"'"'" >expect &&
	test_cmp expect actual &&
	mkdir -p U2/yes/_x &&
	cp SC/top.wav U2/yes/_x/a.wav &&
	wavcat -q U2 >u2.rec &&
	$RR u2.rec --records | cut -d" " -f6 >actual &&
	echo "b'"'"'yes/_x/a.wav'"'"'" >expect &&
	test_cmp expect actual
'

test_expect_success '--exclude GLOB: the key or a leading folder matches' '
	wavcat -v --split none --include-underscore --exclude "_*" SC \
		>ex.rec 2>err &&
	$RR sc.rec --same-as ex.rec &&
	test_grep "left out 1 file matching --exclude" err &&
	! grep "include-underscore keeps" err &&
	wavcat -q --split none --exclude "*/x" --exclude "yes/aa*" \
		--exclude top.wav SC >ex2.rec &&
	$RR ex2.rec --records | cut -d" " -f1,3,6 >actual &&
	cat >expect <<-\EOF &&
	0 0 b'"'"'no/cc_nohash_0.wav'"'"'
	1 0 b'"'"'no/dd_nohash_0.wav'"'"'
	2 1 b'"'"'yes/bb_nohash_0.wav'"'"'
	EOF
	test_cmp expect actual &&
	$RR ex2.rec --header | grep "^label=" >actual &&
	printf "label=no\nlabel=yes\n" >expect &&
	test_cmp expect actual &&
	wavcat -q --exclude "*.wav" --no-labels SC/top.wav SC/yes >ex3.rec \
		2>err || true &&
	test_grep "no audio files found" err
'

test_expect_success 'files by path: the folder holding them is the label' '
	wavcat -q --split none SC/yes/aa_nohash_0.wav SC/Up/x/ee_nohash_0.wav \
		SC/top.wav >p.rec &&
	$RR p.rec --header | grep "^label=" >actual &&
	printf "label=SC\nlabel=x\nlabel=yes\n" >expect &&
	test_cmp expect actual &&
	$RR p.rec --records | cut -d" " -f3 >actual &&
	printf "1\n0\n2\n" >expect &&
	test_cmp expect actual &&
	(cd SC && wavcat -q top.wav ./top.wav >../t.rec) &&
	$RR t.rec --records | cut -d" " -f3 >actual &&
	printf -- "-1\n-1\n" >expect &&
	test_cmp expect actual
'

test_expect_success '--no-labels: every clip -1, no label table' '
	wavcat -q --no-labels SC >n.rec &&
	! $RR n.rec --header | grep "^label=" &&
	$RR n.rec --records | cut -d" " -f3 | sort -u >actual &&
	echo -1 >expect &&
	test_cmp expect actual
'

test_expect_success '--labels FILE: path,label lines' '
	cat >labels.csv <<-\EOF &&
	path,label
	yes/aa_nohash_0.wav,positive
	yes/aa_nohash_1.wav,positive
	"no/cc_nohash_0.wav",negative
	no/dd_nohash_0.wav,"neg, odd"
	top.wav,zero
	other/missing.wav,unused
	EOF
	wavcat --labels labels.csv SC >l.rec 2>err &&
	$RR l.rec --header | grep "^label=" >actual &&
	cat >expect <<-\EOF &&
	label=neg, odd
	label=negative
	label=positive
	label=unused
	label=zero
	EOF
	test_cmp expect actual &&
	$RR l.rec --records | cut -d" " -f3,6 >actual &&
	cat >expect <<-\EOF &&
	-1 b'"'"'Up/x/ee_nohash_0.wav'"'"'
	1 b'"'"'no/cc_nohash_0.wav'"'"'
	0 b'"'"'no/dd_nohash_0.wav'"'"'
	4 b'"'"'top.wav'"'"'
	2 b'"'"'yes/aa_nohash_0.wav'"'"'
	2 b'"'"'yes/aa_nohash_1.wav'"'"'
	-1 b'"'"'yes/bb_nohash_0.wav'"'"'
	EOF
	test_cmp expect actual &&
	test_grep "and 1 more clips are not in .labels.csv.: label -1" err
'

test_expect_success '--labels: paths with commas run to the last comma' '
	cp SC/top.wav "a,b.wav" &&
	echo "a,b.wav,comma" >c.csv &&
	wavcat -q --labels c.csv "a,b.wav" >c.rec &&
	$RR c.rec --records | cut -d" " -f3 >actual &&
	echo 0 >expect &&
	test_cmp expect actual
'

test_expect_success '--labels: a file naming no input warns' '
	echo "elsewhere/x.wav,a" >none.csv &&
	wavcat --labels none.csv SC >x.rec 2>err &&
	test_grep "no entry of .none.csv. names an input" err
'

test_expect_success '--labels: labels no input gets are warned about, once' '
	wavcat --labels labels.csv SC >l2.rec 2>err &&
	test_grep "^wavcat: 1 label of .labels.csv. names no input (no clip gets it; its id stays in the table): .unused.$" err &&
	{ echo "top.wav,t" &&
	  for i in 1 2 3 4 5 6 7; do echo "gone/$i.wav,g$i"; done; } >many.csv &&
	wavcat --labels many.csv SC >l3.rec 2>err &&
	test $(grep -c "labels of .many.csv. name no input" err) = 1 &&
	test_grep "^wavcat: 7 labels of .many.csv. name no input (.*): .g1., .g2., .g3., .g4., .g5., \.\.\.$" err
'

test_expect_success '--labels: a malformed line or a conflict stops (exit 1)' '
	printf "yes/aa_nohash_0.wav\n" >bad.csv &&
	test_expect_code 1 wavcat --labels bad.csv SC >o 2>err &&
	test_grep "bad.csv. line 1: expected path,label" err &&
	printf "top.wav,a\ntop.wav,b\n" >conflict.csv &&
	test_expect_code 1 wavcat --labels conflict.csv SC >o 2>err &&
	test_grep "top.wav. labelled" err &&
	test_expect_code 1 wavcat --labels nosuch.csv SC >o 2>err &&
	test_grep "nosuch.csv" err
'

test_expect_success 'lists at the folder root split by default' '
	wavcat -q SC >s.rec &&
	$RR s.rec --header >h &&
	test_grep "^splits=lists$" h &&
	$RR s.rec --records | cut -d" " -f4,6 >actual &&
	cat >expect <<-\EOF &&
	training b'"'"'Up/x/ee_nohash_0.wav'"'"'
	validation b'"'"'no/cc_nohash_0.wav'"'"'
	testing b'"'"'no/dd_nohash_0.wav'"'"'
	training b'"'"'top.wav'"'"'
	training b'"'"'yes/aa_nohash_0.wav'"'"'
	validation b'"'"'yes/aa_nohash_1.wav'"'"'
	training b'"'"'yes/bb_nohash_0.wav'"'"'
	EOF
	test_cmp expect actual &&
	wavcat -q --split lists SC >s2.rec &&
	$RR s.rec --same-as s2.rec
'

test_expect_success 'unmatched list entries are reported with -v' '
	wavcat -v SC >s3.rec 2>err &&
	test_grep "1 of 3 entries of .SC/testing_list.txt. names no input" err
'

test_expect_success 'unmatched list entries are warned about without -v' '
	wavcat SC >s4.rec 2>err &&
	test_grep "^wavcat: 1 of 3 entries of .SC/testing_list.txt. names no input" err
'

# Inputs named one by one under --root are a subset chosen on purpose:
# list entries naming other files are expected, and said only with -v.
# A folder input, or a list none of whose entries names an input (a
# wrong --root), is still warned about.
test_expect_success 'a subset named in a list: unmatched entries only with -v' '
	printf "SC/yes/aa_nohash_1.wav\0SC/no/dd_nohash_0.wav\0SC/top.wav\0" \
		>subset0 &&
	wavcat -0 --root SC - <subset0 >sub.rec 2>err &&
	! grep "names\? no input" err &&
	test_grep "^wavcat: done 3 clips, skipped 0$" err &&
	$RR sub.rec --records | cut -d" " -f4,6 >actual &&
	cat >expect <<-\EOF &&
	testing b'"'"'no/dd_nohash_0.wav'"'"'
	training b'"'"'top.wav'"'"'
	validation b'"'"'yes/aa_nohash_1.wav'"'"'
	EOF
	test_cmp expect actual &&
	tr "\0" "\n" <subset0 >subset &&
	wavcat --root SC @subset >sub2.rec 2>err &&
	! grep "names\? no input" err &&
	$RR sub.rec --same-as sub2.rec &&
	wavcat -v -0 --root SC - <subset0 >/dev/null 2>err &&
	test_grep "^wavcat: 1 of 2 entries of .SC/validation_list.txt. names no input (the inputs, named one by one, are a subset)$" err &&
	test_grep "^wavcat: 1 of 3 entries of .SC/testing_list.txt. names no input (the inputs, named one by one, are a subset)$" err
'

test_expect_success 'folders as inputs, or lists none of whose entries match: warned' '
	wavcat --root SC SC/yes SC/no >f.rec 2>err &&
	test_grep "^wavcat: 1 of 3 entries of .SC/testing_list.txt. names no input (the clip it meant, if any, is not in its split)$" err &&
	printf "SC/yes/bb_nohash_0.wav\nSC/top.wav\n" >nomatch &&
	wavcat --root SC @nomatch >nm.rec 2>err &&
	test_grep "^wavcat: no entry of .SC/validation_list.txt. names an input" err &&
	test_grep "^wavcat: no entry of .SC/testing_list.txt. names an input" err
'

test_expect_success 'list entries written as find . writes them (./x) match' '
	rm -rf DOT && cp -r SC DOT &&
	sed "s|^|./|" SC/testing_list.txt >DOT/testing_list.txt &&
	sed "s|^|./|" SC/validation_list.txt >DOT/validation_list.txt &&
	wavcat -q SC >sc.rec &&
	wavcat -q DOT >dot.rec &&
	$RR sc.rec --records >want &&
	$RR dot.rec --records >got &&
	test_cmp want got
'

test_expect_success 'no lists: splits none; --split lists then fails' '
	mkdir -p NL/a &&
	cp SC/top.wav NL/a/x.wav &&
	wavcat -q NL >nl.rec &&
	$RR nl.rec --header >h &&
	test_grep "^splits=none$" h &&
	$RR nl.rec --records | cut -d" " -f4 >actual &&
	echo none >expect &&
	test_cmp expect actual &&
	test_expect_code 1 wavcat --split lists NL >o 2>err &&
	test_grep "no validation_list.txt or testing_list.txt" err
'

test_expect_success '--split none ignores the lists' '
	wavcat -q --split none SC >sn.rec &&
	$RR sn.rec --header >h &&
	test_grep "^splits=none$" h &&
	$RR sn.rec --records | cut -d" " -f4 | sort -u >actual &&
	echo none >expect &&
	test_cmp expect actual
'

test_expect_success '--validation-list/--testing-list name the lists' '
	echo "yes/bb_nohash_0.wav" >v.txt &&
	echo "top.wav" >t.txt &&
	wavcat -q --validation-list v.txt --testing-list t.txt SC >nl.rec &&
	$RR nl.rec --records | cut -d" " -f4,6 | grep -v "^training" >actual &&
	cat >expect <<-\EOF &&
	testing b'"'"'top.wav'"'"'
	validation b'"'"'yes/bb_nohash_0.wav'"'"'
	EOF
	test_cmp expect actual &&
	wavcat -q --split lists --validation-list v.txt SC >nl2.rec &&
	$RR nl2.rec --records | cut -d" " -f4 | sort | uniq -c >actual &&
	test_grep "1 validation" actual &&
	test_grep "6 training" actual &&
	test_expect_code 1 wavcat --validation-list nosuch.txt SC >o 2>err &&
	test_grep "nosuch.txt" err
'

# Names for the hash split: Speech Commands-like, odd ones, and lengths
# around SHA-1 block boundaries (55, 56, 63, 64, 119, 120 bytes).
test_expect_success 'make clips with many names' '
	mkdir -p HS/w &&
	"$PYTHON" -c "
import os, random, shutil
random.seed(5)
names = [\"%08x_nohash_%d.wav\" % (random.getrandbits(32), random.randrange(5))
         for _ in range(400)]
names += [\"plain.wav\", \"two_nohash_a_nohash_b.wav\", \"_nohash_.wav\",
          \"x_nohash_\\ny.wav\", \"caf\\u00e9_nohash_1.wav\",
          \"speaker_nohash.wav\", \"UPPER_NOHASH_1.wav\"]
for n in (55, 56, 63, 64, 119, 120, 200):
    names.append(\"b\" * n + \"_nohash_0.wav\")
    names.append(\"c\" * (n - 4) + \".wav\")
src = \"SC/top.wav\"
for n in names:
    shutil.copy(src, os.path.join(\"HS/w\", n))
"
'

test_expect_success 'hash:V:T matches TensorFlow which_set()' '
	for vt in 10:10 33.3:33.3 0:100 100:0 0:0 12.5:7.25; do
		wavcat -q --split hash:$vt HS >hs.rec &&
		$RR hs.rec --header >h &&
		test_grep "^splits=hash:$vt$" h &&
		"$PYTHON" -c "
import sys
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr, wavcat_check as wc
v, t = map(float, \"$vt\".split(\":\"))
recs = rr.load(\"hs.rec\")[1]
assert len(recs) == 421, len(recs)
n = {}
for r in recs:
    want = wc.which_set(r.key.decode(\"utf-8\", \"surrogateescape\"), v, t)
    got = rr.SPLITS[r.split]
    assert got == want, (r.key, got, want)
    n[got] = n.get(got, 0) + 1
print(n)
" || exit 1
	done
'

# Worked by hand from SHA-1 digests (sha1sum of the name part; the low 27
# bits of the digest, times 100 / (2^27 - 1)), at hash:10:10:
#   00000000  ...70c3b38b  0x0c3b38b = 12825483  ->  9.56  validation
#   9e3779b1  ...0822d7ff  0x022d7ff =  2283519  ->  1.70  validation
#   be1e0823  ...a158a9e1  0x158a9e1 = 22587873  -> 16.83  testing
#   0a2b400e  ...1bf86887  0x3f86887 = 66611335  -> 49.63  training
#   0a2b400e.wav (no _nohash_: the whole name)
#             ...39488506  0x1488506 = 21529862  -> 16.04  testing
test_expect_success 'which_set on names worked out by hand' '
	mkdir K &&
	for n in 00000000_nohash_0 00000000_nohash_7 9e3779b1_nohash_2 \
		be1e0823_nohash_1 0a2b400e_nohash_0 0a2b400e; do
		cp SC/top.wav K/$n.wav || exit 1
	done &&
	printf "%s" 00000000 | sha1sum | test_grep "70c3b38b " - &&
	wavcat -q --split hash:10:10 K >k.rec &&
	$RR k.rec --records | cut -d" " -f4,6 >actual &&
	cat >expect <<-\EOF &&
	validation b'"'"'00000000_nohash_0.wav'"'"'
	validation b'"'"'00000000_nohash_7.wav'"'"'
	testing b'"'"'0a2b400e.wav'"'"'
	training b'"'"'0a2b400e_nohash_0.wav'"'"'
	validation b'"'"'9e3779b1_nohash_2.wav'"'"'
	testing b'"'"'be1e0823_nohash_1.wav'"'"'
	EOF
	test_cmp expect actual &&
	wavcat -q --split hash:9.5:0 K/00000000_nohash_0.wav >k2.rec &&
	$RR k2.rec --records | cut -d" " -f4 >actual &&
	echo training >expect &&
	test_cmp expect actual &&
	wavcat -q --split hash:9.6:0 K/00000000_nohash_0.wav >k3.rec &&
	$RR k3.rec --records | cut -d" " -f4 >actual &&
	echo validation >expect &&
	test_cmp expect actual
'

test_expect_success 'a clip keeps its split whatever else is in the folder' '
	wavcat -q --split hash:10:10 HS >all.rec &&
	wavcat -q --split hash:10:10 HS/w/plain.wav >one.rec &&
	"$PYTHON" -c "
import sys
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
a = {r.key.split(b\"/\")[-1]: r.split for r in rr.load(\"all.rec\")[1]}
o = rr.load(\"one.rec\")[1][0]
assert a[b\"plain.wav\"] == o.split
"
'

test_done
