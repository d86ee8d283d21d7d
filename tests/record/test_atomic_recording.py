"""A recording is replaced as a whole or not at all, and its garble verdict travels with it (issue 15, items 1-2)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from dyafdb.clock import FRAME_SAMPLES
from dyafdb.record import recording
from dyafdb.record.recording import Recording, Token, read_meta, write_recording
from scoring_fixtures import load, meta_for, write_project
from results_paths import results_at

CID = "t1-1-fixture-01__model_x__model_y__open-a__rep1__1s"


class Kill(BaseException):
    """Stands for kill -9: not an Exception, so no `except Exception` handler swallows it."""


def _rec(level: float, text: str) -> Recording:
    audio = np.full((2, 12 * FRAME_SAMPLES), level, np.float32)
    return Recording(audio=audio, tokens=[Token("a", 1, text)], meta=meta_for(CID, "T1-1", "t1-1-fixture-01", ticks=12))


def _files(directory: Path) -> dict[str, bytes]:
    if not directory.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _kill_at(monkeypatch, n: int) -> list[int]:
    """Raise Kill at the n-th call of any file-moving or -removing os function."""
    calls = [0]
    for name in ("replace", "rename", "unlink", "rmdir"):
        real = getattr(os, name)

        def wrapped(*args, _real=real, **kw):
            calls[0] += 1
            if calls[0] == n:
                raise Kill()
            return _real(*args, **kw)

        monkeypatch.setattr(os, name, wrapped)
    return calls


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_rerecord_killed_at_any_step_leaves_the_old_or_the_new_recording_whole(tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(recording, "_exchange", lambda a, b: False, raising=False)
    n = 1
    while True:
        target = tmp_path / f"k{n}" / CID
        write_recording(_rec(0.1, "old"), target)
        old = _files(target)
        with monkeypatch.context() as m:
            calls = _kill_at(m, n)
            try:
                write_recording(_rec(0.2, "new"), target)
                killed = False
            except Kill:
                killed = True
        # what the next attempt (or Snakemake's rerun) finds first puts back a recording set aside
        staging = getattr(recording, "staging_dir", None)
        if staging is not None:
            shutil.rmtree(staging(target))
        now = _files(target)
        assert now == old or (now.keys() == old.keys() and json.loads(now["meta.json"])["complete"]
                              and b"new" in now["text.jsonl"]), f"kill at filesystem step {n} left a mixed folder"
        if not killed:
            break
        assert calls[0] >= n
        n += 1
    assert read_meta(target)["complete"] and b"new" in (target / "text.jsonl").read_bytes()
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]


def test_a_rerecord_that_fails_after_writing_audio_keeps_the_old_text_with_the_old_audio(tmp_path, monkeypatch):
    target = tmp_path / CID
    write_recording(_rec(0.1, "old"), target)
    old = _files(target)

    def full_disk(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(json, "dump", full_disk)  # meta.json is the last file written
    with pytest.raises(OSError):
        write_recording(_rec(0.2, "new"), target)
    assert _files(target) == old


# ------------------------------------------------------------------------ the garble verdict


class ASR:
    """A stand-in for Whisper: hears ``text``, or stands for a kill while transcribing."""

    def __init__(self, text: str = "", kill: bool = False):
        self.text, self.kill = text, kill

    def transcribe(self, audio):
        if self.kill:
            raise Kill()
        return self.text


def _checked_project(tmp_path, max_attempts: int = 1):
    from dyafdb.suite.design import build_design

    models = {"talker": {"adapter": "scripted", "garble_check": True,
                         "params": {"script": [{"start_s": 0.0, "end_s": 0.8, "text": "wonderful afternoon gardens"}]}},
              "other": {"adapter": "scripted", "params": {"script": []}}}
    write_project(tmp_path, ["T1-1"], models=models, window_s=2.0, extra={"garble": {"max_attempts": max_attempts}})
    config = load(tmp_path)
    row = next(r for r in build_design(config, tmp_path) if (r.model_a, r.model_b) == ("talker", "other"))
    return config, row


def _record(config, row, root, asr):
    from dyafdb.record.conversation import AgentPool
    from dyafdb.record.checked import record_checked

    with AgentPool(dict(config)) as pool:
        return record_checked(config, row, Path(results_at(root).recording(row.conversation_id)), pool, root, transcriber=asr)


def test_kill_during_the_whisper_check_keeps_the_previous_recording_and_its_verdict(tmp_path):
    config, row = _checked_project(tmp_path)
    _, doc = _record(config, row, tmp_path, ASR("wonderful afternoon gardens"))
    out = Path(results_at(tmp_path).recording(row.conversation_id))
    assert doc["status"] == "ok"
    before = _files(out)
    with pytest.raises(Kill):
        _record(config, row, tmp_path, ASR(kill=True))
    assert _files(out) == before
    assert json.loads((out / "garble.json").read_text())["status"] == "ok"


def test_failed_rerecord_keeps_a_garbled_recording_marked_failed(tmp_path):
    from dyafdb.agents.base import AgentError
    from dyafdb.record.checked import record_checked
    from dyafdb.record.garble import read_garble

    config, row = _checked_project(tmp_path)
    _, doc = _record(config, row, tmp_path, ASR("nothing alike"))
    out = Path(results_at(tmp_path).recording(row.conversation_id))
    assert doc["status"] == "failed"

    def broken(*args, **kw):
        raise AgentError("agent talker (side a) failed at tick 3")

    with pytest.raises(AgentError):
        record_checked(config, row, out, None, tmp_path, transcriber=ASR(), record=broken)
    assert read_garble(out)["status"] == "failed"
    assert read_meta(out)["garble"] == {"status": "failed", "checked_sides": ["a"], "accepted_attempt": 1,
                                        "failed_sides": ["a"]}


def test_a_lost_garble_json_does_not_make_a_garbled_run_clean(tmp_path):
    from dyafdb.measures.table import table_rows
    from dyafdb.score.conversation import score_conversation

    config, row = _checked_project(tmp_path)
    _record(config, row, tmp_path, ASR("nothing alike"))
    (Path(results_at(tmp_path).recording(row.conversation_id)) / "garble.json").unlink()
    score_conversation(config, tmp_path, row.conversation_id)
    rows = list(table_rows(config, tmp_path, [row], with_judge=False))
    assert {r["side"]: r["value"] for r in rows if r["measure"] == "garble_failure"} == {"a": "1"}
    assert not any(r["measure"] == "occupancy" for r in rows)  # T1-1: a failure, not a score


def test_a_checked_model_recorded_without_its_verdict_is_not_scored(tmp_path, capsys):
    """What a kill between meta.json and garble.json used to leave: scored as clean, rc 0."""
    from dyafdb.cli import main
    from dyafdb.record.conversation import record_many

    config, row = _checked_project(tmp_path)
    record_many(config, [row], tmp_path / "results/recordings", tmp_path)  # no watch loop, no verdict
    rc = main(["score", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path), "--id", row.conversation_id])
    err = capsys.readouterr().err
    assert rc == 2 and "garble" in err and "meta.json" in err and "dyafdb record" in err
    assert not (tmp_path / "results/segments").exists()
