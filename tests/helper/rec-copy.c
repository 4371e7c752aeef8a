/*
 * rec-copy - test helper: read a record stream on stdin and write the
 * same stream to stdout through lib/rec's writer (same header pairs,
 * same records, a new trailer). Without options an uncompressed input
 * comes out byte for byte identical, which cross-checks the writer
 * against any other implementation of the format.
 *
 * With --pieces N it re-cuts every audio item of more than N sample
 * frames, and every features item of more than N frames, into pieces of
 * N (formats/record.md, Items in pieces), so that the stages can be
 * tested on items in pieces without a long input.
 *
 * With --shard K/N it keeps only the clips whose index is K modulo N and
 * marks the header as that shard (formats/record.md, Shard streams), as
 * wavcat --shard would have written it, so that recmerge can be tested
 * on shards of any stream; --job gives the job's fingerprint where the
 * input has none.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "../../tools/common/prog.h"

struct opts {
	int level, reserve, trailer;
	uint64_t buffer, max_data, limit;
	uint64_t pieces;     /* --pieces: 0 = copy items as they are */
	uint64_t hop;        /* --hop: 0 = the header's hop_length */
	int unknown_length;  /* --unknown-length: clip_samples 0 in more */
	int empty_last;      /* --empty-last: an empty last piece */
	uint32_t shard_k, shard_n; /* --shard K/N: 0/0 = every clip */
	const char *job;     /* --job: NULL = the input's */
	int expand;          /* --expand: a record per window */
};

/* What re-cutting needs beside the options. */
struct cutter {
	const struct opts *o;
	uint64_t hop;        /* the header's hop_length, for features */
	void *buf;           /* a features piece's columns */
	size_t cap;
	void *pad;           /* --expand: a padded window */
	size_t pad_cap;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... < IN.rec > OUT.rec\n"
"Copy a record stream through lib/rec's reader and writer (test helper).\n"
"\n"
"  -b, --buffer SIZE      writer buffer size (default 1M)\n"
"      --expand           write each window of a windows or\n"
"                         features-windows record as the audio or\n"
"                         features record it stands for (rec_window)\n"
"      --empty-last       with --pieces: end each item in pieces with an\n"
"                         empty last piece\n"
"  -h, --help             show this help and exit\n"
"      --hop N            with --pieces: the hop of features records\n"
"                         (default the header's hop_length)\n"
"      --job HEX          with --shard: the header's job (40 lowercase hex\n"
"                         digits); needed when the input has none\n"
"      --max-record SIZE  reader payload cap (default 256M)\n"
"  -n, --limit N          copy the first N data records only (audio,\n"
"                         windows, features, skipped; after --shard's\n"
"                         choice): the source records before them are\n"
"                         copied, not counted\n"
"      --no-trailer       end without a trailer, as a failed stage does\n"
"  -p, --pieces N         cut audio items of more than N sample frames and\n"
"                         features items of more than N frames into\n"
"                         pieces of N (features need the header's\n"
"                         hop_length); items already in pieces, windows\n"
"                         and skipped records are copied as they are\n"
"  -r, --reserve          write payloads with rec_write_reserve/commit\n"
"      --shard K/N        keep only the clips whose index is K modulo N\n"
"                         and set the header's shard to K/N\n"
"      --unknown-length   with --pieces: clip_samples 0 in the pieces\n"
"                         flagged more, as a writer that learns the\n"
"                         length at the end gives it\n"
"  -z, --zstd LEVEL       compress payloads (1..19; default 0: raw)\n",
		prog_name);
}

enum { OPT_MAX_RECORD = 256, OPT_NO_TRAILER, OPT_UNKNOWN_LENGTH,
       OPT_EMPTY_LAST, OPT_HOP, OPT_SHARD, OPT_JOB, OPT_EXPAND };

/* --shard K/N: 0 <= K < N. */
static void parse_shard(const char *arg, struct opts *o)
{
	unsigned long long k, n;
	int used = 0;

	if (sscanf(arg, "%llu/%llu%n", &k, &n, &used) != 2 ||
	    arg[used] || n == 0 || n > UINT32_MAX || k >= n)
		prog_usage_error("invalid value '%s' for --shard: expected "
				 "K/N, 0 <= K < N", arg);
	o->shard_k = (uint32_t)k;
	o->shard_n = (uint32_t)n;
}

/* --job: a SHA-1 in hex, as the spec writes it. */
static void parse_job(const char *arg, struct opts *o)
{
	if (strlen(arg) != 40 ||
	    strspn(arg, "0123456789abcdef") != 40)
		prog_usage_error("invalid value '%s' for --job: expected 40 "
				 "lowercase hex digits", arg);
	o->job = arg;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "buffer", required_argument, NULL, 'b' },
		{ "empty-last", no_argument, NULL, OPT_EMPTY_LAST },
		{ "expand", no_argument, NULL, OPT_EXPAND },
		{ "help", no_argument, NULL, 'h' },
		{ "hop", required_argument, NULL, OPT_HOP },
		{ "job", required_argument, NULL, OPT_JOB },
		{ "limit", required_argument, NULL, 'n' },
		{ "max-record", required_argument, NULL, OPT_MAX_RECORD },
		{ "no-trailer", no_argument, NULL, OPT_NO_TRAILER },
		{ "pieces", required_argument, NULL, 'p' },
		{ "reserve", no_argument, NULL, 'r' },
		{ "shard", required_argument, NULL, OPT_SHARD },
		{ "unknown-length", no_argument, NULL, OPT_UNKNOWN_LENGTH },
		{ "zstd", required_argument, NULL, 'z' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->trailer = 1;
	while ((c = getopt_long(argc, argv, "b:hn:p:rz:", longopts,
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
		case 'p':
			o->pieces = prog_arg_u64("--pieces", optarg, 1,
						 UINT32_MAX);
			break;
		case 'r':
			o->reserve = 1;
			break;
		case OPT_UNKNOWN_LENGTH:
			o->unknown_length = 1;
			break;
		case OPT_HOP:
			o->hop = prog_arg_u64("--hop", optarg, 1, UINT32_MAX);
			break;
		case OPT_EMPTY_LAST:
			o->empty_last = 1;
			break;
		case OPT_SHARD:
			parse_shard(optarg, o);
			break;
		case OPT_JOB:
			parse_job(optarg, o);
			break;
		case OPT_EXPAND:
			o->expand = 1;
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
	if ((o->unknown_length || o->empty_last || o->hop) && !o->pieces)
		prog_usage_error("--unknown-length, --empty-last and --hop go "
				 "with --pieces");
	if (o->job && !o->shard_n)
		prog_usage_error("--job goes with --shard");
}

/* The output header: the input's, marked as shard K/N with --shard. NULL
 * after a message. */
static rec_header *output_header(const rec_header *in, const struct opts *o)
{
	rec_header *h = rec_header_dup(in);
	char v[32];

	if (!h || !o->shard_n)
		return h;
	if (!o->job && !rec_header_get(in, "job")) {
		prog_err("--shard: the input has no job: give --job");
		rec_header_free(h);
		return NULL;
	}
	snprintf(v, sizeof(v), "%" PRIu32 "/%" PRIu32, o->shard_k,
		 o->shard_n);
	if (rec_header_set(h, "shard", v) ||
	    (o->job && rec_header_set(h, "job", o->job))) {
		prog_err("out of memory");
		rec_header_free(h);
		return NULL;
	}
	return h;
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

/* Frames (audio: sample frames; features: columns) of an item. */
static uint64_t item_frames(const rec_item *it)
{
	return it->type == REC_T_FEATURES ? it->dim1 : it->dim0;
}

/* Writes frames [f0, f1) of the one-record item it as a piece with the
 * given flags. */
static int write_piece(rec_writer *w, struct cutter *c, const rec_item *it,
		       uint64_t f0, uint64_t f1, uint32_t flags)
{
	size_t es = rec_dtype_size(it->dtype);
	rec_item p = *it;
	uint64_t n = f1 - f0;

	p.flags = flags;
	if (c->o->unknown_length && (flags & REC_ITEM_MORE))
		p.clip_samples = 0;
	if (it->type == REC_T_AUDIO) {
		p.dim0 = (uint32_t)n;
		p.offset = it->offset + f0;
		p.data = (const char *)it->data + f0 * it->dim1 * es;
		p.data_len = n * it->dim1 * es;
		return copy_item(w, &p, c->o->reserve);
	}
	/* features: gather columns f0..f1 of each mel row */
	size_t need = (size_t)n * it->dim0 * es;
	if (need > c->cap) {
		void *nb = realloc(c->buf, need);
		if (nb == NULL)
			return REC_E_NOMEM;
		c->buf = nb;
		c->cap = need;
	}
	for (uint32_t m = 0; m < it->dim0; m++)
		memcpy((char *)c->buf + (size_t)m * n * es,
		       (const char *)it->data +
		       ((size_t)m * it->dim1 + f0) * es, (size_t)n * es);
	p.dim1 = (uint32_t)n;
	p.offset = it->offset + f0 * c->hop;
	p.data = c->buf;
	p.data_len = need;
	return copy_item(w, &p, c->o->reserve);
}

/* Copies it, cut into pieces of c->o->pieces frames when it is a one-
 * record audio or features item longer than that. */
static int put_item(rec_writer *w, struct cutter *c, const rec_item *it)
{
	uint64_t n = item_frames(it), step = c->o->pieces, f;
	int err;

	if (!step || rec_item_is_piece(it) || n <= step ||
	    (it->type != REC_T_AUDIO && it->type != REC_T_FEATURES))
		return copy_item(w, it, c->o->reserve);
	for (f = 0; f < n; f += step) {
		uint64_t e = f + step < n ? f + step : n;
		uint32_t flags = (f ? REC_ITEM_CONT : 0) |
			(e < n || c->o->empty_last ? REC_ITEM_MORE : 0);

		if ((err = write_piece(w, c, it, f, e, flags)))
			return err;
	}
	if (c->o->empty_last)
		return write_piece(w, c, it, n, n, REC_ITEM_CONT);
	return REC_OK;
}

/* rec_each_window()'s callback for --expand. */
static int expand_one(const rec_item *win, void *arg)
{
	return rec_write(arg, win);
}

int main(int argc, char **argv)
{
	struct opts o;
	rec_reader *r = NULL;
	rec_writer *w = NULL;
	rec_header *out_h = NULL;
	rec_item it;
	struct cutter cut = { .o = &o };
	uint64_t n_data = 0; /* data records copied, for --limit */
	int err, status = EXIT_FAIL;

	prog_init("rec-copy");
	parse_args(argc, argv, &o);
	cut.hop = o.hop;
	prog_refuse_tty(STDOUT_FILENO);
	err = rec_reader_open(&r, STDIN_FILENO, &(rec_reader_opts){
				      .max_data = o.max_data,
				      .name = "stdin" });
	if (err) {
		prog_err("%s", rec_reader_detail(r));
		goto out;
	}
	out_h = output_header(rec_reader_header(r), &o);
	if (!out_h)
		goto out;
	err = rec_writer_open(&w, STDOUT_FILENO, out_h,
			      &(rec_writer_opts){ .zstd_level = o.level,
						  .buffer_size = o.buffer,
						  .name = "stdout" });
	if (err) {
		prog_err("%s", rec_writer_detail(w));
		goto out;
	}
	while (o.limit == 0 || n_data < o.limit - 1) {
		err = rec_read(r, &it);
		if (err)
			break;
		if (o.shard_n && it.clip % o.shard_n != o.shard_k)
			continue; /* (all of a clip's records go together) */
		if (it.type == REC_T_FEATURES && o.pieces && !cut.hop) {
			const char *h = rec_header_get(rec_reader_header(r),
						       "hop_length");
			cut.hop = h ? strtoull(h, NULL, 10) : 0;
			if (cut.hop == 0) {
				prog_err("--pieces: features records, but "
					 "the header gives no hop_length "
					 "(give --hop)");
				goto out;
			}
		}
		if (o.expand && (it.type == REC_T_WINDOWS ||
				 it.type == REC_T_FWINDOWS))
			err = rec_each_window(&it, &cut.pad, &cut.pad_cap,
					      expand_one, w);
		else
			err = put_item(w, &cut, &it);
		if (err) {
			prog_err("%s", err == REC_E_NOMEM ? "out of memory" :
				 rec_writer_detail(w));
			goto out;
		}
		n_data += it.type != REC_T_SOURCE;
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
	free(cut.buf);
	free(cut.pad);
	rec_header_free(out_h);
	rec_writer_close(w);
	rec_reader_close(r);
	return status;
}
