"""The plan follows content, not places (issue 23): copying the config, moving the checkout with its
.snakemake/ and results/, or reordering config keys plans no recording again; changing one model
plans only its conversations; a recording or measures file deleted after everything downstream
was made is planned again with everything after it, and `dyafdb status` counts the same."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import REPO, scripted_config, write_suite
from dyafdb.cli import main
from results_paths import results_at
from test_resume import snakemake


def planned(plan: str, rule: str) -> set[str]:
    return {re.search(r"conversation=([^\s,]+)", block).group(1) for block in plan.split(f"rule {rule}:")[1:]}


def dry_run(root: Path) -> str:
    out = snakemake(root, "-n")
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plan") / "checkout"
    root.mkdir()
    write_suite(root, archetypes=["T1-1"], per_archetype=1)
    shutil.copytree(REPO / "config" / "judge", root / "config" / "judge")
    cfg = scripted_config(cross_play_only=True, scenarios_per_archetype=1)
    (root / "config.yaml").write_text(yaml.safe_dump(cfg))
    run = snakemake(root, results_at(".").mechanical_table("T1-1"))
    assert run.returncode == 0, run.stdout + run.stderr
    return root


@pytest.fixture
def project(recorded, tmp_path) -> Path:
    root = tmp_path / "checkout"
    shutil.copytree(recorded, root, symlinks=True)
    return root


def test_nothing_is_planned_again_after_a_finished_recording(project):
    plan = dry_run(project)
    assert planned(plan, "record") == set() and planned(plan, "score") == set()


def test_copying_the_config_or_reordering_its_keys_plans_nothing(project):
    cfg = yaml.safe_load((project / "config.yaml").read_text())
    (project / "copy.yaml").write_text(yaml.safe_dump(dict(reversed(list(cfg.items()))), sort_keys=False))
    out = snakemake(project, "-n", "--configfile", str(project / "copy.yaml"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert planned(out.stdout, "record") == set() and planned(out.stdout, "score") == set(), out.stdout


def test_moving_the_checkout_plans_nothing(project, tmp_path):
    moved = tmp_path / "elsewhere" / "moved checkout"
    moved.parent.mkdir()
    shutil.move(project, moved)
    plan = dry_run(moved)
    assert planned(plan, "record") == set() and planned(plan, "score") == set(), plan


def test_changing_one_model_plans_only_its_conversations(project):
    cfg = yaml.safe_load((project / "config.yaml").read_text())
    cfg["models"]["third"] = {"adapter": "scripted", "params": {"script": []}}
    cfg["suites"]["t"]["models"].append("third")
    cfg["models"]["third"]["params"]["script"] = [{"start_s": 0.0, "end_s": 0.5, "text": "yo"}]
    (project / "config.yaml").write_text(yaml.safe_dump(cfg))
    before = planned(dry_run(project), "record")
    assert before and all("third" in cid for cid in before)
    cfg["models"]["third"]["params"]["script"][0]["text"] = "hey"
    (project / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert planned(dry_run(project), "record") == before


def test_a_deleted_recording_is_planned_again_with_everything_after_it(project, capsys):
    results = results_at(project)
    cid = sorted(p.name for p in Path(results.recordings).glob("*/*"))[0]
    shutil.rmtree(results.recording(cid))
    plan = dry_run(project)
    assert planned(plan, "record") == {cid}
    assert planned(plan, "score") == {cid}
    assert "rule mechanical_table:" in plan
    capsys.readouterr()
    assert main(["status", "-c", str(project / "config.yaml"), "--root", str(project), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["eta"]["record"]["left"] == 1


def test_deleted_measures_are_planned_again(project):
    results = results_at(project)
    measures = sorted(Path(results.root).glob("measures/*/*.json"))[0]
    measures.unlink()
    plan = dry_run(project)
    assert planned(plan, "record") == set()
    assert planned(plan, "score") == {measures.stem}


def test_a_results_folder_remembers_its_config(recorded, tmp_path, monkeypatch, capsys):
    """issue 26, item 6: after a run, `dyafdb status|verify --results DIR` (or run inside DIR) read the
    config the run was made with, not config/config.yaml; summary.md's hints name that exact command."""
    results = recorded / "results"
    record = json.loads((results / "run.json").read_text())
    assert record["config_files"] == [str(recorded / "config.yaml")] and record["root"] == str(recorded)
    monkeypatch.chdir(tmp_path)  # somewhere with no config/config.yaml
    for argv in (["status", "--json", "--results", str(results)], ["verify", "--json", "--results", str(results)]):
        capsys.readouterr()
        assert main(argv) in (0, 1)
        out = json.loads(capsys.readouterr().out)
        assert out.get("recorded", out.get("counts", {}).get("recordings")) == 4, out
    monkeypatch.chdir(results)
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["conversations"] == 4 and "changed since" not in out.err  # the recorded digest matches
    assert main(["summary", "--quiet"]) == 0
    assert f"`dyafdb status --results {results}`" in (results / "summary.md").read_text()
    capsys.readouterr()
    assert main(["status", "--results", str(tmp_path)]) == 2
    assert "run.json: no run record" in capsys.readouterr().err
