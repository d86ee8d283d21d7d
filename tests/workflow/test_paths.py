"""Every results path comes from dyafdb.paths; logs and benchmarks live under the results folder."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from conftest import REPO, scripted_config, write_suite
from dyafdb.config import validate_config
from dyafdb.judge.runner import judge_output_path
from dyafdb.paths import Results, results_of
from dyafdb.score.conversation import conversation_paths
from test_resume import snakemake

# A results folder spelled by hand: `{RESULTS}/...`, `config["results_dir"] / ...`, `/ "recordings"`.
SPELLED = re.compile(r'\{RESULTS\}/|\{results\}/|results_dir"\]\s*/|/\s*"(recordings|segments|transcripts|measures|scores|'
                     r'judge|analysis|site|annotation-site|logs|benchmarks|text_pairing)"|"(logs|benchmarks)/')


def test_no_results_path_is_spelled_outside_paths_module():
    files = [p for p in (REPO / "src" / "dyafdb").rglob("*.py") if p.name != "paths.py"]
    files += list((REPO / "workflow").rglob("*.smk")) + [REPO / "workflow" / "Snakefile"]
    found = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in files
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if SPELLED.search(line) and not line.lstrip().startswith("#")]
    assert not found, "results paths spelled by hand (use dyafdb.paths):\n" + "\n".join(found)


# A per-conversation path built by hand: `recordings / cid`, `"segments" / f"{cid}.json"`,
# `recordings/{cid}`: it would miss the conversation's shard folder (dyafdb.paths.shard_of).
PER_CONVERSATION = re.compile(r'(recordings|segments|transcripts|measures|record|score|workers|benchmarks)"?\s*/\s*(f"\{|\w*cid\b|\w+\.conversation_id)'
                              r'|(recordings|segments|transcripts|measures|record|score|workers)/\{(\w*cid|conversation|\w+\.conversation_id)')


def test_no_per_conversation_path_is_spelled_outside_paths_module():
    files = [p for p in (REPO / "src" / "dyafdb").rglob("*.py") if p.name != "paths.py"]
    files += [*(REPO / "workflow").rglob("*.smk"), *(REPO / "scripts").rglob("*.py"), *(REPO / "bench").rglob("*.py")]
    found = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in files
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if PER_CONVERSATION.search(line) and not line.lstrip().startswith("#")]
    assert not found, "per-conversation paths spelled by hand (use dyafdb.paths.Results):\n" + "\n".join(found)
    assert PER_CONVERSATION.search('root / "results/recordings" / cid') and PER_CONVERSATION.search('f"logs/record/{cid}.log"')


def test_stage_code_and_rules_name_the_same_files(tmp_path):
    config = validate_config({**scripted_config(), "results_dir": "out/run1"}, "test")
    results = results_of(config, tmp_path)
    assert results.root == str(tmp_path / "out" / "run1")
    paths = conversation_paths(config, tmp_path, "c1")
    assert str(paths.segments) == results.segments("c1") == f"{tmp_path}/out/run1/segments/c1/c1.json"
    assert str(paths.recording) == results.recording("c1")
    assert str(judge_output_path(config, tmp_path, "main", "T2", "final_choice")) == results.judge_output("main", "T2", "final_choice")
    # the rules use the same methods with wildcards as their patterns
    assert Results("out/run1").segments("{conversation}") == "out/run1/segments/{shard}/{conversation}.json"
    assert Results("r").log("judge", "{judge}", "{archetype}", "{question}") == "r/logs/judge/{judge}/{archetype}/{question}.log"


def test_two_configs_keep_their_logs_apart(tmp_path):
    # Two configs with the same conversation ids in one project folder: each job's log and benchmark
    # is under its own results folder, so neither run writes over the other's.
    write_suite(tmp_path)
    planned = {}
    for name in ("one", "two"):
        config = {**scripted_config(), "results_dir": f"results/{name}",
                  "judge": {"prompts_dir": str(REPO / "config" / "judge")}}
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
        plan = snakemake(tmp_path, "-n")
        assert plan.returncode == 0, plan.stdout + plan.stderr
        planned[name] = set(re.findall(r"^\s*(?:log|benchmark): (.+)$", plan.stdout, re.M))
        assert planned[name], plan.stdout
        for path in planned[name]:
            for one in path.split(", "):
                assert one.startswith(f"results/{name}/logs/") or one.startswith(f"results/{name}/benchmarks/"), one
    assert not planned["one"] & planned["two"]
