/*
 * decode.c - one file to one mono clip: decode with libsndfile, check
 * that the file is whole, mix down, resample with soxr, pad or trim,
 * convert to the output type. Each thread has its own decoder; its
 * buffers and resampler are reused from clip to clip.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
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
#include "wavcat.h"

/* Samples read per libsndfile call (all channels): large reads, and
 * scratch buffers that stay small whatever the clip length. */
#define CHUNK 65536
/* Output room per soxr call; soxr keeps what does not fit. */
#define RCHUNK 65536
/* Samples reserved before reading; more as they come. */
#define RESERVE_MAX (1u << 22)
/* The largest sample magnitude taken from a float file: full scale is 1,
 * so 1e6 (120 dB above it) is no audio, and it keeps every float the
 * resampler and the f32 output compute far from overflow. */
#define SAMPLE_LIMIT 1e6
/* Files up to this size are read whole, in one pread(2), and decoded from
 * memory: libsndfile otherwise reads a clip of a second in 15-20 small
 * reads, a system call each. Larger files are read as decoding goes. */
#define WHOLE_MAX (4u << 20)

struct decoder {
	struct decode_cfg cfg;
	soxr_t soxr;             /* kept while files share an input rate */
	uint32_t soxr_rate;
	double *ibuf;            /* interleaved samples, CHUNK */
	short *sbuf;             /* 16-bit samples, CHUNK */
	double *mono;            /* mixed down, CHUNK */
	float *fbuf;             /* the same in float for soxr, CHUNK */
	float *rbuf;             /* resampled, RCHUNK */
	unsigned char *file;     /* the whole file, when small (WHOLE_MAX) */
	size_t file_cap;
	double t_read, t_resample;
};

/* Where samples go: the clip's buffer in the output type, up to limit. */
struct sink {
	struct decoded *out;
	int dtype;
	size_t esize;
	uint64_t limit;          /* samples kept at most */
	uint64_t produced;       /* samples offered, kept or not */
	int nomem;
};

/* libsndfile keeps why an open failed in a global (sf_strerror(NULL)).
 * Opens share this lock; a failed one is retried holding it alone, so
 * the text read is its own. */
static pthread_rwlock_t open_lock = PTHREAD_RWLOCK_INITIALIZER;

/* libsndfile reads through these callbacks, never through a descriptor
 * of its own: given one (sf_open_fd), it closes it when an open fails,
 * whatever it was told, and another thread may have the number by then.
 * pread() also leaves no shared file offset to keep right. */
struct vio {
	int fd;
	const unsigned char *mem; /* the whole file, or NULL: read fd */
	sf_count_t pos, len;
	int err;                 /* errno of a failed read, 0 if none */
};

/* pread(2) on the file, or a copy from memory when it was read whole:
 * bytes read (0 past the end), or -1 with errno set. */
static ssize_t vio_pread(const struct vio *v, void *buf, size_t n, off_t off)
{
	ssize_t got;

	if (v->mem) {
		if (off < 0 || off >= v->len)
			return 0;
		if ((sf_count_t)n > v->len - off)
			n = (size_t)(v->len - off);
		memcpy(buf, v->mem + off, n);
		return (ssize_t)n;
	}
	do
		got = pread(v->fd, buf, n, off);
	while (got < 0 && errno == EINTR);
	return got;
}

static void set_reason(struct decoded *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_reason(struct decoded *out, const char *fmt, ...)
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
		   double *t_resample)
{
	*t_read = d->t_read;
	*t_resample = d->t_resample;
}

/* n * out / in rounded to nearest, halves up: the length soxr gives. */
static uint64_t scale_len(uint64_t n, uint32_t out, uint32_t in)
{
	if (n > (UINT64_MAX - in) / out)
		return UINT64_MAX;
	return (n * out + in / 2) / in;
}

/* ------------------------------------------------------------------ */
/* The sink */

/* Makes room for n samples in the clip's buffer. */
static int sink_reserve(struct sink *s, uint64_t n)
{
	struct decoded *o = s->out;
	size_t need, cap;
	void *nd;

	if (n > SIZE_MAX / s->esize)
		goto nomem;
	need = (size_t)n * s->esize;
	if (need <= o->cap)
		return 0;
	cap = o->cap ? o->cap : 65536;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	nd = realloc(o->data, cap);
	if (nd == NULL)
		goto nomem;
	o->data = nd;
	o->cap = cap;
	return 0;
nomem:
	s->nomem = 1;
	return -1;
}

/* Rounds to 16 bits (to nearest, halves to even), clipping and counting
 * what does not fit. Resampled samples come as float, others as double
 * (rounded once from the file's values). */
static void put_s16f(int16_t *dst, const float *x, size_t n,
		     uint64_t *clipped)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float v = x[i] * 32768.0f;

		if (v >= 32767.5f) {
			dst[i] = 32767;
			++*clipped;
		} else if (v < -32768.5f) {
			dst[i] = -32768;
			++*clipped;
		} else {
			dst[i] = (int16_t)lrintf(v);
		}
	}
}

static void put_s16d(int16_t *dst, const double *x, size_t n,
		     uint64_t *clipped)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double v = x[i] * 32768.0;

		if (v >= 32767.5) {
			dst[i] = 32767;
			++*clipped;
		} else if (v < -32768.5) {
			dst[i] = -32768;
			++*clipped;
		} else {
			dst[i] = (int16_t)lrint(v);
		}
	}
}

/* How many of n offered samples are kept, with room made for them. */
static size_t sink_take(struct sink *s, size_t n)
{
	uint64_t have = s->out->n;
	size_t k = 0;

	s->produced += n;
	if (have < s->limit)
		k = s->limit - have < n ? (size_t)(s->limit - have) : n;
	if (k > 0 && sink_reserve(s, have + k))
		return 0;
	return k;
}

static void sink_float(struct sink *s, const float *x, size_t n)
{
	struct decoded *o = s->out;
	size_t k = sink_take(s, n);

	if (k == 0)
		return;
	if (s->dtype == REC_S16)
		put_s16f((int16_t *)o->data + o->n, x, k, &o->clipped);
	else
		memcpy((float *)o->data + o->n, x, k * sizeof(float));
	o->n += k;
}

static void sink_double(struct sink *s, const double *x, size_t n)
{
	struct decoded *o = s->out;
	size_t k = sink_take(s, n);
	float *f;
	size_t i;

	if (k == 0)
		return;
	if (s->dtype == REC_S16) {
		put_s16d((int16_t *)o->data + o->n, x, k, &o->clipped);
	} else {
		f = (float *)o->data + o->n;
		for (i = 0; i < k; i++)
			f[i] = (float)x[i];
	}
	o->n += k;
}

static void sink_short(struct sink *s, const short *x, size_t n)
{
	struct decoded *o = s->out;
	size_t k = sink_take(s, n);

	if (k == 0)
		return;
	memcpy((int16_t *)o->data + o->n, x, k * sizeof(short));
	o->n += k;
}

/* Makes the clip exactly n samples long: cuts or pads with zeros. */
static void sink_set_len(struct sink *s, uint64_t n)
{
	struct decoded *o = s->out;

	if (n <= o->n) {
		o->n = n;
		return;
	}
	if (sink_reserve(s, n))
		return;
	memset((char *)o->data + o->n * s->esize, 0,
	       (size_t)(n - o->n) * s->esize);
	o->n = n;
}

/* ------------------------------------------------------------------ */
/* Checks */

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* Checks a fmt chunk's channels and rate (libsndfile accepts some
 * impossible ones). Returns 0 or -1 with the reason set. */
static int wav_check_fmt(const struct vio *v, off_t off, uint32_t size,
			 struct decoded *out, unsigned *tag, unsigned *align)
{
	unsigned char f[26];
	unsigned ch;
	uint32_t rate;

	if (size < 16 || vio_pread(v, f, 16, off) != 16)
		return 0;
	*tag = le16(f);
	ch = le16(f + 2);
	rate = le32(f + 4);
	*align = le16(f + 12);
	/* WAVE_FORMAT_EXTENSIBLE: the real tag opens the subformat GUID. */
	if (*tag == 0xFFFE && size >= 26 && vio_pread(v, f, 26, off) == 26)
		*tag = le16(f + 24);
	if (ch == 0) {
		set_reason(out, "no channels (0)");
		return -1;
	}
	if (ch > WAVCAT_MAX_CHANNELS) {
		set_reason(out, "absurd channel count %u (over %u)", ch,
			   WAVCAT_MAX_CHANNELS);
		return -1;
	}
	if (rate == 0 || rate > WAVCAT_MAX_RATE) {
		set_reason(out, "absurd sample rate %lu Hz",
			   (unsigned long)rate);
		return -1;
	}
	return 0;
}

/* Checks a data chunk against the file: libsndfile silently clamps a
 * data size larger than the file, and reads a size of 0 (a file never
 * closed by its writer) as "up to the end". */
static int wav_check_data(uint32_t size, uint64_t avail, unsigned tag,
			  unsigned align, struct decoded *out)
{
	if (size == 0) {
		set_reason(out, "data chunk size is 0 (a file never "
			   "finished?)");
		return -1;
	}
	if (size > avail) {
		set_reason(out, "data chunk claims %lu bytes but the file "
			   "holds %llu (truncated?)", (unsigned long)size,
			   (unsigned long long)avail);
		return -1;
	}
	/* PCM or float: a partial frame means a damaged file. */
	if ((tag == 1 || tag == 3) && align > 0 && size % align != 0) {
		set_reason(out, "data length %lu is not a whole number of "
			   "%u-byte frames", (unsigned long)size, align);
		return -1;
	}
	return 0;
}

/* Walks the chunks of a RIFF WAVE file. Other files pass. Returns 0 or
 * -1 with the reason set. */
static int wav_check(const struct vio *v, struct decoded *out)
{
	unsigned char h[12];
	unsigned tag = 0, align = 0;
	uint64_t off = 12;
	uint32_t size;
	int i;

	uint64_t fsize = (uint64_t)v->len;

	if (vio_pread(v, h, 12, 0) != 12 || memcmp(h, "RIFF", 4) != 0 ||
	    memcmp(h + 8, "WAVE", 4) != 0)
		return 0;
	for (i = 0; i < 100000 && off + 8 <= fsize; i++) {
		if (vio_pread(v, h, 8, (off_t)off) != 8)
			return 0;
		size = le32(h + 4);
		if (memcmp(h, "fmt ", 4) == 0 &&
		    wav_check_fmt(v, (off_t)off + 8, size, out, &tag, &align))
			return -1;
		if (memcmp(h, "data", 4) == 0)
			return wav_check_data(size, fsize - off - 8, tag, align,
					      out);
		off += 8 + (uint64_t)size + (size & 1);
	}
	return 0;
}

/* "Format not recognised." -> "format not recognised". */
static void tidy_sf_error(char *dst, size_t size, const char *msg)
{
	size_t n;

	/* What libsndfile says when a decoder gives up on a stream it
	 * opened through our callbacks, where no path or pipe is involved. */
	if (msg && strstr(msg, "is not a regular file (possibly a pipe?)"))
		msg = "the data are not in a format that can be decoded "
		      "(unknown or damaged)";
	snprintf(dst, size, "%s", msg ? msg : "unknown error");
	n = strlen(dst);
	while (n > 0 && (dst[n - 1] == '.' ||
			 isspace((unsigned char)dst[n - 1])))
		dst[--n] = '\0';
	if (isupper((unsigned char)dst[0]) && islower((unsigned char)dst[1]))
		dst[0] = (char)tolower((unsigned char)dst[0]);
}

static sf_count_t vio_len(void *user)
{
	return ((struct vio *)user)->len;
}

static sf_count_t vio_seek(sf_count_t off, int whence, void *user)
{
	struct vio *v = user;
	sf_count_t base = whence == SEEK_CUR ? v->pos
			  : whence == SEEK_END ? v->len : 0;

	if ((off > 0 && base > INT64_MAX - off) || base + off < 0)
		return -1;
	v->pos = base + off;
	return v->pos;
}

static sf_count_t vio_read(void *ptr, sf_count_t count, void *user)
{
	struct vio *v = user;
	sf_count_t done = 0;
	ssize_t n;

	while (done < count) {
		n = vio_pread(v, (char *)ptr + done, (size_t)(count - done),
			      (off_t)(v->pos + done));
		if (n < 0)
			v->err = errno;
		if (n <= 0)
			break;
		done += n;
	}
	v->pos += done;
	return done;
}

static sf_count_t vio_write(const void *ptr, sf_count_t count, void *user)
{
	(void)ptr;
	(void)count;
	(void)user;
	return 0;
}

static sf_count_t vio_tell(void *user)
{
	return ((struct vio *)user)->pos;
}

static SF_VIRTUAL_IO vio_ops = {
	.get_filelen = vio_len,
	.seek = vio_seek,
	.read = vio_read,
	.write = vio_write,
	.tell = vio_tell,
};

static SNDFILE *open_sf(struct vio *v, SF_INFO *info, struct decoded *out)
{
	char msg[200];
	SNDFILE *sf;

	pthread_rwlock_rdlock(&open_lock);
	memset(info, 0, sizeof(*info));
	v->pos = 0;
	sf = sf_open_virtual(&vio_ops, SFM_READ, info, v);
	pthread_rwlock_unlock(&open_lock);
	if (sf != NULL)
		return sf;
	pthread_rwlock_wrlock(&open_lock);
	memset(info, 0, sizeof(*info));
	v->pos = 0;
	sf = sf_open_virtual(&vio_ops, SFM_READ, info, v);
	if (sf == NULL)
		tidy_sf_error(msg, sizeof(msg), sf_strerror(NULL));
	pthread_rwlock_unlock(&open_lock);
	if (sf == NULL && v->err)
		set_reason(out, "unable to read: %s", strerror(v->err));
	else if (sf == NULL)
		set_reason(out, "unable to decode: %s", msg);
	return sf;
}

/* What libsndfile says of the stream. Returns 0 or -1 with the reason. */
static int check_info(const SF_INFO *info, struct decoded *out)
{
	if (info->channels <= 0) {
		set_reason(out, "no channels (%d)", info->channels);
		return -1;
	}
	if (info->channels > (int)WAVCAT_MAX_CHANNELS) {
		set_reason(out, "absurd channel count %d (over %u)",
			   info->channels, WAVCAT_MAX_CHANNELS);
		return -1;
	}
	if (info->samplerate <= 0 ||
	    info->samplerate > (int)WAVCAT_MAX_RATE) {
		set_reason(out, "absurd sample rate %d Hz", info->samplerate);
		return -1;
	}
	if (info->frames == SF_COUNT_MAX) {
		set_reason(out, "unknown length (libsndfile reports "
			   "SF_COUNT_MAX frames): truncated or damaged");
		return -1;
	}
	if (info->frames <= 0) {
		set_reason(out, "no audio data (%lld frames)",
			   (long long)info->frames);
		return -1;
	}
	return 0;
}

/* Opens path as a regular file without ever blocking on a fifo or
 * touching a device. Returns the descriptor or -1 with the reason. */
static int open_regular(const char *path, struct stat *st,
			struct decoded *out)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0) {
		set_reason(out, "unable to open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, st) != 0) {
		set_reason(out, "unable to stat: %s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st->st_mode)) {
		set_reason(out, "not a regular file");
		goto fail;
	}
	if (st->st_size == 0) {
		set_reason(out, "empty file (0 bytes)");
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* ------------------------------------------------------------------ */
/* Decoding */

/* A resampler from rate in to the output rate, reused while the input
 * rate stays the same. */
static int get_soxr(struct decoder *d, uint32_t in, struct decoded *out)
{
	soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
	soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
	/* One thread each: wavcat runs a decoder per core already. */
	soxr_runtime_spec_t rt = soxr_runtime_spec(1);
	soxr_error_t err = NULL;

	if (d->soxr && d->soxr_rate == in) {
		err = soxr_clear(d->soxr);
		if (err == NULL)
			return 0;
	}
	if (d->soxr)
		soxr_delete(d->soxr);
	d->soxr = soxr_create(in, d->cfg.rate, 1, &err, &io, &q, &rt);
	d->soxr_rate = in;
	if (d->soxr == NULL || err != NULL) {
		if (d->soxr)
			soxr_delete(d->soxr);
		d->soxr = NULL;
		set_reason(out, "unable to resample from %lu Hz: %s",
			   (unsigned long)in, err ? err : "soxr_create failed");
		out->status = DEC_FATAL;
		return -1;
	}
	return 0;
}

/* Feeds n mono samples (NULL: the end of the clip) through soxr. */
static int resample(struct decoder *d, const double *mono, size_t n,
		    struct sink *s)
{
	double t0 = prog_now();
	const float *x = NULL;
	size_t i, idone, odone;
	soxr_error_t err;

	if (mono != NULL) {
		for (i = 0; i < n; i++)
			d->fbuf[i] = (float)mono[i];
		x = d->fbuf;
	}
	do {
		err = soxr_process(d->soxr, x, n, &idone, d->rbuf, RCHUNK,
				   &odone);
		if (err != NULL) {
			set_reason(s->out, "resampling failed: %s", err);
			return -1;
		}
		sink_float(s, d->rbuf, odone);
		if (x != NULL) {
			x += idone;
			n -= idone;
			if (idone == 0 && odone == 0 && n > 0) {
				set_reason(s->out, "resampler stalled");
				return -1;
			}
		}
	} while (x != NULL ? n > 0 : odone > 0);
	d->t_resample += prog_now() - t0;
	return 0;
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

/* Reads every frame of sf into the sink (resampled when rs). 16-bit mono
 * that needs no resampling is copied as it is; the rest goes through
 * double precision. Returns frames read, or -1 with the reason set. */
static int64_t read_all(struct decoder *d, SNDFILE *sf, const SF_INFO *info,
			int rs, struct sink *s)
{
	int ch = info->channels;
	int direct = !rs && s->dtype == REC_S16 && ch == 1 &&
		     (info->format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_16;
	sf_count_t per = CHUNK / ch, got;
	const double *mono;
	int64_t total = 0;
	double t0 = prog_now();
	size_t ok;

	for (;;) {
		if (direct)
			got = sf_readf_short(sf, d->sbuf, per);
		else
			got = sf_readf_double(sf, d->ibuf, per);
		if (got <= 0)
			break;
		if (direct) {
			sink_short(s, d->sbuf, (size_t)got);
		} else if ((ok = mixdown(d, (size_t)got, ch, &mono)) <
			   (size_t)got) {
			bad_sample(s->out, mono[ok], total + (int64_t)ok);
			return -1;
		} else if (rs && s->out->n >= s->limit) {
			/* the clip is full: what follows is only counted
			 * (a 1 Hz file resampled to 44.1 kHz would
			 * otherwise cost a second per kilobyte) */
		} else if (rs) {
			d->t_read += prog_now() - t0;
			if (resample(d, mono, (size_t)got, s))
				return -1;
			t0 = prog_now();
		} else {
			sink_double(s, mono, (size_t)got);
		}
		total += got;
		if (s->nomem)
			return total;
	}
	d->t_read += prog_now() - t0;
	if (rs && s->out->n < s->limit && resample(d, NULL, 0, s))
		return -1;
	return total;
}

/* Checks what was read against the header. MP3 lengths are estimates
 * (mpg123 without a Xing/LAME frame), so only other formats must match. */
static int check_length(SNDFILE *sf, const SF_INFO *info,
			const struct vio *v, int64_t total,
			struct decoded *out)
{
	char msg[200];
	int exact = (info->format & SF_FORMAT_TYPEMASK) != SF_FORMAT_MPEG;

	if (v->err) {
		set_reason(out, "read error after %lld frames: %s",
			   (long long)total, strerror(v->err));
		return -1;
	}
	if (sf_error(sf) != SF_ERR_NO_ERROR) {
		tidy_sf_error(msg, sizeof(msg), sf_strerror(sf));
		set_reason(out, "decoding failed after %lld frames: %s",
			   (long long)total, msg);
		return -1;
	}
	if (total == 0) {
		set_reason(out, "no audio data (0 frames decoded)");
		return -1;
	}
	if (exact && total < info->frames) {
		set_reason(out, "decoded %lld of the %lld frames its header "
			   "gives (truncated or damaged)", (long long)total,
			   (long long)info->frames);
		return -1;
	}
	if (exact && total > info->frames) {
		set_reason(out, "decoded %lld frames, more than the %lld its "
			   "header gives", (long long)total,
			   (long long)info->frames);
		return -1;
	}
	return 0;
}

/* Says a clip would not fit in a record. */
static void too_long(struct decoded *out, uint64_t n, uint64_t max)
{
	set_reason(out, "too long: %llu samples, more than a record holds "
		   "(%llu); give --duration", (unsigned long long)n,
		   (unsigned long long)max);
}

/* Decodes the open file sf into out. */
static void decode_sf(struct decoder *d, SNDFILE *sf, const SF_INFO *info,
		      const struct vio *v, struct decoded *out)
{
	const struct decode_cfg *cfg = &d->cfg;
	uint32_t in = (uint32_t)info->samplerate;
	int rs = in != cfg->rate;
	struct sink s = { .out = out, .dtype = cfg->dtype };
	uint64_t want;
	int64_t total;

	if (rs && !cfg->resample) {
		char q[128];

		set_reason(out, "sample rate %lu Hz differs from the %lu Hz "
			   "of '%s'; give --rate to resample",
			   (unsigned long)in, (unsigned long)cfg->rate,
			   quote_name_buf(q, sizeof(q), cfg->rate_from));
		out->status = DEC_FATAL;
		return;
	}
	s.esize = rec_dtype_size(cfg->dtype);
	want = rs ? scale_len((uint64_t)info->frames, cfg->rate, in)
		  : (uint64_t)info->frames;
	if (!cfg->duration && want > cfg->max_samples) {
		too_long(out, want, cfg->max_samples);
		return;
	}
	/* Keep one more than a record holds to notice an MP3 longer than
	 * its estimate. Room for what the header promises, within reason:
	 * a damaged header can promise anything. */
	s.limit = cfg->duration ? cfg->duration : cfg->max_samples + 1;
	if (want > s.limit)
		want = s.limit;
	if (sink_reserve(&s, want < RESERVE_MAX ? want : RESERVE_MAX) ||
	    (rs && get_soxr(d, in, out)))
		goto out;
	total = read_all(d, sf, info, rs, &s);
	if (total < 0 || s.nomem || check_length(sf, info, v, total, out))
		goto out;
	want = rs ? scale_len((uint64_t)total, cfg->rate, in)
		  : (uint64_t)total;
	if (!cfg->duration && want > cfg->max_samples) {
		too_long(out, want, cfg->max_samples);
		return;
	}
	/* soxr's output is already this long; this only guards it. */
	sink_set_len(&s, want < s.limit ? want : s.limit);
	if (cfg->duration)
		sink_set_len(&s, cfg->duration);
out:
	if (s.nomem) {
		set_reason(out, "out of memory");
		out->status = DEC_FATAL;
	}
}

/* A small file is read whole into d->file (v->mem then points at it, and
 * v->len is what was read: a file that shrank meanwhile is shorter). A
 * large one, or one that does not fit in memory, is read as decoding goes.
 * -1 with the reason set on a read error. */
static int read_whole(struct decoder *d, struct vio *v, struct decoded *out)
{
	size_t size = (size_t)v->len, got = 0;
	ssize_t n;

	if (v->len > (sf_count_t)WHOLE_MAX) {
		posix_fadvise(v->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		return 0;
	}
	if (d->file_cap < size) {
		unsigned char *p = realloc(d->file, size);

		if (p == NULL)
			return 0; /* read as decoding goes, then */
		d->file = p;
		d->file_cap = size;
	}
	while (got < size) {
		n = vio_pread(v, d->file + got, size - got, (off_t)got);
		if (n < 0) {
			set_reason(out, "read error: %s", strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	v->mem = d->file;
	v->len = (sf_count_t)got;
	return 0;
}

void decoder_run(struct decoder *d, const char *path, struct decoded *out)
{
	struct vio v = { 0 };
	SF_INFO info;
	SNDFILE *sf;
	struct stat st;
	double t0 = prog_now();
	int fd;

	out->status = DEC_OK;
	out->n = 0;
	out->clipped = 0;
	out->reason[0] = '\0';
	fd = open_regular(path, &st, out);
	if (fd < 0)
		goto done;
	v.fd = fd;
	v.len = st.st_size;
	if (read_whole(d, &v, out))
		goto close_fd;
	if (wav_check(&v, out))
		goto close_fd;
	sf = open_sf(&v, &info, out);
	if (sf == NULL)
		goto close_fd;
	d->t_read += prog_now() - t0;
	if (check_info(&info, out) == 0)
		decode_sf(d, sf, &info, &v, out);
	t0 = prog_now();
	sf_close(sf);
close_fd:
	close(fd);
done:
	if (out->status != DEC_OK)
		out->n = 0;
	/* here, on one of many threads, rather than when the writing
	 * thread seals the record */
	out->crc = crc32c(0, out->data, (size_t)out->n *
			  rec_dtype_size(d->cfg.dtype));
	d->t_read += prog_now() - t0;
}

/* The rate the file at path claims, or -1. */
static int claimed_rate(const char *path, uint32_t *rate)
{
	struct decoded out = { 0 };
	struct vio v = { 0 };
	struct stat st;
	SF_INFO info;
	SNDFILE *sf;
	int fd, err = -1;

	fd = open_regular(path, &st, &out);
	if (fd < 0)
		return -1;
	v.fd = fd;
	v.len = st.st_size;
	if (wav_check(&v, &out) == 0 &&
	    (sf = open_sf(&v, &info, &out)) != NULL) {
		if (check_info(&info, &out) == 0) {
			*rate = (uint32_t)info.samplerate;
			err = 0;
		}
		sf_close(sf);
	}
	close(fd);
	return err;
}

int decode_probe_rate(const char *path, uint32_t *rate)
{
	struct decode_cfg cfg = { .dtype = REC_F32, .rate_from = path };
	struct decoded out = { 0 };
	struct decoder *d;

	if (claimed_rate(path, &cfg.rate))
		return -1;
	cfg.max_samples = REC_DEFAULT_MAX_DATA / sizeof(float);
	d = decoder_new(&cfg);
	if (d == NULL)
		return -1;
	decoder_run(d, path, &out);
	decoder_free(d);
	free(out.data);
	if (out.status != DEC_OK)
		return -1;
	*rate = cfg.rate;
	return 0;
}
