/*
 * recdump - print and verify a melpipe record stream.
 *
 * Reads a stream (stdin, or a file) and prints it as text: the header's
 * key/value pairs, one line per data record and the trailer. Every record
 * is checked as any stage would check it; the first fault is reported as
 * "recdump: NAME: record N at byte B: reason" and the exit status is 1.
 * A stream that is valid to its end gives exit status 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/half.h"
#include "../../lib/opt.h"
#include "../../lib/rec.h"
#include "../common/opts.h"
#include "../common/notstream.h"
#include "../common/prog.h"

enum mode { MODE_LIST, MODE_SUMMARY, MODE_QUIET };

struct opts {
	enum mode mode;
	int stats;
	uint64_t limit;         /* data records to read (source records
				   not counted); 0 = all */
	uint64_t max_data;
	const char *path;       /* NULL: stdin */
};

/* Totals for --summary. An item in pieces counts once in the totals
 * per type, split and label, as its first piece. */
struct totals {
	uint64_t by_type[REC_T_FWINDOWS + 1];
	uint64_t windows;       /* windows the windows records describe */
	uint64_t fwindows;      /* windows whose features the
				   features-windows records hold */
	uint64_t pieces;        /* records that are pieces of an item */
	uint64_t cut_short;     /* skipped records that end an item early */
	int open;               /* the record before was flagged more */
	uint64_t by_split[REC_SPLIT_TESTING + 1];
	uint64_t *by_label;     /* n_labels + 1 entries; the last: no label */
	size_t n_labels;
	uint64_t label_other;   /* label ids outside the table */
	uint64_t payload_bytes;
	uint64_t clips;         /* distinct clip indices */
	uint64_t last_clip;     /* records come in clip order */
};

enum { OPT_STATS = 256, OPT_MAX_RECORD };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... [FILE]\n"
"Print a melpipe record stream as text and verify it.\n"
"\n"
"Reads FILE, or standard input when FILE is absent or '-', checks every\n"
"record (checksums, lengths, fields, order, trailer counts) and prints the\n"
"header's key/value pairs, one line per data record and the trailer.\n"
"Records are numbered in stream order, the header being record 0, as in\n"
"the error messages of every melpipe program. A windows record (segment's\n"
"output, format version 2) shows its samples and the windows it describes:\n"
"win_len, win_hop, n_windows, and pad=yes when windows that run past the\n"
"samples are padded with zeros; --summary also counts the windows.\n"
"A piece of an item in several records (format version 3) shows\n"
"piece=more (the first), piece=more,cont (a middle one) or piece=cont\n"
"(the last); --summary counts such an item once in its totals, and the\n"
"pieces and the items cut short (ended by a skipped record) apart.\n"
"A source record (format version 4: the input file as wavcat found it,\n"
"before its clip's first data record) shows the clip's fields and its\n"
"pairs, source_rate=\"48000\" and so on; --summary counts them apart.\n"
"A features-windows record (format version 6: gpumel's features of a\n"
"windows record's windows, one after the other) shows dims (of each\n"
"window's features) and the window fields; --summary counts the windows.\n"
"\n"
"Options:\n"
"  -h, --help            show this help and exit\n"
"      --max-record SIZE\n"
"                        refuse payloads over SIZE bytes (K/M/G suffixes;\n"
"                        default 256M)\n"
"  -n, --limit N         stop after N data records (audio, features,\n"
"                        windows, features-windows or skipped; each\n"
"                        piece counts): the\n"
"                        source records among them are shown but not\n"
"                        counted, the rest is not read nor verified\n"
"  -q, --quiet           print nothing but errors: only verify\n"
"  -s, --summary         print the header and totals per type, split and\n"
"                        label instead of a line per record\n"
"      --stats           add min, max, mean and NaN/Inf counts of each\n"
"                        record's values (s16 as integers)\n"
"  -v, --verbose         report records, bytes and time on stderr\n"
"  -V, --version         print the version and exit\n"
"\n"
"Strings are printed with C escapes (\\n, \\t, \\\\, \\\", \\xNN for other\n"
"control bytes and invalid UTF-8); keys and reasons are in double quotes.\n"
"\n"
"A stream whose header announces a number of clips should have records\n"
"(skipped ones included) for clips 0 to that number - 1; a warning says\n"
"when it does not. -q silences it.\n"
"\n",
		prog_name);
	prog_usage_env(f, NULL);
	fputs(
"Exit status: 0 for a valid stream, 1 for an invalid one or a read error,\n"
"2 for a bad command line.\n"
"\n"
"Examples:\n"
"  wavcat DATA/ | recdump -s\n"
"\n"
"  recdump -q clips.rec && echo valid\n"
"\n"
"  gpumel < clips.rec | recdump --stats -n 10\n", f);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "limit", required_argument, NULL, 'n' },
		{ "max-record", required_argument, NULL, OPT_MAX_RECORD },
		{ "quiet", no_argument, NULL, 'q' },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "summary", no_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->max_data = REC_DEFAULT_MAX_DATA;
	while ((c = prog_getopt(argc, argv, "hn:qsvV", longopts)) != -1) {
		/* -q also picks the output mode: verify only; its
		 * verbosity is the shared one (-v after it still reports) */
		if (c == 'q')
			o->mode = MODE_QUIET;
		if (prog_common_opt(c, optarg, NULL, usage))
			continue;
		switch (c) {
		case 'n':
			o->limit = prog_arg_u64("--limit", optarg, 1,
						UINT64_MAX);
			break;
		case OPT_MAX_RECORD:
			o->max_data = prog_arg_size("--max-record", optarg, 1,
						    UINT32_MAX);
			break;
		case OPT_STATS:
			o->stats = 1;
			break;
		case 's':
			o->mode = MODE_SUMMARY;
			break;
		default: /* '?': prog_getopt has said what */
			prog_usage_hint();
		}
	}
	if (argc - optind > 1)
		prog_usage_error("one input at most (got %d)", argc - optind);
	if (optind < argc && strcmp(argv[optind], "-") != 0)
		o->path = argv[optind];
}

/* ------------------------------------------------------------------ */
/* Escaped strings */

/* Length of the valid UTF-8 sequence of 2..4 bytes at s, or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* No overlong forms, surrogates or code points past U+10FFFF. */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/* Prints n bytes of s so that a line stays a line: control bytes and
 * invalid UTF-8 as escapes, valid UTF-8 as it is. */
static void put_escaped(FILE *f, const char *str, size_t n, int quote)
{
	const unsigned char *s = (const unsigned char *)str;

	if (quote)
		putc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		size_t u;

		switch (c) {
		case '\n': fputs("\\n", f); continue;
		case '\t': fputs("\\t", f); continue;
		case '\r': fputs("\\r", f); continue;
		case '\\': fputs("\\\\", f); continue;
		case '"':
			fputs(quote ? "\\\"" : "\"", f);
			continue;
		}
		if (c >= 0x20 && c < 0x7f) {
			putc(c, f);
		} else if (c >= 0x80 && (u = utf8_len(s + i, n - i)) > 0) {
			fwrite(s + i, 1, u, f);
			i += u - 1;
		} else {
			fprintf(f, "\\x%02x", c);
		}
	}
	if (quote)
		putc('"', f);
}

/* ------------------------------------------------------------------ */
/* Printing */

static void print_header(const rec_header *h)
{
	size_t n = rec_header_len(h);

	for (size_t i = 0; i < n; i++) {
		const char *k, *v;

		rec_header_entry(h, i, &k, &v);
		printf("header %s=", k);
		put_escaped(stdout, v, strlen(v), 0);
		putchar('\n');
	}
}

static const char *label_name(const rec_header *h, int32_t label)
{
	if (label < 0)
		return NULL;
	return rec_header_get_nth(h, "label", (size_t)label);
}

/* Decodes element i of a payload of dtype to a double. */
static double element(const void *data, int dtype, size_t i)
{
	const unsigned char *p = data;
	int16_t s;
	uint16_t u;
	float f;

	switch (dtype) {
	case REC_S16:
		memcpy(&s, p + 2 * i, 2);
		return s;
	case REC_F32:
		memcpy(&f, p + 4 * i, 4);
		return f;
	case REC_F16:
		memcpy(&u, p + 2 * i, 2);
		return half_to_f32(u);
	case REC_BF16:
		memcpy(&u, p + 2 * i, 2);
		return bf16_to_f32(u);
	}
	return NAN;
}

/* min, max and mean of the finite values; counts of NaN and Inf. */
static void print_stats(const rec_item *it)
{
	size_t n = it->data_len / rec_dtype_size(it->dtype);
	double mn = INFINITY, mx = -INFINITY, sum = 0;
	uint64_t nan = 0, inf = 0, fin = 0;

	for (size_t i = 0; i < n; i++) {
		double v = element(it->data, it->dtype, i);

		if (isnan(v)) {
			nan++;
		} else if (isinf(v)) {
			inf++;
		} else {
			mn = v < mn ? v : mn;
			mx = v > mx ? v : mx;
			sum += v;
			fin++;
		}
	}
	if (fin)
		printf(" min=%.9g max=%.9g mean=%.9g", mn, mx,
		       sum / (double)fin);
	else
		printf(" min=none max=none mean=none");
	printf(" nan=%" PRIu64 " inf=%" PRIu64, nan, inf);
}

static const char *type_name(int type)
{
	switch (type) {
	case REC_T_AUDIO: return "audio";
	case REC_T_FEATURES: return "features";
	case REC_T_SKIPPED: return "skipped";
	case REC_T_WINDOWS: return "windows";
	case REC_T_SOURCE: return "source";
	case REC_T_FWINDOWS: return "features-windows";
	}
	return "unknown";
}

/* A source record: the clip's fields, then each of its pairs as
 * KEY="VALUE". */
static void print_source(const rec_header *h, const rec_item *it,
			 uint64_t index)
{
	const char *lname = label_name(h, it->label);
	const char *p = it->data, *end = p + it->data_len;

	printf("%" PRIu64 " source clip=%" PRIu64 " label=%" PRId32, index,
	       it->clip, it->label);
	if (lname) {
		putchar('(');
		put_escaped(stdout, lname, strlen(lname), 0);
		putchar(')');
	}
	printf(" split=%s key=", rec_split_name(it->split));
	put_escaped(stdout, it->key, it->key_len, 1);
	while (it->data_len && p < end) { /* pairs checked by the reader */
		const char *v = p + strlen(p) + 1;

		printf(" %s=", p);
		put_escaped(stdout, v, strlen(v), 1);
		p = v + strlen(v) + 1;
	}
	putchar('\n');
}

static void print_item(const rec_header *h, const rec_item *it,
		       uint64_t index, int stats)
{
	const char *lname = label_name(h, it->label);

	if (it->type == REC_T_SOURCE) {
		print_source(h, it, index);
		return;
	}
	printf("%" PRIu64 " %s clip=%" PRIu64, index, type_name(it->type),
	       it->clip);
	if (it->type != REC_T_SKIPPED)
		printf(" segment=%" PRIu32 " offset=%" PRIu64, it->segment,
		       it->offset);
	printf(" clip_samples=%" PRIu64 " rate=%" PRIu32 " label=%" PRId32,
	       it->clip_samples, it->sample_rate, it->label);
	if (lname) {
		putchar('(');
		put_escaped(stdout, lname, strlen(lname), 0);
		putchar(')');
	}
	printf(" split=%s", rec_split_name(it->split));
	if (it->type != REC_T_SKIPPED) {
		printf(" dtype=%s dims=%" PRIu32 "x%" PRIu32,
		       rec_dtype_name(it->dtype), it->dim0, it->dim1);
		if (it->type == REC_T_WINDOWS || it->type == REC_T_FWINDOWS)
			printf(" win_len=%" PRIu32 " win_hop=%" PRIu32
			       " n_windows=%" PRIu32 " pad=%s", it->win_len,
			       it->win_hop, it->n_windows,
			       it->win_flags & REC_WIN_PAD ? "yes" : "no");
		if (rec_item_is_piece(it))
			printf(" piece=%s%s%s",
			       it->flags & REC_ITEM_MORE ? "more" : "",
			       it->flags == (REC_ITEM_MORE | REC_ITEM_CONT)
			       ? "," : "",
			       it->flags & REC_ITEM_CONT ? "cont" : "");
		if (stats)
			print_stats(it);
	}
	printf(" key=");
	put_escaped(stdout, it->key, it->key_len, 1);
	if (it->type == REC_T_SKIPPED) {
		printf(" reason=");
		put_escaped(stdout, it->data, it->data_len, 1);
	}
	putchar('\n');
}

static void print_trailer(const rec_trailer *t)
{
	printf("trailer records=%" PRIu64 " items=%" PRIu64 " skipped=%"
	       PRIu64 " checksum=0x%08" PRIx32 "\n", t->n_records,
	       t->n_items, t->n_skipped, t->checksum);
}

/* ------------------------------------------------------------------ */
/* Summary */

static int totals_init(struct totals *t, const rec_header *h)
{
	memset(t, 0, sizeof(*t));
	t->n_labels = rec_header_count(h, "label");
	t->by_label = calloc(t->n_labels + 1, sizeof(*t->by_label));
	return t->by_label ? 0 : -1;
}

static void totals_add(struct totals *t, const rec_item *it)
{
	if (t->clips == 0 || it->clip != t->last_clip)
		t->clips++;
	t->last_clip = it->clip;
	if (it->type == REC_T_SOURCE) { /* not an item: counted apart */
		t->by_type[REC_T_SOURCE]++;
		return;
	}
	t->payload_bytes += it->data_len;
	t->pieces += rec_item_is_piece(it);
	t->cut_short += t->open && it->type == REC_T_SKIPPED;
	t->open = (it->flags & REC_ITEM_MORE) != 0;
	if (it->flags & REC_ITEM_CONT) /* counted with its first piece */
		return;
	t->by_type[it->type]++;
	if (it->type == REC_T_WINDOWS)
		t->windows += it->n_windows;
	if (it->type == REC_T_FWINDOWS)
		t->fwindows += it->n_windows;
	t->by_split[it->split]++;
	if (it->label < 0)
		t->by_label[t->n_labels]++;
	else if ((size_t)it->label < t->n_labels)
		t->by_label[it->label]++;
	else
		t->label_other++;
}

/* The windows lines appear only for streams that have windows records
 * (the features-windows lines only for those with features-windows),
 * the pieces lines only for streams with pieces, so that the summary of a
 * version 1 stream is what it always was. */
static void totals_print(const struct totals *t, const rec_header *h)
{
	for (int ty = REC_T_AUDIO; ty <= REC_T_SKIPPED; ty++)
		printf("type %s %" PRIu64 "\n", type_name(ty), t->by_type[ty]);
	if (t->by_type[REC_T_WINDOWS]) {
		printf("type windows %" PRIu64 "\n",
		       t->by_type[REC_T_WINDOWS]);
		printf("windows %" PRIu64 "\n", t->windows);
	}
	if (t->by_type[REC_T_FWINDOWS]) {
		printf("type features-windows %" PRIu64 "\n",
		       t->by_type[REC_T_FWINDOWS]);
		printf("feature_windows %" PRIu64 "\n", t->fwindows);
	}
	if (t->by_type[REC_T_SOURCE])
		printf("type source %" PRIu64 "\n", t->by_type[REC_T_SOURCE]);
	if (t->pieces) {
		printf("pieces %" PRIu64 "\n", t->pieces);
		printf("cut_short %" PRIu64 "\n", t->cut_short);
	}
	for (int s = 0; s <= REC_SPLIT_TESTING; s++)
		printf("split %s %" PRIu64 "\n", rec_split_name(s),
		       t->by_split[s]);
	for (size_t l = 0; l < t->n_labels; l++) {
		const char *name = rec_header_get_nth(h, "label", l);

		printf("label %zu ", l);
		put_escaped(stdout, name, strlen(name), 1);
		printf(" %" PRIu64 "\n", t->by_label[l]);
	}
	printf("label none %" PRIu64 "\n", t->by_label[t->n_labels]);
	if (t->label_other)
		printf("label unknown %" PRIu64 "\n", t->label_other);
	printf("clips %" PRIu64 "\n", t->clips);
	printf("payload_bytes %" PRIu64 "\n", t->payload_bytes);
}

/*
 * A stream accounts for every input: with a "clips" count in the header,
 * the records (skipped ones included) must cover clip indices 0..clips-1.
 * A shortfall is a producer's bug rather than a malformed stream, so it
 * is a warning, not a failure.
 */
static void check_clips(const struct totals *t, const rec_header *h,
			const char *name)
{
	const char *v = rec_header_get(h, "clips");
	const char *sh = rec_header_get(h, "shard");
	uint64_t want, total, k = 0, n = 1, last;
	int end = 0;

	if (v == NULL || opt_parse_u64(v, 0, UINT64_MAX, 0, &total) != 0)
		return;
	/* a shard K/N holds the clips whose index is K modulo N
	 * (formats/record.md, Shard streams) */
	if (sh != NULL && (sscanf(sh, "%" SCNu64 "/%" SCNu64 "%n", &k, &n,
				  &end) != 2 || sh[end] != '\0' || n == 0 ||
			   k >= n)) {
		prog_warn("%s: the header's shard '%s' is not K/N with K < N",
			  name, sh);
		return;
	}
	want = total > k ? (total - k + n - 1) / n : 0;
	last = want ? k + (want - 1) * n : 0;
	if (t->clips == want && (want == 0 || t->last_clip == last))
		return;
	if (sh != NULL)
		prog_warn("%s: shard %s of %" PRIu64 " %s should hold %"
			  PRIu64 ", the records cover %" PRIu64 " (highest "
			  "index %" PRIu64 ")", name, sh, total,
			  prog_plural(total, "clip", "clips"), want,
			  t->clips, t->clips ? t->last_clip : 0);
	else
		prog_warn("%s: the header announces %" PRIu64 " %s, the "
			  "records cover %" PRIu64 " (highest index %" PRIu64
			  ")", name, total, prog_plural(total, "clip", "clips"),
			  t->clips, t->clips ? t->last_clip : 0);
}

/* ------------------------------------------------------------------ */

/* Output errors (a closed pipe, a full disk) end the run. */
static void check_stdout(void)
{
	if (ferror(stdout)) {
		prog_write_error(NULL, errno);
		exit(EXIT_FAIL);
	}
}


/* Reads and prints the stream; returns the exit status. */
static int dump(int fd, const char *name, const struct opts *o)
{
	rec_reader_opts ro = { .max_data = o->max_data, .name = name,
			       .read_ahead = 1, .shm = prog_shm() };
	rec_reader *r = NULL;
	struct totals t = { 0 };
	const rec_header *h;
	rec_item it;
	uint64_t n_data = 0;    /* for --limit */
	double t0 = prog_now();
	int err, status = EXIT_FAIL;

	err = rec_reader_open(&r, fd, &ro);
	if (err) {
		prog_open_failed(r, err, fd);
		goto out;
	}
	h = rec_reader_header(r);
	if (o->mode != MODE_QUIET)
		print_header(h);
	if (totals_init(&t, h))
		prog_die("out of memory");
	while (o->limit == 0 || n_data < o->limit) {
		err = rec_read(r, &it);
		if (err)
			break;
		n_data += it.type != REC_T_SOURCE;
		if (o->mode == MODE_LIST)
			print_item(h, &it, rec_reader_count(r), o->stats);
		totals_add(&t, &it);
		check_stdout();
	}
	if (o->mode == MODE_SUMMARY)
		totals_print(&t, h);
	if (err == REC_END) {
		if (o->mode != MODE_QUIET)
			print_trailer(rec_reader_trailer(r));
		check_clips(&t, h, name);
		status = EXIT_OK;
	} else if (err == REC_OK) {
		if (o->mode != MODE_QUIET)
			printf("stopped after %" PRIu64 " data record%s "
			       "(--limit)\n", n_data, n_data == 1 ? "" : "s");
		status = EXIT_OK;
	} else {
		prog_err("%s", rec_reader_detail(r));
	}
	prog_info("%" PRIu64 " %s, %" PRIu64 " %s in %.3f s",
		  rec_reader_count(r),
		  prog_plural(rec_reader_count(r), "record", "records"),
		  rec_reader_inline_bytes(r),
		  prog_plural(rec_reader_inline_bytes(r), "byte", "bytes"),
		  prog_now() - t0);
	prog_report_shm_in(r);
out:
	if (fflush(stdout) != 0 || ferror(stdout)) {
		prog_write_error(NULL, errno);
		exit(EXIT_FAIL);
	}
	free(t.by_label);
	rec_reader_close(r);
	return status;
}

int main(int argc, char **argv)
{
	static char outbuf[1 << 16];
	struct opts o;
	int fd = STDIN_FILENO, status;
	const char *name = "stdin";

	prog_init("recdump");
	parse_args(argc, argv, &o);
	if (o.path) {
		fd = open(o.path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			prog_die("unable to open '%s': %s", o.path,
				 strerror(errno));
		name = o.path;
	}
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	status = dump(fd, name, &o);
	if (fd != STDIN_FILENO)
		close(fd);
	return status;
}
