/*
 * shape.h - --bench's shape from gpumel's command line (shape.c, in C):
 * the one function the bench's C++ calls there.
 */
#ifndef MELPIPE_GPUMEL_BENCH_SHAPE_H
#define MELPIPE_GPUMEL_BENCH_SHAPE_H

#include "../backend.h"

#define BENCH_SHAPE_PROG "gpumel-cuda-bench"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Parses argv[1..argc) as gpumel parses its command line (argv[0] is not
 * read) and resolves the transform's parameters into *p for a stream at
 * sample_rate Hz: the preset's values for the options not given, fmax,
 * and fbank's frame sizes. A usage error (or --help, which prints gpumel's
 * help) exits as gpumel does; returns 0, or -1 after a message when the
 * parameters do not suit the sample rate.
 */
int bench_shape_params(int argc, char **argv, double sample_rate,
		       mel_params *p);

#ifdef __cplusplus
}
#endif

#endif
