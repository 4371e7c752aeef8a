/*
 * grid.cu - the option sets gpumel-cuda-bench checks the backend with,
 * each with the record lengths that exercise it, and the 10-second job's
 * set that --probe and --bench use.
 */
#include <string.h>

#include "bench.h"

#define HANN MEL_WIN_HANN
#define HAMM MEL_WIN_HAMMING
#define RECT MEL_WIN_RECT
#define REFL MEL_PAD_REFLECT
#define CONST MEL_PAD_CONSTANT
#define HTK MEL_SCALE_HTK
#define SLA MEL_SCALE_SLANEY
#define NSLA MEL_NORM_SLANEY
#define NNONE MEL_NORM_NONE

const struct cfg grid[] = {
	/* the 10-second job, and with top_db and f32 */
	{ "ten-second", 4096, 512, 512, 512, HANN, 0, REFL, 32, 0, 2048, SLA, NSLA,
	  2, MEL_LOG_DB, 1e-10, -1, REC_F16, MEL_BINS_RFFT, 512, 1100 },
	{ "ten-second-top80-f32", 4096, 512, 512, 512, HANN, 0, REFL, 32, 0, 2048,
	  HTK, NNONE, 2, MEL_LOG_DB, 1e-10, 80, REC_F32, MEL_BINS_RFFT, 512,
	  2048 },
	/* librosa's defaults (constant padding since librosa 0.10) */
	{ "librosa", 22050, 2048, 2048, 512, HANN, 1, CONST, 128, 0, 11025, SLA,
	  NSLA, 2, MEL_LOG_DB, 1e-10, 80, REC_F32, MEL_BINS_RFFT, 1, 12000 },
	/* torchaudio's: n_fft 400 is not a power of two: cuFFT only */
	{ "torchaudio", 16000, 400, 400, 200, HANN, 1, REFL, 128, 0, 8000, HTK,
	  NNONE, 2, MEL_LOG_NONE, 1e-10, -1, REC_F32, MEL_BINS_TORCH, 1,
	  8000 },
	/* keyword spotting: short window in a longer FFT, magnitude, dB */
	{ "kws-mag-db", 16000, 512, 400, 160, HAMM, 1, REFL, 40, 20, 7600, HTK,
	  NSLA, 1, MEL_LOG_DB, 1e-5, 80, REC_F16, MEL_BINS_RFFT, 100, 8000 },
	{ "ln-bf16", 16000, 1024, 1000, 256, RECT, 1, REFL, 64, 0, 8000, SLA,
	  NSLA, 2, MEL_LOG_LN, 1e-6, -1, REC_BF16, MEL_BINS_RFFT, 1, 9000 },
	/* records shorter than the padding: reflect repeats */
	{ "tiny-reflect", 8000, 64, 64, 16, HANN, 1, REFL, 16, 0, 4000, HTK,
	  NNONE, 2, MEL_LOG_DB, 1e-10, 60, REC_F32, MEL_BINS_RFFT, 1, 300 },
	{ "odd-401", 16000, 401, 301, 100, HANN, 1, REFL, 40, 0, 8000, HTK,
	  NSLA, 1, MEL_LOG_DB, 1e-5, 50, REC_F16, MEL_BINS_RFFT, 1, 5000 },
	{ "big-4096", 44100, 4096, 4096, 1024, HANN, 0, REFL, 128, 30, 16000,
	  SLA, NSLA, 2, MEL_LOG_DB, 1e-10, 80, REC_F32, MEL_BINS_RFFT, 4096,
	  20000 },
	/* fmax above Nyquist: the last filters weigh the Nyquist bin */
	{ "n8-const", 8000, 8, 8, 4, HANN, 1, CONST, 2, 0, 6000, HTK, NNONE, 2,
	  MEL_LOG_NONE, 1e-10, -1, REC_F32, MEL_BINS_RFFT, 1, 100 },
	{ "hop-gt-nfft", 16000, 256, 200, 300, HAMM, 0, REFL, 20, 0, 9000, HTK,
	  NSLA, 1, MEL_LOG_LN, 1e-5, -1, REC_F16, MEL_BINS_RFFT, 256, 6000 },
};
const size_t n_grid = sizeof(grid) / sizeof(grid[0]);

const struct cfg ten_second_cfg = {
	"10-second", 4096, 512, 512, 512, HANN, 0, REFL, 32, 0, 2048, SLA,
	NSLA, 2, MEL_LOG_DB, 1e-10, -1, REC_F16, MEL_BINS_RFFT, 512, 512
};

void cfg_params(const struct cfg *g, mel_params *p)
{
	memset(p, 0, sizeof(*p));
	p->sample_rate = g->sr;
	p->n_fft = g->n_fft;
	p->win_length = g->win;
	p->hop_length = g->hop;
	p->window = g->window;
	p->center = g->center;
	p->pad_mode = g->pad;
	p->n_mels = g->n_mels;
	p->fmin = g->fmin;
	p->fmax = g->fmax;
	p->mel_scale = g->scale;
	p->norm = g->norm;
	p->power = g->power;
	p->log = g->log;
	p->amin = g->amin;
	p->top_db = g->top_db;
	p->out_dtype = g->out;
	p->bin_freqs = g->bins;
}
