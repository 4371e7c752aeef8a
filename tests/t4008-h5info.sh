#!/bin/sh
# scripts/h5info.py's summary of a dataset: the ragged layout counted in
# rows and frames (samples for audio) with the shortest and longest row,
# a reader that goes away (| head) ending it without a traceback, and
# files it cannot show named in one line, with no traceback.

test_description='h5info.py: ragged counts, a closed pipe, refusals'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
H5INFO="$PYTHON $TOP/scripts/h5info.py"

test_expect_success 'ragged features: rows, frames in all, shortest and longest' '
	$MK --dtype f32 --clips 30 --frames 1:90 --shape 8,1 --seed 3 >r.rec &&
	h5pack -q -o r.h5 r.rec &&
	$H5INFO r.h5 >out &&
	$PYTHON -c "
import h5py
g = h5py.File(\"r.h5\")[\"training\"]
n = g[\"n_frames\"][()]
print(\"ragged: %d rows, %d frames in all (%d to %d per row)\"
      % (n.shape[0], n.sum(), n.min(), n.max()))" >want &&
	grep -F -q -- "$(cat want)" out
'

test_expect_success 'a reader that goes away: no traceback, no message' '
	# more lines (one per skipped input) than a pipe holds
	$MK --dtype f32 --clips 6000 --frames 1:3 --shape 2,1 --seed 4 \
		--skip $(seq -s, 1 2 5999) >many.rec &&
	h5pack -q -o many.h5 many.rec &&
	$H5INFO many.h5 2>err | head -n 1 >first &&
	test_grep "many.h5:" first &&
	$H5INFO many.h5 | wc -c >size &&
	test $(cat size) -gt 100000 &&
	! test -s err
'

test_expect_success 'no file, not HDF5, not melpipe: one line each, exit 1' '
	test_expect_code 1 $H5INFO nosuch.h5 2>err &&
	test_grep "^h5info.py: unable to open .nosuch.h5.: No such file or directory$" err &&
	printf "RIFF" >x.wav &&
	test_expect_code 1 $H5INFO x.wav 2>err &&
	test_grep "^h5info.py: unable to open .x.wav.: not an HDF5 file$" err &&
	$PYTHON -c "import h5py; h5py.File(\"plain.h5\", \"w\")[\"x\"] = [1]" &&
	test_expect_code 1 $H5INFO plain.h5 >out 2>err &&
	test_grep "h5info.py: .plain.h5. is an HDF5 file but not a melpipe dataset" err &&
	! test -s out
'

test_expect_success 'without h5py: what to install, also for --help' '
	# a Python whose h5py import fails
	mkdir noh5 &&
	echo "raise ImportError(name=\"h5py\")" >noh5/h5py.py &&
	PYTHONPATH=$PWD/noh5 $H5INFO --help >help &&
	test_grep "^Usage: h5info.py FILE.h5" help &&
	test_expect_code 1 env PYTHONPATH=$PWD/noh5 $H5INFO r.h5 2>err &&
	test_grep "h5info.py: h5py is missing for .*python3-h5py" err &&
	! grep -q Traceback err
'

test_done
