"""Anonymised transcripts: token windows, tokens in two or no windows, Speaker A, ordering, anonymity."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from dyafdb.record.recording import Token
from dyafdb.score.transcript import (TranscriptParams, attach, build_transcript, identifying_names, join_tokens, redactor,
                               render, speaker_sides, token_mode)
from results_paths import results_at

REPO = Path(__file__).resolve().parents[2]
P = TranscriptParams()


def test_window_on_the_tick_grid():
    assert (P.before_ticks, P.after_ticks) == (7, 3)  # 0.6 s = 7.5 ticks, 0.3 s = 3.75 ticks
    seg = [(20, 30)]
    where, _ = attach([12, 13, 29, 30, 33, 34], seg, P)
    assert where == [None, 0, 0, 0, 0, None]  # tick 13 = 0.56 s before, 33 = 0.24 s after the end


def test_window_from_config():
    params = TranscriptParams.from_config({"transcript": {"before_s": 0.16, "after_s": 0.0}})
    where, _ = attach([17, 18, 30, 31], [(20, 30)], params)
    assert where == [None, 0, 0, None]


def test_token_in_two_windows_goes_inside_else_nearer_else_later():
    segs = [(20, 30), (36, 46)]  # windows [13, 33] and [29, 49] overlap on 29..33
    where, ambiguous = attach([29, 31, 33, 34], segs, P)
    assert where == [0, 0, 1, 1]  # 29 inside seg 0; 31: 1 after vs 5 before; 33: tie 3/3 -> later; 34: only seg 1
    assert ambiguous == 3


def test_tokens_in_no_window_are_listed_not_shown():
    doc = build_transcript({"a": [(20, 30)], "b": []}, [Token("a", 25, "hello"), Token("a", 60, "orphan")], "a")
    assert [line["text"] for line in doc["lines"]] == ["hello"]
    assert doc["unattached"] == [{"speaker": "A", "tick": 60, "time_s": 4.8, "text": "orphan"}]
    assert "orphan" not in render(doc)


def test_speaker_a_is_whoever_spoke_first():
    assert speaker_sides({"a": [(30, 40)], "b": [(20, 25)]}, opener="a") == {"A": "b", "B": "a"}
    assert speaker_sides({"a": [(20, 40)], "b": [(20, 25)]}, opener="b") == {"A": "b", "B": "a"}  # tie: opener
    assert speaker_sides({"a": [], "b": []}, opener="b") == {"A": "b", "B": "a"}
    assert speaker_sides({"a": [(50, 60)], "b": []}, opener="b") == {"A": "a", "B": "b"}


def test_lines_ordered_by_onset_with_start_time():
    segs = {"a": [(30, 40), (60, 70)], "b": [(19, 28), (45, 50)]}
    tokens = [Token("a", 31, "second"), Token("b", 19, "first"), Token("b", 46, "third"), Token("a", 61, "fourth")]
    doc = build_transcript(segs, tokens, opener="a")
    assert render(doc) == ("[1.52] Speaker A: first\n[2.40] Speaker B: second\n"
                           "[3.60] Speaker A: third\n[4.80] Speaker B: fourth\n")
    assert doc["speakers"] == {"A": "b", "B": "a"}
    assert doc["lines"][0] == {"speaker": "A", "start": 19, "end": 28, "start_s": 1.52, "end_s": 2.24, "text": "first"}


def test_same_onset_lists_speaker_a_first_and_empty_segments_show():
    doc = build_transcript({"a": [(10, 20)], "b": [(10, 15)]}, [Token("b", 10, "hi")], opener="b")
    assert render(doc) == "[0.80] Speaker A: hi\n[0.80] Speaker B: (no text)\n"


def test_joining_pieces_and_words():
    assert token_mode([" Hel", "lo"]) == "pieces" and token_mode(["Hello", "there"]) == "words"
    assert join_tokens([" Hel", "lo", " world", "."]) == "Hello world."
    assert join_tokens(["\u2581Hel", "lo", "\u2581there"]) == "Hello there"
    assert join_tokens(["hello", "there", " "]) == "hello there"
    # the mode is decided per channel: one spaced piece puts the whole channel in piece mode
    doc = build_transcript({"a": [(0, 10), (30, 40)], "b": []},
                           [Token("a", 1, "Hel"), Token("a", 2, "lo"), Token("a", 31, " again")], opener="a")
    assert [line["text"] for line in doc["lines"]] == ["Hello", "again"]


def test_redaction_whole_words_any_case():
    names = identifying_names({"models": {"moshi": {"label": "Moshi"}, "minicpmo": {"label": "MiniCPM-o 4.5"},
                                          "cpu_eager": {"label": "CPU eager"}}})
    scrub = redactor(names)
    assert scrub("I am MOSHI, not minicpm-o 4.5; eager? moshis") == "I am [redacted], not [redacted]; [redacted]? moshis"
    assert "MiniCPM" in names and "CPU" not in names  # label words under four characters are kept


def _config_files() -> list[Path]:
    files = [REPO / "config" / "config.yaml", REPO / "config" / "demo.yaml"]
    assert files[0].exists()
    return [f for f in files if f.exists()]


@pytest.mark.parametrize("config_file", _config_files(), ids=lambda p: p.name)
def test_no_model_name_pairing_id_or_path_in_any_transcript(tmp_path, config_file):
    """Every model of the shipped configs, paired with every other, saying its own name aloud."""
    from dyafdb.config import load_config
    from dyafdb.suite.design import build_design
    from dyafdb.record.conversation import AgentPool, record_conversation
    from dyafdb.score.conversation import score_conversation
    from scoring_fixtures import load, write_project

    shipped = load_config(config_file)["models"]
    models = {}
    for key, spec in shipped.items():
        label = spec.get("label", key)
        line = f"hello I am {key} also called {label}"
        models[key] = {"adapter": "scripted", "label": label, "params": {
            "opener_script": [{"start_s": 0.0, "end_s": 1.2, "text": line}],
            "responder_script": [{"start_s": 2.0, "end_s": 3.2, "text": line + " nice to meet you"}]}}
    write_project(tmp_path, ["T1-1"], models=models, window_s=4.0)
    config = load(tmp_path)
    rows = build_design(config, tmp_path)
    chosen = {r.pairing: r for r in rows if r.opener == "b"}  # one conversation per pairing
    assert len(chosen) == len(list(itertools.combinations_with_replacement(models, 2)))
    forbidden = {s.lower() for key, spec in shipped.items()
                 for s in (key, spec.get("label", key), spec["adapter"], *identifying_names({"models": {key: spec}}))}
    forbidden |= {"model", "scripted", "adapter"}
    with AgentPool(config) as pool:
        for row in chosen.values():
            out = Path(results_at(tmp_path).recording(row.conversation_id))
            record_conversation(config, row, out, pool, tmp_path)
            # the transcript and what it is made from; the measures (audio health: Whisper and DNSMOS per
            # side, most of this test's time) write no text a rater or the judge reads
            paths = score_conversation(config, tmp_path, row.conversation_id, stages=("segments", "transcript"))
            texts = {"txt": paths.transcript_txt.read_text(), "json": paths.transcript_json.read_text()}
            assert "Speaker A:" in texts["txt"] and "[redacted]" in texts["txt"]
            for kind, text in texts.items():
                low = text.lower()
                for bad in forbidden | {row.conversation_id, row.pairing, row.scenario, str(tmp_path).lower(), "recordings"}:
                    assert not re.search(rf"(?<![a-z0-9]){re.escape(bad.lower())}(?![a-z0-9])", low), (kind, bad, text)
            doc = json.loads(texts["json"])
            assert set(doc) == {"format", "speakers", "window", "lines", "unattached", "tokens_in_two_windows",
                                "provenance"}
            # the one addition: the recording digest (a content hash), never an id, a model or a path
            assert set(doc["provenance"]) == {"recording"} and re.fullmatch(r"[0-9a-f]{16}", doc["provenance"]["recording"])


def test_stage_commands_run_alone_from_the_previous_stage_file(tmp_path, capsys):
    from dyafdb.cli import main
    from scoring_fixtures import write_project, write_recording_from_segments

    write_project(tmp_path, ["T1-1"])
    cid = "c1"
    write_recording_from_segments(Path(results_at(tmp_path).recording(cid)), {"a": [(0, 12)], "b": [(20, 30)]}, 40,
                                  [("a", 3, "hello"), ("b", 21, "hi")], conversation_id=cid, archetype="T1-1",
                                  scenario="t1-1-fixture-01", opener="b")
    base = ["--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path), "--id", cid]
    assert main(["score", "transcript", *base]) == 2  # no segments yet: says which file and what to run
    assert "run `dyafdb score`" in capsys.readouterr().err
    assert main(["score", "segments", *base]) == 0
    assert main(["score", "transcript", *base]) == 0 and main(["score", "mechanical", *base]) == 0
    text = Path(results_at(tmp_path).transcript_txt(cid)).read_text()
    assert text == "[0.00] Speaker A: hello\n[1.60] Speaker B: hi\n"
    measures = json.loads(Path(results_at(tmp_path).measures_json(cid)).read_text())
    assert measures["values"]["a"]["occupancy"] == pytest.approx(12 / 22)
