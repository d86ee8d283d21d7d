"""What the scoring and judge rules (workflow/rules/score.smk, judge.smk) plan: inputs and params.

Kept out of the rules files so they hold rules only; everything here is cheap, since it runs
while Snakemake plans (7,560 conversations in the paper's suite).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from dyafdb.judge.rubric import judge_plan
from dyafdb.judge.settings import judge_settings
from dyafdb.score.transcript import identifying_names


def mechanical_table_path(results: str, archetype: str) -> str:
    """One archetype's mechanical table (also a Snakemake pattern with archetype="{archetype}")."""
    return f"{results}/scores/mechanical/{archetype}.tsv"


class ScoringPlan:
    def __init__(self, config: Mapping[str, Any], conversations: Mapping[str, Any], results: str):
        self.config = config
        self.results = results
        self.conversations = conversations
        self.ids = sorted(conversations)
        self.judges = judge_settings(config)
        self.by_archetype: dict[str, list[str]] = {}
        for cid in self.ids:
            self.by_archetype.setdefault(conversations[cid].archetype, []).append(cid)
        self.plan = judge_plan(sorted(self.by_archetype))
        self.prompts_dir = str(self.judges.prompts_dir)
        # What scoring depends on besides the recording and its scenario: a change here rescores.
        self.score_settings = json.dumps({
            "vad": config.get("vad"), "transcript": config.get("transcript"),
            "turntaking": config.get("turntaking") or {}, "redact": identifying_names(config),
            "health": config.get("health") or {},
            "asr": {k: (config.get("garble") or {}).get(k) for k in ("model", "min_word_chars", "language", "beam_size",
                                                                      "compute_type")},
        }, sort_keys=True)

    def archetype_measures(self, wildcards: Any) -> list[str]:
        return [f"{self.results}/measures/{c}.json" for c in self.by_archetype.get(wildcards.archetype, [])]

    @property
    def mechanical_table(self) -> str:
        """The rule's output pattern."""
        return mechanical_table_path(self.results, "{archetype}")

    @property
    def mechanical_tables(self) -> list[str]:
        """Every archetype's mechanical table, in archetype order (the order of the whole table)."""
        return [mechanical_table_path(self.results, a) for a in sorted(self.by_archetype)]

    @property
    def judge_outputs(self) -> list[str]:
        return [f"{self.results}/judge/{j}/{a}/{q}.jsonl" for j in self.judges.run for a, q in self.plan]

    def judge_scenarios(self, wildcards: Any) -> list[str]:
        rows = [self.conversations[c] for c in self.by_archetype.get(wildcards.archetype, [])]
        return sorted({f"{self.config['scenarios_dir']}/{r.archetype}/{r.scenario}.yaml" for r in rows})

    def judge_spec(self, wildcards: Any) -> str:
        """A judge batch's backend, model and parsing policy (not its pace): a change reruns its batches."""
        spec = self.judges.judge(wildcards.judge)
        return json.dumps({"spec": {k: v for k, v in vars(spec).items() if k not in ("concurrency", "batch_poll_s", "threads")},
                           "label_retries": self.judges.label_retries}, sort_keys=True, default=str)

    def judge_mem(self, wildcards: Any) -> int:
        return 2000 if self.judges.judge(wildcards.judge).backend == "llamacpp" else 1000

    def judge_threads(self, wildcards: Any) -> int:
        spec = self.judges.judge(wildcards.judge)
        return spec.threads if spec.backend == "llamacpp" else 1
