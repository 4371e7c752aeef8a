/*
 * cuda_load.c - gpumel's loader of its CUDA backend: finds gpumel-cuda.so
 * beside the program (or in an installed tree), loads it with dlopen, and
 * warms the CUDA driver up in a thread while the stream's header comes.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/prog.h"
#include "cuda_load.h"

#define CUDA_SO "gpumel-cuda.so"
#define CUDA_DRIVER "libcuda.so.1"
#define SO_PATH_MAX (PATH_MAX + 64)

/* Where gpumel-cuda.so should be: beside the program, or in
 * ../lib/melpipe/ from it (an installed tree). */
static int cuda_so_paths(char paths[2][SO_PATH_MAX])
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(paths[0], SO_PATH_MAX, "%s/%s", exe, CUDA_SO);
	snprintf(paths[1], SO_PATH_MAX, "%s/../lib/melpipe/%s", exe, CUDA_SO);
	return 0;
}

/*
 * Whether the NVIDIA driver's library loads. Without it the CUDA runtime
 * says only that the driver is older than the runtime, and gpumel-cuda.so
 * (with cuFFT) need not be loaded at all. The handle is kept: the runtime
 * opens the library next, and closing it here would load it twice.
 */
static int driver_found(void)
{
	return dlopen(CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL) != NULL;
}

/* Loads gpumel-cuda.so into *dl; CUDA_NO_DRIVER or CUDA_FAILED with why
 * in err. */
static int load_cuda_so(void **dl, char *err, size_t errlen)
{
	char paths[2][SO_PATH_MAX];
	int i;

	if (!driver_found()) {
		snprintf(err, errlen, "no NVIDIA driver found (%s)",
			 CUDA_DRIVER);
		return CUDA_NO_DRIVER;
	}
	if (cuda_so_paths(paths) < 0) {
		snprintf(err, errlen, "cannot find the program's folder "
			 "to look for %s", CUDA_SO);
		return CUDA_FAILED;
	}
	for (i = 0; i < 2 && access(paths[i], F_OK); i++)
		;
	if (i == 2) {
		snprintf(err, errlen, "%s not found in '%.200s' nor '%.200s'",
			 CUDA_SO, paths[0], paths[1]);
		return CUDA_FAILED;
	}
	*dl = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
	if (!*dl) {
		snprintf(err, errlen, "%s", dlerror());
		return CUDA_FAILED;
	}
	return 0;
}

static void *warm_main(void *arg)
{
	struct cuda_warm *w = arg;
	mel_cuda_warm_fn fn;
	void *sym;

	w->failed = load_cuda_so(&w->dl, w->err, sizeof(w->err));
	if (!w->failed && (sym = dlsym(w->dl, MEL_CUDA_WARM_SYMBOL))) {
		memcpy(&fn, &sym, sizeof(fn));
		fn(w->device);
	}
	w->t1 = prog_now();
	return NULL;
}

void cuda_warm_start(struct cuda_warm *w, int device)
{
	w->device = device;
	w->t0 = prog_now();
	w->started = pthread_create(&w->thread, NULL, warm_main, w) == 0;
}

static void warm_join(struct cuda_warm *w)
{
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = 0;
}

void cuda_warm_close(struct cuda_warm *w)
{
	warm_join(w);
	if (w->dl)
		dlclose(w->dl);
	w->dl = NULL;
}

/* Finds mel_cuda_open in gpumel-cuda.so and calls it. */
static int call_open(void *dl, const mel_params *p, const mel_fb *fb,
		     int device, size_t batch_hint, mel_backend **be,
		     char *err, size_t errlen)
{
	mel_cuda_open_fn fn;
	void *sym = dlsym(dl, MEL_CUDA_OPEN_SYMBOL);

	if (!sym) {
		snprintf(err, errlen, "%s has no symbol %s", CUDA_SO,
			 MEL_CUDA_OPEN_SYMBOL);
		return -1;
	}
	memcpy(&fn, &sym, sizeof(fn));
	return fn(p, fb, device, batch_hint, be, err, errlen);
}

int cuda_open(const mel_params *p, const mel_fb *fb, int device,
	      size_t batch_hint, struct cuda_warm *w, void **dl,
	      mel_backend **be, char *err, size_t errlen)
{
	int rc;

	warm_join(w);
	if (w->failed) {
		snprintf(err, errlen, "%s", w->err);
		rc = w->failed;
		goto fail;
	}
	if (w->dl) {
		*dl = w->dl;
		w->dl = NULL;
	} else if ((rc = load_cuda_so(dl, err, errlen)) < 0) {
		goto fail;
	}
	if (call_open(*dl, p, fb, device, batch_hint, be, err, errlen) == 0)
		return 0;
	rc = CUDA_FAILED;
fail:
	if (*be)
		(*be)->destroy(*be);
	*be = NULL;
	if (*dl)
		dlclose(*dl);
	*dl = NULL;
	return rc;
}

void cuda_unload(void *dl)
{
	if (dl)
		dlclose(dl);
}
