"""What the judge rule (workflow/rules/judge.smk) plans: its batches, inputs and params.

Cheap by design: it runs while Snakemake plans.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from dyafdb.judge.rubric import judge_plan
from dyafdb.judge.settings import judge_settings
from dyafdb.paths import Results


class JudgeInputs:
    def __init__(self, config: Mapping[str, Any], conversations: Mapping[str, Any], results: str):
        self.config = config
        self.results = Results(results)
        self.conversations = conversations
        self.judges = judge_settings(config)
        self.by_archetype: dict[str, list[str]] = {}
        for cid in sorted(conversations):
            self.by_archetype.setdefault(conversations[cid].archetype, []).append(cid)
        self.plan = judge_plan(sorted(self.by_archetype))
        self.prompts_dir = str(self.judges.prompts_dir)

    @property
    def output(self) -> str:
        """The rule's output pattern."""
        return self.results.judge_output("{judge}", "{archetype}", "{question}")

    @property
    def outputs(self) -> list[str]:
        """Every judge batch the design needs, for the judges the config runs."""
        return [self.results.judge_output(j, a, q) for j in self.judges.run for a, q in self.plan]

    def outputs_of(self, archetype: str) -> list[str]:
        """One archetype's batches (what its per-run analysis table reads)."""
        return [self.results.judge_output(j, a, q) for j in self.judges.run for a, q in judge_plan([archetype])]

    def scenarios(self, wildcards: Any) -> list[str]:
        rows = [self.conversations[c] for c in self.by_archetype.get(wildcards.archetype, [])]
        return sorted({f"{self.config['scenarios_dir']}/{r.archetype}/{r.scenario}.yaml" for r in rows})

    def spec(self, wildcards: Any) -> str:
        """A judge batch's backend, model and parsing policy (not its pace): a change reruns its batches."""
        spec = self.judges.judge(wildcards.judge)
        return json.dumps({"spec": {k: v for k, v in vars(spec).items() if k not in ("concurrency", "batch_poll_s", "threads")},
                           "label_retries": self.judges.label_retries}, sort_keys=True, default=str)

    def mem(self, wildcards: Any) -> int:
        return 2000 if self.judges.judge(wildcards.judge).backend == "llamacpp" else 1000

    def threads(self, wildcards: Any) -> int:
        spec = self.judges.judge(wildcards.judge)
        return spec.threads if spec.backend == "llamacpp" else 1
