"""Defaults are written once, in the schemas; the validator fills them in and code reads them from there."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO, scripted_config
from dyafdb.config import validate_config
from dyafdb.schema_check import fill_defaults, load_schema
from dyafdb.score.transcript import TranscriptParams
from dyafdb.score.turntaking import TurnTakingParams
from dyafdb.score.vad import VadParams


def test_validator_fills_every_schema_default():
    cfg = validate_config(scripted_config(), "cfg.yaml")
    assert cfg["results_dir"] == "results"
    assert cfg["vad"] == {"start_rms": 0.010, "end_rms": 0.004, "min_segment_s": 0.16, "max_gap_s": 0.32}
    assert cfg["turntaking"]["pause_s"] == 1.0
    assert cfg["analysis"]["bootstrap"] == 1000
    assert cfg["models"]["talker"]["garble_check"] is False
    assert cfg["suites"]["t"]["enabled"] is True


def test_given_values_win_over_defaults():
    cfg = scripted_config()
    cfg["vad"] = {"start_rms": 0.02}
    out = validate_config(cfg, "cfg.yaml")
    assert out["vad"]["start_rms"] == 0.02 and out["vad"]["end_rms"] == 0.004


def test_dataclass_defaults_are_the_schema_defaults():
    cfg = validate_config(scripted_config(), "cfg.yaml")
    assert VadParams() == VadParams.from_config(cfg)
    assert TranscriptParams() == TranscriptParams.from_config(cfg)
    assert TurnTakingParams() == TurnTakingParams.from_config(cfg)
    assert VadParams().start_rms == load_schema("config")["properties"]["vad"]["properties"]["start_rms"]["default"]


def test_fill_defaults_follows_refs_and_maps_but_not_alternatives():
    schema = {"type": "object", "$defs": {"m": {"type": "object", "properties": {"x": {"default": 1}}}},
              "properties": {"ms": {"type": "object", "additionalProperties": {"$ref": "#/$defs/m"}},
                             "alt": {"anyOf": [{"properties": {"y": {"default": 2}}}]}}}
    out = fill_defaults({"ms": {"a": {}, "b": {"x": 5}}, "alt": {}}, schema)
    assert out == {"ms": {"a": {"x": 1}, "b": {"x": 5}}, "alt": {}}


def test_no_hand_written_defaults_dict_in_the_package():
    """A literal ``DEFAULTS = {...}`` beside a schema is a second place for the same numbers."""
    offenders = []
    for path in (REPO / "src" / "dyafdb").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            if any(getattr(t, "id", "") == "DEFAULTS" for t in targets) and isinstance(node.value, ast.Dict):
                offenders.append(str(Path(path).relative_to(REPO)))
    assert offenders == []
