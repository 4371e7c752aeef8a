# tools/gpumel/build.mk - gpumel's CUDA backend, included by the Makefile.
#
#   $(BIN)/gpumel-cuda.so      the backend gpumel dlopens (mel_cuda_open):
#                              tools/gpumel/cuda_*.cu (kernels in
#                              cuda_kernels.cu and cuda_crc.cu)
#   $(BIN)/gpumel-cuda-bench   its test and benchmark driver: --emu checks
#                              the kernels' arithmetic on the CPU, --parity,
#                              --crc and --bench run it on a GPU (see
#                              --help):
#                              tools/gpumel/bench/ (and gpumel's option
#                              parser, for --bench's shapes)
#
# (tests/build.mk builds gpumel-cuda-mock.so, which the t6 tests load in
# the backend's place where there is no GPU.)
#
# Built when nvcc is found (NVCC, default nvcc on PATH) and CUDA is not 0,
# in the normal build only: the sanitizer build (SAN=1) leaves them out, as
# nvcc does not take the sanitizer flags and AddressSanitizer and the CUDA
# driver do not mix.
#
# Code: sm_90 (Hopper) machine code plus compute_90 PTX for newer cards
# and compute_75 PTX for older ones, which the driver compiles at load.
# cudart is linked statically (its symbols hidden); cuFFT dynamically, as
# its static library is not in every CUDA install and its shared one is
# 280 MB: the .so finds libcufft.so.12 beside itself, in the CUDA tree it
# was built with, or through the system's library path.

CUDA ?= 1
NVCC_PATH := $(if $(filter-out 0,$(CUDA)),\
	$(shell command -v $(NVCC) 2>/dev/null))

ifneq ($(NVCC_PATH),)
ifeq ($(SAN),0)

CUDA_HOME_DIR := $(patsubst %/bin/nvcc,%,$(realpath $(NVCC_PATH)))
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90 \
	-gencode arch=compute_75,code=compute_75
NVCCFLAGS := -O3 -std=c++17 $(CUDA_ARCH) -Werror all-warnings \
	-Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror \
	$(NVCCFLAGS_EXTRA)
CUDA_RPATH := '$$ORIGIN:$(CUDA_HOME_DIR)/lib64:/usr/local/cuda/lib64'

# tests/build.mk builds the mock CUDA runtime where this is set, and
# compiles the backend's host code (CUDA_HOST_SRC: all but the kernels)
# into it again, as plain C++.
GPUMEL_CUDA := 1
CUDA_HOST_SRC := $(addprefix tools/gpumel/,cuda_backend.cu cuda_batch.cu \
	cuda_crc_check.cu cuda_error.cu cuda_memory.cu cuda_plan.cu \
	cuda_submit.cu)
CUDA_SO_OBJ := $(CUDA_HOST_SRC:tools/gpumel/%.cu=$(BUILD)/cuda/%.o) \
	$(BUILD)/cuda/cuda_kernels.o $(BUILD)/cuda/cuda_crc.o \
	$(BUILD)/cuda/mel_fb.pic.o

all: $(BIN)/gpumel-cuda.so $(BIN)/gpumel-cuda-bench

$(BUILD)/cuda/%.o: tools/gpumel/%.cu
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  NVCC    $<"
	$(Q)$(NVCC) $(NVCCFLAGS) -MMD -MP -MF $(@:.o=.d) -c -o $@ $<

# mel_fb.c (the window, frame count and filterbank every backend shares),
# position-independent for the .so, its symbols hidden there.
$(BUILD)/cuda/mel_fb.pic.o: tools/gpumel/mel_fb.c
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  CC      $< (PIC)"
	$(Q)$(CC) $(CFLAGS_ALL) -fPIC -fvisibility=hidden -c -o $@ $<

$(BIN)/gpumel-cuda.so: $(CUDA_SO_OBJ)
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(NVCC) --shared -o $@ $^ -cudart static -lcufft \
		-Xlinker --exclude-libs,ALL -Xlinker -z,nodelete \
		-Xlinker -z,defs -Xlinker -rpath,$(CUDA_RPATH)

# The driver has no device code and needs no CUDA runtime of its own: it
# reaches the GPU through the .so, and runs --emu where there is no GPU at
# all. So it is plain C++ (the kernels' __host__ __device__ arithmetic and
# CUDA's half-precision types compile as host code), built with the host
# compiler against CUDA's headers, as the mock runtime is.
CUDA_HOST_CXXFLAGS := -std=c++17 -O2 -g -Wall -Wextra -Werror \
	-I$(CUDA_HOME_DIR)/include

CUDA_BENCH_SRC := $(wildcard tools/gpumel/bench/*.cu)
CUDA_BENCH_OBJ := \
	$(CUDA_BENCH_SRC:tools/gpumel/bench/%.cu=$(BUILD)/cuda-bench/%.o)

$(BUILD)/cuda-bench/%.o: tools/gpumel/bench/%.cu
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  CXX     $<"
	$(Q)$(CXX) $(CUDA_HOST_CXXFLAGS) -MMD -MP -MF $(@:.o=.d) -x c++ \
		-c -o $@ $<

# --bench --record-samples takes gpumel's own options (bench/shape.c, in
# C, calls gpumel_opts.c): gpumel's objects but its main, and the shared
# program code, go into an archive, so that the link takes only what the
# option parser needs of them: no FFTW, no HDF5, but zstd (the shared
# program code reports the record writer's errors, which has it), a
# library every system with the suite's programs has.
CUDA_BENCH_GPUMEL_OBJ := $(BUILD)/tools/gpumel/bench/shape.o \
	$(filter-out $(BUILD)/tools/gpumel/gpumel.o,$(gpumel_OBJ)) \
	$(COMMON_OBJ)

$(BUILD)/cuda-bench/libgpumel-opts.a: $(CUDA_BENCH_GPUMEL_OBJ)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN)/gpumel-cuda-bench: $(CUDA_BENCH_OBJ) \
		$(BUILD)/cuda-bench/libgpumel-opts.a $(LIB_A)
	@mkdir -p $(@D)
	@[ "$(V)" = 1 ] || echo "  LD      $@"
	$(Q)$(CXX) -pthread -o $@ $^ $(LIBS_zstd) -ldl -lm

install: install-cuda
install-cuda: $(BIN)/gpumel-cuda.so
	install -d $(DESTDIR)$(PREFIX)/lib/melpipe
	install -m 755 $(BIN)/gpumel-cuda.so $(DESTDIR)$(PREFIX)/lib/melpipe/

.PHONY: install-cuda

endif
endif
