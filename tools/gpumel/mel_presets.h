/*
 * mel_presets.h - the parameter sets that gpumel's --preset names, and the
 * plain defaults: librosa's (librosa.feature.melspectrogram followed by
 * librosa.power_to_db), torchaudio's (MelSpectrogram followed by
 * AmplitudeToDB('power')), Kaldi's filterbank features
 * (torchaudio.compliance.kaldi.fbank with its defaults), and without a
 * preset librosa's except the hop (win_length / 4, as librosa.stft).
 *
 * Plain C, beside mel_fb.c, so that any driver of the backends (C or C++)
 * can build the same parameters as gpumel does.
 */
#ifndef MELPIPE_GPUMEL_MEL_PRESETS_H
#define MELPIPE_GPUMEL_MEL_PRESETS_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mel_preset { MEL_PRESET_NONE = 0, MEL_PRESET_LIBROSA = 1,
		  MEL_PRESET_TORCH = 2, MEL_PRESET_KALDI = 3 };

/* The presets' names, indexed by enum mel_preset ("" for none), ending
 * with NULL. */
extern const char *const mel_preset_names[];

/* The fields of mel_params that a preset sets, as indexes of a "given"
 * array: a field given explicitly keeps its value, whatever the preset. */
enum mel_field {
	MEL_F_N_FFT, MEL_F_WIN, MEL_F_HOP, MEL_F_WINDOW, MEL_F_CENTER,
	MEL_F_PAD, MEL_F_N_MELS, MEL_F_FMIN, MEL_F_FMAX, MEL_F_SCALE,
	MEL_F_NORM, MEL_F_POWER, MEL_F_LOG, MEL_F_AMIN, MEL_F_TOP_DB,
	MEL_F_DTYPE,
	/* fbank's (mel_kaldi) */
	MEL_F_DITHER, MEL_F_SEED, MEL_F_PREEMPH, MEL_F_DC, MEL_F_ENERGY,
	MEL_F_RAW_ENERGY, MEL_F_ENERGY_FLOOR, MEL_F_POW2, MEL_F_LIFTER,
	MEL_F_COUNT
};

/* Kaldi's frames in milliseconds (torchaudio.compliance.kaldi's
 * defaults), and its floor before the log: float32's epsilon. */
#define MEL_KALDI_FRAME_MS 25.0
#define MEL_KALDI_SHIFT_MS 10.0
#define MEL_KALDI_EPS 1.1920928955078125e-07

/*
 * Fills in every field of *p whose given[] entry is 0 from the preset
 * (enum mel_preset), and feature and bin_freqs, which no option sets.
 * Leaves sample_rate alone, and fmax, which needs the sample rate (see
 * mel_preset_fmax()); with kaldi also n_fft, win_length and hop_length
 * when not given (0: they come from milliseconds and the sample rate).
 * top_db becomes none (-1) unless log is db (torchaudio's: 80 for MFCC,
 * as torchaudio.transforms.MFCC, else none); a hop that comes out 0 (a
 * win_length under 4) becomes 1; lifter is 0 but for kaldi (22).
 */
void mel_preset_fill(int preset, const int given[MEL_F_COUNT],
		     mel_params *p);

/* The preset's fmax for a sample rate: its Nyquist frequency, rounded
 * down for torchaudio (which takes floor(sample_rate / 2)). */
double mel_preset_fmax(int preset, double sample_rate);

#ifdef __cplusplus
}
#endif

#endif
