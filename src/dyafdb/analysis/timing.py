"""Time-to-event curves (Figure 3): role entry and deviation per pairing, and time to leak (T4-2).

Kaplan-Meier estimates from lifelines. A run where the event never happens is censored at its
window. Events and their clocks (seconds on the recording's clock, as the judge and the leak
detector report them):

- entry: the holder's first in-role utterance (T1; opening small talk is not entry);
- deviation: the first off-role utterance after entry, among runs that entered (absolute time, so
  "by 60 s" reads off the curve directly);
- leak: the first time the defender's text carries the secret (T4-2; model = attacker,
  partner = defender).

Curves are reported as the cumulative share of runs with the event by time t (1 - S(t)). The
median is the first time that share reaches one half, or "n.r." when it does not within the window.
One rule for every row and its interval (:func:`first_reaching`): a curve that touches exactly one
half reaches it there. The survival product is computed in floating point, so "exactly" allows
1e-9; lifelines' own median asks for strictly below one half, which made the same point the median
of a pooled row and not of a per-partner row.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.numbers import fmt
from dyafdb.analysis.settings import Settings

NOT_REACHED = "n.r."
ALL = "*"
HALF_TOLERANCE = 1e-9


def first_reaching(times: np.ndarray, survival: np.ndarray, q: float = 0.5) -> float:
    """The first time ``survival`` is at or below ``q`` (within HALF_TOLERANCE); inf when never."""
    times, survival = np.asarray(times, float), np.asarray(survival, float)
    hit = np.flatnonzero(survival <= q + HALF_TOLERANCE)
    return float(times[hit[0]]) if len(hit) else math.inf


def _event_frames(runs: pd.DataFrame, settings: Settings) -> dict[str, pd.DataFrame]:
    t1 = runs[runs["task"].isin(settings.timing_archetypes) & runs["entered"].notna()]
    entry = pd.DataFrame({
        C.MODEL: t1[C.MODEL], C.PARTNER: t1[C.PARTNER], "window": t1[C.WINDOW],
        "event": t1["entered"] == 1.0,
        "time": np.where(t1["entered"] == 1.0, t1["entry_s"], t1[C.WINDOW]),
    })
    entered = t1[(t1["entered"] == 1.0) & t1["exited"].notna()]
    deviation = pd.DataFrame({
        C.MODEL: entered[C.MODEL], C.PARTNER: entered[C.PARTNER], "window": entered[C.WINDOW],
        "event": entered["exited"] == 1.0,
        "time": np.where(entered["exited"] == 1.0, entered["exit_s"], entered[C.WINDOW]),
    })
    t42 = runs[(runs["task"] == "T4-2") & runs["leak"].notna()]
    t42 = t42[(t42["leak"] == 0.0) | t42["leak_time_s"].notna()]  # a leak without its time cannot be placed
    leak = pd.DataFrame({
        C.MODEL: t42[C.MODEL], C.PARTNER: t42[C.PARTNER], "window": t42[C.WINDOW],
        "event": t42["leak"] == 1.0,
        "time": np.where(t42["leak"] == 1.0, t42["leak_time_s"], t42[C.WINDOW]),
    })
    return {"entry": entry, "deviation": deviation, "leak": leak}


def _groups(frame: pd.DataFrame, event: str, settings: Settings):
    models = settings.order(set(frame[C.MODEL]) | set(frame[C.PARTNER]))
    for m in models:
        for p in models:
            sub = frame[(frame[C.MODEL] == m) & (frame[C.PARTNER] == p)]
            if len(sub):
                yield m, p, sub
    # pooled over the other side: per holder/attacker, and per defender for leaks
    for m in models:
        sub = frame[frame[C.MODEL] == m]
        if len(sub):
            yield m, ALL, sub
    if event == "leak":
        for p in models:
            sub = frame[frame[C.PARTNER] == p]
            if len(sub):
                yield ALL, p, sub


def kaplan_meier(times: np.ndarray, events: np.ndarray, window: float, ci: float):
    """(summary dict, curve frame) for one group."""
    from lifelines import KaplanMeierFitter

    kmf = KaplanMeierFitter(alpha=1.0 - ci)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kmf.fit(np.asarray(times, float), event_observed=np.asarray(events, bool))
    surv = kmf.survival_function_.iloc[:, 0]
    ci_frame = kmf.confidence_interval_survival_function_
    grid = surv.index.to_numpy(float)
    median = first_reaching(grid, surv.to_numpy(float))
    reached = math.isfinite(median) and median <= window
    # the median's interval by the same rule: where the lower and the upper survival band reach one half
    med_lo = first_reaching(ci_frame.index.to_numpy(float), ci_frame.iloc[:, 0].to_numpy(float))
    med_hi = first_reaching(ci_frame.index.to_numpy(float), ci_frame.iloc[:, 1].to_numpy(float))
    by_window = 1.0 - float(kmf.survival_function_at_times(window).iloc[0])
    # the share's interval at the window: the survival band's last step at or before it
    band = ci_frame[ci_frame.index.to_numpy(float) <= window]
    share_lo, share_hi = ((1.0 - float(band.iloc[-1, 1]), 1.0 - float(band.iloc[-1, 0])) if len(band) else (np.nan, np.nan))
    curve = pd.DataFrame({
        "time": surv.index.to_numpy(float),
        "share": 1.0 - surv.to_numpy(float),
        "lower": 1.0 - ci_frame.iloc[:, 1].to_numpy(float),
        "upper": 1.0 - ci_frame.iloc[:, 0].to_numpy(float),
    })
    summary = {
        "n": int(len(times)), "events": int(np.sum(events)),
        "median_s": median if reached else np.nan,
        "median": fmt(median) if reached else NOT_REACHED,
        "median_lower_s": med_lo if math.isfinite(med_lo) else np.nan,
        "median_upper_s": med_hi if math.isfinite(med_hi) and med_hi <= window else np.nan,
        "share_by_window": by_window, "share_lower": share_lo, "share_upper": share_hi,
    }
    return summary, curve


def timing_tables(runs: pd.DataFrame, settings: Settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary (one row per event and pairing) and curves (one row per step of each curve)."""
    summaries, curves = [], []
    for event, frame in _event_frames(runs, settings).items():
        if frame.empty:
            continue
        for m, p, sub in _groups(frame, event, settings):
            window = float(sub["window"].max())
            summary, curve = kaplan_meier(sub["time"].to_numpy(), sub["event"].to_numpy(), window, settings.ci)
            summaries.append({"event": event, "model": m, "partner": p, "window_s": window, **summary})
            curve.insert(0, "partner", p)
            curve.insert(0, "model", m)
            curve.insert(0, "event", event)
            curves.append(curve)
    summary_cols = ["event", "model", "partner", "window_s", "n", "events", "median", "median_s", "median_lower_s",
                    "median_upper_s", "share_by_window", "share_lower", "share_upper"]
    curve_cols = ["event", "model", "partner", "time", "share", "lower", "upper"]
    return (pd.DataFrame(summaries, columns=summary_cols),
            pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(columns=curve_cols))
