"""After a seat's conversation: score it, optionally judge it, and build its viewer page, so a
person sees their conversation measured a minute later (the stages' own functions, unchanged)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Mapping, Sequence

from dyafdb.judge.rubric import judge_plan
from dyafdb.judge.runner import run_batch
from dyafdb.judge.settings import judge_settings
from dyafdb.paths import results_of
from dyafdb.record.recording import is_complete
from dyafdb.score.conversation import score_conversation
from dyafdb.suite.design import Conversation
from dyafdb.viewer.layout import conversation_page
from dyafdb.viewer.settings import viewer_settings
from dyafdb.viewer.site import build_site


def site_dir(config: Mapping[str, Any], root: Path) -> Path:
    return Path(viewer_settings(config, root).out)


def score_and_view(config: Mapping[str, Any], root: Path, row: Conversation, rows: Sequence[Conversation],
                   judge: bool) -> dict[str, Any]:
    """Score ``row``; with ``judge``, ask the config's judges about every recorded row of ``rows`` of its
    archetype; rebuild the viewer for the recorded rows. Returns the page's path under the site."""
    score_conversation(config, root, row.conversation_id)
    recorded = [r for r in rows if is_complete(Path(results_of(config, root).recording(r.conversation_id)))]
    for other in recorded:
        if other.conversation_id != row.conversation_id and not Path(results_of(config, root).measures_json(other.conversation_id)).exists():
            score_conversation(config, root, other.conversation_id)
    log = io.StringIO()
    if judge:
        same = [r for r in recorded if r.archetype == row.archetype]
        for name in judge_settings(config, root).run:
            for archetype, qid in judge_plan([row.archetype]):
                run_batch(config, root, name, archetype, qid, rows=same, log=log)
    build_site(config, root, ids=[r.conversation_id for r in recorded], log=log)
    return {"page": conversation_page(row.conversation_id), "judged": judge, "log": log.getvalue()}
