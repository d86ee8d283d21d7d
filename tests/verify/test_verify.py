"""A run that knows what it holds (issue 23): each hostile manipulation of a finished results folder
is named by `dyafdb verify` and refused by the stage that reads it; the untouched folder is ok.

The project is the issue's own: one T1-1 scenario, two scripted models, cross-play only, 4 s
windows (4 conversations), recorded, scored and tabled once per module through the CLI.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import scripted_config, write_suite
from dyafdb.cli import main
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design
from results_paths import results_at


def _cli(root: Path, *args: str) -> int:
    return main([args[0], "-c", str(root / "config.yaml"), "--root", str(root), *args[1:]])


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("finished")
    write_suite(root, archetypes=["T1-1"], per_archetype=1)
    cfg = scripted_config(cross_play_only=True, scenarios_per_archetype=1)
    cfg["results_dir"] = "results"
    (root / "config.yaml").write_text(yaml.safe_dump(cfg))
    rows = build_design(validate_config(cfg, "test"), root)
    assert len(rows) == 4
    for row in rows:
        assert _cli(root, "record", "--id", row.conversation_id, "--no-progress") == 0
        assert _cli(root, "score", "--id", row.conversation_id) == 0
    results = results_at(root)
    assert _cli(root, "measures", "--archetype", "T1-1", "--no-judge", "--out", results.mechanical_table("T1-1")) == 0
    assert _cli(root, "measures", "--no-judge", "--out", results.measures_table) == 0
    return root


@pytest.fixture
def project(finished, tmp_path) -> Path:
    root = tmp_path / "p"
    shutil.copytree(finished, root, symlinks=True)
    return root


def rows_of(root: Path):
    from dyafdb.config import load_config

    return build_design(load_config(root / "config.yaml"), root)


def verify_json(root: Path, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = _cli(root, "verify", "--json", *extra)
    return code, json.loads(capsys.readouterr().out)


def pair(root: Path) -> tuple[str, str]:
    """The cross-play conversation and its role-swapped twin (talker__quiet vs quiet__talker)."""
    ids = sorted(r.conversation_id for r in rows_of(root) if r.opener == "a")
    return ids[0], ids[1]


def test_a_finished_run_verifies_ok(project, capsys):
    code, report = verify_json(project, capsys)
    assert code == 0 and report["ok"], report
    assert report["counts"]["recordings"] == 4 and report["counts"]["measures"] == 4
    capsys.readouterr()
    assert _cli(project, "verify") == 0
    assert capsys.readouterr().out.startswith("ok: 4 conversations")


def test_a_deleted_recording_is_missing_and_its_measures_stale(project, capsys):
    cid = pair(project)[0]
    shutil.rmtree(results_at(project).recording(cid))
    code, report = verify_json(project, capsys)
    assert code == 1
    assert any(cid in p["path"] for p in report["problems"]["missing"])
    assert any(cid in p["path"] for p in report["problems"]["stale"])


def test_another_conversations_folder_copied_in_is_refused_by_score_and_named_by_verify(project, capsys):
    mine, other = pair(project)
    results = results_at(project)
    shutil.rmtree(results.recording(mine))
    shutil.copytree(results.recording(other), results.recording(mine))
    code, report = verify_json(project, capsys)
    assert code == 1
    assert any(mine in p["path"] and "conversation_id" in p["message"] for p in report["problems"]["identity"])
    capsys.readouterr()
    assert _cli(project, "score", "--id", mine) == 2
    err = capsys.readouterr().err
    assert "field conversation_id" in err and "another conversation's recording" in err and "Traceback" not in err


@pytest.mark.parametrize("edit, field", [
    (lambda m: m.pop("channels"), "channels"),
    (lambda m: m["channels"].reverse(), "channels"),
    (lambda m: m.update(conversation_id="t1-1-fixture-01__x__y__open-a__rep1__4s"), "conversation_id"),
    (lambda m: m.update(lead_in_ticks=-5), "lead_in_ticks"),
    (lambda m: m.update(window_ticks="abc"), "window_ticks"),
    (lambda m: m["provenance"]["inputs"].update(design_row="0" * 16), "provenance.inputs.design_row"),
])
def test_a_hand_edited_meta_is_refused_by_score_and_named_by_verify(project, capsys, edit, field):
    cid = pair(project)[0]
    meta_path = Path(results_at(project).recording(cid)) / "meta.json"
    meta = json.loads(meta_path.read_text())
    edit(meta)
    meta_path.write_text(json.dumps(meta))
    code, report = verify_json(project, capsys)
    assert code == 1
    named = [p for kind in ("identity", "stale") for p in report["problems"].get(kind, [])]
    assert any(f"field {field} " in p["message"] for p in named), report
    capsys.readouterr()
    assert _cli(project, "score", "--id", cid) == 2
    err = capsys.readouterr().err
    assert f"field {field} " in err and "Traceback" not in err


def test_a_changed_model_makes_its_recordings_stale(project, capsys):
    cfg = yaml.safe_load((project / "config.yaml").read_text())
    cfg["models"]["quiet"]["params"]["script"][0]["text"] = "hello"
    (project / "config.yaml").write_text(yaml.safe_dump(cfg))
    code, report = verify_json(project, capsys)
    assert code == 1
    assert len(report["problems"]["stale"]) == 4  # every conversation has the quiet model on one side
    assert all("provenance.inputs.models" in p["message"] for p in report["problems"]["stale"])


def test_replaced_audio_is_found_by_deep_verify_and_refused_by_score(project, capsys):
    mine, other = pair(project)
    results = results_at(project)
    shutil.copy(Path(results.recording(other)) / "text.jsonl", Path(results.recording(mine)) / "text.jsonl")
    assert verify_json(project, capsys)[0] in (0, 1)
    code, report = verify_json(project, capsys, "--deep")
    assert code == 1 and any("provenance.recording" in p["message"] for p in report["problems"]["stale"])
    capsys.readouterr()
    assert _cli(project, "score", "--id", mine) == 2
    assert "provenance.recording" in capsys.readouterr().err


def test_measures_from_another_recording_are_stale(project, capsys):
    mine, other = pair(project)
    results = results_at(project)
    doc = json.loads(Path(results.measures_json(mine)).read_text())
    doc["provenance"]["recording"] = "f" * 16
    Path(results.measures_json(mine)).write_text(json.dumps(doc))
    code, report = verify_json(project, capsys)
    assert code == 1 and any(mine in p["path"] for p in report["problems"]["stale"])


def test_the_measures_stage_refuses_measures_of_another_recording_and_stamps_each_row(project, capsys):
    mine, other = pair(project)
    results = results_at(project)
    table = Path(results.measures_table).read_text().splitlines()
    header = table[0].split("\t")
    digests = {line.split("\t")[0]: line.split("\t")[header.index("recording")] for line in table[1:]}
    meta = json.loads((Path(results.recording(mine)) / "meta.json").read_text())
    assert digests[mine] == meta["provenance"]["recording"] and len(set(digests.values())) == 4
    shutil.copy(results.measures_json(other), results.measures_json(mine))
    capsys.readouterr()
    assert _cli(project, "measures", "--archetype", "T1-1", "--no-judge", "--out", str(project / "t.tsv")) == 2
    err = capsys.readouterr().err
    assert "field provenance.conversation_id" in err and mine in err and "Traceback" not in err


def test_a_duplicate_row_in_measures_tsv_is_named(project, capsys):
    table = Path(results_at(project).measures_table)
    lines = table.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split("\t")
    fields = next(line for line in lines if "\toccupancy\t" in line).rstrip("\n").split("\t")
    fields[header.index("value")] = "0.99"  # a conflicting copy: the last row won silently before
    table.write_text("".join(lines) + "\t".join(fields) + "\n")
    code, report = verify_json(project, capsys)
    assert code == 1 and any("is given twice" in p["message"] for p in report["problems"]["rows"]), report


def test_a_conversation_missing_from_measures_tsv_is_named(project, capsys):
    table = Path(results_at(project).measures_table)
    cid = pair(project)[0]
    table.write_text("".join(line for line in table.read_text().splitlines(keepends=True)
                             if not (line.startswith(cid) and "\ta\t" in line)))
    code, report = verify_json(project, capsys)
    assert code == 1 and any(f"conversation {cid} has mechanical rows" in p["message"] and "none for side a" in p["message"]
                           for p in report["problems"]["rows"])


def test_a_truncated_judge_batch_and_a_leftover_partial_are_named(project, capsys):
    batch = Path(results_at(project).judge_output("main", "T1-1", "role_adherence"))
    batch.parent.mkdir(parents=True)
    cid = pair(project)[0]
    batch.write_text(json.dumps({"conversation_id": cid, "side": "a", "question": "role_adherence"}) + "\n"
                     + '{"conversation_id": "' + cid)
    dead = Path(results_at(project).recording(cid)).parent / f".partial-{cid}-999999999"
    dead.mkdir()
    code, report = verify_json(project, capsys)
    assert code == 1
    assert any(str(batch) == p["path"] for p in report["problems"]["truncated"])
    assert any(str(dead) == p["path"] for p in report["problems"]["partial"])


def test_a_recording_not_in_the_design_is_named(project, capsys):
    results = results_at(project)
    stray = Path(results.recording("t1-1-fixture-01__old__model__open-a__rep1__4s"))
    shutil.copytree(results.recording(pair(project)[0]), stray)
    code, report = verify_json(project, capsys)
    assert code == 1 and any(str(stray) == p["path"] for p in report["problems"]["not_in_design"])


def test_verify_reads_the_config_the_workflow_set(project, capsys, monkeypatch):
    """Jobs get their config through DYAFDB_CONFIG (no path in a rule's params): a command with no -c reads it."""
    monkeypatch.setenv("DYAFDB_CONFIG", str(project / "config.yaml"))
    capsys.readouterr()
    assert main(["verify", "--root", str(project)]) == 0
    assert capsys.readouterr().out.startswith("ok: 4 conversations")
    assert os.environ["DYAFDB_CONFIG"] == str(project / "config.yaml")


def test_summary_md_shows_the_verdict_of_verify(project, capsys):
    summary = Path(results_at(project).root) / "summary.md"
    assert _cli(project, "summary", "--quiet") == 0
    assert "## Verify" in summary.read_text() and "`dyafdb verify`: ok: 4 conversations" in summary.read_text()
    shutil.rmtree(results_at(project).recording(pair(project)[0]))
    assert _cli(project, "summary", "--quiet") == 0
    text = summary.read_text()
    assert "problems (" in text and "missing:" in text and pair(project)[0] in text


def test_the_judge_refuses_a_transcript_of_another_recording(project, capsys, monkeypatch):
    """A transcript made from a recording since replaced is not judged (its answers would be credited to
    the new recording); the refusal names the transcript, the field and the fix before any call."""
    mine = pair(project)[0]
    results = results_at(project)
    doc = json.loads(Path(results.transcript_json(mine)).read_text())
    doc["provenance"]["recording"] = "0" * 16
    Path(results.transcript_json(mine)).write_text(json.dumps(doc))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-never-used-in-this-test")  # refused before any call is made
    from conftest import REPO

    shutil.copytree(REPO / "config" / "judge", project / "config" / "judge")
    capsys.readouterr()
    assert _cli(project, "judge", "--archetype", "T1-1", "--question", "role_adherence") == 2
    err = capsys.readouterr().err
    assert "field provenance.recording" in err and mine in err and "Traceback" not in err


def test_a_judge_batch_answering_one_seat_twice_is_named_and_one_per_side_is_not(project, capsys):
    batch = Path(results_at(project).judge_output("main", "T1-1", "role_adherence"))
    batch.parent.mkdir(parents=True)
    cid = pair(project)[0]
    per_side = [{"conversation_id": cid, "seat": s, "question": "role_adherence", "label": "yes"} for s in "ab"]
    batch.write_text("".join(json.dumps(r) + "\n" for r in per_side))  # T1-1 asks once per side: no problem
    code, report = verify_json(project, capsys)
    assert code == 0, report
    batch.write_text("".join(json.dumps(r) + "\n" for r in per_side + per_side[:1]))
    code, report = verify_json(project, capsys)
    assert code == 1 and any(f"line 3 answers conversation {cid} seat a again" in p["message"]
                             for p in report["problems"]["rows"])
