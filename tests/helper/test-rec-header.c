/*
 * test-rec-header - unit tests of lib/rec_header.c and rec_names.c: error
 * texts, element type and split names, the header's key/value list
 * (repeats, set, del, dup) and the shell quoting of provenance entries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rec.h"
#include "tap.h"

static void test_names(void)
{
	int distinct = 1;

	for (int a = REC_E_INVAL; a <= REC_END; a++)
		for (int b = a + 1; b <= REC_END; b++)
			distinct &= strcmp(rec_strerror(a),
					   rec_strerror(b)) != 0;
	tap_ok(distinct, "every error code has its own text");
	tap_is_str(rec_strerror(REC_E_CRC), "checksum mismatch",
		   "REC_E_CRC text");
	tap_ok(rec_strerror(-1000) != NULL, "unknown code has a text");
	tap_is(rec_dtype_size(REC_S16), 2, "s16 size");
	tap_is(rec_dtype_size(REC_F32), 4, "f32 size");
	tap_is(rec_dtype_size(REC_F16), 2, "f16 size");
	tap_is(rec_dtype_size(REC_BF16), 2, "bf16 size");
	tap_is(rec_dtype_size(0), 0, "dtype 0 has no size");
	tap_is(rec_dtype_size(5), 0, "dtype 5 has no size");
	for (int d = REC_S16; d <= REC_BF16; d++)
		tap_is(rec_dtype_parse(rec_dtype_name(d)), d,
		       "dtype %s parses back", rec_dtype_name(d));
	tap_is(rec_dtype_parse("f64"), 0, "f64 is unknown");
	tap_is(rec_dtype_parse(NULL), 0, "NULL dtype name is unknown");
	tap_ok(rec_dtype_name(9) == NULL, "dtype 9 has no name");
	tap_is_str(rec_split_name(REC_SPLIT_VALIDATION), "validation",
		   "split name");
	tap_ok(rec_split_name(4) == NULL && rec_split_name(-1) == NULL,
	       "splits out of range have no name");
}

static void test_header_api(void)
{
	rec_header *h = rec_header_new(), *d;
	const char *k, *v;

	tap_is(rec_header_add(h, "label", "a"), 0, "add");
	rec_header_add(h, "kind", "audio");
	rec_header_add(h, "label", "b");
	rec_header_add(h, "label", "c");
	tap_is(rec_header_len(h), 4, "four pairs");
	tap_is(rec_header_count(h, "label"), 3, "three labels");
	tap_is_str(rec_header_get(h, "label"), "a", "get gives the first");
	tap_is_str(rec_header_get_nth(h, "label", 2), "c", "nth");
	tap_ok(rec_header_get_nth(h, "label", 3) == NULL, "nth past the end");
	tap_ok(rec_header_get(h, "nothing") == NULL, "missing key");
	tap_is(rec_header_add(h, "Bad", "x"), REC_E_INVAL, "upper case key "
	       "refused");
	tap_is(rec_header_add(h, "", "x"), REC_E_INVAL, "empty key refused");
	tap_is(rec_header_add(h, "a-b", "x"), REC_E_INVAL, "'-' in key "
	       "refused");
	tap_is(rec_header_add(h, "ok_1", ""), 0, "empty value allowed");

	d = rec_header_dup(h);
	tap_is(rec_header_set(h, "label", "z"), 0, "set");
	tap_is(rec_header_count(h, "label"), 1, "set leaves one pair");
	rec_header_entry(h, 0, &k, &v);
	tap_ok(strcmp(k, "label") == 0 && strcmp(v, "z") == 0,
	       "set replaces the first pair in place");
	rec_header_entry(h, 1, &k, &v);
	tap_is_str(k, "kind", "the order of the others is kept");
	rec_header_entry(h, 99, &k, &v);
	tap_ok(k == NULL && v == NULL, "entry past the end gives NULLs");
	tap_is(rec_header_count(d, "label"), 3, "dup is a deep copy");

	rec_header_set_u64(h, "clips", UINT64_MAX);
	tap_is_str(rec_header_get(h, "clips"), "18446744073709551615",
		   "set_u64");
	rec_header_set_double(h, "fmax", 0.1);
	tap_ok(strtod(rec_header_get(h, "fmax"), NULL) == 0.1,
	       "set_double survives a round trip");
	rec_header_set_double(h, "fmax", 8000);
	tap_is_str(rec_header_get(h, "fmax"), "8000", "set_double of 8000");
	rec_header_del(h, "fmax");
	tap_ok(rec_header_get(h, "fmax") == NULL, "del");
	rec_header_del(d, "label");
	tap_is(rec_header_len(d), 2, "del removes every repeat");
	tap_is(rec_header_set(NULL, "a", "b"), REC_E_INVAL, "set on NULL");
	rec_header_free(h);
	rec_header_free(d);
	rec_header_free(NULL);
	tap_ok(rec_header_len(NULL) == 0, "NULL header is empty");
}

static void test_add_stage(void)
{
	static const char *const args[] = {
		"wavcat", "--rate", "4096", "DATA dir/", "it's", "", "a=b,c",
		"x;y", "$HOME", "-j8", "tab\there", "@list.txt", "100%",
		"~user", "*.wav"
	};
	enum { argc = sizeof(args) / sizeof(args[0]) };
	char *argv[argc];
	rec_header *h = rec_header_new();

	for (int i = 0; i < argc; i++)
		argv[i] = strdup(args[i]);

	tap_is(rec_header_add_stage(h, "wavcat", "0.1.0", argc, argv), 0,
	       "add_stage");
	tap_is_str(rec_header_get(h, "stage"),
		   "wavcat 0.1.0\twavcat --rate 4096 'DATA dir/' 'it'\\''s' "
		   "'' a=b,c 'x;y' '$HOME' -j8 'tab\there' @list.txt 100% "
		   "'~user' '*.wav'",
		   "stage entry quotes what a shell would change");
	tap_is(rec_header_add_stage(h, "segment", "0.1.0", 0, NULL), 0,
	       "add_stage without arguments");
	tap_is_str(rec_header_get_nth(h, "stage", 1), "segment 0.1.0\t",
		   "a second stage is appended");
	rec_header_free(h);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

int main(void)
{
	test_names();
	test_header_api();
	test_add_stage();
	return tap_done();
}
