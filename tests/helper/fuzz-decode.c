/*
 * fuzz-decode - fuzz target for wavcat's decoding path (decoder_run() and
 * decode_probe_rate() in tools/wavcat/decode.c): LLVMFuzzerTestOneInput()
 * puts one input in an in-memory file and decodes it, as wavcat would a
 * file from its folders, under every configuration in the table below
 * (each in s16 and f32), then checks the promises decode.c makes:
 *
 *   - a skip has a reason: non-empty, printable, one line; it keeps no
 *     sample unless it is a clip cut short (below);
 *   - the only fatal result is a rate mismatch without resampling, for
 *     a file whose rate really differs (no "out of memory": every buffer
 *     is bounded by the configuration, whatever a header claims);
 *   - a decoded clip has no reason and exactly the configured length
 *     (--duration), or else the file's frame count scaled to the output
 *     rate the way soxr rounds it (MP3 lengths are estimates);
 *   - a clip longer than a piece comes in pieces of exactly that many
 *     samples, one after the other, each with its CRC and the same
 *     clip_samples (the clip's length, or 0 until the end), then a last
 *     part of at least one sample; a clip whose decoding fails after
 *     some pieces, or whose file ends otherwise than its header says
 *     after any sample, is cut short, with a reason that says so; the
 *     pieces joined are the clip as one decoder without pieces gives it,
 *     and the two fail together, keeping the same samples where the
 *     file ends early;
 *   - f32 samples are finite and never counted as clipped; s16 samples
 *     are the f32 ones rounded (one step apart at most) and clipping is
 *     counted for every one out of range;
 *   - a clip decoded twice by the same decoder (its resampler reused)
 *     comes out the same;
 *   - decode_probe_rate() succeeds only with the file's own rate.
 *
 * What the file "really" holds comes from libsndfile opened here on the
 * input bytes, independently of the decoder's I/O (sfopen.c). Clips of
 * more than WHOLE samples (a few bytes of FLAC or a 1 Hz file resampled
 * give any number) are abandoned through the piece callback and not
 * checked.
 *
 * Built with clang -fsanitize=fuzzer,address and -DMELPIPE_LIBFUZZER it
 * is a libFuzzer target. Without it (the default build) the plain main
 * below replays files given as arguments, and with -m N also feeds N
 * deterministic random mutations of each (bit flips, byte changes,
 * insertions, deletions, cuts, splices; half of them in the first bytes,
 * where the headers are), so that `make check` exercises the decoder
 * with mangled files under the sanitizers without libFuzzer; -v prints
 * each file's outcome under each configuration. It also counts what the
 * libraries print on stdout while decoding (wavcat's record stream), and
 * says so in its summary. Any crash, sanitizer report or broken promise
 * aborts, after saving the input in ./fuzz-decode-failed; exit 0
 * otherwise.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sndfile.h>

#include "../../lib/crc32c.h"
#include "../../lib/rec.h"
#include "../../tools/wavcat/wavcat.h"
#include "mutate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

/* Read by LeakSanitizer (ASan builds only; unused otherwise). libsndfile
 * 1.2 leaks the vorbis_info of an Ogg file it fails to open (the error
 * path of its Ogg Vorbis reader): not wavcat's to free. */
const char *__lsan_default_suppressions(void)
{
	return "leak:vorbis_info_init\n";
}

/* The most samples of a clip checked: the piece size of the decoders
 * that decode clips whole, and where a clip in pieces is abandoned. */
#define WHOLE (1u << 20)

/* One way of running wavcat. */
struct fcfg {
	const char *what;
	uint32_t rate;        /* output rate; 0: the file's own */
	int resample;
	uint64_t duration;    /* --duration in samples; 0: none */
	uint64_t piece;       /* --piece-samples */
	int repeat;           /* decode twice with the same decoder */
	int whole_is;         /* 1 + the configuration that decodes the
				 same clips whole; 0: decode them here */
};

/* Small pieces, so that seeds of a few hundred frames cross them; every
 * configuration in pieces is also decoded whole, and compared. */
static const struct fcfg fcfgs[] = {
	{ "--rate 16000", 16000, 1, 0, WHOLE, 1, 0 },
	{ "--rate 16000, pieces of 7", 16000, 1, 0, 7, 0, 1 },
	{ "--rate 44100 --samples 3000", 44100, 1, 3000, 1000, 0, 0 },
	{ "own rate, pieces of 400", 0, 0, 0, 400, 0, 0 },
	{ "rate of an 8 kHz first file, --samples 256", 8000, 0, 256,
	  WHOLE, 0, 0 },
};
#define N_CFG (sizeof(fcfgs) / sizeof(fcfgs[0]))

static const int dtypes[2] = { REC_S16, REC_F32 };

/* A clip as the decoder gave it, its pieces joined. */
struct joined {
	struct decoded out;   /* as decoder_run() left it */
	void *data;           /* every sample kept: the pieces', out's */
	size_t cap;
	uint64_t n;
	uint64_t clipped;     /* over all of them */
	uint64_t pieces;      /* pieces handed on */
	uint64_t in_pieces;   /* their samples */
	uint64_t announced;   /* their clip_samples */
	uint64_t piece;       /* the decoder's piece size */
	int dtype;
	int abandoned;        /* over WHOLE samples: not checked */
	const struct fcfg *c; /* for fail() */
};

/* Decoders are kept from input to input, as wavcat keeps one per thread
 * from clip to clip: a state one clip leaves behind must not change the
 * next. The configuration's rate 0 becomes the file's for each input.
 * wholes[][] decode the same clips without pieces. */
static struct decoder *decoders[N_CFG][2], *wholes[N_CFG][2];
static struct joined results[N_CFG][2], again, whole;

/* Totals over a run, for the plain main's summary. */
static unsigned long n_ok, n_skip, n_fatal, n_abandoned, n_pieced, n_cut;

/* What libsndfile, read here, says of the input. */
struct truth {
	int ok;               /* it opens */
	int rate;
	sf_count_t frames;
	int format;
};

struct memfile {
	const uint8_t *p;
	sf_count_t len, pos;
};

static sf_count_t mem_len(void *user)
{
	return ((struct memfile *)user)->len;
}

static sf_count_t mem_seek(sf_count_t off, int whence, void *user)
{
	struct memfile *m = user;
	sf_count_t base = whence == SEEK_CUR ? m->pos
			  : whence == SEEK_END ? m->len : 0;

	if ((off > 0 && base > INT64_MAX - off) || base + off < 0)
		return -1;
	m->pos = base + off;
	return m->pos;
}

static sf_count_t mem_read(void *ptr, sf_count_t count, void *user)
{
	struct memfile *m = user;
	sf_count_t n = m->pos < m->len ? m->len - m->pos : 0;

	if (n > count)
		n = count;
	if (n > 0)
		memcpy(ptr, m->p + m->pos, (size_t)n);
	m->pos += n;
	return n;
}

static sf_count_t mem_write(const void *ptr, sf_count_t count, void *user)
{
	(void)ptr;
	(void)count;
	(void)user;
	return 0;
}

static sf_count_t mem_tell(void *user)
{
	return ((struct memfile *)user)->pos;
}

static struct truth probe(const uint8_t *data, size_t size)
{
	SF_VIRTUAL_IO io = { mem_len, mem_seek, mem_read, mem_write,
			     mem_tell };
	struct memfile m = { data, (sf_count_t)size, 0 };
	struct truth t = { 0 };
	SF_INFO info = { 0 };
	SNDFILE *sf = sf_open_virtual(&io, SFM_READ, &info, &m);

	if (sf == NULL)
		return t;
	t.ok = 1;
	t.rate = info.samplerate;
	t.frames = info.frames;
	t.format = info.format;
	sf_close(sf);
	return t;
}

/* An in-memory file holding data. */
static int mem_fd(const void *data, size_t size)
{
	int fd = memfd_create("fuzz-decode", MFD_CLOEXEC);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) {
		perror("fuzz-decode: memfd");
		abort();
	}
	return fd;
}

static void save_failed(void);

static void fail(const struct fcfg *c, int dtype, const struct joined *r,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Says which promise broke, under which configuration, and aborts. */
static void fail(const struct fcfg *c, int dtype, const struct joined *r,
		 const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz-decode: %s, %s: ", c->what,
		rec_dtype_name(dtype));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (status %d, %llu samples, %llu in %llu pieces of "
		"%llu, %llu clipped, reason '%.256s')\n", r->out.status,
		(unsigned long long)r->n, (unsigned long long)r->in_pieces,
		(unsigned long long)r->pieces, (unsigned long long)r->piece,
		(unsigned long long)r->clipped, r->out.reason);
	save_failed();
	abort();
}

/* Appends n samples at x to r's joined samples. */
static void join(struct joined *r, const void *x, uint64_t n)
{
	size_t es = rec_dtype_size(r->dtype);
	size_t need = (size_t)(r->n + n) * es;

	if (need > r->cap) {
		r->cap = need * 2;
		r->data = realloc(r->data, r->cap);
		if (r->data == NULL) {
			fprintf(stderr, "fuzz-decode: out of memory\n");
			abort();
		}
	}
	if (n)
		memcpy((char *)r->data + r->n * es, x, (size_t)n * es);
	r->n += n;
}

/* The decoder's emit(): checks the piece and joins it. */
static int take_piece(void *ctx, struct decoded *o)
{
	struct joined *r = ctx;
	size_t es = rec_dtype_size(r->dtype);

	if (o->n != r->piece)
		fail(r->c, r->dtype, r, "a piece of %llu samples",
		     (unsigned long long)o->n);
	if (o->offset != r->in_pieces)
		fail(r->c, r->dtype, r, "a piece at %llu after %llu samples",
		     (unsigned long long)o->offset,
		     (unsigned long long)r->in_pieces);
	if (o->crc != crc32c(0, o->data, (size_t)o->n * es))
		fail(r->c, r->dtype, r, "a piece's CRC is wrong");
	if (r->pieces > 0 && o->clip_samples != r->announced)
		fail(r->c, r->dtype, r, "clip_samples %llu, %llu before",
		     (unsigned long long)o->clip_samples,
		     (unsigned long long)r->announced);
	r->announced = o->clip_samples;
	r->pieces++;
	r->in_pieces += o->n;
	r->clipped += o->clipped;
	if (r->n + o->n > WHOLE) {
		r->abandoned = 1;
		return -1;
	}
	join(r, o->data, o->n);
	return 0;
}

/* Decodes the file at path with d into r, joining the pieces. */
static void run(struct decoder *d, const char *path, const struct fcfg *c,
		uint64_t piece, int dtype, struct joined *r)
{
	size_t es = rec_dtype_size(dtype);

	r->n = r->clipped = r->pieces = r->in_pieces = r->announced = 0;
	r->piece = piece;
	r->dtype = dtype;
	r->abandoned = 0;
	r->c = c;
	decoder_run(d, path, &r->out, take_piece, r);
	if (r->abandoned)
		return;
	if (r->out.crc != crc32c(0, r->out.data, (size_t)r->out.n * es))
		fail(c, dtype, r, "the CRC of the last samples is wrong");
	if (r->out.offset != r->in_pieces)
		fail(c, dtype, r, "the last samples at %llu",
		     (unsigned long long)r->out.offset);
	join(r, r->out.data, r->out.n);
	r->clipped += r->out.clipped;
}

/* n * out / in rounded to nearest, halves up: the length soxr gives. */
static uint64_t scaled(uint64_t n, uint32_t out, uint32_t in)
{
	if (n > (UINT64_MAX - in) / out)
		return UINT64_MAX;
	return (n * out + in / 2) / in;
}

static int printable_line(const char *s)
{
	size_t n = strnlen(s, sizeof(((struct decoded *)0)->reason));

	if (n == 0 || n == sizeof(((struct decoded *)0)->reason))
		return 0;
	for (; *s; s++)
		if (!isprint((unsigned char)*s))
			return 0;
	return 1;
}

/* The promises about a clip cut short, or skipped whole. */
static void check_failed(const struct fcfg *c, int dtype,
			 const struct truth *t, uint32_t rate,
			 const struct joined *r)
{
	int rs = t->ok && (uint32_t)t->rate != rate;

	if (r->out.status != DEC_SKIP && r->out.status != DEC_FATAL)
		fail(c, dtype, r, "unknown status");
	if (!printable_line(r->out.reason))
		fail(c, dtype, r, "no reason, or not one line");
	if (r->out.status == DEC_FATAL &&
	    !(rs && !c->resample &&
	      strncmp(r->out.reason, "sample rate ", 12) == 0))
		fail(c, dtype, r, "fatal, and not a rate mismatch (file at "
		     "%d Hz)", t->rate);
	/* samples kept: a clip cut short, after pieces or where its file
	 * ends early */
	if ((r->pieces > 0 || r->n > 0) &&
	    (r->out.status != DEC_SKIP ||
	     strncmp(r->out.reason, "decoding failed after ", 22) != 0 ||
	     (r->pieces > 0 && r->out.offset == 0)))
		fail(c, dtype, r, "samples kept, then a failure not cut "
		     "short");
}

/* The promises about one result on its own. */
static void check_one(const struct fcfg *c, uint32_t rate, int dtype,
		      const struct truth *t, const struct joined *r)
{
	int rs = t->ok && (uint32_t)t->rate != rate;
	uint64_t want;

	if (r->out.status != DEC_OK) {
		check_failed(c, dtype, t, rate, r);
		return;
	}
	if (r->out.reason[0] != '\0')
		fail(c, dtype, r, "a reason with a decoded clip");
	if (!t->ok)
		fail(c, dtype, r, "decoded a file libsndfile cannot open");
	if (rs && !c->resample)
		fail(c, dtype, r, "%d Hz decoded as %lu Hz without "
		     "resampling", t->rate, (unsigned long)rate);
	if (r->out.n > 0 && (r->out.data == NULL ||
			     r->out.cap / rec_dtype_size(dtype) < r->out.n))
		fail(c, dtype, r, "buffer of %zu bytes too small",
		     r->out.cap);
	if (r->out.cap / rec_dtype_size(dtype) > r->piece)
		fail(c, dtype, r, "a buffer of %zu bytes, over a piece",
		     r->out.cap);
	if (r->out.clip_samples != r->n ||
	    (r->announced && r->announced != r->n))
		fail(c, dtype, r, "clip_samples %llu, announced %llu",
		     (unsigned long long)r->out.clip_samples,
		     (unsigned long long)r->announced);
	if (r->pieces > 0 ? r->out.n == 0 : r->n > r->piece)
		fail(c, dtype, r, "%llu samples after %llu pieces",
		     (unsigned long long)r->out.n,
		     (unsigned long long)r->pieces);
	want = rs ? scaled((uint64_t)t->frames, rate, (uint32_t)t->rate)
		  : (uint64_t)t->frames;
	if (c->duration && r->n != c->duration)
		fail(c, dtype, r, "not the %llu samples asked for",
		     (unsigned long long)c->duration);
	if (!c->duration &&
	    (t->format & SF_FORMAT_TYPEMASK) != SF_FORMAT_MPEG &&
	    r->n != want)
		fail(c, dtype, r, "%lld frames at %d Hz should give %llu",
		     (long long)t->frames, t->rate, (unsigned long long)want);
	if (r->clipped > r->n)
		fail(c, dtype, r, "more samples clipped than kept");
	if (dtype == REC_F32) {
		const float *f = r->data;

		if (r->clipped)
			fail(c, dtype, r, "f32 samples counted as clipped");
		for (uint64_t i = 0; i < r->n; i++)
			if (!isfinite(f[i]))
				fail(c, dtype, r, "sample %llu not finite",
				     (unsigned long long)i);
	}
}

/* s16 and f32 results of one configuration agree: the same outcome, and
 * the s16 samples are the f32 ones rounded (double rounding through
 * float may move one by a step), clipped where they do not fit. */
static void check_pair(const struct fcfg *c, const struct joined *s,
		       const struct joined *f)
{
	const int16_t *sv = s->data;
	const float *fv = f->data;
	uint64_t out_of_range = 0;

	if (s->abandoned || f->abandoned)
		return;
	if (s->out.status != f->out.status || s->n != f->n ||
	    strcmp(s->out.reason, f->out.reason) != 0)
		fail(c, REC_S16, s, "differs from f32: status %d, %llu "
		     "samples, reason '%s'", f->out.status,
		     (unsigned long long)f->n, f->out.reason);
	for (uint64_t i = 0; i < s->n; i++) {
		float v = fv[i] * 32768.0f;
		long k = v >= 32767.5f ? 32767
			 : v < -32768.5f ? -32768 : lrintf(v);

		if (isnan(v) || labs(k - sv[i]) > 1)
			fail(c, REC_S16, s, "sample %llu is %d, the f32 one "
			     "%.9g", (unsigned long long)i, sv[i], fv[i]);
		out_of_range += v >= 32768.5f || v < -32769.5f;
	}
	if (s->clipped < out_of_range)
		fail(c, REC_S16, s, "%llu samples out of range, fewer "
		     "counted as clipped", (unsigned long long)out_of_range);
}

static void check_same(const struct fcfg *c, int dtype,
		       const struct joined *a, const struct joined *b)
{
	if (a->abandoned != b->abandoned)
		fail(c, dtype, b, "abandoned once only");
	if (a->abandoned)
		return;
	if (a->out.status != b->out.status || a->n != b->n ||
	    a->clipped != b->clipped ||
	    strcmp(a->out.reason, b->out.reason) != 0 ||
	    (a->n && memcmp(a->data, b->data, a->n * rec_dtype_size(dtype))))
		fail(c, dtype, b, "decoded again, not the same: status %d, "
		     "%llu samples, reason '%s' the first time",
		     a->out.status, (unsigned long long)a->n, a->out.reason);
}

/* The clip in pieces p and decoded whole w are the same samples, or fail
 * together: p cut short where w is skipped whole, else for the same
 * reason; where w is cut short too (its file ends early), at the same
 * samples. */
static void check_whole(const struct fcfg *c, int dtype,
			const struct joined *p, const struct joined *w)
{
	if (p->abandoned || w->abandoned)
		return;
	if ((p->out.status == DEC_OK) != (w->out.status == DEC_OK))
		fail(c, dtype, p, "status %d whole ('%s')", w->out.status,
		     w->out.reason);
	if (p->out.status != DEC_OK) {
		if (p->pieces == 0 &&
		    strcmp(p->out.reason, w->out.reason) != 0)
			fail(c, dtype, p, "whole: '%s'", w->out.reason);
		if (w->n > 0 && (p->n != w->n ||
				 memcmp(p->data, w->data,
					p->n * rec_dtype_size(dtype))))
			fail(c, dtype, p, "cut short, not at the %llu "
			     "samples kept whole",
			     (unsigned long long)w->n);
		return;
	}
	if (p->n != w->n || p->clipped != w->clipped ||
	    memcmp(p->data, w->data, p->n * rec_dtype_size(dtype)))
		fail(c, dtype, p, "not the %llu samples decoded whole",
		     (unsigned long long)w->n);
}

/* The decoder of configuration i in dtype k, with pieces of piece
 * samples, from *slot (made anew when its rate is the file's). */
static struct decoder *get_decoder(struct decoder **slot, size_t i, int k,
				   uint32_t rate, uint64_t piece)
{
	struct decode_cfg cfg = {
		.rate = rate,
		.resample = fcfgs[i].resample,
		.rate_from = "first.wav",
		.duration = fcfgs[i].duration,
		.dtype = dtypes[k],
		.piece_samples = piece,
	};

	/* A configuration at the file's rate changes with every input. */
	if (fcfgs[i].rate == 0 || *slot == NULL) {
		decoder_free(*slot);
		*slot = decoder_new(&cfg);
		if (*slot == NULL) {
			fprintf(stderr, "fuzz-decode: decoder_new failed\n");
			abort();
		}
	}
	return *slot;
}

static void count(const struct joined *r)
{
	if (r->abandoned)
		n_abandoned++;
	else if (r->out.status == DEC_OK)
		n_ok++;
	else if (r->out.status == DEC_SKIP)
		n_skip++;
	else
		n_fatal++;
	n_cut += r->n > 0 && r->out.status == DEC_SKIP;
	n_pieced += r->pieces > 0;
}

static void check_probe_rate(const char *path, const struct truth *t)
{
	/* Decoded as a trimmed run would, in pieces. */
	struct decode_cfg like = { .duration = 1000, .dtype = REC_F32,
				   .piece_samples = 400 };
	char why[256];
	uint32_t rate = 0;

	if (decode_probe_rate(path, &like, 0, &rate, why,
			      sizeof(why)) == 0 &&
	    (!t->ok || (uint32_t)t->rate != rate || rate == 0 ||
	     rate > WAVCAT_MAX_RATE)) {
		fprintf(stderr, "fuzz-decode: decode_probe_rate gave %lu Hz, "
			"libsndfile says %d Hz\n", (unsigned long)rate,
			t->ok ? t->rate : -1);
		save_failed();
		abort();
	}
}

#ifdef MELPIPE_LIBFUZZER
/* libFuzzer keeps the input that failed itself. */
static void save_failed(void)
{
}
#else
/* The input being decoded, for save_failed(). */
static const uint8_t *cur_data;
static size_t cur_size;
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = mem_fd(data, size);
	struct truth t = probe(data, size);
	char path[64];

#ifndef MELPIPE_LIBFUZZER
	cur_data = data;
	cur_size = size;
#endif
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (size_t i = 0; i < N_CFG; i++) {
		const struct fcfg *c = &fcfgs[i];
		uint32_t rate = c->rate ? c->rate
				: t.ok && t.rate > 0 &&
				  (uint32_t)t.rate <= WAVCAT_MAX_RATE
				? (uint32_t)t.rate : 16000;

		for (int k = 0; k < 2; k++) {
			struct decoder *d = get_decoder(&decoders[i][k], i, k,
							rate, c->piece);
			struct joined *r = &results[i][k];

			run(d, path, c, c->piece, dtypes[k], r);
			count(r);
			if (!r->abandoned)
				check_one(c, rate, dtypes[k], &t, r);
			if (c->repeat && k == 0) {
				run(d, path, c, c->piece, dtypes[k], &again);
				check_same(c, dtypes[k], r, &again);
			}
			if (c->whole_is) {
				check_whole(c, dtypes[k], r,
					    &results[c->whole_is - 1][k]);
			} else if (c->piece < WHOLE) {
				d = get_decoder(&wholes[i][k], i, k, rate,
						WHOLE);
				run(d, path, c, WHOLE, dtypes[k], &whole);
				check_whole(c, dtypes[k], r, &whole);
			}
		}
		check_pair(c, &results[i][0], &results[i][1]);
	}
	check_probe_rate(path, &t);
	close(fd);
	return 0;
}

#ifndef MELPIPE_LIBFUZZER

/* Where this program's own output goes: stdout as it was. File
 * descriptor 1 is pointed at an in-memory file while decoding, as
 * libsndfile prints to stdout in places (its SDS reader, on a bad
 * block), and what lands there is counted. */
static FILE *out;
static int lib_stdout = -1;

static void capture_stdout(void)
{
	int keep;

	fflush(stdout);
	keep = dup(1);
	lib_stdout = memfd_create("fuzz-decode-stdout", MFD_CLOEXEC);
	if (keep < 0 || lib_stdout < 0 || dup2(lib_stdout, 1) < 0 ||
	    (out = fdopen(keep, "w")) == NULL) {
		perror("fuzz-decode: stdout");
		exit(1);
	}
}

/* Bytes the libraries wrote to stdout. */
static long long stdout_bytes(void)
{
	fflush(stdout);
	return (long long)lseek(lib_stdout, 0, SEEK_END);
}

/* Which input is running: FILE, and the mutation (-1: none). */
static const char *cur_name;
static long cur_mutation = -1;

/* Set in sanitizer builds: called before a sanitizer's report ends the
 * process. Weak, so that plain builds link without the runtime. */
void __sanitizer_set_death_callback(void (*cb)(void))
	__attribute__((weak));

/* Writes the input that broke something to ./fuzz-decode-failed, so that
 * it can be replayed, minimised and kept (tests/fuzz/README). */
static void save_failed(void)
{
	FILE *f = fopen("fuzz-decode-failed", "wb");

	fprintf(stderr, "fuzz-decode: failed on '%s', mutation %ld",
		cur_name ? cur_name : "?", cur_mutation);
	if (f == NULL ||
	    fwrite(cur_data, 1, cur_size, f) != cur_size || fclose(f)) {
		fprintf(stderr, ": unable to save it\n");
		return;
	}
	fprintf(stderr, ": saved in fuzz-decode-failed (%zu bytes)\n",
		cur_size);
}

/* Audio files: header fields (rates, counts, sizes) matter most, and
 * they sit in the first bytes. */
static const unsigned char dec_bytes[] = { 0, 0xff, 0x7f, 0x80, 1, 2, 6 };
static const uint32_t dec_words[] = { 0xffffffffu, 0, 0x7fffffffu, 1,
				      768001u, 0x10000u };
static const struct mut_profile profile = {
	.bytes = dec_bytes, .n_bytes = sizeof(dec_bytes),
	.words = dec_words, .n_words = sizeof(dec_words) / 4,
	.short_words = 1, .head = 160,
};

/* With -v: the outcome of every configuration for one file. */
static void show(const char *name)
{
	for (size_t i = 0; i < N_CFG; i++)
		for (int k = 0; k < 2; k++) {
			const struct joined *r = &results[i][k];

			fprintf(out, "%s: %s, %s: ", name, fcfgs[i].what,
			       rec_dtype_name(dtypes[k]));
			if (r->abandoned)
				fprintf(out, "over %u samples, not checked\n",
					WHOLE);
			else if (r->out.status == DEC_OK)
				fprintf(out, "ok %llu\n",
					(unsigned long long)r->n);
			else
				fprintf(out, "%s: %s\n",
					r->out.status == DEC_SKIP ? "skip"
								  : "fatal",
					r->out.reason);
		}
}

static void cleanup(void)
{
	for (size_t i = 0; i < N_CFG; i++)
		for (int k = 0; k < 2; k++) {
			decoder_free(decoders[i][k]);
			decoder_free(wholes[i][k]);
			free(results[i][k].data);
			free(results[i][k].out.data);
		}
	free(again.data);
	free(again.out.data);
	free(whole.data);
	free(whole.out.data);
}

int main(int argc, char **argv)
{
	long iters = 0;
	int first = 1, verbose = 0;

	for (; first < argc && argv[first][0] == '-'; first++) {
		if (strcmp(argv[first], "-v") == 0)
			verbose = 1;
		else if (strcmp(argv[first], "-m") == 0 && first + 1 < argc)
			iters = atol(argv[++first]);
		else
			break;
	}
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(save_failed);
	if (first >= argc || iters < 0) {
		fprintf(stderr, "Usage: fuzz-decode [-v] [-m MUTATIONS] "
			"FILE...\n");
		return 2;
	}
	capture_stdout();
	for (int i = first; i < argc; i++) {
		size_t len, olen;
		unsigned char *seed = mut_slurp(argv[i], &len);
		unsigned char *other = mut_slurp(argv[first + (i + 1 - first) %
						  (argc - first)], &olen);
		unsigned char *buf = malloc(MUT_ROOM(len));

		cur_name = argv[i];
		cur_mutation = -1;
		LLVMFuzzerTestOneInput(seed, len);
		if (verbose)
			show(argv[i]);
		for (long k = 0; k < iters; k++) {
			size_t cur = mut_mutant(&profile, buf, seed, len,
						other, olen);

			cur_mutation = k;
			LLVMFuzzerTestOneInput(buf, cur);
		}
		free(buf);
		free(seed);
		free(other);
	}
	cleanup();
	fprintf(out, "fuzz-decode: %d inputs, %ld mutations each: no fault "
		"(decoded %lu, skipped %lu, fatal %lu, over %u samples %lu; "
		"in pieces %lu, cut short %lu; libraries printed %lld bytes "
		"to stdout)\n", argc - first, iters, n_ok, n_skip, n_fatal,
		WHOLE, n_abandoned, n_pieced, n_cut, stdout_bytes());
	return fclose(out) == 0 ? 0 : 1;
}

#endif
