"""The template adapter of docs/adding-a-model.md records for real, out of process, and the overlay
configs plan what the guide says: only the new model's pairings, with the full suite's ids."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from conftest import REPO, scripted_config, write_suite
from dyafdb.config import _merge, validate_config
from dyafdb.errors import InputError
from dyafdb.record.conversation import AgentPool, record_conversation
from dyafdb.schema_check import read_yaml
from dyafdb.suite.design import build_design


def _configs(*paths: Path) -> dict:
    data: dict = {}
    for p in paths:
        data = _merge(data, read_yaml(p) or {})
    return validate_config(data, " + ".join(map(str, paths)))


def _record(config: dict, root: Path, row) -> tuple[dict, np.ndarray, list[dict]]:
    out = root / "rec" / row.conversation_id
    with AgentPool(config) as pool:
        meta = record_conversation(config, row, out, pool, root)
    audio, _ = sf.read(out / "audio.wav", dtype="float32")
    tokens = [json.loads(line) for line in (out / "text.jsonl").read_text().splitlines() if line.strip()]
    return meta, audio, tokens


def test_template_speaks_and_writes_from_its_own_worker_process(tmp_path):
    write_suite(tmp_path)
    cfg = scripted_config(window_s=6.0, in_process=False)
    cfg["models"]["mine"] = {"adapter": "template", "worker": {"startup_timeout_s": 60, "step_timeout_s": 10}}
    cfg["suites"]["t"]["models"] = ["mine", "quiet"]
    cfg["suites"]["t"]["cross_play_only"] = True
    config = validate_config(cfg, "cfg.yaml")
    row = next(r for r in build_design(config, tmp_path) if r.model_a == "mine" and r.opener == "a")
    meta, audio, tokens = _record(config, tmp_path, row)
    info = meta["agents"]["a"]
    assert info["adapter"] == "template" and info["extra"]["speak_first"] is True
    lead_in = meta["lead_in_ticks"] * 1920
    assert np.sqrt(np.mean(audio[:lead_in, 0] ** 2)) > 0.01  # the opener is audible within the lead-in
    assert any(t["channel"] == "a" for t in tokens if t.get("text", "").strip())


def test_template_names_a_missing_checkpoint(tmp_path):
    from dyafdb.agents.template import TemplateAgent

    with pytest.raises(InputError, match=r"models\.mine\.params\.checkpoint: .*nowhere\.json not found"):
        TemplateAgent({"checkpoint": str(tmp_path / "nowhere.json")}, "mine")


def test_new_model_overlay_plans_only_its_pairings_with_the_full_suites_ids(tmp_path):
    write_suite(tmp_path, per_archetype=20)
    base = _configs(REPO / "config" / "config.yaml")
    overlay = _configs(REPO / "config" / "config.yaml", REPO / "config" / "overlays" / "new-model.yaml")
    full = dict(overlay, suites={"main": {k: v for k, v in overlay["suites"]["main"].items() if k != "only_with"}})
    for c in (base, overlay, full):
        c["suites"] = {"main": c["suites"]["main"]}
    planned = {r.conversation_id: r for r in build_design(overlay, tmp_path)}
    every = {r.conversation_id: r for r in build_design(full, tmp_path)}
    old = {r.conversation_id for r in build_design(base, tmp_path)}
    assert sorted({r.pairing for r in planned.values()}) == [
        "minicpmo+my_model", "my_model+my_model", "personaplex+my_model", "raon+my_model"]
    assert len(planned) == 840 + 3 * 1680
    assert set(planned) == set(every) - old  # exactly the conversations the references did not play


def test_only_with_must_name_a_suite_model():
    cfg = scripted_config()
    cfg["suites"]["t"]["only_with"] = ["nobody"]
    with pytest.raises(InputError, match=r"suites\.t\.only_with names 'nobody'"):
        validate_config(cfg, "cfg.yaml")


def test_first_try_overlay_pairs_the_new_model_with_the_embedded_agent(tmp_path):
    write_suite(tmp_path, per_archetype=2)
    config = _configs(REPO / "config" / "demo.yaml", REPO / "config" / "overlays" / "first-try.yaml")
    rows = build_design(config, tmp_path)
    assert {r.suite for r in rows} == {"first_try"}
    assert {r.pairing for r in rows} == {"my_model+cpu_eager"} and len(rows) == 2 * 4


@pytest.mark.slow
def test_template_against_the_embedded_cpu_agent(tmp_path):
    """What CI runs for the guide: the template in its worker against the real embedded agent."""
    write_suite(tmp_path, per_archetype=1)
    config = _configs(REPO / "config" / "demo.yaml", REPO / "config" / "overlays" / "first-try.yaml")
    config["suites"]["first_try"]["window_s"] = 8
    config["bridge"]["progress"] = False
    row = next(r for r in build_design(config, tmp_path) if r.opener_model == "cpu_eager")
    meta, audio, tokens = _record(config, tmp_path, row)
    assert {meta["agents"][s]["adapter"] for s in "ab"} == {"template", "cascade"}
    for ch in range(2):
        assert np.sqrt(np.mean(audio[:, ch] ** 2)) > 0.005  # both sides spoke
    assert {t["channel"] for t in tokens if t.get("text", "").strip()} == {"a", "b"}
