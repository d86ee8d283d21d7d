"""The ``analysis`` config section, resolved against the suite (defaults live in its schema)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dyafdb.analysis.annotation_key import key_file_for
from dyafdb.analysis.answers import AnswerPolicy
from dyafdb.errors import InputError
from dyafdb.analysis.people import with_person_counts
from dyafdb.paths import results_of
from dyafdb.schema_check import fill_defaults, load_schema, schema_default

# Every default is written in the section's schema; standalone use (no config) reads the same ones.
DEFAULTS: dict[str, Any] = fill_defaults({}, load_schema("config-analysis"))


def _default(key: str) -> Any:
    return schema_default("config-analysis", key)


@dataclass
class Settings:
    """Everything an analysis product needs besides the measures."""

    models: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    main_window_s: float | None = None
    bootstrap: int = _default("bootstrap")
    seed: int = _default("seed")
    ci: float = _default("ci")
    main_judge: str | None = None  # named in analysis: must be in the table
    second_judge: str | None = None
    judge_hint: tuple[str | None, str | None] = (None, None)  # from the judge section: used when present
    windows_s: list[float] | None = None  # None: every window the runs have
    timing_archetypes: list[str] = field(default_factory=lambda: _default("timing_archetypes"))
    human_labels: Path | None = None
    reference_models: list[str] = field(default_factory=list)
    anchor_model: str | None = None
    anchor_rating: float = float(_default("anchor_rating"))
    rating_scale: float = float(_default("rating_scale"))
    contested: list[str] = field(default_factory=lambda: _default("contested"))
    figure_formats: list[str] = field(default_factory=lambda: _default("figure_formats"))
    dpi: int = _default("dpi")
    demo_quality: bool = schema_default("config", "demo_quality")
    site_index: Path | None = None  # the conversation viewer's index page (report and matrix cells link to it)
    annotation_key: Path | None = None  # the blind study's key file (item tokens -> conversations), outside the site
    answers: AnswerPolicy = field(default_factory=AnswerPolicy.default)  # which judge answers count
    # Windows of the runs a main-window table left out (set where the table is made): an empty table
    # says they exist, so a suite measured at another window does not read as missing.
    other_windows_s: tuple[float, ...] = ()

    def label(self, model: str) -> str:
        return self.labels.get(model, model)

    def order(self, models) -> list[str]:
        """Config order first (reference models, then the rest), unknown models after, by name."""
        present = set(models)
        known = [m for m in self.models if m in present]
        return known + sorted(present - set(known))


def _judge_names(config: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """Main and second judge as the judge stage runs them, and whether any is demo quality.

    The judge stage writes the judge's name (a key of ``judge.judges``; by default "main" and
    "second", or "demo" for a demo-quality config) into measures.tsv; "main" and "second" win when
    present, else the config order. Read through the judge stage's own settings, so both agree.
    """
    from dyafdb.judge.settings import judge_settings

    settings = judge_settings(config)
    main = settings.main_judge
    rest = [n for n in settings.run if n != main]
    second = "second" if "second" in rest else (rest[0] if rest else None)
    demo = any(settings.judges[n].demo_quality for n in settings.run)
    return main, second, demo


def report_path(config: dict[str, Any], root: Path | None = None) -> Path:
    """Where the workflow writes the HTML report (the viewer's index links to it)."""
    return Path(results_of(config, root or ".").report)


def site_dir(config: dict[str, Any], root: Path | None = None) -> Path:
    """The viewer's site folder: ``viewer.out``, else ``<results_dir>/site`` (read here so the report
    can link to it; the viewer stage reads it through this function too)."""
    out = (config.get("viewer") or {}).get("out")
    return Path(root or ".") / out if out else Path(results_of(config, root or ".").site)


def annotation_key_path(config: dict[str, Any], root: Path | None = None) -> Path:
    """The key file of the configured site, unless ``analysis.annotation_key`` names another."""
    named = (config.get("analysis") or {}).get("annotation_key")
    return Path(root or ".") / named if named else key_file_for(site_dir(config, root))


def from_config(config: dict[str, Any] | None, root: Path | None = None) -> Settings:
    """Resolve the ``analysis`` section; ``config`` None gives the defaults (standalone use)."""
    if not config:
        return Settings()
    section = {**DEFAULTS, **(config.get("analysis") or {})}
    suites = config.get("suites", {})
    main_suite = section.get("main_suite") or ("main" if "main" in suites else next(iter(suites), None))
    if section.get("main_suite") and main_suite not in suites:
        raise InputError(f"analysis.main_suite = {main_suite!r} is not a suite; known suites: {', '.join(suites)}")
    models: list[str] = []
    if main_suite:
        models.extend(suites[main_suite]["models"])
    for suite in suites.values():
        models.extend(m for m in suite["models"] if m not in models)
    window = section.get("main_window_s")
    if window is None and main_suite:
        window = float(suites[main_suite]["window_s"])
    references = list(section.get("reference_models") or (suites[main_suite]["models"] if main_suite else []))
    known_models = config.get("models", {})
    for m in references:
        if m not in known_models:
            raise InputError(f"analysis.reference_models lists unknown model {m!r}; known models: {', '.join(known_models)}")
    anchor = section.get("anchor_model") or (references[0] if references else None)
    if anchor is not None and references and anchor not in references:
        raise InputError(f"analysis.anchor_model = {anchor!r} must be one of the reference models: {', '.join(references)}")
    main_judge, second_judge, demo_judge = _judge_names(config)
    human = section.get("human_labels")
    return Settings(
        models=models,
        # a person's row and column say how many people and sessions they hold (dyafdb.seat)
        labels=with_person_counts(config, root, {m: spec.get("label", m) for m, spec in known_models.items()}),
        main_window_s=float(window) if window is not None else None,
        bootstrap=int(section["bootstrap"]),
        seed=int(section["seed"]),
        ci=float(section["ci"]),
        main_judge=section.get("main_judge"),
        second_judge=section.get("second_judge"),
        judge_hint=(main_judge, second_judge),
        windows_s=[float(w) for w in section["windows_s"]] if section.get("windows_s") else None,
        timing_archetypes=list(section["timing_archetypes"]),
        human_labels=(Path(root or ".") / human) if human else None,
        reference_models=references,
        anchor_model=anchor,
        anchor_rating=float(section["anchor_rating"]),
        rating_scale=float(section["rating_scale"]),
        contested=list(section["contested"]),
        figure_formats=list(section["figure_formats"]),
        dpi=int(section["dpi"]),
        demo_quality=bool(config.get("demo_quality", schema_default("config", "demo_quality"))) or demo_judge,
        site_index=site_dir(config, root) / "index.html",
        annotation_key=annotation_key_path(config, root),
        answers=AnswerPolicy.from_section(section.get("answers")),
    )
