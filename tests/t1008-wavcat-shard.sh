#!/bin/sh
test_description='wavcat --shard K/N: the shards of a job, merged by
recmerge, are the whole run; job is the same in every shard and the
whole run, and the spec'"'"'s fingerprint; other shards'"'"' files are
never opened; empty shards; usage errors'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"
SH="$PYTHON $TEST_DIRECTORY/py/wavcat_shard.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/recmerge_check.py"
JOBPY="$PYTHON $TEST_DIRECTORY/py/recmerge_job.py"
# Long clips in pieces (4096 samples in pieces of 1000), hash splits.
OPTS="--rate 4096 --piece-samples 1000 --split hash:25:25"

# job_of STREAM: the value of the header's job.
job_of() {
	recdump "$1" | sed -n "s/^header job=//p"
}

# shards_merge NAME N WAVCAT-ARGS...: NAME.N.K.rec, wavcat --shard K/N
# for every K, each checked against NAME.rec (the whole run of the same
# arguments), their job that of the whole run; then recmerge of them
# (given in reverse order) is NAME.rec, record for record.
shards_merge() {
	name=$1 n=$2
	shift 2
	shards= k=0
	while [ $k -lt $n ]; do
		wavcat -q --shard $k/$n "$@" >$name.$n.$k.rec &&
		$SH shard $name.$n.$k.rec $name.rec $k $n &&
		test "$(job_of $name.$n.$k.rec)" = "$(job_of $name.rec)" &&
		shards="$name.$n.$k.rec $shards" &&
		k=$((k + 1)) || return 1
	done &&
	recmerge -q $shards >$name.$n.merged &&
	$CHECK $name.$n.merged $name.rec $shards
}

# The SHA-1 behind the fingerprint (and the hash split): the FIPS 180
# vectors, and the SHA extensions' blocks against the portable code.
test_expect_success 'SHA-1: FIPS vectors, SHA extensions and portable code' '
	test_tap test-sha1
'

test_expect_success 'set up: labelled clips, unusable ones, one cut short' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" DATA --labels 3 \
		--per-label 4 --seconds 1 &&
	printf "not audio" >"DATA/word0/!broken.wav" &&
	printf "" >DATA/word2/empty_nohash_0.wav &&
	$MK bad flac_truncated DATA/word1/cut_nohash_0.flac &&
	wavcat $OPTS DATA >whole.rec 2>whole.err &&
	test_grep "done 12 clips whole and 1 cut short (kept up to the failure), skipped 2$" whole.err &&
	recdump -s whole.rec >sum &&
	test_grep "pieces" sum
'

test_expect_success 'the whole run: job is the spec'"'"'s fingerprint of its stream' '
	job=$(job_of whole.rec) &&
	echo "$job" | grep -q "^[0-9a-f]\{40\}$" &&
	test "$job" = "$($JOBPY whole.rec)" &&
	keys=$(recdump whole.rec | sed -n "s/^header \([a-z_]*\)=.*/\1/p" |
		uniq | tr "\n" " ") &&
	test "$keys" = "producer stage kind sample_rate dtype label splits clips job "
'

test_expect_success '1, 2, 3 and 7 shards, every one: recmerge gives the whole run' '
	for n in 1 2 3 7; do
		shards_merge whole $n $OPTS DATA || return 1
	done &&
	recdump whole.7.0.rec >s70 &&
	test_grep "^header shard=0/7$" s70 &&
	test_grep "^header clips=15$" s70
'

test_expect_success 'one option or one input more or less gives another job' '
	job=$(job_of whole.rec) &&
	: >jobs &&
	for o in "--rate 8000" "--dtype f32" "--duration 0.5" \
		"--no-labels" "--split none" "--split hash:10:25"; do
		wavcat -q --shard 0/2 $OPTS $o DATA >other.rec &&
		job_of other.rec >>jobs || return 1
	done &&
	cp -R DATA DATA2 &&
	rm DATA2/word2/empty_nohash_0.wav &&
	wavcat -q --shard 0/2 $OPTS DATA2 >less.rec &&
	job_of less.rec >>jobs &&
	mv "DATA2/word0/!broken.wav" "DATA2/word0/!renamed.wav" &&
	wavcat -q --shard 0/2 $OPTS DATA2 >renamed.rec &&
	job_of renamed.rec >>jobs &&
	mkdir DATA2/word3 && cp "DATA2/word0/!renamed.wav" DATA2/word3 &&
	wavcat -q --shard 0/2 $OPTS DATA2 >more.rec &&
	job_of more.rec >>jobs &&
	cat jobs &&
	test $(wc -l <jobs) = 9 &&
	test $(sort -u jobs | wc -l) = 9 &&
	! grep -q "$job" jobs
'

test_expect_success 'what does not change the data keeps the job: -j, --zstd, --sort-buffer, pieces, -o' '
	job=$(job_of whole.rec) &&
	wavcat -q -j 1 --zstd 3 --sort-buffer 4K --shard 1/3 $OPTS DATA \
		>same1.rec &&
	wavcat -q --rate 4096 --split hash:25:25 --shard 2/3 -o same2.rec \
		DATA &&
	test "$(job_of same1.rec)" = "$job" &&
	test "$(job_of same2.rec)" = "$job"
'

test_expect_success 'a listing spilled to the temporary file: the same job and shards' '
	i=0 &&
	while [ $i -lt 300 ]; do
		echo "missing/$i.wav" || return 1
		i=$((i + 1))
	done >list &&
	find DATA -name "*.wav" >>list &&
	wavcat -q --rate 4096 @list >spill.rec &&
	wavcat -v --rate 4096 --sort-buffer 4K @list >spill4k.rec 2>v.err &&
	test_grep "temporary file" v.err &&
	test "$(job_of spill4k.rec)" = "$(job_of spill.rec)" &&
	test "$(job_of spill.rec)" = "$($JOBPY spill.rec)" &&
	shards_merge spill 3 --rate 4096 --sort-buffer 4K @list
'

test_expect_success 'without --rate every shard probes the job'"'"'s first usable clip' '
	wavcat --exclude "*.flac" DATA >probe.rec 2>probe.err &&
	test_grep "^wavcat: .DATA/word0/!broken.wav.: unable to decode" \
		probe.err &&
	for k in 0 1; do
		wavcat --shard $k/2 --exclude "*.flac" DATA \
			>probe.2.$k.rec 2>probe.2.$k.err &&
		$SH shard probe.2.$k.rec probe.rec $k 2 || return 1
	done &&
	recdump probe.2.1.rec | grep -q "^header sample_rate=4096$" &&
	test $(grep -c "broken.wav" probe.2.0.err) = 1 &&
	! grep "broken" probe.2.1.err &&
	recmerge -q probe.2.0.rec probe.2.1.rec >probe.merged &&
	$CHECK probe.merged probe.rec probe.2.0.rec probe.2.1.rec
'

test_expect_success 'empty shards: more shards than clips, none usable: exit 0' '
	wavcat -q $OPTS DATA/word2 >w2.rec &&
	shards_merge w2 7 $OPTS DATA/word2 &&
	recdump -s w2.7.6.rec >empty.txt &&
	test_grep "records=0" empty.txt &&
	mkdir E &&
	cp DATA/word1/*_nohash_1.wav E/ &&
	for x in x0 x1 x2 x3; do printf "not audio" >E/$x.wav; done &&
	wavcat -q E >e.rec &&
	recdump e.rec | grep "^[0-9]* skipped clip=2 .*key=.x0.wav" &&
	for r in "--rate 4096" ""; do
		wavcat --shard 2/3 $r E >none.rec 2>none.err &&
		recdump none.rec | grep -q "^header sample_rate=4096$" &&
		test $(recdump none.rec | grep -c "^[0-9]* skipped ") = 2 &&
		test_grep "done 0 clips, skipped 2$" none.err || return 1
	done &&
	$SH shard none.rec e.rec 2 3
'

# run_as_other CMD...: CMD as a user whom chmod 000 keeps out: this one,
# or nobody when this one is root (who reads any file; setpriv from
# util-linux).
run_as_other() {
	if [ "$(id -u)" = 0 ]; then
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
	else
		"$@"
	fi
}

test_expect_success 'the other shards'"'"' files are never opened (unreadable: no skip)' '
	mkdir -p U && cp -R DATA/word0 DATA/word1 U/ &&
	chmod -R a+rX U &&
	wavcat -q $OPTS U >u.rec &&
	recdump u.rec |
		sed -n "s/^[0-9]* [a-z]* clip=\([0-9]*\) .* key=\"\([^\"]*\)\".*/\1 \2/p" |
		sort -u >clips &&
	test $(wc -l <clips) = 10 &&
	while read -r i key; do
		[ $((i % 3)) = 1 ] || chmod 000 "U/$key" || return 1
	done <clips &&
	if run_as_other cat "U/$(sed -n "s/^0 //p" clips)" >/dev/null 2>&1
	then
		echo "cannot make a file unreadable here" >&2 && exit 1
	fi &&
	run_as_other wavcat --shard 1/3 $OPTS U >u.1.rec 2>u.1.err &&
	cat u.1.err &&
	! grep "Permission denied" u.1.err &&
	$SH shard u.1.rec u.rec 1 3 &&
	run_as_other wavcat --shard 0/3 $OPTS U >u.0.rec 2>u.0.err &&
	test_grep "Permission denied" u.0.err &&
	chmod -R a+rX U
'

test_expect_success '--strict stops a shard at its own unusable clip only' '
	wavcat -q --strict --shard 2/3 $OPTS DATA/word0 >st.rec &&
	test_expect_code 1 wavcat -q --strict --shard 0/3 $OPTS DATA/word0 \
		>st0.rec
'

test_expect_success '--shard usage errors: K/N, N at least 1, K below N' '
	for a in "" 1 / 1/ /2 a/2 1/b -1/2 "1 /2" 1/2/3 +1/2 1/4294967296 \
		4294967296/1; do
		test_single_usage_error wavcat --shard "$a" DATA &&
		test_grep "invalid value .$a. for --shard (expected K/N" \
			usage.err || return 1
	done &&
	test_single_usage_error wavcat --shard 0/0 DATA &&
	test_grep "N, the number of shards, must be at least 1" usage.err &&
	test_single_usage_error wavcat --shard 3/3 DATA &&
	test_grep "K counts from 0, so it must be below N (0/3 to 2/3)" \
		usage.err &&
	test_single_usage_error wavcat --shard 5/2 DATA &&
	test_single_usage_error wavcat --shard 1/1 DATA
'

test_expect_success '--help tells of --shard, same options, --rate' '
	wavcat --help >help &&
	test_grep "^  --shard=K/N         decode only shard K of N, K from 0 to N-1" help &&
	test_grep "same options" help &&
	test_grep "the rate: --rate avoids that decode" help &&
	test_grep "wavcat --shard 0/2" help
'

test_done
