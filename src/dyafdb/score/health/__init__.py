"""Audio health of every side of a conversation: speech quality, speech-text agreement, echo and
no-response (docs/scoring.md, "Audio health"), as mechanical measures of the score job.

One module per measure: :mod:`.dnsmos` (DNSMOS P.835 on the side's VAD speech), :mod:`.agreement`
(word share and WER of its ASR transcript against its own text stream), :mod:`.echo` (normalised
cross-correlation with what it heard at the bridge's lag) and :mod:`.response` (partner turn ends
left unanswered, longest silence). Thresholds are config section ``health``
(``schemas/config-health.schema.yaml``).

The computation is :func:`dyafdb.score.health.measure.measure_health`; this module only names the
measures, so the analysis can read the names without loading the models' code. Values per side
(all in measures.tsv): ``dnsmos_sig``, ``dnsmos_bak``, ``dnsmos_ovrl``,
``text_share``, ``text_wer``, ``text_mismatch``, ``text_words``, ``echo``, ``echo_n``,
``echo_flag``, ``no_response``, ``longest_silence_s``. The measures file also keeps what they were
computed from under ``health`` (ASR text and its source, DNSMOS windows, unanswered turn ends).
"""

from __future__ import annotations

from dataclasses import dataclass

# Every value a side gets, in measures.tsv order.
MEASURES = ("dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl", "text_share", "text_wer", "text_mismatch", "text_words",
            "echo", "echo_n", "echo_flag", "no_response", "longest_silence_s")


@dataclass(frozen=True)
class Metric:
    """An audio-health measure as the analysis, figures and viewer name it."""

    name: str
    label: str
    scale: str  # what a value means, for table notes


# Declared once: the analysis tables (per-pairing matrices, per-model averages, variance), the
# figure panels, report titles and the viewer's rows derive from this.
METRICS = (
    Metric("dnsmos_ovrl", "DNSMOS OVRL", "1-5, higher is better"),
    Metric("dnsmos_sig", "DNSMOS SIG", "1-5, higher is better"),
    Metric("dnsmos_bak", "DNSMOS BAK", "1-5, higher is better"),
    Metric("text_share", "Speech-text word share", "0-1, share of text words heard"),
    Metric("text_wer", "Speech-text WER", "word error rate of the ASR against the text"),
    Metric("text_mismatch", "Speech-text mismatch", "share of sides below the mismatch threshold"),
    Metric("echo", "Echo (NCC at the bridge lag)", "-1 to 1, 1 = a copy of what it heard"),
    Metric("echo_flag", "Echo flagged", "share of sides at or above the echo threshold"),
    Metric("no_response", "No-response", "share of partner turn ends left unanswered"),
    Metric("longest_silence_s", "Longest silence (s)", "seconds"),
)
