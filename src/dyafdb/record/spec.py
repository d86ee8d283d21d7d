"""What a recording is made from, as digests: the one definition the workflow plans with, the
record stage writes into meta.json and every later stage and `dyafdb verify` check against.

A recording depends on its design row (scenario, models, roles, opener, repetition, window,
seed), on its two models' config entries (less what cannot change a sample: label, description,
resources), on its scenario file's content, on the bridge's lead-in and, for conversations with a
garble-checked model, on the watcher's settings. Nothing here depends on where a file lies, so
copying a config, moving a checkout or reordering keys changes no digest.
"""

from __future__ import annotations

import functools
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping

from dyafdb.clock import seconds_to_ticks
from dyafdb.provenance import digest_files, digest_json
from dyafdb.record.garble import garble_params
from dyafdb.suite.design import Conversation

# Model config keys that describe or schedule a model but never change what it says.
NOT_IN_OUTPUT = ("label", "description", "resources")


def model_entry_digest(spec: Mapping[str, Any]) -> str:
    return digest_json({k: v for k, v in spec.items() if k not in NOT_IN_OUTPUT})


def row_digest(row: Conversation) -> str:
    return digest_json(asdict(row))


@functools.lru_cache(maxsize=None)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    return digest_files([path])


def scenario_digest(path: Path | str) -> str:
    """The scenario file's content digest (cached per file version while a plan runs)."""
    st = Path(path).stat()
    return _file_digest(str(path), st.st_mtime_ns, st.st_size)


def scenario_path(config: Mapping[str, Any], row: Conversation, root: Path | str = ".") -> Path:
    return Path(root) / config["scenarios_dir"] / row.archetype / f"{row.scenario}.yaml"


def expected_ticks(config: Mapping[str, Any], row: Conversation) -> dict[str, int]:
    """The lead-in and window a recording of ``row`` must have, in ticks."""
    return {"lead_in_ticks": seconds_to_ticks(config["bridge"]["lead_in_s"]),
            "window_ticks": seconds_to_ticks(row.window_s)}


def model_digests(config: Mapping[str, Any]) -> dict[str, str]:
    """Every model's entry digest, computed once (a plan asks for two per conversation)."""
    return {name: model_entry_digest(spec) for name, spec in config["models"].items()}


def recording_inputs(config: Mapping[str, Any], row: Conversation, root: Path | str = ".",
                     models: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The digests meta.json keeps under ``provenance.inputs`` (``models``: :func:`model_digests`)."""
    models = models if models is not None else model_digests(config)
    inputs: dict[str, Any] = {
        "design_row": row_digest(row),
        "models": {"a": models[row.model_a], "b": models[row.model_b]},
        "scenario": scenario_digest(scenario_path(config, row, root)),
        "bridge": digest_json({"lead_in_s": config["bridge"]["lead_in_s"]}),
    }
    garble = garble_params(config, row)
    if garble:
        inputs["garble"] = digest_json(garble)
    return inputs


def inputs_digest(inputs: Mapping[str, Any]) -> str:
    """One digest over :func:`recording_inputs`: the record rule's param and meta.json's ``provenance.spec``."""
    return digest_json(inputs)
