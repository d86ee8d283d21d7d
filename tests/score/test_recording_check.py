"""Score refuses a recording that disagrees with its meta or cannot be read (issue 15, items 3 and 6).

Each case used to score with exit code 0 (a wrong result that looks complete) or stop with a
traceback, sometimes after writing the segments file. Now: exit code 2, a message naming the file,
the field and the fix, and no output at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from dyafdb.cli import main
from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE
from results_paths import results_at
from scoring_fixtures import write_project, write_recording_from_segments

CID = "t1-1-fixture-01__model_x__model_y__open-a__rep1__8s"
TICKS = 40


def _audio(rec):
    return sf.read(rec / "audio.wav", dtype="float32", always_2d=True)[0]


def _short(rec):
    sf.write(rec / "audio.wav", _audio(rec)[: 30 * FRAME_SAMPLES], SAMPLE_RATE, subtype="FLOAT")


def _nan(rec):
    audio = _audio(rec)
    audio[5000, 1] = np.nan
    sf.write(rec / "audio.wav", audio, SAMPLE_RATE, subtype="FLOAT")


def _inf(rec):
    audio = _audio(rec)
    audio[100, 0] = np.inf
    sf.write(rec / "audio.wav", audio, SAMPLE_RATE, subtype="FLOAT")


def _cut_header(rec):
    data = (rec / "audio.wav").read_bytes()
    (rec / "audio.wav").write_bytes(data[:30])


def _tokens(*lines):
    def edit(rec):
        (rec / "text.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    return edit


def _no_text(rec):
    (rec / "text.jsonl").unlink()


def _latin1_text(rec):
    (rec / "text.jsonl").write_bytes('{"channel": "a", "tick": 1, "time": 0.08, "text": "caf\u00e9"}\n'.encode("latin-1"))


CASES = {
    # item 3: wrong results that looked complete
    "audio-shorter-than-ticks": (_short, "audio.wav", "ticks = 40"),
    "nan-sample": (_nan, "audio.wav", "NaN or infinite"),
    "inf-sample": (_inf, "audio.wav", "NaN or infinite"),
    "unknown-channel": (_tokens({"channel": "c", "tick": 3, "text": "hi"}), "text.jsonl", "channel = 'c'"),
    "token-after-the-end": (_tokens({"channel": "a", "tick": TICKS, "text": "hi"}), "text.jsonl", "tick = 40"),
    "negative-tick": (_tokens({"channel": "b", "tick": -1, "text": "hi"}), "text.jsonl", "tick = -1"),
    # item 6: tracebacks
    "cut-wav-header": (_cut_header, "audio.wav", "not a readable WAV"),
    "missing-text": (_no_text, "text.jsonl", "not found"),
    "non-utf8-text": (_latin1_text, "text.jsonl", "not UTF-8"),
    "non-string-token": (_tokens({"channel": "a", "tick": 2, "text": 5}), "text.jsonl", "text = 5 is not a string"),
    "tick-not-integer": (_tokens({"channel": "a", "tick": "2", "text": "x"}), "text.jsonl", "tick = '2'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_score_refuses_a_recording_that_does_not_match_its_meta(tmp_path, capsys, case):
    edit, file, field = CASES[case]
    write_project(tmp_path, ["T1-1"])
    rec = write_recording_from_segments(Path(results_at(tmp_path).recording(CID)), {"a": [(2, 12)], "b": [(20, 30)]}, TICKS,
                                        tokens=[("a", 3, "hello"), ("b", 21, "there")], conversation_id=CID,
                                        archetype="T1-1", scenario="t1-1-fixture-01")
    edit(rec)
    rc = main(["score", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path), "--id", CID])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert str(rec / file) in err and field in err and "dyafdb record" in err, err
    assert "Traceback" not in err
    for folder in ("segments", "transcripts", "measures"):
        assert not (tmp_path / "results" / folder).exists() or not any((tmp_path / "results" / folder).iterdir())


def test_a_matching_recording_still_scores(tmp_path, capsys):
    write_project(tmp_path, ["T1-1"])
    write_recording_from_segments(Path(results_at(tmp_path).recording(CID)), {"a": [(2, 12)], "b": [(20, 30)]}, TICKS,
                                  tokens=[("a", 3, "hello"), ("b", TICKS - 1, "there")], conversation_id=CID,
                                  archetype="T1-1", scenario="t1-1-fixture-01")
    assert main(["score", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path), "--id", CID]) == 0
    assert Path(results_at(tmp_path).measures_json(CID)).exists()
