"""What the score rules (workflow/rules/score.smk) plan: inputs and params.

Kept out of the rules file so it holds rules only; everything here is cheap, since it runs while
Snakemake plans (7,560 conversations in the paper's suite). The judge's part is dyafdb.judge.inputs.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from dyafdb.paths import Results
from dyafdb.score.transcript import identifying_names


class ScoringInputs:
    def __init__(self, config: Mapping[str, Any], conversations: Mapping[str, Any], results: str):
        self.config = config
        self.results = Results(results)
        self.conversations = conversations
        self.ids = sorted(conversations)
        self.by_archetype: dict[str, list[str]] = {}
        for cid in self.ids:
            self.by_archetype.setdefault(conversations[cid].archetype, []).append(cid)
        # What scoring depends on besides the recording and its scenario: a change here rescores.
        self.score_settings = json.dumps({
            "vad": config.get("vad"), "transcript": config.get("transcript"),
            "turntaking": config.get("turntaking") or {}, "redact": identifying_names(config),
            "health": config.get("health") or {},
            "asr": {k: (config.get("garble") or {}).get(k) for k in ("model", "min_word_chars", "language", "beam_size",
                                                                      "compute_type")},
        }, sort_keys=True)

    def archetype_measures(self, wildcards: Any) -> list[str]:
        return [self.results.measures_json(c) for c in self.by_archetype.get(wildcards.archetype, [])]

    @property
    def mechanical_table(self) -> str:
        """The rule's output pattern."""
        return self.results.mechanical_table("{archetype}")

    @property
    def mechanical_tables(self) -> list[str]:
        """Every archetype's mechanical table, in archetype order (the order of the whole table)."""
        return [self.results.mechanical_table(a) for a in sorted(self.by_archetype)]
