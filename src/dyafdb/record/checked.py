"""The record-and-check loop: record a conversation, run the garble watcher on its checked sides,
record again while flagged (dyafdb.record.garble has the watcher and the rules; this module drives
the recorder with it).

The recorder (dyafdb.record.conversation) knows nothing of the watcher, and the watcher nothing of
the recorder; only this module imports both.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from dyafdb.fileio import write_json_atomic
from dyafdb.paths import sharded
from dyafdb.record.conversation import AgentPool, record_conversation
from dyafdb.record.garble import (FORMAT, GarbleSettings, Transcriber, check_side, checked_sides, load_transcriber,
                                  verdict)
from dyafdb.record.recording import FILES, publish, read_meta, read_recording, recording_lock, staging_dir, write_meta
from dyafdb.suite.design import Conversation


def record_checked(config: Mapping[str, Any], row: Conversation, out_dir: Path, pool: Any, root: Path = Path("."),
                   transcriber: Transcriber | None = None,
                   record: Callable[..., dict[str, Any]] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Record ``row``, run the watcher on its marked sides, re-record while flagged; write garble.json.

    Every attempt, the verdict and the rejected attempts are built in a staging folder that replaces
    ``out_dir`` in one step once the verdict is known (:func:`dyafdb.record.recording.publish`), so a
    kill during the Whisper check or a failed re-record leaves the previous recording, verdict
    included, as it was. meta.json carries the verdict too (``garble``), so it survives a lost
    garble.json and scoring can tell a checked recording from an unchecked one.
    """
    record = record or record_conversation
    settings = GarbleSettings.from_config(config)
    out_dir = Path(out_dir)
    sides = checked_sides(config, row)
    staged = staging_dir(out_dir)
    try:
        attempts: list[dict[str, Any]] = []
        attempt = row.attempt
        while True:
            attempt_dir = staged / "attempts" / f"attempt-{attempt}"
            meta = record(config, row, attempt_dir, pool, root, attempt=attempt)
            if not sides:
                break
            if transcriber is None:
                transcriber = load_transcriber(settings)
            rec = read_recording(attempt_dir)
            results = {side: check_side(rec, side, settings, transcriber) for side in sides}
            flagged = any(r["flagged"] for r in results.values())
            attempts.append({"attempt": attempt, "seeds": meta.get("seeds"), "flagged": flagged, "sides": results})
            if not flagged or attempt - row.attempt + 1 >= settings.recordings:
                break
            attempt += 1
        status = "not_checked" if not sides else ("failed" if attempts[-1]["flagged"] else "ok")
        doc = {
            "format": FORMAT,
            "conversation_id": row.conversation_id,
            "checked_sides": sides,
            "settings": {**asdict(settings), "model": str(settings.model_path()) if sides else settings.model},
            "attempts": attempts,
            "accepted_attempt": attempt,
            "status": status,
        }
        accepted = staged / "attempts" / f"attempt-{attempt}"
        accepted_meta = read_meta(accepted)
        for name in FILES:
            if name != "meta.json":
                (accepted / name).replace(staged / name)
        for earlier in range(row.attempt, attempt):
            if settings.keep_rejected:
                (staged / "rejected").mkdir(exist_ok=True)
                (staged / "attempts" / f"attempt-{earlier}").replace(staged / "rejected" / f"attempt-{earlier}")
        shutil.rmtree(staged / "attempts")
        write_json_atomic(staged / "garble.json", doc)
        meta = write_meta(staged, {**accepted_meta, "garble": verdict(doc)})
        publish(staged, out_dir)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return meta, doc


def record_many_checked(config: Mapping[str, Any], rows: Iterable[Conversation], out_root: Path,
                        root: Path = Path("."), log_dir: Path | None = None) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``record_many`` with the watch loop: models load once per job and are reused for re-recording."""
    done: list[Any] = []
    with AgentPool(dict(config), log_dir) as pool:
        for row in rows:
            out_dir = Path(sharded(str(out_root), row.conversation_id))
            with recording_lock(out_dir):  # one writer per recording, from the bridge run to publish
                done.append(record_checked(config, row, out_dir, pool, root))
    return done
