/*
 * wavcat.h - what the parts of wavcat share: the list of clips found in
 * the inputs (inputs.c, walk.c, cliplist.c, merge.c), their labels
 * (labels.c) and splits (split.c), the shards of a job (shard.c), the
 * decoder (decode.c) and the pool of decoder threads (pool.c).
 */
#ifndef MELPIPE_WAVCAT_H
#define MELPIPE_WAVCAT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../lib/rec.h"

/* The widest sample rate and channel count wavcat believes in; a file
 * claiming more is damaged. */
#define WAVCAT_MAX_RATE 768000u
#define WAVCAT_MAX_CHANNELS 256u
#define WAVCAT_MAX_KEY 65535u /* a record key's length is 16 bits */

/* One input: a file to decode, or one known to be unusable already. The
 * strings belong to whoever hands the clip out (see inputs_next()). */
struct clip {
	const char *path;   /* what to open (as given, or FOLDER/KEY) */
	const char *key;    /* path relative to its folder, or as given */
	const char *skip;   /* reason it cannot be used, known before
			       decoding (not a regular file...), or NULL */
	int root;           /* index of the input folder it was found
			       under, -1 for a file named by path */
	int32_t label;      /* label id, -1 for none (given in the pool) */
	uint8_t split;      /* enum rec_split (given in the pool) */
};

/* The smallest and the default --sort-buffer. */
#define WAVCAT_SORT_MIN (4u << 10)
#define WAVCAT_SORT_DEFAULT (64u << 20)

struct clip_run;
struct clip_merge;

/* Every input, handed out in output order once inputs_finish() has run.
 * Like sort(1), the list is held in a buffer of at most sort_limit bytes;
 * when it would grow past that, the entries are sorted and written as a
 * run to a temporary file, and inputs_next() merges the runs. */
struct clip_list {
	size_t sort_limit;  /* --sort-buffer: bytes of the buffer */
	const char *tmp_dir; /* where the temporary file goes */
	char *buf;          /* entries from the start up, their offsets
			       (size_t) from the end down */
	size_t cap, used, n_mem;
	uint64_t n;         /* every input, in memory and spilled */
	int tmp_fd;         /* the temporary file (unlinked), or -1 */
	uint64_t tmp_size;  /* bytes written to it */
	uint64_t n_spilled; /* entries written as first-level runs */
	struct clip_run *runs;
	size_t n_runs, runs_cap; /* every run written to the file */
	size_t run0;        /* runs before it were merged into later ones */
	char *wbuf;         /* entries on their way to the file */
	size_t wlen;
	struct clip_merge *merge; /* the ordered sequence being read */
	char **roots;       /* the input folders, as given */
	size_t n_roots;
	const char *root_dir; /* --root: paths under it are keyed and
				 labelled as found in that folder */
	int root_idx;       /* its index in roots */
	int root_walked;    /* a folder under --root was an input (else
			       its inputs were named one by one) */
	char *root_real;    /* --root with links resolved (realpath) */
	char *rp_dir;       /* the folder of the path last keyed by */
	size_t rp_len;      /* realpath (rp_dir, its length) and where */
	size_t rp_key;      /* its key starts; SIZE_MAX: not under --root */
	char *const *excludes; /* --exclude patterns */
	size_t n_excludes;
	char *match;        /* a key cut at a folder, for --exclude */
	unsigned char *excl_hit; /* per pattern: it left an input out */
	size_t n_unhit;     /* patterns that have left none out yet */
	char *key_example;  /* the first key matched against them */
	int keep_underscore; /* --include-underscore */
	uint64_t n_excluded, n_underscore; /* inputs left out */
	char *underscore_example; /* the first folder left out for '_' */
	int null_sep;       /* list files are NUL-separated (-0) */
	int stdin_used;     /* "-" was seen */
};

/* The list of inputs: inputs.c reads the arguments, walk.c the folders;
 * cliplist.c keeps the list (inputs_init(), inputs_free()) and merge.c
 * hands it out in order (inputs_finish() to inputs_keep_clip()). */

/* Readies cl for inputs_add_arg(): empty, with a sort buffer of limit
 * bytes and temporary files in tmp_dir (NULL: $TMPDIR, else /tmp). */
void inputs_init(struct clip_list *cl, size_t limit, const char *tmp_dir);
/* Sets --root dir (a folder: 0, or -1 after printing why), and the
 * --exclude patterns (kept, not copied) and whether folders starting
 * with '_' are kept, for the inputs added after. */
int inputs_set_root(struct clip_list *cl, const char *dir);
int inputs_set_excludes(struct clip_list *cl, char *const *pats, size_t n,
			int keep_underscore);
/* Adds the inputs named by one command-line argument: a folder (walked),
 * a file, @LISTFILE or "-". Returns 0, or -1 after printing why the run
 * cannot go on (a missing argument, an unreadable list, no memory, the
 * temporary file). Problems with single files become clips with a skip
 * reason. */
int inputs_add_arg(struct clip_list *cl, const char *arg);
/* Ends the listing: orders the clips by key (bytewise, then by path) and
 * warns about a file named twice; two files under one key stop the run.
 * Returns 0 or -1 after printing why. */
int inputs_finish(struct clip_list *cl);
/* Starts handing the clips out in order from the first one. Returns 0
 * or -1 after printing why. */
int inputs_rewind(struct clip_list *cl);
/* The next clip in order into *c, its strings valid until the next call
 * (or inputs_rewind()/inputs_free()): 1, 0 at the end, -1 after printing
 * why (reading the temporary file, no memory). */
int inputs_next(struct clip_list *cl, struct clip *c);
/* A cursor of its own over the clips in order, from the first one, for
 * a pass that runs beside inputs_next()'s (in another thread too: the
 * list is only read). NULL after printing why. */
struct clip_merge *inputs_open(const struct clip_list *cl);
/* The cursor's next clip: as inputs_next(). */
int inputs_read(const struct clip_list *cl, struct clip_merge *m,
		struct clip *c);
void inputs_close(struct clip_merge *m);
/* Copies clip c into *kept with its strings in *buf (grown as needed,
 * *cap bytes), for a clip that must outlive the next inputs_next().
 * Returns 0 or -1 (no memory). */
int inputs_keep_clip(const struct clip *c, char **buf, size_t *cap,
		     struct clip *kept);
/* Frees everything held by cl and closes the temporary file. */
void inputs_free(struct clip_list *cl);

/* extensions.c: whether a file name has an extension wavcat decodes in
 * folders. */
int inputs_is_audio_name(const char *name);
/* Prints the extensions wavcat looks for in folders, for --help. */
void inputs_print_extensions(FILE *f, int indent, int width);

/* readfile.c: reads all of the file at path into a NUL-terminated
 * buffer (its length in *len). NULL with errno set on failure. */
char *read_file(const char *path, size_t *len);

/* quote.c: writes s to f with control bytes escaped (\n, \t, \xHH), so
 * that a message about a file with a newline in its name stays on one
 * line. */
void quote_name(FILE *f, const char *s);
/* The same into buf (always NUL-terminated, truncated if needed). */
const char *quote_name_buf(char *buf, size_t size, const char *s);

/* labels.c */

struct label_entry;

/* The label names of the header, and how a clip gets its label. */
struct label_table {
	char **names;   /* in id order */
	size_t n;
	int mode;       /* 0 none, 1 top folders, 2 a labels file */
	struct label_entry *ent; /* a labels file's lines, by path */
	size_t n_ent;
	char *text;     /* the labels file, which ent points into */
};

/* Makes the table from the clips' top folders (see --help), in one pass
 * over the clips. Returns 0 or -1 after printing why. */
int labels_from_folders(struct clip_list *cl, struct label_table *lt);
/* Reads a file of "path,label" lines into the table and reports, in one
 * pass over the clips, its entries naming no clip and the clips it does
 * not name. Returns 0 or -1 after printing the reason. */
int labels_from_file(struct clip_list *cl, const char *file,
		     struct label_table *lt);
/* An empty table: every clip -1. */
void labels_none(struct label_table *lt);
/* The label id of clip c under lt, -1 for none. */
int32_t labels_of(const struct label_table *lt, const struct clip *c);
void labels_free(struct label_table *lt);

/* split.c */

enum split_mode { SPLIT_AUTO, SPLIT_NONE, SPLIT_LISTS, SPLIT_HASH };

struct split_opts {
	enum split_mode mode;
	double val_pct, test_pct;       /* hash:V:T */
	const char *val_list, *test_list; /* named lists, or NULL */
};

struct split_list;

/* How clips get their split: the mode in use and its lists. */
struct splitter {
	enum split_mode mode;   /* SPLIT_NONE, _LISTS or _HASH */
	double val_pct, test_pct;
	struct split_list *lists;
	size_t n_lists;
};

/* Parses the argument of --split into o. Returns 0 or -1 (bad). */
int split_parse(const char *arg, struct split_opts *o);
/* Readies sp to give clips their splits (loading the lists, reporting
 * in one pass over the clips their entries naming no input); writes the
 * header's "splits" value into desc. Returns 0 or -1 after printing
 * why. */
int split_assign(struct clip_list *cl, const struct split_opts *o,
		 struct splitter *sp, char *desc, size_t desc_size);
/* The split (enum rec_split) of clip c under sp. */
int split_of(const struct splitter *sp, const struct clip *c);
/* Frees the lists held by sp (split_assign()); accepts an empty one. */
void split_free(struct splitter *sp);
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
	int hw;                  /* blocks through the SHA extensions (set
				    by sha1_init() where the processor has
				    them; a test may clear it) */
};

/* Whether this processor hashes blocks with the SHA extensions. */
int sha1_hw_available(void);

void sha1_init(struct sha1_ctx *c);
void sha1_update(struct sha1_ctx *c, const void *data, size_t len);
void sha1_final(struct sha1_ctx *c, unsigned char out[20]);

/* shard.c: one job cut into shards (formats/record.md, Shard streams). */

/* --shard K/N: shard k (0-based) of n; the whole run is 0/1. */
struct shard_sel {
	uint32_t k, n;
};

/* shard_value_parse() (tools/common/shards.h) into *s: 0, or
 * SHARD_BAD_SYNTAX, SHARD_BAD_N or SHARD_BAD_K, *s then untouched. */
int shard_parse(const char *arg, struct shard_sel *s);
/* How many of a job's clips shard s holds: the indices below clips that
 * are s->k modulo s->n. */
uint64_t shard_clips(const struct shard_sel *s, uint64_t clips);
/* The job's index of the shard's j-th clip (0-based). */
uint64_t shard_clip_index(const struct shard_sel *s, uint64_t j);

struct label_table;
struct splitter;
struct rec_header;

/* The job's fingerprint, 40 lowercase hex digits and a NUL, into hex:
 * the SHA-1 of every clip's key NUL label NUL split NUL in order (one
 * pass over cl from its start), then of h's pairs but producer, stage,
 * shard, job and clips, as key NUL value NUL. Reads cl through a cursor
 * of its own (inputs_open()). Returns 0, or -1 after printing why
 * (reading the list of inputs). */
int shard_job(struct clip_list *cl, const struct label_table *lt,
	      const struct splitter *sp, const struct rec_header *h,
	      char hex[41]);

/* decode.c */

/* The default --piece-samples: a clip longer than this many samples is
 * written in pieces of it (16 MiB of f32). */
#define WAVCAT_PIECE_DEFAULT (1u << 22)

struct decode_cfg {
	uint32_t rate;       /* output rate in Hz */
	int resample;        /* 1: resample to rate; 0: a file at another
				rate is a fatal mismatch */
	const char *rate_from; /* without resampling: the file that set
				  the rate, for the message */
	uint64_t duration;   /* pad/trim to this many samples; 0: keep */
	int dtype;           /* REC_S16 or REC_F32 */
	uint64_t piece_samples; /* a clip longer than this comes in pieces
				   of this many samples (at least 1) */
	/* the output, once open: a clip decoded whole is copied into its
	 * ring of shared memory by the decoder when it lends room
	 * (rec_writer_lease()); NULL (or pointing to NULL): not */
	_Atomic(rec_writer *) *lease_to;
};

enum decode_status {
	DEC_OK = 0,
	DEC_SKIP = 1,   /* unusable input; reason says why */
	DEC_FATAL = 2   /* stops the run: no memory, rate mismatch */
};

/* The samples of one clip, or of one piece of it, and once the clip is
 * decoded the outcome; its buffer is reused clip after clip. */
struct decoded {
	int status;          /* enum decode_status */
	void *data;          /* samples of dtype */
	size_t cap;          /* bytes allocated at data */
	uint64_t n;          /* samples at data */
	uint64_t offset;     /* the first of them in the clip: the samples
				of the pieces handed on before; 0 for a
				clip in one record */
	uint64_t clip_samples; /* the clip's length: in a piece, when known
				  before the end (else 0); at the end of a
				  clip decoded, offset + n; cut short, as
				  in its pieces */
	uint64_t clipped;    /* samples clipped to 16 bits */
	int fitted;          /* with a duration, a clip decoded whole was:
				+1 padded to it, -1 trimmed, 0 neither */
	uint32_t crc;        /* CRC32C of the n samples' bytes */
	rec_lease lease;     /* the same samples in the output's ring, when
				it lent room (ptr NULL: not): written from
				there, without a copy */
	char reason[256];
	/* The file as libsndfile found it, once opened: the payload of the
	 * clip's source record (formats/record.md), key NUL value NUL
	 * pairs; source_len 0 when the file could not be opened (no
	 * source record then). Pieces carry it too. */
	char source[192];
	size_t source_len;
};

/* Where the pieces of a clip longer than piece_samples go. Called with
 * out holding the next piece (piece_samples samples from out->offset,
 * their crc, clipped and clip_samples set), once a sample after it is
 * known to come; the callee may swap out->data and out->cap for another
 * buffer of its own (the decoder fills out->data from its start again).
 * Returns 0 to go on, or nonzero to abandon the clip (the run stops). */
typedef int (*decode_emit_fn)(void *ctx, struct decoded *out);

struct decoder;

/* A decoder for one thread: scratch buffers and a resampler kept from
 * clip to clip. NULL when out of memory. */
struct decoder *decoder_new(const struct decode_cfg *cfg);
void decoder_free(struct decoder *d);
/* Decodes the file at path into out: the status and, for a clip of at
 * most piece_samples samples, all of it; a longer one is handed to
 * emit(ctx, out) (NULL: dropped) a piece at a time, and out keeps what
 * follows the last piece, at least one sample. A clip is cut short when
 * its decoding fails after some pieces, or when its file ends otherwise
 * than its header says (truncated) after any sample: status DEC_SKIP,
 * out->n the samples decoded since the last piece (maybe 0; offset + n,
 * above 0, are kept), and a reason saying how many. Any other clip that
 * fails keeps no sample (offset and n 0). */
void decoder_run(struct decoder *d, const char *path, struct decoded *out,
		 decode_emit_fn emit, void *ctx);
/* Seconds spent opening and reading files / resampling / waiting for
 * emit() to take pieces, so far. */
void decoder_times(const struct decoder *d, double *t_read,
		   double *t_resample, double *t_emit);
/* --duration SECONDS in samples at rate (rounded to nearest; at most
 * UINT64_MAX / 2), 0 when less than one. */
uint64_t decode_seconds(double seconds, uint32_t rate);
/* The bytes of the buffer a clip of samples samples (at most a piece)
 * is decoded into: what a pool's slot keeps from clip to clip. */
size_t decode_buffer_bytes(const struct decode_cfg *cfg, uint64_t samples);
/* The sample rate of the file at path, when the file gives samples as a
 * clip decoded under like (its dtype, piece size and duration, or with
 * seconds nonzero, seconds at the file's rate), whole or cut short: 0,
 * or -1 with why not in reason (size bytes). The file is
 * decoded whole to know, without resampling, its pieces dropped as they
 * come. */
int decode_probe_rate(const char *path, const struct decode_cfg *like,
		      double seconds, uint32_t *rate, char *reason,
		      size_t size);

/* pool.c */

struct pool;

/* A clip on the pool: its own copy of the clip's strings; the piece
 * waiting for the writer, and once decoded, the result. */
struct job {
	struct clip clip;    /* strings in buf, owned by the slot */
	char *buf;
	size_t cap;
	struct decoded piece; /* a piece handed on (pool_wait()) */
	struct decoded out;
};

/* What a decoder thread does to a clip before it decodes it: give it
 * its label and split, from tables that do not change while the pool
 * runs (so that the caller, which also writes the output, need not). */
typedef void (*pool_annotate_fn)(void *ctx, struct clip *c);

/* Starts n_threads decoders, each free to run up to window clips ahead
 * of the one the caller waits for; each calls annotate(ctx, clip) (when
 * not NULL) on a clip before decoding it. Returns 0, or -1 (no memory,
 * no thread) with *out NULL. */
int pool_start(struct pool **out, const struct decode_cfg *cfg,
	       size_t n_threads, size_t window, pool_annotate_fn annotate,
	       void *ctx);
/* Whether clip number `submitted` (the next one) has a free slot. */
int pool_has_room(const struct pool *p);
/* How many slots are free: clips that may be submitted now. */
size_t pool_room(const struct pool *p);
/* Hands the next clip to the decoders (copied: c's strings may go once
 * this returns). Only when pool_has_room(). Returns 0 or -1 (no
 * memory). The decoders asleep see it once pool_wake() runs. */
int pool_submit(struct pool *p, const struct clip *c);
/* Wakes sleeping decoders for the clips handed in and not yet taken:
 * after pool_submit(), once for the clips handed in together. */
void pool_wake(struct pool *p);
/* Waits until clip i (submitted) has a piece ready or is decoded, and
 * returns it: with *piece 1, the next piece in job->piece, valid until
 * pool_piece_done(i); with *piece 0, the end of the clip in job->out,
 * valid until pool_release(i). Clips must be waited for in order, and
 * a clip's pieces taken until it ends: its decoder waits for that. */
struct job *pool_wait(struct pool *p, uint64_t i, int *piece);
/* The caller is done with clip i's piece: its decoder may hand on the
 * next. */
void pool_piece_done(struct pool *p, uint64_t i);
/* Frees clip i's slot for a later clip. */
void pool_release(struct pool *p, uint64_t i);
/* How many times the caller has woken a sleeping decoder. */
uint64_t pool_wakes(const struct pool *p);
/* Stops the threads (after their current clip, or at once where one
 * waits to hand on a piece), frees p; accepts NULL. Adds the threads'
 * time to *t_read, *t_resample and *t_emit when not NULL, and the time
 * the caller spent waiting in pool_wait() to *t_wait. */
void pool_stop(struct pool *p, double *t_read, double *t_resample,
	       double *t_emit, double *t_wait);

#endif
