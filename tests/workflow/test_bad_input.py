"""Each kind of bad input stops with a message naming the file, the field, the value and the fix."""

from __future__ import annotations

import yaml
import pytest

from conftest import scenario_doc, scripted_config, write_suite
from dyafdb.cli import main
from dyafdb.config import load_config
from dyafdb.suite.design import build_design
from dyafdb.suite.scenarios import load_scenario
from dyafdb.errors import InputError


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
    assert main(["design", "--config", write_config(tmp_path, cfg), "--root", str(tmp_path)]) == 2
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
    assert not (tmp_path / "results" / "recordings" / cid / "meta.json").exists()


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
    for command in (["score"], ["segments"], ["transcript"], ["mechanical"], ["record"], ["garble"], ["view"]):
        assert main([*command, *cfg, "--id", "../../x"]) == 2, command
        err = capsys.readouterr().err
        assert "--id = '../../x' is not a conversation id" in err and "Traceback" not in err, (command, err)
    assert not list(tmp_path.glob("x.*")) and sorted(p.name for p in tmp_path.iterdir()) == [
        "config.yaml", "scenarios", "x"]


def test_a_recording_outside_the_design_can_still_be_scored(tmp_path):
    from scoring_fixtures import write_project

    write_project(tmp_path, ["T1-1"])
    _recording_at(tmp_path / "results/recordings/by-hand.take-2", "by-hand.take-2")
    assert main(["score", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path), "--id", "by-hand.take-2"]) == 0
    assert (tmp_path / "results/measures/by-hand.take-2.json").exists()


def test_design_ids_and_the_workflow_wildcard_use_the_one_id_pattern(tmp_path):
    import re

    from conftest import REPO
    from dyafdb.suite.ids import ID_PATTERN

    write_suite(tmp_path)
    cfg = scripted_config(archetypes=["T1-1", "T4-2"], window_s=7.5)
    rows = build_design(load_config(write_config(tmp_path, cfg)), tmp_path)
    assert rows and all(re.fullmatch(ID_PATTERN, r.conversation_id) for r in rows)
    assert "conversation=ID_PATTERN" in (REPO / "workflow/rules/common.smk").read_text()
