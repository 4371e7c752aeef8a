#!/bin/sh
test_description='scripts/shards-slurm: a wavcat job as a Slurm job array of
shard files, merged by h5pack --merge into the one-host dataset; a failed
task leaves no file, the merge names it, submitting again runs only it'
. "$(dirname "$0")/test-lib.sh"

command -v h5dump >/dev/null 2>&1 ||
	skip_all "h5dump missing (Debian: hdf5-tools; scripts/setup)"

SS="$TOP/scripts/shards-slurm"
# h5pack --merge's file against the whole run's, provenance against the
# shards' (formats/hdf5.md, h5pack --merge)
SAME="$PYTHON $TEST_DIRECTORY/py/h5merge_same.py"
W="--rate 4096 --piece-samples 1000 --split hash:25:25 DATA"
ST="segment --len 512 --hop 256 | gpumel --device cpu --n-fft 512 --hop 512 --n-mels 32 --no-center --dtype f32"
SHARDS="out/shard-0-of-3.h5 out/shard-1-of-3.h5 out/shard-2-of-3.h5"

# The stand-in for sbatch runs the array's tasks here, one after another,
# as Slurm would on its nodes: SLURM_ARRAY_TASK_ID set, --output's %A and
# %a replaced; it logs each task it runs, and prints the job id as
# --parsable does. 'wavcat' fails for a shard while FAIL-K exists.
test_expect_success 'set up data, the one-host dataset, a stand-in sbatch' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" DATA --labels 3 \
		--per-label 4 --seconds 1 &&
	printf "not audio" >DATA/word0/broken_nohash_0.wav &&
	eval "wavcat -q $W | $ST 2>/dev/null" | h5pack -q -o one.h5 &&
	mkdir bin &&
	cat >bin/sbatch <<-EOF &&
	#!/bin/sh
	array= log=/dev/null
	for a; do
		case \$a in
		--array=*) array=\${a#*=} ;;
		--output=*) log=\${a#*=} ;;
		-*) ;;
		*) script=\$a ;;
		esac
	done
	echo "sbatch \$*" >>"$PWD/sbatch.log"
	id=\$(( \$(cat "$PWD/jobid" 2>/dev/null || echo 100) + 1 ))
	echo \$id >"$PWD/jobid"
	for r in \$(echo "\${array%%%*}" | tr , " "); do
		k=\${r%-*}
		while [ \$k -le \${r#*-} ]; do
			echo "task \$k" >>"$PWD/sbatch.log"
			f=\$(echo "\$log" | sed -e "s/%A/\$id/g" -e "s/%a/\$k/g")
			SLURM_ARRAY_JOB_ID=\$id SLURM_ARRAY_TASK_ID=\$k \
				"\$script" >"\$f" 2>&1
			k=\$((k + 1))
		done
	done
	echo "\$id;cluster"
	EOF
	cat >bin/wavcat <<-EOF &&
	#!/bin/sh
	for a; do
		case \$a in [0-9]*/3)
			[ ! -e "$PWD/FAIL-\${a%/*}" ] ||
				{ echo "wavcat: no such folder" >&2; exit 1; } ;;
		esac
	done
	exec "$MELPIPE_BIN/wavcat" "\$@"
	EOF
	chmod +x bin/sbatch bin/wavcat
'
PATH=$PWD/bin:$PATH

test_expect_success 'a task fails: no shard file, merge names it and how to rerun' '
	touch FAIL-1 &&
	"$SS" submit -n 3 --out out --stages "$ST 2>/dev/null" \
		--sbatch "--partition cpu --time 10" -- -q $W >jobid.out 2>submit.err &&
	test "$(cat jobid.out)" = 101 &&
	test_grep "^sbatch --parsable --array=0-2 .*--partition cpu --time 10 .*/out/shards-of-3.sbatch$" \
		sbatch.log &&
	test "$(grep ^task sbatch.log | tr "\n" " ")" = "task 0 task 1 task 2 " &&
	test -f out/shard-0-of-3.h5 && test -f out/shard-2-of-3.h5 &&
	test ! -e out/shard-1-of-3.h5 && test ! -e out/shard-1-of-3.done &&
	test_grep "shard 1/3 failed" out/logs/shard-1-of-3.101.log &&
	test_expect_code 1 "$SS" merge -n 3 --out out -o merged.h5 2>merge.err &&
	cat merge.err &&
	test_grep "^shards-slurm: shard 1/3 is not done: no .*out/shard-1-of-3.h5$" merge.err &&
	test_grep "1 of 3 shards not done (shards 1)" merge.err &&
	test_grep "^    cd .*/trash.t7003-shards-slurm[.a-z]* && .*shards-slurm submit -n 3 --out out --stages .* -- -q --rate 4096" merge.err &&
	test ! -e merged.h5
'

test_expect_success 'submitting again runs only the failed task; the merge is the one-host dataset' '
	rm FAIL-1 &&
	: >sbatch.log &&
	"$SS" submit -n 3 --out out --stages "$ST 2>/dev/null" \
		--sbatch "--partition cpu --time 10" -- -q $W >jobid.out &&
	test "$(grep ^task sbatch.log)" = "task 1" &&
	test_grep "^sbatch --parsable --array=1 " sbatch.log &&
	"$SS" merge -n 3 --out out -o merged.h5 &&
	$SAME one.h5 merged.h5 $SHARDS &&
	: >sbatch.log &&
	"$SS" submit -n 3 --out out --stages "$ST 2>/dev/null" -- -q $W \
		>jobid.out 2>again.err &&
	test ! -s sbatch.log && test ! -s jobid.out &&
	test_grep "all 3 shards are done" again.err
'

test_expect_success 'a shard file of another job or other stages is not done; a failed task removes the old' '
	eval "wavcat -q --shard 2/3 --rate 4096 --piece-samples 1000 --split hash:10:10 DATA | $ST 2>/dev/null" |
		h5pack -q -o out/shard-2-of-3.h5 &&
	touch FAIL-2 &&
	: >sbatch.log &&
	"$SS" submit -n 3 --out out --stages "$ST 2>/dev/null" -- -q $W \
		>jobid.out 2>other.err &&
	test_grep "shard 2/3 is not done: .*out/shard-2-of-3.h5 is of another job" other.err &&
	test "$(grep ^task sbatch.log)" = "task 2" &&
	test ! -e out/shard-2-of-3.h5 &&
	rm FAIL-2 &&
	: >sbatch.log &&
	"$SS" submit -n 3 --out out --stages "$ST 2>/dev/null" -- -q $W \
		>jobid.out &&
	test "$(grep ^task sbatch.log)" = "task 2" &&
	"$SS" merge -n 3 --out out -o merged2.h5 &&
	$SAME one.h5 merged2.h5 $SHARDS &&
	: >sbatch.log &&
	cp out/shards-of-3.sbatch before.sbatch &&
	"$SS" submit -n 3 --out out --stages "$ST --top-db 60 2>/dev/null" \
		--dry-run -- -q $W >jobid.out 2>plan.err &&
	test ! -s sbatch.log && cmp before.sbatch out/shards-of-3.sbatch &&
	test_grep "shard 0/3 is not done: .*made by another plan" plan.err &&
	test_grep "would submit shards 0-2 of 3" plan.err
'

test_expect_success 'usage errors, --help' '
	test_expect_code 2 "$SS" submit --out out -- $W 2>u.err &&
	test_grep "no -n N" u.err &&
	test_expect_code 2 "$SS" submit -n 3 -- $W 2>u.err &&
	test_grep "no --out DIR" u.err &&
	test_expect_code 2 "$SS" submit -n 3 --out out -- --shard 0/2 $W 2>u.err &&
	test_grep "the shards are this script" u.err &&
	test_expect_code 2 "$SS" merge -n 3 --out out 2>u.err &&
	test_grep "no -o FILE" u.err &&
	test_expect_code 2 "$SS" run 2>u.err &&
	rm -f sbatch.log &&
	test_expect_code 1 "$SS" submit -n 3 --out bad -- --bogus $W 2>u.err &&
	test_grep "unrecognized option .--bogus" u.err &&
	test_grep "nothing submitted" u.err &&
	test ! -e sbatch.log &&
	test_expect_code 1 "$SS" submit -n 3 --out bad -- --rate 4096 NODATA \
		2>u.err &&
	test_grep "NODATA" u.err &&
	test ! -e sbatch.log &&
	test_expect_code 1 "$SS" merge -n 4 --out out -o x.h5 2>u.err &&
	test_grep "no batch script .*shards-of-4.sbatch" u.err &&
	"$SS" --help >help &&
	test_grep "^Usage: shards-slurm submit -n N --out DIR" help &&
	test_grep "^  or:  shards-slurm merge -n N" help &&
	! grep "scripts/" help
'

test_done
