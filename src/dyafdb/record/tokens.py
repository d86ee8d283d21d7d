"""Joining a text channel's tokens into readable text.

A channel whose tokens carry their own spacing (SentencePiece pieces such as ``" Hel"`` ``"lo"`` or
``"\u2581Hel"``) is concatenated; a channel of bare words is joined with spaces. The recorder's garble
watcher and the scoring stage's transcript both read text this way, so it lives with the recording.
"""

from __future__ import annotations

from typing import Iterable, Sequence


def token_mode(texts: Iterable[str]) -> str:
    """``"pieces"`` when tokens carry their own spacing, else ``"words"`` (see module doc).

    Blank tokens say nothing about the mode and are ignored here.
    """
    for t in texts:
        if t.strip() and (t[0].isspace() or t[-1].isspace() or "\u2581" in t):
            return "pieces"
    return "words"


def join_with_offsets(texts: Sequence[str], mode: str) -> tuple[str, list[int]]:
    """Joined text and, per token, the character offset where that token's text ends."""
    parts: list[str] = []
    ends: list[int] = []
    length = 0
    for t in texts:
        if mode == "pieces":
            piece = t.replace("\u2581", " ")
        else:
            piece = t.strip()
            if piece and parts:
                piece = " " + piece
        parts.append(piece)
        length += len(piece)
        ends.append(length)
    return "".join(parts), ends


def join_tokens(texts: Sequence[str], mode: str | None = None) -> str:
    """Tokens as readable text with whitespace collapsed."""
    text, _ = join_with_offsets(texts, mode or token_mode(texts))
    return " ".join(text.split())
