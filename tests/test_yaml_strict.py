"""YAML files are parsed strictly: a key given twice is refused, never "the last one wins" (issue 23, item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import scenario_doc, scripted_config, write_suite
from dyafdb.errors import InputError


def _config_text(tmp_path: Path) -> str:
    write_suite(tmp_path, archetypes=["T1-1"])
    return yaml.safe_dump(scripted_config(), sort_keys=False)


def test_config_with_a_duplicate_key_is_refused_naming_file_line_and_key(tmp_path):
    from dyafdb.config import load_config

    text = _config_text(tmp_path).replace("    window_s: 4.0\n", "    window_s: 4.0\n    window_s: 30\n")
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    line = text.splitlines().index("    window_s: 30") + 1
    with pytest.raises(InputError) as err:
        load_config(path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: line {line}:") and "'window_s'" in msg and f"line {line - 1}" in msg, msg
    assert "delete" in msg  # the fix


def test_top_level_duplicate_and_the_workflows_reading_are_refused_too(tmp_path):
    from dyafdb.config import config_overrides

    text = _config_text(tmp_path) + "results_dir: a\nresults_dir: b\n"
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=r"cfg\.yaml: line \d+: key 'results_dir'"):
        config_overrides([str(path)], {})  # what the Snakefile reads at plan time


def test_cli_refuses_with_exit_2_and_one_line(tmp_path, capsys):
    from dyafdb.cli import main

    text = _config_text(tmp_path).replace("    window_s: 4.0\n", "    window_s: 4.0\n    window_s: 30\n")
    (tmp_path / "cfg.yaml").write_text(text)
    rc = main(["suite", "design", "--config", str(tmp_path / "cfg.yaml"), "--root", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "Traceback" not in err and "'window_s'" in err and len(err.splitlines()) == 1, err


def test_scenario_with_a_duplicate_key_is_refused(tmp_path):
    from dyafdb.suite.scenarios import load_scenario

    path = tmp_path / "scenarios" / "T1-1" / "t1-1-fixture-01.yaml"
    path.parent.mkdir(parents=True)
    text = yaml.safe_dump(scenario_doc("T1-1"), sort_keys=False)
    text = text.replace("title:", "title: First\ntitle:", 1)
    path.write_text(text)
    with pytest.raises(InputError, match=r"t1-1-fixture-01\.yaml: line \d+: key 'title' appears twice"):
        load_scenario(path)


def test_merge_keys_and_equal_looking_distinct_keys_still_load(tmp_path):
    from dyafdb.schema_check import read_yaml

    path = tmp_path / "x.yaml"
    path.write_text("base: &b {x: 1, y: 2}\nover:\n  <<: *b\n  y: 3\nnums: {1: a, '1': b}\n")
    assert read_yaml(path) == {"base": {"x": 1, "y": 2}, "over": {"x": 1, "y": 3}, "nums": {1: "a", "1": "b"}}


def test_a_key_twice_on_one_line_is_refused(tmp_path):
    from dyafdb.schema_check import read_yaml

    path = tmp_path / "x.yaml"
    path.write_text("vad: {start_rms: 0.1, start_rms: 0.2}\n")
    with pytest.raises(InputError, match=r"x\.yaml: line 1: key 'start_rms' appears twice"):
        read_yaml(path)
