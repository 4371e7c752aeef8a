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
