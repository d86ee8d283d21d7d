"""The annotation study's files: ``annotate/study.js`` (item code -> conversation and questions, for
the export), ``annotate/index.html`` and ``annotation-sample.tsv`` (the sample, for whoever runs
the study).

The conversation id is in study.js only base64-encoded: not secret (the export needs it, and
anyone can decode it), only not readable at a glance, so a rater looking at the files does not
meet a model name by accident. The item pages themselves never hold it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Mapping, Sequence

from dyafdb.viewer.sampler import Pick


def encode_ref(conversation_id: str) -> str:
    return base64.b64encode(conversation_id.encode("utf-8")).decode("ascii")


def study_doc(picks: Sequence[Pick], questions: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``{study, items: [{code, ref, q: [[seat, measure], ...]}]}``; ``study`` names the sample, so
    answers to two different samples never share a browser storage entry."""
    items = [{"code": p.code, "ref": encode_ref(p.conversation_id),
              "q": [[q["seat"], q["measure"]] for q in questions.get(p.code, [])]} for p in picks]
    fingerprint = json.dumps([[p.code, p.conversation_id, it["q"]] for p, it in zip(picks, items)], sort_keys=True)
    return {"study": hashlib.sha256(fingerprint.encode()).hexdigest()[:12], "items": items}


def study_js(doc: Mapping[str, Any]) -> str:
    return f"window.DYAFDB_STUDY = {json.dumps(doc, separators=(',', ':'))};\n"


def sample_tsv(picks: Sequence[Pick]) -> str:
    lines = ["code\tconversation_id\tarchetype\tpairing\tseats"]
    lines += [f"{p.code}\t{p.conversation_id}\t{p.archetype}\t{p.pairing}\t{','.join(p.seats)}" for p in picks]
    return "\n".join(lines) + "\n"
