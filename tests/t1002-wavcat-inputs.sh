#!/bin/sh
test_description='wavcat: inputs (folders, files, lists, stdin), keys, order,
odd names, what is never opened'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"
RR="$PYTHON $TEST_DIRECTORY/py/wavcat_readrec.py"

# keys STREAM: the keys of the data records, one per line (Python repr)
keys() {
	$RR "$1" --records | sed "s/^[0-9]* [a-z]* -\{0,1\}[0-9]* [a-z]* [0-9]* //"
}

test_expect_success 'set up two folders of clips' '
	mkdir -p A/yes A/no/deep/er B/yes B/zzz &&
	$MK tone A/yes/2.wav --frames 800 --seed 1 &&
	$MK tone A/no/1.flac --frames 800 --seed 2 &&
	$MK tone A/no/deep/er/3.WAV --frames 800 --seed 3 &&
	$MK tone A/top.wav --frames 800 --seed 4 &&
	$MK tone B/yes/1.wav --frames 800 --seed 5 &&
	$MK tone B/zzz/0.ogg --subtype VORBIS --frames 800 --seed 6 &&
	$MK tone B/yes/10.aif --format AIFF --frames 800 --seed 7
'

test_expect_success 'a folder: every audio file, recursively, keys relative' '
	wavcat -q A >a.rec &&
	keys a.rec >actual &&
	cat >expect <<-\EOF &&
	b'"'"'no/1.flac'"'"'
	b'"'"'no/deep/er/3.WAV'"'"'
	b'"'"'top.wav'"'"'
	b'"'"'yes/2.wav'"'"'
	EOF
	test_cmp expect actual
'

test_expect_success 'clip indexes count from 0 in output order' '
	$RR a.rec --records | cut -d" " -f1 >actual &&
	printf "0\n1\n2\n3\n" >expect &&
	test_cmp expect actual
'

test_expect_success 'two folders are sorted together (bytewise on keys)' '
	wavcat -q B A >ab.rec &&
	keys ab.rec >actual &&
	cat >expect <<-\EOF &&
	b'"'"'no/1.flac'"'"'
	b'"'"'no/deep/er/3.WAV'"'"'
	b'"'"'top.wav'"'"'
	b'"'"'yes/1.wav'"'"'
	b'"'"'yes/10.aif'"'"'
	b'"'"'yes/2.wav'"'"'
	b'"'"'zzz/0.ogg'"'"'
	EOF
	test_cmp expect actual &&
	wavcat -q A B >ba.rec &&
	$RR ab.rec --same-as ba.rec
'

test_expect_success 'a trailing slash or ./ does not change the keys' '
	wavcat -q A/ >a2.rec &&
	$RR a.rec --same-as a2.rec &&
	(cd A && wavcat -q . >../a3.rec) &&
	$RR a.rec --same-as a3.rec
'

test_expect_success 'files named by path keep the path as given as key' '
	wavcat -q A/yes/2.wav B/yes/1.wav >f.rec &&
	keys f.rec >actual &&
	cat >expect <<-\EOF &&
	b'"'"'A/yes/2.wav'"'"'
	b'"'"'B/yes/1.wav'"'"'
	EOF
	test_cmp expect actual
'

test_expect_success 'a leading ./ is not part of a key' '
	wavcat -q .//A/yes/2.wav ././B/yes/1.wav >f2.rec &&
	$RR f.rec --same-as f2.rec &&
	printf "./A/yes/2.wav\n./B/yes/1.wav\n" | wavcat -q - >f3.rec &&
	$RR f.rec --same-as f3.rec
'

test_expect_success 'a named file needs no audio extension' '
	cp A/yes/2.wav noext &&
	wavcat -q noext >n.rec &&
	keys n.rec >actual &&
	echo "b'"'"'noext'"'"'" >expect &&
	test_cmp expect actual
'

test_expect_success '@LISTFILE: paths one per line (files and folders)' '
	printf "A/yes/2.wav\n\nB\r\nA/no/1.flac\n" >list.txt &&
	wavcat -q @list.txt >l.rec &&
	keys l.rec >actual &&
	cat >expect <<-\EOF &&
	b'"'"'A/no/1.flac'"'"'
	b'"'"'A/yes/2.wav'"'"'
	b'"'"'yes/1.wav'"'"'
	b'"'"'yes/10.aif'"'"'
	b'"'"'zzz/0.ogg'"'"'
	EOF
	test_cmp expect actual
'

test_expect_success '"-": the list on standard input' '
	printf "A/yes/2.wav\nB\nA/no/1.flac\n" | wavcat -q - >s.rec &&
	$RR l.rec --same-as s.rec
'

# A Speech Commands-like folder: split lists at its root, a label
# folder deeper down, _background_noise_, a file at the top.
test_expect_success 'set up a dataset folder' '
	mkdir -p R/yes/deep/er R/no R/_background_noise_ &&
	for f in yes/a_nohash_0 yes/deep/er/x no/b_nohash_0 no/c_nohash_1 \
		_background_noise_/n top; do
		$MK tone R/$f.wav --frames 64 --seed 2 || exit 1
	done &&
	printf "no/b_nohash_0.wav\n" >R/validation_list.txt &&
	printf "yes/deep/er/x.wav\n" >R/testing_list.txt &&
	wavcat R >folder.rec 2>folder.err &&
	recdump folder.rec | grep -v "stage" | sed "s/ checksum=.*//" \
		>folder.dump &&
	test_grep "splits=lists" folder.dump
'

# same_stream STREAM ERR: STREAM and its messages are those of the
# folder's run: the same records byte for byte, the same header but for
# the command line (and so the trailer's checksum)
same_stream() {
	recdump "$1" | grep -v "stage" | sed "s/ checksum=.*//" >list.dump &&
	test_cmp folder.dump list.dump &&
	$RR folder.rec --same-as "$1" &&
	test_cmp folder.err "$2"
}

test_expect_success '--root: a list gives the keys, labels, splits of the folder' '
	find R -name "*.wav" -print0 | wavcat -0 --root R - >l1.rec 2>l1.err &&
	same_stream l1.rec l1.err &&
	find ./R/ -name "*.wav" >r.list &&
	wavcat --root R/ @r.list >l2.rec 2>l2.err &&
	same_stream l2.rec l2.err &&
	(cd R && find . -name "*.wav" | wavcat --root . - >../l3.rec \
		2>../l3.err) &&
	same_stream l3.rec l3.err &&
	find "$PWD/R" -name "*.wav" | wavcat --root "$PWD/R" - >l4.rec \
		2>l4.err &&
	same_stream l4.rec l4.err
'

test_expect_success '--root: absolute paths for a relative root, or the reverse' '
	find "$PWD/R" -name "*.wav" -print0 | wavcat -0 --root R - >l7.rec \
		2>l7.err &&
	same_stream l7.rec l7.err &&
	find R -name "*.wav" -print0 | wavcat -0 --root "$PWD/R" - >l8.rec \
		2>l8.err &&
	same_stream l8.rec l8.err &&
	(cd R/yes && find "$PWD" -name "*.wav" >../../abs.list) &&
	find R/no R/_background_noise_ R/top.wav -name "*.wav" >>abs.list &&
	wavcat --root ./R @abs.list >l9.rec 2>l9.err &&
	same_stream l9.rec l9.err
'

test_expect_success '--root or the listed paths through a symbolic link' '
	ln -s R LR &&
	find R -name "*.wav" | wavcat --root LR - >l10.rec 2>l10.err &&
	same_stream l10.rec l10.err &&
	find LR/ -name "*.wav" | wavcat --root R - >l11.rec 2>l11.err &&
	same_stream l11.rec l11.err &&
	find "$PWD/LR/" -name "*.wav" | wavcat --root LR - >l12.rec \
		2>l12.err &&
	same_stream l12.rec l12.err
'

test_expect_success '--root: a path outside it, or going up, names it and the root' '
	printf "R/top.wav\n%s\n" "$PWD/A/yes/2.wav" |
		wavcat --root R - >o.rec 2>err &&
	test_grep "^wavcat: .$PWD/A/yes/2.wav.: not under --root .R. (.$PWD/R., its links resolved)$" \
		err &&
	printf "R/top.wav\nR/../A/yes/2.wav\nR/no/../no/b_nohash_0.wav\n" |
		wavcat --root R - >o.rec 2>err &&
	test_grep "^wavcat: .R/\.\./A/yes/2.wav.: .\.\.. in its path below --root .R. (give the path without it)$" \
		err &&
	test_grep "^wavcat: .R/no/\.\./no/b_nohash_0.wav.: .\.\.. in its path" err &&
	recdump o.rec >o.dump &&
	test_grep "^header label=" o.dump >labels &&
	! test_grep "label=\.\.$" labels
'

test_expect_success '--root: folders under it keyed from it too' '
	wavcat --root R R >l5.rec 2>l5.err &&
	same_stream l5.rec l5.err &&
	wavcat --root R R/yes R/no R/top.wav >l6.rec 2>l6.err &&
	recdump l6.rec | grep "key=" >actual &&
	recdump folder.rec | grep "key=" | grep -v "key=_" >expect &&
	test_cmp expect actual
'

test_expect_success 'without --root a list keeps the paths and the near folders' '
	find R -name "*.wav" | wavcat -q - >p.rec &&
	keys p.rec >actual &&
	test_grep "^b.R/yes/deep/er/x.wav.$" actual &&
	recdump p.rec | grep -c "label=er" &&
	recdump p.rec | grep "splits=none"
'

test_expect_success '--root: paths outside it' '
	printf "R/top.wav\nA/yes/2.wav\n" | wavcat --root R - >o.rec 2>err &&
	test_grep "^wavcat: .A/yes/2.wav.: not under --root .R.$" err &&
	test_expect_code 1 wavcat --root R A/yes/2.wav >o.rec 2>err &&
	test_grep "^wavcat: .A/yes/2.wav.: not under --root .R.$" err &&
	test_expect_code 1 wavcat --root RR R >o.rec 2>err &&
	test_grep "root .RR." err &&
	test_expect_code 1 wavcat --root R/top.wav R >o.rec 2>err &&
	test_grep "not a folder" err &&
	printf "RR/a.wav\n" | test_expect_code 1 wavcat --root R - >o.rec \
		2>err &&
	test_grep "not under --root" err
'

test_expect_success 'a listed path that is missing is an unusable input' '
	printf "A/yes/2.wav\nmissing.wav\n" >list2.txt &&
	wavcat @list2.txt >m.rec 2>err &&
	test_grep "^wavcat: .missing.wav.: .*No such file or directory" err &&
	test_grep "done 1 clip, skipped 1" err &&
	$RR m.rec --records >actual &&
	test_grep "^1 skipped -1 none 0 b.missing.wav.$" actual
'

test_expect_success 'hidden files and folders and other files are ignored' '
	mkdir -p H/yes/.hid H/.git &&
	$MK tone H/yes/a.wav --frames 100 --seed 8 &&
	cp H/yes/a.wav H/yes/.b.wav &&
	cp H/yes/a.wav H/yes/.hid/c.wav &&
	cp H/yes/a.wav H/.git/d.wav &&
	cp H/yes/a.wav H/yes/e.txt &&
	cp H/yes/a.wav H/yes/f.wav.bak &&
	cp H/yes/a.wav H/yes/noext &&
	echo "yes/a.wav" >H/validation_list.txt &&
	echo "read me" >H/README.md &&
	wavcat -q H >h.rec &&
	keys h.rec >actual &&
	echo "b'"'"'yes/a.wav'"'"'" >expect &&
	test_cmp expect actual
'

test_expect_success 'extensions in any case; symbolic links to files followed' '
	mkdir -p L/x &&
	$MK tone L/x/a.FLAC --format FLAC --frames 100 --seed 9 &&
	$MK tone L/x/b.Wav --frames 100 --seed 10 &&
	ln -s ../../A/yes/2.wav L/x/link.wav &&
	wavcat -q L >lk.rec &&
	keys lk.rec >actual &&
	cat >expect <<-\EOF &&
	b'"'"'x/a.FLAC'"'"'
	b'"'"'x/b.Wav'"'"'
	b'"'"'x/link.wav'"'"'
	EOF
	test_cmp expect actual
'

test_expect_success 'links to folders not followed; broken links unusable' '
	ln -s ../A L/dirlink &&
	ln -s nowhere.wav L/x/broken.wav &&
	wavcat L >lk2.rec 2>err &&
	test_grep "dirlink.: not following a symbolic link to a folder" err &&
	test_grep "x/broken.wav.: broken symbolic link" err &&
	$RR lk2.rec --records >actual &&
	test_grep "^2 skipped 0 none 0 b.x/broken.wav.$" actual &&
	test $(wc -l <actual) = 4
'

test_expect_success 'a fifo with an audio name is never opened (no hang)' '
	mkdir -p FI/x &&
	$MK tone FI/x/a.wav --frames 100 --seed 11 &&
	mkfifo FI/x/fifo.wav &&
	mkfifo FI/x/other &&
	timeout 60 wavcat FI >fi.rec 2>err &&
	test_grep "fifo.wav.: not a regular file (fifo)" err &&
	$RR fi.rec --records >actual &&
	test_grep "^1 skipped 0 none 0 b.x/fifo.wav.$" actual &&
	test $(wc -l <actual) = 2 &&
	timeout 60 wavcat FI/x/fifo.wav FI/x/a.wav >fi2.rec 2>err &&
	test_grep "not a regular file (fifo)" err &&
	echo FI/x/fifo.wav | timeout 60 wavcat - FI/x/a.wav >fi3.rec 2>err &&
	test_grep "not a regular file (fifo)" err
'

test_expect_success 'a socket or a device named as input is never opened' '
	timeout 60 wavcat /dev/null /dev/zero A/yes/2.wav >dev.rec 2>err &&
	test_grep "/dev/zero.: not a regular file (character device)" err &&
	test_grep "/dev/null.: not a regular file (character device)" err &&
	"$PYTHON" -c "
import socket
s = socket.socket(socket.AF_UNIX)
s.bind(\"sock.wav\")
" &&
	timeout 60 wavcat sock.wav A/yes/2.wav >so.rec 2>err &&
	test_grep "sock.wav.: not a regular file (socket)" err
'

test_expect_success 'names with spaces, newlines and non-UTF-8 bytes' '
	mkdir -p "N/a label" &&
	$MK tone "N/a label/with space.wav" --frames 100 --seed 12 &&
	"$PYTHON" -c "
import os, shutil
src = b\"N/a label/with space.wav\"
shutil.copy(src, b\"N/a label/new\\nline.wav\")
shutil.copy(src, b\"N/a label/latin\\xe9\\xff.wav\")
shutil.copy(src, b\"N/a label/tab\\there.wav\")
" &&
	wavcat N >n.rec 2>err &&
	test_grep "done 4 clips, skipped 0" err &&
	"$PYTHON" -c "
import sys
sys.path.insert(0, \"$TEST_DIRECTORY/py\")
import wavcat_readrec as rr
h, recs, _ = rr.load(\"n.rec\")
keys = [r.key for r in recs]
want = sorted([b\"a label/with space.wav\", b\"a label/new\\nline.wav\",
               b\"a label/latin\\xe9\\xff.wav\", b\"a label/tab\\there.wav\"])
assert keys == want, keys
assert all(r.type == rr.T_AUDIO and r.label == 0 for r in recs)
assert rr.header_values(h, \"label\") == [\"a label\"]
"
'

test_expect_success 'messages escape control bytes in names' '
	"$PYTHON" -c "
open(b\"N/a label/bad\\nname.wav\", \"wb\").write(b\"junk\")
" &&
	wavcat N >n2.rec 2>err &&
	test_grep "^wavcat: .N/a label/bad\\\\nname.wav.: unable to decode" err &&
	test $(wc -l <err) = 2
'

test_expect_success '-0: NUL-separated lists carry names with newlines' '
	find N -type f -print0 | wavcat -q -0 - >z.rec &&
	$RR z.rec --records >actual &&
	test $(wc -l <actual) = 5 &&
	test_grep "^[0-9] skipped .*bad.nname.wav" actual &&
	find N -type f -print0 >nul.list &&
	wavcat -q --null @nul.list >z2.rec &&
	$RR z.rec --same-as z2.rec
'

test_expect_success 'a NUL in a newline-separated list is refused' '
	printf "A/yes/2.wav\0B\n" >bad.list &&
	test_expect_code 1 wavcat @bad.list >o 2>err &&
	test_grep "NUL byte" err
'

test_expect_success 'the same input twice: both kept, a warning' '
	wavcat A/yes/2.wav A/yes/2.wav >d.rec 2>err &&
	test_grep "duplicate key .A/yes/2.wav." err &&
	$RR d.rec --records >actual &&
	test $(wc -l <actual) = 2
'

test_expect_success 'one file by two paths: both kept, a warning' '
	wavcat A/yes/2.wav ./A/yes/2.wav >d2.rec 2>err &&
	test_grep "duplicate key .A/yes/2.wav." err &&
	$RR d2.rec --records >actual &&
	test $(wc -l <actual) = 2
'

test_expect_success 'two files under one key from two folders: refused' '
	mkdir -p K1/yes K2/yes &&
	cp A/yes/2.wav K1/yes/x.wav &&
	cp B/yes/1.wav K2/yes/x.wav &&
	test_expect_code 1 wavcat K1/ K2/ >o.rec 2>err &&
	test_grep "^wavcat: .K1/yes/x.wav. and .K2/yes/x.wav. have the same key .yes/x.wav.$" err &&
	test_grep "^wavcat: 1 key names two different files, which the stream could not tell apart: name the files in a list" err &&
	test_must_fail recdump -q o.rec 2>/dev/null &&
	find K1 K2 -name "*.wav" | wavcat -q - >k.rec &&
	keys k.rec >actual &&
	printf "b'"'"'K1/yes/x.wav'"'"'\nb'"'"'K2/yes/x.wav'"'"'\n" >expect &&
	test_cmp expect actual
'

test_expect_success 'an unreadable subfolder is an unusable input' '
	if [ "$(id -u)" = 0 ]; then
		echo "running as root: permissions do not apply, skipped"
		exit 0
	fi &&
	mkdir -p P/ok P/locked &&
	$MK tone P/ok/a.wav --frames 100 --seed 13 &&
	$MK tone P/locked/b.wav --frames 100 --seed 14 &&
	chmod 000 P/locked &&
	wavcat P >p.rec 2>err;
	st=$?; chmod 755 P/locked; test $st = 0 &&
	test_grep "P/locked.: unable to read folder: Permission denied" err &&
	$RR p.rec --records >actual &&
	test_grep "skipped -1 none 0 b.locked.$" actual
'

test_expect_success 'header: clips counts every input, skipped ones too' '
	$RR lk2.rec --header >h &&
	test_grep "^clips=4$" h &&
	$RR fi.rec --header >h &&
	test_grep "^clips=2$" h
'

test_done
