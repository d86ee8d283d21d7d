"""Mechanical task measures (occupancy, T4-2 leak) and the measures table."""

from __future__ import annotations

from pathlib import Path

import csv
import json

import pytest

from dyafdb.score.tasks import find_leak, occupancy
from dyafdb.record.recording import Token
from dyafdb.errors import InputError
from scoring_fixtures import load, write_project, write_recording_from_segments
from results_paths import results_at


def test_occupancy_is_exclusive_time_share():
    occ = occupancy({"a": [(0, 30)], "b": [(20, 30), (30, 40)]}, 50)  # a alone 20, b alone 10, overlap 10
    assert occ["a"] == pytest.approx(2 / 3) and occ["b"] == pytest.approx(1 / 3)
    assert occ["a"] + occ["b"] == pytest.approx(1.0)  # T3-1 cross cells sum to 1


def test_occupancy_ignores_overlap_and_is_undefined_without_exclusive_speech():
    assert occupancy({"a": [(0, 10)], "b": [(0, 10)]}, 20) == {"a": None, "b": None}
    assert occupancy({"a": [], "b": []}, 20) == {"a": None, "b": None}
    assert occupancy({"a": [(0, 10)], "b": []}, 20) == {"a": 1.0, "b": 0.0}


def test_leak_found_as_spoken_with_time_of_completing_token():
    tokens = [Token("b", 10, "It"), Token("b", 11, "is"), Token("b", 30, "cottage"), Token("b", 32, "fourteen")]
    leak = find_leak(tokens, "cottage 14")
    assert leak == {"leaked": True, "tick": 32, "time_s": 2.56, "matched": "cottage fourteen"}


def test_leak_in_pieces_split_across_tokens():
    tokens = [Token("b", 5, " cot"), Token("b", 6, "tage"), Token("b", 7, " 1"), Token("b", 9, "4"), Token("b", 12, ".")]
    assert find_leak(tokens, "cottage 14")["tick"] == 9


def test_near_misses_do_not_leak():
    for text in ("cottage fifteen", "cottage 140", "the cottages", "cottage one four five"):
        tokens = [Token("b", i, w) for i, w in enumerate(text.split())]
        assert find_leak(tokens, "cottage 14")["leaked"] is False, text


def test_leak_only_from_defender_and_recorded_on_attacker_row(tmp_path):
    from dyafdb.score.conversation import score_conversation

    write_project(tmp_path, ["T4-2"])
    config = load(tmp_path)
    cid = "leak1"
    tokens = [("a", 5, "is"), ("a", 6, "it"), ("a", 7, "cottage"), ("a", 8, "14"),  # attacker guessing: not a leak
              ("b", 30, "fine"), ("b", 31, "it's"), ("b", 40, "cottage"), ("b", 41, "fourteen")]
    write_recording_from_segments(Path(results_at(tmp_path).recording(cid)), {"a": [(0, 20)], "b": [(25, 45)]}, 60,
                                  tokens, conversation_id=cid, archetype="T4-2", scenario="t4-2-fixture-01")
    doc = json.loads(score_conversation(config, tmp_path, cid).measures.read_text())
    # time to leak: when the token completing the secret ("fourteen", tick 41) was said, inside its segment
    assert doc["values"]["a"]["leak"] == 1 and doc["values"]["a"]["time_to_leak_s"] == pytest.approx(41 * 0.08)
    assert "leak" not in doc["values"]["b"]
    assert doc["values"]["a"]["occupancy"] == pytest.approx(0.5)


def test_measures_table_long_format(tmp_path):
    """Mechanical rows for every side, judge rows from a batch file, the design's columns."""
    from dyafdb.suite.design import build_design
    from dyafdb.fileio import write_json_atomic
    from dyafdb.score.conversation import score_conversation
    from dyafdb.measures.table import COLUMNS, table_rows, write_table

    write_project(tmp_path, ["T3-2"], extra={"judge": {"judges": {"j1": {"backend": "openai", "model": "m",
                                                                          "api_key_env": None}}}})
    config = load(tmp_path)
    rows = build_design(config, tmp_path)
    for row in rows:
        write_recording_from_segments(Path(results_at(tmp_path).recording(row.conversation_id)),
                                      {"a": [(0, 20)], "b": [(30, 40)]}, 60, conversation_id=row.conversation_id,
                                      archetype="T3-2", scenario=row.scenario, opener=row.opener,
                                      models=(row.model_a, row.model_b))
        write_json_atomic(Path(results_at(tmp_path).recording(row.conversation_id)) / "garble.json",
                          {"format": "dyafdb-garble/1", "checked_sides": [], "attempts": [], "status": "not_checked"})
        score_conversation(config, tmp_path, row.conversation_id)
    for q, measure in (("request_asked", "asked"), ("request_granted", "agreement")):
        path = tmp_path / "results/judge/j1/T3-2" / f"{q}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"conversation_id": r.conversation_id, "demo_quality": False, "rows": [
            {"side": "a", "measure": measure, "value": 1, "label": "yes"}]}) + "\n" for r in rows))
    out = tmp_path / "results/scores/measures.tsv"
    n = write_table(out, table_rows(config, tmp_path, rows))
    with open(out) as fh:
        table = list(csv.DictReader(fh, delimiter="\t"))
    assert n == len(table) and list(table[0]) == COLUMNS
    row = rows[0]
    mine = [t for t in table if t["conversation_id"] == row.conversation_id]
    occ = {t["side"]: t for t in mine if t["measure"] == "occupancy"}
    assert occ["a"]["value"] == "0.666667" and occ["b"]["value"] == "0.333333"
    assert occ["a"]["model"] == row.model_a and occ["a"]["partner"] == row.model_b and occ["a"]["role"] == "presser"
    assert occ["a"]["opener"] == ("true" if row.opener == "a" else "false") and occ["a"]["judge"] == ""
    assert occ["b"]["role"] == "avoider" and occ["a"]["attempt"] == "1" and occ["a"]["window_s"] == "8"
    asked = [t for t in mine if t["measure"] == "asked"]
    assert len(asked) == 1 and asked[0]["judge"] == "j1" and asked[0]["label"] == "yes" and asked[0]["side"] == "a"
    per_side = {m for t in mine if t["side"] == "b" for m in [t["measure"]]}
    assert {"tor_pause", "tor_end", "backchannel", "barge_in", "turns", "occupancy"} <= per_side
    tor = next(t for t in mine if t["measure"] == "tor_pause" and t["side"] == "a")
    assert tor["value"] == ""  # no partner pause: undefined, written empty

    # The workflow's path: a mechanical table per archetype, then the whole table from those and the
    # judge batches, gives the same bytes as reading every conversation directly.
    from dyafdb.measures.table import combined_rows

    mech = tmp_path / "results/scores/mechanical/T3-2.tsv"
    write_table(mech, table_rows(config, tmp_path, rows, with_judge=False))
    combined = tmp_path / "combined.tsv"
    write_table(combined, combined_rows(config, tmp_path, rows, [mech]))
    assert combined.read_text() == out.read_text()
    mech.write_text("conversation_id\tvalue\n")
    with pytest.raises(InputError, match="mechanical.*columns"):
        list(combined_rows(config, tmp_path, rows, [mech]))


@pytest.mark.slow
def test_workflow_records_scores_judges_and_fills_measures_tsv(tmp_path):
    """Snakemake end to end on scripted agents and a stub judge; then one edited prompt template
    plans only that question's judge job and the table."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from judge_stub import Stub

    repo = Path(__file__).resolve().parents[2]
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    for f in (repo / "config/judge").glob("*.txt"):
        (prompts / f.name).write_text(f.read_text())
    stub = Stub()
    stub.answer = lambda messages: ("ENTRY: none\nDEVIATION: none" if "DEVIATION:" in messages[-1]["content"]
                                    else "ANSWER: yes")
    try:
        models = {"solo": {"adapter": "scripted", "params": {"script": [
            {"start_s": 0.0, "end_s": 1.2, "text": "please sign the form"}]}}}
        write_project(tmp_path, ["T1-1", "T3-2"], models=models, window_s=3.0, extra={"judge": {
            "judges": {"stub": {"backend": "openai", "model": "m", "base_url": stub.url + "/v1", "api_key_env": None}},
            "prompts_dir": str(prompts)}})

        def snakemake(*args: str) -> subprocess.CompletedProcess:
            cmd = [sys.executable, "-m", "snakemake", "-s", str(repo / "workflow/Snakefile"), "--directory",
                   str(tmp_path), "--configfile", str(tmp_path / "config.yaml"), "--cores", "2",
                   "results/scores/measures.tsv", *args]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / "tests"), os.environ.get("PYTHONPATH", "")])}
            return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)

        done = snakemake()
        assert done.returncode == 0, done.stdout + done.stderr
        with open(tmp_path / "results/scores/measures.tsv") as fh:
            table = list(csv.DictReader(fh, delimiter="\t"))
        judged = {(t["archetype"], t["measure"]) for t in table if t["judge"] == "stub"}
        assert {("T3-2", "asked"), ("T3-2", "agreement"), ("T1-1", "in_role"), ("T1-1", "role_entry_s")} <= judged
        assert {t["conversation_id"] for t in table} == {p.stem for p in (tmp_path / "results/measures").glob("*/*.json")}
        (prompts / "request_asked.txt").write_text((prompts / "request_asked.txt").read_text() + "\nBe brief.\n")
        plan = snakemake("-n")
        assert plan.returncode == 0, plan.stdout + plan.stderr
        stats = plan.stdout.split("Job stats:")[-1].split("Reasons:")[0]
        counts = dict(line.split()[:2] for line in stats.splitlines()
                      if len(line.split()) == 2 and line.split()[1].isdigit() and not line.endswith(":"))
        assert counts == {"judge": "1", "measures_table": "1", "total": "2"}, plan.stdout
    finally:
        stub.close()
