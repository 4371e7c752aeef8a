# tools/h5pack/build.mk - the HDF5 zstd filter as a plugin library.
#
# h5pack links tools/h5pack/zstd_filter.c and registers the filter itself;
# the same source built with -DH5Z_ZSTD_PLUGIN becomes
# $(BIN)/plugins/libh5zstd.so, which h5dump, h5py and any HDF5 program load
# from HDF5_PLUGIN_PATH=$(BIN)/plugins to read h5pack's zstd datasets.
#
# The plugin is built without sanitizers even with SAN=1: it is loaded into
# uninstrumented programs (h5dump, python), where an ASan runtime cannot be
# loaded late. -z defs makes sure it needs nothing from libhdf5 (see the
# comment at the top of zstd_filter.c).

H5ZSTD_SO := $(BIN)/plugins/libh5zstd.so
H5ZSTD_OBJ := $(BUILD)/plugins/zstd_filter.pic.o
H5ZSTD_CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,\
	$(CFLAGS_ALL)) -fPIC -fvisibility=hidden -DH5Z_ZSTD_PLUGIN
H5ZSTD_LDFLAGS := $(filter-out -fsanitize=%,$(LDFLAGS_ALL)) -shared \
	-Wl,-z,defs

all: $(H5ZSTD_SO)

$(H5ZSTD_OBJ): tools/h5pack/zstd_filter.c
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  CC      $@"
	$(Q)$(CC) $(H5ZSTD_CFLAGS) -c -o $@ $<

$(H5ZSTD_SO): $(H5ZSTD_OBJ)
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CC) $(H5ZSTD_LDFLAGS) -o $@ $^ $(LIBS_zstd)

# Installed beside the programs' lib folder; users point
# HDF5_PLUGIN_PATH at it (formats/hdf5.md says how).
install: install-h5zstd
install-h5zstd: $(H5ZSTD_SO)
	install -d $(DESTDIR)$(PREFIX)/lib/melpipe/hdf5-plugins
	install -m 644 $(H5ZSTD_SO) $(DESTDIR)$(PREFIX)/lib/melpipe/hdf5-plugins/

.PHONY: install-h5zstd
