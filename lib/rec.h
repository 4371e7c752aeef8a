/*
 * rec.h - reader and writer of melpipe record streams.
 *
 * The byte format is specified in formats/record.md; this header is the C
 * interface to it. A stream is a header record, any number of data records
 * (audio, windows of audio, features, skipped inputs) and a trailer record.
 *
 * The library never prints and never exits: every function that can fail
 * returns a rec_err (0 on success, negative on failure); rec_strerror()
 * names the code, and rec_reader_detail()/rec_writer_detail() give a
 * sentence with the record number and byte offset of the fault.
 *
 * Records are numbered in stream order from 0, the header being record 0
 * (so the first data record is record 1); recdump prints the same numbers.
 */
#ifndef MELPIPE_REC_H
#define MELPIPE_REC_H

#include <stddef.h>
#include <stdint.h>

/* The newest format version this library reads. A record's version byte
 * is the lowest version that defines it: 6 for features-windows records,
 * 5 for ring records and shared
 * data records (which only a pipe between two stages of one build ever
 * carries), 4 for source records, 3 for pieces of an item (the more and
 * cont flags), 2 for windows records, 1 for all others, so a stream
 * without them stays readable by older readers. */
#define REC_FORMAT_VERSION 6u
#define REC_MAGIC "MELP"          /* the first four bytes of every record */
#define REC_HDR_SIZE 24u          /* fixed record header */
#define REC_ITEM_META_SIZE 48u    /* fixed part of an item's metadata */
#define REC_WINDOWS_META_SIZE 16u /* a windows or features-windows
				   record's fields after its key */
#define REC_MAX_META (1u << 20)   /* metadata cap: 1 MiB */
#define REC_DEFAULT_MAX_DATA (1u << 28) /* default payload cap: 256 MiB */

/* Record types (byte 4 of a record header). */
enum rec_type {
	REC_T_HEADER = 1,
	REC_T_AUDIO = 2,    /* samples: dim0 = n_samples, dim1 = channels (1) */
	REC_T_FEATURES = 3, /* matrix: dim0 = n_mels, dim1 = n_frames, row-major */
	REC_T_SKIPPED = 4,  /* an input that could not be used; data = reason */
	REC_T_TRAILER = 5,
	REC_T_WINDOWS = 6,  /* samples as in audio, and n_windows windows of
			       them described (format version 2) */
	REC_T_SOURCE = 7,   /* the input file as wavcat found it, right
			       before its clip's first data record; data =
			       key NUL value NUL pairs (format version 4) */
	REC_T_RING = 8,     /* offers a ring of shared memory (format
			       version 5); the reader handles it itself and
			       never hands it out */
	REC_T_FWINDOWS = 9  /* the features of n_windows windows of a clip,
			       [n_windows][dim0][dim1] (format version 6) */
};

/* Windows flags. */
#define REC_WIN_PAD 0x01u /* windows running past the samples are padded
			     with zeros; without it every window fits */

/* Record flags (byte 5). */
#define REC_F_ZSTD 0x01u /* payload (not metadata) is one zstd frame */
#define REC_F_MORE 0x02u /* a piece of an item that goes on in the next
			    record (audio and features; version 3) */
#define REC_F_CONT 0x04u /* a piece that goes on with the item of the
			    record before (audio and features; version 3) */
#define REC_F_SHARED 0x08u /* the payload is in a ring of shared memory;
			      the record carries a reference to it
			      (audio, windows, features; version 5) */

/* rec_item.flags: an item in pieces (formats/record.md, Items in
 * pieces). The first piece has MORE, middle ones MORE | CONT, the last
 * CONT alone; an item in one record has neither. Their values are those
 * of the record flags. */
#define REC_ITEM_MORE REC_F_MORE
#define REC_ITEM_CONT REC_F_CONT

/* Element types. */
enum rec_dtype { REC_S16 = 1, REC_F32 = 2, REC_F16 = 3, REC_BF16 = 4 };

/* Splits. */
enum rec_split {
	REC_SPLIT_NONE = 0,
	REC_SPLIT_TRAINING = 1,
	REC_SPLIT_VALIDATION = 2,
	REC_SPLIT_TESTING = 3
};

/* Error codes: 0 is success, all failures are negative. */
enum rec_err {
	REC_OK = 0,
	REC_END = 1,        /* not an error: rec_read() reached a valid trailer */
	REC_E_NOMEM = -1,
	REC_E_IO = -2,      /* read/write failed; errno-derived text in detail */
	REC_E_EPIPE = -3,   /* the reader of our output went away */
	REC_E_MAGIC = -4,   /* not a record stream / lost framing */
	REC_E_VERSION = -5, /* newer format version than this library reads */
	REC_E_CRC = -6,     /* checksum mismatch */
	REC_E_TOOBIG = -7,  /* a length field over the size cap */
	REC_E_TRUNC = -8,   /* input ended inside a record or before a trailer */
	REC_E_FORMAT = -9,  /* fields inconsistent with the spec */
	REC_E_ORDER = -10,  /* record where it may not be (e.g. two headers) */
	REC_E_TRAILING = -11, /* bytes after the trailer */
	REC_E_ZSTD = -12,   /* payload does not decompress to its raw length */
	REC_E_INVAL = -13   /* bad argument from the caller */
};

/* The text of an error code ("checksum mismatch"). Never NULL. */
const char *rec_strerror(int err);

/* Size in bytes of one element of dtype, 0 for an unknown dtype. */
size_t rec_dtype_size(int dtype);
/* "s16", "f32", "f16", "bf16"; NULL for an unknown dtype. */
const char *rec_dtype_name(int dtype);
/* Parses a dtype name; returns the dtype or 0 if unknown. */
int rec_dtype_parse(const char *name);
/* "none", "training", "validation", "testing"; NULL if out of range. */
const char *rec_split_name(int split);

/*
 * Stream header: an ordered list of key/value pairs (both NUL-free strings).
 * A key may repeat (label, stage): the order of repeats is meaningful.
 * The well-known keys are listed in formats/record.md.
 */
typedef struct rec_header rec_header;

/* A new empty header, or NULL when out of memory. */
rec_header *rec_header_new(void);
/* A deep copy, or NULL when out of memory. */
rec_header *rec_header_dup(const rec_header *h);
/* Frees h; accepts NULL. */
void rec_header_free(rec_header *h);
/* Appends key=value (repeats allowed). */
int rec_header_add(rec_header *h, const char *key, const char *value);
/* Sets key to value: replaces the first pair with that key and removes any
 * later ones, or appends when there is none. */
int rec_header_set(rec_header *h, const char *key, const char *value);
/* Same with an unsigned / double value formatted by the library
 * (doubles with %.17g so they survive a round trip). */
int rec_header_set_u64(rec_header *h, const char *key, uint64_t value);
int rec_header_set_double(rec_header *h, const char *key, double value);
/* Removes every pair with that key. */
void rec_header_del(rec_header *h, const char *key);
/* The value of the first pair with that key, or NULL. */
const char *rec_header_get(const rec_header *h, const char *key);
/* How many pairs have that key; the n-th (0-based) of them or NULL. */
size_t rec_header_count(const rec_header *h, const char *key);
const char *rec_header_get_nth(const rec_header *h, const char *key,
			       size_t n);
/* All pairs in order: number of pairs, and the i-th pair. */
size_t rec_header_len(const rec_header *h);
void rec_header_entry(const rec_header *h, size_t i, const char **key,
		      const char **value);
/* Appends a provenance entry "stage" = "<prog> <version>\t<argv joined by
 * spaces, each argument shell-quoted when it needs it>". */
int rec_header_add_stage(rec_header *h, const char *prog,
			 const char *version, int argc, char *const argv[]);

/*
 * A data record, or a source record (REC_T_SOURCE), which rec_read()
 * hands out and rec_write() takes the same way. For the reader the
 * pointers point into the reader's buffers and stay valid until the next
 * rec_read() or rec_reader_close(). key is NUL-terminated in that case
 * (key_len excludes the NUL; a key never contains a NUL). The payload of
 * audio and features records is 16-byte aligned, so it may be read as an
 * array of its element type; a skipped record's payload is its reason,
 * text without a NUL; a source record's is its pairs, each key NUL value
 * NUL (rec_source_get()), and only its clip, label, split and key are
 * set (its other fields are 0).
 */
typedef struct rec_item {
	int type;              /* REC_T_AUDIO, _WINDOWS, _FEATURES, _SKIPPED,
				  _SOURCE */
	uint32_t flags;        /* REC_ITEM_MORE, REC_ITEM_CONT: a piece of an
				  audio or features item; 0 for an item in
				  one record and for the other types */
	uint64_t clip;         /* clip index in the stream, 0-based */
	uint64_t offset;       /* first sample of this record in its clip */
	uint64_t clip_samples; /* samples of the whole clip (after wavcat) */
	uint32_t segment;      /* segment index within the clip, 0 if none */
	int32_t label;         /* label id, -1 when none */
	uint32_t sample_rate;  /* Hz */
	int split;             /* enum rec_split */
	int dtype;             /* enum rec_dtype; 0 for skipped records */
	uint32_t dim0, dim1;   /* see enum rec_type */
	const char *key;       /* path relative to its input folder, or as given */
	size_t key_len;
	const void *data;      /* payload, uncompressed */
	size_t data_len;       /* bytes; must be dim0*dim1*dtype size for
				  audio, windows and features */
	/* Windows records only (0 in others): window i, segment index
	 * segment + i, is the win_len sample frames from frame i * win_hop
	 * of the payload, at offset + i * win_hop in the clip. */
	uint32_t win_len, win_hop, n_windows;
	uint32_t win_flags;    /* REC_WIN_PAD */
} rec_item;

/* 1 when it is a piece of an item (flagged more, cont or both), else 0.
 * The item's samples (audio) or frames (features) are its pieces'
 * concatenated; it ends with the piece without REC_ITEM_MORE, or early,
 * cut short, with a skipped record of its clip and segment. */
int rec_item_is_piece(const rec_item *it);

/* The segment index of the last window a record holds: segment +
 * n_windows - 1 for a windows or features-windows record, segment for
 * the others. */
uint32_t rec_item_last_segment(const rec_item *it);

/* Window i (< n_windows) of the windows record w as the audio record it
 * describes. Its data point into w's payload when the window lies inside
 * it; a window that runs past the end is copied into pad, which must hold
 * win_len * dim1 samples, and padded with zeros. Of a features-windows
 * record: the features record window i stands for, its data the i-th
 * matrix of w's payload (pad is not used). Returns REC_OK, or REC_E_INVAL
 * when w is neither or i is out of range. */
int rec_window(const rec_item *w, uint32_t i, rec_item *out, void *pad);

/* Calls fn(window, arg) for each window of the windows or
 * features-windows record w in order,
 * as rec_window() gives it; padded windows are built in *pad, which grows
 * to *pad_cap bytes as needed (start with NULL and 0; the caller frees
 * it). Returns REC_OK, the first non-zero value fn returns, REC_E_NOMEM,
 * or REC_E_INVAL when w is not a valid windows record. */
int rec_each_window(const rec_item *w, void **pad, size_t *pad_cap,
		    int (*fn)(const rec_item *window, void *arg), void *arg);

/* The value of the first pair named key in the source record it (a
 * NUL-terminated string inside it->data), or NULL when it has none or is
 * not a source record. A stage that does not know a key ignores it. */
const char *rec_source_get(const rec_item *it, const char *key);

/* Trailer contents. */
typedef struct rec_trailer {
	uint64_t n_records;  /* records between header and trailer (audio,
				windows, features, skipped and source), each
				piece of an item counted */
	uint64_t n_items;    /* audio+windows+features records, each piece
				counted */
	uint64_t n_skipped;  /* skipped records */
	uint32_t checksum;   /* CRC32C over the CRC fields of all records
				before the trailer, in order (see spec) */
} rec_trailer;

/* ------------------------------------------------------------------ */
/* Reader */

typedef struct rec_reader rec_reader;

typedef struct rec_reader_opts {
	uint64_t max_data;   /* payload cap in bytes; 0 = REC_DEFAULT_MAX_DATA */
	const char *name;    /* name of the input for detail messages
				("stdin", a path); NULL = "input" */
	int read_ahead;      /* 1: a thread of the reader's own reads fd
				ahead into a ring of large buffers while
				the caller works on records, so that the
				read(2) copies overlap the caller's work;
				records are handed out from those buffers
				without another copy. 0: read(2) on the
				caller's thread, as records are needed. */
	int unaligned;       /* 1: payloads may start at any address (the
				caller only memcpy()s them); saves moving
				each payload to a 16-byte boundary. 0:
				payloads are 16-byte aligned. */
	int data_crc;        /* 1: keep the CRC32C of each uncompressed
				payload, derived from the record's checked
				CRC at the cost of hashing its header and
				metadata (rec_reader_data_crc()) */
	int shm;             /* 1: attach the rings of shared memory the
				writer offers (formats/record.md, version
				5), so that payloads come by reference and
				are read where the writer put them. 0: the
				writer's offers go unanswered and every
				payload comes through the pipe. */
	int defer_shm_crc;   /* with shm, 1: a payload that comes by
				reference is not hashed by the reader; the
				caller takes the CRC it must have
				(rec_reader_take_crc()) and checks it where
				it copies the payload to (gpumel: on the
				GPU). One it does not take is checked at the
				next rec_read(). */
} rec_reader_opts;

/* Opens a reader on fd (not closed by the library) and reads the header
 * record. opts may be NULL. On failure *out is still set (so that
 * rec_reader_detail() can explain) and must be closed. With read_ahead
 * the reader's thread runs until rec_reader_close(), which stops it even
 * when it waits on a pipe; fd must stay open until then. */
int rec_reader_open(rec_reader **out, int fd, const rec_reader_opts *opts);
/* The stream header read by rec_reader_open(); owned by the reader. */
const rec_header *rec_reader_header(const rec_reader *r);
/* Reads the next data record into *it. Returns REC_OK, REC_END once the
 * trailer has been read, verified and followed by end of input, or an
 * error. After REC_END or an error, further calls return the same.
 * Every check of formats/record.md is made in its order; a record that
 * may not follow the one before is refused with REC_E_ORDER: one whose
 * (clip, segment) does not come after the previous record's last segment
 * (a windows record's last window), and the pieces of an item that do not
 * go on as the spec says (the detail names the field that differs). A
 * piece is handed out as it comes, it->flags saying which it is. The
 * item's key and data point into the reader's buffers and stay valid
 * until the next call. */
int rec_read(rec_reader *r, rec_item *it);
/* The trailer, valid after rec_read() returned REC_END. */
const rec_trailer *rec_reader_trailer(const rec_reader *r);
/* Bytes consumed so far / records returned so far (data and source
 * records: the number of the last one read, the header being 0). */
uint64_t rec_reader_offset(const rec_reader *r);
uint64_t rec_reader_count(const rec_reader *r);
/* Bytes of the records read so far as the stream in a file holds them:
 * each payload at its length, whether it came in the stream or by
 * reference in shared memory (formats/record.md, version 5), and no ring
 * record (a file holds none). What a stage's -v counts as the bytes it
 * read, the same with the shared-memory path on or off; the offset
 * counts what came through the input itself. */
uint64_t rec_reader_inline_bytes(const rec_reader *r);
/* With the data_crc option: 1 and *crc = the CRC32C of the payload of the
 * record rec_read() returned last, when it was stored uncompressed (the
 * same value crc32c(0, it->data, it->data_len) would give, without a
 * pass over the payload); else 0. For rec_write_crc() in a stage that
 * writes the same payload on. */
int rec_reader_data_crc(const rec_reader *r, uint32_t *crc);
/* With defer_shm_crc: 1 and *want when the payload of the record
 * rec_read() returned last came by reference and is not checked yet: the
 * caller now checks that crc32c(0, it->data, it->data_len) is *want (else
 * the stream is broken: a payload changed in the ring) before anything
 * made from it leaves. Else 0. */
int rec_reader_take_crc(rec_reader *r, uint32_t *want);
/* Checks the payload of that record on this thread when its CRC is still
 * due (not taken): REC_OK, or REC_E_CRC with the detail set. */
int rec_reader_check_crc(rec_reader *r);

/* A payload in shared memory kept past the next read: rec_reader_hold()
 * takes the slot of the record rec_read() returned last, when its payload
 * came by reference (1; else 0), and the len bytes at ptr (it->data) stay
 * until rec_hold_release(), however many records are read meanwhile. A
 * writer whose ring is full waits while slots come back, so a caller
 * must not hold much of a ring while it waits for more input (gpumel
 * holds a quarter at most; formats/record.md); after 50 ms with none
 * back the writer sends payloads inline. Release every hold, from any
 * thread, before rec_reader_close(). */
struct shmring;
typedef struct rec_hold {
	struct shmring *ring;
	uint32_t slot;
	const void *ptr;
	uint64_t len;
} rec_hold;

int rec_reader_hold(rec_reader *r, rec_hold *h);
void rec_hold_release(rec_hold *h);
/* The shared memory a held payload lies in (its ring's data area, mapped
 * for as long as the reader is open): its start and *bytes, for a caller
 * that registers it with a device. */
const void *rec_hold_area(const rec_hold *h, uint64_t *bytes);

/* What the shared-memory path did, for a stage's -v: data records whose
 * payload went (writer) or came (reader) by reference in a ring, their
 * bytes; the writer's references passed on from its input's ring, its
 * records sent inline because its ring was full, its waits for room and
 * their seconds; why references were not used ("" when they were, or
 * nothing was refused), a few words. */
typedef struct rec_shm_report {
	uint64_t records, bytes;
	uint64_t forwarded, full, waits;
	uint64_t leased;     /* written from a lease (rec_writer_lease()) */
	double t_wait;
	char why[192];
} rec_shm_report;

void rec_reader_shm(const rec_reader *r, rec_shm_report *rep);

/* Seconds the caller's thread spent waiting for input so far: in read(2)
 * without read-ahead, for the reading thread's next chunk with it. What a
 * stage's -v report calls waiting for input; cheap (timed per block, not
 * per record). */
double rec_reader_wait(const rec_reader *r);
/* One sentence on the last error, naming the input, the record number
 * and its byte offset; "" when there was none. */
const char *rec_reader_detail(const rec_reader *r);
/* Frees r; accepts NULL. */
void rec_reader_close(rec_reader *r);

/* ------------------------------------------------------------------ */
/* Writer */

typedef struct rec_writer rec_writer;

typedef struct rec_writer_opts {
	int zstd_level;      /* 0: payloads stored raw; 1..19: zstd */
	size_t buffer_size;  /* output buffer; 0 = 1 MiB */
	const char *name;    /* name of the output for detail; NULL = "output" */
	int write_behind;    /* 1: full buffers go to a thread of the
				writer's own that write(2)s them while the
				caller fills the next; write errors then
				show at a later call (the next flush at the
				latest). rec_writer_flush(), finish and
				close wait until all is written. */
	int zero_copy;       /* with write_behind, when fd is a pipe: 1 =
				hand full buffers to the pipe with
				vmsplice(2) instead of copying them, once
				every reader of the pipe is one of this
				suite's programs of this build (lib/
				buildid.h; they copy what they
				read; a reader that splices the pages on,
				as pv or tee may, must not get them);
				checked in /proc, write(2) until it passes.
				2 = vmsplice whatever reads (the caller
				vouches for it: tests). 0 = write(2). */
	int shm;             /* when fd is a pipe: 1 = once one process
				reads it, a stage of this build (checked
				as for zero_copy), offer it a ring of
				shared memory, and once it has attached,
				send payloads of audio, windows and
				features records of 4 KiB or more in the
				ring and references to them in the pipe
				(formats/record.md, version 5); payloads
				stay inline while the ring is full. 2 =
				offer it to any one process that reads (a
				stage under valgrind runs valgrind's
				program; only a process that attaches gets
				references). 0 = every payload through the
				pipe. Not with zstd_level. */
	uint64_t shm_bytes;  /* the ring's payload bytes; 0 = 64 MiB. What
				the writer may have in flight beyond the
				pipe: the memory is the ring's from the
				start, populated and shared. */
} rec_writer_opts;

/* Opens a writer on fd (not closed by the library) and writes the header
 * record for h (copied). opts may be NULL. As for the reader, *out is set
 * even on failure. Grows a pipe's buffer when fd is a pipe. */
int rec_writer_open(rec_writer **out, int fd, const rec_header *h,
		    const rec_writer_opts *opts);
/* Appends one data record. it->data is copied or written before return.
 * The record is checked as a reader would check it (type, dtype and
 * dims against data_len, split, key, clip/segment order, the pieces of
 * an item); a bad one is refused with REC_E_INVAL and a detail, and the
 * stream stays usable. A piece (it->flags) is written with version 3, a
 * source record with version 4 (checked as the reader checks it: its
 * fields, its pairs, its place before its clip's first data record).
 * Write errors (REC_E_IO, REC_E_EPIPE) are final: every later call
 * returns them. */
int rec_write(rec_writer *w, const rec_item *it);
/* rec_write() for a caller that has the CRC32C of it->data already (a
 * decoding thread computed it, or the record it comes from carried it):
 * the record's checksum is then combined from it without another pass
 * over the payload. A wrong data_crc gives a record every reader
 * refuses. */
int rec_write_crc(rec_writer *w, const rec_item *it, uint32_t data_crc);
/* Reserves room for one record with a payload of data_len bytes in the
 * output buffer and returns a pointer where the caller writes the payload
 * (uncompressed); rec_write_commit() then appends the record with it->data
 * ignored. Avoids a copy for producers that compute their payload. The
 * pointer is 16-byte aligned and valid until the commit; no other writer
 * call may come in between. A commit refused with REC_E_INVAL (a bad
 * item) drops the reservation and writes nothing; the stream goes on. */
int rec_write_reserve(rec_writer *w, size_t data_len, void **payload);
int rec_write_commit(rec_writer *w, const rec_item *it);
/* Lets w pass references on: a payload rec_write() is given that lies
 * inside the payload r handed out last, which came by reference, goes
 * out as a reference into the same ring (after w offered that ring to
 * its own reader) instead of a copy. r must outlive w's use of it. */
void rec_writer_link(rec_writer *w, rec_reader *r);
void rec_writer_shm(const rec_writer *w, rec_shm_report *rep);
/*
 * Payload room in the writer's own ring for a thread other than the one
 * that writes (a decoder), so that the samples are copied into the ring
 * there, many threads at once, rather than by the writing thread:
 * rec_writer_lease() gives len bytes of the ring (0, with l->ptr), or 1
 * when there is no room to lease now (no ring attached yet, or the leases
 * not yet written hold half of it): the caller keeps its payload where it
 * is. It never waits. rec_write_leased(), on the writing thread, writes a
 * record whose payload is the lease's bytes (it->data = l->ptr,
 * it->data_len = l->len; data_crc their CRC32C): as a reference without
 * a copy when it can, else as rec_write_crc() would; the lease is used
 * up either way. A lease that is not written goes back with
 * rec_lease_drop() (from any thread; a lease with ptr NULL is none).
 * Every lease must be written or dropped before rec_writer_close().
 */
typedef struct rec_lease {
	void *ptr;
	size_t len;
	uint32_t slot;
	uint64_t off;
} rec_lease;
int rec_writer_lease(rec_writer *w, size_t len, rec_lease *l);
int rec_write_leased(rec_writer *w, const rec_item *it, uint32_t data_crc,
		     rec_lease *l);
void rec_lease_drop(rec_writer *w, rec_lease *l);
/* Writes buffered records to fd. */
int rec_writer_flush(rec_writer *w);
/* Writes the trailer and flushes. Call once, at the end of a good run;
 * a stream whose producer failed must end without one. Refused
 * (REC_E_INVAL) right after a piece flagged more: its item has not
 * ended. */
int rec_writer_finish(rec_writer *w);
/* Bytes handed to the output with vmsplice(2) so far (zero_copy). */
uint64_t rec_writer_spliced(const rec_writer *w);
/* Why zero_copy did not vmsplice, in a few words, into buf[n] (n > 0):
 * the reader that is not a stage of this build, or the system's refusal
 * (wb_zc_why()); "" when nothing was refused. */
void rec_writer_zero_copy_why(const rec_writer *w, char *buf, size_t n);
/* The process that reads the output pipe, "NAME, pid N", into buf[n]
 * (n > 0), as found while it read (by the checks for references or
 * vmsplice): 1, or 0 and "" when none was found. For a message about a
 * reader that stopped reading, which can no longer be looked up. */
int rec_writer_reader(const rec_writer *w, char *buf, size_t n);
/* Counters so far: records, and bytes handed to the output. */
uint64_t rec_writer_count(const rec_writer *w);
uint64_t rec_writer_bytes(const rec_writer *w);
/* Bytes of the records written so far as the stream in a file holds
 * them: each payload at its length, whether it went in the stream or by
 * reference, and no ring record (rec_reader_inline_bytes()). */
uint64_t rec_writer_inline_bytes(const rec_writer *w);
/* Seconds the caller's thread spent waiting on output so far: in write(2)
 * without write-behind, for a free buffer or the end of the writing with
 * it (the output is slower than the caller). Timed per buffer. */
double rec_writer_wait(const rec_writer *w);
const char *rec_writer_detail(const rec_writer *w);
/* Frees w without writing a trailer; accepts NULL. */
void rec_writer_close(rec_writer *w);

#endif
