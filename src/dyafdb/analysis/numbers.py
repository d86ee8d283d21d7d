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
    v = float(value)
    if math.isnan(v):
        return MISSING
    v = round(v, digits) + 0.0  # rounded first, so .999 prints as 1; + 0.0 turns -0.0 into 0.0 (no "-.00")
    if abs(v) < 1 and digits:
        text = f"{v:.{digits}f}"
        return text.replace("0.", ".", 1) if v >= 0 else text.replace("-0.", "-.", 1)
    return f"{v:.{digits}f}" if v != int(v) else f"{int(v)}"
