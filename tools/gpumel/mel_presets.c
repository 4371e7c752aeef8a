/*
 * mel_presets.c - the parameter sets that gpumel's --preset names (see
 * mel_presets.h): librosa's, torchaudio's and the plain defaults.
 */
#include <math.h>
#include <stddef.h>

#include "../../lib/rec.h"
#include "mel_presets.h"

const char *const mel_preset_names[] = { "", "librosa", "torchaudio", NULL };

void mel_preset_fill(int preset, const int given[MEL_F_COUNT],
		     mel_params *p)
{
	int torch = preset == MEL_PRESET_TORCH;
	const int *g = given;

	if (!g[MEL_F_N_FFT])
		p->n_fft = torch ? 400 : 2048;
	if (!g[MEL_F_WIN])
		p->win_length = p->n_fft;
	if (!g[MEL_F_HOP])
		p->hop_length = preset == MEL_PRESET_LIBROSA ? 512 :
				torch ? p->win_length / 2 :
				p->win_length / 4;
	if (!p->hop_length)
		p->hop_length = 1;
	if (!g[MEL_F_WINDOW])
		p->window = MEL_WIN_HANN;
	if (!g[MEL_F_CENTER])
		p->center = 1;
	if (!g[MEL_F_PAD])
		p->pad_mode = torch ? MEL_PAD_REFLECT : MEL_PAD_CONSTANT;
	if (!g[MEL_F_N_MELS])
		p->n_mels = 128;
	if (!g[MEL_F_FMIN])
		p->fmin = 0.0;
	if (!g[MEL_F_SCALE])
		p->mel_scale = torch ? MEL_SCALE_HTK : MEL_SCALE_SLANEY;
	if (!g[MEL_F_NORM])
		p->norm = torch ? MEL_NORM_NONE : MEL_NORM_SLANEY;
	if (!g[MEL_F_POWER])
		p->power = 2;
	if (!g[MEL_F_LOG])
		p->log = MEL_LOG_DB;
	if (!g[MEL_F_AMIN])
		p->amin = 1e-10;
	if (!g[MEL_F_TOP_DB])
		p->top_db = torch ? -1.0 : 80.0;
	if (p->log != MEL_LOG_DB)
		p->top_db = -1.0;
	if (!g[MEL_F_DTYPE])
		p->out_dtype = REC_F32;
	p->bin_freqs = torch ? MEL_BINS_TORCH : MEL_BINS_RFFT;
}

double mel_preset_fmax(int preset, double sample_rate)
{
	double nyquist = sample_rate / 2.0;

	return preset == MEL_PRESET_TORCH ? floor(nyquist) : nyquist;
}
