#!/bin/sh
test_description='gpumel --device cuda against torchaudio MelSpectrogram on
the GPU (needs a GPU, torch and torchaudio)'
. "$(dirname "$0")/test-lib.sh"

need_cuda_so
test_have_prereq GPU || skip_all "no GPU"
"$PYTHON" -c "import torch, torchaudio; assert torch.cuda.is_available()" \
	2>/dev/null || skip_all "no torch and torchaudio with CUDA in $PYTHON"

MK="$PYTHON $TEST_DIRECTORY/py/gpumel_mkrec.py"
TA="$PYTHON $TEST_DIRECTORY/py/cuda_torchaudio.py"

test_expect_success 'streams of s16 and f32 clips' '
	$MK --n 16 --len 100:40000 --lens 400,401 --dtype s16 --rate 16000 \
		--seed 31 >s16.rec &&
	$MK --n 16 --len 100:40000 --dtype f32 --rate 16000 --seed 32 \
		>f32.rec
'

test_expect_success '--preset torchaudio is MelSpectrogram + AmplitudeToDB' '
	gpumel -q --device cuda --preset torchaudio s16.rec >ta.rec &&
	$TA check s16.rec ta.rec
'

test_expect_success '--preset torchaudio --log none is MelSpectrogram' '
	gpumel -q --device cuda --preset torchaudio --log none f32.rec \
		>tn.rec &&
	$TA check f32.rec tn.rec
'

test_expect_success 'torchaudio preset, n_fft 512 (fused path), f16' '
	gpumel -q --device cuda --preset torchaudio --n-fft 512 \
		--win-length 400 --hop 160 --n-mels 64 --dtype f16 s16.rec \
		>t512.rec &&
	$TA check s16.rec t512.rec
'

test_expect_success 'magnitude, slaney scale and norm, no centre, top_db' '
	gpumel -q --device cuda --preset torchaudio --power 1 \
		--mel-scale slaney --norm slaney --no-center --top-db 80 \
		--window hamming f32.rec >tm.rec &&
	$TA check f32.rec tm.rec
'

test_done
