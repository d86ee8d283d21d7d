"""Each analysis product as one function: read its input, compute, write its files.

The ``dyafdb analysis`` command and the benchmark call these; Snakemake runs one product per rule.
"""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path

import pandas as pd
import yaml

from dyafdb.analysis import columns as C
from dyafdb.analysis import render
from dyafdb.analysis import registry as _registry
from dyafdb.analysis.registry import table
from dyafdb.analysis.io import normalise_measures, read_delimited, read_measures, write_tsv
from dyafdb.fileio import write_text_atomic
from dyafdb.analysis.runs import at_window, build_runs, main_window, resolve_judges
from dyafdb.analysis.settings import Settings
from dyafdb.analysis.tables import Matrix, score_matrix, turn_taking_matrix
from dyafdb.errors import InputError

# Each product imports its own module where it runs: one workflow job computes one product, and
# scipy.stats or lifelines would otherwise be loaded by every job.

RUN_STRINGS = [C.CONVERSATION, C.SUITE, "archetype", C.SCENARIO, C.SIDE, C.MODEL, C.PARTNER, C.ROLE, "task", "play",
               "adherence_label", C.REPETITION, C.QUALITY, "answers_why"]


def measures_of_archetype(config: dict, root: Path, archetype: str) -> pd.DataFrame:
    """The measures.tsv rows of one archetype, built straight from the score and judge outputs.

    Same rows as ``dyafdb measures`` writes (it is the same function, dyafdb.measures.table.table_rows), so
    a per-archetype analysis job depends only on that archetype's files: editing one judge prompt
    recomputes only the tables that read its archetype.
    """
    from dyafdb.suite.design import build_design
    from dyafdb.measures.table import COLUMNS, table_rows

    rows = [r for r in build_design(config, root) if r.archetype == archetype]
    if not rows and _bundles_hold(config, root, archetype):
        # an archetype only the merged bundles hold: merge_bundles adds all its rows
        return normalise_measures(pd.DataFrame(columns=COLUMNS, dtype=str))
    if not rows:
        raise InputError(f"archetype {archetype} has no conversations in the design; check the suites in the config")
    frame = pd.DataFrame(list(table_rows(config, root, rows)), columns=COLUMNS).astype(str)
    return normalise_measures(frame)


def _bundles_hold(config: dict, root: Path, archetype: str) -> bool:
    from dyafdb.analysis.bundles import bundle_archetypes

    return archetype in bundle_archetypes(config, root)


@table("runs", stem="runs_{task}", runs=None, rule="own", report=False, order=0)
def runs_product(measures_paths: list[Path] | None, settings: Settings, out: Path, config: dict | None = None,
                 root: Path = Path("."), archetype: str | None = None) -> pd.DataFrame:
    """Per-run table from measures.tsv file(s), or (``archetype``) from that archetype's score outputs."""
    measures = read_measures(measures_paths) if measures_paths else measures_of_archetype(config or {}, root, archetype)
    from dyafdb.analysis.bundles import merge_bundles

    # a lab's bundle (analysis.bundles, `dyafdb analysis --add-bundle`) beside the local run's conversations
    measures = merge_bundles(measures, config or {}, root, archetype)
    main, second = resolve_judges(measures, settings)
    runs = build_runs(measures, settings, main)
    runs.attrs["judge"] = main
    write_tsv(runs, out)
    return runs


def read_runs(paths: Path | list[Path]) -> pd.DataFrame:
    """One or more per-run tables (e.g. one per archetype) as one frame."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    frames = []
    for path in paths:
        if not Path(path).exists():
            raise InputError(f"{path}: per-run table not found; run `dyafdb analysis runs` (the analysis_runs rule) first")
        frames.append(read_delimited(path, "per-run table", "run `dyafdb analysis runs` (the analysis_runs rule) again",
                                     dtype=str, keep_default_na=False))
    runs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    numeric = [c for c in runs.columns if c not in RUN_STRINGS and c not in (C.OPENER, "pinned")]
    for c in numeric:
        runs[c] = pd.to_numeric(runs[c].where(runs[c] != ""), errors="coerce")
    for c in (C.OPENER, "pinned"):
        runs[c] = runs[c].astype(str).str.lower().isin(["true", "1"])
    return runs


def demo_aware(runs: pd.DataFrame, settings: Settings) -> Settings:
    """Label outputs demo quality when the config says so or any run carries a demo-quality answer."""
    if C.QUALITY in runs and (runs[C.QUALITY] == "demo").any():
        settings.demo_quality = True
    return settings


def _viewer_from(page: Path, settings: Settings) -> str | None:
    """The viewer's index relative to a page in ``page``'s folder (None without a viewer)."""
    import os

    return os.path.relpath(settings.site_index, Path(page).parent) if settings.site_index is not None else None


def coverage(runs: pd.DataFrame, tasks=None, unit: str = "conversation sides") -> str:
    """The line a table states beside itself: its n (the per-run rows of ``tasks`` it reads) and the
    judge answers the policy left out of them, and why (dyafdb.analysis.answers.coverage_note)."""
    from dyafdb.analysis.answers import coverage_note

    sub = runs if tasks is None or "task" not in runs else runs[runs["task"].isin(list(tasks))]
    return coverage_note(sub, len(sub), unit)


def _notes(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _main(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    shown = at_window(runs, main_window(runs, settings))
    left_out = runs.loc[~runs.index.isin(shown.index), C.WINDOW]
    settings.other_windows_s = tuple(sorted(set(left_out.astype(float))))
    return shown


@table("matrix", stem="score_{task}", each="tasks", labels="TASK_TITLES", title="{label}", runs="wildcard",
       needs=("task",), category="Task scores", subcategory="{task}", order=10)
def matrix_product(runs: pd.DataFrame, settings: Settings, task: str, out: Path, html: Path | None) -> Matrix:
    if task not in C.TASK_TITLES:
        raise InputError(f"--task {task!r} is not an archetype; choose one of {', '.join(C.TASK_TITLES)}")
    m = score_matrix(_main(runs, settings), task, settings)
    write_tsv(m.to_frame(), out)
    if html:
        write_text_atomic(html, render.matrix_html(m, settings, index=_viewer_from(html, settings)))
    return m


@table("turntaking", stem="turntaking_{metric}", each="TURN_TAKING", labels="TURN_TAKING_LABELS",
       title="Turn-taking: {label}", runs="main", needs=("metric",), category="Turn-taking", subcategory="{metric}",
       order=20)
def turntaking_product(runs: pd.DataFrame, settings: Settings, metric: str, out: Path, html: Path | None) -> Matrix:
    if metric not in C.TURN_TAKING:
        raise InputError(f"--metric {metric!r} is not a turn-taking metric; choose one of {', '.join(C.TURN_TAKING)}")
    m = turn_taking_matrix(_main(runs, settings), metric, settings)
    write_tsv(m.to_frame(), out)
    if html:
        write_text_atomic(html, render.matrix_html(m, settings, show_n=False, index=_viewer_from(html, settings)))
    return m


@table("health", stem="health_{metric}", each="HEALTH", labels="HEALTH_LABELS", title="Audio health: {label}",
       needs=("metric",), category="Audio health", subcategory="{metric}", constrain=True, order=40)
def health_product(runs: pd.DataFrame, settings: Settings, metric: str, out: Path, html: Path | None) -> Matrix:
    """One audio-health measure per pairing (every archetype; dyafdb.analysis.health)."""
    from dyafdb.analysis.health import health_matrix

    m = health_matrix(_main(runs, settings), metric, settings)
    write_tsv(m.to_frame(), out)
    if html:
        write_text_atomic(html, render.matrix_html(m, settings, show_n=False, index=_viewer_from(html, settings)))
    return m


@table("health-models", title="Audio health per model", caption="health.rst", category="Audio health", order=30)
def health_models_product(runs: pd.DataFrame, settings: Settings, out: Path, html: Path | None) -> pd.DataFrame:
    """Every audio-health measure per model, averaged over its pairings."""
    from dyafdb.analysis.health import health_models, health_models_wide

    from dyafdb.analysis.answers import mechanical_note

    main = _main(runs, settings)
    table = health_models(main, settings)
    write_tsv(table, out)
    if html:
        write_text_atomic(html, render.frame_html(
            health_models_wide(table, settings), "Audio health per model (mean over its pairings)", settings,
            note=_notes("each partner weighs the same, each archetype too; the per-pairing matrices and the variance "
                        "table (kind health) say whether the partner changes it; TSV: also as-partner and self-play values",
                        mechanical_note(len(main)))))
    return table


@table("variance", title="Variance decomposition (Appendix C, Table 6)", category="Variance",
       settings=("main_suite", "main_window_s", "bootstrap", "seed"), mem_mb=2000, runtime=15, order=50)
def variance_product(runs: pd.DataFrame, settings: Settings, out: Path, html: Path | None) -> pd.DataFrame:
    from dyafdb.analysis.variance import variance_table

    main = _main(runs, settings)
    table = variance_table(main, settings)
    write_tsv(table, out)
    if html:
        rows = []
        for (kind, variant, measure), g in table.groupby(["kind", "variant", "measure"], sort=False):
            row = {"kind": kind, "variant": variant, "measure": measure}
            for _, r in g.iterrows():
                row[r["term"]] = render.fmt(r["eta2"]) + ("" if pd.isna(r["sd"]) else f" ± {render.fmt(r['sd'])}")
            row["flag"] = g["flag"].fillna("").iloc[0]
            rows.append(row)
        order = ["kind", "variant", "measure", "task", "model", "partner", "model_x_partner", "residual", "flag"]
        shown = pd.DataFrame(rows, columns=[c for c in order if any(c in r for r in rows)] or order).fillna("")
        write_text_atomic(html, render.frame_html(shown, "Variance decomposition (eta², bootstrap SD)", settings,
                                                    empty="no measure has a value in these runs at the main window: nothing to decompose",
                                                  note=_notes("all = every cell; cross_play = self-play cells left out",
                                                              coverage(main))))
    return table


@table("timing", title="Role timing and time to leak", runs=("T1-1", "T1-2", "T4-2"), needs=("curves",),
       outputs={"curves": "timing_curves"}, category="Role timing",
       settings=("main_suite", "main_window_s", "timing_archetypes", "ci"), order=60)
def timing_product(runs: pd.DataFrame, settings: Settings, out: Path, curves_out: Path, html: Path | None):
    from dyafdb.analysis.timing import timing_tables

    main = _main(runs, settings)
    summary, curves = timing_tables(main, settings)
    write_tsv(summary, out)
    write_tsv(curves, curves_out)
    if html:
        shown = summary[["event", "model", "partner", "n", "events", "median", "share_by_window"]].copy()
        for c in ("model", "partner"):
            shown[c] = shown[c].map(lambda m: "all" if m == "*" else settings.label(m))
        write_text_atomic(html, render.frame_html(shown, "Role timing and time to leak (Kaplan-Meier)", settings,
                                                    empty="no T1 run with a judged role entry and no T4-2 run in this config",
                                                  note=_notes("median in seconds; n.r. = not reached within the window",
                                                              coverage(main, (*settings.timing_archetypes, "T4-2")))))
    return summary, curves


@table("action-success", title="Action x success (section 5.1)", runs=("T2", "T3-2", "T4-2"), category="Action x success",
       order=70)
def action_success_product(runs: pd.DataFrame, settings: Settings, out: Path, html: Path | None) -> pd.DataFrame:
    from dyafdb.analysis.action_success import action_success_table

    main = _main(runs, settings)
    table = action_success_table(main, settings)
    write_tsv(table, out)
    if html:
        shown = table[table["partner"] == "avg"][["task", "model", "action", "success", "p_action", "p_success_given_action",
                                                  "p_action_and_success", "success_rate", "runs"]].copy()
        shown["model"] = shown["model"].map(settings.label)
        write_text_atomic(html, render.frame_html(shown, "Action x success (per model, averaged over pairings)", settings,
                                                  note=coverage(main, ("T2", "T3-2", "T4-2")),
                                                    empty="no T2, T3-2 or T4-2 run with a judged action in this config"))
    return table


@table("windows", title="Time windows (section 5.2)", runs="main", category="Time windows",
       settings=("windows_s", "bootstrap", "seed", "ci"), runtime=10, order=80)
def windows_product(runs: pd.DataFrame, settings: Settings, out: Path, html: Path | None) -> pd.DataFrame:
    from dyafdb.analysis.windows import windows_table

    table = windows_table(runs, settings)
    write_tsv(table, out)
    if html:
        shown = table.copy()
        shown["model"] = shown["model"].map(lambda m: m if m == "all" else settings.label(m))
        shown["interval"] = [f"[{render.fmt(lo)}, {render.fmt(hi)}]" for lo, hi in zip(shown["lower"], shown["upper"])]
        write_text_atomic(html, render.frame_html(shown[["label", "window_s", "model", "mean", "interval", "runs"]],
                                                  f"Measures by window ({int(settings.ci * 100)}% intervals)", settings,
                                                  note=coverage(runs[runs[C.WINDOW].isin(list(settings.windows_s or []))]
                                                                if settings.windows_s else runs),
                                                  empty="no run at the configured windows has a value of these measures"))
    return table


@table("balance", title="Game balance (section 5.3, Appendix G)", runs="BALANCE_TASKS", category="Game balance",
       settings=("main_suite", "main_window_s", "bootstrap", "seed", "ci"), order=90)
def balance_product(runs: pd.DataFrame, settings: Settings, out: Path, html: Path | None) -> pd.DataFrame:
    from dyafdb.analysis.balance import balance_table

    main = _main(runs, settings)
    table = balance_table(main, settings)
    write_tsv(table, out)
    if html:
        shown = table.copy()
        shown["model"] = shown["model"].map(lambda m: m if m == "all" else settings.label(m))
        write_text_atomic(html, render.frame_html(shown[["game", "outcome", "row", "model", "side_a", "side_b", "value", "lower",
                                                         "upper", "model_share", "runs", "events", "deal_rate", "advantaged",
                                                         "role_advantage", "model_spread"]],
                                                  "Game balance: side a's share of wins", settings,
                                                  note=_notes("value is side a's share on every row; model_share is the row model's own side's",
                                                              coverage(main, C.BALANCE_TASKS)),
                                                  empty="no asymmetric game (T3-2, T4-2, T4-3, T4-4) with an outcome in this config"))
    return table


@table("agreement", title="Judge agreement (Table 8)", runs="measures", rule="own", category="Judge agreement",
       order=100)
def agreement_product(measures_paths: list[Path], settings: Settings, out: Path, html: Path | None,
                      human: Path | None = None) -> pd.DataFrame:
    from dyafdb.analysis.agreement import agreement_table

    measures = read_measures(measures_paths)
    if (measures[C.QUALITY].str.lower() == "demo").any():
        settings.demo_quality = True
    main, second = resolve_judges(measures, settings)
    window = settings.main_window_s
    if window is None and len(measures):
        window = float(measures[C.WINDOW].mode().iloc[0])
    table = agreement_table(measures, settings, main, second, window, human or settings.human_labels)
    write_tsv(table, out)
    if html:
        from dyafdb.analysis.judge_checks import judge_checks_table

        note = "" if second else "only one judge labelled these runs: nothing to compare between judges"
        checks = judge_checks_table(measures, settings.answers)
        # the same sentence the viewer and summary.md print: the policy says it, not this page
        checks_note = settings.answers.describe() + "; the viewer withholds the raw answer and says why"
        body = (render.frame_body(checks, "Judge checks: label spread and failed checks per judge and question",
                                  note=checks_note if len(checks) else "no judge answers in these measures")
                + render.frame_body(table, "Judge agreement", note=note))
        write_text_atomic(html, render.page("Judge agreement and checks", body, settings))
    return table


@table("profiles", title="Per-model profiles (Table 10)", runs="main", category="Profiles",
       settings=("main_suite", "main_window_s", "timing_archetypes", "ci"), order=110)
def profiles_product(runs: pd.DataFrame, settings: Settings, out: Path, html: Path | None) -> pd.DataFrame:
    from dyafdb.analysis.profiles import profiles_table, profiles_wide

    main = _main(runs, settings)
    table = profiles_table(main, settings)
    write_tsv(table, out)
    if html:
        write_text_atomic(html, render.frame_html(profiles_wide(table, settings), "Per-model profiles", settings,
                                                  note=_notes("each answer follows the rule in the last column; no answer is "
                                                              "marked best; cells: answer (value [95% interval] n = conversation "
                                                              "sides behind it)", coverage(main)),
                                                  empty="no runs at the main window to profile"))
    return table


@table("rating", stem="leaderboard", title="Leaderboard: rating against the reference set (Appendix H)",
       needs=("effects",), outputs={"effects": "rating_effects"}, category="Rating", mem_mb=2000, runtime=15,
       settings=("main_suite", "main_window_s", "bootstrap", "seed", "ci", "reference_models", "anchor_model",
                 "anchor_rating", "rating_scale", "contested"), order=120)
def rating_product(runs: pd.DataFrame, settings: Settings, out: Path, effects_out: Path, html: Path | None):
    from dyafdb.analysis.rating import rating_tables

    main = _main(runs, settings)
    board, effects = rating_tables(main, settings)
    write_tsv(board, out)
    write_tsv(effects, effects_out)
    if html:
        shown = board.copy()
        if "model" in shown:
            anchor = shown["anchor"].fillna(False).astype(bool) if "anchor" in shown else False
            shown["model"] = [settings.label(m) + (" (anchor, pinned)" if a else "")
                              for m, a in zip(shown["model"], anchor if not isinstance(anchor, bool) else [False] * len(shown))]
        if "rating" in board and board["rating"].notna().any():
            note = (f"Bradley-Terry over {', '.join(settings.contested)}; anchored at {settings.label(settings.anchor_model or '')} = "
                    f"{settings.anchor_rating:g} (pinned: no interval); battles = decisive + ties (a tie is half a win each); "
                    "rank counts only models whose interval lies wholly above, and models whose intervals overlap are "
                    "'not separable': read no order between them; own:<task> = additive own effect")
        else:
            note = (f"{C.NO_BATTLES} ({', '.join(settings.contested)}): no rating, rank or interval; "
                    "own:<task> = additive own effect")
        write_text_atomic(html, render.frame_html(shown, "Leaderboard", settings,
                                                  note=_notes(note, coverage(main, settings.contested)),
                                                    empty=C.NO_BATTLES))
    return board, effects


@table("versions", runs=None, rule="own", report=False, order=130)
def versions_product(config: dict, out: Path, config_out: Path | None = None) -> pd.DataFrame:
    """Versions of everything the numbers depend on, and the merged config they were made with."""
    rows = [("python", platform.python_version()), ("platform", platform.platform())]
    for pkg in ("dyafdb", "numpy", "scipy", "pandas", "statsmodels", "lifelines", "matplotlib", "seaborn", "snakemake",
                "xllamacpp", "anthropic", "openai"):
        try:
            rows.append((pkg, metadata.version(pkg)))
        except metadata.PackageNotFoundError:
            rows.append((pkg, "not installed"))
    table = pd.DataFrame(rows, columns=["package", "version"])
    write_tsv(table, out)
    if config_out:
        write_text_atomic(config_out, yaml.safe_dump(json.loads(json.dumps(config, default=str)), sort_keys=False))
    return table


# its rule is in text_pairing.smk; the table enters the report when text pairing is on
@table("text_pairing", title="Text-only pairing (Appendix E, Table 9)", rule="own", cli=False,
       when="text_pairing.enabled", category="Text pairing", order=140)
def text_pairing_product(config: dict, root: Path, runs_paths: list[Path], text_measures: list[Path], settings: Settings,
                         out: Path, html: Path | None, judge: str | None = None) -> pd.DataFrame:
    """Table 9: the speech models' task scores (per-run tables) beside the text-only pairing's
    (its measures tables, written by ``dyafdb text-pairing score``)."""
    from dyafdb.analysis.tables import table9, table9_columns, table9_gaps
    from dyafdb.text_pairing.pairing import main_judge_name, text_settings

    speech = read_runs(runs_paths)
    if "quality" in speech and (speech["quality"] == "demo").any():
        settings.demo_quality = True
    speech = at_window(speech, main_window(speech, settings))
    ts = text_settings(config)
    text = None
    if text_measures:
        measures = read_measures(text_measures)
        if (measures["quality"] == "demo").any():
            settings.demo_quality = True
        judge = judge or main_judge_name(config, ts)
        present = set(measures.loc[measures["judge"] != "", "judge"])
        text = build_runs(measures, settings, judge if judge in present else "auto")
    columns = table9_columns(ts.archetypes)
    table = table9(speech, text, settings, {name: m.display for name, m in ts.models.items()}, columns)
    write_tsv(table, out)
    if html:
        write_text_atomic(html, render.frame_html(
            table.drop(columns=["model"]), "Task performance of the text-only pairing", settings,
            note=_notes("speech rows average each model over its pairings; text rows come from their one pairing; "
                        "T2 is a team score; T3-2 is the presser's agreement rate",
                        *(f"– {g}" for g in table9_gaps(table, speech, text, columns))),
            empty=(f"no archetype of the text pairing ({', '.join(ts.archetypes)}) in this config's suite: "
                   "nothing to compare" if not text_measures else "no judged run at the main window, spoken or in text")))
    return table


def _reads(spec) -> tuple[str, ...]:
    """The options a product cannot run without (`dyafdb analysis <product> --<input>`), from its @table."""
    if spec.runs is None:
        return ()
    if spec.runs == "measures":
        return ("measures",)
    return ("runs", *spec.needs)


# What each product reads besides the config, from the @table declarations; every other product reads
# per-run tables only.
NEEDS = {s.name: _reads(s) for s in _registry.tables().values() if s.cli and _reads(s) != ("runs",)}
RUN_PRODUCTS = tuple(s.name for s in _registry.tables().values() if s.cli and _reads(s) == ("runs",))


def _call_run_product(product: str, table: pd.DataFrame, settings: Settings, out: Path, html: Path | None,
                      given: dict) -> None:
    """A per-run-table product by its declaration: an option ``--curves`` fills the parameter ``curves``
    or ``curves_out``."""
    import inspect

    fn = _registry.resolve(_registry.tables()[product])
    params = inspect.signature(fn).parameters
    kwargs = {"settings": settings, "out": out, "html": html}
    kwargs[next(iter(params))] = table
    for name in _registry.tables()[product].needs:
        kwargs[name if name in params else f"{name}_out"] = given[name]
    fn(**kwargs)


def compute_product(product: str, config: dict, root: Path, out: Path, *, measures: list[Path] | None = None,
                    runs: list[Path] | None = None, archetype: str | None = None, html: Path | None = None,
                    task: str | None = None, metric: str | None = None, curves: Path | None = None,
                    effects: Path | None = None, human: Path | None = None, config_out: Path | None = None,
                    bootstrap: int | None = None) -> None:
    """One product by name (`dyafdb analysis <product>`): check its inputs are given, read them, write it."""
    from dyafdb.analysis.settings import from_config

    products = _registry.product_names()
    if product not in products:
        raise InputError(f"no analysis product {product!r}; products: {', '.join(products)}")
    given = {"measures": measures, "runs": runs, "task": task, "metric": metric, "curves": curves, "effects": effects}
    for name in _reads(_registry.tables()[product]):
        if given[name] is None:
            raise InputError(f"dyafdb analysis {product} needs --{name}")
    if product == "runs" and not measures and not archetype:
        raise InputError("dyafdb analysis runs needs --measures FILE(s) or --archetype")
    settings = from_config(config, root)
    if bootstrap is not None:
        settings.bootstrap = bootstrap
    if product == "versions":
        versions_product(config, out, config_out)
    elif product == "runs":
        runs_product(measures, settings, out, config, root, archetype)
    elif product == "agreement":
        agreement_product(measures, settings, out, html, human)
    else:
        table = read_runs(runs)
        demo_aware(table, settings)
        _call_run_product(product, table, settings, out, html, given)
