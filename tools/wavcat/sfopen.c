/*
 * sfopen.c - opening one file for libsndfile: a regular file only, never
 * blocking on a fifo; read whole when small; a RIFF WAVE header checked
 * for what libsndfile lets pass; and read through virtual I/O callbacks,
 * so that libsndfile never holds a descriptor of its own.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>

#include "decode_priv.h"

/* Files up to this size are read whole, in one pread(2), and decoded from
 * memory: libsndfile otherwise reads a clip of a second in 15-20 small
 * reads, a system call each. Larger files are read as decoding goes. */
#define WHOLE_MAX (4u << 20)

/* libsndfile keeps why an open failed in a global (sf_strerror(NULL)).
 * Opens share this lock; a failed one is retried holding it alone, so
 * the text read is its own. */
static pthread_rwlock_t open_lock = PTHREAD_RWLOCK_INITIALIZER;

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
 * data size larger than the file (for PCM and float, ws gets what the
 * chunk claims: decoded, the clip is cut short there; other encodings,
 * whose frames are not a fixed size, are refused), and reads a size of 0
 * or 0xFFFFFFFF with bytes after it (a writer that never came back to
 * fill the size in) as "up to the end". A size of 0 with nothing after
 * it is a finished file of no samples. */
static int wav_check_data(uint32_t size, uint64_t avail, unsigned tag,
			  unsigned align, struct decoded *out,
			  struct wav_short *ws)
{
	int pcm = (tag == 1 || tag == 3) && align > 0;

	if (size == 0 && avail == 0) {
		set_reason(out, "no samples (0 frames)");
		return -1;
	}
	if ((size == 0 || size == UINT32_MAX) && avail > 0) {
		set_reason(out, "data chunk size is %s with %llu bytes after "
			   "it (a file never finished?)",
			   size ? "0xFFFFFFFF" : "0",
			   (unsigned long long)avail);
		return -1;
	}
	if (size > avail && pcm) {
		ws->claimed = size;
		ws->held = avail;
		ws->align = align;
		return 0;
	}
	if (size > avail) {
		set_reason(out, "data chunk claims %lu bytes but the file "
			   "holds %llu (truncated?)", (unsigned long)size,
			   (unsigned long long)avail);
		return -1;
	}
	/* PCM or float: a partial frame means a damaged file. */
	if (pcm && size % align != 0) {
		set_reason(out, "data length %lu is not a whole number of "
			   "%u-byte frames", (unsigned long)size, align);
		return -1;
	}
	return 0;
}

/* Walks the chunks of a RIFF WAVE file. Other files pass. Returns 0 or
 * -1 with the reason set. */
int wav_check(const struct vio *v, struct decoded *out,
	      struct wav_short *ws)
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
					      out, ws);
		off += 8 + (uint64_t)size + (size & 1);
	}
	return 0;
}

/* "Format not recognised." -> "format not recognised". */
void tidy_sf_error(char *dst, size_t size, const char *msg)
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

SNDFILE *open_sf(struct vio *v, SF_INFO *info, struct decoded *out)
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
int check_info(const SF_INFO *info, struct decoded *out)
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

/* libsndfile's names of its major formats and subtypes, as sndfile.h
 * spells them without SF_FORMAT_. */
struct sf_name {
	int v;
	const char *name;
};

static const struct sf_name major_names[] = {
	{ SF_FORMAT_WAV, "WAV" }, { SF_FORMAT_AIFF, "AIFF" },
	{ SF_FORMAT_AU, "AU" }, { SF_FORMAT_RAW, "RAW" },
	{ SF_FORMAT_PAF, "PAF" }, { SF_FORMAT_SVX, "SVX" },
	{ SF_FORMAT_NIST, "NIST" }, { SF_FORMAT_VOC, "VOC" },
	{ SF_FORMAT_IRCAM, "IRCAM" }, { SF_FORMAT_W64, "W64" },
	{ SF_FORMAT_MAT4, "MAT4" }, { SF_FORMAT_MAT5, "MAT5" },
	{ SF_FORMAT_PVF, "PVF" }, { SF_FORMAT_XI, "XI" },
	{ SF_FORMAT_HTK, "HTK" }, { SF_FORMAT_SDS, "SDS" },
	{ SF_FORMAT_AVR, "AVR" }, { SF_FORMAT_WAVEX, "WAVEX" },
	{ SF_FORMAT_SD2, "SD2" }, { SF_FORMAT_FLAC, "FLAC" },
	{ SF_FORMAT_CAF, "CAF" }, { SF_FORMAT_WVE, "WVE" },
	{ SF_FORMAT_OGG, "OGG" }, { SF_FORMAT_MPC2K, "MPC2K" },
	{ SF_FORMAT_RF64, "RF64" }, { SF_FORMAT_MPEG, "MPEG" },
};

static const struct sf_name subtype_names[] = {
	{ SF_FORMAT_PCM_S8, "PCM_S8" }, { SF_FORMAT_PCM_16, "PCM_16" },
	{ SF_FORMAT_PCM_24, "PCM_24" }, { SF_FORMAT_PCM_32, "PCM_32" },
	{ SF_FORMAT_PCM_U8, "PCM_U8" }, { SF_FORMAT_FLOAT, "FLOAT" },
	{ SF_FORMAT_DOUBLE, "DOUBLE" }, { SF_FORMAT_ULAW, "ULAW" },
	{ SF_FORMAT_ALAW, "ALAW" },
	{ SF_FORMAT_IMA_ADPCM, "IMA_ADPCM" },
	{ SF_FORMAT_MS_ADPCM, "MS_ADPCM" },
	{ SF_FORMAT_GSM610, "GSM610" },
	{ SF_FORMAT_VOX_ADPCM, "VOX_ADPCM" },
	{ SF_FORMAT_VORBIS, "VORBIS" }, { SF_FORMAT_OPUS, "OPUS" },
	{ SF_FORMAT_ALAC_16, "ALAC_16" },
	{ SF_FORMAT_ALAC_20, "ALAC_20" },
	{ SF_FORMAT_ALAC_24, "ALAC_24" },
	{ SF_FORMAT_ALAC_32, "ALAC_32" },
	{ SF_FORMAT_MPEG_LAYER_I, "MPEG_LAYER_I" },
	{ SF_FORMAT_MPEG_LAYER_II, "MPEG_LAYER_II" },
	{ SF_FORMAT_MPEG_LAYER_III, "MPEG_LAYER_III" },
};

/* The name of v in t[n], or NULL. */
static const char *sf_name_of(const struct sf_name *t, size_t n, int v)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].v == v)
			return t[i].name;
	return NULL;
}

/* Appends key NUL value NUL to out's source pairs (always fits: the
 * values are short). */
static void source_pair(struct decoded *out, const char *key,
			const char *value)
{
	size_t kl = strlen(key) + 1, vl = strlen(value) + 1;

	if (out->source_len + kl + vl > sizeof(out->source))
		return;
	memcpy(out->source + out->source_len, key, kl);
	memcpy(out->source + out->source_len + kl, value, vl);
	out->source_len += kl + vl;
}

void describe_source(const SF_INFO *info, struct decoded *out)
{
	int major = info->format & SF_FORMAT_TYPEMASK;
	const char *mname = sf_name_of(major_names, sizeof(major_names) /
				       sizeof(major_names[0]), major);
	const char *sname = sf_name_of(subtype_names, sizeof(subtype_names) /
				       sizeof(subtype_names[0]),
				       info->format & SF_FORMAT_SUBMASK);
	char v[64];

	out->source_len = 0;
	snprintf(v, sizeof(v), "%d", info->samplerate);
	source_pair(out, "source_rate", v);
	snprintf(v, sizeof(v), "%d", info->channels);
	source_pair(out, "source_channels", v);
	if (major != SF_FORMAT_MPEG) {
		snprintf(v, sizeof(v), "%lld", (long long)info->frames);
		source_pair(out, "source_frames", v);
	}
	if (mname && sname)
		snprintf(v, sizeof(v), "%s %s", mname, sname);
	else if (mname)
		snprintf(v, sizeof(v), "%s 0x%04x", mname,
			 info->format & SF_FORMAT_SUBMASK);
	else
		snprintf(v, sizeof(v), "0x%08x", info->format);
	source_pair(out, "source_format", v);
}

/* Opens path as a regular file without ever blocking on a fifo or
 * touching a device. Returns the descriptor or -1 with the reason. */
int open_regular(const char *path, struct stat *st, struct decoded *out)
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

/* A small file is read whole into d->file (v->mem then points at it, and
 * v->len is what was read: a file that shrank meanwhile is shorter). A
 * large one, or one that does not fit in memory, is read as decoding goes.
 * -1 with the reason set on a read error. */
int read_whole(struct decoder *d, struct vio *v, struct decoded *out)
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
