"""Figures (seaborn/matplotlib), each drawn from its analysis table and saved as PNG and PDF.

Figures read the TSVs the analysis rules write, never measures.tsv, so a figure is redrawn only when
its own table changes.

A panel that is empty or constant says why, on the panel and in the figure's notes
(:func:`add_note`), which travel in the PNG's ``Description`` text chunk so the report can print
them under the figure (:func:`read_notes`). Numbers on panels use the tables' one format
(:func:`dyafdb.analysis.numbers.fmt`).
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from dyafdb.analysis import columns as C  # noqa: E402
from dyafdb.fileio import write_bytes_atomic  # noqa: E402
from dyafdb.analysis import registry as _registry  # noqa: E402
from dyafdb.analysis.numbers import fmt  # noqa: E402
from dyafdb.analysis.registry import figure  # noqa: E402
from dyafdb.analysis.settings import Settings  # noqa: E402
from dyafdb.analysis.tables import Matrix  # noqa: E402

TERM_LABELS = {"task": "task", "model": "model", "partner": "partner", "model_x_partner": "model × partner", "residual": "residual"}
TERM_COLORS = {"task": "#9e9e9e", "model": "#1f77b4", "partner": "#ff7f0e", "model_x_partner": "#2ca02c", "residual": "#d3d3d3"}
DEMO_MARK = "demo quality"


def _style() -> None:
    sns.set_theme(style="whitegrid", context="paper", font_scale=1.0)


NOTES_KEY = "Description"


def add_note(fig, note: str) -> None:
    """Remember why a panel is empty or constant; :func:`save` writes the notes into the PNG."""
    notes = getattr(fig, "_dyafdb_notes", [])
    if note and note not in notes:
        notes.append(note)
    fig._dyafdb_notes = notes


def read_notes(png: Path | str) -> list[str]:
    """The notes a figure was saved with (empty for a figure without)."""
    from PIL import Image

    with Image.open(png) as im:
        text = (getattr(im, "text", None) or {}).get(NOTES_KEY, "")
    return [line for line in text.splitlines() if line.strip()]


def save(fig, out_prefix: Path | str, settings: Settings) -> list[Path]:
    """Write ``out_prefix.<fmt>`` for every configured format, atomically; returns the paths."""
    if settings.demo_quality:
        fig.text(0.995, 0.005, DEMO_MARK, ha="right", va="bottom", fontsize=7, color="#a05a00", alpha=0.9)
    paths = []
    for kind in settings.figure_formats:
        buf = io.BytesIO()
        # a fixed creation date keeps PDFs byte-identical across reruns
        notes = "\n".join(getattr(fig, "_dyafdb_notes", []))
        metadata = ({"CreationDate": None} if kind == "pdf"
                    else {"Software": None, **({NOTES_KEY: notes} if notes else {})} if kind == "png" else None)
        fig.savefig(buf, format=kind, dpi=settings.dpi, bbox_inches="tight", metadata=metadata)
        path = Path(f"{out_prefix}.{kind}")
        write_bytes_atomic(path, buf.getvalue())
        paths.append(path)
    plt.close(fig)
    return paths


def _empty(message: str):
    fig, ax = plt.subplots(figsize=(5, 1.6))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=10, color="#555")
    add_note(fig, message)
    return fig


@figure("fig2_variance", tables=("variance",), title="Figure 2: who decides each measure", category="Variance", order=40)
def variance_figure(table: pd.DataFrame, settings: Settings):
    """Figure 2: eta2 terms of the turn-taking metrics, the audio-health measures and the task scores."""
    _style()
    t = table[table["variant"] == "all"]
    if t.empty:
        return _empty("no variance decomposition (no runs)")
    kinds = [k for k in ("turn_taking", "health", "task_score") if k in set(t["kind"])]
    labels = {**C.TURN_TAKING_LABELS, **C.HEALTH_LABELS}
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.2 * len(kinds), 3.4), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        sub = t[t["kind"] == kind]
        measures = list(dict.fromkeys(sub["measure"]))
        terms = [x for x in TERM_LABELS if x in set(sub["term"])]
        width = 0.8 / len(terms)
        for j, term in enumerate(terms):
            s = sub[sub["term"] == term].set_index("measure").reindex(measures)
            x = np.arange(len(measures)) + (j - (len(terms) - 1) / 2) * width
            ax.bar(x, s["eta2"], width, yerr=s["sd"].fillna(0), label=TERM_LABELS[term], color=TERM_COLORS[term],
                   capsize=1.5, error_kw={"lw": 0.6})
        names = [labels.get(m, m) + ("*" if sub[(sub["measure"] == m) & (sub["flag"].fillna("") != "")].shape[0] else "")
                 for m in measures]
        ax.set_xticks(np.arange(len(measures)), names, rotation=30, ha="right")
        ax.set_ylim(0, 1)
        ax.set_ylabel("η²")
        ax.set_title({"turn_taking": "turn-taking metrics", "health": "audio health"}.get(kind, "task scores"))
        ax.legend(fontsize=7, ncol=len(terms), frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.06))
    flagged = t[t["flag"].fillna("") != ""].drop_duplicates(["measure", "flag"])
    for _, r in flagged.iterrows():
        add_note(fig, f"{labels.get(r['measure'], r['measure'])}*: {r['flag']}")
    if len(flagged):
        fig.text(0.01, -0.02, "* see the notes: " + "; ".join(sorted(set(flagged["flag"]))), fontsize=6, wrap=True)
    fig.tight_layout()
    return fig


@figure("task_matrices", tables=("score_{task}",), title="Task-score matrices", category="Task scores", order=10)
@figure("turntaking_matrices", tables=("turntaking_{metric}",), title="Turn-taking matrices", category="Turn-taking",
        order=20)
@figure("health_matrices", tables=("health_{metric}",), title="Audio-health matrices", category="Audio health", order=30)
def matrices_figure(matrices: list[Matrix], settings: Settings, center: float | None = None):
    """Heatmaps of score matrices (row model against column partner), one panel each."""
    _style()
    mats = [m for m in matrices if len(m.models)]
    if not mats:
        fig = _empty("no matrices: no runs of these tasks in this config")
        for m in matrices:
            add_note(fig, f"{m.title}: {m.note or 'no runs'}")
        return fig
    cols = min(3, len(mats))
    rows = math.ceil(len(mats) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    for ax in axes.ravel()[len(mats):]:
        ax.axis("off")
    from dyafdb.analysis.render import interval_text

    for ax, m in zip(axes.ravel(), mats):
        values = m.values.astype(float)
        values.index = [settings.label(x) for x in values.index]
        values.columns = [settings.label(x) for x in values.columns]
        annot = values.map(fmt)
        for (r, c) in m.pinned:
            annot.loc[settings.label(r), settings.label(c)] = f"({fmt(values.loc[settings.label(r), settings.label(c)])})"
        annot = annot.astype(object)
        for r in m.models:  # a cell is read as a result: its interval and n under the value, as the table prints them
            for c in m.partners:
                lo = None if m.lower is None or (r, c) in m.pinned else m.lower.loc[r, c]
                hi = None if m.upper is None or (r, c) in m.pinned else m.upper.loc[r, c]
                extra = [x for x in (interval_text(lo, hi), f"n={int(m.n.loc[r, c])}") if x]
                annot.loc[settings.label(r), settings.label(c)] = "\n".join([annot.loc[settings.label(r), settings.label(c)], *extra])
        vmin, vmax = panel_range(m, values)
        # the measure's own fixed scale and a colour bar: two panels of one measure read alike, and
        # 3.10 beside 3.28 on a 1-5 score no longer spans the whole palette
        sns.heatmap(values, ax=ax, annot=annot, fmt="", vmin=vmin, vmax=vmax, cmap="viridis", cbar=True,
                    cbar_kws={"shrink": 0.8}, linewidths=0.5, annot_kws={"fontsize": 6.5})
        ax.set_title(m.title, fontsize=8)
        ax.set_xlabel("partner")
        ax.set_ylabel("model")
        why = _panel_why(m, values)
        if why:
            add_note(fig, f"{m.title}: {why}")
            ax.text(0.5, -0.32, why, transform=ax.transAxes, ha="center", va="top", fontsize=6, color="#a05a00", wrap=True)
    fig.tight_layout()
    return fig


def panel_range(m: Matrix, values: pd.DataFrame) -> tuple[float, float]:
    """A heatmap panel's colour scale: its measure's fixed range (columns.colour_range), else 0 to the
    largest value (counts, seconds)."""
    fixed = C.colour_range(m.name.removeprefix("health_"))
    if fixed is not None:
        return fixed
    finite = values.to_numpy(float)[np.isfinite(values.to_numpy(float))]
    return 0.0, (float(finite.max()) if finite.size and finite.max() > 0 else 1.0)


def _panel_why(m: Matrix, values: pd.DataFrame) -> str:
    """The matrix's own reason when its panel is empty or constant (its note starts with it)."""
    finite = values.to_numpy(float)[np.isfinite(values.to_numpy(float))]
    empty = finite.size == 0
    constant = finite.size > 1 and np.allclose(finite, finite[0])
    if not (empty or constant):
        return ""
    first = (m.note or "").split("; ")[0]
    if first.startswith(("every cell", "no ")):
        return first
    return "no cell has a value" if empty else f"every cell is {fmt(float(finite[0]))}"


@figure("fig3_timing", tables=("timing", "timing_curves"), title="Figure 3: role entry and deviation",
        category="Role timing", order=50)
def timing_figure(curves: pd.DataFrame, summary: pd.DataFrame, settings: Settings):
    """Figure 3: cumulative role entry and deviation per pairing (holder row, partner column)."""
    _style()
    c = curves[curves["event"].isin(["entry", "deviation"]) & (curves["model"] != "*") & (curves["partner"] != "*")]
    if c.empty:
        return _empty("no role timing: no T1 run with a judged entry in this config")
    models = settings.order(set(c["model"]) | set(c["partner"]))
    n = len(models)
    fig, axes = plt.subplots(n, n, figsize=(2.6 * n, 2.2 * n), squeeze=False, sharex=True, sharey=True)
    colors = {"entry": "#1f77b4", "deviation": "#d62728"}
    for i, m in enumerate(models):
        for j, p in enumerate(models):
            ax = axes[i][j]
            for event in ("entry", "deviation"):
                s = c[(c["event"] == event) & (c["model"] == m) & (c["partner"] == p)]
                if s.empty:
                    continue
                ax.step(s["time"], s["share"], where="post", color=colors[event], lw=1.2, label=event)
                ax.fill_between(s["time"], s["lower"], s["upper"], step="post", color=colors[event], alpha=0.15, lw=0)
                row = summary[(summary["event"] == event) & (summary["model"] == m) & (summary["partner"] == p)]
                if len(row):
                    med = row["median"].iloc[0]
                    med = med if isinstance(med, str) else fmt(float(med))  # read back from the TSV as a number
                    ax.text(0.98, 0.04 if event == "entry" else 0.16, f"{event} median {med}{'' if med == 'n.r.' else ' s'}",
                            transform=ax.transAxes, ha="right", fontsize=6, color=colors[event],
                            bbox={"facecolor": "white", "alpha": 0.8, "lw": 0, "pad": 1})
            ax.axhline(0.5, color="#999", lw=0.5, ls=":")
            ax.set_ylim(0, 1)
            if i == 0:
                ax.set_title(f"partner: {settings.label(p)}", fontsize=8)
            if j == 0:
                ax.set_ylabel(f"{settings.label(m)}\nshare of runs", fontsize=8)
            if i == n - 1:
                ax.set_xlabel("time (s)")
    axes[0][0].legend(fontsize=6, frameon=False, loc="upper left")
    fig.tight_layout()
    return fig


@figure("fig4_action_success", tables=("action_success",), title="Figure 4: success depends on action",
        category="Action x success", order=60)
def action_success_figure(table: pd.DataFrame, settings: Settings):
    """Figure 4: action rate against success given action per model, with lines of equal score."""
    _style()
    t = table[table["partner"] == "avg"]
    if t.empty:
        return _empty("no action x success: no T2, T3-2 or T4-2 run with a judged action in this config")
    tasks = list(dict.fromkeys(t["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.3 * len(tasks), 3.1), squeeze=False)
    palette = dict(zip(settings.order(set(t["model"])), sns.color_palette("deep")))
    grid = np.linspace(0.01, 1, 200)
    for ax, task in zip(axes[0], tasks):
        s = t[t["task"] == task]
        for level in (0.1, 0.2, 0.3, 0.5):
            ax.plot(grid, np.clip(level / grid, 0, 1.05), color="#ccc", lw=0.6)
            ax.text(min(1.0, level / 0.98), 0.98, f"{level:g}", fontsize=6, color="#999", ha="right", va="top")
        for _, r in s.iterrows():
            ax.scatter(r["p_action"], r["p_success_given_action"], color=palette.get(r["model"]), s=36, zorder=3)
            ax.annotate(settings.label(r["model"]), (r["p_action"], r["p_success_given_action"]), fontsize=7,
                        xytext=(4, 3), textcoords="offset points")
        action, success = s["action"].iloc[0], s["success"].iloc[0]
        why = _action_panel_why(s, action, success, settings)
        if why:
            add_note(fig, f"{task}: {why}")
            ax.text(0.5, 0.5, why, transform=ax.transAxes, ha="center", va="center", fontsize=7, color="#a05a00",
                    wrap=True, bbox={"facecolor": "white", "alpha": 0.9, "lw": 0})
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel(f"p({action})")
        ax.set_ylabel(f"p({success} | {action})")
        ax.set_title(task)
    fig.tight_layout()
    return fig


def _action_panel_why(s: pd.DataFrame, action: str, success: str, settings: Settings) -> str:
    """Why a Figure 4 panel shows no point (or not every model's), in one line; "" when all are drawn."""
    drawn = s["p_action"].notna() & s["p_success_given_action"].notna()
    if drawn.all():
        return ""
    runs, acts = int(s["runs"].sum()), int(s["actions"].sum())
    if not drawn.any():
        return f"no run {action} ({acts} of {runs} runs): p({success} | {action}) has no value"
    missing = ", ".join(settings.label(m) for m in s.loc[~drawn, "model"])
    return f"not drawn: {missing} (no run {action})"


@figure("fig5_windows", tables=("windows",), title="Figure 5: conversation time window", category="Time windows",
        order=70)
def windows_figure(table: pd.DataFrame, settings: Settings):
    """Figure 5: each measure per model at every window, with intervals."""
    _style()
    t = table[table["model"] != "all"]
    if t.empty:
        return _empty("no windowed runs")
    measures = list(dict.fromkeys(t["measure"]))
    cols = min(4, len(measures))
    rows = math.ceil(len(measures) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.5 * rows), squeeze=False)
    for ax in axes.ravel()[len(measures):]:
        ax.axis("off")
    models = settings.order(set(t["model"]))
    palette = dict(zip(models, sns.color_palette("deep")))
    for ax, key in zip(axes.ravel(), measures):
        s = t[t["measure"] == key]
        for k, m in enumerate(models):
            r = s[s["model"] == m].sort_values("window_s")
            if r.empty:
                continue
            x = r["window_s"].to_numpy(float) * (1 + 0.03 * (k - (len(models) - 1) / 2))
            yerr = np.vstack([r["mean"] - r["lower"], r["upper"] - r["mean"]]).clip(min=0)
            yerr = np.nan_to_num(yerr)
            ax.errorbar(x, r["mean"], yerr=yerr, marker="o", ms=3, lw=1, capsize=2, color=palette[m], label=settings.label(m))
        ax.set_xscale("log")
        windows = sorted(set(s["window_s"]))
        ax.set_xticks(windows, [f"{w:g}" for w in windows])
        ax.minorticks_off()
        ax.set_ylim(0, 1)
        ax.set_title(s["label"].iloc[0], fontsize=8)
        ax.set_xlabel("window (s)")
    axes[0][0].legend(fontsize=6, frameon=False)
    fig.tight_layout()
    return fig


def balance_points(table: pd.DataFrame, game: str, settings: Settings) -> pd.DataFrame:
    """What Figure 6 draws for one game: the table's rows as they are (every value is side a's share)."""
    s = table[table["game"] == game]
    overall = s[s["row"] == "game"].iloc[0]
    rows = [("all pairings", overall["value"], overall["lower"], overall["upper"], "#333")]
    for kind, color, role in (("as_side_a", "#1f77b4", overall["side_a"]), ("as_side_b", "#ff7f0e", overall["side_b"])):
        for _, r in s[s["row"] == kind].iterrows():
            rows.append((f"{settings.label(r['model'])} as {role}", r["value"], r["lower"], r["upper"], color))
    return pd.DataFrame(rows, columns=["label", "value", "lower", "upper", "color"])


@figure("fig6_balance", tables=("balance",), title="Figure 6: game balance", category="Game balance", order=80)
def balance_figure(table: pd.DataFrame, settings: Settings):
    """Figure 6: side a's share of wins per game, overall and per model on each side."""
    _style()
    if table.empty:
        return _empty("no asymmetric game in this config")
    games = list(dict.fromkeys(table["game"]))
    fig, axes = plt.subplots(1, len(games), figsize=(3.0 * len(games), 3.2), squeeze=False, sharey=False)
    for ax, game in zip(axes[0], games):
        overall = table[(table["game"] == game) & (table["row"] == "game")].iloc[0]
        if pd.isna(overall["value"]):  # a game without an outcome keeps its panel, saying why
            ax.text(0.5, 0.5, str(overall["advantaged"]), ha="center", va="center", fontsize=7, wrap=True)
            ax.set_axis_off()
            ax.set_title(game, fontsize=8)
            add_note(fig, f"{game}: {overall['advantaged']}")
            continue
        points = balance_points(table, game, settings)
        y = np.arange(len(points))[::-1]
        v = points["value"].to_numpy(float)
        err = np.nan_to_num(np.vstack([v - points["lower"].to_numpy(float), points["upper"].to_numpy(float) - v]).clip(min=0))
        for yi, vi, e0, e1, col in zip(y, v, err[0], err[1], points["color"]):
            ax.errorbar(vi, yi, xerr=[[e0], [e1]], fmt="o", color=col, ms=4, capsize=2)
        ax.axvline(0.5, color="#999", lw=0.8, ls="--")
        ax.set_yticks(y, list(points["label"]), fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"{overall['side_a']}'s share of wins")
        verdict = str(overall["advantaged"])
        ax.set_title(f"{game}: " + (verdict if verdict.startswith(("no verdict", "neither")) else f"favours {verdict}"), fontsize=8)
        if verdict.startswith("no verdict"):
            add_note(fig, f"{game}: {verdict}")
    fig.tight_layout()
    return fig


@figure("leaderboard", tables=("leaderboard",), category="Rating", order=90)
def leaderboard_figure(board: pd.DataFrame, settings: Settings):
    """Bradley-Terry ratings with intervals; reference models filled, new models hollow."""
    _style()
    if board.empty or "rating" not in board.columns or board["rating"].isna().all():
        return _empty("no contested battles to rate")
    b = board[board["rating"].notna()].sort_values("rating")
    fig, ax = plt.subplots(figsize=(5, 0.45 * len(b) + 1.2))
    y = np.arange(len(b))
    err = np.nan_to_num(np.vstack([b["rating"] - b["lower"], b["upper"] - b["rating"]]).clip(min=0))
    for yi, (_, r), e0, e1 in zip(y, b.iterrows(), err[0], err[1]):
        ref = bool(r["reference"]) if "reference" in r else True
        ax.errorbar(r["rating"], yi, xerr=[[e0], [e1]], fmt="o", color="#1f77b4", mfc="#1f77b4" if ref else "white", capsize=3)
    ax.set_yticks(y, [f"{int(r['rank'])}. {settings.label(r['model'])}{' (anchor)' if r.get('anchor') else ''}" for _, r in b.iterrows()])
    ax.set_xlabel("rating (anchored)")
    fig.tight_layout()
    return fig


@figure("text_pairing", tables=("text_pairing",), when="text_pairing.enabled", category="Text pairing", order=100)
def text_pairing_figure(table: pd.DataFrame, settings: Settings):
    """Table 9 as bars: speech models (averaged over pairings) beside the text-only pairing."""
    _style()
    tasks = [c for c in table.columns if c not in ("model", "label", "kind")]
    if table.empty or not tasks:
        return _empty("no text-only pairing")
    long = table.melt(id_vars=["label", "kind"], value_vars=tasks, var_name="task", value_name="score")
    fig, ax = plt.subplots(figsize=(1.6 * len(tasks) + 2, 3.0))
    sns.barplot(long, x="task", y="score", hue="label", ax=ax, palette="deep")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, frameon=False, ncol=2)
    fig.tight_layout()
    return fig


# kind -> drawing function of one table, from the @figure declarations ("matrices" and "timing" are
# drawn from several tables: see draw)
FIGURES: dict[str, Callable] = {f.kind: globals()[f.function] for f in _registry.figures().values()
                                if f.kind not in ("matrices", "timing") and f.module == __name__}


def draw(name: str, paths: list[Path], tables: list[pd.DataFrame], settings: Settings):
    """The figure ``name`` from its tables (``matrices``: any number of matrix TSVs; ``timing``: summary, curves)."""
    from dyafdb.errors import InputError

    if name == "matrices":
        mats = []
        for path, table in zip(paths, tables):
            key = Path(path).stem.split("_", 1)[-1]
            title = (C.TASK_TITLES.get(key) or C.TURN_TAKING_LABELS.get(key) or C.HEALTH_LABELS.get(key)
                     or Path(path).stem.replace("_", " "))
            mats.append(Matrix.from_frame(table, name=Path(path).stem, title=title))
        return matrices_figure(mats, settings)
    if name == "timing":
        if len(tables) != 2:
            raise InputError("figure timing needs two tables: the timing summary, then the curves")
        return timing_figure(tables[1], tables[0], settings)
    draw_one = FIGURES.get(name) or next((_registry.resolve(f) for f in _registry.figures().values() if f.kind == name), None)
    if draw_one is None:
        raise InputError(f"unknown figure {name!r}; choose one of {', '.join(_registry.figure_kinds())}")
    return draw_one(tables[0], settings)


def draw_files(name: str, inputs: list[Path], settings: Settings, out_prefix: Path | str) -> list[Path]:
    """`dyafdb analysis figure`: read the figure's table(s), draw it and save it in every configured format."""
    from dyafdb.analysis.io import read_tsv
    from dyafdb.errors import InputError

    tables = [read_tsv(p) for p in inputs]
    try:
        fig = draw(name, inputs, tables, settings)
    except KeyError as exc:
        raise InputError(f"{', '.join(map(str, inputs))}: not the table(s) figure {name} draws (no column {exc}); "
                         "pass the TSV its analysis rule writes (docs/analysis.md)") from None
    return save(fig, out_prefix, settings)
