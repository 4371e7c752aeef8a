/*
 * mel_presets.c - the parameter sets that gpumel's --preset names (see
 * mel_presets.h): librosa's, torchaudio's and the plain defaults.
 */
#include <math.h>
#include <stddef.h>

#include "../../lib/rec.h"
#include "mel_presets.h"

const char *const mel_preset_names[] = { "", "librosa", "torchaudio",
					 "kaldi", NULL };

/* torchaudio.compliance.kaldi.fbank's defaults (dither 0 and
 * energy_floor 1 where Kaldi's programs have 1 and 0). */
static void kaldi_fill(const int given[MEL_F_COUNT], mel_params *p)
{
	const int *g = given;

	p->feature = MEL_FEAT_FBANK;
	if (!g[MEL_F_N_FFT])
		p->n_fft = 0;
	if (!g[MEL_F_WIN])
		p->win_length = 0;
	if (!g[MEL_F_HOP])
		p->hop_length = 0;
	if (!g[MEL_F_WINDOW])
		p->window = MEL_WIN_POVEY;
	if (!g[MEL_F_CENTER])
		p->center = 0;
	p->pad_mode = MEL_PAD_REFLECT;
	if (!g[MEL_F_N_MELS])
		p->n_mels = 23;
	if (!g[MEL_F_FMIN])
		p->fmin = 20.0;
	p->mel_scale = MEL_SCALE_KALDI;
	p->norm = MEL_NORM_NONE;
	p->power = 2;
	p->log = MEL_LOG_LN;
	p->amin = MEL_KALDI_EPS;
	p->top_db = -1.0;
	if (!g[MEL_F_DTYPE])
		p->out_dtype = REC_F32;
	p->bin_freqs = MEL_BINS_RFFT;
	if (!g[MEL_F_DITHER])
		p->k.dither = 0.0;
	if (!g[MEL_F_PREEMPH])
		p->k.preemphasis = 0.97f;
	if (!g[MEL_F_DC])
		p->k.remove_dc = 1;
	if (!g[MEL_F_ENERGY])
		p->k.use_energy = 0;
	if (!g[MEL_F_RAW_ENERGY])
		p->k.raw_energy = 1;
	if (!g[MEL_F_ENERGY_FLOOR])
		p->k.energy_floor = 1.0;
	if (!g[MEL_F_POW2])
		p->k.round_pow2 = 1;
	if (!g[MEL_F_LIFTER])
		p->lifter = 22.0;
}

void mel_preset_fill(int preset, const int given[MEL_F_COUNT],
		     mel_params *p)
{
	int torch = preset == MEL_PRESET_TORCH;
	const int *g = given;

	if (preset == MEL_PRESET_KALDI) {
		kaldi_fill(given, p);
		return;
	}
	p->feature = MEL_FEAT_MEL;
	p->lifter = 0.0;
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
		p->top_db = torch && !p->n_mfcc ? -1.0 : 80.0;
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
