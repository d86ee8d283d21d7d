"""Tables and figures: each declares itself where it is defined (``@table("windows", ...)`` on its
product function, ``@figure("fig5_windows", ...)`` on its drawing function); this module finds them.

Everything that lists tables or figures is derived from these declarations: the choices of
``dyafdb analysis``, the analysis rules (one generated per table, one per figure, in
workflow/rules/analysis.smk), AnalysisInputs's lists, the report's titles and order. A new table is
its decorated function plus its caption (workflow/report/<caption>.rst); a new figure likewise.

The declarations are read from the source by the one registry mechanism (dyafdb.declarations, as
``@adapter`` is), not by importing it: building the CLI or planning the workflow must not load
pandas or matplotlib; a lab's own package adds tables through entry points (``dyafdb.tables``). So a
decorator's arguments are literals; where a table's list depends on the run (its archetypes, its
metrics) it names the list: ``each="tasks"`` (the design's archetypes) or a tuple in
dyafdb.analysis.columns (``each="HEALTH"``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from dyafdb import declarations
from dyafdb.declarations import declared, decorator


@dataclass(frozen=True)
class TableSpec:
    """One ``dyafdb analysis <name>`` product and, unless ``rule`` says otherwise, its analysis rule.

    stem: the table's file name (results/analysis/tables/<stem>.tsv and .html); ``{task}`` or
      ``{metric}`` in it makes one table per value of ``each``.
    runs: the per-run tables it reads: "all", "main" (the main-suite archetypes), "wildcard" (the
      archetype in its stem), a tuple of archetypes or the name of one in dyafdb.analysis.columns.
    needs: options it takes besides --runs/--out/--html (a wildcard's value, or an extra output
      named in ``outputs``); the function's parameter is named after the option (``curves`` or
      ``curves_out``).
    rule: "generated" (analysis.smk writes it in its loop) or "own" (a hand-written rule).
    cli: False for a table another command writes (text_pairing: `dyafdb text-pairing`).
    """

    name: str
    function: str
    module: str
    stem: str = ""
    title: str = ""
    labels: str = ""
    each: str = ""
    runs: Any = "all"
    needs: tuple[str, ...] = ()
    outputs: dict[str, str] = field(default_factory=dict)
    settings: tuple[str, ...] = ("main_suite", "main_window_s")
    caption: str = ""
    category: str = ""
    subcategory: str = ""
    constrain: bool = False
    mem_mb: int = 1000
    runtime: int = 5
    rule: str = "generated"
    cli: bool = True
    report: bool = True
    when: str = ""
    order: int = 1000

    @property
    def rule_name(self) -> str:
        return "analysis_" + self.name.replace("-", "_")

    @property
    def wildcard(self) -> str:
        """The wildcard in the stem ("task", "metric"), or ""."""
        return self.stem.partition("{")[2].partition("}")[0]

    @property
    def log(self) -> str:
        return self.stem if self.wildcard else self.name.replace("-", "_")

    def values(self, tasks: list[str]) -> list[str]:
        """The wildcard's values in this run (the design's archetypes, or a columns tuple)."""
        if self.each == "tasks":
            return list(tasks)
        from dyafdb.analysis import columns as C

        return list(getattr(C, self.each))

    def stems(self, tasks: list[str]) -> list[str]:
        """The tables it writes (the stem filled with each wildcard value)."""
        if not self.wildcard:
            return [self.stem]
        return [self.stem.replace("{" + self.wildcard + "}", v) for v in self.values(tasks)]

    # A rule made in a loop must not read the loop variable when its job runs: Snakemake evaluates a
    # rule's ``shell:`` expression again at run time, when the loop has moved on (every generated rule
    # then ran the last table's command). So the command is one constant string and what differs per
    # table comes through params, fixed when the rule is made.
    SHELL = "dyafdb analysis {params.product} --runs {input:q} {params.options} --html {output.html:q} > {log:q} 2>&1"

    def command_options(self, wildcards: Any, output: Any) -> str:
        """One job's product options, in the order they always had (``--task T2 --out ... --effects ...``)."""
        parts = [f"--{w} {getattr(wildcards, w)}" for w in self.needs if w == self.wildcard]
        parts.append(f"--out {shlex.quote(str(output.tsv))}")
        parts += [f"--{o} {shlex.quote(str(getattr(output, o)))}" for o in self.outputs]
        return " ".join(parts)


@dataclass(frozen=True)
class FigureSpec:
    """One figure: drawn by ``dyafdb analysis figure <kind>`` from its tables (stems; a wildcard stem
    stands for all of that table's instances, in order)."""

    name: str
    function: str
    module: str
    kind: str = ""
    tables: tuple[str, ...] = ()
    title: str = ""
    category: str = ""
    caption: str = ""
    when: str = ""
    order: int = 1000


table = decorator("table", "analysis_table")
figure = decorator("figure", "analysis_figure")


def _specs(kind: str, cls: type) -> dict[str, Any]:
    return {name: cls(name=name, module=d.module, function=d.target, **d.fields) for name, d in declared(kind).items()}


@lru_cache(maxsize=None)
def tables() -> dict[str, TableSpec]:
    """Every declared table, in report order."""
    specs = _specs("table", TableSpec)
    for name, spec in specs.items():
        fill = {"stem": spec.stem or name.replace("-", "_")}
        fill["caption"] = spec.caption or fill["stem"].partition("_{")[0] + ".rst"
        specs[name] = TableSpec(**{**spec.__dict__, **fill})
    ordered = sorted(specs.values(), key=lambda s: s.order)  # stable: ties keep source order
    return {s.name: s for s in ordered}


@lru_cache(maxsize=None)
def figures() -> dict[str, FigureSpec]:
    """Every declared figure, in report order."""
    specs = _specs("figure", FigureSpec)
    for name, spec in specs.items():
        fill = {"kind": spec.kind or spec.function.removesuffix("_figure"), "caption": spec.caption or f"{name}.rst"}
        specs[name] = FigureSpec(**{**spec.__dict__, **fill})
    ordered = sorted(specs.values(), key=lambda s: s.order)
    return {s.name: s for s in ordered}


def clear() -> None:
    """Forget what was read (a test that adds a source calls this)."""
    declarations.clear()
    tables.cache_clear()
    figures.cache_clear()


def product_names() -> list[str]:
    """The choices of ``dyafdb analysis <product>``."""
    return [name for name, spec in tables().items() if spec.cli]


def figure_kinds() -> list[str]:
    """The choices of ``dyafdb analysis figure <kind>`` (one drawing function may draw several figures)."""
    return list(dict.fromkeys(f.kind for f in figures().values()))


def titles() -> dict[str, str]:
    """Report heading of each table stem and figure name that has a fixed title."""
    out = {s.stem: s.title for s in tables().values() if s.title and not s.wildcard}
    out.update({f.name: f.title for f in figures().values() if f.title})
    return out


def wildcard_title(stem: str) -> str | None:
    """Report heading of one instance of a per-task or per-metric table (``score_T2``), or None."""
    for spec in tables().values():
        if not spec.wildcard or not spec.title:
            continue
        head, _, tail = spec.stem.partition("{" + spec.wildcard + "}")
        if stem.startswith(head) and stem.endswith(tail) and len(stem) > len(head) + len(tail):
            key = stem[len(head):len(stem) - len(tail)]
            from dyafdb.analysis import columns as C

            labels = getattr(C, spec.labels) if spec.labels else {}
            if labels and key not in labels:
                continue
            return spec.title.format(key=key, label=labels.get(key, key))
    return None


def enabled(when: str, config: dict) -> bool:
    """A declaration's ``when`` ("text_pairing.enabled"): the config switch that turns it on."""
    if not when:
        return True
    node: Any = config
    for part in when.split("."):
        node = (node or {}).get(part) if isinstance(node, dict) else None
    return bool(node)


def resolve(spec: TableSpec | FigureSpec) -> Callable:
    """The declared function itself (imports its module)."""
    import importlib

    return getattr(importlib.import_module(spec.module), spec.function)

