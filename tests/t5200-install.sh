#!/bin/sh
# make install into a scratch DESTDIR: the programs, the plugins, the
# manual pages made from --help, the documents --help points to, and
# what finds its files beside itself there (h5pack's closing hint about
# the zstd plugin, scripts/h5info.py). It installs the normal build (bin/),
# making build/man/*.1 on the way.

test_description='make install: programs, plugins, manual pages, documents'
. "$(dirname "$0")/test-lib.sh"

test_have_prereq NOSAN || skip_all "installs the normal build, not this one"

PROGS="wavcat segment gpumel h5pack recdump recmerge"
D=$PWD/dest/usr

# run_in_tags PAGE: prints the option tags of PAGE (the line after .TP)
# that run on into the option's text, as help2man makes of an option and
# its text with one space between them in --help; fails when there are.
run_in_tags() {
	awk '/^\.TP$/ { getline; if (/^\\fB\\-/ && / [a-z(]/) { print; bad = 1 } }
		END { exit bad }' "$1"
}

test_expect_success 'make install DESTDIR=... PREFIX=/usr' '
	MAKEFLAGS= make -s -C "$TOP" install DESTDIR="$PWD/dest" PREFIX=/usr \
		>install.log 2>&1 || { cat install.log; exit 1; }
'

test_expect_success 'the programs, h5info.py and the shards scripts are in bin/' '
	for p in $PROGS h5info.py shards-parallel shards-slurm; do
		test -x "$D/bin/$p" || { echo "no bin/$p"; exit 1; }
	done &&
	"$D/bin/h5pack" --version >v &&
	test_grep "^h5pack (melpipe) " v
'

test_expect_success 'the plugins are in lib/melpipe' '
	test -f "$D/lib/melpipe/hdf5-plugins/libh5zstd.so" &&
	if test -f "$TOP/bin/gpumel-cuda.so"; then
		test -f "$D/lib/melpipe/gpumel-cuda.so"
	fi
'

test_expect_success 'a manual page per program, made from its --help' '
	for p in $PROGS; do
		m=$D/share/man/man1/$p.1 &&
		P=$(echo $p | tr a-z A-Z) &&
		test_grep "^\.TH $P \"1\" .* \"melpipe [0-9]" "$m" &&
		sed -n "/^\.SH NAME/{n;p;}" "$m" >name &&
		test_grep "^$p \\\\- [a-z]" name &&
		! grep "manual page for" name &&
		grep -F "\\fB\\-\\-help\\fR" "$m" &&
		grep -F "\\fB\\-\\-version\\fR" "$m" &&
		run_in_tags "$m" || exit 1
	done
'

# The installed scripts say the name they were called by, and have
# manual pages made from their --help as the programs do.
test_expect_success 'the installed scripts: usage under their name, manual pages' '
	for s in h5info.py shards-parallel shards-slurm; do
		env -u HDF5_PLUGIN_PATH "$D/bin/$s" --help >help &&
		test_grep "^Usage: $s " help &&
		! grep "scripts/[hs]" help &&
		m=$D/share/man/man1/$s.1 &&
		test_grep "^\.TH $(echo $s | tr a-z A-Z) \"1\" .* \"melpipe [0-9]" "$m" &&
		sed -n "/^\.SH NAME/{n;p;}" "$m" >name &&
		test_grep "^$s \\\\- [a-z]" name &&
		sed -n "/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p" "$m" >syn &&
		test_grep "$s" syn &&
		! grep "scripts/[hs]" "$m" || { echo "in $s.1"; exit 1; }
	done &&
	ln -s "$D/bin/shards-parallel" sp &&
	./sp --bogus 2>err;
	test $? = 2 &&
	test_grep "^sp: unknown option" err &&
	test_grep "^Try .sp --help." err
'

# Every --help ends with an "Examples:" paragraph, which help2man makes
# a section of its own; its lines stay plain lines of the example (a
# line help2man took for an option's tag would be .TP or .HP).
test_expect_success 'the examples are a section of their own' '
	for p in $PROGS; do
		m=$D/share/man/man1/$p.1 &&
		test_grep "^\.SH EXAMPLES" "$m" &&
		sed -n "/^\.SH EXAMPLES/,/^\.SH [^E]/p" "$m" >ex &&
		! grep "^\.[TH]P" ex &&
		! grep "^\.SS" ex || { echo "in $p.1:"; cat ex; exit 1; }
	done
'

test_expect_success 'man renders them' '
	command -v man >/dev/null || { echo "no man: not rendered"; exit 0; } &&
	for p in $PROGS; do
		MANWIDTH=80 man -l "$D/share/man/man1/$p.1" >$p.txt 2>$p.err &&
		test_grep "^NAME" $p.txt &&
		test_grep "^       -V, --version$" $p.txt || exit 1
	done
'

test_expect_success 'no machine-dependent figures in the manual pages' '
	for p in $PROGS; do
		m=$D/share/man/man1/$p.1 &&
		test -f "$m" &&
		! grep -i "here [0-9]" "$m" || exit 1
	done
'

test_expect_success 'the documents --help points to are in share/doc/melpipe' '
	for f in README.md formats/hdf5.md formats/record.md docs/design.md \
		docs/BENCHMARKS.md; do
		test_cmp "$TOP/$f" "$D/share/doc/melpipe/$f" || exit 1
	done &&
	doc=$(cd "$D/share/doc/melpipe" && pwd -P) &&
	"$D/bin/h5pack" --help >help &&
	test_grep "formats/hdf5.md" help &&
	test_grep "^(in $doc)\.$" help &&
	"$D/bin/wavcat" --help >help &&
	test_grep "formats/record.md" help &&
	test_grep "^(in $doc)\.$" help &&
	! grep PREFIX help
'

# The manual pages are installed ones: they name the folder the install
# puts the documents in, not the repository they were made in.
test_expect_success 'the manual pages name PREFIX/share/doc/melpipe' '
	for p in wavcat h5pack; do
		m=$D/share/man/man1/$p.1 &&
		grep "^(in " "$m" >in &&
		test_grep "/usr/share/doc/melpipe" in &&
		! grep -e PREFIX -e "$TOP" "$m" || exit 1
	done
'

test_expect_success 'run from the repository'"'"'s bin/, --help names the repository' '
	top=$(cd "$TOP" && pwd -P) &&
	"$TOP/bin/wavcat" --help >help &&
	test_grep "^(in $top)\.$" help &&
	cp "$TOP/bin/wavcat" alone &&
	./alone --help >help &&
	test_grep "^(in share/doc/melpipe under melpipe.s install prefix)\.$" help
'

test_expect_success 'the installed h5pack names the installed plugin folder' '
	$PYTHON "$TEST_DIRECTORY/py/h5pack_mkrec.py" --clips 20 >f.rec &&
	"$D/bin/h5pack" -c zstd -o z.h5 f.rec 2>err &&
	dir=$(cd "$D/lib/melpipe/hdf5-plugins" && pwd -P) &&
	test_grep "HDF5_PLUGIN_PATH=$dir " err
'

test_expect_success 'the installed h5info.py finds the installed plugin' '
	env -u HDF5_PLUGIN_PATH $(sys_python) "$D/bin/h5info.py" z.h5 >out &&
	test_grep "training: features" out
'

test_done
