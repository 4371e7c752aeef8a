/*
 * backend.h - the interface between gpumel's host loop and its compute
 * backends (CPU: FFTW3f in cpu_backend.c; GPU: CUDA + cuFFT in the .cu
 * files, built into gpumel-cuda.so and loaded with dlopen so that the same
 * gpumel binary runs where there is no GPU or no CUDA library).
 *
 * Plain C: included by C and by .cu files alike.
 */
#ifndef MELPIPE_GPUMEL_BACKEND_H
#define MELPIPE_GPUMEL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* hann, hamming and rect: periodic for mel features (torch, librosa),
 * symmetric (period N - 1) for fbank, as Kaldi; povey and blackman are
 * Kaldi's, for fbank only. */
enum mel_window { MEL_WIN_HANN = 1, MEL_WIN_HAMMING = 2, MEL_WIN_RECT = 3,
		  MEL_WIN_POVEY = 4, MEL_WIN_BLACKMAN = 5 };
enum mel_pad { MEL_PAD_REFLECT = 1, MEL_PAD_CONSTANT = 2 };
/* kaldi: 1127 ln(1 + f / 700), triangles in the mel domain (fbank). */
enum mel_scale { MEL_SCALE_HTK = 1, MEL_SCALE_SLANEY = 2,
		 MEL_SCALE_KALDI = 3 };
enum mel_norm { MEL_NORM_NONE = 0, MEL_NORM_SLANEY = 1 };
enum mel_log { MEL_LOG_NONE = 0, MEL_LOG_DB = 1, MEL_LOG_LN = 2 };
/* Where the filterbank puts the FFT bins (only mel_fb_build() reads it):
 * librosa at k * sr / n_fft; torchaudio at linspace(0, floor(sr / 2),
 * n_bins), which differs for an odd sample rate or an odd n_fft. */
enum mel_bins { MEL_BINS_RFFT = 0, MEL_BINS_TORCH = 1 };

/*
 * How a frame's bands are made. mel: the mel spectrogram (librosa,
 * torchaudio). fbank: Kaldi's filterbank features as
 * torchaudio.compliance.kaldi.fbank computes them: each frame of
 * win_length samples (s16 samples as they are, f32 times 32768) dithered,
 * its mean removed, pre-emphasised and windowed at the start of n_fft
 * zeros; the power spectrum; the kaldi mel bank; ln(max(x, amin)); and
 * with use_energy the log energy as row 0. With n_mfcc > 0 either becomes
 * MFCCs (mel_dct_build): the bands, top_db-clamped, through the
 * orthonormal DCT-II, the first n_mfcc coefficients, times Kaldi's
 * lifter (fbank), with fbank's use_energy the log energy as coefficient 0.
 */
enum mel_feature { MEL_FEAT_MEL = 0, MEL_FEAT_FBANK = 1 };

/* Kaldi's frame options (fbank only; zero for mel). */
typedef struct mel_kaldi {
	double dither;         /* Gaussian noise of this deviation, 0: none */
	uint64_t seed;         /* of the noise (mel_dither_noise) */
	float preemphasis;     /* x[i] -= c x[i - 1]; x[0] -= c x[0] */
	int remove_dc;         /* subtract the frame's mean first */
	int use_energy;        /* row 0: the frame's log energy */
	int raw_energy;        /* energy before preemphasis and window */
	double energy_floor;   /* > 0: the log energy at least its log */
	int round_pow2;        /* n_fft: win_length's next power of two */
} mel_kaldi;

/* Every parameter of the transform, resolved (no "defaults" left). */
typedef struct mel_params {
	int feature;           /* enum mel_feature */
	double sample_rate;
	uint32_t n_fft;
	uint32_t win_length;   /* <= n_fft; window centred in n_fft */
	uint32_t hop_length;
	int window;            /* enum mel_window */
	int center;            /* mel: pad n_fft/2 each side before framing;
				  fbank: not snip_edges, Kaldi's framing
				  (mel_n_frames) */
	int pad_mode;          /* enum mel_pad, used when center; reflect
				  as numpy.pad: x[-i] = x[i], repeated
				  (period 2 * (n - 1)) when n_fft / 2 >= n,
				  the one sample itself when n = 1 */
	uint32_t n_mels;
	double fmin, fmax;
	int mel_scale;         /* enum mel_scale */
	int norm;              /* enum mel_norm */
	int power;             /* 1 magnitude, 2 power */
	int log;               /* enum mel_log */
	double amin;           /* floor before the log (db and ln) */
	double top_db;         /* db only: clamp to max - top_db; < 0 = none */
	int out_dtype;         /* enum rec_dtype: REC_F32, REC_F16, REC_BF16 */
	int bin_freqs;         /* enum mel_bins; 0 (librosa) unless the
				  torchaudio preset is chosen */
	mel_kaldi k;           /* fbank's frame options */
	uint32_t n_mfcc;       /* > 0: MFCCs, that many; <= n_mels */
	double lifter;         /* fbank's MFCC: Kaldi's cepstral_lifter Q,
				  coefficient c times 1 + Q/2 sin(pi c / Q);
				  0: none */
} mel_params;

/* Rows of a frame's bands before any DCT: n_mels, and the energy's row
 * (row 0) when fbank has use_energy. */
static inline uint32_t mel_n_bands(const mel_params *p)
{
	return p->n_mels + (p->feature == MEL_FEAT_FBANK && p->k.use_energy);
}

/* Rows of a frame's features (dim0 of a features record, the header's
 * n_features): n_mfcc, else the bands. */
static inline uint32_t mel_n_rows(const mel_params *p)
{
	return p->n_mfcc ? p->n_mfcc : mel_n_bands(p);
}

/* Whether top_db clamps: dB output and top_db >= 0 (with n_mfcc, the
 * bands before the DCT). */
static inline int mel_clamps(const mel_params *p)
{
	return p->log == MEL_LOG_DB && p->top_db >= 0.0;
}

/* Samples of a frame: n_fft (mel: the window sits centred in them), or
 * win_length (fbank: Kaldi's frame, zero-padded to n_fft for the FFT). */
static inline uint32_t mel_frame_len(const mel_params *p)
{
	return p->feature == MEL_FEAT_FBANK ? p->win_length : p->n_fft;
}

/* Samples before sample 0 that frame 0 starts at: n_fft / 2 with mel's
 * center; with fbank's center (no snip_edges) Kaldi's
 * win_length / 2 - hop / 2 (frame t's middle at t * hop + hop / 2), which
 * mel_kaldi_check keeps from going negative; else 0. */
static inline uint32_t mel_pad_len(const mel_params *p)
{
	if (!p->center)
		return 0;
	if (p->feature == MEL_FEAT_FBANK)
		return p->win_length / 2 - p->hop_length / 2;
	return p->n_fft / 2;
}

/* Frames of a record of n samples: 0 when n is 0; center: the signal is
 * padded by n_fft / 2 (rounded down) on each side, so 1 + (n + 2 * (n_fft
 * / 2) - n_fft) / hop, which is 1 + n / hop for an even n_fft; otherwise
 * n >= n_fft ? 1 + (n - n_fft) / hop : 0. fbank, as Kaldi's NumFrames:
 * (n + hop / 2) / hop without snip_edges (center), else n >= win_length ?
 * 1 + (n - win_length) / hop : 0. The host loop never puts a record of 0
 * frames into a batch (it becomes a skipped record). */
uint64_t mel_n_frames(const mel_params *p, uint64_t n_samples);

/*
 * The mel filterbank, computed once in float64 on the host (mel_fb.c) and
 * shared by every backend. Sparse: filter m touches bins
 * [first[m], first[m] + count[m]) with weights w[off[m] ...].
 */
typedef struct mel_fb {
	uint32_t n_mels, n_bins;   /* n_bins = n_fft / 2 + 1 */
	uint32_t *first, *count, *off;
	float *w;                  /* float32 weights, sum(count) of them */
	double *w64;               /* the same in float64, for references */
	uint32_t n_weights;
} mel_fb;

/* Builds the filterbank of p (librosa/torchaudio compatible). Returns 0 or
 * -1 when out of memory. mel_fb_free() accepts NULL. */
int mel_fb_build(const mel_params *p, mel_fb **out);
void mel_fb_free(mel_fb *fb);
/* The MFCC matrix of p, n_mfcc rows of n_mels in d (row-major): the
 * orthonormal DCT-II, d[c][m] = sqrt((c ? 2 : 1) / n_mels)
 * cos(pi c (m + 1/2) / n_mels) (librosa's scipy dct norm='ortho',
 * torchaudio's create_dct, Kaldi's ComputeDctMatrix), each row times
 * Kaldi's lifter when p->lifter != 0. */
void mel_dct_build(const mel_params *p, double *d);
/* The window of p, n_fft long (zero outside the win_length samples:
 * centred for mel, at the start for fbank). */
void mel_window_build(const mel_params *p, double *w);
/* Where the window's win_length samples start in the n_fft. */
static inline uint32_t mel_window_left(const mel_params *p)
{
	return p->feature == MEL_FEAT_FBANK ? 0 :
	       (p->n_fft - p->win_length) / 2;
}

/*
 * A batch: many records of one input dtype, concatenated. The host loop
 * fills in/n/rec and submits; the backend fills out. Buffers come from the
 * backend (pinned memory for CUDA) through batch_alloc.
 */
typedef struct mel_rec {
	uint64_t in_off;     /* element offset of the record's samples in in */
	uint32_t n_samples;
	uint32_t n_frames;   /* mel_rec_frames(): mel_n_frames(n_samples),
				framed as without center when MEL_REC_PADDED */
	uint64_t out_off;    /* element offset of its [n_mels][n_frames]
				matrix in out */
	uint32_t flags;      /* MEL_REC_*; 0 for a record as it came */
	uint32_t reserved;   /* 0 */
	/* Where the record's frames lie in their clip, for the dither's
	 * noise (fbank), which is keyed by them: clip, and the clip sample
	 * where frame 0 starts (frame j at pos0 + j * hop; < 0 in padding). */
	uint64_t clip;
	int64_t pos0;
} mel_rec;

/*
 * mel_rec.flags, for a stretch of an item that comes in pieces (pack.c
 * frames such an item a stretch at a time):
 * MEL_REC_PADDED: the host has put --center's padding in the samples
 * already (or the frames touch none): frame t starts at sample t * hop,
 * as with center off, whatever p->center says.
 * MEL_REC_NO_CLAMP: the record is a piece of an item, whose maximum is
 * known only at its end: top_db does not clamp it (whoever joins the
 * pieces does).
 */
#define MEL_REC_PADDED 0x1u
#define MEL_REC_NO_CLAMP 0x2u

/* The frames of record r: mel_n_frames(), as without center for a
 * record flagged MEL_REC_PADDED. */
uint64_t mel_rec_frames(const mel_params *p, const mel_rec *r);

/*
 * A payload whose CRC32C the backend computes where the samples are (the
 * GPU, after their copy): len bytes at byte off of the batch's samples
 * (in, as the backend holds them). want: the CRC32C the payload must have
 * (crc32c(0, payload, len), lib/crc32c.h); got: the backend's, filled in
 * by the time wait returns the batch. The host loop compares them.
 */
typedef struct mel_crc {
	uint64_t off, len;
	uint32_t want, got;
} mel_crc;

/*
 * Samples a batch takes from host memory outside in (a backend with
 * copies): bytes of in's [off, off + bytes) come from src, which stays
 * valid and unchanged until wait returns the batch. The host loop leaves
 * those bytes of in unwritten; the backend copies them from src to where
 * in's would go (the GPU: by DMA from memory registered with
 * host_register). Sorted by off, not overlapping.
 */
typedef struct mel_copy {
	const void *src;
	uint64_t off, bytes;
} mel_copy;

typedef struct mel_batch {
	int in_dtype;        /* REC_S16 or REC_F32 */
	size_t n;            /* records in this batch */
	size_t cap_recs;     /* capacity of rec[] */
	mel_rec *rec;
	void *in;            /* samples; in_cap bytes */
	size_t in_cap;
	void *out;           /* features in the output dtype; out_cap bytes */
	size_t out_cap;
	void *user;          /* the host loop's own per-batch state */
	/* A backend with copies: the host loop's (copy: its own memory) */
	mel_copy *copy;
	size_t n_copy;
	/* and the payloads to check, in the backend's memory (batch_alloc:
	 * cap_recs of them; NULL without copies) */
	mel_crc *crc;
	size_t n_crc;
} mel_batch;

/*
 * Every call below (and the open functions) comes from the host loop's
 * one compute thread, never concurrently; the reader and writer threads
 * touch only the batches' memory, never the backend. The mel_fb given to
 * open stays alive and unchanged until destroy. batch_alloc may be called
 * again for a batch (after batch_free) when a record does not fit it; it
 * may overwrite every field of *b (the host loop sets user afterwards).
 */
typedef struct mel_backend mel_backend;
struct mel_backend {
	/* Description for -v and the one-line notice ("cpu: fftw3f, 4
	 * threads", "cuda:0: " and the card's name). */
	char name[128];
	/* Last error, one sentence naming the failed call and the reason. */
	char err[512];
	/* How many batches may be in flight at once (submitted, not yet
	 * returned by wait); the host loop allocates that many plus three
	 * (one being filled, one queued, one being written out). */
	int depth;
	/* Allocates a batch with the given capacities (bytes, records). */
	int (*batch_alloc)(mel_backend *be, mel_batch *b, size_t in_cap,
			   size_t out_cap, size_t cap_recs);
	void (*batch_free)(mel_backend *be, mel_batch *b);
	/* Starts work on b; returns at once when the backend is
	 * asynchronous. 0 or -1 (err set). */
	int (*submit)(mel_backend *be, mel_batch *b);
	/* Waits for the oldest submitted batch and returns it in *done
	 * (NULL when none is in flight). 0 or -1 (err set). */
	int (*wait)(mel_backend *be, mel_batch **done);
	/* Frees everything; accepts NULL. */
	void (*destroy)(mel_backend *be);
	void *ctx;
	/* 1: the backend takes a batch's copy[] and checks its crc[] (the
	 * CUDA backend); 0: neither, and the three below are NULL. */
	int copies;
	/* Registers host memory that copies come from (len bytes at p,
	 * mapped for as long as it stays registered) so that the device
	 * reads it by DMA: 0, or -1 (err set: the memory is then copied
	 * from by the host). unregister undoes it, before p is unmapped. */
	int (*host_register)(mel_backend *be, const void *p, size_t len);
	void (*host_unregister)(mel_backend *be, const void *p);
	/* 1: the device admits one process at a time (a GPU in
	 * exclusive-process compute mode), so gpumel must not end before it
	 * has let it go (detach.h); 0 otherwise. */
	int exclusive;
};

/* The CPU backend (FFTW3f, nthreads threads). */
int mel_cpu_open(const mel_params *p, const mel_fb *fb, int nthreads,
		 mel_backend **out, char *err, size_t errlen);

/*
 * The CUDA backend, in gpumel-cuda.so: gpumel dlopens it and looks up this
 * symbol (type mel_cuda_open_fn). device: -1 = first usable, else index.
 * batch_hint: records per batch when the user gave --batch, else 0; the
 * host loop sizes its batches itself (about 8 MiB of input, more for a
 * larger record) and allocates them with batch_alloc.
 * Returns 0, or -1 with a sentence in err (no GPU, driver missing, ...).
 */
#define MEL_CUDA_OPEN_SYMBOL "mel_cuda_open"
typedef int (*mel_cuda_open_fn)(const mel_params *p, const mel_fb *fb,
				int device, size_t batch_hint,
				mel_backend **out, char *err, size_t errlen);

/*
 * Also in gpumel-cuda.so: starts the CUDA driver and the primary context
 * of a device (-1: the first) ahead of mel_cuda_open(), which then finds
 * them made. gpumel calls it from a thread as soon as it starts, while it
 * waits for the stream's header: the driver's start and the context take
 * a few tenths of a second (docs/BENCHMARKS.md, "The limits"), time
 * that would otherwise stall the pipe. Errors are left for
 * mel_cuda_open() to meet and report; this never fails.
 */
#define MEL_CUDA_WARM_SYMBOL "mel_cuda_warm"
typedef void (*mel_cuda_warm_fn)(int device);

#ifdef __cplusplus
}
#endif

#endif
