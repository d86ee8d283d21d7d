"""The one number format of every table, figure label and viewer value (paper style).

Proportions and other numbers below one lose their leading zero (.51), two decimals by default;
whole numbers print without decimals; nothing to show is an en dash. Tables, figure annotations,
timing medians and the viewer all call :func:`fmt`, so one number reads the same everywhere.
"""

from __future__ import annotations

import math

import numpy as np

MISSING = "–"


def fmt(value, digits: int = 2) -> str:
    """Paper style: .51 for proportions, other numbers as they are; '–' where there is nothing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value)}"  # a count: 0 is "0", never the proportion ".00"
    v = float(value)
    if math.isnan(v):
        return MISSING
    v = round(v, digits) + 0.0  # rounded first, so .999 prints as 1; + 0.0 turns -0.0 into 0.0 (no "-.00")
    if abs(v) < 1 and digits:
        text = f"{v:.{digits}f}"
        return text.replace("0.", ".", 1) if v >= 0 else text.replace("-0.", "-.", 1)
    return f"{v:.{digits}f}" if v != int(v) else f"{int(v)}"


# Columns that hold counts (of runs, seats, events, answers) in any table: printed as integers even
# where a missing value made pandas store them as floats.
COUNT_COLUMNS = frozenset({"n", "runs", "events", "battles", "decisive", "ties", "answers", "invalid", "failed_checks",
                           "contradictions", "counted", "as_none", "left_out", "seats", "conversations", "deals"})


def fmt_count(value) -> str:
    """A count as an integer ('4', never '4.00' or '.00'); '–' where there is none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, str):
        return value
    return f"{int(round(float(value)))}"


def formatter_for(column: str):
    """The format of one table column: counts as integers, everything else in the paper's style."""
    return fmt_count if column in COUNT_COLUMNS or column.startswith("n:") else fmt
