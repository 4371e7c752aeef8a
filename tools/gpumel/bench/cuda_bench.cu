/*
 * cuda_bench.cu - gpumel-cuda-bench: checks and times gpumel's CUDA
 * backend.
 *
 *   --probe SO    loads SO as gpumel does and opens the backend: prints its
 *                 name (exit 0) or why it cannot run here (exit 1)
 *   --emu         runs the kernels' own arithmetic (cuda_mel_dev.h) on the
 *                 CPU, thread by simulated thread, over a grid of options,
 *                 against a float64 reference: needs no GPU
 *   --parity SO   the same grid through SO on the GPU, both FFT paths, CUDA
 *                 graphs on and off, every batch checked
 *   --bench SO    the 10-second job's shape (512-sample records, n_fft 512,
 *                 hop 512, 32 mels, no centring, dB, f16): the kernels
 *                 alone on device-resident batches (CUDA events, median),
 *                 then the whole submit/wait path with its copies
 *
 * The program reaches the GPU only through SO (dlopen, like gpumel), so it
 * links no CUDA runtime and --emu runs anywhere. This file holds the
 * options and main; the option grid is in grid.cu, the float64 reference
 * in reference.cu, the emulation backend in emu_backend.cu (over
 * cuda_emu.cu), the parity runs in parity.cu, --probe in load.cu and
 * --bench in timing.cu.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " [options] MODE...\n"
"Checks and times gpumel's CUDA backend (gpumel-cuda.so).\n"
"\n"
"Modes (any number, run in this order):\n"
"      --probe=SO         load SO as gpumel does and open the backend: print\n"
"                         its name (exit 0) or why it cannot run (exit 1)\n"
"      --emu              run the kernels' arithmetic on the CPU over a grid\n"
"                         of options against a float64 reference (no GPU)\n"
"      --parity=SO        the same grid through SO on the GPU: both FFT\n"
"                         paths, CUDA graphs on and off\n"
"      --bench=SO         time the 10-second job's shape (512-sample records,\n"
"                         n_fft 512, hop 512, 32 mels, no centring, dB, f16)\n"
"Options:\n"
"      --batch=N          records per batch timed by --bench's kernels\n"
"                         (default 262144)\n"
"      --pipe-batch=N     records per batch of --bench's submit/wait run\n"
"                         (default 32768; gpumel batches about 8 MiB)\n"
"      --records=N        records of that run (default %u, the 10-second\n"
"                         job's)\n"
"      --reps=N           timed kernel runs (default 30)\n"
"      --quick            a few small cases (for compute-sanitizer)\n"
"      --seed=N           random seed (default 1)\n"
"  -h, --help\n"
"Exit status: 0 all passed, 1 a check failed or an error, 2 usage.\n",
		TEN_SECOND_RECORDS);
}

enum { O_PROBE = 256, O_EMU, O_PARITY, O_BENCH, O_BATCH, O_PIPE, O_RECORDS,
       O_REPS, O_QUICK, O_SEED };

static size_t arg_num(const char *opt, const char *s, size_t lo, size_t hi)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (!*s || *end || v < lo || v > hi) {
		fprintf(stderr, PROG ": %s: '%s' is not a number in %zu..%zu\n",
			opt, s, lo, hi);
		exit(2);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "probe", required_argument, NULL, O_PROBE },
		{ "emu", no_argument, NULL, O_EMU },
		{ "parity", required_argument, NULL, O_PARITY },
		{ "bench", required_argument, NULL, O_BENCH },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "pipe-batch", required_argument, NULL, O_PIPE },
		{ "records", required_argument, NULL, O_RECORDS },
		{ "reps", required_argument, NULL, O_REPS },
		{ "quick", no_argument, NULL, O_QUICK },
		{ "seed", required_argument, NULL, O_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *probe_so = NULL, *parity_so = NULL, *bench_so = NULL;
	size_t batch = 262144, pipe_batch = 32768, records = TEN_SECOND_RECORDS;
	int emu = 0, quick = 0, reps = 30, c, ret = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_PROBE: probe_so = optarg; break;
		case O_EMU: emu = 1; break;
		case O_PARITY: parity_so = optarg; break;
		case O_BENCH: bench_so = optarg; break;
		case O_BATCH:
			batch = arg_num("--batch", optarg, 1, 1u << 22);
			break;
		case O_PIPE:
			pipe_batch = arg_num("--pipe-batch", optarg, 1, 1u << 22);
			break;
		case O_RECORDS:
			records = arg_num("--records", optarg, 1, 1ull << 32);
			break;
		case O_REPS: reps = (int)arg_num("--reps", optarg, 1, 10000); break;
		case O_QUICK: quick = 1; break;
		case O_SEED:
			rnd_seed(arg_num("--seed", optarg, 0, ~(size_t)0));
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || (!probe_so && !emu && !parity_so && !bench_so)) {
		usage(stderr);
		return 2;
	}
	if (probe_so && probe(probe_so))
		ret = 1;
	if (emu && run_grid(NULL, quick))
		ret = 1;
	if (parity_so) {
		struct so so;

		so_load(&so, parity_so);
		if (run_grid(&so, quick))
			ret = 1;
	}
	if (bench_so) {
		struct so so;

		so_load(&so, bench_so);
		bench_kernels(&so, batch, reps);
		bench_pipe(&so, records, pipe_batch);
	}
	return ret;
}
