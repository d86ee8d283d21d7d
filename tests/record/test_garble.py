"""The garble watcher: the share, both passes and their thresholds, re-recording, the table rule."""

from __future__ import annotations

from pathlib import Path

import json

import numpy as np
import pytest

from dyafdb.clock import FRAME_SAMPLES
from dyafdb.record.garble import GarbleSettings, check_side, load_transcriber, share
from dyafdb.record.recording import Recording, Token
from dyafdb.errors import InputError
from scoring_fixtures import SENTENCE, load, piper_speech, write_project
from results_paths import results_at

S = GarbleSettings()


def test_share_counts_text_words_longer_than_three_characters():
    r = share("The cat sat on the WARM windowsill, warm again", "a warm windowsill")
    assert r == {"share": 0.75, "words": 4, "found": 3}  # warm, windowsill, warm found; again not heard
    assert share("a an the it", "anything")["share"] is None  # nothing to compare
    assert share("Hello, world!", "hello world")["share"] == 1.0
    assert share("cottage fourteen", "")["share"] == 0.0


class ScriptedASR:
    """A stand-in for Whisper that hears a fixed text per pass (told apart by audio length)."""

    def __init__(self, first: str, full: str, first_samples: int):
        self.first, self.full, self.first_samples, self.calls = first, full, first_samples, []

    def transcribe(self, audio: np.ndarray) -> str:
        self.calls.append(len(audio))
        return self.first if len(audio) <= self.first_samples else self.full


def recording(seconds: float, words_first: list[str], words_late: list[str]) -> Recording:
    ticks = int(round(seconds / 0.08))
    tokens = [Token("b", 10 + i, w) for i, w in enumerate(words_first)]
    tokens += [Token("b", 400 + i, w) for i, w in enumerate(words_late)]  # after 30 s (tick 375)
    return Recording(audio=np.zeros((2, ticks * FRAME_SAMPLES), np.float32), tokens=tokens, meta={})


FIVE = ["alpha", "bravo", "charlie", "delta", "echo"]
FIRST = 375 * FRAME_SAMPLES


def test_first_pass_at_threshold_clears_without_second_pass():
    asr = ScriptedASR("alpha", "", FIRST)  # 1 of 5 = 0.2: not below 0.2
    r = check_side(recording(40, FIVE, FIVE), "b", S, asr)
    assert r["first_pass"]["share"] == 0.2 and r["full_pass"] is None and not r["flagged"]
    assert asr.calls == [FIRST]


def test_second_pass_decides_at_its_own_threshold():
    late = ["foxtrot", "golf", "hotel"]
    asr = ScriptedASR("", "foxtrot golf", FIRST)  # full: 2 of 8 = 0.25, not below 0.25
    r = check_side(recording(40, FIVE, late), "b", S, asr)
    assert r["first_pass"]["share"] == 0.0 and r["full_pass"]["share"] == 0.25 and not r["flagged"]
    asr = ScriptedASR("", "foxtrot", FIRST)  # 1 of 8
    r = check_side(recording(40, FIVE, late), "b", S, asr)
    assert r["flagged"] and len(asr.calls) == 2


def test_no_words_in_first_pass_goes_to_full_pass_and_no_words_at_all_never_flags():
    asr = ScriptedASR("", "", FIRST)
    r = check_side(recording(40, [], ["foxtrot", "hotel"]), "b", S, asr)
    assert r["first_pass"]["share"] is None and r["full_pass"]["share"] == 0.0 and r["flagged"]
    r = check_side(recording(40, [], []), "b", S, ScriptedASR("", "", FIRST))
    assert r["full_pass"]["share"] is None and not r["flagged"]


def test_short_recording_is_transcribed_once():
    asr = ScriptedASR("", "", FIRST)
    r = check_side(recording(20, FIVE, []), "b", S, asr)
    assert r["flagged"] and len(asr.calls) == 1 and r["full_pass"]["asr"] == ""


def test_thresholds_from_config():
    settings = GarbleSettings.from_config({"garble": {"first_threshold": 0.5, "full_threshold": 0.1,
                                                      "first_pass_s": 0.96}})  # 12 ticks: alpha, bravo
    asr = ScriptedASR("alpha", "alpha", 12 * FRAME_SAMPLES)  # first 1/2 = 0.5: not below 0.5
    assert check_side(recording(40, FIVE, []), "b", settings, asr)["full_pass"] is None
    asr = ScriptedASR("", "alpha", 12 * FRAME_SAMPLES)  # first 0 < 0.5; full 1/5 = 0.2: below 0.25, not 0.1
    assert not check_side(recording(40, FIVE, []), "b", settings, asr)["flagged"]
    assert check_side(recording(40, FIVE, []), "b", S, ScriptedASR("", "alpha", FIRST))["flagged"]


def test_a_run_fails_after_five_rerecordings_as_in_appendix_h():
    # Appendix H: failed after 5 re-recordings, i.e. 6 recordings in all; the setting counts re-recordings
    assert GarbleSettings().rerecordings == 5 and GarbleSettings().recordings == 6
    from dyafdb.config import load_config

    assert GarbleSettings.from_config(load_config("config/demo.yaml")).recordings == 6
    assert GarbleSettings.from_config({"garble": {"rerecordings": 0}}).recordings == 1
    # the older name counted recordings in all
    assert GarbleSettings.from_config({"garble": {"rerecordings": 5, "max_attempts": 2}}).recordings == 2


def test_model_path_errors_name_the_field(tmp_path):
    with pytest.raises(InputError, match="garble.model"):
        GarbleSettings(model=str(tmp_path / "missing")).model_path()
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="model.bin"):
        load_transcriber(GarbleSettings(model=str(tmp_path / "empty")))
    ckpt = tmp_path / "tiny.en.pt"
    ckpt.write_bytes(b"not a checkpoint")
    try:
        import whisper  # noqa: F401
    except ImportError:
        with pytest.raises(InputError, match="openai-whisper"):
            load_transcriber(GarbleSettings(model=str(ckpt)))


def test_real_whisper_hears_speech_and_not_noise():
    speech = piper_speech()
    tokens = [Token("a", i, w) for i, w in enumerate(SENTENCE.split())]
    noise = (np.random.default_rng(0).standard_normal(len(speech)) * 0.1).astype(np.float32)
    pad = (-len(speech)) % FRAME_SAMPLES
    audio = np.stack([np.concatenate([speech, np.zeros(pad, np.float32)]),
                      np.concatenate([noise, np.zeros(pad, np.float32)])])
    rec = Recording(audio=audio, tokens=tokens + [Token("b", t.tick, t.text) for t in tokens], meta={})
    transcriber = load_transcriber(S)
    clean, garbled = check_side(rec, "a", S, transcriber), check_side(rec, "b", S, transcriber)
    assert clean["first_pass"]["share"] >= 0.8 and not clean["flagged"]
    assert garbled["first_pass"]["share"] < 0.2 and garbled["flagged"]


def _speech_project(tmp_path, garbled_sessions: int, max_attempts: int, archetype: str = "T1-1"):
    from dyafdb.suite.design import build_design

    models = {"speaker": {"adapter": "scoring_fixtures:SpeechAgent", "garble_check": True,
                          "params": {"garbled_sessions": garbled_sessions}},
              "listener": {"adapter": "scripted", "params": {"script": []}}}
    write_project(tmp_path, [archetype], models=models, window_s=6.0, extra={"garble": {"max_attempts": max_attempts}})
    config = load(tmp_path)
    row = next(r for r in build_design(config, tmp_path)
               if (r.model_a, r.model_b, r.opener) == ("speaker", "listener", "a"))
    return config, row


def test_flagged_run_is_recorded_again_with_new_attempt_and_seed(tmp_path):
    from dyafdb.record.checked import record_many_checked
    from dyafdb.record.recording import read_meta

    config, row = _speech_project(tmp_path, garbled_sessions=1, max_attempts=5)
    [(meta, doc)] = record_many_checked(config, [row], tmp_path / "results/recordings", tmp_path)
    out = Path(results_at(tmp_path).recording(row.conversation_id))
    assert doc["status"] == "ok" and doc["accepted_attempt"] == 2 and doc["checked_sides"] == ["a"]
    assert [a["flagged"] for a in doc["attempts"]] == [True, False]
    assert json.loads((out / "garble.json").read_text()) == doc
    assert read_meta(out)["attempt"] == 2 == meta["attempt"]
    rejected = read_meta(out / "rejected" / "attempt-1")
    assert rejected["attempt"] == 1 and rejected["seeds"]["a"] != meta["seeds"]["a"]
    assert doc["attempts"][1]["sides"]["a"]["first_pass"]["share"] >= 0.8


def test_still_garbled_after_max_attempts_is_a_failure_kept_only_for_t3(tmp_path):
    from dyafdb.record.checked import record_many_checked
    from dyafdb.score.conversation import score_conversation
    from dyafdb.measures.table import table_rows

    for archetype, kept in (("T1-1", False), ("T3-1", True)):
        root = tmp_path / archetype
        root.mkdir()
        config, row = _speech_project(root, garbled_sessions=99, max_attempts=2, archetype=archetype)
        config["judge"] = {"judges": {"j": {"backend": "openai", "model": "m", "api_key_env": None}}}
        [(meta, doc)] = record_many_checked(config, [row], root / "results/recordings", root)
        assert doc["status"] == "failed" and doc["accepted_attempt"] == 2 and len(doc["attempts"]) == 2
        assert (Path(results_at(root).recording(row.conversation_id)) / "rejected/attempt-1/meta.json").exists()
        score_conversation(config, root, row.conversation_id)
        rows = list(table_rows(config, root, [row], with_judge=False))
        failure = {r["side"]: r["value"] for r in rows if r["measure"] == "garble_failure"}
        assert failure == {"a": "1"}
        assert any(r["measure"] == "occupancy" for r in rows) == kept
        assert all(r["attempt"] == 2 for r in rows)


def test_unmarked_models_get_a_not_checked_report(tmp_path):
    from dyafdb.suite.design import build_design
    from dyafdb.record.checked import record_many_checked
    from dyafdb.record.garble import read_garble

    write_project(tmp_path, ["T1-1"], window_s=2.0)
    config = load(tmp_path)
    row = build_design(config, tmp_path)[0]
    record_many_checked(config, [row], tmp_path / "results/recordings", tmp_path)
    doc = read_garble(Path(results_at(tmp_path).recording(row.conversation_id)))
    assert doc["status"] == "not_checked" and doc["attempts"] == [] and doc["accepted_attempt"] == 1


def test_record_command_runs_the_watch_loop(tmp_path, capsys):
    from dyafdb.cli import main

    config, row = _speech_project(tmp_path, garbled_sessions=0, max_attempts=5)
    rc = main(["record", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path), "--id",
               row.conversation_id, "--no-progress"])
    assert rc == 0 and "attempt 1, garble ok" in capsys.readouterr().out
    assert (Path(results_at(tmp_path).recording(row.conversation_id)) / "garble.json").exists()
