/*
 * decode_priv.h - what the files of wavcat's decoder share: decode.c (one
 * file to one clip), sfopen.c (opening a file for libsndfile), resample.c
 * (soxr) and sink.c (the clip's samples in the output type). Nothing
 * outside those files includes it.
 */
#ifndef MELPIPE_DECODE_PRIV_H
#define MELPIPE_DECODE_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <sndfile.h>
#include <soxr.h>

#include "wavcat.h"

/* Samples read per libsndfile call (all channels): large reads, and
 * scratch buffers that stay small whatever the clip length. */
#define CHUNK 65536
/* Output room per soxr call; soxr keeps what does not fit. */
#define RCHUNK 65536

struct decoder {
	struct decode_cfg cfg;
	soxr_t soxr;             /* kept while files share an input rate */
	uint32_t soxr_rate;
	double *ibuf;            /* interleaved samples, CHUNK */
	short *sbuf;             /* 16-bit samples, CHUNK */
	double *mono;            /* mixed down, CHUNK */
	float *fbuf;             /* the same in float for soxr, CHUNK */
	float *rbuf;             /* resampled, RCHUNK */
	unsigned char *file;     /* the whole file, if small (sfopen.c) */
	size_t file_cap;
	double t_read, t_resample, t_emit;
};

/* Where samples go: the clip's buffer in the output type, up to limit
 * in all, handed on a piece at a time once it outgrows one. */
struct sink {
	struct decoded *out;
	int dtype;
	size_t esize;
	uint64_t limit;          /* samples kept at most */
	uint64_t piece;          /* samples per piece */
	decode_emit_fn emit;     /* where pieces go (NULL: dropped) */
	void *ctx;
	double t_emit;           /* seconds spent in emit() */
	int nomem;
	int stop;                /* no more samples: out of memory, or
				    emit() abandoned the clip */
};

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

/* decode.c: says why the clip is unusable (a skip, unless the status is
 * already fatal). */
void set_reason(struct decoded *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* sfopen.c: each int returns 0 (or the descriptor), or -1 with the
 * reason set. */
int open_regular(const char *path, struct stat *st, struct decoded *out);
int read_whole(struct decoder *d, struct vio *v, struct decoded *out);
/* A PCM or float WAV file whose data chunk claims more bytes than the
 * file holds: libsndfile reads the frames there are and says no more, so
 * wav_check() tells decode_sf() what the chunk promised, and the clip
 * ends early there as any file cut short does (FLAC's included). */
struct wav_short {
	uint64_t claimed, held; /* the data chunk's bytes; 0: not short */
	unsigned align;         /* bytes a frame */
};

int wav_check(const struct vio *v, struct decoded *out,
	      struct wav_short *ws);
SNDFILE *open_sf(struct vio *v, SF_INFO *info, struct decoded *out);
int check_info(const SF_INFO *info, struct decoded *out);
/* Describes the file info says (checked by check_info()) in out's
 * source pairs: source_rate, source_channels, source_frames (not for
 * MPEG, whose count libsndfile estimates) and source_format. */
void describe_source(const SF_INFO *info, struct decoded *out);
void tidy_sf_error(char *dst, size_t size, const char *msg);

/* resample.c */
int get_soxr(struct decoder *d, uint32_t in, struct decoded *out);
int resample(struct decoder *d, const double *mono, size_t n,
	     struct sink *s);

/* sink.c: samples offered past limit are dropped; s->stop says that
 * nothing more is taken. */
int sink_reserve(struct sink *s, uint64_t n);
void sink_float(struct sink *s, const float *x, size_t n);
void sink_double(struct sink *s, const double *x, size_t n);
void sink_short(struct sink *s, const short *x, size_t n);
/* Room for up to n 16-bit samples written in place (REC_S16 only): the
 * count *k (0 when the sink takes no more) and where they go; the caller
 * then says how many it wrote with sink_wrote(). */
int16_t *sink_room(struct sink *s, size_t n, size_t *k);
void sink_wrote(struct sink *s, size_t n);
/* The samples kept so far, in the pieces handed on and the buffer. */
uint64_t sink_kept(const struct sink *s);
void sink_set_len(struct sink *s, uint64_t n);

#endif
