/*
 * shape.c - --bench's shape from gpumel's own command line: the options
 * given after "--" go through gpumel's parser (gpumel_opts.c), so that the
 * kernels are timed on exactly the parameters gpumel would use for them,
 * every option gpumel has included, without a copy of its parsing here.
 *
 * Plain C, apart from the C++ of the rest of the program: gpumel_opts.h and
 * the headers under it are C headers.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/prog.h"
#include "../gpumel_opts.h"
#include "shape.h"

int bench_shape_params(int argc, char **argv, double sample_rate,
		       mel_params *p)
{
	struct options o;

	/* gpumel's messages name this program; getopt starts afresh, as it
	 * has parsed the bench's own options already */
	prog_init(BENCH_SHAPE_PROG);
	optind = 0;
	gpumel_parse_args(argc, argv, &o);
	if (o.input)
		prog_usage_error("'%s': the options after '--' are gpumel's "
				 "transform options, without a FILE", o.input);
	gpumel_resolve(&o, p);
	return gpumel_resolve_rate(&o, p, sample_rate);
}
