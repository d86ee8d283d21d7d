"""The command families are named like the stages: `dyafdb <stage> [<action>]`, one thin module each."""

from __future__ import annotations

import pkgutil

import pytest

import dyafdb.commands
from dyafdb.cli import build_parser
from test_layers import STAGES

# Stages whose work is only ever run by another stage's command (agents by record, llm by judge and
# text pairing) have no command of their own.
NO_COMMAND = {"agents", "llm"}


def test_every_stage_has_its_command_named_after_it():
    modules = {i.name for i in pkgutil.iter_modules(dyafdb.commands.__path__) if not i.name.startswith("_")}
    assert set(STAGES) - NO_COMMAND <= modules
    parser = build_parser()
    names = set(parser._subparsers._group_actions[0].choices)
    assert {s.replace("_", "-") for s in set(STAGES) - NO_COMMAND} <= names


@pytest.mark.parametrize("argv, attrs", [
    (["suite", "check"], {"action": "check"}),
    (["suite", "rules"], {"action": "rules"}),
    (["suite", "design", "--json"], {"action": "design", "json": True}),
    (["record", "--id", "c1", "--id", "c2"], {"action": None, "ids": ["c1", "c2"]}),
    (["record", "garble", "--id", "c1", "--side", "a"], {"action": "garble", "garble_id": "c1", "side": ["a"]}),
    (["score", "--id", "c1"], {"stage": "all"}),
    (["score", "segments", "--id", "c1"], {"stage": "segments"}),
    (["score", "transcript", "--id", "c1"], {"stage": "transcript"}),
    (["score", "mechanical", "--id", "c1"], {"stage": "mechanical"}),
    (["judge", "--judge", "main"], {"judge": ["main"]}),
    (["measures", "--no-judge"], {"no_judge": True}),
    (["analysis", "runs", "--archetype", "T2", "--out", "r.tsv"], {"action": "runs", "archetype": "T2"}),
    (["analysis", "matrix", "--runs", "r.tsv", "--task", "T2", "--out", "m.tsv"], {"action": "matrix", "task": "T2"}),
    (["analysis", "figure", "variance", "--input", "v.tsv", "--out-prefix", "f"], {"action": "figure", "name": "variance"}),
    (["analysis", "report", "--out", "r.html"], {"action": "report"}),
    (["analysis", "variance-cells", "cells.tsv"], {"action": "variance-cells"}),
    (["text-pairing", "generate", "--archetype", "T2", "--out", "t.jsonl"], {"step": "generate"}),
    (["text-pairing", "table", "--runs", "r.tsv", "--out", "t9.tsv"], {"step": "table"}),
    (["viewer", "--no-annotation"], {"no_annotation": True}),
])
def test_each_command_form_parses(argv, attrs):
    args = build_parser().parse_args(argv)
    for key, value in attrs.items():
        assert getattr(args, key) == value, (argv, key)


@pytest.mark.parametrize("old", ["analyze", "design", "scenarios", "segments", "transcript", "mechanical", "garble",
                                 "figure", "report", "variance", "view", "text-pair"])
def test_the_old_loose_commands_are_gone(old, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([old, "--help"])
    assert "invalid choice" in capsys.readouterr().err


def test_record_without_an_id_says_what_to_pass(capsys):
    from dyafdb.cli import main

    assert main(["record"]) == 2
    assert "needs --id" in capsys.readouterr().err


def test_analysis_products_match_the_stage_and_name_a_missing_input(tmp_path, capsys):
    from dyafdb.analysis.products import NEEDS, RUN_PRODUCTS
    from dyafdb.cli import main
    from dyafdb.commands.analysis import PRODUCTS

    assert set(PRODUCTS) == set(NEEDS) | set(RUN_PRODUCTS)
    # checked before any file is read: the missing option is named, not a missing table
    assert main(["analysis", "matrix", "--runs", str(tmp_path / "absent.tsv"), "--out", str(tmp_path / "m.tsv")]) == 2
    assert "dyafdb analysis matrix needs --task" in capsys.readouterr().err


HAND_OVER = """
import json, sys
from dyafdb.procpool import SharedProcesses
seen = []
SharedProcesses.run = lambda self, argv: seen.append([self.stage, *argv]) or 0
from dyafdb.cli import main
try:
    rc = main(sys.argv[1:])
except SystemExit as exc:  # argparse
    rc = exc.code
print(json.dumps({"rc": rc, "seen": seen, "loaded": sorted(m for m in ("numpy", "pandas", "asyncio", "jsonschema",
      "dyafdb.commands.score", "dyafdb.commands.record", "dyafdb.commands.analysis") if m in sys.modules)}))
"""


@pytest.mark.parametrize("argv, stage", [
    (["score", "all", "--id", "c1"], "score"),
    (["record", "--id", "c1", "--in-process"], "record"),
    (["analysis", "figure", "fig2_variance", "--input", "v.tsv", "--out-prefix", "f"], "analysis"),
    (["record", "garble", "--id", "c1"], None),  # its own job kind: not handed over
    (["judge", "--archetype", "T1-1"], None),  # a stage without shared processes
])
def test_a_job_of_a_sharing_stage_is_handed_over_before_any_command_is_imported(argv, stage):
    """The job's own process pays an interpreter's start, not the command's imports (~0.3 CPU-s a job)."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, **{f"DYAFDB_{s.upper()}_PER_PROCESS": "8:run1:" for s in ("score", "record", "analysis")}}
    env.pop("SLURM_STEP_ID", None)
    done = subprocess.run([sys.executable, "-c", HAND_OVER, *argv], env=env, capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    if stage is None:  # run here: the parser is built, every command imported (and here it fails, with no config)
        assert report["seen"] == [] and report["rc"] != 0 and "dyafdb.commands.record" in report["loaded"], report
        return
    assert report["rc"] == 0 and report["seen"] == [[stage, *argv]]
    assert report["loaded"] == [], report["loaded"]
