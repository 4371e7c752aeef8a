/*
 * fuzz-rec - fuzz target for lib/rec's reader (and, for inputs it accepts,
 * its writer): LLVMFuzzerTestOneInput() reads one input as a stream to
 * its end, and copies a valid one through the writer and reads it back,
 * which must give the same records.
 *
 * Built with clang -fsanitize=fuzzer,address and -DMELPIPE_LIBFUZZER it
 * is a libFuzzer target. Without it (the default build) the plain main
 * below replays files given as arguments, and with -m N also feeds N
 * deterministic random mutations of each (bit flips, byte changes,
 * insertions, deletions, cuts, splices), so that `make check` exercises
 * the reader with mangled input under the sanitizers without libFuzzer.
 * Any crash, sanitizer report or inconsistency aborts; exit 0 otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../lib/rec.h"
#include "mutate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An in-memory file holding data, positioned at its start. */
static int mem_fd(const void *data, size_t size)
{
	int fd = memfd_create("fuzz-rec", MFD_CLOEXEC);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) {
		perror("fuzz-rec: memfd");
		abort();
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* How a copy ended: the reader's result, its count and its detail. */
struct outcome {
	int err;
	uint64_t records;
	char detail[1024];
};

/* Copies the stream at in to out (none when out < 0), the reader reading
 * ahead in a thread or not, the writer writing behind or not; 0 when the
 * whole stream was valid. */
static int copy_stream(int in, int out, int threads, struct outcome *oc)
{
	rec_reader *r = NULL;
	rec_writer *w = NULL;
	rec_item it;
	int err;

	err = rec_reader_open(&r, in, &(rec_reader_opts){
				      .max_data = 1 << 24,
				      .read_ahead = threads });
	if (err == REC_OK && out >= 0)
		err = rec_writer_open(&w, out, rec_reader_header(r),
				      &(rec_writer_opts){
					      .write_behind = threads });
	while (err == REC_OK) {
		err = rec_read(r, &it);
		if (err == REC_OK && w)
			err = rec_write(w, &it);
	}
	oc->err = err; /* the reader's verdict */
	if (err == REC_END && w)
		err = rec_writer_finish(w);
	if (err < 0 && rec_reader_detail(r)[0] == '\0' &&
	    rec_writer_detail(w)[0] == '\0') {
		fprintf(stderr, "fuzz-rec: error %d without a detail\n", err);
		abort();
	}
	oc->records = rec_reader_count(r);
	snprintf(oc->detail, sizeof(oc->detail), "%s", rec_reader_detail(r));
	rec_writer_close(w);
	rec_reader_close(r);
	return err == REC_END || err == REC_OK ? 0 : -1;
}

/* The copy at fd must read back as valid, with a's records. */
static void check_copy(int fd, const struct outcome *a)
{
	struct outcome b;

	lseek(fd, 0, SEEK_SET);
	if (copy_stream(fd, -1, 1, &b) != 0 || b.records != a->records) {
		fprintf(stderr, "fuzz-rec: a valid stream of %llu records did "
			"not survive a copy\n",
			(unsigned long long)a->records);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int in = mem_fd(data, size), out = mem_fd(NULL, 0), ok;
	struct outcome a, b;

	ok = copy_stream(in, out, 0, &a) == 0;
	/* Reading ahead in a thread must see exactly what the plain reader
	 * sees: the same records, the same verdict, the same sentence. */
	lseek(in, 0, SEEK_SET);
	copy_stream(in, -1, 1, &b);
	if (a.err != b.err || a.records != b.records ||
	    strcmp(a.detail, b.detail) != 0) {
		fprintf(stderr, "fuzz-rec: reading ahead differs: %d, %llu "
			"records, '%s' against %d, %llu, '%s'\n", b.err,
			(unsigned long long)b.records, b.detail, a.err,
			(unsigned long long)a.records, a.detail);
		abort();
	}
	if (ok) {
		/* A stream the reader accepts survives the writer intact,
		 * written behind or not. */
		check_copy(out, &a);
		if (ftruncate(out, 0) < 0)
			abort();
		lseek(out, 0, SEEK_SET);
		lseek(in, 0, SEEK_SET);
		copy_stream(in, out, 1, &b);
		check_copy(out, &a);
	}
	close(in);
	close(out);
	return 0;
}

#ifndef MELPIPE_LIBFUZZER

/* Record streams: lengths and magic bytes are what matter. */
static const unsigned char rec_bytes[] = { 0, 0xff, 0x7f, 0x80, 1, 'M' };
static const uint32_t rec_words[] = { 0xffffffffu, 0x10000000u, 0x100001u,
				      0x7fffffffu };
static const struct mut_profile profile = {
	.bytes = rec_bytes, .n_bytes = sizeof(rec_bytes),
	.words = rec_words, .n_words = sizeof(rec_words) / 4,
};

int main(int argc, char **argv)
{
	long iters = 0;
	int first = 1;

	if (argc > 2 && strcmp(argv[1], "-m") == 0) {
		iters = atol(argv[2]);
		first = 3;
	}
	if (first >= argc) {
		fprintf(stderr, "Usage: fuzz-rec [-m MUTATIONS] FILE...\n");
		return 2;
	}
	for (int i = first; i < argc; i++) {
		size_t len, olen;
		unsigned char *seed = mut_slurp(argv[i], &len);
		unsigned char *other = mut_slurp(argv[first + (i + 1 - first) %
						  (argc - first)], &olen);
		unsigned char *buf = malloc(MUT_ROOM(len));

		LLVMFuzzerTestOneInput(seed, len);
		for (long k = 0; k < iters; k++) {
			size_t cur = mut_mutant(&profile, buf, seed, len,
						other, olen);

			LLVMFuzzerTestOneInput(buf, cur);
		}
		free(buf);
		free(seed);
		free(other);
	}
	printf("fuzz-rec: %d inputs, %ld mutations each: no fault\n",
	       argc - first, iters);
	return 0;
}

#endif
