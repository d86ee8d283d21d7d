"""What the record rules (workflow/rules/record.smk) plan: each recording's inputs, params and resources.

Kept out of the rules file so it holds rules only; everything here runs while Snakemake plans (once
per conversation, 7,560 in the paper's suite), so it is cheap or cached. Which conversations share
engines on a cluster is dyafdb.record.engine_groups; this reads it through ``engines``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from dyafdb.record.engine_groups import EngineGroups
from dyafdb.record.spec import inputs_digest, model_digests, recording_inputs
from dyafdb.schema_check import model_default


class RecordingInputs:
    def __init__(self, config: Mapping[str, Any], conversations: Mapping[str, Any], engines: EngineGroups):
        self.config = config
        self.conversations = conversations
        self.engines = engines
        self.scenarios_dir = config["scenarios_dir"]
        self.model_digests = model_digests(config)
        self._gpus: dict[tuple[str, str, str | None], tuple[int, str | None]] = {}
        # Without a model that has an `engine` section no record job joins an engine: its engine
        # input, environment and group are then constants, not three functions Snakemake calls per job.
        self.uses_engines = bool(engines.engined(list(config["models"])))

    @property
    def engine_inputs(self) -> dict[str, Callable[[Any], list[str]]]:
        """The engine sockets a record job waits for (in an engine node group), as the rule's named input."""
        return {"engines": self.engines.record_engines} if self.uses_engines else {}

    @property
    def engine_env(self) -> Callable[[Any], str] | str:
        """Where a record job's engines listen (the shell command's prefix; empty without engines)."""
        return self.engines.record_env if self.uses_engines else ""

    @property
    def group(self) -> Callable[[Any], str | None] | None:
        """The record rule's group: its engine node group's, if any."""
        return self.engines.record_group if self.uses_engines else None

    def conversation(self, wildcards: Any) -> Any:
        return self.conversations[wildcards.conversation]

    def scenario_file(self, wildcards: Any) -> str:
        row = self.conversation(wildcards)
        return f"{self.scenarios_dir}/{row.archetype}/{row.scenario}.yaml"

    def params(self, wildcards: Any) -> str:
        """What a recording is made from, as one digest (dyafdb.record.spec: its design row, its two
        models' entries, its scenario's content, the lead-in, the garble watcher's settings where a
        model is checked); meta.json records the same digest, so the plan and the files agree."""
        return inputs_digest(recording_inputs(self.config, self.conversation(wildcards), models=self.model_digests))

    def pair_gpus(self, model_a: str, model_b: str, site_gpu_model: str | None = None) -> tuple[int, str | None]:
        """GPUs of a record job and the GPU model to ask for: the site's, else one both models declare."""
        key = (model_a, model_b, site_gpu_model)
        if key not in self._gpus:
            declared = [(self.config["models"][m].get("resources") or {}) for m in (model_a, model_b)]
            gpus = sum(int(r.get("gpus", model_default("resources", "gpus"))) for r in declared)
            models = {r["gpu_model"] for r in declared if r.get("gpus") and r.get("gpu_model")}
            self._gpus[key] = gpus, site_gpu_model or (models.pop() if len(models) == 1 else None)
        return self._gpus[key]

    def site_resources(self, partition: str | None, gpu_partition: str | None, account: str | None,
                       gpu_model: str | None) -> dict[str, Any]:
        """The SLURM site resources of a record job (README "Running on a SLURM cluster"): a job whose
        two models need no GPU is a CPU job (CPU partition, no GPU model: the plugin would otherwise
        ask for --gpus=<model>:0). Constants where the answer is the same for every job (one partition
        or none; no GPU model anywhere): Snakemake calls a resource function for each of the 7,560
        record jobs while it plans."""
        def gpus(wildcards: Any) -> tuple[int, str | None]:
            row = self.conversation(wildcards)
            return self.pair_gpus(row.model_a, row.model_b, gpu_model)

        site: dict[str, Any] = {"slurm_account": account} if account else {}
        site["slurm_partition"] = gpu_partition if gpu_partition == partition else \
            (lambda wc: (gpu_partition if gpus(wc)[0] else partition) or None)
        if gpu_model or any((m.get("resources") or {}).get("gpu_model") for m in self.config["models"].values()):
            site["gpu_model"] = lambda wc: gpus(wc)[1] if gpus(wc)[0] else None
        return {k: v for k, v in site.items() if v is not None}

    def engine_site_resources(self, partition: str | None, gpu_partition: str | None, account: str | None,
                              gpu_model: str | None) -> dict[str, Any]:
        """An engine job's site resources: one SLURM job has one partition and GPU model, its record jobs'."""
        def gpus(wildcards: Any) -> tuple[int, str | None]:
            return self.pair_gpus(*self.engines.engine_pair(wildcards), gpu_model)

        partition_of: Callable[[Any], str | None] = lambda wc: (gpu_partition if gpus(wc)[0] else partition) or None
        return {**({"slurm_account": account} if account else {}), "slurm_partition": partition_of,
                "gpu_model": lambda wc: gpus(wc)[1] if gpus(wc)[0] else None}
