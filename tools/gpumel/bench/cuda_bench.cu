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
 *   --crc SO      SO's CRC32C kernel against lib's crc32c() on groups of
 *                 payloads (lengths, offsets, many in one launch, 64 MiB),
 *                 then the throughput of 40,000 payloads of 80 KiB
 *   --bench SO    the 10-second job's shape (512-sample records, n_fft 512,
 *                 hop 512, 32 mels, no centring, dB, f16), or with
 *                 --record-samples N -- GPUMEL-OPTIONS records of N samples
 *                 through what gpumel computes with those options: the
 *                 kernels alone on device-resident batches (CUDA events,
 *                 median), then the whole submit/wait path with its copies
 *
 * The program reaches the GPU only through SO (dlopen, like gpumel), so it
 * links no CUDA runtime and --emu runs anywhere. This file holds the
 * options and main; the option grid is in grid.cu, the float64 reference
 * in reference.cu, the emulation backend in emu_backend.cu (over
 * cuda_emu.cu), the parity runs in parity.cu, --probe in load.cu, --crc
 * in crc.cu and --bench in timing.cu, the parsing of gpumel's options in
 * shape.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "shape.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " [options] MODE... [-- GPUMEL-OPTIONS]\n"
"Checks and times gpumel's CUDA backend (gpumel-cuda.so).\n"
"\n"
"Modes (any number, run in this order):\n"
"      --probe=SO         load SO as gpumel does and open the backend: print\n"
"                         its name (exit 0) or why it cannot run (exit 1)\n"
"      --emu              run the kernels' arithmetic on the CPU over a grid\n"
"                         of options against a float64 reference (no GPU)\n"
"      --parity=SO        the same grid through SO on the GPU: both FFT\n"
"                         paths, CUDA graphs on and off\n"
"      --crc=SO           SO's CRC32C kernel against lib's crc32c() on\n"
"                         groups of payloads (every length to 300, every\n"
"                         even offset modulo 16, the kernel's part sizes,\n"
"                         5,000 in one launch, 64 MiB), then the GB/s of\n"
"                         --crc-payloads payloads of 80 KiB end to end\n"
"      --bench=SO         time the 10-second job's shape (512-sample records,\n"
"                         n_fft 512, hop 512, 32 mels, no centring, dB, f16),\n"
"                         or the shape that --record-samples gives\n"
"Options:\n"
"      --record-samples=N  --bench times records of N samples through what\n"
"                         gpumel computes with the GPUMEL-OPTIONS after '--'\n"
"                         (gpumel's own parser: any gpumel option, e.g.\n"
"                         --preset kaldi --num-mel-bins 80), on the FFT path\n"
"                         gpumel takes, s16 and f32 input\n"
"      --sample-rate=HZ   those records' sample rate (default 16000)\n"
"      --batch=N          records per batch timed by --bench's kernels\n"
"                         (default 262144; with --record-samples, as many\n"
"                         as hold 2^27 samples)\n"
"      --pipe-batch=N     records per batch of --bench's submit/wait run\n"
"                         (default 32768; with --record-samples, as many as\n"
"                         hold 8 MiB of s16, as gpumel batches)\n"
"      --records=N        records of that run (default %u, the 10-second\n"
"                         job's; with --record-samples, 8 batches)\n"
"      --crc-payloads=N   payloads of --crc's timed batch (default 40000:\n"
"                         3.3 GB)\n"
"      --reps=N           timed kernel runs (default 30)\n"
"      --quick            a few small cases (for compute-sanitizer)\n"
"      --seed=N           random seed (default 1)\n"
"  -h, --help\n"
"Example: the keyword-spotting clips' Kaldi filterbank features:\n"
"  " PROG " --bench=bin/gpumel-cuda.so --record-samples=16000 \\\n"
"      -- --preset kaldi --num-mel-bins 80\n"
"Exit status: 0 all passed, 1 a check failed or an error, 2 usage.\n",
		TEN_SECOND_RECORDS);
}

enum { O_PROBE = 256, O_EMU, O_PARITY, O_CRC, O_BENCH, O_BATCH, O_PIPE,
       O_RECORDS, O_REPS, O_QUICK, O_SEED, O_REC_SAMPLES, O_RATE,
       O_CRC_PAYLOADS };

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

/* --bench's shape: the 10-second job's, or records of rec_samples
 * samples (not 0) through gpumel's options argv[0..argc) (those after
 * "--"). Sizes not given (0) get the shape's defaults. */
static void bench_setup(struct bench_shape *s, size_t rec_samples,
			double rate, int argc, char **argv, size_t *batch,
			size_t *pipe_batch, size_t *records)
{
	char **gv;

	if (!rec_samples) {
		shape_ten_second(s);
		*batch = *batch ? *batch : 262144;
		*pipe_batch = *pipe_batch ? *pipe_batch : 32768;
		*records = *records ? *records : TEN_SECOND_RECORDS;
		return;
	}
	memset(s, 0, sizeof(*s));
	/* gpumel's parser reads from argv[1] */
	gv = (char **)xcalloc((size_t)argc + 2, sizeof(*gv));
	gv[0] = (char *)PROG;
	for (int i = 0; i < argc; i++)
		gv[i + 1] = argv[i];
	if (bench_shape_params(argc + 1, gv, rate, &s->p) < 0)
		exit(2);
	free(gv);
	s->rec_samples = (uint32_t)rec_samples;
	if (mel_n_frames(&s->p, rec_samples) == 0)
		die("a record of %zu samples gives no frame with these options",
		    rec_samples);
	*batch = *batch ? *batch : (((size_t)1 << 27) + rec_samples - 1) /
				   rec_samples;
	*pipe_batch = *pipe_batch ? *pipe_batch :
		      (((size_t)8 << 20) / 2 + rec_samples - 1) / rec_samples;
	*records = *records ? *records : 8 * *pipe_batch;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "probe", required_argument, NULL, O_PROBE },
		{ "emu", no_argument, NULL, O_EMU },
		{ "parity", required_argument, NULL, O_PARITY },
		{ "crc", required_argument, NULL, O_CRC },
		{ "crc-payloads", required_argument, NULL, O_CRC_PAYLOADS },
		{ "bench", required_argument, NULL, O_BENCH },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "pipe-batch", required_argument, NULL, O_PIPE },
		{ "records", required_argument, NULL, O_RECORDS },
		{ "record-samples", required_argument, NULL, O_REC_SAMPLES },
		{ "sample-rate", required_argument, NULL, O_RATE },
		{ "reps", required_argument, NULL, O_REPS },
		{ "quick", no_argument, NULL, O_QUICK },
		{ "seed", required_argument, NULL, O_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *probe_so = NULL, *parity_so = NULL, *bench_so = NULL;
	const char *crc_so = NULL;
	struct bench_shape shape;
	size_t batch = 0, pipe_batch = 0, records = 0, rec_samples = 0;
	size_t rate = 16000, crc_payloads = 40000;
	int emu = 0, quick = 0, reps = 30, c, ret = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_PROBE: probe_so = optarg; break;
		case O_EMU: emu = 1; break;
		case O_PARITY: parity_so = optarg; break;
		case O_CRC: crc_so = optarg; break;
		case O_CRC_PAYLOADS:
			crc_payloads = arg_num("--crc-payloads", optarg, 1,
					       1u << 20);
			break;
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
		case O_REC_SAMPLES:
			rec_samples = arg_num("--record-samples", optarg, 1,
					      1u << 28);
			break;
		case O_RATE:
			rate = arg_num("--sample-rate", optarg, 1, 10000000);
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
	if ((optind != argc && !rec_samples) ||
	    (!probe_so && !emu && !parity_so && !crc_so && !bench_so)) {
		usage(stderr);
		return 2;
	}
	if (rec_samples && !bench_so) {
		fprintf(stderr, PROG ": --record-samples applies to --bench\n");
		return 2;
	}
	/* gpumel's options first: a usage error there comes before any run */
	if (bench_so)
		bench_setup(&shape, rec_samples, (double)rate, argc - optind,
			    argv + optind, &batch, &pipe_batch, &records);
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
	if (crc_so) {
		struct so so;

		so_load(&so, crc_so);
		if (run_crc(&so, crc_payloads, reps))
			ret = 1;
	}
	if (bench_so) {
		struct so so;

		so_load(&so, bench_so);
		bench_kernels(&so, &shape, batch, reps);
		bench_pipe(&so, &shape, records, pipe_batch);
	}
	return ret;
}
