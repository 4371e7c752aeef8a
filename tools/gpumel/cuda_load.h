/*
 * cuda_load.h - how gpumel reaches its CUDA backend: gpumel-cuda.so,
 * loaded with dlopen so that the same binary runs where there is no GPU
 * or no CUDA library, and warmed up early.
 */
#ifndef MELPIPE_GPUMEL_CUDA_LOAD_H
#define MELPIPE_GPUMEL_CUDA_LOAD_H

#include <pthread.h>
#include <stddef.h>

#include "backend.h"

/*
 * The CUDA driver's start and a device's context take 0.2-0.3 s, which
 * gpumel would otherwise spend after the stream's header has come, with
 * the stages upstream stalled on full pipes: a thread loads
 * gpumel-cuda.so and starts both (mel_cuda_warm) as soon as gpumel runs.
 */
struct cuda_warm {
	pthread_t thread;
	int started;           /* the thread runs or ran, not joined */
	int device;            /* --device cuda:N, -1: the first */
	void *dl;              /* gpumel-cuda.so, for cuda_open() */
	int failed;            /* loading failed (CUDA_*): why in err */
	char err[512];
	double t0, t1;         /* the thread's start and end */
};


/* cuda_open()'s failures: no NVIDIA driver on the machine (libcuda.so.1
 * does not load), or any other reason. */
#define CUDA_NO_DRIVER (-2)
#define CUDA_FAILED (-1)

/* Starts the warm-up of device (-1: the first); where no thread can
 * start, cuda_open() loads the backend itself. */
void cuda_warm_start(struct cuda_warm *w, int device);

/* Waits for the warm-up and unloads gpumel-cuda.so if cuda_open() did not
 * take it. Not to be skipped before exit: the thread may be inside the
 * CUDA runtime. Accepts a warm-up never started. */
void cuda_warm_close(struct cuda_warm *w);

/*
 * Opens the CUDA backend (mel_cuda_open: device -1 for the first usable,
 * batch_hint the --batch records or 0) from the warmed-up gpumel-cuda.so,
 * loading it now when there was no warm-up. 0 with the backend in *be and
 * the library in *dl, to be unloaded with cuda_unload() once the backend
 * is destroyed; or CUDA_NO_DRIVER or CUDA_FAILED with why in err, nothing
 * left loaded.
 */
int cuda_open(const mel_params *p, const mel_fb *fb, int device,
	      size_t batch_hint, struct cuda_warm *w, void **dl,
	      mel_backend **be, char *err, size_t errlen);

/* Unloads gpumel-cuda.so; accepts NULL. */
void cuda_unload(void *dl);

#endif
