/*
 * rec-gen - test helper: write a synthetic valid record stream of N
 * records to stdout, for tests that need streams of a given size or shape
 * (pipes, EPIPE, large payloads) without the audio front end.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/half.h"
#include "../../lib/rec.h"
#include "../../tools/common/prog.h"

struct opts {
	uint64_t n, len, segments;
	int type, dtype, level, trailer;
	uint32_t rate, n_mels;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... > OUT.rec\n"
"Write a synthetic record stream (test helper). Clip i holds a sine of\n"
"100 * (1 + i %% 10) Hz; every 10th clip is a skipped record with --type\n"
"mixed.\n"
"\n"
"  -d, --dtype T          s16, f32, f16 or bf16 (default s16)\n"
"  -h, --help             show this help and exit\n"
"  -l, --len N            samples per audio record, frames per features\n"
"                         record (default 1000)\n"
"  -n, --records N        clips (default 10)\n"
"      --no-trailer       end without a trailer\n"
"  -s, --segments N       records per clip (default 1)\n"
"  -t, --type T           audio, features, skipped or mixed (default\n"
"                         audio)\n"
"  -z, --zstd LEVEL       compress payloads (default 0)\n",
		prog_name);
}

enum { OPT_NO_TRAILER = 256 };
enum { TYPE_MIXED = 100 };

static int parse_type(const char *s)
{
	if (strcmp(s, "audio") == 0)
		return REC_T_AUDIO;
	if (strcmp(s, "features") == 0)
		return REC_T_FEATURES;
	if (strcmp(s, "skipped") == 0)
		return REC_T_SKIPPED;
	if (strcmp(s, "mixed") == 0)
		return TYPE_MIXED;
	prog_usage_error("unknown record type '%s'", s);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "dtype", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "len", required_argument, NULL, 'l' },
		{ "records", required_argument, NULL, 'n' },
		{ "no-trailer", no_argument, NULL, OPT_NO_TRAILER },
		{ "segments", required_argument, NULL, 's' },
		{ "type", required_argument, NULL, 't' },
		{ "zstd", required_argument, NULL, 'z' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	*o = (struct opts){ .n = 10, .len = 1000, .segments = 1,
			    .type = REC_T_AUDIO, .dtype = REC_S16,
			    .trailer = 1, .rate = 16000, .n_mels = 40 };
	while ((c = getopt_long(argc, argv, "d:hl:n:s:t:z:", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dtype = rec_dtype_parse(optarg);
			if (!o->dtype)
				prog_usage_error("unknown dtype '%s'", optarg);
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		case 'l':
			o->len = prog_arg_size("--len", optarg, 0,
					       1u << 27);
			break;
		case 'n':
			o->n = prog_arg_size("--records", optarg, 0,
					     UINT64_MAX >> 1);
			break;
		case OPT_NO_TRAILER:
			o->trailer = 0;
			break;
		case 's':
			o->segments = prog_arg_u64("--segments", optarg, 1,
						   1u << 20);
			break;
		case 't':
			o->type = parse_type(optarg);
			break;
		case 'z':
			o->level = (int)prog_arg_u64("--zstd", optarg, 0, 19);
			break;
		default:
			prog_usage_error("unknown option");
		}
	}
	if (optind != argc)
		prog_usage_error("no arguments expected");
}

/* Element i of a sine of f Hz, stored as dtype at p. */
static void put_sample(void *p, size_t i, int dtype, double v)
{
	int16_t s;
	float f = (float)v;
	uint16_t h;

	switch (dtype) {
	case REC_S16:
		s = (int16_t)lrint(v * 32767);
		memcpy((char *)p + 2 * i, &s, 2);
		break;
	case REC_F32:
		memcpy((char *)p + 4 * i, &f, 4);
		break;
	case REC_F16:
		h = half_from_f32(f);
		memcpy((char *)p + 2 * i, &h, 2);
		break;
	case REC_BF16:
		h = bf16_from_f32(f);
		memcpy((char *)p + 2 * i, &h, 2);
		break;
	}
}

static rec_header *make_header(const struct opts *o, int argc, char **argv)
{
	rec_header *h = rec_header_new();
	int err = h == NULL;

	err = err || rec_header_add(h, "producer", "rec-gen " MELPIPE_VERSION);
	err = err || rec_header_add_stage(h, "rec-gen", MELPIPE_VERSION, argc,
					  argv);
	err = err || rec_header_add(h, "kind", o->type == REC_T_FEATURES
				    ? "features" : "audio");
	err = err || rec_header_set_u64(h, "sample_rate", o->rate);
	err = err || rec_header_add(h, "dtype", rec_dtype_name(o->dtype));
	for (int l = 0; l < 3 && !err; l++)
		err = rec_header_add(h, "label",
				     (const char *[]){ "one", "two", "three" }
				     [l]);
	err = err || rec_header_set_u64(h, "clips", o->n);
	if (err)
		prog_die("unable to make the header: %s",
			 rec_strerror(REC_E_NOMEM));
	return h;
}

static int write_clip(rec_writer *w, const struct opts *o, uint64_t clip)
{
	char key[64];
	int type = o->type == TYPE_MIXED
		   ? (clip % 10 == 9 ? REC_T_SKIPPED : REC_T_AUDIO) : o->type;
	double freq = 100.0 * (double)(1 + clip % 10);

	snprintf(key, sizeof(key), "%s/clip%06llu.wav",
		 (const char *[]){ "one", "two", "three" }[clip % 3],
		 (unsigned long long)clip);
	for (uint64_t s = 0; s < o->segments; s++) {
		rec_item it = {
			.type = type, .clip = clip, .offset = s * o->len,
			.clip_samples = o->segments * o->len,
			.segment = (uint32_t)s, .label = (int32_t)(clip % 3),
			.sample_rate = o->rate, .split = (int)(clip % 4),
			.key = key, .key_len = strlen(key),
		};
		size_t n, esize;
		void *p;
		int err;

		if (type == REC_T_SKIPPED) {
			it.data = "not an audio file";
			it.data_len = strlen(it.data);
			return rec_write(w, &it);
		}
		it.dtype = o->dtype;
		it.dim0 = type == REC_T_AUDIO ? (uint32_t)o->len : o->n_mels;
		it.dim1 = type == REC_T_AUDIO ? 1 : (uint32_t)o->len;
		esize = rec_dtype_size(o->dtype);
		n = (size_t)it.dim0 * it.dim1;
		if ((err = rec_write_reserve(w, n * esize, &p)))
			return err;
		for (size_t i = 0; i < n; i++)
			put_sample(p, i, o->dtype,
				   0.5 * sin(2 * M_PI * freq *
					     (double)(s * o->len + i) /
					     o->rate));
		if ((err = rec_write_commit(w, &it)))
			return err;
	}
	return REC_OK;
}

int main(int argc, char **argv)
{
	struct opts o;
	rec_header *h;
	rec_writer *w = NULL;
	int err, status = EXIT_FAIL;

	prog_init("rec-gen");
	parse_args(argc, argv, &o);
	prog_refuse_tty(STDOUT_FILENO);
	h = make_header(&o, argc, argv);
	err = rec_writer_open(&w, STDOUT_FILENO, h, &(rec_writer_opts){
				      .zstd_level = o.level,
				      .name = "stdout" });
	for (uint64_t c = 0; c < o.n && !err; c++)
		err = write_clip(w, &o, c);
	if (!err)
		err = o.trailer ? rec_writer_finish(w) : rec_writer_flush(w);
	if (err)
		prog_err("%s", rec_writer_detail(w));
	else
		status = EXIT_OK;
	rec_writer_close(w);
	rec_header_free(h);
	return status;
}
