"""Measures tables and judge batches are read strictly (issue 23, item 7): a cut-off JSONL line, a judge
record missing for a planned seat, a seat judged twice, duplicate or conflicting measures rows and a
conversation with one side's rows missing are each refused in one line naming the file, the line and
the fix; never a traceback, never a silent choice."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from dyafdb.cli import main
from dyafdb.errors import InputError
from results_paths import results_at
from scoring_fixtures import load, write_project, write_recording_from_segments

JUDGE = {"judge": {"judges": {"j1": {"backend": "openai", "model": "m", "api_key_env": None}}}}


def _scored(tmp_path: Path, archetype: str = "T3-2"):
    """A scored project of one scenario, every conversation's mechanical measures written."""
    from dyafdb.fileio import write_json_atomic
    from dyafdb.score.conversation import score_conversation
    from dyafdb.suite.design import build_design

    write_project(tmp_path, [archetype], extra=JUDGE)
    config = load(tmp_path)
    rows = build_design(config, tmp_path)
    for row in rows:
        out = Path(results_at(tmp_path).recording(row.conversation_id))
        write_recording_from_segments(out, {"a": [(0, 20)], "b": [(30, 40)]}, 60, conversation_id=row.conversation_id,
                                      archetype=archetype, scenario=row.scenario, opener=row.opener,
                                      models=(row.model_a, row.model_b))
        write_json_atomic(out / "garble.json", {"format": "dyafdb-garble/1", "checked_sides": [], "attempts": [],
                                                "status": "not_checked"})
        score_conversation(config, tmp_path, row.conversation_id)
    return config, rows


def _judge_file(tmp_path: Path, archetype: str, question: str) -> Path:
    path = tmp_path / "results/judge/j1" / archetype / f"{question}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _write_judged(tmp_path: Path, rows, drop: int | None = None) -> dict[str, Path]:
    files = {}
    for q, measure in (("request_asked", "asked"), ("request_granted", "agreement")):
        lines = [json.dumps({"conversation_id": r.conversation_id, "question": q, "seat": None, "demo_quality": False,
                             "rows": [{"side": "a", "measure": measure, "value": 1, "label": "yes"}]}) + "\n"
                 for r in sorted(rows, key=lambda r: r.conversation_id)]
        if drop is not None and q == "request_granted":
            del lines[drop]
        files[q] = _judge_file(tmp_path, "T3-2", q)
        files[q].write_text("".join(lines))
    return files


def _measures(tmp_path: Path) -> int:
    return main(["measures", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path)])


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_a_complete_table_still_builds(tmp_path, capsys):
    from dyafdb.measures.table import check_measures_rows

    _, rows = _scored(tmp_path)
    _write_judged(tmp_path, rows)
    assert _measures(tmp_path) == 0, capsys.readouterr().err
    path = tmp_path / "results/scores/measures.tsv"
    with open(path, newline="") as fh:
        check_measures_rows(path, csv.DictReader(fh, delimiter="\t"))


def test_a_truncated_judge_line_is_named_not_a_traceback(tmp_path, capsys):
    """A judge JSONL cut off in its last line: JSONDecodeError traceback in `dyafdb measures` before."""
    _, rows = _scored(tmp_path)
    files = _write_judged(tmp_path, rows)
    text = files["request_asked"].read_text()
    files["request_asked"].write_text(text[: len(text) - 25])
    assert _measures(tmp_path) == 2
    err = _one_line(capsys)
    n = len(text.splitlines())
    assert f"{files['request_asked']}: line {n}" in err and "dyafdb judge --judge j1" in err, err
    assert "--archetype T3-2" in err and "--question request_asked" in err, err


def test_a_judge_record_missing_for_a_planned_seat_is_refused(tmp_path, capsys):
    """One conversation's record gone: its rows were dropped while status and summary still said all judged."""
    _, rows = _scored(tmp_path)
    files = _write_judged(tmp_path, rows, drop=1)
    missing = sorted(r.conversation_id for r in rows)[1]
    assert _measures(tmp_path) == 2
    err = _one_line(capsys)
    assert str(files["request_granted"]) in err and missing in err and "dyafdb judge --judge j1" in err, err


def test_a_missing_seat_of_a_two_seat_question_is_refused(tmp_path):
    """T1-1 judges role adherence per side: a batch holding only side a's answers drops side b's rows."""
    from dyafdb.measures.table import table_rows

    config, rows = _scored(tmp_path, "T1-1")
    for q in ("role_adherence", "role_timing"):
        _judge_file(tmp_path, "T1-1", q).write_text("".join(
            json.dumps({"conversation_id": r.conversation_id, "question": q, "seat": seat, "rows": []}) + "\n"
            for r in rows for seat in (("a",) if q == "role_adherence" else ("a", "b"))))
    with pytest.raises(InputError, match=r"role_adherence\.jsonl: no record for conversation \S+ seat b"):
        list(table_rows(config, tmp_path, rows))


def test_a_seat_judged_twice_is_refused_naming_both_lines(tmp_path, capsys):
    _, rows = _scored(tmp_path)
    files = _write_judged(tmp_path, rows)
    lines = files["request_asked"].read_text().splitlines(keepends=True)
    flipped = json.loads(lines[0])
    flipped["rows"][0]["value"] = 0
    files["request_asked"].write_text("".join(lines) + json.dumps(flipped) + "\n")
    assert _measures(tmp_path) == 2
    err = _one_line(capsys)
    assert f"line {len(lines) + 1}" in err and "line 1" in err and "twice" in err, err


def test_mechanical_tables_with_conflicting_duplicate_rows_are_refused(tmp_path, capsys):
    """A hand-edited table: the same conversation, side and measure twice (the last one won: 0 -> 0.99)."""
    config, rows = _scored(tmp_path)
    _write_judged(tmp_path, rows)
    mech = tmp_path / "results/scores/mechanical/T3-2.tsv"
    assert main(["measures", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path), "--no-judge",
                 "--archetype", "T3-2", "--out", str(mech)]) == 0
    lines = mech.read_text().splitlines(keepends=True)
    n, dup = next((i, line) for i, line in enumerate(lines) if "\toccupancy\t" in line and "\tb\t" in line)
    fields = dup.split("\t")
    fields[16] = "0.99"
    mech.write_text("".join(lines) + "\t".join(fields))
    assert main(["measures", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path),
                 "--mechanical", str(mech)]) == 2
    err = _one_line(capsys)
    assert f"{mech}: line {len(lines) + 1}" in err and f"line {n + 1}" in err and "occupancy" in err, err


def test_measures_rows_check_refuses_duplicates_and_a_missing_side(tmp_path):
    """What analysis reads (measures.tsv): check_measures_rows is the one rule for it."""
    from dyafdb.measures.table import check_measures_rows

    _, rows = _scored(tmp_path)
    _write_judged(tmp_path, rows)
    assert _measures(tmp_path) == 0
    path = tmp_path / "results/scores/measures.tsv"
    with open(path, newline="") as fh:
        table = list(csv.DictReader(fh, delimiter="\t"))
    occ = next(i for i, r in enumerate(table) if r["measure"] == "occupancy" and r["side"] == "b")
    with pytest.raises(InputError, match=rf"{path.name}: line {len(table) + 2}: .*occupancy.*also on line {occ + 2}"):
        check_measures_rows(path, table + [{**table[occ], "value": "0.99"}])
    with pytest.raises(InputError, match=r"line \d+: .*twice"):
        check_measures_rows(path, table + [dict(table[occ])])  # the same value twice would count twice
    cid = table[0]["conversation_id"]
    with pytest.raises(InputError, match=rf"{cid}.*side b"):
        check_measures_rows(path, [r for r in table if not (r["conversation_id"] == cid and r["side"] == "b")])
