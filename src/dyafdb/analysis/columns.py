"""The input contract with the scoring stage, in one place.

``results/scores/measures.tsv`` is long: one row per conversation, side and measure. Every name
the analysis reads from it is defined here, so a rename upstream is one edit below. The lists of
turn-taking metrics and judged measures are not kept here: they are read, on each use, from their
declarations (``@metric`` in dyafdb.score.turntaking, ``@question`` in dyafdb.judge.rubric; see
``__getattr__`` below), so a metric or question added there (or by an installed package) is a
column, a table and a label without an edit here.
"""

from __future__ import annotations

from typing import Any

from dyafdb.declarations import derived
from dyafdb.score.health import METRICS as _HEALTH_METRICS

# --- columns of measures.tsv ------------------------------------------------------------------
CONVERSATION = "conversation_id"
SUITE = "suite"
ARCHETYPE = "archetype"
SCENARIO = "scenario"
WINDOW = "window_s"
MODEL = "model"
PARTNER = "partner"
SIDE = "side"
ROLE = "role"
OPENER = "opener"
REPETITION = "repetition"
ATTEMPT = "attempt"
MEASURE = "measure"
JUDGE = "judge"
VALUE = "value"
LABEL = "label"  # the judge's answer as said (yes/partly/no, a candidate, a time), when the table keeps it
QUALITY = "quality"  # "demo" for results of a demo-quality judge or config
CHECK = "check"  # why a judge row failed a check (dyafdb.judge.checks); empty when it passed

REQUIRED_COLUMNS = (CONVERSATION, ARCHETYPE, WINDOW, MODEL, PARTNER, SIDE, MEASURE, VALUE)
OPTIONAL_COLUMNS = (SUITE, SCENARIO, ROLE, OPENER, REPETITION, ATTEMPT, JUDGE, LABEL, QUALITY, CHECK)

# --- measure names ------------------------------------------------------------------------------
# mechanical (no judge): dyafdb.score.turntaking, dyafdb.score.tasks, dyafdb.record.garble
OCCUPANCY = "occupancy"
LEAK = "leak"  # on the attacker's row (side a)
LEAK_TIME = "time_to_leak_s"
# turn-taking: declared once in dyafdb.score.turntaking (@metric); the four the analysis reads by name
TOR_PAUSE, TOR_END, BACKCHANNEL, BARGE_IN = "tor_pause", "tor_end", "backchannel", "barge_in"
TURNS = "turns"
GARBLE_FAILED = "garble_failure"  # 1 on a side still garbled after the last attempt
# judged (one value per judge): dyafdb.judge.rubric
ROLE_ADHERENCE = "role_adherence"  # value 2/1/0 (or the label yes/partly/no)
IN_ROLE = "in_role"  # 1 for yes or partly
ROLE_ENTRY = "role_entry_s"
ROLE_EXIT = "role_deviation_s"
FINAL_CHOICE = "final_choice"
DECIDED = "decided"  # T2, T4-1, T4-3: the judged choice is not none
SOLVED = "solved"
ASKED = "asked"
AGREEMENT = "agreement"
LANDED_OPTION = "landed_option"  # T4-1, and T4-3's landed line
LANDED_LINE = "landed_line"  # accepted as an alias of landed_option for T4-3
WON = "won"
AGREED_PRICE = "agreed_price"
DEAL = "deal"  # T4-4: a price was agreed and appears in the transcript
PRICE_SHARE = "gap_share"  # seller's share of the opening gap on side a, 1 - that on side b
# T2 disclosure (Figure 5's "delivery rate"), used when the scoring stage provides it
DELIVERED = "delivered"

# The label that means "nothing happened" in choice and time measures.
NONE_LABELS = frozenset({"", "none", "null", "nan", "na", "n/a", "-"})
TRUE_LABELS = frozenset({"1", "1.0", "true", "yes"})
FALSE_LABELS = frozenset({"0", "0.0", "false", "no"})

# Ordered scale for Spearman's rho (Table 8): no < partly < yes; the rubric writes it as 0/1/2.
ADHERENCE_SCALE = {"no": 0, "partly": 1, "yes": 2}
ADHERENCE_LABELS = {"0": "no", "1": "partly", "2": "yes", "0.0": "no", "1.0": "partly", "2.0": "yes",
                    "no": "no", "partly": "partly", "yes": "yes"}

# Judged measures that no question writes today but older tables may hold: T4-3's landed line under
# its own name (read as landed_option), and T2's delivery rate when a scoring stage provides it.
JUDGED_ALIASES = {LANDED_LINE: LANDED_OPTION}
JUDGED_EXTRA = (DELIVERED,)
# audio health (mechanical, every side): declared once in dyafdb.score.health.METRICS
HEALTH = tuple(m.name for m in _HEALTH_METRICS)
HEALTH_LABELS = {m.name: m.label for m in _HEALTH_METRICS}
HEALTH_SCALES = {m.name: m.scale for m in _HEALTH_METRICS}


def _with_aliases(measures: tuple[str, ...]) -> tuple[str, ...]:
    """Each alias right after the measure it stands for."""
    return tuple(x for m in measures for x in (m, *(a for a, of in JUDGED_ALIASES.items() if of == m)))


@derived
def _derived(name: str) -> Any:
    from dyafdb.judge.rubric import judged_measures
    from dyafdb.score.turntaking import metrics

    if name in ("TURN_TAKING", "TURN_TAKING_LABELS", "TURN_TAKING_UNITS"):
        tabled = [m for m in metrics() if m.table]
        return {"TURN_TAKING": tuple(m.name for m in tabled), "TURN_TAKING_LABELS": {m.name: m.label for m in tabled},
                "TURN_TAKING_UNITS": {m.name: m.unit for m in metrics()}}[name]
    if name == "MEASURE_LABELS":
        # one spelling of every measure a reader sees (report, figures, viewer): the label its stage declares
        return {**{m.name: m.label for m in metrics()}, **HEALTH_LABELS}
    if name == "JUDGED_MEASURES":
        # measures the judges answer; all other measures are mechanical and carry an empty judge
        return (*_with_aliases(judged_measures()), *JUDGED_EXTRA)
    if name == "JUDGE_LABEL_MEASURES":
        # the labels a judge chose (compared between judges in Table 8); derived ones (solved, won,
        # gap_share) follow mechanically from these
        return _with_aliases(judged_measures(labelled=True))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The lists above derived from the declarations, read at each use (a module attribute, PEP 562):
# TURN_TAKING (metrics with a table), TURN_TAKING_LABELS, TURN_TAKING_UNITS, MEASURE_LABELS,
# JUDGED_MEASURES, JUDGE_LABEL_MEASURES.
__getattr__ = _derived


def measure_label(measure: str) -> str:
    """The display name of a measure (TOR_pause, DNSMOS OVRL); the name itself where none is declared."""
    return _derived("MEASURE_LABELS").get(measure, measure)


def colour_range(measure: str) -> tuple[float, float] | None:
    """A measure's fixed colour scale, so panels of one measure read alike: (1, 5) for a 1-5 score
    (DNSMOS), (0, 1) for a share; None where the range is the data's (counts, seconds)."""
    scale = HEALTH_SCALES.get(measure, "")
    if scale.startswith("1-5"):
        return 1.0, 5.0
    if scale.startswith("-1 to 1"):
        return -1.0, 1.0
    if measure in TASK_TITLES or _derived("TURN_TAKING_UNITS").get(measure) == "share" or "share" in scale or scale.startswith("0-1"):
        return 0.0, 1.0
    return None

# --- archetypes -----------------------------------------------------------------------------------
MAIN_TASKS = ("T1-1", "T1-2", "T2", "T3-1", "T3-2", "T4-1", "T4-2")
BALANCE_TASKS = ("T3-2", "T4-2", "T4-3", "T4-4")
TASK_TITLES = {
    "T1-1": "T1-1 engaging: role adherence",
    "T1-2": "T1-2 digressing: role adherence (holder)",
    "T2": "T2 information pooling: team solved rate",
    "T3-1": "T3-1 competing: channel occupancy",
    "T3-2": "T3-2 avoiding: presser occupancy",
    "T4-1": "T4-1 preference: win rate",
    "T4-2": "T4-2 attack: extraction rate (attacker)",
    "T4-3": "T4-3 claim: claimant win share among deals",
    "T4-4": "T4-4 negotiation: seller's share of the gap among deals",
}
# Side a is the reported side of asymmetric archetypes; these are scored on side a only.
REPORTED_SIDE_ONLY = frozenset({"T1-2", "T3-2", "T4-2", "T4-3", "T4-4"})
# The pair is scored as a team: one value per conversation, the matrix symmetric.
TEAM_TASKS = frozenset({"T2"})
# Both sides scored as pressers, the two shares of one run sum to 1, self-play pinned at 0.50.
PINNED_SELF_PLAY = frozenset({"T3-1"})
# Scored among decided runs only (with n), no-deal excluded (Appendix G).
AMONG_DECIDED = frozenset({"T4-3", "T4-4"})
# Each task's success, named once: the outcome the per-run ``success`` column holds, read under this
# name by every table that shows it (action x success, game balance, time windows).
SUCCESS_NAME = {"T2": "solved", "T3-2": "agreement", "T4-1": "won", "T4-2": "leak"}
# What one n of a task-score cell counts: a seat scored on its own, or a conversation scored once.
UNIT = {"T1-1": "seats", "T1-2": "seats", "T2": "team seats", "T3-1": "seats", "T3-2": "conversations",
        "T4-1": "seats", "T4-2": "conversations", "T4-3": "conversations", "T4-4": "conversations"}
# What the bottom row of an asymmetric matrix averages: the opposing side per column.
COLUMN_ROW_LABEL = {"T3-2": "avoider avg", "T4-2": "defender avg", "T4-3": "payer avg", "T4-4": "buyer avg"}
SIDE_ROLES = {
    "T1-1": ("holder", "holder"), "T1-2": ("holder", "digresser"), "T2": ("pooler", "pooler"),
    "T3-1": ("presser", "presser"), "T3-2": ("presser", "avoider"), "T4-1": ("advocate", "advocate"),
    "T4-2": ("attacker", "defender"), "T4-3": ("claimant", "payer"), "T4-4": ("seller", "buyer"),
}
# Why a leaderboard has no rating (only cross-play runs of a contested archetype are battles): the
# table's page and summary.md print the same words.
NO_BATTLES = "no contested battles to rate in this config: no cross-play run of a contested archetype with an outcome"
