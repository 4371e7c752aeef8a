/*
 * gpu-trap.c - an LD_PRELOAD library that makes the GPU "disappear" under a
 * running program, so that tests can show what it does when the GPU falls
 * off the bus (Xid 79) or reports a fatal ECC error in the middle of a run:
 *
 *   MELPIPE_TEST_GPU_TRAP_MS=N    N ms after the program starts, run a
 *                                 kernel that executes PTX "trap;" in the
 *                                 primary context of the device
 *   MELPIPE_TEST_GPU_TRAP_DEV=D   that device (default 0)
 *
 * The CUDA runtime (linked statically into gpumel-cuda.so, so its calls
 * cannot be wrapped) works in the device's primary context; the trap
 * leaves that context with a sticky CUDA_ERROR_LAUNCH_FAILED, and every
 * later call in it fails, which is how a lost GPU looks to a process. The
 * card itself is untouched: the error dies with the process.
 *
 * A detached thread does the work and writes one line to stderr, which
 * the tests check to know that the fault happened. A program that forks
 * to work in its child (gpumel, tools/gpumel/detach.h) takes the trap
 * along: the child gets a thread that fires at the same moment, and the
 * parent's stays quiet.
 *
 *   gpu-trap: trap kernel launched at 1000 ms on device 0: unspecified
 *   launch failure (CUresult 719)
 *
 * or, when it could not get as far as the launch, "gpu-trap: no trap: "
 * and the call that failed. It never exits or aborts the process. With
 * MELPIPE_TEST_GPU_TRAP_MS unset the library does nothing. No link-time
 * CUDA dependency: the driver is dlopened. A test helper, never installed;
 * not for sanitizer builds (their runtime must load first).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The driver API types, as in cuda.h. */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

/*
 * The oldest PTX that names sm_75 (the oldest target CUDA 13 compiles
 * for), so that any driver from CUDA 10.1 on compiles it for the card at
 * hand (sm_90 on Hopper cards).
 */
static const char trap_ptx[] =
	".version 6.4\n"
	".target sm_75\n"
	".address_size 64\n"
	"\n"
	".visible .entry melpipe_trap()\n"
	"{\n"
	"\ttrap;\n"
	"\tret;\n"
	"}\n";

/* The driver's exported names (cuda.h maps cuCtxPushCurrent and others to
 * _v2 names; the ones used here have none). */
struct cu {
	CUresult (*init)(unsigned int flags);
	CUresult (*device_get)(CUdevice *dev, int ordinal);
	CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice dev);
	CUresult (*ctx_set_current)(CUcontext ctx);
	CUresult (*module_load_data)(CUmodule *mod, const void *image);
	CUresult (*module_get_function)(CUfunction *f, CUmodule mod,
					const char *name);
	CUresult (*launch_kernel)(CUfunction f, unsigned int gx,
				  unsigned int gy, unsigned int gz,
				  unsigned int bx, unsigned int by,
				  unsigned int bz, unsigned int shared,
				  CUstream stream, void **params, void **extra);
	CUresult (*ctx_synchronize)(void);
	CUresult (*get_error_string)(CUresult e, const char **s);
};

static struct timespec t_start;
static long trap_ms;
static int trap_dev;
/* Set in a parent once it has forked: the trap went with the child. */
static _Atomic int forked;

static long ms_since_start(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t_start.tv_sec) * 1000 +
	       (t.tv_nsec - t_start.tv_nsec) / 1000000;
}

/* Looks up every driver function; -1 after saying which is missing. */
static int cu_load(struct cu *cu)
{
	static const char *const names[] = {
		"cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain",
		"cuCtxSetCurrent", "cuModuleLoadData", "cuModuleGetFunction",
		"cuLaunchKernel", "cuCtxSynchronize", "cuGetErrorString",
	};
	void **slot[] = {
		(void **)&cu->init, (void **)&cu->device_get,
		(void **)&cu->primary_ctx_retain,
		(void **)&cu->ctx_set_current,
		(void **)&cu->module_load_data,
		(void **)&cu->module_get_function,
		(void **)&cu->launch_kernel, (void **)&cu->ctx_synchronize,
		(void **)&cu->get_error_string,
	};
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

	if (!lib) {
		fprintf(stderr, "gpu-trap: no trap: cannot load libcuda.so.1: "
			"%s\n", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		*slot[i] = dlsym(lib, names[i]);
		if (!*slot[i]) {
			fprintf(stderr, "gpu-trap: no trap: libcuda.so.1 has "
				"no %s\n", names[i]);
			return -1;
		}
	}
	return 0;
}

static const char *cu_str(const struct cu *cu, CUresult e)
{
	const char *s = NULL;

	if (cu->get_error_string(e, &s) != 0 || !s)
		s = "unknown CUDA error";
	return s;
}

/* 0 when e is CUDA_SUCCESS; else -1 after naming the call and reason. */
static int cu_ok(const struct cu *cu, CUresult e, const char *what)
{
	if (e == 0)
		return 0;
	fprintf(stderr, "gpu-trap: no trap: %s failed: %s (CUresult %d)\n",
		what, cu_str(cu, e), e);
	return -1;
}

/* Makes the primary context of trap_dev current in this thread and loads
 * the trap kernel into it. */
static int trap_prepare(const struct cu *cu, CUfunction *f)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;

	if (cu_ok(cu, cu->init(0), "cuInit") < 0 ||
	    cu_ok(cu, cu->device_get(&dev, trap_dev), "cuDeviceGet") < 0 ||
	    cu_ok(cu, cu->primary_ctx_retain(&ctx, dev),
		  "cuDevicePrimaryCtxRetain") < 0 ||
	    cu_ok(cu, cu->ctx_set_current(ctx), "cuCtxSetCurrent") < 0 ||
	    cu_ok(cu, cu->module_load_data(&mod, trap_ptx),
		  "cuModuleLoadData (the trap kernel's PTX)") < 0 ||
	    cu_ok(cu, cu->module_get_function(f, mod, "melpipe_trap"),
		  "cuModuleGetFunction") < 0)
		return -1;
	return 0;
}

/* The context is never released: it is gpumel's too, and broken anyway. */
static void *trap_main(void *arg)
{
	struct cu cu;
	CUfunction f;
	CUresult e;
	long at, left;

	(void)arg;
	/* TRAP_MS after the program's start, in a child forked since too */
	while ((left = trap_ms - ms_since_start()) > 0) {
		struct timespec d = { left / 1000, left % 1000 * 1000000 };

		nanosleep(&d, NULL);
	}
	if (forked)
		return NULL;
	if (cu_load(&cu) < 0 || trap_prepare(&cu, &f) < 0)
		return NULL;
	at = ms_since_start();
	e = cu.launch_kernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	if (e == 0)
		e = cu.ctx_synchronize();
	fprintf(stderr, "gpu-trap: trap kernel launched at %ld ms on device "
		"%d: %s (CUresult %d)\n", at, trap_dev,
		e ? cu_str(&cu, e) : "no error, the context survived", e);
	return NULL;
}

/* Reads a non-negative int from the environment: def when unset, -1 (after
 * saying so) when not a number in range. */
static long env_num(const char *name, long def, long max)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > max) {
		fprintf(stderr, "gpu-trap: no trap: %s='%s' is not a number "
			"from 0 to %ld\n", name, s, max);
		return -1;
	}
	return v;
}

static void start_trap(void)
{
	pthread_attr_t a;
	pthread_t t;
	int err;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &a, trap_main, NULL);
	pthread_attr_destroy(&a);
	if (err)
		fprintf(stderr, "gpu-trap: no trap: cannot start its thread: "
			"%s\n", strerror(err));
}

static void after_fork_parent(void)
{
	forked = 1;
}

static void after_fork_child(void)
{
	start_trap();
}

__attribute__((constructor)) static void gpu_trap_init(void)
{
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	if (!getenv("MELPIPE_TEST_GPU_TRAP_MS"))
		return;
	trap_ms = env_num("MELPIPE_TEST_GPU_TRAP_MS", 0, 86400000L);
	trap_dev = (int)env_num("MELPIPE_TEST_GPU_TRAP_DEV", 0, INT_MAX);
	if (trap_ms < 0 || trap_dev < 0)
		return;
	pthread_atfork(NULL, after_fork_parent, after_fork_child);
	start_trap();
}
