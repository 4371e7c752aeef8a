# melpipe - one non-recursive Makefile.
#
# Targets:
#   make            build the five programs into bin/ (and the CUDA backend
#                   and the HDF5 zstd filter plugin beside them)
#   make check      install what is missing, build, run every test (also
#                   under AddressSanitizer + UndefinedBehaviorSanitizer)
#   make demo       install what is missing, build, make a small spoken-word
#                   dataset and turn it into demo/commands.h5
#   make test       run the tests against the current build only
#   make check-long the long runs, not in check: a clip of more than two
#                   hours at 48 kHz through every stage (tests/L*.sh)
#   make python     the Python package's wheel into build/python
#                   (python/README.md)
#   make python-check the Python package's tests (python/tests); part of
#                   check
#   make setup      install missing Debian packages and the test venv
#   make fuzz       run libFuzzer on the record reader and on wavcat's
#                   decoder, FUZZ_SECONDS each (60); FUZZ_TARGET=rec|decode
#                   runs one (tests/fuzz/README); the decoder's seeds need
#                   setup, which it runs first
#   make man        the manual pages of the programs and the installed
#                   scripts, build/man/*.1, made from their --help (and
#                   the programs' --version) by help2man (setup
#                   installs it)
#   make install    install into $(DESTDIR)$(PREFIX) (default /usr/local):
#                   the programs, scripts/h5info.py and the shards
#                   scripts in bin/, the
#                   manual pages in share/man/man1/, README.md,
#                   formats/*.md and docs/*.md in share/doc/melpipe/
#   make tsan-check test-shmring's writer and reader threads, and
#                   test-pool's decoder pools, under ThreadSanitizer
#                   (tests/build.mk)
#   make clean
# Variables: V=1 shows commands; CUDA=0 skips the CUDA backend; SAN=1
# builds with sanitizers into build/san.

PREFIX ?= /usr/local
CC ?= cc
NVCC ?= nvcc
V ?= 0
SAN ?= 0

ifeq ($(SAN),1)
BUILD := build/san
BIN := build/san/bin
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
else
BUILD := build/obj
BIN := bin
SANFLAGS :=
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wpointer-arith -Wvla \
	-Wcast-align -Wwrite-strings -Wundef -Werror
OPT ?= -O2 -g
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SANFLAGS) -MMD -MP \
	-pthread $(CFLAGS)
LDFLAGS_ALL := $(SANFLAGS) -pthread $(LDFLAGS)

PKGS := sndfile soxr fftw3f hdf5-serial libzstd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CFLAGS_ALL += $(PKG_CFLAGS)
LIBS_zstd := $(shell pkg-config --libs libzstd 2>/dev/null || echo -lzstd)
LIBS_sndfile := $(shell pkg-config --libs sndfile soxr 2>/dev/null)
LIBS_fftw := $(shell pkg-config --libs fftw3f 2>/dev/null) -lfftw3f_threads
LIBS_hdf5 := $(shell pkg-config --libs hdf5-serial 2>/dev/null)

PROGS := wavcat segment gpumel h5pack recdump recmerge

# The shared library code, built into one static archive.
LIB_SRC := $(wildcard lib/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB_A := $(BUILD)/libmelpipe.a
COMMON_SRC := $(wildcard tools/common/*.c)
COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/%.o)

# The build id (lib/buildid.h): a hash of every source of the programs and
# lib/, of this Makefile and the build.mk fragments, and of the compiler
# and the flags it is given, into $(BUILDID_H) for lib/buildid.c alone.
# Its recipe runs at every make, but rewrites the file only when the id
# changes: an unchanged tree builds nothing again, and the same sources
# and flags give the same id in any folder and after a clean rebuild.
BUILDID_H := $(BUILD)/gen/buildid_id.h
BUILDID_SRC = $(sort $(shell find lib tools -name '*.[ch]' -o -name '*.cu') \
	Makefile $(wildcard tools/*/build.mk) tests/build.mk)
BUILDID_FLAGS = $(CC) $(CFLAGS_ALL) / $(LDFLAGS_ALL) / $(NVCC) $(NVCCFLAGS)

$(BUILDID_H): FORCE
	@mkdir -p $(@D)
	$(Q)id=$$({ echo '$(BUILDID_FLAGS)' && $(CC) --version | head -n 1 && \
		sha256sum $(BUILDID_SRC); } | sha256sum | cut -c1-32) && \
	{ echo '/* made by make: the build id (lib/buildid.h) */' && \
	  echo "#define MELPIPE_BUILD_ID_HEX \"$$id\"" && \
	  echo "#define MELPIPE_BUILD_ID_BYTES $$(echo $$id | \
		sed 's/../0x&, /g; s/, $$//')"; } >$@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

# (private: the header's recipe, a prerequisite, hashes the flags every
# other object is built with)
$(BUILD)/lib/buildid.o: $(BUILDID_H)
$(BUILD)/lib/buildid.o: private CFLAGS_ALL += -I$(BUILD)/gen

# Per-program link libraries.
LIBS_wavcat := $(LIBS_sndfile) -lm
LIBS_segment := -lm
LIBS_gpumel := $(LIBS_fftw) -lm -ldl
LIBS_h5pack := $(LIBS_hdf5) $(shell pkg-config --libs zlib 2>/dev/null || echo -lz) -lm
LIBS_recdump := -lm

all: $(PROGS:%=$(BIN)/%)

$(LIB_A): $(LIB_OBJ)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS_ALL) -c -o $@ $<

define prog_rule
$(1)_SRC := $$(wildcard tools/$(1)/*.c)
$(1)_OBJ := $$($(1)_SRC:%.c=$$(BUILD)/%.o)
$$(BIN)/$(1): $$($(1)_OBJ) $$(COMMON_OBJ) $$(LIB_A)
	@mkdir -p $$(@D)
	@[ "$$(V)" = 1 ] || echo "  LD      $$@"
	$$(Q)$$(CC) $$(LDFLAGS_ALL) -o $$@ $$^ $$(LIBS_$(1)) $$(LIBS_zstd) -lm
endef
$(foreach p,$(PROGS),$(eval $(call prog_rule,$(p))))

# Extra build pieces (CUDA backend, HDF5 filter plugin, test helpers) are
# described in their own fragments, included here.
-include $(wildcard tools/*/build.mk) tests/build.mk python/python.mk

-include $(shell find build -name '*.d' 2>/dev/null)

setup:
	$(Q)scripts/setup

check: setup
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory test
	$(Q)$(MAKE) --no-print-directory python-check
	$(Q)$(MAKE) --no-print-directory SAN=1 all test-helpers
	$(Q)MELPIPE_BIN=$(CURDIR)/build/san/bin MELPIPE_SAN=1 \
		prove -j2 --timer tests/t[0-9]*.sh

test: all test-helpers
	$(Q)prove -j2 --timer tests/t[0-9]*.sh

# Long runs, not in check: a clip of more than two hours end to end.
check-long: setup
	$(Q)$(MAKE) --no-print-directory all test-helpers
	$(Q)prove --timer tests/L[0-9]*.sh

demo: setup
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo

# The manual pages. NAME is the first paragraph of --help after its Usage
# lines (the first, and those indented under it), made one line; the
# rest is help2man's reading of --help. The scripts' pages are made the
# same way; they have no --version, the suite's version stands in.
MAN_PAGES := $(PROGS:%=build/man/%.1)
HELP_NAME := awk 'NR > 1 && /^$$/ { exit } NR > 1 && sep == "" && /^ / { next } \
	NR > 1 { printf "%s%s", sep, $$0; sep = " " }' | sed 's/\.$$//; s/^./\L&/'
SCRIPTS := h5info.py shards-parallel shards-slurm
SCRIPT_MAN_PAGES := $(SCRIPTS:%=build/man/%.1)
VERSION := $(shell sed -n 's/^\#define MELPIPE_VERSION "\(.*\)"$$/\1/p' \
	tools/common/prog.h)

# A page names the documents' folder of the install (MELPIPE_DOC_DIR,
# which --help says in place of the folder it finds beside the program);
# build/man/doc-dir remembers it, so that another PREFIX remakes them.
man: $(MAN_PAGES) $(SCRIPT_MAN_PAGES)

build/man/doc-dir: FORCE
	@mkdir -p $(@D)
	$(Q)echo '$(DOC_DIR)' | cmp -s - $@ || echo '$(DOC_DIR)' >$@

build/man/%.1: $(BIN)/% build/man/doc-dir
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  MAN     $@"
	$(Q)command -v help2man >/dev/null || \
		{ echo "help2man not found (make setup installs it)" >&2; exit 1; }
	$(Q)MELPIPE_DOC_DIR='$(DOC_DIR)' help2man --no-info -N -o $@ \
		-n "$$(MELPIPE_DOC_DIR='$(DOC_DIR)' $< --help | $(HELP_NAME))" $<

$(SCRIPT_MAN_PAGES): build/man/%.1: scripts/%
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  MAN     $@"
	$(Q)command -v help2man >/dev/null || \
		{ echo "help2man not found (make setup installs it)" >&2; exit 1; }
	$(Q)help2man --no-info -N -o $@ --version-string='$* (melpipe) $(VERSION)' \
		-n "$$($< --help | $(HELP_NAME))" $<

DOC_DIR := $(PREFIX)/share/doc/melpipe

install: all man
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(PROGS:%=$(BIN)/%) $(SCRIPTS:%=scripts/%) \
		$(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(MAN_PAGES) $(SCRIPT_MAN_PAGES) \
		$(DESTDIR)$(PREFIX)/share/man/man1/
	install -d $(DESTDIR)$(DOC_DIR)/formats $(DESTDIR)$(DOC_DIR)/docs
	install -m 644 README.md $(DESTDIR)$(DOC_DIR)/
	install -m 644 formats/*.md $(DESTDIR)$(DOC_DIR)/formats/
	install -m 644 docs/*.md $(DESTDIR)$(DOC_DIR)/docs/

clean:
	rm -rf build bin

.PHONY: all setup check check-long test demo man install clean test-helpers FORCE

FORCE:
