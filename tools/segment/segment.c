/*
 * segment - cut every audio record of a melpipe stream into fixed-length
 * windows.
 *
 * Reads an audio stream (wavcat's output, or segment's own), writes an
 * audio stream whose records are windows of --len samples taken every
 * --hop samples. Each window keeps its clip's key, clip index, label,
 * split, sample rate and clip length; its offset is the first sample of
 * the window in the clip and its segment index counts the clip's windows
 * from 0, so a second segment stage (two-stage segmentation) numbers its
 * windows within the clip across all the first stage's windows of it.
 *
 * A clip that yields no window (shorter than --len with --last drop, or
 * empty) is not dropped silently: it is warned about, counted, and passed
 * on as a skipped record, so the dataset lists it. Skipped records of the
 * input pass through unchanged but for their segment index, the clip's
 * next as for any record written here: 0 for a clip skipped whole, and
 * after this stage's windows for the skipped record that a first stage
 * put after the windows of a clip cut short.
 *
 * By default the windows are described, not copied: each audio record
 * leaves as one windows record (formats/record.md, format version 2)
 * holding its samples once and the windows' length, hop and count, so the
 * stream is no bigger than the input and has one record per clip where
 * copying would have one per window (80 a clip in the 10-second job). The
 * stage that computes features frames the windows itself. --copy writes
 * one audio record per window instead, for readers that want them so.
 *
 * A windows record in the input (a second segment stage) is cut window by
 * window: each of its windows is a parent record here, of the clip's
 * samples alone: the zeros the first stage padded its last window with
 * past the clip's end are no audio, so that no window of padding alone
 * becomes a labelled example and --last sees where the audio ends
 * (real_samples()).
 *
 * An audio item in pieces (format version 3) is cut as the clip in one
 * record would be, in pieces.c, keeping about two windows' samples
 * whatever the clip's length; its windows leave as records that are not
 * pieces. A skipped record that ends an item cut short follows its last
 * windows, with the segment index after them.
 *
 * Samples are written straight from the reader's buffer into the
 * writer's (one copy); a padded window is built in the writer's buffer.
 * Nothing is allocated per record.
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "../common/opts.h"
#include "../common/notstream.h"
#include "../common/prog.h"
#include "segment.h"

#define MAX_WINDOW (1u << 30) /* samples; the payload cap bites first */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s --len N [OPTIONS] [FILE]\n"
"Cut every audio record of a melpipe stream into windows of N samples.\n"
"\n"
"Reads the stream from FILE (or standard input, also for '-') and writes an\n"
"audio stream of its windows to standard output. Windows start at samples\n"
"0, HOP, 2*HOP, ... of every record; a window's offset is its first sample\n"
"in the clip and its segment index counts the clip's windows from 0. Two\n"
"segment stages in a row give two-stage segmentation: the second numbers\n"
"its windows within the clip across the first's windows (which may\n"
"overlap: offsets then go back where a parent window starts).\n"
"\n"
"The zeros a first stage pads a window with past the clip's end are no\n"
"audio: the second stage cuts each of its windows as a record of the\n"
"clip's samples alone (those before the clip's end, or the end of a\n"
"padded windows record's samples), and --last applies there. So no window\n"
"starts in the padding; one that runs into it is padded (and counted as\n"
"padded) with pad, left out with drop, kept with cover only when it holds\n"
"samples the windows before lack; and a first-stage window whose samples\n"
"give no window is reported as any record that gives none (one with no\n"
"sample of the clip, which segment never writes, gives nothing).\n"
"\n"
"The windows are described, not copied: every record leaves as one windows\n"
"record that holds its samples once with the windows' length, hop and\n"
"count (record format version 2), and gpumel frames the windows itself.\n"
"--copy writes one audio record per window instead (format version 1).\n"
"\n"
"The last window of a record is partial when it would run past the end:\n"
"with --last pad (the default) it is padded with zeros to N samples, so\n"
"no sample at the end is lost and a record shorter than N gives one\n"
"padded window; with --last drop it is left out; with --last cover it is\n"
"padded only when the windows before leave samples at the end uncovered,\n"
"which gives the fewest windows that hold every sample. A record that\n"
"gives no window at all (shorter than N with drop, or empty) is reported\n"
"and passed on as a skipped record, so the dataset lists it; skipped\n"
"records of the input pass through, numbered after the clip's windows.\n"
"\n"
"An audio item in pieces (record format version 3) is cut as one clip:\n"
"the windows its samples give in one record, written as the pieces come.\n"
"\n"
"So a record of S samples gives floor((S - N) / HOP) + 1 windows that fit\n"
"(none when S < N), and with pad one more when the next start is below S,\n"
"even when all its samples lie in the windows before: 512 samples with\n"
"--len 512 --hop 256 give 2 windows, 40960 give 160. That is the count of\n"
"tf.signal.frame(pad_end=True), ceil(S / HOP), whenever HOP >= N; with more\n"
"overlap tf.signal.frame may give more, starting a window at every\n"
"multiple of HOP below S (9152 samples, --len 512 --hop 180: 50 here, 51\n"
"there). --last drop gives the count of pad_end=False; --last cover the\n"
"pad count less the window whose samples all lie in the windows before\n"
"(512 samples with --len 512 --hop 256: 1 window; 40960: 159).\n"
"\n"
"Options:\n"
"      --copy         one audio record per window, samples copied\n"
"      --hop=N        samples from one window's start to the next\n"
"                     (default: the window length; less overlaps windows)\n"
"      --last=MODE    pad, drop or cover: the last, partial window\n"
"                     (default: pad; see above)\n"
"      --len=N        window length in samples (required)\n"
"  -o, --output=FILE  write the stream to FILE instead of standard output\n"
"  -q, --quiet        no warnings, no summary line\n"
"  -v, --verbose      report records, bytes and time spent at the end\n"
"  -h, --help         show this help and exit\n"
"  -V, --version      show the version and exit\n"
"\n",
		prog_name);
	prog_usage_env(f, NULL);
	fputs(
"Exit status: 0 done (clips too short were reported), 1 failure (bad\n"
"input stream, write error), 2 usage error.\n"
"\n"
"Examples:\n"
"  wavcat --rate 16000 DATA/ | segment --len 16000 --hop 8000 |\n"
"  gpumel --n-mels 40 | h5pack -o out.h5\n", f);
}

static void parse_args(int argc, char **argv, struct options *o)
{
	enum { OPT_COPY = 256, OPT_HOP, OPT_LAST, OPT_LEN };
	static const struct option longopts[] = {
		{ "copy", no_argument, NULL, OPT_COPY },
		{ "help", no_argument, NULL, 'h' },
		{ "hop", required_argument, NULL, OPT_HOP },
		{ "last", required_argument, NULL, OPT_LAST },
		{ "len", required_argument, NULL, OPT_LEN },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = prog_getopt(argc, argv, "ho:qVv", longopts)) != -1) {
		if (prog_common_opt(c, optarg, &o->co, usage))
			continue;
		switch (c) {
		case OPT_COPY:
			o->copy = 1;
			break;
		case OPT_HOP:
			o->hop = (uint32_t)prog_arg_u64("--hop", optarg, 1,
							MAX_WINDOW);
			break;
		case OPT_LAST:
			if (!strcmp(optarg, "pad"))
				o->last = LAST_PAD;
			else if (!strcmp(optarg, "drop"))
				o->last = LAST_DROP;
			else if (!strcmp(optarg, "cover"))
				o->last = LAST_COVER;
			else
				prog_usage_error("invalid value '%s' for "
						 "--last: expected pad, drop "
						 "or cover", optarg);
			break;
		case OPT_LEN:
			o->len = (uint32_t)prog_arg_u64("--len", optarg, 1,
							MAX_WINDOW);
			break;
		default: /* '?': prog_getopt has said what */
			prog_usage_hint();
		}
	}
	if (!o->len)
		prog_usage_error("--len is required");
	if (!o->hop)
		o->hop = o->len;
	if (argc - optind > 1)
		prog_usage_error("too many arguments: one input at most");
	if (optind < argc && strcmp(argv[optind], "-"))
		o->input = argv[optind];
}

/* The output header: the input's pairs, our window parameters, our
 * producer and provenance entry. NULL when out of memory. */
static rec_header *output_header(const rec_header *in,
				 const struct options *o, int argc,
				 char **argv)
{
	rec_header *h = rec_header_dup(in);

	if (!h)
		return NULL;
	if (rec_header_set(h, "producer", "segment " MELPIPE_VERSION) ||
	    rec_header_set_u64(h, "segment_len", o->len) ||
	    rec_header_set_u64(h, "segment_hop", o->hop) ||
	    rec_header_set(h, "segment_last",
			   o->last == LAST_PAD ? "pad" :
			   o->last == LAST_COVER ? "cover" : "drop") ||
	    rec_header_add_stage(h, "segment", MELPIPE_VERSION, argc,
				 argv)) {
		rec_header_free(h);
		return NULL;
	}
	return h;
}

/* Number of windows of a record of n samples: the full windows, plus with
 * pad the partial one that starts before the end, and with cover only when
 * the full windows leave samples at the end uncovered. (With hop > len a
 * trailing gap shorter than hop gives no window, like the gaps between.) */
uint64_t window_count(uint64_t n, const struct options *o)
{
	uint64_t full = n >= o->len ? (n - o->len) / o->hop + 1 : 0;

	if (o->last == LAST_PAD && full * o->hop < n)
		full++;
	else if (o->last == LAST_COVER && full * o->hop < n &&
		 (full == 0 || (full - 1) * o->hop + o->len < n))
		full++;
	return full;
}

uint32_t clip_next_segment(struct clip_state *cs, uint64_t clip)
{
	if (!cs->have || cs->clip != clip) {
		cs->have = 1;
		cs->clip = clip;
		cs->next_segment = 0;
	}
	return cs->next_segment;
}

/* -o FILE (NULL: standard output), for write_failed(), which the
 * cutting calls deep down with the writer alone. */
static const char *out_path;

int write_failed(rec_writer *w, const char *what)
{
	if (!rec_writer_detail(w)[0]) { /* out of memory */
		prog_err("%s", what);
		return -1;
	}
	return prog_write_failed(out_path, w, 0);
}

/* Writes the window of in that starts at sample start, padded with zeros
 * when the record ends before it does. */
static int write_window(struct cut_ctx *c, const rec_item *in,
			uint64_t start, uint32_t segment)
{
	size_t frame = rec_dtype_size(in->dtype) * in->dim1;
	uint64_t have = in->dim0 - start;
	uint32_t len = c->o->len;
	rec_item out = *in;
	void *p;
	int err;

	out.offset = in->offset + start;
	out.segment = segment;
	out.dim0 = len;
	out.data = (const char *)in->data + start * frame;
	out.data_len = (size_t)len * frame;
	if (have >= len)
		return rec_write(c->w, &out);
	err = rec_write_reserve(c->w, out.data_len, &p);
	if (err)
		return err;
	memcpy(p, out.data, have * frame);
	memset((char *)p + have * frame, 0, out.data_len - have * frame);
	c->st.padded++;
	return rec_write_commit(c->w, &out);
}

/* An item of n samples that gives no window leaves as a skipped record
 * naming why. */
int write_too_short(struct cut_ctx *c, const rec_item *in, uint64_t n,
		    uint32_t segment)
{
	char reason[96];
	rec_item sk = *in;
	int err;

	snprintf(reason, sizeof(reason),
		 "shorter than one window (%" PRIu64 " %s < %" PRIu32 ")",
		 n, prog_plural(n, "sample", "samples"), c->o->len);
	prog_warn("'%.*s': %s, skipped", (int)in->key_len, in->key, reason);
	sk.type = REC_T_SKIPPED;
	sk.flags = 0;
	sk.segment = segment; /* keeps the clip's segment order */
	sk.dtype = 0;
	sk.dim0 = sk.dim1 = 0;
	sk.data = reason;
	sk.data_len = strlen(reason);
	c->st.too_short++;
	err = rec_write(c->w, &sk);
	return err ? write_failed(c->w, rec_strerror(err)) : 0;
}

/* Writes the n windows of in as one windows record, from segment index
 * segment: the samples the windows cover, once. data_crc: the CRC32C of
 * in's payload when the reader knows it (else NULL), so that a payload
 * written on whole needs no pass to checksum it again. */
static int describe_windows(struct cut_ctx *c, const rec_item *in,
			    uint64_t n, uint32_t segment,
			    const uint32_t *data_crc)
{
	const struct options *o = c->o;
	uint64_t end = (n - 1) * o->hop + o->len;
	rec_item out = *in;

	out.type = REC_T_WINDOWS;
	out.segment = segment;
	out.win_len = o->len;
	out.win_hop = o->hop;
	out.n_windows = (uint32_t)n;
	out.win_flags = 0;
	if (end > in->dim0) {
		out.win_flags = REC_WIN_PAD;
		c->st.padded++;
	} else {
		out.dim0 = (uint32_t)end; /* samples no window covers stay */
	}
	out.data_len = (size_t)out.dim0 * rec_dtype_size(in->dtype) *
		       in->dim1;
	if (data_crc && out.data_len == in->data_len)
		return rec_write_crc(c->w, &out, *data_crc);
	return rec_write(c->w, &out);
}

/* The parent in as the clip's samples alone: an earlier segment stage
 * pads the window that runs past the clip's end with zeros, past the
 * payload of a windows record with the pad flag (end: the payload's end
 * in the clip; UINT64_MAX where there is none) and past clip_samples in
 * an audio record of --copy. Those zeros are no audio: the windows and
 * --last are taken on the samples before them. (A clip cut short gives
 * its last records the samples kept as clip_samples; 0 is not known.) */
static rec_item real_samples(const rec_item *in, uint64_t end)
{
	rec_item out = *in;

	if (in->clip_samples && in->clip_samples < end)
		end = in->clip_samples;
	if (in->offset + in->dim0 > end) {
		out.dim0 = end > in->offset ? (uint32_t)(end - in->offset) : 0;
		out.data_len = (size_t)out.dim0 * rec_dtype_size(in->dtype) *
			       in->dim1;
	}
	return out;
}

/* A record that is no piece: its windows, or the skipped record that
 * says it gave none. A parent with no sample of the clip (all an earlier
 * stage's padding) gives neither: it stands for nothing of the clip. */
static int cut_record(struct cut_ctx *c, const rec_item *parent,
		      uint64_t end, const uint32_t *data_crc)
{
	const struct options *o = c->o;
	rec_item real = real_samples(parent, end);
	const rec_item *in = &real;
	uint64_t n = window_count(in->dim0, o);
	uint32_t seg = clip_next_segment(&c->cs, in->clip);
	int err = 0;

	if (n > UINT32_MAX - seg) {
		prog_err("'%.*s': more than 2^32 windows in clip %" PRIu64,
			 (int)in->key_len, in->key, in->clip);
		return -1;
	}
	if (in->data_len != parent->data_len)
		data_crc = NULL; /* the parent's, not the samples' */
	if (in->dim0 == 0 && parent->dim0 > 0)
		return 0;
	if (n == 0) {
		c->cs.next_segment++;
		return write_too_short(c, in, in->dim0, seg);
	}
	if (o->copy) {
		for (uint64_t i = 0; i < n && !err; i++)
			err = write_window(c, in, i * o->hop, seg++);
	} else {
		err = describe_windows(c, in, n, seg, data_crc);
		seg += (uint32_t)n;
	}
	c->cs.next_segment = seg;
	c->st.windows += n;
	if (err)
		return write_failed(c->w, rec_strerror(err));
	return 0;
}

/* A window of a windows record of the input, and where that record's
 * samples end in the clip (UINT64_MAX: every window fits). */
struct parent_window {
	struct cut_ctx *c;
	uint64_t end;
};

static int cut_one(const rec_item *win, void *arg)
{
	struct parent_window *pw = arg;

	pw->c->st.in_audio++;
	return cut_record(pw->c, win, pw->end, NULL) ? 1 : 0;
}

/* A windows record of the input: each of its windows is cut as an audio
 * record (a padded one is built in *pad) of the samples it holds. */
static int cut_windows(struct cut_ctx *c, const rec_item *in, void **pad,
		       size_t *pad_cap)
{
	struct parent_window pw = {
		c, in->win_flags & REC_WIN_PAD ? in->offset + in->dim0 :
						 UINT64_MAX
	};
	int err = rec_each_window(in, pad, pad_cap, cut_one, &pw);

	if (err < 0) /* (1: cut_one failed and said why) */
		prog_err("'%.*s': %s", (int)in->key_len, in->key,
			 rec_strerror(err));
	return err ? -1 : 0;
}

/* A skipped record of the input goes on with the clip's next segment
 * index, as every record written here takes one: a clip skipped whole
 * keeps its 0, and the skipped record that an earlier segment stage put
 * after a clip cut short follows this stage's windows of it (whose
 * indices count past the earlier stage's). */
static int pass_skipped(struct cut_ctx *c, const rec_item *in)
{
	rec_item out = *in;
	int err;

	out.segment = clip_next_segment(&c->cs, in->clip);
	c->cs.next_segment++;
	c->st.in_skipped++;
	err = rec_write(c->w, &out);
	return err ? write_failed(c->w, rec_strerror(err)) : 0;
}

/* A source record goes on unchanged, before the clip's first record
 * (it comes after the item before has ended: nothing is held back). */
static int pass_source(struct cut_ctx *c, const rec_item *in)
{
	int err = rec_write(c->w, in);

	return err ? write_failed(c->w, rec_strerror(err)) : 0;
}

/* What the loop keeps from record to record: the buffer of a padded
 * parent window, the item in pieces being cut. */
struct scratch {
	void *pad;
	size_t cap;
	struct piece_cut *pc;
};

/* One record: cut audio (whole or in pieces) and windows, pass skipped
 * (or end an item cut short with it) and source records on, refuse
 * anything else. */
/* Whether the payload of it goes on whole and untouched, as the payload
 * of one windows record (its CRC then need not be known to be right
 * here: the record written carries the CRC it must have, and the stage
 * that reads the samples checks them). */
static int goes_on_whole(const struct cut_ctx *c, const rec_item *it)
{
	rec_item real = real_samples(it, UINT64_MAX);
	uint64_t n = window_count(real.dim0, c->o);

	/* as cut_record and describe_windows: the windows reach the end
	 * of the samples (or past it, padded) */
	return it->type == REC_T_AUDIO && !rec_item_is_piece(it) &&
	       !c->o->copy && real.data_len == it->data_len && n > 0 &&
	       (n - 1) * c->o->hop + c->o->len >= real.dim0;
}

/* The CRC32C of it's payload when the reader knows it, in *crc. A
 * payload that came by reference is not hashed by the reader (the
 * defer_shm_crc option): when it goes on whole its CRC is the one the
 * record implies; otherwise it is checked here, now, before its samples
 * are read. 1 with *crc, 0 without, -1 after a mismatch was reported. */
static int payload_crc(rec_reader *r, const struct cut_ctx *c,
		       const rec_item *it, uint32_t *crc)
{
	if (goes_on_whole(c, it) && rec_reader_take_crc(r, crc))
		return 1;
	if (rec_reader_check_crc(r) != REC_OK) {
		prog_err("%s", rec_reader_detail(r));
		return -1;
	}
	return rec_reader_data_crc(r, crc);
}

static int handle_record(rec_reader *r, struct cut_ctx *c,
			 const rec_item *it, struct scratch *sc)
{
	uint32_t crc;
	int have_crc = payload_crc(r, c, it, &crc);

	if (have_crc < 0)
		return -1;
	if (it->type == REC_T_SKIPPED) {
		if (piece_cut_active(sc->pc)) /* (the reader checked it) */
			return piece_cut_short(sc->pc, c, it);
		return pass_skipped(c, it);
	}
	if (it->type == REC_T_WINDOWS)
		return cut_windows(c, it, &sc->pad, &sc->cap);
	if (it->type == REC_T_SOURCE)
		return pass_source(c, it);
	if (it->type != REC_T_AUDIO) {
		prog_err("'%.*s': not an audio record (type %d): segment "
			 "cuts audio streams", (int)it->key_len, it->key,
			 it->type);
		return -1;
	}
	if (rec_item_is_piece(it))
		return piece_cut_add(sc->pc, c, it);
	c->st.in_audio++;
	return cut_record(c, it, UINT64_MAX, have_crc ? &crc : NULL);
}

static int check_kind(const rec_header *h, const char *in_name)
{
	const char *kind = rec_header_get(h, "kind");

	if (kind && !strcmp(kind, "audio"))
		return 0;
	prog_err("%s: stream kind is '%s', segment cuts 'audio' streams",
		 in_name, kind ? kind : "(none)");
	return -1;
}

static int copy_records(rec_reader *r, struct cut_ctx *c)
{
	struct scratch sc = { .pc = piece_cut_new() };
	rec_item it;
	int ret = -1;

	if (!sc.pc) {
		prog_err("out of memory");
		return -1;
	}
	for (;;) {
		int err = rec_read(r, &it);

		if (err == REC_END) {
			ret = 0;
			break;
		}
		if (err) {
			prog_err("%s", rec_reader_detail(r));
			break;
		}
		if (handle_record(r, c, &it, &sc))
			break;
	}
	piece_cut_free(sc.pc);
	free(sc.pad);
	return ret;
}

static void report(const rec_reader *r, const rec_writer *w,
		   const struct stats *st, double t_total)
{
	char in_b[32], out_b[32];
	double t_in = rec_reader_wait(r), t_out = rec_writer_wait(w);
	double work = t_total - t_in - t_out;

	if (prog_verbosity > 0) {
		prog_human_bytes(in_b, sizeof(in_b),
				 rec_reader_inline_bytes(r));
		prog_human_bytes(out_b, sizeof(out_b),
				 rec_writer_inline_bytes(w));
		prog_info("read %" PRIu64 " %s (%s), wrote %" PRIu64
			  " %s (%s); waiting for input %.2f s, working "
			  "%.2f s, waiting on output %.2f s",
			  rec_reader_count(r),
			  prog_plural(rec_reader_count(r), "record", "records"),
			  in_b, rec_writer_count(w),
			  prog_plural(rec_writer_count(w), "record", "records"),
			  out_b, t_in, work > 0 ? work : 0, t_out);
		prog_report_spliced(w);
		prog_report_shm_in(r);
		prog_report_shm_out(w);
	}
	prog_warn("done: %" PRIu64 " %s into %" PRIu64 " %s (%" PRIu64
		  " padded), skipped %" PRIu64 " (%" PRIu64
		  " shorter than one window)", st->in_audio,
		  prog_plural(st->in_audio, "record", "records"), st->windows,
		  prog_plural(st->windows, "window", "windows"), st->padded,
		  st->in_skipped + st->too_short, st->too_short);
}

/* Reads the header, opens the writer, cuts everything, writes the trailer
 * only when the whole input was good. */
static int run(const struct options *o, int argc, char **argv)
{
	const char *in_name = o->input ? o->input : "stdin";
	rec_reader_opts ro = { .name = in_name, .read_ahead = 1,
			       .data_crc = 1, .shm = prog_shm(),
			       .defer_shm_crc = 1 };
	rec_writer_opts wo = { .name = prog_output_name(o->co.output),
			       .write_behind = 1,
			       .zero_copy = prog_zero_copy(),
			       .shm = prog_shm(),
			       .shm_bytes = prog_shm_bytes() };
	rec_reader *r = NULL;
	rec_writer *w = NULL;
	rec_header *h = NULL;
	struct cut_ctx c = { .o = o };
	double t_start = prog_now();
	int in_fd, out_fd = -1, ret = EXIT_FAIL, err;

	in_fd = prog_open_input(o->input);
	if (in_fd < 0)
		goto out;
	err = rec_reader_open(&r, in_fd, &ro);
	if (err) {
		prog_open_failed(r, err, in_fd);
		goto out;
	}
	if (check_kind(rec_reader_header(r), in_name))
		goto out;
	h = output_header(rec_reader_header(r), o, argc, argv);
	if (!h) {
		prog_err("out of memory");
		goto out;
	}
	out_fd = prog_open_output(o->co.output);
	if (out_fd < 0)
		goto out;
	out_path = o->co.output;
	err = rec_writer_open(&w, out_fd, h, &wo);
	if (err) {
		write_failed(w, rec_strerror(err));
		goto out;
	}
	c.w = w;
	rec_writer_link(w, r); /* windows are their input's samples */
	if (copy_records(r, &c))
		goto out;
	err = rec_writer_finish(w);
	if (err) {
		write_failed(w, rec_strerror(err));
		goto out;
	}
	err = prog_commit_output(out_fd, o->co.output);
	out_fd = -1;
	if (err)
		goto out;
	report(r, w, &c.st, prog_now() - t_start);
	ret = EXIT_OK;
out:
	rec_writer_close(w);
	rec_reader_close(r);
	rec_header_free(h);
	prog_abort_output(out_fd);
	if (in_fd > STDIN_FILENO)
		close(in_fd);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o = { .last = LAST_PAD };

	prog_init("segment");
	parse_args(argc, argv, &o);
	return run(&o, argc, argv);
}
