"""Audio health on hand-built recordings with known answers: DNSMOS ordering, speech-text agreement,
echo at the bridge lag, no-response; and the values reaching measures.json and measures.tsv."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dyafdb.clock import FRAME_SAMPLES, FRAME_SECONDS
from dyafdb.errors import InputError
from dyafdb.record.recording import Recording, Token
from dyafdb.score.health import MEASURES
from dyafdb.score.health.measure import HealthParams, measure_health
from dyafdb.score.health.agreement import side_agreement, speech_only
from dyafdb.score.health.dnsmos import WINDOW, dnsmos, window_starts
from dyafdb.score.health.echo import echo
from dyafdb.score.health.response import longest_silence_s, no_response
from dyafdb.score.turntaking import measure_conversation
from dyafdb.score.vad import VadParams, detect_stereo, to_mask
from dyafdb.polyphase import resample
from dyafdb.wordmatch import wer
from scoring_fixtures import SENTENCE, channel_audio, piper_speech
from results_paths import results_at

OTHER = "Seven purple elephants were dancing slowly across the frozen lake at midnight"


def padded(audio: np.ndarray, ticks: int, at: int = 0) -> np.ndarray:
    out = np.zeros(ticks * FRAME_SAMPLES, np.float32)
    out[at * FRAME_SAMPLES:at * FRAME_SAMPLES + len(audio)] = audio[: len(out) - at * FRAME_SAMPLES]
    return out


def tokens(side: str, text: str, start: int = 0) -> list[Token]:
    return [Token(side, start + i, w) for i, w in enumerate(text.split())]


class CountingASR:
    def __init__(self, text: str):
        self.text, self.calls = text, []

    def transcribe(self, audio: np.ndarray) -> str:
        self.calls.append(len(audio))
        return self.text


# ---------------------------------------------------------------- DNSMOS


def test_dnsmos_rates_clean_speech_above_the_same_speech_with_noise():
    speech = resample(piper_speech(), 2, 3)
    noise = np.random.default_rng(0).standard_normal(len(speech)).astype(np.float32)
    noisy = speech + noise * float(np.sqrt(np.mean(speech ** 2))) * 0.5  # about 6 dB SNR
    clean, dirty = dnsmos(speech), dnsmos(noisy)
    assert clean["bak"] > dirty["bak"] + 0.5
    assert clean["ovrl"] > dirty["ovrl"] + 0.3
    assert clean["sig"] > dirty["sig"]
    assert 1.0 <= dirty["ovrl"] < clean["ovrl"] <= 5.0


def test_dnsmos_windows_cover_the_clip_with_the_fewest_windows():
    assert window_starts(WINDOW) == [0]
    assert window_starts(WINDOW + 1) == [0, 1]
    starts = window_starts(3 * WINDOW - 5)
    assert len(starts) == 3 and starts[0] == 0 and starts[-1] + WINDOW == 3 * WINDOW - 5


def test_dnsmos_scores_speech_segments_only_and_skips_a_side_with_too_little_speech():
    speech = piper_speech()
    ticks = 250
    a = padded(speech, ticks, at=20)  # 4.5 s of speech in 20 s
    rec = Recording(np.stack([a, np.zeros_like(a)]), [], {})
    segments = detect_stereo(rec.audio, VadParams())
    params = HealthParams(asr=False)
    out = measure_health(rec, segments, {"a": [], "b": []}, params, {})
    only_speech = dnsmos(resample(speech_only(a, segments["a"]), 2, 3))
    assert out["values"]["a"]["dnsmos_ovrl"] == pytest.approx(only_speech["ovrl"], abs=1e-3)
    whole = dnsmos(resample(a, 2, 3))  # the silent rest of the channel would change the rating
    assert abs(whole["ovrl"] - only_speech["ovrl"]) > 1e-3
    assert out["values"]["b"]["dnsmos_ovrl"] is None and out["detail"]["b"]["dnsmos"]["windows"] == 0


# ---------------------------------------------------------------- speech-text agreement


def test_wer_counts_substitutions_deletions_and_insertions():
    assert wer("the cat sat", "the cat sat")["wer"] == 0.0
    assert wer("the cat sat", "the dog sat")["wer"] == pytest.approx(1 / 3)
    assert wer("the cat sat", "the sat")["wer"] == pytest.approx(1 / 3)
    assert wer("the cat sat", "oh the cat sat down")["wer"] == pytest.approx(2 / 3)
    assert wer("", "anything")["wer"] is None
    assert wer("Hello, world!", "hello world")["wer"] == 0.0


def test_agreement_values_and_mismatch_flag():
    ok = side_agreement(SENTENCE, SENTENCE.lower(), 4, 0.25)
    assert ok == {"text_share": 1.0, "text_wer": 0.0, "text_mismatch": 0, "text_words": len(SENTENCE.split())}
    bad = side_agreement(OTHER, SENTENCE, 4, 0.25)
    assert bad["text_share"] < 0.25 and bad["text_mismatch"] == 1 and bad["text_wer"] > 0.8
    assert side_agreement("", "words heard", 4, 0.25)["text_share"] is None


def test_real_whisper_tells_a_channel_whose_text_differs_from_its_speech():
    speech = piper_speech()
    ticks = len(speech) // FRAME_SAMPLES + 10
    audio = np.stack([padded(speech, ticks, 5), padded(speech, ticks, 5)])
    rec = Recording(audio, tokens("a", SENTENCE, 5) + tokens("b", OTHER, 5), {})
    segments = detect_stereo(audio, VadParams())
    out = measure_health(rec, segments, {"a": [], "b": []}, HealthParams(), {})
    a, b = out["values"]["a"], out["values"]["b"]
    assert a["text_share"] >= 0.8 and a["text_wer"] <= 0.3 and a["text_mismatch"] == 0
    assert b["text_share"] < 0.25 and b["text_wer"] > 0.7 and b["text_mismatch"] == 1
    assert out["detail"]["a"]["transcript"]["source"] == "asr"
    assert "fox" in out["detail"]["a"]["transcript"]["asr"].lower()


def test_asr_runs_on_each_sides_speech_only_the_same_way_for_every_side():
    """The garble watcher's whole-channel transcript of a marked side is not the agreement's: every
    side is heard the same way, so a model's agreement does not depend on whether it is marked."""
    ticks = 200
    a = channel_audio([(10, 40), (100, 120)], ticks, seed=1)
    b = channel_audio([(50, 70)], ticks, seed=2)
    rec = Recording(np.stack([a, b]), tokens("a", SENTENCE) + tokens("b", SENTENCE), {})
    segments = {"a": [(10, 40), (100, 120)], "b": [(50, 70)]}
    asr = CountingASR(SENTENCE)
    out = measure_health(rec, segments, {"a": [], "b": []}, HealthParams(), {}, asr)
    assert asr.calls == [(30 + 3 + 20) * FRAME_SAMPLES, 20 * FRAME_SAMPLES]  # a's two segments and the 0.24 s join; b's one
    assert out["detail"]["b"]["transcript"] == {"asr": SENTENCE, "source": "asr"}
    assert out["values"]["a"]["text_wer"] == 0.0 and out["values"]["b"]["text_mismatch"] == 0
    silent = Recording(np.zeros((2, ticks * FRAME_SAMPLES), np.float32), [], {})
    asr.calls.clear()
    measure_health(silent, {"a": [], "b": []}, {"a": [], "b": []}, HealthParams(), {}, asr)
    assert asr.calls == []  # no text: nothing to compare, no need to listen


# ---------------------------------------------------------------- echo


def test_a_channel_replaying_its_input_at_the_bridge_lag_is_flagged():
    speech = piper_speech()
    ticks = len(speech) // FRAME_SAMPLES + 4
    heard = padded(speech, ticks)
    replay = np.concatenate([np.zeros(FRAME_SAMPLES, np.float32), heard[:-FRAME_SAMPLES]]) * 0.7  # b at t = a at t-1
    out = echo(replay, heard, 1, 0.01)
    assert out["echo"] == pytest.approx(1.0, abs=1e-6) and out["echo_n"] > 30
    assert echo(replay, heard, 2, 0.01)["echo"] < 0.5  # the known lag, not another
    assert echo(heard, replay, 1, 0.01)["echo"] < 0.5  # the original speaker is not the echo
    rec = Recording(np.stack([heard, replay]), [], {})
    values = measure_health(rec, detect_stereo(rec.audio, VadParams()), {"a": [], "b": []},
                            HealthParams(asr=False), {})["values"]
    assert values["b"]["echo_flag"] == 1 and values["a"]["echo_flag"] == 0


def test_independent_speech_is_not_echo_and_silence_has_no_echo_value():
    speech = piper_speech()
    ticks = len(speech) // FRAME_SAMPLES + 4
    a = padded(speech, ticks)
    b = channel_audio([(0, ticks)], ticks, seed=3)  # noise over all of a's speech
    out = echo(b, a, 1, 0.01)
    assert abs(out["echo"]) < 0.1 and out["echo_n"] > 30
    assert echo(np.zeros_like(a), a, 1, 0.01) == {"echo": None, "echo_n": 0}


# ---------------------------------------------------------------- no-response


def test_a_side_that_never_answers_leaves_every_turn_end_unanswered():
    ticks = 300
    segments = {"a": [(0, 40), (80, 120), (160, 200)], "b": []}
    turn_ends = {s: v.turn_ends for s, v in measure_conversation(segments, ticks).items()}
    assert turn_ends["b"] == [(40, 80), (120, 160), (200, 300)]
    mask = to_mask(segments["b"], ticks)
    assert no_response(turn_ends["b"], mask)["no_response"] == 1.0
    assert longest_silence_s(mask) == pytest.approx(ticks * FRAME_SECONDS)
    answering = [(45, 70), (130, 150)]  # answers the first two turn ends, not the last
    m2 = to_mask(answering, ticks)
    r = no_response(turn_ends["b"], m2)
    assert r["no_response"] == pytest.approx(1 / 3) and r["unanswered"] == [(200, 300)]
    assert longest_silence_s(m2) == pytest.approx((300 - 150) * FRAME_SECONDS)
    assert no_response([], m2)["no_response"] is None


# ---------------------------------------------------------------- config and the measures file


def test_health_thresholds_from_config_and_schema_defaults(tmp_path):
    from dyafdb.config import validate_config
    from scoring_fixtures import write_project

    config = write_project(tmp_path, ["T1-1"], extra={"health": {"echo_threshold": 0.5}, "garble": {"min_word_chars": 3}})
    merged = validate_config(config, tmp_path / "config.yaml")
    p = HealthParams.from_config(merged)
    assert p.echo_threshold == 0.5 and p.min_word_chars == 3 and p.echo_lag_ticks == 1 and p.asr is True
    with pytest.raises(InputError, match="echo_lag_ticks"):
        validate_config({**config, "health": {"echo_lag_ticks": 0}}, tmp_path / "config.yaml")


def test_score_writes_health_values_for_both_sides_and_the_table_has_them(tmp_path):
    from dyafdb.measures.table import table_rows
    from dyafdb.score.conversation import read_measures, score_conversation
    from dyafdb.suite.design import build_design
    from scoring_fixtures import load, write_project, write_recording_from_segments

    write_project(tmp_path, ["T1-1"], extra={"health": {"asr": False}})
    config = load(tmp_path)
    row = build_design(config, tmp_path)[0]
    rec_dir = Path(results_at(tmp_path).recording(row.conversation_id))
    write_recording_from_segments(rec_dir, {"a": [(0, 30), (60, 90)], "b": []}, 120,
                                  conversation_id=row.conversation_id, archetype="T1-1", scenario=row.scenario,
                                  models=(row.model_a, row.model_b), opener=row.opener)
    paths = score_conversation(config, tmp_path, row.conversation_id)
    doc = read_measures(paths.measures)
    for side in "ab":
        assert set(MEASURES) <= set(doc["values"][side])
    assert doc["values"]["b"]["no_response"] == 1.0 and doc["values"]["a"]["dnsmos_ovrl"] is not None
    assert doc["health"]["detail"]["b"]["unanswered_turn_ends"] == [[30, 60], [90, 120]]
    rows = [r for r in table_rows(config, tmp_path, [row], with_judge=False) if r["measure"] == "no_response"]
    assert {(r["side"], r["value"]) for r in rows} == {("a", ""), ("b", "1")}


def test_a_missing_whisper_names_the_fix_including_health_asr(tmp_path):
    from dyafdb.score.health.agreement import load_whisper

    with pytest.raises(InputError, match="health.asr: false"):
        load_whisper({"garble": {"model": str(tmp_path / "nowhere")}}, 1)


def test_a_health_or_whisper_setting_change_rescores(tmp_path):
    from dyafdb.config import validate_config
    from dyafdb.score.inputs import ScoringInputs
    from scoring_fixtures import write_project

    config = write_project(tmp_path, ["T1-1"])
    settings = lambda extra: ScoringInputs(validate_config({**config, **extra}, "c"), {}, "results").score_settings  # noqa: E731
    base = settings({})
    assert settings({"health": {"echo_threshold": 0.9}}) != base
    assert settings({"garble": {"model": "/elsewhere"}}) != base
    assert settings({"garble": {"first_threshold": 0.5}}) == base  # re-records the marked models, not a rescore


def test_whisper_decodes_once_greedily_without_temperature_fallback():
    """The fallback samples at higher temperatures from an unseeded generator: one recorded channel
    was heard as "Uh-huh." and then "I hope.", so a garble verdict could change between runs."""
    from dyafdb.record.garble import GarbleSettings, OpenAIWhisperTranscriber, WhisperTranscriber

    class Model:
        def transcribe(self, audio, **kw):
            self.kw = kw
            return iter([type("S", (), {"text": " hello "})(), type("S", (), {"text": "world"})()]), None

    w = WhisperTranscriber.__new__(WhisperTranscriber)
    w.settings, w.model = GarbleSettings(), Model()
    assert w.transcribe(np.zeros(2400, np.float32)) == "hello world"
    assert w.model.kw["temperature"] == 0.0 and w.model.kw["without_timestamps"] is True
    assert w.model.kw["condition_on_previous_text"] is False

    class OpenAIModel:
        def transcribe(self, audio, **kw):
            self.kw = kw
            return {"text": " hello world "}

    o = OpenAIWhisperTranscriber.__new__(OpenAIWhisperTranscriber)
    o.settings, o.model = GarbleSettings(), OpenAIModel()
    assert o.transcribe(np.zeros(2400, np.float32)) == "hello world" and o.model.kw["temperature"] == 0.0


def test_an_agent_replaying_its_input_through_the_real_bridge_is_flagged_at_the_bridge_lag(tmp_path):
    """The lag is the bridge's, not an assumption: record a speaker against an agent that emits what
    it hears, score it, and only the replaying side carries the echo."""
    from dyafdb.record.conversation import record_many
    from dyafdb.score.conversation import read_measures, score_conversation
    from dyafdb.suite.design import build_design
    from scoring_fixtures import load, write_project

    models = {"speaker": {"adapter": "scoring_fixtures:SpeechAgent"}, "echo": {"adapter": "echo_agent:EchoAgent"}}
    write_project(tmp_path, ["T1-1"], models=models, window_s=6.0, extra={"health": {"asr": False}})
    config = load(tmp_path)
    row = next(r for r in build_design(config, tmp_path) if (r.model_a, r.model_b, r.opener) == ("speaker", "echo", "a"))
    record_many(config, [row], tmp_path / "results/recordings", tmp_path)
    values = read_measures(score_conversation(config, tmp_path, row.conversation_id).measures)["values"]
    assert values["b"]["echo"] > 0.99 and values["b"]["echo_flag"] == 1 and values["b"]["echo_n"] > 20
    assert values["a"]["echo_flag"] == 0
