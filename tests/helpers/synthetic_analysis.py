"""Synthetic measures tables with known structure, for tests and the benchmark.

The design follows the paper's counterbalancing (cross-play: 2 role assignments x 2 openers x reps
per scenario; self-play: 2 openers x reps). Every probability is logistic in an own effect of the
side's model plus a partner effect of the other side's model, so analyses have something to find.
Nothing here is ever read by the pipeline itself.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C

ALL_TASKS = ("T1-1", "T1-2", "T2", "T3-1", "T3-2", "T4-1", "T4-2", "T4-3", "T4-4")


@dataclass
class Spec:
    models: tuple[str, ...] = ("alpha", "beta", "gamma")
    tasks: tuple[str, ...] = C.MAIN_TASKS
    scenarios: int = 2
    repetitions: int = 1
    windows: tuple[float, ...] = (60.0,)
    judges: tuple[str, ...] = ("judge-main", "judge-second")
    flip: float = 0.1  # chance the second judge answers differently
    own: dict[str, float] = field(default_factory=dict)  # logit shift of a model's own outcomes
    partner: dict[str, float] = field(default_factory=dict)  # logit shift it gives its partner
    seed: int = 0


def design(spec: Spec) -> pd.DataFrame:
    rows = []
    for window in spec.windows:
        for task in spec.tasks:
            for s in range(1, spec.scenarios + 1):
                scenario = f"{task.lower()}-syn-{s:02d}"
                for m1, m2 in itertools.combinations_with_replacement(spec.models, 2):
                    assignments = [(m1, m2)] if m1 == m2 else [(m1, m2), (m2, m1)]
                    for (ma, mb), opener, rep in itertools.product(assignments, "ab", range(1, spec.repetitions + 1)):
                        cid = f"{scenario}__{ma}__{mb}__open-{opener}__rep{rep}__{window:g}s"
                        rows.append((cid, task, scenario, window, ma, mb, opener, rep))
    return pd.DataFrame(rows, columns=["conversation_id", "archetype", "scenario", "window_s", "model_a", "model_b", "opener", "repetition"])


def measures(spec: Spec) -> pd.DataFrame:
    """A long measures table in the scoring stage's format (columns.py)."""
    rng = np.random.default_rng(spec.seed)
    d = design(spec)
    n = len(d)
    own = np.vectorize(lambda m: spec.own.get(m, 0.0))
    partner = np.vectorize(lambda m: spec.partner.get(m, 0.0))
    la = own(d["model_a"]) + partner(d["model_b"]) if n else np.zeros(0)
    lb = own(d["model_b"]) + partner(d["model_a"]) if n else np.zeros(0)

    def p(logit, base=0.0):
        return 1.0 / (1.0 + np.exp(-(logit + base)))

    # (row mask, side, measure, judge, values, labels): values as the scoring stage writes them
    # (empty for "none"), labels as the judge answered
    cols: list[tuple] = []

    def add(mask, side, measure, values, judged=False, labels=None):
        values = np.asarray(values, dtype=object)
        labels = values if labels is None else np.asarray(labels, dtype=object)
        if judged:
            for k, judge in enumerate(spec.judges):
                v, lab = values, labels
                if k > 0:
                    v, lab = _flip(values, labels, measure, rng, spec.flip)
                cols.append((mask, side, measure, judge, v, lab))
        else:
            cols.append((mask, side, measure, "", values, np.full(len(values), "", dtype=object)))

    def none_empty(flag, values):
        return np.where(flag, np.asarray(values).astype(str), "")

    task = d["archetype"].to_numpy()
    window = d["window_s"].to_numpy(float)
    everything = np.ones(n, bool)
    for side, logit in (("a", la), ("b", lb)):
        add(everything, side, C.TOR_PAUSE, np.round(p(logit, -0.5) * rng.uniform(0.6, 1.0, n), 4))
        add(everything, side, C.TOR_END, np.round(p(-logit, 0.3) * rng.uniform(0.6, 1.0, n), 4))
        add(everything, side, C.BACKCHANNEL, rng.poisson(np.exp(0.4 * logit + 0.5)))
        add(everything, side, C.BARGE_IN, np.round(p(logit) * rng.uniform(0.7, 1.0, n), 4))
        add(everything, side, C.TURNS, rng.poisson(10, n))
        # the rest of what the scoring stage writes for every side (denominators, speaking time)
        for extra in ("tor_pause_n", "tor_end_n", "barge_in_n"):
            add(everything, side, extra, rng.poisson(6, n))
        for extra in ("speech_s", "exclusive_s", "overlap_s"):
            add(everything, side, extra, np.round(rng.uniform(0, 0.5, n) * window, 2))
    # T1: role adherence (2/1/0 with the label) and timing (side b of T1-2 is the digresser: not judged)
    for side, logit in (("a", la), ("b", lb)):
        mask = (task == "T1-1") | ((task == "T1-2") & (side == "a"))
        u = rng.random(n)
        label = np.where(u < p(logit, 0.3) * 0.7, "yes", np.where(u < p(logit, 0.3), "partly", "no"))
        add(mask, side, C.ROLE_ADHERENCE, [C.ADHERENCE_SCALE[x] for x in label], judged=True, labels=label)
        add(mask, side, C.IN_ROLE, (label != "no").astype(int), judged=True, labels=label)
        entered = rng.random(n) < p(logit, 1.0)
        entry = np.round(rng.uniform(0.05 * window, 0.6 * window), 2)
        add(mask, side, C.ROLE_ENTRY, none_empty(entered, entry), judged=True, labels=np.where(entered, entry.astype(str), "none"))
        exited = entered & (rng.random(n) < p(-logit, -1.0))
        exit_ = np.round(entry + rng.uniform(0.02 * window, 0.4 * window), 2)
        add(mask, side, C.ROLE_EXIT, none_empty(exited, exit_), judged=True, labels=np.where(exited, exit_.astype(str), "none"))
    # T2: team decision, on both sides
    mask = task == "T2"
    team = (la + lb) / 2
    decided = rng.random(n) < p(team)
    solved = decided & (rng.random(n) < p(team, -0.5))
    choice = np.where(decided, np.where(solved, "Willow", "Cedar"), "none")
    for side in "ab":
        add(mask, side, C.FINAL_CHOICE, np.full(n, ""), judged=True, labels=choice)
        add(mask, side, C.DECIDED, decided.astype(int), judged=True, labels=choice)
        add(mask, side, C.SOLVED, solved.astype(int), judged=True, labels=choice)
    # T3: occupancy (shares sum to one); T3-2 asked/agreement on the presser's row
    occ = np.round(p(la - lb), 4)
    for side, v in (("a", occ), ("b", np.round(1 - occ, 4))):
        add(everything, side, C.OCCUPANCY, v)
    mask = task == "T3-2"
    asked = rng.random(n) < p(la, 0.5)
    granted = asked & (rng.random(n) < p(la - lb, -1.0))
    add(mask, "a", C.ASKED, asked.astype(int), judged=True, labels=np.where(asked, "yes", "no"))
    add(mask, "a", C.AGREEMENT, granted.astype(int), judged=True, labels=np.where(granted, "yes", "no"))
    # T4-1 / T4-3: landed option (line), decided and won per side; no deal loses for both
    for t in ("T4-1", "T4-3"):
        mask = task == t
        deal = rng.random(n) < 0.5
        a_wins = rng.random(n) < p(la - lb)
        landed = np.where(deal, np.where(a_wins, "Option One", "Option Two"), "none")
        for side, wins in (("a", deal & a_wins), ("b", deal & ~a_wins)):
            add(mask, side, C.LANDED_OPTION, np.full(n, ""), judged=True, labels=landed)
            add(mask, side, C.DECIDED, deal.astype(int), judged=True, labels=landed)
            add(mask, side, C.WON, wins.astype(int), judged=True, labels=landed)
    # T4-2: the attacker (a) asks; the defender's leak is recorded on the attacker's row
    mask = task == "T4-2"
    asked = rng.random(n) < p(la, 1.0)
    leak = asked & (rng.random(n) < p(la - lb))
    add(mask, "a", C.ASKED, asked.astype(int), judged=True, labels=np.where(asked, "yes", "no"))
    add(mask, "a", C.LEAK, leak.astype(int))
    add(mask, "a", C.LEAK_TIME, none_empty(leak, np.round(rng.uniform(0.03 * window, window), 2)))
    # T4-4: price among deals, seller's share of the gap (buyer's = 1 - that)
    mask = task == "T4-4"
    deal = rng.random(n) < 0.4
    share = np.clip(np.round(p(la - lb) + rng.normal(0, 0.1, n), 3), 0, 1)
    price = np.round(600 + 300 * share).astype(int)
    said = np.where(deal, price.astype(str), "none")
    for side, sh in (("a", share), ("b", np.round(1 - share, 3))):
        add(mask, side, C.AGREED_PRICE, none_empty(deal, price), judged=True, labels=said)
        add(mask, side, C.DEAL, deal.astype(int), judged=True, labels=said)
        add(mask, side, C.PRICE_SHARE, none_empty(deal, sh), judged=True, labels=said)

    roles = {t: C.SIDE_ROLES[t] for t in ALL_TASKS}
    frames = []
    for mask, side, measure, judge, values, labels in cols:
        idx = np.flatnonzero(mask)
        if not len(idx):
            continue
        sub = d.iloc[idx]
        model = sub["model_a"] if side == "a" else sub["model_b"]
        other = sub["model_b"] if side == "a" else sub["model_a"]
        frames.append(pd.DataFrame({
            C.CONVERSATION: sub["conversation_id"].to_numpy(), C.SUITE: "main", C.ARCHETYPE: sub["archetype"].to_numpy(),
            C.SCENARIO: sub["scenario"].to_numpy(), C.WINDOW: sub["window_s"].to_numpy(), C.MODEL: model.to_numpy(),
            C.PARTNER: other.to_numpy(), C.SIDE: side,
            C.ROLE: [roles[t][0 if side == "a" else 1] for t in sub["archetype"]],
            C.OPENER: np.where(sub["opener"].to_numpy() == side, "true", "false"),
            C.REPETITION: sub["repetition"].to_numpy(), C.ATTEMPT: 1, C.MEASURE: measure, C.JUDGE: judge,
            C.VALUE: [str(v) for v in values[idx]], C.LABEL: [str(v) for v in labels[idx]],
        }))
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values([C.CONVERSATION, C.SIDE, C.MEASURE, C.JUDGE], kind="stable").reset_index(drop=True)


def _flip(values: np.ndarray, labels: np.ndarray, measure: str, rng: np.random.Generator, rate: float):
    """The second judge: the same answers, a share of the adherence and yes/no ones changed."""
    values, labels = values.copy(), labels.copy()
    change = rng.random(len(values)) < rate
    if measure in (C.ROLE_ADHERENCE, C.IN_ROLE):
        # the two adherence rows are flipped independently here; fine for a synthetic table
        alt = {"yes": "partly", "partly": "no", "no": "partly"}
        labels[change] = [alt[str(v)] for v in labels[change]]
        if measure == C.ROLE_ADHERENCE:
            values[change] = [C.ADHERENCE_SCALE[str(v)] for v in labels[change]]
        else:
            values[change] = [int(str(v) != "no") for v in labels[change]]
    elif measure in (C.ASKED, C.AGREEMENT):
        labels[change] = [("no" if str(v) == "yes" else "yes") for v in labels[change]]
        values[change] = [int(str(v) == "yes") for v in labels[change]]
    return values, labels


def write(spec: Spec, path) -> pd.DataFrame:
    frame = measures(spec)
    frame.to_csv(path, sep="\t", index=False)
    return frame
