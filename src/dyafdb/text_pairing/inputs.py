"""What the text pairing's rules (workflow/rules/text_pairing.smk) read: inputs, params and threads per rule.

Cheap by design: it runs while Snakemake plans. The archetypes are the configured
``text_pairing.archetypes`` (the schema fills in the paper's four) that the design holds.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, Mapping

from dyafdb.judge.inputs import JudgeInputs
from dyafdb.paths import Results
from dyafdb.text_pairing.pairing import text_questions


class TextPairingInputs:
    def __init__(self, config: Mapping[str, Any], conversations: Mapping[str, Any], results: str):
        self.config = config
        self.results = Results(results)
        self.section: Mapping[str, Any] = config["text_pairing"]  # validated: the schema filled its defaults
        self.judging = JudgeInputs(config, conversations, results)
        self.judges = self.judging.judges
        scenarios: dict[str, set[str]] = {}
        for row in conversations.values():
            scenarios.setdefault(row.archetype, set()).add(f"{config['scenarios_dir']}/{row.archetype}/{row.scenario}.yaml")
        self.scenario_files = {a: sorted(files) for a, files in scenarios.items()}
        self.design_tasks = sorted(scenarios)
        self.tasks = [t for t in self.section["archetypes"] if t in scenarios]

    def scenarios(self, wildcards: Any) -> list[str]:
        """The scenario files one archetype's text conversations are played from."""
        return self.scenario_files.get(wildcards.task, [])

    @property
    def measures(self) -> list[str]:
        """Every text measures table Table 9 reads."""
        return [self.results.text_measures(t) for t in self.tasks]

    @property
    def speech_runs(self) -> list[str]:
        """The speech models' per-run tables of the same archetypes, set beside them in Table 9; every
        archetype's when the design has none of these, so the table is still written (empty)."""
        return [self.results.analysis_runs(t) for t in (self.tasks or self.design_tasks)]

    def settings(self) -> str:
        """What a text conversation depends on, as a params string (the judge is the score rule's)."""
        return json.dumps({k: v for k, v in self.section.items() if k != "judge"}, sort_keys=True, default=str)

    def generate_threads(self, wildcards: Any = None) -> int:
        """CPU threads of the in-process text models (they take turns, so the most any one uses)."""
        local = [int(m["threads"]) for m in (self.section.get("models") or {}).values() if m["backend"] == "llamacpp"]
        return max(local, default=1)

    def judge_templates(self, wildcards: Any) -> list[str]:
        return [f"{self.judges.prompts_dir}/{q}.txt" for q in text_questions(wildcards.task)]

    def judge_threads(self, wildcards: Any = None) -> int:
        name = self.section.get("judge") or self.judges.main_judge
        spec = self.judges.judges.get(name) if name else None
        return spec.threads if spec is not None and spec.backend == "llamacpp" else 1

    def judge(self) -> str:
        """The text judge's name and what its answers depend on, as the judge rule's params say it (a
        default the schema gains, or another judge's settings, reruns nothing)."""
        name = self.section.get("judge") or self.judges.main_judge
        known = name in self.judges.judges
        return json.dumps({"judge": name, "spec": self.judging.spec(SimpleNamespace(judge=name)) if known else None},
                          sort_keys=True, default=str)
