# tests/build.mk - the test helpers: C unit tests of lib/ (TAP on stdout)
# and small tools the shell tests drive, built into $(BUILD)/tests/helper/
# (tests/test-lib.sh puts that folder on PATH). Included by the Makefile.
#
#   make test-helpers           build them
#   make SAN=1 test-helpers     the same with sanitizers, in build/san

HELPER_DIR := $(BUILD)/tests/helper
HELPER_NAMES := test-crc32c test-half test-opt test-rec-header test-rec-item \
	test-rec-read test-rec-write test-writebehind test-shmring test-rec-shm \
	rec-copy \
	rec-gen fuzz-rec buildid-check
HELPER_BIN := $(HELPER_NAMES:%=$(HELPER_DIR)/%)
HELPER_TAP := $(HELPER_DIR)/tap.o

test-helpers: $(HELPER_BIN) $(HELPER_DIR)/fuzz-decode

# (the archive last: objects added below may need its members)
$(HELPER_BIN): $(HELPER_DIR)/%: $(HELPER_DIR)/%.o $(HELPER_TAP) \
		$(COMMON_OBJ) $(LIB_A)
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(filter-out $(LIB_A),$^) $(LIB_A) \
		$(LIBS_zstd) -lm

# The unit tests of the record streams share their fixtures
# (rec-fixture.c); the reader's and the writer's, their round trips
# (rec-round-trip.c).
$(addprefix $(HELPER_DIR)/,test-rec-item test-rec-read test-rec-write \
		test-writebehind): $(HELPER_DIR)/rec-fixture.o
$(HELPER_DIR)/test-rec-read $(HELPER_DIR)/test-rec-write: \
		$(HELPER_DIR)/rec-round-trip.o

# test-shmring: its unit tests, its runs of a writer and a reader
# (shmring-pair.c) and what both share (shmring-fixture.c).
SHMRING_TEST_SRC := tests/helper/test-shmring.c tests/helper/shmring-pair.c \
	tests/helper/shmring-fixture.c
$(HELPER_DIR)/test-shmring: $(HELPER_DIR)/shmring-pair.o \
		$(HELPER_DIR)/shmring-fixture.o

# test-shmring-tsan: test-shmring under ThreadSanitizer, for its run of a
# writer and a reader thread on one mapping (t0007; `make tsan-check` runs
# it alone). Built from its sources with lib/shmring.c and lib/xio.c, in
# the plain build only (TSan and ASan do not mix) and where the compiler
# links -fsanitize=thread.
TSAN_HELPER := $(HELPER_DIR)/test-shmring-tsan
TSAN_SRC := $(SHMRING_TEST_SRC) tests/helper/tap.c lib/shmring.c lib/xio.c
ifeq ($(SAN),0)
TSAN_OK := $(shell echo 'int main(void){return 0;}' | \
	$(CC) -fsanitize=thread -x c -o /dev/null - 2>/dev/null && echo 1)
endif
ifeq ($(TSAN_OK),1)
test-helpers: $(TSAN_HELPER)
endif

# (one command for all the sources: its headers are named here, as one
# dependency file cannot hold them all)
$(TSAN_HELPER): $(TSAN_SRC) lib/shmring.h lib/xio.h tests/helper/tap.h \
		tests/helper/shmring-fixture.h tests/helper/shmring-pair.h
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@ (tsan)"
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -fsanitize=thread \
		-pthread -o $@ $(TSAN_SRC)

# test-pool: wavcat's pool of decoder threads (tools/wavcat/pool.c) with
# a decoder of its own, in the build's flavour and, like test-shmring,
# under ThreadSanitizer where the compiler links it (t1010). Not linked
# with tools/common: the test has its own prog_now().
POOL_HELPER := $(HELPER_DIR)/test-pool
POOL_TSAN_HELPER := $(HELPER_DIR)/test-pool-tsan
POOL_TSAN_SRC := tests/helper/test-pool.c tests/helper/tap.c \
	tools/wavcat/pool.c tools/wavcat/keepclip.c
test-helpers: $(POOL_HELPER)
ifeq ($(TSAN_OK),1)
test-helpers: $(POOL_TSAN_HELPER)
endif

$(POOL_HELPER): $(HELPER_DIR)/test-pool.o $(HELPER_TAP) \
		$(BUILD)/tools/wavcat/pool.o $(BUILD)/tools/wavcat/keepclip.o
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^

$(POOL_TSAN_HELPER): $(POOL_TSAN_SRC) tools/wavcat/wavcat.h \
		tools/common/prog.h tests/helper/tap.h
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@ (tsan)"
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -fsanitize=thread \
		-pthread -o $@ $(POOL_TSAN_SRC)

# test-sha1: wavcat's SHA-1 (tools/wavcat/sha1.c), both its paths
# (t1008).
SHA1_HELPER := $(HELPER_DIR)/test-sha1
test-helpers: $(SHA1_HELPER)

$(SHA1_HELPER): $(HELPER_DIR)/test-sha1.o $(HELPER_TAP) \
		$(BUILD)/tools/wavcat/sha1.o
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^

# h5pack-tsan: h5pack under ThreadSanitizer, for its threads (the reader's
# read-ahead, the writing and the statistics threads: h5writebg.c,
# h5statsbg.c) on whole streams (t4012). The HDF5 library is not
# instrumented: what is checked is that h5pack's own memory (the groups'
# buffers and counts, the statistics) changes hands only through the
# threads' locks.
H5PACK_TSAN := $(HELPER_DIR)/h5pack-tsan
H5PACK_TSAN_SRC := $(h5pack_SRC) $(COMMON_SRC) $(LIB_SRC)
ifeq ($(TSAN_OK),1)
test-helpers: $(H5PACK_TSAN)
endif

$(H5PACK_TSAN): $(H5PACK_TSAN_SRC) $(BUILDID_H) \
		$(wildcard tools/h5pack/*.h tools/common/*.h lib/*.h)
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@ (tsan)"
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) $(PKG_CFLAGS) \
		-I$(BUILD)/gen -fsanitize=thread -pthread -o $@ \
		$(H5PACK_TSAN_SRC) $(LIBS_h5pack) $(LIBS_zstd) -lm

tsan-check: $(TSAN_HELPER) $(POOL_TSAN_HELPER)
	$(Q)TSAN_OPTIONS=halt_on_error=1 $(TSAN_HELPER) threads
	$(Q)TSAN_OPTIONS=halt_on_error=1 $(POOL_TSAN_HELPER) order 3000
	$(Q)TSAN_OPTIONS=halt_on_error=1 $(POOL_TSAN_HELPER) stop

.PHONY: tsan-check

# LD_PRELOAD libraries, plain build only (a sanitizer runtime must be
# loaded first): fault-io.so fails pwrite/fsync with EIO (t4005);
# gpu-trap.so breaks the CUDA primary context mid-run with a trap kernel
# (t6400).
PRELOAD_SO := $(HELPER_DIR)/fault-io.so $(HELPER_DIR)/gpu-trap.so
ifeq ($(SAN),0)
test-helpers: $(PRELOAD_SO)
endif

$(PRELOAD_SO): $(HELPER_DIR)/%.so: tests/helper/%.c
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS_ALL) -fPIC -shared -o $@ $< -ldl -lpthread

# The fuzz targets' plain mains share their mutations (mutate.c).
$(HELPER_DIR)/fuzz-rec: $(HELPER_DIR)/mutate.o

# fuzz-decode drives wavcat's decoder: linked with its files (decode.c,
# sfopen.c, resample.c, sink.c; quote.c for quote_name_buf) and wavcat's
# libraries.
FUZZ_DECODE_WAVCAT := tools/wavcat/decode.c tools/wavcat/sfopen.c \
	tools/wavcat/resample.c tools/wavcat/sink.c tools/wavcat/quote.c

$(HELPER_DIR)/fuzz-decode: $(HELPER_DIR)/fuzz-decode.o $(HELPER_DIR)/mutate.o \
		$(FUZZ_DECODE_WAVCAT:%.c=$(BUILD)/%.o) $(COMMON_OBJ) $(LIB_A)
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_wavcat) $(LIBS_zstd) -lm

# make fuzz [FUZZ_SECONDS=N] [FUZZ_TARGET=rec|decode]: libFuzzer (clang)
# over the record reader, seeded with the golden streams, then over
# wavcat's decoder, seeded with scripts/fuzz-seeds' files and the inputs
# kept in tests/fuzz/decode; each for FUZZ_SECONDS. New inputs go to
# build/fuzz/corpus and build/fuzz/corpus-decode, crashes to build/fuzz/
# (see tests/fuzz/README for keeping one).
FUZZ_SECONDS ?= 60
FUZZ_TARGET ?= rec decode
FUZZ_CC ?= clang
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -O1 -g -DMELPIPE_LIBFUZZER -pthread \
	-fsanitize=fuzzer,address,undefined $(PKG_CFLAGS) -I$(BUILD)/gen
# (lib/half.c left out: clang 14 knows no "f16c" for __builtin_cpu_supports)
FUZZ_LIB_SRC := $(filter-out lib/half.c,$(LIB_SRC))
# (lib/buildid.c includes the build id's header: made first)
build/fuzz/fuzz-rec: tests/helper/fuzz-rec.c $(FUZZ_LIB_SRC) | $(BUILDID_H)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^ $(LIBS_zstd) -lm

build/fuzz/fuzz-decode: tests/helper/fuzz-decode.c $(FUZZ_DECODE_WAVCAT) \
		$(COMMON_SRC) $(FUZZ_LIB_SRC) | $(BUILDID_H)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^ $(LIBS_wavcat) $(LIBS_zstd) -lm

fuzz: $(FUZZ_TARGET:%=fuzz-run-%)

fuzz-run-rec: build/fuzz/fuzz-rec
	@mkdir -p build/fuzz/corpus
	cd build/fuzz && ./fuzz-rec -max_total_time=$(FUZZ_SECONDS) \
		-max_len=65536 corpus ../../tests/golden

# The seeds are made once, by the test venv's Python (setup makes it).
# -timeout catches a file that takes the decoder seconds (a damaged header
# asking for hours of resampling); stdout is closed, as libsndfile prints
# there on some damaged files.
fuzz-run-decode: setup build/fuzz/fuzz-decode
	@mkdir -p build/fuzz/corpus-decode
	[ -d build/fuzz/seeds-decode ] || \
		scripts/fuzz-seeds build/fuzz/seeds-decode
	cd build/fuzz && ./fuzz-decode -max_total_time=$(FUZZ_SECONDS) \
		-max_len=65536 -timeout=10 -close_fd_mask=1 \
		-artifact_prefix=decode- corpus-decode seeds-decode \
		../../tests/fuzz/decode

.PHONY: fuzz fuzz-run-rec fuzz-run-decode

# gpumel-cuda-mock.so (t6000): gpumel-cuda.so's host code linked with a
# CUDA runtime and cuFFT that run on the CPU (cuda_mock.cu) and compute
# with the kernels' emulation (tools/gpumel/bench/cuda_emu.cu), which the
# t6 tests load in gpumel and gpumel-cuda-bench where there is no GPU.
# Built where the CUDA backend is (tools/gpumel/build.mk sets GPUMEL_CUDA):
# it needs CUDA's headers, and like the backend it stays out of the
# sanitizer build.
ifneq ($(GPUMEL_CUDA),)
CUDA_MOCK_DIR := $(HELPER_DIR)/cuda-mock
CUDA_MOCK_OBJ := $(CUDA_HOST_SRC:tools/gpumel/%.cu=$(CUDA_MOCK_DIR)/%.o) \
	$(CUDA_MOCK_DIR)/cuda_emu.o $(CUDA_MOCK_DIR)/cuda_mock.o

test-helpers: $(HELPER_DIR)/gpumel-cuda-mock.so

define CUDA_MOCK_CXX
@mkdir -p $(@D)
@[ "$(V)" = 1 ] || echo "  CXX     $< (mock)"
$(Q)$(CXX) $(CUDA_HOST_CXXFLAGS) -fPIC -fvisibility=hidden -MMD -MP \
	-MF $(@:.o=.d) -x c++ -c -o $@ $<
endef

# tests/helper first: a build tree from before cuda_mock.cu moved there
# still names tools/gpumel/cuda_mock.cu in its dependency files, and make
# would take that rule for a file it is told of.
$(CUDA_MOCK_DIR)/%.o: tests/helper/%.cu
	$(CUDA_MOCK_CXX)
$(CUDA_MOCK_DIR)/%.o: tools/gpumel/%.cu
	$(CUDA_MOCK_CXX)
$(CUDA_MOCK_DIR)/%.o: tools/gpumel/bench/%.cu
	$(CUDA_MOCK_CXX)

$(HELPER_DIR)/gpumel-cuda-mock.so: $(CUDA_MOCK_OBJ) $(BUILD)/cuda/mel_fb.pic.o
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CXX) -shared -o $@ $^ -Wl,-z,defs -lm
endif
