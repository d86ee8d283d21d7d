"""The workflow's preflight (`onstart`): a run bound to fail stops in seconds, before any record job."""

from __future__ import annotations

import time

import yaml

from conftest import REPO, scripted_config, write_suite
from results_paths import RESULTS


def _project(tmp_path, monkeypatch, cfg: dict):
    write_suite(tmp_path, archetypes=["T1-1"])
    cfg["judge"] = {**cfg.get("judge", {}), "prompts_dir": str(REPO / "config" / "judge")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def test_missing_judge_key_stops_the_run_before_any_recording(tmp_path, monkeypatch):
    from test_resume import snakemake

    _project(tmp_path, monkeypatch, scripted_config())
    start = time.monotonic()
    run = snakemake(tmp_path)
    elapsed = time.monotonic() - start
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "preflight failed" in out and "ANTHROPIC_API_KEY is not set" in out and "fix: export ANTHROPIC_API_KEY" in out
    assert not (tmp_path / "results" / "recordings").exists() and not (tmp_path / "logs" / "record").exists()
    assert elapsed < 60


def test_missing_weights_stop_a_recording_run_naming_the_model(tmp_path, monkeypatch):
    from test_resume import snakemake

    cfg = scripted_config()
    cfg["models"]["quiet"]["params"]["checkpoint_dir"] = str(tmp_path / "weights-not-here")
    _project(tmp_path, monkeypatch, cfg)
    design = tmp_path / "results" / "design" / "conversations.tsv"
    run = snakemake(tmp_path, "--until", "record")
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "FAILED model quiet weights" in out and "weights-not-here" in out
    # Recording only: no judge is called, so its key is not asked for.
    assert "ANTHROPIC_API_KEY" not in out
    assert not (tmp_path / "results" / "recordings").exists() and not design.exists()


def test_a_successful_run_ends_with_the_summary(tmp_path, monkeypatch):
    from test_resume import snakemake

    from dyafdb.config import validate_config
    from dyafdb.suite.design import build_design

    cfg = scripted_config()
    _project(tmp_path, monkeypatch, cfg)
    rows = build_design(validate_config(cfg, "test"), tmp_path)
    run = snakemake(tmp_path, RESULTS.recording_file(rows[0].conversation_id, "meta.json"))
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    summary = tmp_path / "results" / "summary.md"
    text = summary.read_text()
    assert f"planned: {len(rows)}; recorded: 1;" in text
    assert "# DyaFDB run summary" in out and f"(written to {summary.relative_to(tmp_path)})" in out


def _stub_judge(cfg: dict, url: str, model: str) -> dict:
    cfg["judge"] = {"judges": {"main": {"backend": "openai", "model": model, "base_url": url, "api_key_env": None}}}
    return cfg


def test_an_unknown_judge_model_stops_the_run_before_any_recording(tmp_path, monkeypatch):
    """The onstart preflight asks each judge the planned jobs call whether its model exists (issue 25, class 8)."""
    from stub_chat_server import StubChat
    from test_resume import snakemake

    monkeypatch.delenv("DYAFDB_OFFLINE", raising=False)
    with StubChat() as stub:
        stub.models = {"stub-judge"}
        _project(tmp_path, monkeypatch, _stub_judge(scripted_config(), stub.url, "no-such-judge"))
        start = time.monotonic()
        run = snakemake(tmp_path)
        elapsed = time.monotonic() - start
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "preflight failed" in out and "FAILED judge main endpoint" in out
    assert f"model no-such-judge unknown at {stub.url} (HTTP 404)" in out
    assert "fix: set judge.judges.main.model to one of: stub-judge" in out
    assert not (tmp_path / "results" / "recordings").exists() and not (tmp_path / "logs" / "record").exists()
    assert elapsed < 60


def test_an_unreachable_judge_stops_the_run_unless_the_node_is_offline(tmp_path, monkeypatch):
    """DYAFDB_OFFLINE=1 (a node without network) skips the far side: the recordings start."""
    import socket

    from test_resume import snakemake

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    monkeypatch.delenv("DYAFDB_OFFLINE", raising=False)
    cfg = _stub_judge(scripted_config(scenarios_per_archetype=1), url, "stub-judge")
    cfg["judge"]["max_retries"] = 0
    _project(tmp_path, monkeypatch, cfg)
    run = snakemake(tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "preflight failed" in out and f"FAILED judge main endpoint: {url} unreachable (connection refused)" in out
    assert not (tmp_path / "results" / "recordings").exists()

    monkeypatch.setenv("DYAFDB_OFFLINE", "1")
    run = snakemake(tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out  # the judge job itself cannot reach the endpoint
    assert "preflight failed" not in out
    assert list((tmp_path / "results" / "recordings").rglob("meta.json")), out
