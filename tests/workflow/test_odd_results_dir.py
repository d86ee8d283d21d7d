"""Every rule quotes every path (issue 25, class 5): a results folder whose name has spaces, quotes and
non-ASCII letters is recorded, scored and tabled in place, and nothing is written outside it (an
unquoted `> {log}` once wrote a stray file `results/my`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from conftest import REPO, scripted_config, write_suite
from dyafdb.paths import Results
from test_resume import snakemake

ODD = "results/my res ü 'q\" $x"


def test_a_results_folder_with_spaces_quotes_and_non_ascii_letters(tmp_path):
    write_suite(tmp_path, archetypes=["T1-1"], per_archetype=1)
    shutil.copytree(REPO / "config" / "judge", tmp_path / "config" / "judge")
    cfg = scripted_config(cross_play_only=True, scenarios_per_archetype=1)
    cfg["results_dir"] = ODD
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    results = Results(ODD)
    run = snakemake(tmp_path, results.mechanical_table("T1-1"), results.design)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    odd = tmp_path / ODD
    assert len(list(odd.glob("recordings/*/*/meta.json"))) == 4
    assert len(list(odd.glob("measures/*/*.json"))) == 4
    assert (odd / "scores" / "mechanical" / "T1-1.tsv").stat().st_size > 0
    assert len(list(odd.glob("logs/record/*/*.log"))) == 4 and len(list(odd.glob("logs/score/*/*.log"))) == 4
    # nothing beside the odd folder: no `results/my` from an unquoted redirection, no stray `$x`
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [Path(ODD).name]
    assert not any(p.name in ("res", "ü", "$x", "x") for p in tmp_path.iterdir())


def test_every_planned_shell_command_keeps_an_odd_results_path_whole(tmp_path):
    """The dry-run's printed command of every rule (judge, analysis, viewer and text pairing included):
    split as the shell splits it, every word that names a path under the results folder names it whole."""
    import shlex

    write_suite(tmp_path, archetypes=["T1-1", "T4-2"], per_archetype=1)
    shutil.copytree(REPO / "config" / "judge", tmp_path / "config" / "judge")
    cfg = scripted_config(cross_play_only=True, scenarios_per_archetype=1, archetypes=["T1-1", "T4-2"])
    cfg["results_dir"] = ODD
    cfg["text_pairing"] = {"enabled": True}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    plan = snakemake(tmp_path, "-n", "-p")
    assert plan.returncode == 0, plan.stdout[-3000:] + plan.stderr[-3000:]
    commands = [line.split(":", 1)[1].strip() for line in plan.stdout.splitlines() if line.startswith("Shell command:")]
    rules = {line.split(":")[0].split()[-1] for line in plan.stdout.splitlines() if line.startswith("rule ")}
    assert {"record", "score", "judge", "measures_table", "view", "analysis_report", "text_pair_generate", "text_pair_table"} <= rules, rules
    assert len(commands) >= len(rules) - 2
    for command in commands:
        words = shlex.split(command)
        for word in words:
            if "results/my" in word:
                assert ODD in word, (word, command)
