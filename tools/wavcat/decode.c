/*
 * decode.c - one file to one mono clip: open it (sfopen.c), decode it
 * with libsndfile, check that the file is whole, mix down, resample
 * (resample.c), pad or trim and convert to the output type (sink.c),
 * handing a long clip on in pieces as it goes.
 * Each thread has its own decoder; its buffers and resampler are reused
 * from clip to clip.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>
#include <soxr.h>

#include "../../lib/crc32c.h"
#include "../../lib/rec.h"
#include "../common/prog.h"
#include "decode_priv.h"
#include "wavcat.h"

/* Samples reserved before reading (at most a piece); more as they
 * come. */
#define RESERVE_MAX (1u << 22)
/* The largest sample magnitude taken from a float file: full scale is 1,
 * so 1e6 (120 dB above it) is no audio, and it keeps every float the
 * resampler and the f32 output compute far from overflow. */
#define SAMPLE_LIMIT 1e6

void set_reason(struct decoded *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
	if (out->status == DEC_OK)
		out->status = DEC_SKIP;
}

struct decoder *decoder_new(const struct decode_cfg *cfg)
{
	struct decoder *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->cfg = *cfg;
	if (d->cfg.piece_samples == 0)
		d->cfg.piece_samples = WAVCAT_PIECE_DEFAULT;
	d->ibuf = malloc(CHUNK * sizeof(double));
	d->sbuf = malloc(CHUNK * sizeof(short));
	d->mono = malloc(CHUNK * sizeof(double));
	d->fbuf = malloc(CHUNK * sizeof(float));
	d->rbuf = malloc(RCHUNK * sizeof(float));
	if (!d->ibuf || !d->sbuf || !d->mono || !d->fbuf || !d->rbuf) {
		decoder_free(d);
		return NULL;
	}
	return d;
}

void decoder_free(struct decoder *d)
{
	if (d == NULL)
		return;
	if (d->soxr)
		soxr_delete(d->soxr);
	free(d->ibuf);
	free(d->sbuf);
	free(d->mono);
	free(d->fbuf);
	free(d->rbuf);
	free(d->file);
	free(d);
}

void decoder_times(const struct decoder *d, double *t_read,
		   double *t_resample, double *t_emit)
{
	*t_read = d->t_read;
	*t_resample = d->t_resample;
	*t_emit = d->t_emit;
}

/* n * out / in rounded to nearest, halves up: the length soxr gives. */
static uint64_t scale_len(uint64_t n, uint32_t out, uint32_t in)
{
	if (n > (UINT64_MAX - in) / out)
		return UINT64_MAX;
	return (n * out + in / 2) / in;
}

/* Mixes got frames of ch channels down to mono (their mean, in double
 * precision). Returns got, or the index of the first sample that is not
 * usable: NaN, infinite, or beyond SAMPLE_LIMIT (full scale is 1: such
 * a value is damage, and it would overflow the float the resampler and
 * the f32 output work in). */
static size_t mixdown(struct decoder *d, size_t got, int ch,
		      const double **mono)
{
	const double *in = d->ibuf;
	double bad = 0.0, big = 0.0;
	size_t i;
	int c;

	if (ch == 1) {
		*mono = in;
	} else {
		for (i = 0; i < got; i++) {
			double acc = 0.0;

			for (c = 0; c < ch; c++)
				acc += in[i * (size_t)ch + (size_t)c];
			d->mono[i] = acc / ch;
		}
		*mono = d->mono;
	}
	/* x * 0 is 0 for every finite x and NaN for NaN and infinities:
	 * one branch-free pass, and a search only when something is bad. */
	for (i = 0; i < got; i++) {
		double a = fabs((*mono)[i]);

		bad += (*mono)[i] * 0.0;
		big = a > big ? a : big;
	}
	if (bad == 0.0 && big <= SAMPLE_LIMIT)
		return got;
	for (i = 0; i < got && fabs((*mono)[i]) <= SAMPLE_LIMIT; i++)
		;
	return i;
}

static void bad_sample(struct decoded *out, double x, int64_t frame)
{
	if (isnan(x) || isinf(x))
		set_reason(out, "NaN or infinite sample at frame %lld",
			   (long long)frame);
	else
		set_reason(out, "sample value %g at frame %lld is beyond any "
			   "audio (full scale is 1): damaged data", x,
			   (long long)frame);
}

/* Puts n mono samples in the sink, resampled when rs. */
static int feed(struct decoder *d, struct sink *s, int rs,
		const double *mono, size_t n)
{
	if (!rs) {
		sink_double(s, mono, n);
		return 0;
	}
	/* the clip is full: what follows is only counted (a 1 Hz file
	 * resampled to 44.1 kHz would otherwise cost a second per
	 * kilobyte) */
	if (sink_kept(s) >= s->limit)
		return 0;
	return resample(d, mono, n, s);
}

/* The next read of 16-bit mono WAV, of at most per frames, total read so
 * far: straight into the sink's buffer while it takes samples, else into
 * tmp (counted, not kept). No more than the frames libsndfile knows are
 * left is asked for: asked for more, it fills the rest of the buffer with
 * zeros, and at the end a whole chunk's worth (with the copy out of a
 * buffer of ours, half the decoding threads' instructions on 10-second
 * clips, by callgrind). Returns frames read, 0 at the end, or < 0. */
static sf_count_t read_short(SNDFILE *sf, const SF_INFO *info, int64_t total,
			     sf_count_t per, struct sink *s, short *tmp)
{
	sf_count_t ask = per, got;
	int16_t *dst;
	size_t k;

	if (info->frames > 0 && info->frames < SF_COUNT_MAX) {
		if (total >= info->frames)
			return 0;
		if (info->frames - total < ask)
			ask = info->frames - total;
	}
	dst = sink_room(s, (size_t)ask, &k);
	if (k == 0)
		return sf_readf_short(sf, tmp, ask);
	got = sf_readf_short(sf, dst, (sf_count_t)k);
	if (got > 0)
		sink_wrote(s, (size_t)got);
	return got;
}

/* Reads every frame of sf into the sink (resampled when rs). 16-bit mono
 * that needs no resampling is copied as it is (a WAV file's straight
 * into the sink); the rest goes through double precision. The samples
 * before a bad one are kept: a clip in pieces is cut short there.
 * Returns frames read, or -1 with the reason set. Time in resample() and
 * handing pieces on is not reading. */
static int64_t read_all(struct decoder *d, SNDFILE *sf, const SF_INFO *info,
			int rs, struct sink *s)
{
	int ch = info->channels;
	int direct = !rs && s->dtype == REC_S16 && ch == 1 &&
		     (info->format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_16;
	int type = info->format & SF_FORMAT_TYPEMASK;
	/* WAV's PCM is read as it lies, whatever the count asked for; a
	 * FLAC decoder cut short fails differently for other counts */
	int in_place = direct && (type == SF_FORMAT_WAV ||
				  type == SF_FORMAT_WAVEX ||
				  type == SF_FORMAT_RF64);
	sf_count_t per = CHUNK / ch, got;
	const double *mono;
	int64_t total = 0;
	double t0 = prog_now(), e0 = s->t_emit;
	size_t ok;
	int err;

	for (;;) {
		if (in_place) {
			got = read_short(sf, info, total, per, s, d->sbuf);
		} else if (direct) {
			got = sf_readf_short(sf, d->sbuf, per);
			if (got > 0)
				sink_short(s, d->sbuf, (size_t)got);
		} else {
			got = sf_readf_double(sf, d->ibuf, per);
		}
		if (got <= 0)
			break;
		if (!direct) {
			ok = mixdown(d, (size_t)got, ch, &mono);
			d->t_read += prog_now() - t0 - (s->t_emit - e0);
			err = feed(d, s, rs, mono, ok);
			t0 = prog_now();
			e0 = s->t_emit;
			if (err)
				return -1;
			if (ok < (size_t)got) {
				bad_sample(s->out, mono[ok],
					   total + (int64_t)ok);
				return -1;
			}
		}
		total += got;
		if (s->stop)
			return total;
	}
	d->t_read += prog_now() - t0 - (s->t_emit - e0);
	if (rs && sink_kept(s) < s->limit && resample(d, NULL, 0, s))
		return -1;
	return total;
}

/* Checks what was read against the header (frames: what it promises).
 * MP3 lengths are estimates (mpg123 without a Xing/LAME frame), so only
 * other formats must match. */
static int check_length(SNDFILE *sf, const SF_INFO *info, int64_t frames,
			const struct vio *v, const struct wav_short *ws,
			int64_t total, struct decoded *out)
{
	char msg[200];
	int exact = (info->format & SF_FORMAT_TYPEMASK) != SF_FORMAT_MPEG;

	if (v->err) {
		set_reason(out, "read error after %lld %s: %s",
			   (long long)total,
			   prog_plural((uint64_t)total, "frame", "frames"),
			   strerror(v->err));
		return -1;
	}
	if (sf_error(sf) != SF_ERR_NO_ERROR) {
		tidy_sf_error(msg, sizeof(msg), sf_strerror(sf));
		set_reason(out, "decoding failed after %lld %s: %s",
			   (long long)total,
			   prog_plural((uint64_t)total, "frame", "frames"),
			   msg);
		return -1;
	}
	if (ws->claimed && total < frames) {
		set_reason(out, "decoded %lld of the %lld %s its header "
			   "gives (truncated: the data chunk claims %llu bytes, "
			   "the file holds %llu)", (long long)total,
			   (long long)frames,
			   prog_plural((uint64_t)frames, "frame", "frames"),
			   (unsigned long long)ws->claimed,
			   (unsigned long long)ws->held);
		return -1;
	}
	if (total == 0) {
		set_reason(out, "no audio data (0 frames decoded)");
		return -1;
	}
	if (exact && total < frames) {
		set_reason(out, "decoded %lld of the %lld %s its header "
			   "gives (truncated or damaged)", (long long)total,
			   (long long)frames,
			   prog_plural((uint64_t)frames, "frame", "frames"));
		return -1;
	}
	if (exact && total > frames) {
		set_reason(out, "decoded %lld %s, more than the %lld its "
			   "header gives", (long long)total,
			   prog_plural((uint64_t)total, "frame", "frames"),
			   (long long)frames);
		return -1;
	}
	return 0;
}

/* Decodes the open file sf into out, handing pieces to emit. Returns 1
 * when the file ended otherwise than its header said (cut short, a read
 * or decoding error at its end, or longer): what was decoded before is
 * good audio, kept whatever its length; else 0. */
static int decode_sf(struct decoder *d, SNDFILE *sf, const SF_INFO *info,
		      const struct vio *v, const struct wav_short *ws,
		      struct decoded *out, decode_emit_fn emit, void *ctx)
{
	const struct decode_cfg *cfg = &d->cfg;
	uint32_t in = (uint32_t)info->samplerate;
	int rs = in != cfg->rate;
	int exact = (info->format & SF_FORMAT_TYPEMASK) != SF_FORMAT_MPEG;
	struct sink s = { .out = out, .dtype = cfg->dtype,
			  .piece = cfg->piece_samples, .emit = emit,
			  .ctx = ctx };
	/* a WAV cut short promises its data chunk's frames, as a FLAC
	 * file its STREAMINFO's */
	int64_t frames = ws->claimed ? (int64_t)(ws->claimed / ws->align)
				     : info->frames;
	uint64_t want, full;
	int64_t total;
	int ended = 0;

	if (rs && !cfg->resample) {
		char q[128];

		set_reason(out, "sample rate %lu Hz differs from the %lu Hz "
			   "of '%s'; give --rate to resample",
			   (unsigned long)in, (unsigned long)cfg->rate,
			   quote_name_buf(q, sizeof(q), cfg->rate_from));
		out->status = DEC_FATAL;
		return 0;
	}
	s.esize = rec_dtype_size(cfg->dtype);
	want = rs ? scale_len((uint64_t)frames, cfg->rate, in)
		  : (uint64_t)frames;
	/* The clip's length is known before decoding when padded or
	 * trimmed, or else from an exact frame count (soxr gives n * out /
	 * in samples, rounded, as scale_len()); a file that breaks the
	 * promise fails (check_length()). MP3 counts are estimates. */
	out->clip_samples = cfg->duration ? cfg->duration : exact ? want : 0;
	s.limit = out->clip_samples ? out->clip_samples : UINT64_MAX;
	/* Room for what the header promises, within reason: a damaged
	 * header can promise anything, and a clip trimmed to --duration
	 * holds no more than that (a window of clips' memory is theirs:
	 * decode_buffer_bytes()). */
	if (cfg->duration && want > cfg->duration)
		want = cfg->duration;
	if (want > s.piece)
		want = s.piece;
	if (sink_reserve(&s, want < RESERVE_MAX ? want : RESERVE_MAX) ||
	    (rs && get_soxr(d, in, out)))
		goto out;
	total = read_all(d, sf, info, rs, &s);
	if (total < 0 || s.stop)
		goto out;
	if (check_length(sf, info, frames, v, ws, total, out)) {
		ended = 1;
		goto out;
	}
	/* Padded, or else the length soxr's output already has: this only
	 * guards it. */
	full = rs ? scale_len((uint64_t)total, cfg->rate, in) : (uint64_t)total;
	if (cfg->duration)
		out->fitted = full < cfg->duration ? 1
			      : full > cfg->duration ? -1 : 0;
	sink_set_len(&s, cfg->duration ? cfg->duration : full);
out:
	d->t_emit += s.t_emit;
	if (s.nomem) {
		set_reason(out, "out of memory");
		out->status = DEC_FATAL;
	} else if (s.stop && out->status == DEC_OK) {
		set_reason(out, "abandoned");
		out->status = DEC_FATAL;
	}
	return ended;
}

/* What the clip is at its end: whole, cut short (the reason then says
 * so), or nothing. A clip is cut short when its decoding fails after
 * pieces were handed on, or, ended (the file ended otherwise than its
 * header said), after any sample: the same clip for any piece size. */
static void end_clip(const struct decoder *d, int ended,
		     struct decoded *out)
{
	char why[sizeof(out->reason)];
	uint64_t kept = out->offset + out->n;

	if (out->status == DEC_OK) {
		out->clip_samples = kept;
		return;
	}
	if (out->status == DEC_FATAL || kept == 0 ||
	    (out->offset == 0 && !ended)) {
		out->n = 0;
		return;
	}
	memcpy(why, out->reason, sizeof(why));
	snprintf(out->reason, sizeof(out->reason), "decoding failed after "
		 "%.1f s (%llu %s kept): %.180s",
		 (double)kept / d->cfg.rate, (unsigned long long)kept,
		 prog_plural(kept, "sample", "samples"), why);
}

/* The samples of a clip decoded into the output's ring of shared memory,
 * when it lends room: copied here, on one of many threads, while they
 * are in this core's cache, rather than by the writing thread. The
 * clips decoded before the output opens (while the job's fingerprint is
 * computed) are copied by the writing thread. */
static void lease_copy(const struct decoder *d, struct decoded *out)
{
	size_t len = (size_t)out->n * rec_dtype_size(d->cfg.dtype);
	rec_writer *w = d->cfg.lease_to ?
		atomic_load_explicit(d->cfg.lease_to, memory_order_acquire) :
		NULL;

	out->lease.ptr = NULL;
	if (w && rec_writer_lease(w, len, &out->lease) == 0)
		memcpy(out->lease.ptr, out->data, len);
}

void decoder_run(struct decoder *d, const char *path, struct decoded *out,
		 decode_emit_fn emit, void *ctx)
{
	struct vio v = { 0 };
	struct wav_short ws = { 0 };
	SF_INFO info;
	SNDFILE *sf;
	struct stat st;
	double t0 = prog_now();
	int fd, ended = 0;

	out->status = DEC_OK;
	out->n = 0;
	out->offset = 0;
	out->clip_samples = 0;
	out->clipped = 0;
	out->fitted = 0;
	out->reason[0] = '\0';
	out->source_len = 0;
	fd = open_regular(path, &st, out);
	if (fd < 0)
		goto done;
	v.fd = fd;
	v.len = st.st_size;
	if (read_whole(d, &v, out))
		goto close_fd;
	if (wav_check(&v, out, &ws))
		goto close_fd;
	sf = open_sf(&v, &info, out);
	if (sf == NULL)
		goto close_fd;
	d->t_read += prog_now() - t0;
	if (check_info(&info, out) == 0) {
		describe_source(&info, out);
		ended = decode_sf(d, sf, &info, &v, &ws, out, emit, ctx);
	}
	t0 = prog_now();
	sf_close(sf);
close_fd:
	close(fd);
done:
	end_clip(d, ended, out);
	/* here, on one of many threads, rather than when the writing
	 * thread seals the record */
	out->crc = crc32c(0, out->data, (size_t)out->n *
			  rec_dtype_size(d->cfg.dtype));
	if (out->status == DEC_OK)
		lease_copy(d, out);
	d->t_read += prog_now() - t0;
}

/* The rate the file at path claims: 0, or -1 with the reason in out. */
static int claimed_rate(const char *path, uint32_t *rate,
			struct decoded *out)
{
	struct vio v = { 0 };
	struct wav_short ws = { 0 };
	struct stat st;
	SF_INFO info;
	SNDFILE *sf;
	int fd, err = -1;

	fd = open_regular(path, &st, out);
	if (fd < 0)
		return -1;
	v.fd = fd;
	v.len = st.st_size;
	if (wav_check(&v, out, &ws) == 0 &&
	    (sf = open_sf(&v, &info, out)) != NULL) {
		if (check_info(&info, out) == 0) {
			*rate = (uint32_t)info.samplerate;
			err = 0;
		}
		sf_close(sf);
	}
	close(fd);
	return err;
}

uint64_t decode_seconds(double seconds, uint32_t rate)
{
	double n = floor(seconds * rate + 0.5);

	if (n < 1)
		return 0;
	return n > (double)UINT64_MAX / 2 ? UINT64_MAX / 2 : (uint64_t)n;
}

int decode_probe_rate(const char *path, const struct decode_cfg *like,
		      double seconds, uint32_t *rate, char *reason,
		      size_t size)
{
	struct decode_cfg cfg = *like;
	struct decoded out = { 0 };
	struct decoder *d;

	cfg.rate_from = path;
	cfg.resample = 0;
	/* Decoded as the run will, the pieces dropped as they come. */
	if (claimed_rate(path, &cfg.rate, &out) == 0) {
		if (seconds > 0)
			cfg.duration = decode_seconds(seconds, cfg.rate);
		d = decoder_new(&cfg);
		if (d == NULL)
			set_reason(&out, "out of memory");
		else
			decoder_run(d, path, &out, NULL, NULL);
		decoder_free(d);
		free(out.data);
	}
	snprintf(reason, size, "%s", out.reason);
	/* a clip cut short is kept up to the failure, at its rate */
	if (out.status != DEC_OK &&
	    !(out.status == DEC_SKIP && out.offset + out.n > 0))
		return -1;
	*rate = cfg.rate;
	return 0;
}
