"""One conversation's mechanical scoring: segments -> transcript -> measures, each its own file.

The three stages share one job per conversation (the full suite has 7,560 of them, and planning
costs per job), but each writes its own output, and each can run alone from the previous stage's
file (``dyafdb score segments``, ``dyafdb score transcript``, ``dyafdb score mechanical``):

``results/segments/<shard>/<id>.json``      VAD segments per channel (:mod:`dyafdb.score.vad`)
``results/transcripts/<shard>/<id>.txt``    what the judge reads (:mod:`dyafdb.score.transcript`)
``results/transcripts/<shard>/<id>.json``   the same lines with frames, speaker map and unattached tokens
``results/measures/<shard>/<id>.json``      turn-taking, occupancy, audio health and (T4-2) leak per side

(``<shard>`` is the conversation's scenario id, :func:`dyafdb.paths.shard_of`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from dyafdb.fileio import read_json, write_json_atomic, write_text_atomic
from dyafdb.paths import results_of
from dyafdb.score.check import check_identity, check_made_from, check_recording, check_recording_digest
from dyafdb.score.tasks import find_leak, occupancy
from dyafdb.score.health.measure import HealthParams, measure_health
from dyafdb.record.recording import Recording, read_recording, recording_digest
from dyafdb.suite.design import Conversation, build_design
from dyafdb.suite.scenarios import find_scenario
from dyafdb.schema_check import YAML_LOADER
from dyafdb.score.transcript import TranscriptParams, build_transcript, identifying_names, render
from dyafdb.score.turntaking import TurnTakingParams, measure_conversation
from dyafdb.score.vad import Interval, VadParams, detect_stereo, read_segments, segments_doc

MEASURES_FORMAT = "dyafdb-measures/1"
STAGES = ("segments", "transcript", "measures")


@dataclass(frozen=True)
class ConversationPaths:
    recording: Path
    segments: Path
    transcript_txt: Path
    transcript_json: Path
    measures: Path


def conversation_paths(config: Mapping[str, Any], root: Path, conversation_id: str) -> ConversationPaths:
    results = results_of(config, root)
    return ConversationPaths(
        recording=Path(results.recording(conversation_id)),
        segments=Path(results.segments(conversation_id)),
        transcript_txt=Path(results.transcript_txt(conversation_id)),
        transcript_json=Path(results.transcript_json(conversation_id)),
        measures=Path(results.measures_json(conversation_id)),
    )


def compute_segments(rec: Recording, params: VadParams) -> dict[str, list[Interval]]:
    return detect_stereo(rec.audio, params)


def compute_measures(segments: Mapping[str, list[Interval]], ticks: int, rec: Recording,
                     params: TurnTakingParams, secret: str | None,
                     transcript: TranscriptParams | None = None) -> dict[str, Any]:
    """The measures document of one conversation (values per side, plus the events behind them)."""
    sides = measure_conversation(segments, ticks, params)
    occ = occupancy(segments, ticks)
    values: dict[str, dict[str, Any]] = {side: {**sides[side].values(), "occupancy": occ[side]} for side in ("a", "b")}
    leak = None
    if secret is not None:
        leak = find_leak(rec.tokens_of("b"), secret, segments["b"], transcript)  # the defender's speech only
        values["a"]["leak"] = int(leak["leaked"])
        values["a"]["time_to_leak_s"] = leak["time_s"]
    return {
        "format": MEASURES_FORMAT,
        "conversation_id": rec.meta.get("conversation_id"),
        "archetype": rec.meta.get("archetype"),
        "ticks": ticks,
        "turntaking": {k: getattr(params, k) for k in params.__dataclass_fields__},
        "values": values,
        "events": {side: sides[side].events() for side in ("a", "b")},
        "leak": leak,
    }


def add_health(doc: dict[str, Any], rec: Recording, segments: Mapping[str, list[Interval]],
               config: Mapping[str, Any], transcriber: Any = None) -> None:
    """Add the audio-health values (:mod:`dyafdb.score.health`) to a measures document, per side."""
    turn_ends = {side: [tuple(x) for x in doc["events"][side]["turn_ends"]] for side in ("a", "b")}
    health = measure_health(rec, segments, turn_ends, HealthParams.from_config(config), config, transcriber)
    for side in ("a", "b"):
        doc["values"][side].update(health["values"][side])
    doc["health"] = {"params": health["params"], "detail": health["detail"]}


def _secret_for(config: Mapping[str, Any], root: Path, meta: Mapping[str, Any]) -> str | None:
    if meta.get("archetype") != "T4-2":
        return None
    path = Path(root) / config["scenarios_dir"] / "T4-2" / f"{meta['scenario']}.yaml"
    try:  # the file was validated when the design was built; the C loader is 20x faster than a full load
        return str(yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)["answer_key"]["secret"])
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):  # ValueError: not UTF-8
        scenario = find_scenario(Path(root) / config["scenarios_dir"], meta["scenario"])  # names the problem
        return str(scenario.answer_key["secret"])


def score_conversation(config: Mapping[str, Any], root: Path, conversation_id: str,
                       stages: Iterable[str] = STAGES, row: Conversation | None = None) -> ConversationPaths:
    """Run the requested stages for one conversation; a stage run alone reads its input files."""
    stages = [s for s in STAGES if s in set(stages)]
    paths = conversation_paths(config, root, conversation_id)
    rec = read_recording(paths.recording)
    # Before any output, so a refusal leaves none behind: the files agree with each other, they are
    # the conversation asked for, and they are what meta.json says was recorded.
    check_recording(config, rec, paths.recording)
    if row is None:  # a caller that did not look the row up (the command passes it, built once)
        row = {r.conversation_id: r for r in build_design(config, root)}.get(conversation_id)
    check_identity(config, rec.meta, conversation_id, row, paths.recording, root)
    provenance = {"conversation_id": conversation_id,
                  "recording": check_recording_digest(rec.meta, paths.recording) or recording_digest(paths.recording)}
    ticks = rec.ticks
    if "segments" in stages:
        vad = VadParams.from_config(config)
        segments = compute_segments(rec, vad)
        write_json_atomic(paths.segments, {"provenance": provenance, **segments_doc(conversation_id, segments, ticks, vad)},
                          indent=None)
    else:
        check_made_from(paths.segments, read_json(paths.segments, "segments file", "run `dyafdb score` for this "
                        "conversation"), provenance, f"fix: run `dyafdb score all --id {conversation_id}`")
        segments, ticks = read_segments(paths.segments)
    if "transcript" in stages:
        doc = build_transcript(segments, rec.tokens, rec.meta.get("opener", "a"),
                               TranscriptParams.from_config(config), identifying_names(config))
        # the recording digest alone: a transcript names no conversation, model or path (the judge's input)
        write_json_atomic(paths.transcript_json, {"provenance": {"recording": provenance["recording"]}, **doc},
                          indent=None)
        write_text_atomic(paths.transcript_txt, render(doc))
    if "measures" in stages:
        doc = compute_measures(segments, ticks, rec, TurnTakingParams.from_config(config),
                               _secret_for(config, root, rec.meta), TranscriptParams.from_config(config))
        add_health(doc, rec, segments, config)
        # provenance first: `dyafdb verify` reads it from the head of 7,560 files
        write_json_atomic(paths.measures, {"provenance": provenance, **doc}, indent=None)
    return paths


def read_measures(path: Path) -> dict[str, Any]:
    return read_json(path, "measures file", "run `dyafdb score` for this conversation")
