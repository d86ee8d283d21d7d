"""Audio health across pairings: per-pairing matrices, per-model averages (docs/analysis.md).

The measures are the score job's (:mod:`dyafdb.score.health`, declared in its ``METRICS``), one value
per conversation side, defined in every archetype. A matrix cell (model, partner) averages the
sides of that model against that partner, each archetype weighted equally (as the turn-taking
matrices do); a model's average is the mean of its cells, so each partner weighs the same. The
variance decomposition of these measures (task, model, partner, model x partner) is in the variance
table (kind ``health``): a large partner or interaction share says the partner changes the model's
audio, a large model share that it is the model's own.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.settings import Settings
from dyafdb.analysis.tables import Matrix, turn_taking_matrix
from dyafdb.errors import InputError


def _tasks(runs: pd.DataFrame) -> tuple[str, ...]:
    return tuple(sorted(set(runs["task"]))) if "task" in runs and len(runs) else C.MAIN_TASKS


def health_matrix(runs: pd.DataFrame, metric: str, settings: Settings) -> Matrix:
    """One audio-health measure per pairing (row model against column partner), every archetype."""
    if metric not in C.HEALTH:
        raise InputError(f"--metric {metric!r} is not an audio-health measure; choose one of {', '.join(C.HEALTH)}")
    label = C.HEALTH_LABELS[metric]
    m = turn_taking_matrix(runs, metric, settings, _tasks(runs), label=label,
                           no_case="no side had a value: no speech, no text, or no turn end to answer")
    m.name = f"health_{metric}"
    m.note = "; ".join(x for x in (m.note, C.HEALTH_SCALES[metric]) if x)
    return m


def health_models(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Per model and measure: its average over its pairings (``own``), what its partners measure
    against it (``as_partner``), its self-play cell and the number of sides behind them."""
    rows = []
    for metric in C.HEALTH:
        if metric not in runs:
            continue
        m = health_matrix(runs, metric, settings)
        for model in m.models:
            diag = m.values.loc[model, model] if model in m.partners else np.nan
            rows.append({"measure": metric, "label": C.HEALTH_LABELS[metric], "model": model,
                         "own": m.row_avg.get(model, np.nan),
                         "own_lower": m.avg_lower.get(model, np.nan) if m.avg_lower is not None else np.nan,
                         "own_upper": m.avg_upper.get(model, np.nan) if m.avg_upper is not None else np.nan,
                         "as_partner": m.column_avg.get(model, np.nan) if m.column_avg is not None else np.nan,
                         "self_play": diag, "pairings": int(m.values.loc[model].notna().sum()),
                         "sides": int(m.n.loc[model].sum())})
    return pd.DataFrame(rows, columns=["measure", "label", "model", "own", "own_lower", "own_upper", "as_partner", "self_play",
                                       "pairings", "sides"])


def health_models_wide(table: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """One row per model, one column per measure (its average over its pairings), for the HTML page."""
    if table.empty:
        return pd.DataFrame(columns=["model"])
    from dyafdb.analysis.numbers import fmt
    from dyafdb.analysis.render import interval_text

    # each value as the matrices print a row average: its interval and the sides behind it
    shown = table.assign(cell=[" ".join(x for x in (fmt(v), interval_text(lo, hi), f"n={int(n)}") if x)
                               for v, lo, hi, n in zip(table["own"], table["own_lower"], table["own_upper"], table["sides"])])
    wide = shown.pivot(index="model", columns="label", values="cell")
    wide = wide[[C.HEALTH_LABELS[m] for m in C.HEALTH if C.HEALTH_LABELS[m] in wide.columns]]
    order = list(dict.fromkeys(table["model"]))
    wide = wide.reindex(order)
    wide.index = [settings.label(m) for m in wide.index]
    return wide.reset_index(names="model")
