"""Which archetypes the text pairing plays and what Table 9 reads of each: declared here, once.

The names themselves are the section's schema (``config-text_pairing.schema.yaml``,
``archetypes``): its enum the archetypes a text run can play, its default the paper's four. The
rules (:mod:`dyafdb.text_pairing.inputs`), the commands and Table 9
(:func:`dyafdb.analysis.tables.table9_columns`) read the configured list and this module, so a
fifth archetype is one schema line and, when Table 9 must read it otherwise than by its task
score, one entry below.
"""

from __future__ import annotations

from typing import Sequence

from dyafdb.schema_check import load_schema

PLAYABLE: tuple[str, ...] = tuple(load_schema("config-text_pairing")["properties"]["archetypes"]["items"]["enum"])

# The per-run indicator Table 9 reads where it is not the task score: T3-2's spoken score is how
# long the presser held the channel, and text has no channel to hold, so the presser's agreement rate.
INDICATOR: dict[str, str] = {"T3-2": "success"}


def table9_reads(archetypes: Sequence[str]) -> list[tuple[str, str]]:
    """(archetype, per-run indicator) for each archetype the text pairing played, in the declared order."""
    unknown = sorted(set(archetypes) - set(PLAYABLE))
    if unknown:
        raise ValueError(f"text pairing archetypes {unknown} are not among those it can play ({', '.join(PLAYABLE)})")
    return [(a, INDICATOR.get(a, "score")) for a in PLAYABLE if a in archetypes]
