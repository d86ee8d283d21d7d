"""Comparing what a model wrote with what it said: word lists, the garble watcher's share, and WER.

A leaf, so the recorder's garble watcher (:mod:`dyafdb.record.garble`) and the scoring's audio health
(:mod:`dyafdb.score.health`) count words the same way without one importing the other.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

_WORD = re.compile(r"[0-9a-z']+")


def words(text: str) -> list[str]:
    """Lower-cased words (letters, digits, apostrophes inside) of ``text``."""
    return [w.strip("'") for w in _WORD.findall(text.lower()) if w.strip("'")]


def share(text: str, transcript: str, min_chars: int = 4) -> dict[str, Any]:
    """Share of ``text``'s words of at least ``min_chars`` characters found in ``transcript``."""
    heard = set(words(transcript))
    wanted = [w for w in words(text) if len(w) >= min_chars]
    found = sum(1 for w in wanted if w in heard)
    return {"share": (found / len(wanted)) if wanted else None, "words": len(wanted), "found": found}


def edit_distance(reference: Sequence[str], hypothesis: Sequence[str]) -> int:
    """Fewest substitutions, deletions and insertions turning ``reference`` into ``hypothesis``."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i] + [0] * len(hypothesis)
        for j, hyp in enumerate(hypothesis, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp))
        previous = current
    return previous[-1]


def wer(text: str, transcript: str) -> dict[str, Any]:
    """Word error rate of ``transcript`` against the reference ``text`` (all words, normalised as
    :func:`words`); None when the text has no word. It can exceed 1 (insertions)."""
    ref, hyp = words(text), words(transcript)
    errors = edit_distance(ref, hyp)
    return {"wer": (errors / len(ref)) if ref else None, "words": len(ref), "errors": errors}
