"""API keys kept out of everything the LLM layer hands on: reply text, error text, endpoints.

A server may quote a key back in any reply, not only in an error: a gateway echoing the request, a
model repeating its prompt, a debugging proxy. Scrubbing only error text let keys echoed in
successful replies reach the reply cache, the judge's JSONL answers and the viewer's pages. So the
two types through which anything from a server enters the pipeline, :class:`~dyafdb.llm.base.Reply`
and :class:`~dyafdb.llm.base.LLMError`, scrub themselves when made, and every consumer downstream
(cache, JSONL, transcripts, pages, logs) only ever sees scrubbed text.

Which keys: the value of every environment variable any configured model names as its
``api_key_env`` (judges and text-pairing models register theirs when their config is read, so a
reply from one judge that quotes another's key is scrubbed too), every key a client has read, and
the SDKs' own variables ``ANTHROPIC_API_KEY`` and ``OPENAI_API_KEY``. Besides the key itself its
simple encodings are removed: URL-encoded, hex, and base64 (standard and URL-safe, at each of the
three byte alignments a key can have inside a longer encoded text).

The SDKs' and httpx's own loggers get the same scrubbing (:func:`guard_sdk_logs`): httpx logs every
request's URL at INFO, and a gateway URL may carry a key in its user part or its query.

Values shorter than :data:`MIN_SECRET_CHARS` are not scrubbed: local servers take placeholder keys
such as ``EMPTY`` or ``none``, and removing those words from every reply would garble the answers.
"""

from __future__ import annotations

import base64
import functools
import logging
import os
import re
import threading
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

REDACTED = "***"
MIN_SECRET_CHARS = 8
SDK_KEY_ENVS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")

_lock = threading.Lock()
_env_names: set[str] = set(SDK_KEY_ENVS)
_values: set[str] = set()


def register_key_env(name: str | None) -> None:
    """Scrub the value of environment variable ``name`` (read at each scrub, so a key set later counts)."""
    if name:
        with _lock:
            _env_names.add(name)


def register_key(value: str | None) -> None:
    """Scrub ``value`` for the rest of the process, whatever the environment holds later."""
    if value and value.strip():
        with _lock:
            _values.add(value.strip())


def _secrets() -> list[str]:
    with _lock:
        found = set(_values)
        names = list(_env_names)
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            found.add(value)
    # Longest first, so a key that contains another is removed whole.
    return sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=lambda s: (-len(s), s))


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 text that encodes ``raw`` wherever it sits in a longer encoded text: for each of the
    three alignments, the 4-character groups made of ``raw``'s bytes alone (the groups at its edges
    also carry the neighbours' bits, and so differ from text to text)."""
    cores: set[str] = set()
    for shift in range(3):
        padded = b"\0" * shift + raw
        first = -(-shift // 3)  # the first 3-byte group that holds no padding
        last = len(padded) // 3  # groups past this one hold bytes after the key
        if last <= first:
            continue
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(padded).decode("ascii")
            cores.add(text[4 * first:4 * last])
    return {c for c in cores if len(c) >= MIN_SECRET_CHARS}


@functools.lru_cache(maxsize=64)
def _pattern(secret: str) -> re.Pattern[str]:
    raw = secret.encode("utf-8")
    exact = {secret, quote(secret, safe=""), quote_plus(secret), *_base64_cores(raw)}
    # Hex digits and %XX escapes are written in either case.
    folded = {raw.hex(), "".join(f"%{b:02x}" for b in raw)}
    parts = [re.escape(v) for v in sorted(exact, key=len, reverse=True)]
    parts += [f"(?i:{re.escape(v)})" for v in sorted(folded, key=len, reverse=True)]
    return re.compile("|".join(parts))


def scrub(text: str) -> str:
    """``text`` with every registered key, and its simple encodings, replaced by ``***``."""
    if not text:
        return text
    for secret in _secrets():
        text = _pattern(secret).sub(REDACTED, text)
    return text


SDK_LOGGERS = ("anthropic", "openai", "httpx2", "httpcore2", "httpx", "httpcore")


class _ScrubLogs(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_LOG_FILTER = _ScrubLogs()


def guard_sdk_logs() -> None:
    """Scrub the records of every SDK and httpx logger that exists (they exist once the SDK is
    imported). A filter sits on the logger that makes a record, not on its parents, hence each one."""
    for name in list(logging.root.manager.loggerDict):
        if name.split(".")[0] in SDK_LOGGERS:
            logger = logging.getLogger(name)
            if _LOG_FILTER not in logger.filters:
                logger.addFilter(_LOG_FILTER)


def public_endpoint(url: str | None) -> str:
    """``url`` as messages may name it: no user, password, query or fragment (where gateways put keys)."""
    if not url:
        return "the default endpoint"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return scrub(urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", "")) or url)
    except ValueError:
        return "an endpoint whose URL does not parse"


__all__ = ["MIN_SECRET_CHARS", "REDACTED", "guard_sdk_logs", "public_endpoint", "register_key", "register_key_env",
           "scrub"]
