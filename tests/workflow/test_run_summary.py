"""`dyafdb status` and the end-of-run summary on the demo config, over small synthetic results
(files of the shape the stages write; no run)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from dyafdb.analysis.run_summary import run_status, summary_markdown
from dyafdb.cli import main
from dyafdb.config import validate_config
from dyafdb.judge.rubric import judge_plan
from dyafdb.paths import Results
from dyafdb.suite.design import build_design

T0 = 1_700_000_000


@pytest.fixture
def demo(tmp_path, monkeypatch):
    cfg = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    cfg["scenarios_dir"] = str(REPO / "scenarios")
    cfg["results_dir"] = "results/demo"
    cfg["judge"] = {"prompts_dir": str(REPO / "config" / "judge"),
                    "judges": {"demo": {"backend": "llamacpp"}, "main": {"backend": "anthropic", "model": "claude-opus-5"}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    config = validate_config(cfg, "demo")
    rows = build_design(config, tmp_path)
    results = tmp_path / "results" / "demo"
    paths = Results(str(results))
    ids = [r.conversation_id for r in rows]
    recorded, scored = ids[:30], ids[:25]
    for i, cid in enumerate(recorded):
        folder = Path(paths.recording(cid))
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text(json.dumps({"attempt": 2 if i in (3, 7) else 1}))
        # Two record jobs side by side, 10 s each: pairs end together every 10 s.
        bench = Path(paths.conversation_benchmark("record", cid))
        bench.parent.mkdir(parents=True, exist_ok=True)
        bench.write_text("s\th:m:s\tmax_rss\n10.0\t0:00:10\t500\n")
        end = T0 + 10 * (i // 2 + 1)
        os.utime(bench, (end, end))
    def write(path: str, text: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)

    for cid in scored:
        write(paths.measures_json(cid), "{}")
    for cid in ids[30:32]:  # two recordings failed
        write(paths.conversation_log("record", cid), "loading\ndyafdb record: agent failure: worker exited with 1\n")
    write(paths.conversation_log("record", ids[32]), "loading models\n")  # still running: not failed
    write(paths.conversation_log("score", ids[27]), "dyafdb score: error: audio.wav is empty\n")
    # Every judge batch of the first archetype: 1 of 5 answers invalid, 100 tokens in and 10 out each.
    first = rows[0].archetype
    for judge in ("demo", "main"):
        for archetype, question in judge_plan([first]):
            path = results / "judge" / judge / archetype / f"{question}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            recs = [{"conversation_id": cid, "valid": k != 0, "cached": k == 1, "input_tokens": 100, "output_tokens": 10}
                    for k, cid in enumerate(ids[:5])]
            path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    tables = results / "analysis" / "tables"
    tables.mkdir(parents=True)
    (tables / "score_T1-1.tsv").write_text("row\tcpu_eager\tcpu_polite\tavg\tn:cpu_eager\tn:cpu_polite\tpinned\n"
                                           "cpu_eager\t0.5\t0.7\t0.6\t2\t2\t\ncpu_polite\t0.2\t0.4\t0.3\t2\t2\t\n"
                                           "partner avg\t0.35\t0.55\t\t\t\t\n")
    (tables / "score_T2.tsv").write_text("row\tcpu_eager\tcpu_polite\tavg\tn:cpu_eager\tn:cpu_polite\tpinned\n"
                                         "cpu_eager\t0\t0\t0\t2\t2\t\ncpu_polite\t0\t0\t0\t2\t2\t\n")
    (tables / "leaderboard.tsv").write_text("model\trank\treference\tanchor\trating\tlower\tupper\tbattles\n"
                                            "cpu_eager\t1\tTrue\tTrue\t1000\t950\t1050\t12\n"
                                            "cpu_polite\t2\tTrue\tFalse\t980\t930\t1030\t12\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path, config, rows


def test_status_counts_each_stage_per_suite_and_pairing_with_an_eta(demo):
    tmp, config, rows = demo
    status = run_status(config, tmp, rows)
    first = rows[0].archetype
    assert status["conversations"] == len(rows) > 40
    assert (status["recorded"], status["scored"], status["failed"]) == (30, 25, 3)
    # Judged: scored, and every judge batch of its archetype written (an archetype without questions has none to wait for).
    unasked = {r.archetype for r in rows} - {a for a, _ in judge_plan(sorted({r.archetype for r in rows}))}
    assert status["judged"] == sum(1 for r in rows[:25] if r.archetype in {first} | unasked)
    suites = status["suites"]
    assert sum(s["recorded"] for s in suites.values()) == 30
    assert sum(p["failed"] for s in suites.values() for p in s["pairings"].values()) == 3
    # 30 finished record jobs of 10 s, two side by side; the rest (minus 2 failed) still to record.
    record = status["eta"]["record"]
    assert record["jobs_side_by_side"] == pytest.approx(2.0)
    assert record["left"] == len(rows) - 32
    assert record["eta_s"] == pytest.approx((len(rows) - 32) * 10 / 2)
    assert status["eta"]["score"]["eta_s"] is None and status["eta_s"] is None  # no score job timed yet


def test_status_command_prints_counts_and_eta(demo, capsys):
    assert main(["status", "--config", "config.yaml"]) == 0
    out = capsys.readouterr().out
    assert "30 recorded, 25 scored" in out and "3 failed" in out and "suite demo:" in out and "ETA:" in out
    assert main(["status", "--config", "config.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recorded"] == 30


def test_summary_names_counts_judge_cost_scores_leaderboard_warnings_and_paths(demo, capsys):
    tmp, config, rows = demo
    assert main(["summary", "--config", "config.yaml"]) == 0
    printed = capsys.readouterr().out
    text = (tmp / "results" / "demo" / "summary.md").read_text()
    assert text in printed
    assert "recorded: 30" in text and "failed: 3" in text and "re-recorded (garbled first attempt): 2" in text
    n_batches = len(judge_plan([rows[0].archetype]))
    answers, invalid = 5 * n_batches, n_batches
    # Opus priced from plan.judge_prices: 15 $/Mtok in, 75 $/Mtok out.
    cost = (answers * 100 * 15.0 + answers * 10 * 75.0) / 1e6
    assert f"| main | anthropic claude-opus-5 | {answers} | {invalid} | {n_batches} |" in text
    assert f"${cost:,.2f}" in text
    assert "| demo | llamacpp" in text and "$0.00" in text
    assert "| cpu_eager | " in text and ".60 n=" in text and ".30 n=" in text
    assert "| 1 | cpu_eager (anchor, pinned) | 1000 | 950 | 1050 | 12 |" in text  # the anchor is marked
    assert "score_T2.tsv: every model scores 0" in text and "score_T3-1.tsv: missing" in text
    assert "report: " in text and "(not built)" in text and "viewer: " in text
    assert "Demo quality" in text


def test_summary_of_an_empty_run_says_so(tmp_path, monkeypatch):
    cfg = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    cfg["scenarios_dir"] = str(REPO / "scenarios")
    cfg["results_dir"] = str(tmp_path / "nothing")
    config = validate_config(cfg, "demo")
    rows = build_design(config, tmp_path)
    text = summary_markdown(config, tmp_path, rows)
    assert f"planned: {len(rows)}; recorded: 0" in text and "No score tables yet." in text
    assert "No leaderboard yet" in text


def test_status_says_when_results_are_in_the_old_flat_layout(demo, capsys):
    tmp, config, rows = demo
    old = tmp / "results" / "demo" / "recordings" / rows[40].conversation_id  # where versions before the shards put it
    old.mkdir()
    (old / "meta.json").write_text("{}")
    assert main(["status", "--config", "config.yaml"]) == 0
    out = capsys.readouterr().out
    assert "WARNING: 1 per-conversation results are in the old flat layout" in out and "dyafdb reshard" in out
    assert "30 recorded" in out  # counted where this version looks, not mixed in
