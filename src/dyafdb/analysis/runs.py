"""From the long measures table to one row per conversation side with every indicator the analysis uses.

Scoring conventions (paper 3.1, 4; Appendix B, G), applied here once for every table:

- The row's ``model`` is the side's model and ``partner`` the other side's; a matrix cell
  (model, partner) averages the rows of that perspective.
- Side a is the reported side of asymmetric archetypes (T1-2 holder, T3-2 presser, T4-2 attacker,
  T4-3 claimant, T4-4 seller): ``score`` is set on side a rows only there.
- T1-1, T3-1 and T4-1 score both sides. T3-1 self-play is pinned at 0.50 (the two shares of one run
  sum to one, so the cell carries no information) and flagged in ``pinned``.
- T2 is a team score: both sides of a cross-play run carry the run's ``solved``, which makes the
  matrix symmetric; a self-play run counts once.
- T4-1 and T4-3: a run where the pair lands on nothing is a loss for both; T4-3 and T4-4 are
  reported among decided runs (``score`` is NaN on undecided runs, ``decided`` says which).
- A side whose recording stayed garbled after its last attempt (``garble_failure``) counts as a
  failure of its model outside T3 (where occupancy is defined on any audio and the run is scored as
  recorded; Appendix H): its own scored row gets 0 (for T4-3/T4-4: no deal), and the partner's
  scores from that run are left out, since the partner answered audio the transcript does not hold.
  (The scoring stage writes only the garble rows of such a run, so there is nothing else to read.)
- Conversation-level judge answers (final choice, landed option, agreed price, asked, agreement,
  leak) are read from whichever side carries them, side a first.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.answers import AnswerPolicy, apply_policy, ledger, run_columns
from dyafdb.analysis.settings import Settings
from dyafdb.errors import InputError

CONVERSATION_LEVEL = (
    C.FINAL_CHOICE, C.SOLVED, C.ASKED, C.AGREEMENT, C.LANDED_OPTION, C.LANDED_LINE, C.AGREED_PRICE,
    C.DECIDED, C.DEAL, C.LEAK, C.LEAK_TIME,
)
META = [C.CONVERSATION, C.SUITE, C.ARCHETYPE, C.SCENARIO, C.WINDOW, C.SIDE, C.MODEL, C.PARTNER, C.ROLE,
        C.OPENER, C.REPETITION, C.QUALITY]
INDICATORS = [
    "score", "decided", "asked", "success", "entered", "entry_s", "exited", "exit_s", "adherence_label",
    "leak", "leak_time_s", "delivered", "garbled", "pinned",
    *C.TURN_TAKING, C.TURNS, C.OCCUPANCY, *C.HEALTH,
]


def resolve_judges(measures: pd.DataFrame, settings: Settings) -> tuple[str | None, str | None]:
    """Main and second judge: from settings when named, else by how many labels each judge gave."""
    judged = measures.loc[measures[C.JUDGE] != "", C.JUDGE]
    counts = judged.value_counts()
    present = sorted(counts.index, key=lambda j: (-counts[j], j))
    main, second = settings.main_judge, settings.second_judge
    for name, value in (("main_judge", main), ("second_judge", second)):
        if value is not None and present and value not in counts.index:
            raise InputError(f"analysis.{name} = {value!r} gave no labels in measures.tsv; judges present: {', '.join(present)}")
    hint_main, hint_second = settings.judge_hint
    if main is None:
        main = hint_main if hint_main in counts.index else (present[0] if present else None)
    if second is None and hint_second in counts.index and hint_second != main:
        second = hint_second
    if second is None:
        others = [j for j in present if j != main]
        second = others[0] if others else None
    return main, second


def _none(s: pd.Series) -> pd.Series:
    return s.fillna("").str.lower().isin(C.NONE_LABELS)


def _bool(s: pd.Series) -> pd.Series:
    low = s.fillna("").str.lower()
    out = pd.Series(np.nan, index=s.index)
    out[low.isin(C.TRUE_LABELS)] = 1.0
    out[low.isin(C.FALSE_LABELS)] = 0.0
    return out


def _num(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s.where(~_none(s)), errors="coerce")


def widen(measures: pd.DataFrame, judge: str | None, policy: AnswerPolicy | None = None) -> pd.DataFrame:
    """One row per (conversation, side): design columns plus one string column per measure, the judge's
    answers put through the answer policy (dyafdb.analysis.answers)."""
    keep = (measures[C.JUDGE] == "") | (measures[C.JUDGE] == (judge or ""))
    m = apply_policy(measures.loc[keep], policy or AnswerPolicy.default())
    attempts = pd.to_numeric(m[C.ATTEMPT], errors="coerce")
    if attempts.notna().any():
        # the accepted attempt is the last one recorded for the conversation
        last = attempts.groupby(m[C.CONVERSATION]).transform("max")
        m = m.loc[attempts.isna() | (attempts == last)]
    meta = _both_sides(m.drop_duplicates([C.CONVERSATION, C.SIDE])[META]).set_index([C.CONVERSATION, C.SIDE])
    # A judged "none" is written as an empty value with the label "none"; an off-label reply as an
    # empty value with the label "invalid". Reading the label where the value is empty keeps the two
    # apart: "none" is an answer (e.g. never entered: censored), "invalid" is no answer (left out).
    # Only for measures whose label is the answer itself (a time, a candidate): a derived row such as
    # gap_share carries the price as its label, which must not stand in for the share.
    label = m[C.LABEL].where(~m[C.LABEL].str.lower().isin(["invalid"]) & m[C.MEASURE].isin(C.JUDGE_LABEL_MEASURES), "")
    cell = m[C.VALUE].where(m[C.VALUE] != "", label)
    values = (m.assign(**{C.VALUE: cell}).drop_duplicates([C.CONVERSATION, C.SIDE, C.MEASURE], keep="last")
               .set_index([C.CONVERSATION, C.SIDE, C.MEASURE])[C.VALUE].unstack(C.MEASURE))
    wide = meta.join(values).reset_index()
    # a conversation is demo quality when any of its rows is (e.g. its judge answers)
    demo = m.loc[m[C.QUALITY].str.lower() == "demo", C.CONVERSATION].unique()
    wide[C.QUALITY] = np.where(wide[C.CONVERSATION].isin(demo), "demo", "")
    wide = wide.sort_values([C.CONVERSATION, C.SIDE], kind="stable").reset_index(drop=True)
    for col in CONVERSATION_LEVEL:
        if col in wide.columns:
            wide[col] = _conversation_value(wide, col)
    return wide


def _both_sides(meta: pd.DataFrame) -> pd.DataFrame:
    """Every conversation with a row per side: a side without rows (e.g. only the attacker's leak row
    was written) is mirrored from the other side's design columns."""
    counts = meta.groupby(C.CONVERSATION)[C.SIDE].transform("size")
    lone = meta[counts == 1]
    if lone.empty:
        return meta
    mirror = lone.copy()
    mirror[C.SIDE] = np.where(lone[C.SIDE] == "a", "b", "a")
    mirror[C.MODEL], mirror[C.PARTNER] = lone[C.PARTNER].to_numpy(), lone[C.MODEL].to_numpy()
    mirror[C.OPENER] = ~lone[C.OPENER].astype(bool)
    mirror[C.ROLE] = [C.SIDE_ROLES.get(a, ("", ""))[0 if s == "a" else 1] for a, s in zip(lone[C.ARCHETYPE], mirror[C.SIDE])]
    return pd.concat([meta, mirror], ignore_index=True)


def _conversation_value(wide: pd.DataFrame, col: str) -> pd.Series:
    """Side a's value where it has one, else side b's, copied to both sides."""
    present = wide[col].fillna("") != ""
    ranked = wide.loc[present, [C.CONVERSATION, C.SIDE, col]].sort_values([C.CONVERSATION, C.SIDE], kind="stable")
    first = ranked.drop_duplicates(C.CONVERSATION).set_index(C.CONVERSATION)[col]
    return wide[C.CONVERSATION].map(first).fillna("")


def _col(wide: pd.DataFrame, name: str) -> pd.Series:
    return wide[name] if name in wide.columns else pd.Series("", index=wide.index, dtype=object)


def build_runs(measures: pd.DataFrame, settings: Settings | None = None, judge: str | None = "auto") -> pd.DataFrame:
    """The per-run frame of every conversation side (all windows), scored with ``judge``'s labels."""
    settings = settings or Settings()
    if judge == "auto":
        judge, _ = resolve_judges(measures, settings)
    wide = widen(measures, judge, settings.answers)
    task = wide[C.ARCHETYPE]
    side_a = wide[C.SIDE] == "a"
    self_play = wide[C.MODEL] == wide[C.PARTNER]
    out = wide[META].copy()
    out["task"] = task
    out["play"] = np.where(self_play, "self", "cross")

    adherence = _col(wide, C.ROLE_ADHERENCE).fillna("").str.lower().map(C.ADHERENCE_LABELS).fillna("")
    in_role = _bool(_col(wide, C.IN_ROLE))
    in_role = in_role.where(in_role.notna(), adherence.map({"yes": 1.0, "partly": 1.0, "no": 0.0}))
    entry = _num(_col(wide, C.ROLE_ENTRY))
    exit_ = _num(_col(wide, C.ROLE_EXIT))
    solved = _bool(_col(wide, C.SOLVED))
    asked = _bool(_col(wide, C.ASKED))
    agreement = _bool(_col(wide, C.AGREEMENT))
    won = _bool(_col(wide, C.WON))
    leak = _bool(_col(wide, C.LEAK))
    leak_time = _num(_col(wide, C.LEAK_TIME))
    occupancy = _num(_col(wide, C.OCCUPANCY))
    share = _num(_col(wide, C.PRICE_SHARE))
    explicit_decided = _bool(_col(wide, C.DECIDED))

    def decided_from(*cols: str, flag: pd.Series = explicit_decided) -> pd.Series:
        """The judge's decided flag where written, else whether the choice label is not "none"."""
        out = flag.copy()
        for col in cols:
            raw = _col(wide, col)
            known = raw.fillna("") != ""
            derived = pd.Series(np.where(known, (~_none(raw)).astype(float), np.nan), index=wide.index)
            out = out.where(out.notna(), derived)
        return out

    score = pd.Series(np.nan, index=wide.index)
    decided = pd.Series(np.nan, index=wide.index)
    success = pd.Series(np.nan, index=wide.index)

    t1 = task.isin(["T1-1", "T1-2"])
    holder = t1 & ((task == "T1-1") | side_a)
    score[holder] = in_role[holder]

    t2 = task == "T2"
    team_row = t2 & (~self_play | side_a)
    d2 = decided_from(C.FINAL_CHOICE)
    score[team_row] = solved[team_row]
    decided[team_row] = d2[team_row]
    success[team_row] = solved[team_row]

    t31 = task == "T3-1"
    score[t31] = occupancy[t31]
    pinned = t31 & self_play
    score[pinned & side_a] = 0.5
    score[pinned & ~side_a] = np.nan

    t32 = (task == "T3-2") & side_a
    score[t32] = occupancy[t32]
    success[t32] = agreement[t32]

    t41 = task == "T4-1"
    d41 = decided_from(C.LANDED_OPTION)
    won41 = won.where(won.notna(), np.where(d41 == 0.0, 0.0, np.nan))
    score[t41] = won41[t41].where(d41[t41] != 0.0, 0.0)  # no deal loses for both
    decided[t41] = d41[t41]
    success[t41] = won41[t41]

    t42 = (task == "T4-2") & side_a
    score[t42] = leak[t42]
    success[t42] = leak[t42]

    t43 = task == "T4-3"
    d43 = decided_from(C.LANDED_OPTION, C.LANDED_LINE)
    claimant_won = _side_a_or_complement(wide, won)
    t43a = t43 & side_a
    score[t43a] = claimant_won[t43a].where(d43[t43a] == 1.0)
    decided[t43a] = d43[t43a]

    t44 = task == "T4-4"
    d44 = decided_from(C.AGREED_PRICE, flag=_bool(_col(wide, C.DEAL)))
    seller_share = _side_a_or_complement(wide, share)
    t44a = t44 & side_a
    score[t44a] = seller_share[t44a].where(d44[t44a] == 1.0)
    decided[t44a] = d44[t44a]

    asked_rows = task.isin(["T3-2", "T4-2"]) & side_a
    # failures of a side still garbled after its last attempt (module docstring)
    garbled = _bool(_col(wide, C.GARBLE_FAILED)).fillna(0.0)
    garbled_conv = garbled.groupby(wide[C.CONVERSATION]).transform("max") == 1.0
    scored_row = holder | team_row | t41 | (task.isin(["T4-2", "T4-3", "T4-4"]) & side_a)
    outside_t3 = ~task.isin(["T3-1", "T3-2"])
    own_failure = outside_t3 & (garbled == 1.0) & scored_row
    partner_of_failure = outside_t3 & garbled_conv & (garbled != 1.0)
    among_decided = task.isin(list(C.AMONG_DECIDED))
    score[own_failure & ~among_decided] = 0.0
    score[own_failure & among_decided] = np.nan
    decided[own_failure & among_decided] = 0.0
    decided[own_failure & ~among_decided & decided.isna() & (t2 | t41)] = 0.0
    for series in (score, decided, success):
        series[partner_of_failure] = np.nan
    success[own_failure] = 0.0

    out["score"] = score
    out["decided"] = decided
    out["asked"] = asked.where(asked_rows)
    out["success"] = success
    out["adherence_label"] = adherence.where(holder & adherence.isin(C.ADHERENCE_SCALE), "")
    # an empty cell means "not judged"; "none" means judged and never happened (censored at the window)
    entry_known = holder & (_col(wide, C.ROLE_ENTRY).fillna("") != "")
    exit_known = entry_known & entry.notna() & (_col(wide, C.ROLE_EXIT).fillna("") != "")
    out["entered"] = np.where(entry_known, entry.notna().astype(float), np.nan)
    out["entry_s"] = entry.where(entry_known)
    out["exited"] = np.where(exit_known, exit_.notna().astype(float), np.nan)
    out["exit_s"] = exit_.where(exit_known)
    out["leak"] = leak.where(t42)
    out["leak_time_s"] = leak_time.where(t42)
    out["delivered"] = _num(_col(wide, C.DELIVERED)).where(t2)
    out["garbled"] = garbled
    out["pinned"] = pinned.astype(bool)
    for col in (*C.TURN_TAKING, C.TURNS, C.OCCUPANCY, *C.HEALTH):
        out[col] = _num(_col(wide, col))
    # each side's judge answers and their fates, so every table can say what it left out and why
    answers = ledger(measures[measures[C.JUDGE] == (judge or "")], settings.answers) if judge else ledger(measures.iloc[0:0], settings.answers)
    for col, values in run_columns(answers, zip(wide[C.CONVERSATION], wide[C.SIDE])).items():
        out[col] = values
    out = out.rename(columns={C.ARCHETYPE: "archetype"})
    return out


def _side_a_or_complement(wide: pd.DataFrame, values: pd.Series) -> pd.Series:
    """Side a's value; where only side b carries it, one minus side b's (the complement share)."""
    conv = wide[C.CONVERSATION]
    b_values = values.where(wide[C.SIDE] == "b").groupby(conv).transform("max")
    return values.where(values.notna(), 1.0 - b_values)


def main_window(runs: pd.DataFrame, settings: Settings) -> float | None:
    if settings.main_window_s is not None:
        return settings.main_window_s
    if runs.empty:
        return None
    return float(runs[C.WINDOW].mode().iloc[0])


def at_window(runs: pd.DataFrame, window: float | None) -> pd.DataFrame:
    if window is None:
        return runs.iloc[0:0]
    return runs.loc[np.isclose(runs[C.WINDOW].astype(float), window)]
