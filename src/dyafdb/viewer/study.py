"""The annotation study's files, sealed: ``annotate/study.js`` (item code -> an opaque token and the
questions), ``annotate/index.html``, and the key that maps tokens back to conversations, kept
outside the site (``<site>-annotation-key.json`` beside the site folder).

Nothing a rater receives names a conversation or a model in any form: study.js holds per-study
tokens (an HMAC of the conversation id under the site's secret salt, so they decode to nothing),
media files are named by a salted hash too (:func:`dyafdb.viewer.media.media_key`), and the
annotation page exports ``rater, item, seat, measure, label`` with the token as ``item``. The
agreement analysis maps tokens back through the key file (``analysis.annotation_key``, by default
the key beside the configured site). The salt is made once per site and kept in the key file, so a
rebuild keeps every token, media name and rater's stored answers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from pathlib import Path
from typing import Any, Mapping, Sequence

from dyafdb.analysis.annotation_key import KEY_FORMAT, key_file_for, read_key
from dyafdb.fileio import write_text_atomic
from dyafdb.viewer.sampler import Pick


def key_file(site: Path) -> Path:
    """The key file of a site: beside the site folder, never inside it (the site is what raters get)."""
    return key_file_for(Path(site))


def site_salt(path: Path) -> str:
    """The site's secret salt: from its key file, else a new one."""
    doc = read_key(path)
    return doc["salt"] if doc else secrets.token_hex(16)


def _mac(salt: str, *parts: str) -> str:
    return hmac.new(bytes.fromhex(salt), "\x1f".join(parts).encode("utf-8"), hashlib.sha256).hexdigest()


def item_token(salt: str, conversation_id: str) -> str:
    """An item's token in the study files: says nothing without the key."""
    return _mac(salt, "item", conversation_id)[:20]


def study_doc(picks: Sequence[Pick], questions: Mapping[str, list[dict[str, Any]]], salt: str) -> dict[str, Any]:
    """``{study, items: [{code, ref, q: [[seat, measure], ...]}]}``; ``study`` names the sample, so
    answers to two different samples never share a browser storage entry."""
    items = [{"code": p.code, "ref": item_token(salt, p.conversation_id),
              "q": [[q["seat"], q["measure"]] for q in questions.get(p.code, [])]} for p in picks]
    fingerprint = json.dumps([[it["code"], it["ref"], it["q"]] for it in items], sort_keys=True)
    return {"study": _mac(salt, "study", fingerprint)[:12], "items": items}


def study_js(doc: Mapping[str, Any]) -> str:
    return f"window.DYAFDB_STUDY = {json.dumps(doc, separators=(',', ':'))};\n"


def write_key(path: Path, salt: str, picks: Sequence[Pick], study: Mapping[str, Any] | None) -> None:
    """The key: salt, study id and, per item, its code, token, conversation, archetype, pairing, seats."""
    items = [{"code": p.code, "item": item_token(salt, p.conversation_id), "conversation_id": p.conversation_id,
              "archetype": p.archetype, "pairing": p.pairing, "seats": list(p.seats)} for p in picks]
    doc = {"format": KEY_FORMAT, "salt": salt, "study": (study or {}).get("study"), "items": items}
    write_text_atomic(Path(path), json.dumps(doc, indent=1) + "\n")
