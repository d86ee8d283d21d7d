"""The index's data: each conversation's design columns and measures, as the browser filters them."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dyafdb.analysis.answers import AnswerPolicy, policy_of
from dyafdb.analysis.columns import measure_label
from dyafdb.analysis.numbers import fmt as report_fmt
from dyafdb.score.health import MEASURES as HEALTH_MEASURES
from dyafdb.viewer.layout import conversation_page
from dyafdb.viewer.media import Media
from dyafdb.viewer.model import model_label
from dyafdb.viewer.sources import Sources

# The archetype's headline (the measure its task score is built from), shown in the index:
# (measure, sides, judged?)
HEADLINE: dict[str, list[tuple[str, str, bool]]] = {
    "T1-1": [("role_adherence", "ab", True)],
    "T1-2": [("role_adherence", "a", True)],
    "T2": [("final_choice", "a", True), ("solved", "a", True)],
    "T3-1": [("occupancy", "ab", False)],
    "T3-2": [("occupancy", "a", False), ("agreement", "a", True)],
    "T4-1": [("landed_option", "a", True), ("won", "ab", True)],
    "T4-2": [("leak", "a", False), ("asked", "a", True)],
    "T4-3": [("landed_option", "a", True), ("won", "ab", True)],
    "T4-4": [("agreed_price", "a", True), ("gap_share", "a", True)],
}
# Counts and denominators the page shows but the index does not offer as filters.
MECHANICAL_ORDER = ("occupancy", "turns", "speech_s", "exclusive_s", "overlap_s", "tor_pause", "tor_pause_n",
                    "tor_end", "tor_end_n", "backchannel", "barge_in", "barge_in_n", "leak", "time_to_leak_s",
                    *HEALTH_MEASURES)
# Judge measures whose value is not a number: their label is what to show and filter on.
LABEL_ONLY = {"final_choice", "landed_option", "landed_line"}
# Shown by their label (the judge's words) rather than the number derived from it.
SHOW_LABEL = LABEL_ONLY | {"role_adherence", "agreed_price", "role_entry_s", "role_deviation_s"}
# 1/0 measures, shown as yes/no.
BOOLEAN = {"won", "solved", "leak", "asked", "agreement", "decided", "deal", "in_role", "garble_failure",
           "text_mismatch", "echo_flag"}


def fmt(value: Any) -> str:
    """The report's one number format (.51, 12.40 -> 12.4, 3), so a value reads the same in both."""
    if isinstance(value, float):
        return report_fmt(value) if abs(value) < 1000 else f"{value:.0f}"
    if value is None or isinstance(value, bool):
        return report_fmt(value)
    return str(value)


def withheld(reason: str, policy: AnswerPolicy | None = None) -> str:
    """What the viewer shows instead of a judge's answer that failed a check or was contradicted: the
    reason and what the tables made of it, from the one answer policy (dyafdb.analysis.answers)."""
    return (policy or AnswerPolicy.default()).shown(reason)


def measure_key(measure: str, side: str, judge: str = "") -> str:
    return f"{measure}|{side}|{judge}"


def measure_values(src: Sources, policy: AnswerPolicy | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Every measure of one conversation: (key -> numeric value or None, key -> judge label)."""
    values: dict[str, Any] = {}
    labels: dict[str, str] = {}
    if src.measures:
        for side in ("a", "b"):
            for measure, value in (src.measures.get("values") or {}).get(side, {}).items():
                values[measure_key(measure, side)] = value
    for rec in src.judged:
        for row in rec.get("rows", []):
            key = measure_key(row["measure"], row["side"], rec["judge"])
            if row.get("check"):  # failed a judge check: withheld, with the reason
                values[key] = None
                labels[key] = withheld(row["check"], policy)
                continue
            value = row.get("value")
            values[key] = None if row["measure"] in LABEL_ONLY else value
            if row.get("label"):
                labels[key] = str(row["label"])
    return values, labels


def show(measure: str, value: Any, label: str | None) -> str:
    """A measure as a person reads it: yes/no for flags, the judge's words for labels, else the number."""
    if measure in BOOLEAN and value in (0, 1):
        return "yes" if value else "no"
    if measure in SHOW_LABEL and label:
        return label
    if value is None and label:
        return label  # e.g. "invalid"
    return fmt(value)


def catalog_entry(key: str) -> dict[str, str]:
    measure, side, judge = key.split("|")
    return {"key": key, "measure": measure, "side": side, "judge": judge,
            "label": f"{measure_label(measure)} · side {side}" + (f" · {judge}" if judge else "")}


def headline(archetype: str, values: Mapping[str, Any], labels: Mapping[str, str], judges: Sequence[str]) -> list[dict[str, str]]:
    """Short chips for the index: the archetype's task measure per side, from the first judge that answered."""
    out = []
    for measure, sides, judged in HEADLINE.get(archetype, []):
        for side in sides:
            candidates = [measure_key(measure, side, j) for j in judges] if judged else [measure_key(measure, side)]
            key = next((k for k in candidates if k in values or k in labels), None)
            if key is None:
                continue
            shown = show(measure, values.get(key), labels.get(key))
            out.append({"measure": measure, "label": measure_label(measure), "side": side, "judge": key.split("|")[2],
                        "text": shown})
    return out


def index_row(src: Sources, media: Media, judges: Sequence[str], config: Mapping[str, Any]) -> dict[str, Any]:
    """One conversation in the index; its measures under ``_values``/``_labels`` until :func:`index_data`."""
    row = src.row
    values, labels = measure_values(src, policy_of(config))
    return {
        "id": row.conversation_id, "href": conversation_page(row.conversation_id), "archetype": row.archetype,
        "scenario": row.scenario, "title": src.scenario.title, "pairing": row.pairing, "play": row.play,
        "model_a": row.model_a, "model_b": row.model_b,
        "label_a": model_label(config, row.model_a), "label_b": model_label(config, row.model_b),
        "opener": row.opener, "opener_model": row.opener_model, "repetition": row.repetition,
        "window_s": row.window_s, "duration_s": media.duration_s, "end_reason": src.meta.get("end_reason", ""),
        "scored": src.measures is not None, "judged": sorted({r["judge"] for r in src.judged}),
        "headline": headline(row.archetype, values, labels, judges), "_values": values, "_labels": labels,
    }


def _catalog_order(key: str) -> tuple[bool, str, str, str]:
    measure, side, judge = key.split("|")
    return judge != "", judge, measure, side


def index_data(rows: list[dict[str, Any]], config: Mapping[str, Any], judges: Sequence[str]) -> dict[str, Any]:
    """Rows with their measures as arrays aligned to one catalog (a few MB for the full suite)."""
    keys = sorted({k for r in rows for k in (*r["_values"], *r["_labels"])}, key=_catalog_order)
    position = {k: i for i, k in enumerate(keys)}
    out_rows = []
    for r in rows:
        values: list[Any] = [None] * len(keys)
        for k, v in r["_values"].items():
            values[position[k]] = v
        labels = {str(position[k]): v for k, v in r["_labels"].items()}
        out_rows.append({**{k: v for k, v in r.items() if not k.startswith("_")}, "v": values, "l": labels})
    models = config.get("models") or {}
    return {"catalog": [catalog_entry(k) for k in keys], "rows": out_rows, "judges": list(judges),
            "demo_quality": bool(config.get("demo_quality")),
            "models": {m: model_label(config, m) for m in models},
            "labels": {m: (spec or {}).get("label") or m for m, spec in models.items()}}
