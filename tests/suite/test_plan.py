"""`dyafdb plan`: what the config costs, and the preflight that stops a run before its first GPU hour."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import REPO, scripted_config, write_suite
from dyafdb.cli import main
from dyafdb.config import load_config, validate_config
from dyafdb.paths import sharded
from dyafdb.suite.design import build_design
from dyafdb.suite.plan import RECORDING_BYTES_PER_S, JudgeAsk, measured_real_time_factor, plan_run


def _plan_json(capsys, *args: str) -> tuple[int, dict]:
    rc = main(["plan", *args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_default_config_is_7560_conversations_and_126_audio_hours(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    rc, plan = _plan_json(capsys)
    assert rc == 0
    assert plan["conversations"] == 7560 and plan["audio_hours"] == pytest.approx(126.0)
    assert plan["suites"]["main"]["pairings"]["personaplex+minicpmo"]["conversations"] == 1680
    # Each record job holds two one-GPU models for (lead-in + window) x factor + model loading.
    config = load_config(REPO / "config" / "config.yaml")
    job_s = (60 + config["bridge"]["lead_in_s"]) * 1.0 + config["plan"]["startup_s"]
    assert plan["gpu_hours"] == pytest.approx(7560 * 2 * job_s / 3600)
    assert plan["disk_gb"]["recordings"] == pytest.approx(7560 * 61.5 * RECORDING_BYTES_PER_S / 1e9)
    # Both paper judges answer every question of every conversation of its archetype.
    by_judge = {j["judge"]: j for j in plan["judges"]}
    assert set(by_judge) == {"main", "second"}
    from dyafdb.judge.rubric import questions_for
    expected_calls = sum(1080 * len(questions_for(a)) for a in config["suites"]["main"]["archetypes"])
    expected_calls += 2 * 1080  # T1-1's two role questions are asked once per side, not once per conversation
    assert by_judge["main"]["calls"] == expected_calls == by_judge["second"]["calls"]
    assert plan["judge_calls"] == 2 * expected_calls
    # Priced from plan.judge_prices (the judge entries set none): Opus costs more than Sonnet.
    assert by_judge["main"]["cost_usd"] > by_judge["second"]["cost_usd"] > 0
    assert plan["judge_cost_usd"] == pytest.approx(by_judge["main"]["cost_usd"] + by_judge["second"]["cost_usd"])


def test_terminal_output_names_the_headline_figures(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["plan"]) == 0
    out = capsys.readouterr().out
    assert "7,560 conversations, 126 audio hours" in out and "GPU-hours" in out and "judge total" in out


def _rows(cfg: dict, root: Path):
    config = validate_config(cfg, "test")
    return config, build_design(config, root)


def test_judge_prices_in_the_judge_entry_win_and_unknown_prices_say_so(tmp_path):
    write_suite(tmp_path, archetypes=["T1-1"])
    config, rows = _rows(scripted_config(window_s=60), tmp_path)
    from dyafdb.commands.plan import judge_seats

    questions = {"T1-1": ["role_adherence", "role_timing"]}
    seats = judge_seats([("T1-1", q) for q in questions["T1-1"]])
    asks = [JudgeAsk("a", "m-priced", "openai", questions, {"role_adherence": 100, "role_timing": 100}, 1.0, 2.0,
                     seats=seats),
            JudgeAsk("b", "m-unknown", "openai", questions, seats=seats),
            JudgeAsk("c", "claude-opus-5", "anthropic", questions, batch=True, seats=seats)]
    plan = plan_run(config, rows, asks)
    a, b, c = plan["judges"]
    assert a["calls"] == 2 * 2 * len(rows)  # two questions, each asked once per side of a T1-1 run
    # 60 s of transcript at 400 tokens a minute, plus a 100-token template, per call.
    assert a["input_tokens"] == 2 * 2 * len(rows) * (400 + 100)
    assert a["cost_usd"] == pytest.approx((a["input_tokens"] * 1.0 + a["output_tokens"] * 2.0) / 1e6)
    assert b["cost_usd"] is None and "judge.judges.b.price_input_per_mtok" in b["price_source"]
    assert plan["judge_cost_usd"] is None
    full = (c["input_tokens"] * 15.0 + c["output_tokens"] * 75.0) / 1e6
    assert c["cost_usd"] == pytest.approx(full * 0.5)  # the Message Batches discount


def test_real_time_factor_from_config_then_benchmarks_then_default(tmp_path):
    write_suite(tmp_path, archetypes=["T1-1"])
    cfg = scripted_config(window_s=10)
    cfg["models"]["talker"]["resources"] = {"gpus": 1}
    config, rows = _rows(cfg, tmp_path)
    bench = tmp_path / "benchmarks" / "record"
    assert measured_real_time_factor(bench, rows, 1.5) is None
    bench.mkdir(parents=True)
    for row, wall in zip(rows[:3], (23.0, 46.0, 69.0)):  # 11.5 s recorded: factors 2, 4, 6
        path = Path(sharded(str(bench), row.conversation_id, ".tsv"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"s\th:m:s\tmax_rss\n{wall}\t0:00:{int(wall)}\t100\n")
    measured = measured_real_time_factor(bench, rows, 1.5)
    assert measured == (pytest.approx(4.0), 3)
    plan = plan_run(config, rows, [], measured)
    assert plan["real_time_factor"]["value"] == pytest.approx(4.0) and plan["real_time_factor"]["startup_s"] == 0
    gpu_jobs = [r for r in rows if "talker" in (r.model_a, r.model_b)]
    gpus = sum((r.model_a == "talker") + (r.model_b == "talker") for r in gpu_jobs)
    assert plan["gpu_hours"] == pytest.approx(gpus * 11.5 * 4.0 / 3600)
    config["plan"]["real_time_factor"] = 2.0
    plan = plan_run(config, rows, [], measured)
    assert plan["real_time_factor"]["source"] == "config plan.real_time_factor"
    assert plan["gpu_hours"] == pytest.approx(gpus * (11.5 * 2.0 + config["plan"]["startup_s"]) / 3600)


@pytest.fixture
def project(tmp_path, monkeypatch):
    # One of the repository's scenarios: the synthetic ones are filler that the suite rules reject.
    source = sorted((REPO / "scenarios" / "T1-1").glob("*.yaml"))[0]
    (tmp_path / "scenarios" / "T1-1").mkdir(parents=True)
    (tmp_path / "scenarios" / "T1-1" / source.name).write_text(source.read_text())
    cfg = scripted_config()
    cfg["judge"] = {"prompts_dir": str(REPO / "config" / "judge")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # The local checks only: the keys set below are fakes, and the far side's probes are
    # tested against 127.0.0.1 stubs in tests/llm/test_probe.py.
    monkeypatch.setenv("DYAFDB_OFFLINE", "1")
    return tmp_path, cfg


def test_check_fails_without_the_judge_key_and_names_the_fix(project, capsys):
    tmp, _ = project
    rc = main(["plan", "--config", "config.yaml", "--check"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "FAILED judge main key: ANTHROPIC_API_KEY is not set" in err
    assert "fix: export ANTHROPIC_API_KEY=" in err
    assert "2 failed: judge main key, judge second key" in err


def test_check_passes_with_the_key_and_never_prints_it(project, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value-123")
    rc, plan = _plan_json(capsys, "--config", "config.yaml", "--check")
    assert rc == 0, plan["checks"]
    assert {c["name"] for c in plan["checks"]} >= {"judge main key", "judge second key", "scenario suite", "results folder"}
    assert "sk-secret-value-123" not in json.dumps(plan)


def test_check_names_missing_weights_unresolvable_workers_and_an_unwritable_results_folder(project, capsys, monkeypatch):
    tmp, cfg = project
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    cfg["models"]["talker"]["params"]["checkpoint_dir"] = str(tmp / "no-weights-here")
    cfg["models"]["quiet"]["worker"] = {"command": ["no-such-launcher-xyz", "-m", "dyafdb.agents.worker"]}
    cfg["bridge"]["in_process"] = False
    (tmp / "blocker").write_text("a file where the results folder should go")
    cfg["results_dir"] = "blocker/results"
    (tmp / "config.yaml").write_text(yaml.safe_dump(cfg))
    rc, plan = _plan_json(capsys, "--config", "config.yaml", "--check")
    assert rc == 1
    bad = {c["name"]: c for c in plan["checks"] if not c["ok"]}
    assert set(bad) == {"model talker weights", "model quiet worker", "results folder"}
    assert "no-weights-here" in bad["model talker weights"]["detail"] and bad["model talker weights"]["fix"]
    assert "no-such-launcher-xyz" in bad["model quiet worker"]["detail"]
    assert "models.quiet.worker.command" in bad["model quiet worker"]["fix"]
    assert "not writable" in bad["results folder"]["detail"] and "results_dir" in bad["results folder"]["fix"]


def test_check_reports_scenarios_that_break_the_suite_rules(project, capsys, monkeypatch):
    tmp, _ = project
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    path = next((tmp / "scenarios" / "T1-1").glob("*.yaml"))
    doc = yaml.safe_load(path.read_text())
    doc["sides"]["b"]["name"] = doc["sides"]["a"]["name"]  # breaks the suite rule "names"
    path.write_text(yaml.safe_dump(doc))
    rc, plan = _plan_json(capsys, "--config", "config.yaml", "--check")
    assert rc == 1
    bad = [c for c in plan["checks"] if not c["ok"]]
    assert [c["name"] for c in bad] == ["scenario suite"] and "dyafdb suite check" in bad[0]["fix"]


def test_readme_cost_section_is_the_commands_output(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    assert main(["plan", "--benchmarks", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out.rstrip()
    readme = (REPO / "README.md").read_text()
    block = readme.split("<!-- dyafdb plan: begin")[1].split("<!-- dyafdb plan: end -->")[0]
    assert block.split("```\n", 1)[1].rsplit("\n```", 1)[0] == out, "README's cost section is stale: paste `dyafdb plan` again"


def test_gpu_hours_with_engines_from_config_then_benchmark_then_published(tmp_path):
    """Batched sides cost the tick's share per frame plus one load per group; the others their job time."""
    from dyafdb.errors import InputError
    from dyafdb.suite.plan import PUBLISHED_ENGINE_TICK

    write_suite(tmp_path, archetypes=["T1-1"])
    cfg = scripted_config(window_s=10)
    cfg["models"]["talker"]["resources"] = {"gpus": 1}
    config, rows = _rows(cfg, tmp_path)
    config["plan"]["real_time_factor"] = 1.0
    startup = config["plan"]["startup_s"]
    talker_sides = sum((r.model_a == "talker") + (r.model_b == "talker") for r in rows)
    assert talker_sides > 0
    job_s = 11.5 + startup
    plain = plan_run(config, rows, [], None, batched_adapters=(), root=tmp_path)
    assert plain["engines"]["models"] == [] and plain["gpu_hours_engines"] == pytest.approx(plain["gpu_hours"])
    adapter = config["models"]["talker"]["adapter"]

    def engine_hours(tick_ms: float, sessions: int) -> float:
        return talker_sides * ((11.5 / 0.08) * tick_ms / 1000 + startup) / sessions / 3600

    published = plan_run(config, rows, [], None, batched_adapters=(adapter,), root=tmp_path)
    assert published["engines"]["source"].startswith("published")
    assert published["gpu_hours"] == pytest.approx(talker_sides * job_s / 3600)
    assert published["gpu_hours_engines"] == pytest.approx(engine_hours(*PUBLISHED_ENGINE_TICK[:2]))
    bench = tmp_path / "gpu-bench.jsonl"
    bench.write_text('{"device": "H200"}\n{"mode": "graph", "batch": 32}\n'
                     '{"ms_per_tick": {"eager": {"1": 60.0, "8": 75.0}, "graph": {"1": 20.0, "16": 40.0, "32": 62.0}}, '
                     '"largest_batch_under_80ms": {"eager": 8, "graph": 32}}\n')
    config["plan"]["engine_benchmark"] = bench.name
    measured = plan_run(config, rows, [], None, batched_adapters=(adapter,), root=tmp_path)
    assert (measured["engines"]["tick_ms"], measured["engines"]["sessions"]) == (62.0, 32)
    assert measured["gpu_hours_engines"] == pytest.approx(engine_hours(62.0, 32))
    config["plan"]["engine_tick_ms"], config["plan"]["engine_sessions"] = 40.0, 8
    configured = plan_run(config, rows, [], None, batched_adapters=(adapter,), root=tmp_path)
    assert configured["engines"]["source"] == "config plan.engine_tick_ms"
    assert configured["gpu_hours_engines"] == pytest.approx(engine_hours(40.0, 8))
    config["plan"]["engine_tick_ms"] = None
    bench.write_text('{"mode": "eager", "batch": 1}\n')
    with pytest.raises(InputError, match="plan.engine_benchmark.*gpu-bench-engine.sh"):
        plan_run(config, rows, [], None, batched_adapters=(adapter,), root=tmp_path)


def test_the_plan_counts_the_judge_calls_the_judge_stage_makes(tmp_path, monkeypatch):
    """Planned calls equal the calls the judge stage makes on a small suite (T1-1's role questions are
    asked once per side), and planned input tokens are within 25% of what the judge was sent."""
    from judge_stub import KEY, Stub
    from scoring_fixtures import load, write_project, write_recording_from_segments
    from results_paths import results_at

    from dyafdb.commands.plan import judge_asks
    from dyafdb.judge.rubric import judge_plan
    from dyafdb.judge.runner import run_batch
    from dyafdb.score.conversation import score_conversation

    stub = Stub()
    try:
        monkeypatch.setenv("DYAFDB_TEST_JUDGE_KEY", KEY)
        judges = {"main": {"backend": "anthropic", "model": "claude-test", "base_url": stub.url,
                           "api_key_env": "DYAFDB_TEST_JUDGE_KEY", "price_input_per_mtok": 15.0, "price_output_per_mtok": 75.0}}
        archetypes = ["T1-1", "T3-2"]
        write_project(tmp_path, archetypes, extra={"judge": {"judges": judges, "prompts_dir": str(REPO / "config" / "judge"),
                                                              "backoff_s": 0.01, "max_backoff_s": 0.05}})
        config = load(tmp_path)
        rows = build_design(config, tmp_path)
        words = [("a", 2 + i, w) for i, w in enumerate("Hello I am here to help with your visit today".split())]
        words += [("b", 25 + i, w) for i, w in enumerate("Thank you that is kind".split())]
        for row in rows:
            write_recording_from_segments(Path(results_at(tmp_path).recording(row.conversation_id)),
                                          {"a": [(0, 20)], "b": [(24, 34)]}, 40, words,
                                          conversation_id=row.conversation_id, archetype=row.archetype,
                                          scenario=row.scenario, opener=row.opener, models=(row.model_a, row.model_b))
            score_conversation(config, tmp_path, row.conversation_id, ("segments", "transcript"))  # what the judge reads
        # every reply on its label set, so no question is asked again (re-asks are not planned)
        stub.answer = lambda messages: ("ENTRY: none\nDEVIATION: none" if "DEVIATION:" in messages[-1]["content"]
                                        else "ANSWER: yes")
        made = tokens = 0
        for archetype, question in judge_plan(archetypes):
            made += run_batch(config, tmp_path, "main", archetype, question).calls
            path = Path(results_at(tmp_path).judge_output("main", archetype, question))
            for line in path.read_text().splitlines():
                tokens += json.loads(line)["input_tokens"]
    finally:
        stub.close()
    plan = plan_run(config, rows, judge_asks(config, rows, tmp_path))
    [planned] = plan["judges"]
    t11 = sum(r.archetype == "T1-1" for r in rows)
    assert planned["questions"]["role_adherence"] == 2 * t11  # once per side
    assert planned["calls"] == made == plan["judge_calls"]
    assert abs(planned["input_tokens"] - tokens) <= 0.25 * tokens, (planned["input_tokens"], tokens)


def test_gpu_hours_per_dialogue_hour_beside_the_papers_two(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    rc, plan = _plan_json(capsys, "--benchmarks", str(tmp_path / "none"))
    assert rc == 0
    per = plan["gpu_hours_per_dialogue_hour"]
    # Two one-GPU models per job for (lead-in + window) + model loading, per window of dialogue.
    config = load_config(REPO / "config" / "config.yaml")
    job_s = 60 + config["bridge"]["lead_in_s"] + config["plan"]["startup_s"]
    assert per["batch_1"] == pytest.approx(2 * job_s / 60)
    assert per["engines"] == pytest.approx(plan["gpu_hours_engines"] / plan["audio_hours"]) and per["engines"] < per["batch_1"]
    assert per["paper"] == 2.0
    assert main(["plan", "--benchmarks", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert f"GPU-hours per dialogue hour: {per['batch_1']:.2f} at batch 1, {per['engines']:.2f} with engines; the paper's 2.0" in out


def test_a_plan_without_conversations_has_no_per_hour_ratio(tmp_path):
    write_suite(tmp_path, archetypes=["T1-1"])
    config, rows = _rows(scripted_config(window_s=60), tmp_path)
    plan = plan_run(config, [], [])
    assert plan["gpu_hours_per_dialogue_hour"]["batch_1"] is None
    from dyafdb.suite.plan import format_plan

    assert "per dialogue hour" not in format_plan(plan)
