/*
 * load.cu - gpumel-cuda.so (or the mock runtime's .so, which stands in for
 * it) loaded as gpumel loads it, with dlopen, and --probe: whether its
 * backend opens here, and if not, why.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

void so_load(struct so *so, const char *path)
{
	void *sym;

	so->path = path;
	so->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so->dl)
		die("cannot load '%s': %s", path, dlerror());
	sym = dlsym(so->dl, MEL_CUDA_OPEN_SYMBOL);
	if (!sym)
		die("'%s' has no %s", path, MEL_CUDA_OPEN_SYMBOL);
	memcpy(&so->open, &sym, sizeof(sym));
	sym = dlsym(so->dl, MEL_CUDA_TIME_SYMBOL);
	if (!sym)
		die("'%s' has no %s", path, MEL_CUDA_TIME_SYMBOL);
	memcpy(&so->time, &sym, sizeof(sym));
	sym = dlsym(so->dl, MEL_CUDA_CRC_SYMBOL);
	memcpy(&so->crc, &sym, sizeof(sym));
}

int probe(const char *path)
{
	struct so so;
	mel_params p;
	mel_fb *fb = NULL;
	mel_backend *be = NULL;
	char err[512] = "";

	so_load(&so, path);
	cfg_params(&ten_second_cfg, &p);
	if (mel_fb_build(&p, &fb) < 0)
		die("mel_fb_build: out of memory");
	if (so.open(&p, fb, -1, 0, &be, err, sizeof(err)) < 0) {
		if (be)
			die("mel_cuda_open failed but returned a backend");
		printf("open failed: %s\n", err);
		mel_fb_free(fb);
		return 1;
	}
	printf("open ok: %s, depth %d\n", be->name, be->depth);
	be->destroy(be);
	mel_fb_free(fb);
	return 0;
}
