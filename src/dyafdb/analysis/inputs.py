"""What the analysis rules (workflow/rules/analysis.smk) plan: inputs per rule, from the config and design.

Kept out of the Snakefile so the rules file holds rules only; every method here is cheap (it runs
once per job while Snakemake plans).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from dyafdb.analysis import columns as C
from dyafdb.analysis import registry
from dyafdb.judge.inputs import JudgeInputs
from dyafdb.paths import Results


class AnalysisInputs:
    def __init__(self, config: Mapping[str, Any], conversations: Mapping[str, Any], results: str,
                 root: Path | str = "."):
        self.config = config
        self.results = Results(results)
        self.root = self.results.analysis
        self.section = config["analysis"]  # validated: the schema filled its defaults
        self.judging = JudgeInputs(config, conversations, results)
        self.judges = self.judging.judges
        self.by_archetype: dict[str, list[str]] = {}
        for cid in sorted(conversations):
            self.by_archetype.setdefault(conversations[cid].archetype, []).append(cid)
        self.local_tasks = set(self.by_archetype)
        # The tables are those of the local design's archetypes and the merged bundles' (each bundle's
        # design table, read while planning): a bundle's conversations of an archetype no local suite
        # holds make that archetype's tables as in a run that recorded them, and every table reads the
        # same conversations. A bundle's ids count towards the per-run job's memory.
        from dyafdb.analysis.bundles import bundle_archetypes

        for arch, ids in bundle_archetypes(config, root).items():
            known = set(self.by_archetype.get(arch, ()))
            self.by_archetype.setdefault(arch, []).extend(c for c in ids if c not in known)
        self.tasks = sorted(self.by_archetype)
        self.main_tasks = [t for t in C.MAIN_TASKS if t in self.tasks] or self.tasks
        self.figure_formats = ["png"] + [f for f in self.section["figure_formats"] if f != "png"]  # the report embeds PNG

    def settings(self, *keys: str) -> str:
        """The analysis keys a rule depends on, as a params string (a change reruns that rule alone)."""
        return json.dumps({k: self.section.get(k) for k in keys}, sort_keys=True, default=str)

    def runs_of(self, tasks) -> list[str]:
        """Per-run tables of these archetypes; all of them when the design has none of these, so the
        table is still written (empty) and the report complete."""
        chosen = [t for t in tasks if t in self.tasks] or self.tasks
        return [self.results.analysis_runs(t) for t in chosen]

    @property
    def all_runs(self) -> list[str]:
        return self.runs_of(self.tasks)

    def archetype_files(self, wildcards) -> list[str]:
        """What one archetype's per-run table is built from: its judge outputs and its conversations'
        measures, recordings' meta.json and garble.json. Those are listed as the archetype's mechanical
        table, written once all of them exist: one planned file instead of three per conversation."""
        if wildcards.task not in self.local_tasks:  # held by the bundles alone
            return list(self.bundles)
        return [self.results.mechanical_table(wildcards.task), *self.judging.outputs_of(wildcards.task),
                *self.bundles]

    def runs_settings(self) -> str:
        """The analysis_runs rule's params: its judges, and the bundles when there are any (so a run
        without bundles keeps the params it had, and nothing reruns for this key)."""
        return self.settings("main_judge", "second_judge", *(("bundles",) if self.bundles else ()))

    @property
    def bundles(self) -> list[str]:
        """The results bundles the analysis merges (analysis.bundles): a new or changed one reruns the runs tables."""
        return [str(p) for p in self.section.get("bundles") or []]

    def figures(self) -> dict[str, tuple[str, list[str], str]]:
        """figure name -> (dyafdb analysis figure kind, input tables, report category), from the
        @figure declarations (dyafdb.analysis.registry)."""
        t = self.results.analysis_table
        return {f.name: (f.kind, [t(s) for stem in f.tables for s in self._stems(stem)], f.category)
                for f in registry.figures().values() if registry.enabled(f.when, self.config)}

    def _stems(self, stem: str) -> list[str]:
        """A figure's table: one stem, or every instance of a per-task / per-metric table."""
        for spec in registry.tables().values():
            if spec.wildcard and spec.stem == stem:
                return spec.stems(self.tasks)
        return [stem]

    def table_runs(self, spec: registry.TableSpec) -> Any:
        """The per-run tables a generated table rule reads (its ``runs`` declaration)."""
        runs = spec.runs
        if runs == "all":
            return self.all_runs
        if runs == "main":
            return self.runs_of(self.main_tasks)
        if runs == "wildcard":
            return lambda wildcards: self.results.analysis_runs(wildcards.task)
        if isinstance(runs, str):
            runs = getattr(C, runs)
        return self.runs_of(list(runs))

    def generated_tables(self) -> list[registry.TableSpec]:
        """The tables whose rules analysis.smk generates."""
        return [s for s in registry.tables().values() if s.rule == "generated" and registry.enabled(s.when, self.config)]

    def figure_files(self, name: str) -> dict[str, str]:
        return {ext: self.results.figure(name, ext) for ext in self.figure_formats}

    def tables_html(self) -> list[str]:
        """The rendered tables the report shows, in the declared order."""
        t = self.results.analysis_table
        return [t(n, "html") for s in registry.tables().values() if s.report and registry.enabled(s.when, self.config)
                for n in s.stems(self.tasks)]

    def figures_png(self) -> list[str]:
        return [self.figure_files(n)["png"] for n in self.figures()]

    def figures_other(self) -> list[str]:
        return [f for n in self.figures() for ext, f in self.figure_files(n).items() if ext != "png"]

    def human_labels(self) -> list[str]:
        path = self.section.get("human_labels")
        return [str(path)] if path else []

    def annotation_keys(self) -> list[str]:
        """The blind study's key file (analysis.annotation_key, else ``<site>-annotation-key.json``) and
        the other key files beside it, those that exist: the agreement reads human labels through them,
        so a new study's key reruns it. None before the viewer has written one."""
        from dyafdb.analysis.settings import annotation_key_path

        key = annotation_key_path(dict(self.config))
        keys = [key] + sorted(p for p in key.parent.glob("*-annotation-key.json") if p != key)
        return [str(p) for p in keys if p.exists()]

    @staticmethod
    def captions(basedir: str) -> list[str]:
        return sorted(str(p) for p in Path(basedir, "report").glob("*.rst"))
