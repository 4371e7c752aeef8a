"""What a row's axes mean, from the parameters a melpipe dataset records
(formats/hdf5.md, root attributes): the centre frequency of each mel
band in Hz, and the time of each frame or sample in seconds from the
start of its clip."""
import numpy as np

# Slaney's scale (librosa's default, gpumel's): linear below 1 kHz,
# logarithmic above
_F_SP = 200.0 / 3
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def hz_to_mel(f, scale="slaney"):
    f = np.asarray(f, np.float64)
    if scale == "htk":
        return 2595.0 * np.log10(1.0 + f / 700.0)
    safe = np.maximum(f, _MIN_LOG_HZ)
    return np.where(f >= _MIN_LOG_HZ,
                    _MIN_LOG_MEL + np.log(safe / _MIN_LOG_HZ) / _LOGSTEP,
                    f / _F_SP)


def mel_to_hz(m, scale="slaney"):
    m = np.asarray(m, np.float64)
    if scale == "htk":
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    return np.where(m >= _MIN_LOG_MEL,
                    _MIN_LOG_HZ * np.exp(_LOGSTEP * (m - _MIN_LOG_MEL)),
                    _F_SP * m)


def mel_band_hz(attrs):
    """Centre frequency in Hz of each of the n_mels bands: the bands'
    peaks, equally spaced in mel between fmin and fmax on the file's
    mel_scale (slaney or htk), as gpumel, librosa and torchaudio lay
    them. None where the file does not record the parameters."""
    try:
        n = int(attrs["n_mels"])
        lo, hi = float(attrs["fmin"]), float(attrs["fmax"])
    except (KeyError, TypeError, ValueError):
        return None
    scale = str(attrs.get("mel_scale", "slaney"))
    if scale == "kaldi":
        # Kaldi's mel scale, 1127 ln(1 + f/700) (gpumel --preset kaldi)
        m = np.linspace(1127 * np.log1p(lo / 700), 1127 * np.log1p(hi / 700),
                        n + 2)
        return 700 * np.expm1(m[1:-1] / 1127)
    if scale not in ("slaney", "htk"):
        return None
    m = np.linspace(hz_to_mel(lo, scale), hz_to_mel(hi, scale), n + 2)
    return mel_to_hz(m[1:-1], scale)


def sample_rate(attrs):
    try:
        sr = float(attrs["sample_rate"])
    except (KeyError, TypeError, ValueError):
        return None
    return sr if sr > 0 else None


def per_second(attrs, kind):
    """Frames (features) or samples (audio) a second; None where the
    file does not say."""
    sr = sample_rate(attrs)
    if sr is None or kind != "features":
        return sr
    try:
        hop = int(attrs["hop_length"])
    except (KeyError, TypeError, ValueError):
        return None
    return sr / hop if hop > 0 else None


def frame_times(attrs, n_frames, offset=0):
    """Seconds from the start of the clip of the centre of each of a
    row's n_frames frames, the row starting at sample offset of the
    clip: frame k covers samples k * hop_length .. + n_fft of the row,
    centred on its first (center=1, gpumel's default) or on its middle
    (center=0); a Kaldi frame (fbank, and MFCC of it) of win_length
    samples on its middle (snip_edges=1), or, without snip_edges, on
    hop_length / 2 past the frame's start (Kaldi's frames then start at
    k * hop + hop / 2 - win_length / 2). None without hop_length and
    sample_rate."""
    sr = sample_rate(attrs)
    try:
        hop = int(attrs["hop_length"])
    except (KeyError, TypeError, ValueError):
        return None
    if sr is None or hop <= 0:
        return None
    if kaldi_framing(attrs):
        shift = (int(attrs.get("win_length", 0)) / 2
                 if int(attrs.get("snip_edges", 1)) else hop / 2)
    else:
        shift = 0 if int(attrs.get("center", 1)) else \
            int(attrs.get("n_fft", 0)) / 2
    return (offset + shift + hop * np.arange(n_frames)) / sr


def sample_times(attrs, n_samples, offset=0):
    """Seconds from the start of the clip of each sample of an audio
    row starting at sample offset; None without sample_rate."""
    sr = sample_rate(attrs)
    if sr is None:
        return None
    return (offset + np.arange(n_samples)) / sr


# What a features dataset's rows hold, by its feature attribute
# (formats/hdf5.md): what the pictures call them, and a frame's values
# (one, many).
FEATURES = {
    "mel": ("log-mel spectrograms", "mel", "mels"),
    "fbank": ("Kaldi filterbank features", "bin", "bins"),
    "mfcc": ("MFCC", "coefficient", "coefficients"),
}


def feature(attrs):
    """The feature attribute: mel where the file does not say."""
    return str(attrs.get("feature", "mel"))


def kaldi_framing(attrs):
    """Whether the frames are Kaldi's (gpumel --preset kaldi): fbank, or
    MFCC of fbank bands; win_length samples every hop_length, placed by
    snip_edges, where mel's frames are n_fft samples placed by center."""
    name = feature(attrs)
    return name == "fbank" or (name == "mfcc" and
                               str(attrs.get("mfcc_bands", "")) == "fbank")


def energy_row(attrs):
    """The row of a frame that holds the frame's log energy, or None:
    row 0 with use_energy 1 in Kaldi's features (formats/hdf5.md: fbank's
    energy row before its n_mels bands, or MFCC's coefficient 0)."""
    if not kaldi_framing(attrs):
        return None
    try:
        return 0 if int(attrs.get("use_energy", 0)) else None
    except (TypeError, ValueError):
        return None


def feature_words(attrs):
    """(what the rows are, a frame's value, its plural) for a features
    dataset: ("Kaldi filterbank features", "bin", "bins") for fbank."""
    name = feature(attrs)
    if name == "mel" and str(attrs.get("log", "")) == "none":
        return ("mel spectrograms", "mel", "mels")
    return FEATURES.get(name, ("%s features" % name, "value", "values"))


def n_features(attrs):
    """A frame's values: n_features (fbank's energy row included), or
    n_mels in files that do not say; None where neither is recorded."""
    for key in ("n_features", "n_mels"):
        try:
            return int(attrs[key])
        except (KeyError, TypeError, ValueError):
            pass
    return None


def value_unit(attrs):
    """What a features value is, for a colour bar's label."""
    if feature(attrs) == "mfcc":
        return "coefficient"
    log = str(attrs.get("log", ""))
    power = attrs.get("power", 2.0)
    what = "power" if float(power) == 2.0 else "magnitude"
    return {"db": "dB (%s)" % what, "ln": "ln %s" % what,
            "none": "mel %s" % what}.get(log, "value")
