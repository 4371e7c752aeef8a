#!/bin/sh
test_description='scripts/shards-parallel: wavcat shards on ssh hosts with
GNU parallel, merged into one local pipeline, give the one-host dataset;
a failing or cut shard gives no dataset and is named'
. "$(dirname "$0")/test-lib.sh"

command -v parallel >/dev/null 2>&1 ||
	skip_all "GNU parallel missing (Debian: parallel; scripts/setup)"

SP="$TOP/scripts/shards-parallel"
# h5_same.py, but for the merged stream's shard_stage attribute
SAME="$PYTHON $TEST_DIRECTORY/py/recmerge_h5same.py"
W="--rate 4096 --piece-samples 1000 --split hash:25:25 DATA"
G="gpumel --device cpu --n-fft 512 --hop 512 --n-mels 32 --no-center --dtype f32"

# The "hosts" are this machine: the stand-in for ssh runs the command
# here, as ssh would on HOST, and logs HOST. On the hosts 'fail' and
# 'cut', wavcat is one that fails, or whose stream stops short.
test_expect_success 'set up data, the one-host dataset, a stand-in ssh' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" DATA --labels 3 \
		--per-label 4 --seconds 1 &&
	printf "not audio" >DATA/word0/broken_nohash_0.wav &&
	wavcat -q $W | segment --len 512 --hop 256 | $G 2>/dev/null |
		h5pack -q -o one.h5 &&
	cat >fake-ssh <<-EOF &&
	#!/bin/sh
	# ssh [-OPTION]... HOST [--] COMMAND: COMMAND here, as on HOST
	while [ \$# -gt 0 ]; do
		case \$1 in -*) shift ;; *) break ;; esac
	done
	host=\$1
	shift
	[ "\${1:-}" != -- ] || shift
	echo "\$host" >>"$PWD/ssh.log"
	case \$host in fail|cut) PATH=$PWD/\$host-bin:\$PATH ;; esac
	exec sh -c "\$*"
	EOF
	chmod +x fake-ssh &&
	mkdir fail-bin cut-bin &&
	printf "#!/bin/sh\necho \"wavcat: no such folder\" >&2\nexit 1\n" \
		>fail-bin/wavcat &&
	printf "#!/bin/sh\nPATH=%s\nwavcat \"\$@\" | head -c 3000\n" \
		"$PATH" >cut-bin/wavcat &&
	chmod +x fail-bin/wavcat cut-bin/wavcat
'

test_expect_success '3 hosts, one of 2 slots: 4 shards merged, stages here' '
	printf "# a comment\n2/hosta\nhostb\n\nhostc\n" >hosts &&
	# with no SHELL in the environment, as under cron or CI
	env -u SHELL "$SP" --hosts hosts --ssh "$PWD/fake-ssh" -- -q $W |
		segment --len 512 --hop 256 | $G 2>/dev/null |
		h5pack -q -o par.h5 &&
	$SAME par.h5 one.h5 &&
	test $(wc -l <ssh.log) = 4 &&
	sort -u ssh.log | tr "\n" " " >used &&
	test "$(cat used)" = "hosta hostb hostc "
'

test_expect_success '-n 2 on 3 slots, the stages on the hosts (--remote), -o' '
	rm -f ssh.log &&
	printf "hosta\nhostb\nhostc\n" >hosts3 &&
	"$SP" --hosts hosts3 -n 2 --ssh "$PWD/fake-ssh" \
		--remote "segment --len 512 --hop 256 | $G 2>/dev/null" \
		-o merged.rec -- -q $W &&
	test $(wc -l <ssh.log) = 2 &&
	h5pack -q -o rem.h5 <merged.rec &&
	$SAME rem.h5 one.h5 &&
	recdump merged.rec | grep -q "^header shard_stage=1/2.tgpumel"
'

test_expect_success 'a shard that fails: no dataset, the shard and host named' '
	printf "hosta\nfail\nhostb\n" >hostsf &&
	test_expect_code 1 "$SP" --hosts hostsf --ssh "$PWD/fake-ssh" \
		-- -q $W 2>fail.err >fail.rec &&
	cat fail.err &&
	test_grep "^shards-parallel: shard [0-2]/3 on fail failed, exit status 1$" \
		fail.err &&
	test_grep "wavcat: no such folder" fail.err &&
	test_expect_code 1 sh -c "\"$SP\" --hosts hostsf --ssh \"$PWD/fake-ssh\" \
		-- -q $W 2>/dev/null | h5pack -q -o failed.h5" &&
	test ! -e failed.h5 &&
	test_no_temp
'

test_expect_success 'a shard whose stream is cut: no dataset, the shard named' '
	printf "hosta\ncut\nhostb\n" >hostsc &&
	test_expect_code 1 sh -c "\"$SP\" --hosts hostsc --ssh \"$PWD/fake-ssh\" \
		-- -q $W 2>cut.err | h5pack -q -o cut.h5" &&
	cat cut.err &&
	test_grep "^shards-parallel: shard [0-2]/3 on cut: its stream was refused" \
		cut.err &&
	test ! -e cut.h5
'

# Interrupted (Ctrl-C): the script's children run in the background, and
# so ignore SIGINT; it must stop GNU parallel and recmerge itself. This
# stand-in for ssh runs the command in a session of its own, as sshd
# would, so that only GNU parallel's worker, seeing its ssh gone, stops
# the shard on the "host". The shards here never end.
test_expect_success 'interrupted: the shards and the merge stop, no dataset' '
	mkdir slow-bin int-tmp &&
	printf "#!/bin/sh\nexec sleep 7002\n" >slow-bin/wavcat &&
	chmod +x slow-bin/wavcat &&
	cat >session-ssh <<-EOF &&
	#!/bin/sh
	while [ \$# -gt 0 ]; do
		case \$1 in -*) shift ;; *) break ;; esac
	done
	shift
	[ "\${1:-}" != -- ] || shift
	PATH=$PWD/slow-bin:\$PATH setsid sh -c "\$*" &
	wait \$!
	EOF
	chmod +x session-ssh &&
	printf "hosta\nhostb\n" >hosts2 &&
	# Ctrl-C reaches a foreground command with SIGINT at its default
	{
		TMPDIR=$PWD/int-tmp "$PYTHON" -c "import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])" "$SP" --hosts hosts2 \
			--ssh "$PWD/session-ssh" -- -q $W >int.rec 2>int.err &
	} &&
	pid=$! &&
	n=0 &&
	while [ $(pgrep -c -f "^sleep 7002") -lt 2 ] && [ $n -lt 100 ]; do
		sleep 0.1; n=$((n + 1))
	done &&
	pgrep -f "recmerge -q $PWD/int-tmp/" >/dev/null &&
	kill -INT $pid &&
	test_expect_code 130 wait $pid &&
	test_grep "interrupted; the shards and the merge were stopped" int.err &&
	n=0 &&
	while pgrep -f "^sleep 7002|recmerge -q $PWD/int-tmp/" >/dev/null &&
		[ $n -lt 50 ]; do
		sleep 0.1; n=$((n + 1))
	done &&
	! pgrep -f "^sleep 7002" &&
	! pgrep -f "recmerge -q $PWD/int-tmp/" &&
	! pgrep -f "$PWD/session-ssh" &&
	test -z "$(ls int-tmp)" &&
	test_expect_code 1 h5pack -q -o int.h5 <int.rec 2>/dev/null &&
	test ! -e int.h5
'

# whatever the outcome, nothing of that run outlives the test
pkill -f "^sleep 7002" 2>/dev/null
pkill -f "recmerge -q $PWD/int-tmp/" 2>/dev/null

test_expect_success 'usage errors: no hosts, more shards than slots, --shard' '
	test_expect_code 2 "$SP" -- $W 2>u.err &&
	test_grep "no --hosts FILE" u.err &&
	test_expect_code 2 "$SP" --hosts hosts3 -n 4 -- $W 2>u.err &&
	test_grep "4 shards but 3 slots" u.err &&
	test_expect_code 2 "$SP" --hosts hosts3 -- --shard 0/2 $W 2>u.err &&
	test_expect_code 2 "$SP" --hosts hosts3 2>u.err &&
	test_grep "no wavcat arguments after --" u.err &&
	"$SP" --help >help &&
	test_grep "^Usage: shards-parallel --hosts FILE" help &&
	! grep "scripts/" help
'

test_done
