"""The agreement rule's inputs: the blind study's key files, once the viewer has written them."""

from __future__ import annotations

from conftest import scripted_config, write_suite
from dyafdb.analysis.inputs import AnalysisInputs
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design


def _plan(tmp_path, **analysis) -> AnalysisInputs:
    write_suite(tmp_path, archetypes=("T2",))
    cfg = scripted_config()
    cfg["suites"]["t"]["archetypes"] = ["T2"]
    cfg["scenarios_dir"] = str(tmp_path / "scenarios")
    cfg["analysis"] = analysis
    cfg = validate_config(cfg, "test")
    return AnalysisInputs(cfg, {r.conversation_id: r for r in build_design(cfg)}, "results")


def test_the_annotation_key_is_an_input_when_it_exists(tmp_path):
    key = tmp_path / "keys" / "site-annotation-key.json"
    plan = _plan(tmp_path, annotation_key=str(key))
    assert plan.annotation_keys() == []  # no study yet: nothing to wait for
    key.parent.mkdir()
    key.write_text("{}")
    other = key.parent / "annotate-annotation-key.json"  # an annotation-only site's key, read beside it
    other.write_text("{}")
    (key.parent / "notes.json").write_text("{}")
    assert plan.annotation_keys() == [str(key), str(other)]


def test_the_rule_lists_them():
    from conftest import REPO

    rules = (REPO / "workflow" / "rules" / "analysis.smk").read_text()
    agreement = rules[rules.index("rule analysis_agreement:"):rules.index("output:", rules.index("rule analysis_agreement:"))]
    assert "ANALYSIS_PLAN.annotation_keys()" in agreement
