"""The text pairing is one room: its rules' inputs (dyafdb.text_pairing.inputs) and Table 9's columns
follow one declaration of its archetypes (the schema's list, dyafdb.text_pairing.archetypes)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO, scripted_config, write_suite
from dyafdb.analysis import columns as C
from dyafdb.analysis.tables import TABLE9, table9_columns
from dyafdb.config import validate_config
from dyafdb.schema_check import schema_default
from dyafdb.suite.design import build_design
from dyafdb.text_pairing.archetypes import INDICATOR, PLAYABLE, table9_reads
from dyafdb.text_pairing.inputs import TextPairingInputs


def _inputs(tmp_path, design=("T1-1", "T2", "T4-2"), **text) -> TextPairingInputs:
    write_suite(tmp_path, archetypes=design)
    cfg = scripted_config()
    cfg["suites"]["t"]["archetypes"] = list(design)
    cfg["scenarios_dir"] = str(tmp_path / "scenarios")
    cfg["text_pairing"] = {"enabled": True, "models": {"q": {"backend": "llamacpp"}, "r": {"backend": "llamacpp", "threads": 3}},
                           **text}
    cfg = validate_config(cfg, "test")
    return TextPairingInputs(cfg, {r.conversation_id: r for r in build_design(cfg)}, "results")


def test_the_rules_read_the_configured_archetypes_the_design_holds(tmp_path):
    inputs = _inputs(tmp_path, archetypes=["T2", "T1-1", "T3-2"])
    assert inputs.tasks == ["T2", "T1-1"]  # T3-2 is not in the design
    assert inputs.measures == ["results/text_pairing/measures/T2.tsv", "results/text_pairing/measures/T1-1.tsv"]
    assert inputs.speech_runs == ["results/analysis/runs/T2.tsv", "results/analysis/runs/T1-1.tsv"]
    assert inputs.generate_threads() == 3  # the larger of r's 3 and q's schema default (2)
    wildcards = type("W", (), {"task": "T2"})()
    assert inputs.judge_templates(wildcards) == [f"{inputs.judges.prompts_dir}/final_choice.txt"]
    assert all(f.startswith(f"{tmp_path}/scenarios/T2/") for f in inputs.scenarios(wildcards)) and inputs.scenarios(wildcards)


def test_without_a_setting_the_rules_read_the_schemas_archetypes(tmp_path):
    inputs = _inputs(tmp_path, design=("T1-1", "T2", "T3-2", "T4-2", "T4-1"))
    assert inputs.tasks == schema_default("config-text_pairing", "archetypes") == ["T1-1", "T2", "T3-2", "T4-2"]
    # none of them in the design: the table still reads every speech archetype, so it is written (empty)
    assert _inputs(tmp_path / "b", design=("T4-1",)).speech_runs == ["results/analysis/runs/T4-1.tsv"]


def test_table_9_has_a_column_per_archetype_played_in_the_declared_order():
    assert [c for c, _, _ in TABLE9] == ["T1-1", "T2", "T3-2 agreement", "T4-2"]  # the paper's, from the schema default
    assert table9_columns(["T4-1", "T2", "T1-2"]) == (("T2", "T2", "score"), ("T1-2", "T1-2", "score"), ("T4-1", "T4-1", "score"))
    assert set(INDICATOR) <= set(PLAYABLE)
    assert all(task in C.SUCCESS_NAME for task, indicator in INDICATOR.items() if indicator == "success")
    with pytest.raises(ValueError, match="T9-9"):
        table9_reads(["T9-9"])


def _lists_of_strings(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            yield node.lineno, [e.value for e in node.elts]


def test_the_archetype_list_is_written_once():
    # The schema's default is the one place it is written: a copy in the source or the rules drifts.
    paper = schema_default("config-text_pairing", "archetypes")
    found = []
    for path in [*sorted((REPO / "src" / "dyafdb").rglob("*.py")), *sorted((REPO / "workflow").rglob("*.smk"))]:
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:  # a rules file: its Python lines are checked as text
            found += [f"{path.relative_to(REPO)}" for line in text.splitlines() if all(f'"{a}"' in line for a in paper)]
            continue
        found += [f"{path.relative_to(REPO)}:{n}" for n, names in _lists_of_strings(tree) if set(paper) <= set(names)
                  and len(names) == len(paper)]
    assert not found, f"the text pairing's archetypes written again (read text_pairing.archetypes instead): {found}"


def test_the_score_rule_depends_on_its_judge_alone(tmp_path):
    # another judge, or a default the schema gains, must not rerun the text pairing's scoring
    local = {"backend": "llamacpp", "threads": 1}
    write_suite(tmp_path, archetypes=("T2",))

    def params(judges, **text):
        cfg = scripted_config()
        cfg["suites"]["t"]["archetypes"] = ["T2"]
        cfg["scenarios_dir"] = str(tmp_path / "scenarios")
        cfg["judge"] = {"judges": judges}
        cfg["text_pairing"] = {"enabled": True, "models": {"q": {"backend": "llamacpp"}}, **text}
        cfg = validate_config(cfg, "test")
        return TextPairingInputs(cfg, {r.conversation_id: r for r in build_design(cfg)}, "results").judge()

    alone = params({"t": local}, judge="t")
    assert params({"t": local, "other": {"backend": "openai", "model": "m"}}, judge="t") == alone
    assert params({"t": {**local, "n_ctx": 4096}}, judge="t") != alone
    assert '"judge": "t"' in alone
