/*
 * rec-copy - test helper: read a record stream on stdin and write the
 * same stream to stdout through lib/rec's writer (same header pairs,
 * same records, a new trailer). Without options an uncompressed input
 * comes out byte for byte identical, which cross-checks the writer
 * against any other implementation of the format.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "../../tools/common/prog.h"

struct opts {
	int level, reserve, trailer;
	uint64_t buffer, max_data, limit;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... < IN.rec > OUT.rec\n"
"Copy a record stream through lib/rec's reader and writer (test helper).\n"
"\n"
"  -b, --buffer SIZE      writer buffer size (default 1M)\n"
"  -h, --help             show this help and exit\n"
"      --max-record SIZE  reader payload cap (default 256M)\n"
"  -n, --limit N          copy the first N data records only\n"
"      --no-trailer       end without a trailer, as a failed stage does\n"
"  -r, --reserve          write payloads with rec_write_reserve/commit\n"
"  -z, --zstd LEVEL       compress payloads (1..19; default 0: raw)\n",
		prog_name);
}

enum { OPT_MAX_RECORD = 256, OPT_NO_TRAILER };

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "buffer", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ "limit", required_argument, NULL, 'n' },
		{ "max-record", required_argument, NULL, OPT_MAX_RECORD },
		{ "no-trailer", no_argument, NULL, OPT_NO_TRAILER },
		{ "reserve", no_argument, NULL, 'r' },
		{ "zstd", required_argument, NULL, 'z' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->trailer = 1;
	while ((c = getopt_long(argc, argv, "b:hn:rz:", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'b':
			o->buffer = prog_arg_size("--buffer", optarg, 1,
						  1u << 30);
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		case 'n':
			o->limit = prog_arg_u64("--limit", optarg, 0,
						UINT64_MAX);
			o->limit++; /* 0 stands for no limit */
			break;
		case OPT_MAX_RECORD:
			o->max_data = prog_arg_size("--max-record", optarg, 1,
						    UINT32_MAX);
			break;
		case OPT_NO_TRAILER:
			o->trailer = 0;
			break;
		case 'r':
			o->reserve = 1;
			break;
		case 'z':
			o->level = (int)prog_arg_u64("--zstd", optarg, 0, 19);
			break;
		default:
			prog_usage_error("unknown option");
		}
	}
	if (optind != argc)
		prog_usage_error("no file arguments: use stdin and stdout");
}

static int copy_item(rec_writer *w, const rec_item *it, int reserve)
{
	void *p;
	int err;

	if (!reserve)
		return rec_write(w, it);
	err = rec_write_reserve(w, it->data_len, &p);
	if (err)
		return err;
	if (it->data_len)
		memcpy(p, it->data, it->data_len);
	return rec_write_commit(w, it);
}

int main(int argc, char **argv)
{
	struct opts o;
	rec_reader *r = NULL;
	rec_writer *w = NULL;
	rec_item it;
	int err, status = EXIT_FAIL;

	prog_init("rec-copy");
	parse_args(argc, argv, &o);
	prog_refuse_tty(STDOUT_FILENO);
	err = rec_reader_open(&r, STDIN_FILENO, &(rec_reader_opts){
				      .max_data = o.max_data,
				      .name = "stdin" });
	if (err) {
		prog_err("%s", rec_reader_detail(r));
		goto out;
	}
	err = rec_writer_open(&w, STDOUT_FILENO, rec_reader_header(r),
			      &(rec_writer_opts){ .zstd_level = o.level,
						  .buffer_size = o.buffer,
						  .name = "stdout" });
	if (err) {
		prog_err("%s", rec_writer_detail(w));
		goto out;
	}
	while (o.limit == 0 || rec_reader_count(r) < o.limit - 1) {
		err = rec_read(r, &it);
		if (err)
			break;
		if ((err = copy_item(w, &it, o.reserve))) {
			prog_err("%s", rec_writer_detail(w));
			goto out;
		}
	}
	if (err < 0) {
		prog_err("%s", rec_reader_detail(r));
		rec_writer_flush(w);
		goto out;
	}
	err = o.trailer ? rec_writer_finish(w) : rec_writer_flush(w);
	if (err) {
		prog_err("%s", rec_writer_detail(w));
		goto out;
	}
	status = EXIT_OK;
out:
	rec_writer_close(w);
	rec_reader_close(r);
	return status;
}
