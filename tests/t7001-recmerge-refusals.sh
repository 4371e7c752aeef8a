#!/bin/sh
test_description='recmerge: shards that do not make up one job are refused'
. "$(dirname "$0")/test-lib.sh"

# Every refusal: exit 1, one line naming the stream and the field, and
# no output: nothing on stdout for a header refused (all headers are
# checked before the first byte), no trailer for a stream that fails
# mid-merge, and with -o neither the file nor a temporary one.

FORGE="$PYTHON $TEST_DIRECTORY/py/recmerge_forge.py"
JOB=0123456789abcdef0123456789abcdef01234567
OTHER=1123456789abcdef0123456789abcdef01234567

# refused PATTERN STREAM...: recmerge of the streams exits 1 with one
# line matching PATTERN, writes nothing to stdout, and with -o leaves no
# file.
refused() {
	pattern=$1
	shift
	test_expect_code 1 recmerge "$@" >out.rec 2>err &&
	test_grep "^recmerge: $pattern" err &&
	test $(wc -l <err) = 1 &&
	test ! -s out.rec &&
	test_expect_code 1 recmerge -o merged.rec "$@" 2>/dev/null &&
	test ! -e merged.rec &&
	test_no_temp
}

# cut_off PATTERN STREAM...: the merge fails mid-way: exit 1, PATTERN,
# what was written has no trailer (what the writer's buffer held is
# dropped, as in every stage: here all of it), and -o leaves no file.
cut_off() {
	pattern=$1
	shift
	test_expect_code 1 recmerge "$@" >out.rec 2>err &&
	test_grep "^recmerge: $pattern" err &&
	test $(wc -l <err) = 1 &&
	test_must_fail recdump -q out.rec 2>dump.err &&
	test_grep "input ended before the trailer\|empty input" dump.err &&
	test_expect_code 1 recmerge -o merged.rec "$@" 2>/dev/null &&
	test ! -e merged.rec &&
	test_no_temp
}

test_expect_success 'set up a whole stream and its shards' '
	rec-gen -n 14 -t mixed -l 100 >whole.rec &&
	for k in 0 1; do
		rec-copy --shard $k/2 --job $JOB <whole.rec >s$k.rec ||
			return 1
	done &&
	for k in 0 1 2; do
		rec-copy --shard $k/3 --job $JOB <whole.rec >t$k.rec ||
			return 1
	done &&
	recmerge s0.rec s1.rec >good.rec
'

test_expect_success 'a shard of another job' '
	rec-copy --shard 1/2 --job $OTHER <whole.rec >other.rec &&
	refused ".other.rec.: job is .$OTHER., in .s0.rec. .$JOB.: a shard of another job" \
		s0.rec other.rec
'

test_expect_success 'a shard of another number of shards' '
	refused ".t1.rec.: shard is .1/3., in .s0.rec. .0/2.: another number of shards" \
		s0.rec t1.rec
'

test_expect_success 'another number of clips' '
	$FORGE s1.rec clips.rec --set clips=15 &&
	refused ".clips.rec.: clips is .15., in .s0.rec. .14.: the shards do not agree" \
		s0.rec clips.rec
'

test_expect_success 'other parameters: a pair that differs, one more, one less' '
	$FORGE s1.rec param.rec --set sample_rate=8000 &&
	refused ".param.rec.: sample_rate is .8000., in .s0.rec. .16000.: the shards do not agree" \
		s0.rec param.rec &&
	$FORGE s1.rec extra.rec --set n_mels=40 &&
	refused ".extra.rec.: n_mels is .40., .s0.rec. has no more pairs" \
		s0.rec extra.rec &&
	refused ".s0.rec.: no more pairs, .extra.rec. has n_mels = .40." \
		extra.rec s0.rec
'

test_expect_success 'another label table' '
	$FORGE s1.rec labels.rec --set label=cat &&
	refused ".labels.rec.: label is .cat., in .s0.rec. .one.: the shards do not agree" \
		s0.rec labels.rec
'

test_expect_success 'producer and stage may differ: they are not compared' '
	$FORGE s1.rec prod.rec --set producer=else --set stage=else &&
	recmerge s0.rec prod.rec >prod.out &&
	recdump -q prod.out
'

test_expect_success 'a shard given twice' '
	cp s1.rec again.rec &&
	refused ".again.rec.: shard 1/2 is given twice (also .s1.rec.)" \
		s0.rec s1.rec again.rec
'

test_expect_success 'a missing shard' '
	refused "shard 1/3 is missing: 2 streams given for 3 shards" \
		t0.rec t2.rec &&
	refused "shard 0/2 is missing: 1 stream given for 2 shards" s1.rec
'

test_expect_success 'a whole stream, not a shard' '
	refused ".whole.rec.: no .shard. in its header: a whole stream" \
		whole.rec s1.rec &&
	refused ".whole.rec.: no .shard. in its header: a whole stream" \
		s0.rec s1.rec whole.rec &&
	refused ".good.rec.: no .shard. in its header: a whole stream" \
		good.rec
'

test_expect_success 'a shard without job, a shard value that is no K/N' '
	$FORGE s1.rec nojob.rec --del job &&
	refused ".nojob.rec.: no .job. in its header" s0.rec nojob.rec &&
	refused ".nojob.rec.: no .job. in its header" nojob.rec s0.rec &&
	$FORGE s1.rec badk.rec --set shard=2/2 &&
	refused ".badk.rec.: shard: invalid value .2/2. (expected K/N" \
		s0.rec badk.rec
'

test_expect_success 'a shard cut short (no trailer): no trailer out, exit 1' '
	rec-copy --shard 1/2 --job $JOB --no-trailer <whole.rec >cut.rec &&
	cut_off "cut.rec: record 8 at byte [0-9]*: input ended before the trailer" \
		s0.rec cut.rec &&
	rec-gen -n 2000 -l 1000 >big.rec &&
	rec-copy --shard 0/2 --job $JOB <big.rec >big0.rec &&
	rec-copy --shard 1/2 --job $JOB -n 450 --no-trailer <big.rec \
		>big1.rec &&
	cut_off "big1.rec: record 451 at byte [0-9]*: input ended before the trailer" \
		big1.rec big0.rec &&
	test_must_fail recdump -q out.rec 2>dump.err &&
	test_grep "input ended before the trailer" dump.err
'

test_expect_success 'an empty shard cut short (more shards than clips)' '
	rec-gen -n 5 -l 100 >five.rec &&
	for k in 0 1 2 3 4 5; do
		rec-copy --shard $k/7 --job $JOB <five.rec >five.$k.rec ||
			return 1
	done &&
	rec-copy --shard 6/7 --job $JOB --no-trailer <five.rec >five.6.rec &&
	cut_off "five.6.rec: record 1 at byte [0-9]*: input ended before the trailer" \
		five.[0-6].rec
'

test_expect_success 'a shard that lacks a clip of its own' '
	rec-copy --shard 0/4 --job $JOB <whole.rec |
		rec-copy --shard 0/2 >lacks.rec &&
	cut_off ".lacks.rec.: shard 0/2 has no clip 2 (record 2 holds clip 4)" \
		lacks.rec s1.rec &&
	$FORGE s1.rec short.rec --clips 1,3,5 &&
	cut_off ".short.rec.: shard 1/2 ends before its clip 7 (the job has 14 clips)" \
		s0.rec short.rec
'

test_expect_success 'a shard that holds a clip of another' '
	$FORGE whole.rec holds.rec --clips 1,2,3,5 --set shard=1/2 \
		--set job=$JOB &&
	cut_off ".holds.rec.: record 2 holds clip 2, a clip of shard 0/2, not of this shard 1/2" \
		s0.rec holds.rec
'

test_expect_success 'a clip at or above the job'"'"'s clips' '
	$FORGE s0.rec few0.rec --set clips=10 &&
	$FORGE s1.rec few1.rec --set clips=10 &&
	cut_off ".few0.rec.: record 6 holds clip 10, at or above the job.s 10 clips" \
		few0.rec few1.rec
'

test_expect_success 'a damaged record in a shard' '
	cp s1.rec bad.rec &&
	size=$(wc -c <bad.rec) &&
	printf X | dd of=bad.rec bs=1 seek=$((size / 2)) conv=notrunc \
		2>/dev/null &&
	cut_off "bad.rec: record [0-9]* at byte [0-9]*: checksum mismatch" \
		s0.rec bad.rec
'

test_expect_success 'usage errors' '
	test_single_usage_error recmerge &&
	test_grep "no stream to merge" usage.err &&
	test_single_usage_error recmerge - s0.rec - <s1.rec &&
	test_grep "standard input. given twice" usage.err &&
	test_single_usage_error recmerge --zstd 20 s0.rec s1.rec &&
	test_usage_error recmerge --nope s0.rec s1.rec &&
	test_expect_code 1 recmerge s0.rec missing.rec 2>err >out.rec &&
	test_grep "unable to open .missing.rec." err &&
	test ! -s out.rec
'

test_expect_success 'a write error names the output once, with the reason' '
	test_expect_code 1 recmerge s0.rec s1.rec >/dev/full 2>err &&
	test_grep "^recmerge: unable to write to standard output: No space left on device$" \
		err &&
	test_expect_code 1 recmerge -o /dev/full s0.rec s1.rec 2>err &&
	test_grep "^recmerge: unable to write to ./dev/full.: No space left on device$" \
		err
'

test_expect_success 'option errors name the program, not the path run' '
	test_expect_code 2 "$MELPIPE_BIN/recmerge" --no-such-option </dev/null \
		2>err &&
	test_grep "^recmerge: unrecognized option .--no-such-option.$" err &&
	test_expect_code 2 "$MELPIPE_BIN/recmerge" -o </dev/null 2>err &&
	test_grep "^recmerge: option requires an argument -- .o.$" err
'

test_done
