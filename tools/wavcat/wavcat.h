/*
 * wavcat.h - what the parts of wavcat share: the list of clips found in
 * the inputs (inputs.c), their labels (labels.c) and splits (split.c),
 * the decoder (decode.c) and the pool of decoder threads (pool.c).
 */
#ifndef MELPIPE_WAVCAT_H
#define MELPIPE_WAVCAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The widest sample rate and channel count wavcat believes in; a file
 * claiming more is damaged. */
#define WAVCAT_MAX_RATE 768000u
#define WAVCAT_MAX_CHANNELS 256u
#define WAVCAT_MAX_KEY 65535u /* a record key's length is 16 bits */

/* One input: a file to decode, or one known to be unusable already. */
struct clip {
	const char *path;   /* what to open (as given, or FOLDER/KEY) */
	const char *key;    /* path relative to its folder, or as given */
	const char *skip;   /* reason it cannot be used, known before
			       decoding (not a regular file...), or NULL */
	size_t path_off, key_off, skip_off; /* the same as offsets into
			       the arena, until inputs_finish() */
	int root;           /* index of the input folder it was found
			       under, -1 for a file named by path */
	int32_t label;      /* label id, -1 for none */
	uint8_t split;      /* enum rec_split */
};

/* Every input, in output order once inputs_finish() has run. */
struct clip_list {
	struct clip *v;
	size_t n, cap;
	char *arena;        /* path and key strings, by offset until
			       inputs_finish() turns them into pointers */
	size_t arena_len, arena_cap;
	char **roots;       /* the input folders, as given */
	size_t n_roots;
	int null_sep;       /* list files are NUL-separated (-0) */
	int stdin_used;     /* "-" was seen */
};

/* inputs.c */

/* Adds the inputs named by one command-line argument: a folder (walked),
 * a file, @LISTFILE or "-". Returns 0, or -1 after printing why the run
 * cannot go on (a missing argument, an unreadable list, no memory).
 * Problems with single files become clips with a skip reason. */
int inputs_add_arg(struct clip_list *cl, const char *arg);
/* Sorts the clips by key (bytewise, then by path) and warns about
 * duplicate keys. Returns 0 or -1 (no memory). */
int inputs_finish(struct clip_list *cl);
/* Frees everything held by cl. */
void inputs_free(struct clip_list *cl);
/* Whether a file name has an extension wavcat decodes in folders. */
int inputs_is_audio_name(const char *name);
/* Prints the extensions wavcat looks for in folders, for --help. */
void inputs_print_extensions(FILE *f, int indent, int width);
/* The clips whose key equals key: [*first, *first + count). */
size_t inputs_find_key(const struct clip_list *cl, const char *key,
		       size_t *first);
/* Reads all of the file at path into a NUL-terminated buffer (its length
 * in *len). NULL with errno set on failure. */
char *read_file(const char *path, size_t *len);
/* Writes s to f with control bytes escaped (\n, \t, \xHH), so that a
 * message about a file with a newline in its name stays on one line. */
void quote_name(FILE *f, const char *s);
/* The same into buf (always NUL-terminated, truncated if needed). */
const char *quote_name_buf(char *buf, size_t size, const char *s);

/* labels.c */

struct label_table {
	char **names;   /* in id order */
	size_t n;
};

/* Labels every clip by its top folder (see --help). Returns 0 or -1. */
int labels_from_folders(struct clip_list *cl, struct label_table *lt);
/* Labels every clip from a file of "path,label" lines. Returns 0 or -1
 * after printing the reason. */
int labels_from_file(struct clip_list *cl, const char *file,
		     struct label_table *lt);
/* Sets every clip's label to -1 and leaves the table empty. */
void labels_none(struct clip_list *cl, struct label_table *lt);
void labels_free(struct label_table *lt);

/* split.c */

enum split_mode { SPLIT_AUTO, SPLIT_NONE, SPLIT_LISTS, SPLIT_HASH };

struct split_opts {
	enum split_mode mode;
	double val_pct, test_pct;       /* hash:V:T */
	const char *val_list, *test_list; /* named lists, or NULL */
};

/* Parses the argument of --split into o. Returns 0 or -1 (bad). */
int split_parse(const char *arg, struct split_opts *o);
/* Gives every clip its split; writes the header's "splits" value into
 * desc. Returns 0 or -1 after printing why. */
int split_assign(struct clip_list *cl, const struct split_opts *o,
		 char *desc, size_t desc_size);
/* TensorFlow speech_commands' which_set() for the file name in path:
 * REC_SPLIT_VALIDATION, _TESTING or _TRAINING. */
int split_which_set(const char *path, double val_pct, double test_pct);

/* sha1.c: SHA-1 (FIPS 180-4), init, update with any number of bytes,
 * final writes the 20-byte digest. */

struct sha1_ctx {
	uint32_t h[5];
	uint64_t len;            /* bytes hashed so far */
	unsigned char buf[64];   /* a partial block */
	size_t fill;
};

void sha1_init(struct sha1_ctx *c);
void sha1_update(struct sha1_ctx *c, const void *data, size_t len);
void sha1_final(struct sha1_ctx *c, unsigned char out[20]);

/* decode.c */

struct decode_cfg {
	uint32_t rate;       /* output rate in Hz */
	int resample;        /* 1: resample to rate; 0: a file at another
				rate is a fatal mismatch */
	const char *rate_from; /* without resampling: the file that set
				  the rate, for the message */
	uint64_t duration;   /* pad/trim to this many samples; 0: keep */
	int dtype;           /* REC_S16 or REC_F32 */
	uint64_t max_samples; /* largest clip a record can carry */
};

enum decode_status {
	DEC_OK = 0,
	DEC_SKIP = 1,   /* unusable input; reason says why */
	DEC_FATAL = 2   /* stops the run: no memory, rate mismatch */
};

/* The result of decoding one clip; its buffer is reused clip after clip. */
struct decoded {
	int status;          /* enum decode_status */
	void *data;          /* samples of dtype */
	size_t cap;          /* bytes allocated at data */
	uint64_t n;          /* samples */
	uint64_t clipped;    /* samples clipped to 16 bits */
	uint32_t crc;        /* CRC32C of the n samples' bytes */
	char reason[256];
};

struct decoder;

/* A decoder for one thread: scratch buffers and a resampler kept from
 * clip to clip. NULL when out of memory. */
struct decoder *decoder_new(const struct decode_cfg *cfg);
void decoder_free(struct decoder *d);
/* Decodes the file at path into out (status, samples or reason). */
void decoder_run(struct decoder *d, const char *path, struct decoded *out);
/* Seconds spent opening and reading files / resampling, so far. */
void decoder_times(const struct decoder *d, double *t_read,
		   double *t_resample);
/* The sample rate of the file at path: 0, or -1 when the file is not
 * usable (it is decoded whole to know). */
int decode_probe_rate(const char *path, uint32_t *rate);

/* pool.c */

struct pool;

/* Starts n_threads decoders over the clips, each free to run up to
 * window clips ahead of the one the caller waits for. Returns 0, or -1
 * (no memory, no thread) with *out NULL. */
int pool_start(struct pool **out, const struct clip_list *cl,
	       const struct decode_cfg *cfg, size_t n_threads, size_t window);
/* Waits until clip i is decoded and returns its result, valid until
 * pool_release(i). Clips must be waited for in order. */
struct decoded *pool_wait(struct pool *p, uint64_t i);
/* Frees clip i's slot for a later clip. */
void pool_release(struct pool *p, uint64_t i);
/* Stops the threads (after their current clip), frees p; accepts NULL.
 * Adds the threads' time to *t_read and *t_resample when not NULL, and
 * the time the caller spent waiting in pool_wait() to *t_wait. */
void pool_stop(struct pool *p, double *t_read, double *t_resample,
	       double *t_wait);

#endif
