"""DNSMOS P.835 (SIG, BAK, OVRL) of a side's speech, from the ONNX model the ``speechmos`` package ships.

Upstream: microsoft/DNS-Challenge ``DNSMOS/dnsmos_local.py`` as packaged by speechmos 0.0.1.1
(``speechmos/dnsmos.py``: ``DNSMOS.__call__``, ``get_polyfit_val``). The model
``dnsmos_models/sig_bak_ovr.onnx`` takes 9.01 s of 16 kHz audio (``input_1``, shape [N, 144160]) and
returns raw SIG, BAK, OVRL, which a fixed cubic/quadratic polynomial maps to the MOS scale; a clip
shorter than 9.01 s is repeated until it is long enough, and a clip's score is the mean over its
windows. Only the P.835 model is run (the P.808 model needs librosa's mel spectrogram and gives a
single MOS the issue does not ask for), and speechmos's module is not imported (it imports librosa
and requests, which it does not declare); we only read its model file.

One departure, for cost (0.4 s per window on one core): upstream slides the window by 1 s, so a
60 s clip takes 52 windows. Here the windows are the fewest that cover the clip, spread evenly from
its start to its end (a 20 s clip: three windows at 0, 5.5 and 11 s), and the score is their mean.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from dyafdb.errors import InputError

SAMPLE_RATE = 16_000
WINDOW = int(9.01 * SAMPLE_RATE)  # 144,160 samples, the model's fixed input
# speechmos 0.0.1.1, dnsmos.py, DNSMOS.get_polyfit_val (is_personalized_MOS=False), highest power first.
_POLY = {"sig": (-0.08397278, 1.22083953, 0.0052439),
         "bak": (-0.13166888, 1.60915514, -0.39604546),
         "ovrl": (-0.06766283, 1.11546468, 0.04602535)}


@lru_cache(maxsize=1)
def _session(threads: int = 1) -> Any:
    import onnxruntime as ort

    try:
        from importlib.resources import files

        path = files("speechmos") / "dnsmos_models" / "sig_bak_ovr.onnx"
    except ModuleNotFoundError:
        raise InputError("DNSMOS needs the speechmos package (pip install 'speechmos==0.0.1.1' --no-deps), or set "
                         "health.dnsmos_min_speech_s very high in config to skip it") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def window_starts(n: int) -> list[int]:
    """Starts of the fewest WINDOW-long windows covering ``n`` samples (n >= WINDOW), evenly spread."""
    count = math.ceil(n / WINDOW)
    if count == 1:
        return [0]
    last = n - WINDOW
    return [round(i * last / (count - 1)) for i in range(count)]


def dnsmos(audio_16k: np.ndarray) -> dict[str, Any]:
    """SIG, BAK and OVRL (MOS scale, 1-5) of mono float audio at 16 kHz, with the windows scored."""
    audio = np.clip(np.asarray(audio_16k, dtype=np.float32), -1.0, 1.0)
    if len(audio) == 0:
        raise ValueError("DNSMOS of an empty clip")
    if len(audio) < WINDOW:  # upstream repeats a short clip until it fills the window
        audio = np.tile(audio, math.ceil(WINDOW / len(audio)))[:WINDOW]  # one window, as upstream's first
    session = _session()
    raw = []
    for start in window_starts(len(audio)):
        out = session.run(None, {"input_1": audio[start:start + WINDOW][None, :]})[0][0]
        raw.append([float(v) for v in out])
    scores = {}
    for i, key in enumerate(("sig", "bak", "ovrl")):
        poly = np.poly1d(_POLY[key])
        scores[key] = float(np.mean([poly(r[i]) for r in raw]))
    return {**scores, "windows": len(raw)}
