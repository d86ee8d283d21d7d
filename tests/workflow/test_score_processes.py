"""Score jobs share scoring processes (dyafdb.score.pool): one job per conversation in the plan,
several conversations per process when run, and the same measures as one process per conversation."""

from __future__ import annotations

import re
import shutil

import yaml

from conftest import REPO, scripted_config, write_suite
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design
from results_paths import RESULTS
from workflow_runs import job_logs, snakemake

SHARED = re.compile(r"^scored in shared process (\d+) \(conversation (\d+) of at most (\d+) there\)$", re.M)


def test_score_jobs_share_processes_with_the_same_measures(tmp_path):
    # The demo's scoring settings (VAD, transcript, the ASR of the audio-health measures), on
    # recordings of scripted agents: 8 conversations of 4 s, recorded once and scored twice.
    demo = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    cfg = scripted_config()
    cfg.update({k: demo[k] for k in ("vad", "transcript", "garble") if k in demo})
    project = tmp_path / "shared"
    write_suite(project, per_archetype=1, archetypes=["T1-1"])
    (project / "config.yaml").write_text(yaml.safe_dump(cfg))
    rows = build_design(validate_config(cfg, "test"), project)
    assert len(rows) == 8
    recorded = snakemake(project, "--cores", "2", *[RESULTS.recording_file(r.conversation_id, "meta.json") for r in rows])
    assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-3000:]
    alone = tmp_path / "alone"
    shutil.copytree(project, alone, symlinks=True)
    (alone / "config.yaml").write_text(yaml.safe_dump({**cfg, "score": {"conversations_per_process": 1}}))

    measures = [RESULTS.measures_json(r.conversation_id) for r in rows]
    plan = snakemake(project, "--cores", "2", *measures, "-n", "--quiet", "rules")
    assert re.search(r"^score\s+8$", plan.stdout, re.M), plan.stdout  # still one job per conversation
    for folder in (project, alone):
        done = snakemake(folder, "--cores", "2", *measures)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert not re.search(r"^record\s", done.stdout, re.M)  # scored only: the recordings are shared

    # The same measures, byte for byte.
    for path in measures:
        assert (project / path).read_bytes() == (alone / path).read_bytes(), path
    # One process per conversation ...
    assert not any(SHARED.search(log) for log in job_logs(alone, "score"))
    # ... against a few that each served several (2 cores: 2 jobs, hence 2 processes, at a time).
    served = [SHARED.search(log) for log in job_logs(project, "score")]
    assert len(served) == 8 and all(served), job_logs(project, "score")
    processes = {m.group(1) for m in served}
    assert len(processes) <= 2 and max(int(m.group(2)) for m in served) >= 4, [m.group(0) for m in served]
    assert all(int(m.group(3)) == 32 for m in served)  # the schema's default


def test_the_plan_counts_score_processes_and_model_loads():
    from dyafdb.suite.plan import format_processes, process_counts

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    rows = build_design(validate_config(cfg, "config.yaml"), REPO)
    counts = process_counts(validate_config(cfg, "config.yaml"), rows)
    assert counts["score"]["jobs"] == len(rows) == 7560
    assert counts["score"]["processes"] == 237 and counts["score"]["model_loads"] == 2 * 237  # DNSMOS + Whisper each
    alone = process_counts(validate_config({**cfg, "score": {"conversations_per_process": 1}, "health": {"asr": False}}, "c"), rows)
    assert alone["score"]["processes"] == 7560 and alone["score"]["model_loads"] == 7560
    assert counts["record"]["model_loads"] == 2 * 7560
    assert "score 7,560 jobs in 237 processes" in "\n".join(format_processes(counts))
