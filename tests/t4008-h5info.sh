#!/bin/sh
# scripts/h5info.py's summary of a dataset: the ragged layout counted in
# rows and frames (samples for audio) with the shortest and longest row,
# and a reader that goes away (| head) ending it without a traceback.

test_description='h5info.py: ragged counts, a closed pipe'
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

test_done
