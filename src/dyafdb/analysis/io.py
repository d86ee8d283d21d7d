"""Reading measures tables and writing analysis outputs atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.errors import InputError
from dyafdb.measures.table import check_measures_rows
from dyafdb.fileio import write_atomic


def read_delimited(path: Path | str, what: str, fix: str, sep: str = "\t", **options: Any) -> pd.DataFrame:
    """``pd.read_csv`` that names the file, the problem and the fix instead of raising a traceback:
    an empty file (no header), a row with more fields than the header, bytes that are not UTF-8."""
    try:
        frame = pd.read_csv(path, sep=sep, **options)
        if "index_col" not in options and not isinstance(frame.index, pd.RangeIndex):
            # pandas reads a first row with one field too many as an unnamed index column, shifting every value
            raise pd.errors.ParserError(f"Expected {len(frame.columns)} fields in line 2, saw {len(frame.columns) + 1}")
        return frame
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: {what} is empty (not even a header row); {fix}") from None
    except pd.errors.ParserError as exc:
        raise InputError(f"{path}: {what} has a row with the wrong number of fields ({str(exc).strip()}); "
                         f"every row needs one field per header column; {fix}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {what} is not UTF-8 text (byte {exc.start}: {exc.reason}); {fix}") from None


def read_measures(paths: Path | str | Iterable[Path | str]) -> pd.DataFrame:
    """Read one or more measures tables (same columns) into one frame of strings.

    Values stay strings here: a measure's type (label, number, time or "none") is decided where it
    is used. Only the design columns are typed.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    frames = []
    for path in map(Path, paths):
        if not path.exists():
            raise InputError(f"{path}: measures table not found; run the score stage first (`dyafdb score` / snakemake)")
        frame = read_delimited(path, "measures table", "run the score stage again (`dyafdb measures` / snakemake)",
                               dtype=str, keep_default_na=False, na_filter=False)
        missing = [c for c in C.REQUIRED_COLUMNS if c not in frame.columns]
        if missing:
            raise InputError(
                f"{path}: measures table lacks column(s) {', '.join(missing)}; "
                f"expected at least {', '.join(C.REQUIRED_COLUMNS)} (see docs/analysis.md)"
            )
        # the one rule for whoever reads a measures table: no seat given twice, no side missing
        check_measures_rows(path, frame[[c for c in ("conversation_id", "side", "measure", "judge", "value")
                                         if c in frame.columns]].to_dict("records"))
        frames.append(frame)
    if not frames:
        raise InputError("no measures table given")
    return normalise_measures(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])


def normalise_measures(m: pd.DataFrame) -> pd.DataFrame:
    """Types and spellings of a measures frame (all strings) fixed for the analysis."""
    for col in C.REQUIRED_COLUMNS:
        if col not in m.columns:
            raise InputError(f"measures lack column {col}; expected at least {', '.join(C.REQUIRED_COLUMNS)}")
    m = m.copy()
    for col in C.OPTIONAL_COLUMNS:
        if col not in m.columns:
            m[col] = ""
    try:
        m[C.WINDOW] = m[C.WINDOW].astype(float)
    except ValueError as exc:
        raise InputError(f"measures column {C.WINDOW} must hold numbers ({exc})") from None
    m[C.SIDE] = m[C.SIDE].str.strip().str.lower()
    bad = sorted(set(m[C.SIDE]) - {"a", "b"})
    if bad:
        raise InputError(f"measures column {C.SIDE} holds {bad!r}; allowed values: 'a', 'b'")
    m[C.MEASURE] = m[C.MEASURE].str.strip()
    m[C.JUDGE] = m[C.JUDGE].str.strip()
    m[C.VALUE] = m[C.VALUE].str.strip()
    m[C.OPENER] = m[C.OPENER].str.strip().str.lower().isin(C.TRUE_LABELS)
    return m


def write_tsv(frame: pd.DataFrame, path: Path | str, index: bool = False) -> None:
    """TSV with numbers to 6 decimals; NaN written as empty cells."""
    write_atomic(path, lambda tmp: frame.to_csv(tmp, sep="\t", index=index, float_format="%.6g", na_rep=""))


def read_tsv(path: Path | str) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: table not found; run its analysis rule first")
    return read_delimited(path, "table", "run its analysis rule again", keep_default_na=True)
