"""What the viewer reads for each conversation, from the files the pipeline wrote.

The site can be built at any stage: a conversation needs only a complete recording; segments,
transcript, measures and judge answers are shown when their files exist and marked missing when
they do not (the workflow builds the site after all of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from dyafdb.suite.design import Conversation
from dyafdb.fileio import read_json, read_jsonl
from dyafdb.judge.checks import check_conversation
from dyafdb.judge.rubric import judge_plan
from dyafdb.judge.runner import judge_output_path
from dyafdb.judge.settings import judge_settings
from dyafdb.record.recording import is_complete, read_meta
from dyafdb.suite.scenarios import Scenario, find_scenario
from dyafdb.errors import InputError
from dyafdb.score.conversation import conversation_paths
from dyafdb.score.vad import read_segments


@dataclass
class Sources:
    row: Conversation
    recording_dir: Path
    meta: dict[str, Any]
    scenario: Scenario
    segments: dict[str, list[tuple[int, int]]] | None
    transcript: dict[str, Any] | None
    measures: dict[str, Any] | None
    garble: dict[str, Any] | None
    judged: list[dict[str, Any]] = field(default_factory=list)  # judge records, in judge order, checked
    # (dyafdb.judge.checks: a row that failed a check carries "check", its record "checks")

    @property
    def speakers(self) -> dict[str, str]:
        """``{side: "A"|"B"}`` from the transcript (A spoke first); the opener is A without one."""
        if self.transcript:
            return {side: label for label, side in self.transcript["speakers"].items()}
        first = self.row.opener
        return {first: "A", ("b" if first == "a" else "a"): "B"}


Records = dict[str, list[dict[str, Any]]]


def read_judge_records(config: Mapping[str, Any], root: Path, archetypes: Sequence[str]) -> tuple[list[str], Records]:
    """The configured judges, and every judge record of these archetypes keyed by conversation id.

    A batch file that is missing (not judged yet) is skipped; a broken one stops with its path.
    """
    settings = judge_settings(config, root)
    by_conversation: Records = {}
    for judge in settings.run:
        for archetype, question in judge_plan(sorted(set(archetypes))):
            path = judge_output_path(config, root, judge, archetype, question)
            if not path.exists():
                continue
            fix = f"run `dyafdb judge --judge {judge} --archetype {archetype} --question {question}` again"
            for n, rec in read_jsonl(path, fix):
                if "conversation_id" not in rec:
                    raise InputError(f"{path}: line {n} is not a judge record (no field conversation_id); {fix}")
                by_conversation.setdefault(rec["conversation_id"], []).append(rec)
    return list(settings.run), by_conversation


def _optional_json(path: Path, what: str) -> dict[str, Any] | None:
    return read_json(path, what, "score the conversation again (`dyafdb score`)") if path.exists() else None


def load_sources(config: Mapping[str, Any], root: Path, row: Conversation, scenarios: dict[str, Scenario],
                 judged: Mapping[str, list[dict[str, Any]]]) -> Sources | None:
    """One conversation's files, or None when it has no complete recording yet."""
    paths = conversation_paths(config, root, row.conversation_id)
    if not is_complete(paths.recording):
        return None
    if row.scenario not in scenarios:
        scenarios[row.scenario] = find_scenario(Path(root) / config["scenarios_dir"], row.scenario)
    segments = read_segments(paths.segments)[0] if paths.segments.exists() else None
    garble_path = paths.recording / "garble.json"
    garble = _optional_json(garble_path, "garble report")
    # the judge checks, as where the answers become measures: a value that failed one is withheld
    text = paths.transcript_txt.read_text(encoding="utf-8") if paths.transcript_txt.exists() else ""
    checked = check_conversation(judged.get(row.conversation_id, []), scenarios[row.scenario].answer_key, text)
    return Sources(
        row=row, recording_dir=paths.recording, meta=read_meta(paths.recording), scenario=scenarios[row.scenario],
        segments=segments,
        transcript=_optional_json(paths.transcript_json, "transcript"),
        measures=_optional_json(paths.measures, "measures file"),
        garble=garble,
        judged=checked,
    )
