# tests/build.mk - the test helpers: C unit tests of lib/ (TAP on stdout)
# and small tools the shell tests drive, built into $(BUILD)/tests/helper/
# (tests/test-lib.sh puts that folder on PATH). Included by the Makefile.
#
#   make test-helpers           build them
#   make SAN=1 test-helpers     the same with sanitizers, in build/san

HELPER_DIR := $(BUILD)/tests/helper
HELPER_NAMES := test-crc32c test-half test-opt test-rec rec-copy rec-gen \
	fuzz-rec
HELPER_BIN := $(HELPER_NAMES:%=$(HELPER_DIR)/%)
HELPER_TAP := $(HELPER_DIR)/tap.o

test-helpers: $(HELPER_BIN)

$(HELPER_BIN): $(HELPER_DIR)/%: $(HELPER_DIR)/%.o $(HELPER_TAP) \
		$(COMMON_OBJ) $(LIB_A)
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_zstd) -lm

# make fuzz [FUZZ_SECONDS=N]: libFuzzer over the record reader (clang),
# seeded with the golden streams; new inputs go to build/fuzz/corpus,
# crashes to build/fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
# (lib/half.c left out: clang 14 knows no "f16c" for __builtin_cpu_supports)
build/fuzz/fuzz-rec: tests/helper/fuzz-rec.c $(filter-out lib/half.c,$(LIB_SRC))
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -O1 -g -DMELPIPE_LIBFUZZER \
		-fsanitize=fuzzer,address,undefined $(PKG_CFLAGS) -o $@ $^ \
		$(LIBS_zstd) -lm

fuzz: build/fuzz/fuzz-rec
	@mkdir -p build/fuzz/corpus
	cd build/fuzz && ./fuzz-rec -max_total_time=$(FUZZ_SECONDS) \
		-max_len=65536 corpus ../../tests/golden

.PHONY: fuzz
