#!/bin/sh
test_description='h5pack: --compress none, gzip, zstd; the zstd plugin'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/h5pack_check.py"
PLUGINS=$MELPIPE_BIN/plugins

test_expect_success 'set up a stream' '
	$MK --clips 200 --rows 1:6 --shape 32,3 --skip 5 --seed 11 >f.rec &&
	test -f "$PLUGINS/libh5zstd.so"
'

test_expect_success 'none: no filter; read by h5py' '
	h5pack -q -c none -o none.h5 f.rec &&
	$CHECK --filter none f.rec none.h5 &&
	h5pack -q -o default.h5 f.rec &&
	$CHECK --filter none f.rec default.h5
'

test_expect_success 'gzip, gzip:1, gzip:9: deflate, read by h5py' '
	for c in gzip gzip:1 gzip:9; do
		h5pack -q -c $c -o gz.h5 f.rec &&
		$CHECK --filter gzip f.rec gz.h5 || exit 1
	done &&
	h5dump -p -H -d /training/features gz.h5 >p.txt &&
	test_grep "LEVEL 9" p.txt
'

test_expect_success 'zstd, zstd:1, zstd:19: filter 32015, read with hdf5plugin' '
	for c in zstd zstd:1 zstd:19; do
		h5pack -q -c $c -o z_${c#*:}.h5 f.rec &&
		$CHECK --filter zstd f.rec z_${c#*:}.h5 || exit 1
	done &&
	h5dump -p -H -d /training/features z_19.h5 >p.txt &&
	test_grep "FILTER_ID 32015" p.txt &&
	test_grep "PARAMS { 19 }" p.txt &&
	h5dump -p -H -d /training/features z_zstd.h5 >p.txt &&
	test_grep "PARAMS { 3 }" p.txt
'

test_expect_success 'clips of different lengths (ragged) under each method' '
	$MK --clips 120 --frames 1:200 --shape 32,1 --skip 5 --seed 12 >r.rec &&
	for c in none gzip zstd; do
		h5pack -q -c $c -o r-$c.h5 r.rec &&
		$CHECK --filter $c r.rec r-$c.h5 || exit 1
	done &&
	test $(wc -c <r-zstd.h5) -lt $(wc -c <r-none.h5)
'

test_expect_success 'zstd: plain h5py reads it through HDF5_PLUGIN_PATH' '
	HDF5_PLUGIN_PATH=$PLUGINS $CHECK --reader plain --filter zstd \
		f.rec z_19.h5 &&
	# and cannot without it: the plugin is what reads it
	! HDF5_PLUGIN_PATH=/nonexistent $CHECK --reader plain --filter zstd \
		f.rec z_19.h5 2>np.err
'

test_expect_success 'zstd: h5pack says once how to read the file, not with -q' '
	h5pack -c zstd -o z.h5 f.rec 2>err &&
	dir=$(cd "$PLUGINS" && pwd -P) &&
	test_grep "^h5pack: .z.h5. is zstd-compressed: read it with " err &&
	test_grep " .import hdf5plugin. (h5py) or HDF5_PLUGIN_PATH=$dir " err &&
	test $(grep -c zstd-compressed err) = 1 &&
	h5pack -q -c zstd -o z.h5 f.rec 2>err &&
	test_cmp /dev/null err &&
	h5pack -c gzip -o gz1.h5 f.rec 2>err &&
	! grep compressed err
'

SYSPY=$(sys_python)
H5INFO=$TOP/scripts/h5info.py

test_expect_success 'h5info.py finds the plugin beside it (no hdf5plugin)' '
	! $SYSPY -c "import hdf5plugin" 2>/dev/null &&
	$PYTHON "$H5INFO" z_19.h5 >want &&
	env -u HDF5_PLUGIN_PATH $SYSPY "$H5INFO" z_19.h5 >got &&
	test_cmp want got &&
	test_grep "training: features" got
'

test_expect_success 'h5info.py without the filter says what to install' '
	mkdir -p lone && cp "$H5INFO" lone/ &&
	test_expect_code 1 env -u HDF5_PLUGIN_PATH $SYSPY lone/h5info.py \
		z_19.h5 >out 2>err &&
	test_grep "^h5info: .z_19.h5.: /.* need HDF5 filter 32015 (zstd)" err &&
	test_grep "install hdf5plugin" err &&
	test_grep "HDF5_PLUGIN_PATH" err &&
	! grep Traceback err &&
	# HDF5_PLUGIN_PATH naming a folder already: left as it is
	mkdir empty &&
	test_expect_code 1 env HDF5_PLUGIN_PATH=$PWD/empty $SYSPY "$H5INFO" \
		z_19.h5 >out 2>err &&
	test_grep "need HDF5 filter 32015" err
'

# h5dump_values FILE DATASET: the values h5dump prints, one per line.
h5dump_values() {
	rm -f vals.txt &&
	h5dump -y -w 0 -m "%.17g" -d "$2" -o vals.txt "$1" >/dev/null &&
	tr -d " ," <vals.txt | grep -v "^$"
}

test_expect_success 'zstd: h5dump reads it through HDF5_PLUGIN_PATH' '
	$PYTHON -c "
import h5py, hdf5plugin
f = h5py.File(\"z_19.h5\")
for d in (\"features\", \"offset\"):
    with open(\"want.\" + d, \"w\") as o:
        for v in f[\"training/\" + d][...].reshape(-1):
            o.write(\"%r\n\" % (float(v) if d == \"features\" else int(v)))
" &&
	HDF5_PLUGIN_PATH=$PLUGINS h5dump_values z_19.h5 /training/offset \
		>got.offset &&
	test_cmp want.offset got.offset &&
	HDF5_PLUGIN_PATH=$PLUGINS h5dump_values z_19.h5 /training/features |
		$PYTHON -c "
import sys
got = [float(x) for x in sys.stdin]
want = [float(x) for x in open(\"want.features\")]
assert got == want, (len(got), len(want))" &&
	test_must_fail env HDF5_PLUGIN_PATH=/nonexistent \
		h5dump -d /training/offset -o x.txt z_19.h5 >/dev/null 2>&1
'

test_expect_success 'the plugin reads what hdf5plugin writes, and back' '
	$PYTHON -c "
import h5py, hdf5plugin, numpy as np
x = np.arange(300000, dtype=np.float32).reshape(3000, 100)
with h5py.File(\"hp.h5\", \"w\") as f:
    f.create_dataset(\"x\", data=x, chunks=(100, 100),
                     **hdf5plugin.Zstd(clevel=7))
" &&
	HDF5_PLUGIN_PATH=$PLUGINS $PYTHON -c "
import h5py, numpy as np
x = h5py.File(\"hp.h5\")[\"x\"][...]
assert (x == np.arange(300000, dtype=np.float32).reshape(3000, 100)).all()
"
'

test_expect_success 'the plugin decodes frames without a content size' '
	$PYTHON -c "
import numpy as np
np.arange(5000, dtype=\"<i4\").tofile(\"raw.bin\")" &&
	zstd -q -c --no-content-size <raw.bin >frame.zst &&
	$PYTHON -c "
import h5py, hdf5plugin, numpy as np
with h5py.File(\"direct.h5\", \"w\") as f:
    d = f.create_dataset(\"x\", shape=(5000,), dtype=\"<i4\", chunks=(5000,),
                         **hdf5plugin.Zstd())
    d.id.write_direct_chunk((0,), open(\"frame.zst\", \"rb\").read())
" &&
	HDF5_PLUGIN_PATH=$PLUGINS $PYTHON -c "
import h5py, numpy as np
assert (h5py.File(\"direct.h5\")[\"x\"][...] == np.arange(5000)).all()"
'

test_expect_success 'the plugin needs nothing from libhdf5' '
	nm -D --defined-only "$PLUGINS/libh5zstd.so" >syms &&
	test_grep "H5PLget_plugin_info" syms &&
	test_grep "H5PLget_plugin_type" syms &&
	! nm -D --undefined-only "$PLUGINS/libh5zstd.so" | grep " H5"
'

test_expect_success 'compression makes the file smaller' '
	s_none=$(wc -c <none.h5) && s_z=$(wc -c <z_19.h5) &&
	s_gz=$(wc -c <gz.h5) &&
	test $s_z -lt $s_none &&
	test $s_gz -lt $s_none
'

test_done
