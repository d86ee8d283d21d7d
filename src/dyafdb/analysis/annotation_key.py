"""The blind study's key file: what maps the opaque item tokens of an annotation site back to
conversations. The viewer writes it beside the site folder (never inside: the site is what raters
receive, :mod:`dyafdb.viewer.study`); the agreement analysis reads it to place the human labels.

``{"format": "dyafdb-annotation-key/1", "salt": <hex>, "study": <id>, "items": [{"code",
"item" (the token), "conversation_id", "archetype", "pairing", "seats"}]}``
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dyafdb.errors import InputError

KEY_FORMAT = "dyafdb-annotation-key/1"


def key_file_for(site: Path) -> Path:
    """A site's key file: beside the site folder, never inside it."""
    site = Path(site)
    return site.parent / f"{site.name}-annotation-key.json"


def read_key(path: Path) -> dict[str, Any] | None:
    """The key file's content, or None when there is none yet."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not an annotation key ({exc}); delete it to start a new study") from None
    if not isinstance(doc, dict) or doc.get("format") != KEY_FORMAT or not isinstance(doc.get("salt"), str):
        raise InputError(f"{path}: not an annotation key (expected format {KEY_FORMAT}); delete it to start a new study")
    return doc


def token_map(path: Path) -> dict[str, str]:
    """item token -> conversation id."""
    doc = read_key(path)
    if doc is None:
        raise InputError(f"{path}: annotation key not found; the human labels name items by token and only the "
                         "key written beside the site by `dyafdb viewer` maps them back (set analysis.annotation_key)")
    return {it["item"]: it["conversation_id"] for it in doc.get("items", [])}


def token_maps(key: Path) -> dict[str, str]:
    """item token -> conversation id from ``key`` and every other key file beside it (a full site and
    an annotation-only site each have their own salt and key; tokens of different salts never clash)."""
    key = Path(key)
    paths = [key] + sorted(p for p in key.parent.glob("*-annotation-key.json") if p != key)
    found = [p for p in paths if p.exists()]
    if not found:
        return token_map(key)  # raises, naming the key looked for
    tokens: dict[str, str] = {}
    for path in found:
        tokens.update(token_map(path))
    return tokens
