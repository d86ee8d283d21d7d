"""Each kind of bad input stops with a message naming the file, the field, the value and the fix."""

from __future__ import annotations

from pathlib import Path

import yaml
import pytest

from conftest import scenario_doc, scripted_config, write_suite
from dyafdb.cli import main
from dyafdb.config import load_config
from dyafdb.suite.design import build_design
from dyafdb.suite.scenarios import load_scenario
from dyafdb.errors import InputError
from results_paths import results_at


def write_config(tmp_path, cfg) -> str:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_unknown_config_key_names_it_and_lists_allowed(tmp_path):
    cfg = scripted_config()
    cfg["suites"]["t"]["repetitons"] = 3
    with pytest.raises(InputError) as err:
        load_config(write_config(tmp_path, cfg))
    msg = str(err.value)
    assert "cfg.yaml" in msg and "unknown key 'repetitons' in suites.t" in msg and "repetitions" in msg


def test_bad_config_value_names_key_value_and_allowed(tmp_path):
    cfg = scripted_config()
    cfg["suites"]["t"]["archetypes"] = ["T1-1", "T5"]
    with pytest.raises(InputError, match=r"suites\.t\.archetypes\.1 = 'T5' is not allowed; choose one of: 'T1-1'"):
        load_config(write_config(tmp_path, cfg))
    cfg = scripted_config()
    cfg["vad"] = {"start_rms": -1}
    with pytest.raises(InputError, match=r"vad\.start_rms = -1"):
        load_config(write_config(tmp_path, cfg))


def test_unknown_model_in_a_suite(tmp_path):
    cfg = scripted_config()
    cfg["suites"]["t"]["models"].append("gpt_voice")
    with pytest.raises(InputError, match=r"suites\.t\.models lists unknown model 'gpt_voice'; known models: quiet, talker"):
        load_config(write_config(tmp_path, cfg))


def test_unknown_adapter(tmp_path):
    cfg = scripted_config()
    cfg["models"]["talker"]["adapter"] = "whisperer"
    with pytest.raises(InputError, match=r"models\.talker\.adapter = 'whisperer' is not allowed"):
        load_config(write_config(tmp_path, cfg))


def test_bad_scenario_field_names_file_and_field(tmp_path):
    write_suite(tmp_path, archetypes=["T4-4"])
    path = tmp_path / "scenarios" / "T4-4" / "t4-4-fixture-01.yaml"
    doc = scenario_doc("T4-4")
    doc["answer_key"]["seller_opening"] = "a lot"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError) as err:
        load_scenario(path)
    assert str(path) in str(err.value) and "answer_key.seller_opening = 'a lot'" in str(err.value)


def test_scenario_with_wrong_side_role(tmp_path):
    write_suite(tmp_path, archetypes=["T4-2"])
    path = tmp_path / "scenarios" / "T4-2" / "t4-2-fixture-01.yaml"
    doc = scenario_doc("T4-2")
    doc["sides"]["a"]["role"] = "defender"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"sides\.a\.role = 'defender'; archetype T4-2 needs 'attacker' on side a"):
        load_scenario(path)


def test_too_few_scenarios_for_the_suite(tmp_path):
    write_suite(tmp_path)
    cfg = scripted_config(scenarios_per_archetype=20)
    with pytest.raises(InputError, match=r"scenarios_per_archetype = 20, but archetype T1-1 has only 1 scenario files"):
        build_design(load_config(write_config(tmp_path, cfg)), tmp_path)


def test_cli_prints_the_message_and_exits_2(tmp_path, capsys):
    cfg = scripted_config()
    cfg["suites"]["t"]["window_s"] = "sixty"
    assert main(["suite", "design", "--config", write_config(tmp_path, cfg), "--root", str(tmp_path)]) == 2
    assert "suites.t.window_s = 'sixty'" in capsys.readouterr().err


def test_worker_crash_through_the_cli_leaves_no_recording(tmp_path, capsys):
    write_suite(tmp_path)
    cfg = scripted_config(in_process=False, models={
        "crashy": {"adapter": "agents_for_tests:ProbeAgent", "params": {"crash_at": 5},
                   "worker": {"env": {"PYTHONPATH": __import__("conftest").TEST_PATH}}},
    })
    path = write_config(tmp_path, cfg)
    cid = "t1-1-fixture-01__crashy__crashy__open-a__rep1__4s"
    assert main(["record", "--config", path, "--root", str(tmp_path), "--id", cid]) == 3
    assert "agent crashy (side a, tick 5): worker error while stepping: RuntimeError: boom" in capsys.readouterr().err
    assert not (Path(results_at(tmp_path).recording(cid)) / "meta.json").exists()


# ------------------------------------------------------------------ ids (issue 15, item 7)


def _recording_at(folder, cid):
    from scoring_fixtures import write_recording_from_segments

    return write_recording_from_segments(folder, {"a": [(2, 12)], "b": [(20, 30)]}, 40, conversation_id=cid,
                                         archetype="T1-1", scenario="t1-1-fixture-01")


def test_an_id_that_climbs_out_of_the_results_folder_is_refused_everywhere(tmp_path, capsys):
    from scoring_fixtures import write_project

    write_project(tmp_path, ["T1-1"])
    _recording_at(tmp_path / "x", "x")  # what results/recordings/../../x points at
    cfg = ["--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path)]
    for command in (["score"], ["score", "segments"], ["score", "transcript"], ["score", "mechanical"], ["record"], ["record", "garble"], ["viewer"]):
        assert main([*command, *cfg, "--id", "../../x"]) == 2, command
        err = capsys.readouterr().err
        assert "--id = '../../x' is not a conversation id" in err and "Traceback" not in err, (command, err)
    # the judge takes no id; its names are looked up in the config and the archetype list
    for option in ("--archetype", "--judge"):
        assert main(["judge", *cfg, option, "../../x"]) == 2
        assert "../../x" in capsys.readouterr().err
    assert not list(tmp_path.glob("x.*")) and sorted(p.name for p in tmp_path.iterdir()) == [
        "config.yaml", "scenarios", "x"]


def test_a_recording_outside_the_design_can_still_be_scored(tmp_path):
    from scoring_fixtures import write_project

    write_project(tmp_path, ["T1-1"])
    _recording_at(Path(results_at(tmp_path).recording("by-hand.take-2")), "by-hand.take-2")
    assert main(["score", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path), "--id", "by-hand.take-2"]) == 0
    assert Path(results_at(tmp_path).measures_json("by-hand.take-2")).exists()


def test_design_ids_and_the_workflow_wildcard_use_the_one_id_pattern(tmp_path):
    import re

    from conftest import REPO
    from dyafdb.suite.ids import ID_PATTERN

    write_suite(tmp_path)
    cfg = scripted_config(archetypes=["T1-1", "T4-2"], window_s=7.5)
    rows = build_design(load_config(write_config(tmp_path, cfg)), tmp_path)
    assert rows and all(re.fullmatch(ID_PATTERN, r.conversation_id) for r in rows)
    assert "conversation=ID_PATTERN" in (REPO / "workflow/rules/common/config.smk").read_text()


# ------------------------------------------- unreadable files (issue 15, item 6) and item 8's inputs


def test_a_config_with_bytes_that_are_not_utf8_names_the_file_and_line(tmp_path, capsys):
    path = tmp_path / "cfg.yaml"
    path.write_bytes(yaml.safe_dump(scripted_config()).encode() + b"# caf\xe9\n")
    assert main(["suite", "design", "--config", str(path), "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: line" in err and "not UTF-8" in err and "Traceback" not in err


def test_a_scenario_with_bytes_that_are_not_utf8_is_named_by_design_and_by_scenarios_check(tmp_path, capsys):
    write_suite(tmp_path)
    scenario = tmp_path / "scenarios" / "T1-1" / "t1-1-fixture-01.yaml"
    scenario.write_bytes(scenario.read_bytes().replace(b"Avery", b"Av\xe9ry"))
    assert main(["suite", "design", "--config", write_config(tmp_path, scripted_config()), "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(scenario) in err and "not UTF-8" in err
    rc = main(["suite", "check", "--root", str(tmp_path / "scenarios")])
    out = capsys.readouterr()
    assert rc != 0 and "Traceback" not in out.err and "not UTF-8" in out.out + out.err


@pytest.mark.parametrize("content, says", [
    (b"", "is empty"),
    (b"model\tpartner\tvalue\nm1\tm2\t0.5\nm2\tm1\t0.4\textra\n", "wrong number of fields"),
    (b"model\tpartner\tvalue\nm1\tm1\t0.5\nm1\tm2\tinf\nm2\tm1\t0.2\nm2\tm2\t0.3\n", "finite number"),
    (b"model\tpartner\tvalue\nm1\tm1\t0.5\nm1\tm2\nm2\tm1\t0.2\nm2\tm2\t0.3\n", "finite number"),  # a short row
    (b"model\tpartner\tvalue\nm\xe9\tm1\t0.5\n", "not UTF-8"),
])
def test_a_broken_variance_table_is_named(tmp_path, capsys, content, says):
    path = tmp_path / "cells.tsv"
    path.write_bytes(content)
    assert main(["analysis", "variance-cells", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and says in err and "Traceback" not in err


def test_a_ragged_per_run_table_is_named(tmp_path, capsys):
    path = tmp_path / "runs.tsv"
    path.write_bytes(b"conversation_id\tmodel\nc1\tm1\textra\n")
    assert main(["analysis", "variance", "--runs", str(path), "--out", str(tmp_path / "v.tsv")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: per-run table has a row with the wrong number of fields" in err and "Traceback" not in err


def test_an_empty_measures_table_is_named(tmp_path, capsys):
    path = tmp_path / "measures.tsv"
    path.write_bytes(b"")
    assert main(["analysis", "runs", "--measures", str(path), "--out", str(tmp_path / "runs.tsv")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: measures table is empty" in err and "Traceback" not in err
    assert not (tmp_path / "runs.tsv").exists()


def test_a_window_no_longer_than_the_lead_in_is_refused(tmp_path, capsys):
    write_suite(tmp_path)
    cfg = scripted_config(window_s=1.0)
    cfg["bridge"]["lead_in_s"] = 1.5
    assert main(["suite", "design", "--config", write_config(tmp_path, cfg), "--root", str(tmp_path)]) == 2
    assert "suites.t.window_s = 1.0 is not longer than bridge.lead_in_s = 1.5" in capsys.readouterr().err


def test_a_role_prompt_far_beyond_the_word_range_is_refused_but_a_long_one_loads(tmp_path):
    from dyafdb.suite.scenarios import PROMPT_WORDS, PROMPT_WORDS_LIMIT

    write_suite(tmp_path, archetypes=["T1-1"])
    path = tmp_path / "scenarios" / "T1-1" / "t1-1-fixture-01.yaml"
    doc = scenario_doc("T1-1")
    doc["sides"]["b"]["prompt"] = "You are Blake. " + "word " * (PROMPT_WORDS[1] + 20)
    path.write_text(yaml.safe_dump(doc))
    assert load_scenario(path).sides["b"]["prompt"]  # past the range: `scenarios check` reports it, loading allows it
    doc["sides"]["b"]["prompt"] = "You are Blake. " + "word " * PROMPT_WORDS_LIMIT
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"sides\.b\.prompt has \d+ words, far beyond the suite's 40-110"):
        load_scenario(path)
