"""The index's data: each conversation's design columns and measures, as the browser filters them."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dyafdb.analysis.answers import AnswerPolicy, policy_of
from dyafdb.analysis.columns import JUDGED_ALIASES, measure_label
from dyafdb.analysis.numbers import fmt as report_fmt
from dyafdb.declarations import derived
from dyafdb.judge.rubric import measures_of_kind
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
# Mechanical measures that are 1/0, shown as yes/no (the judged ones come from their questions' kinds).
MECHANICAL_BOOLEAN = ("leak", "garble_failure", "text_mismatch", "echo_flag")


@derived
def mechanical_order() -> tuple[str, ...]:
    """The conversation page's order of mechanical measures: occupancy, each declared turn-taking
    metric with its denominator (dyafdb.score.turntaking), the leak, audio health."""
    from dyafdb.score.turntaking import metrics

    return ("occupancy", *(n for m in metrics() for n in m.measures), "leak", "time_to_leak_s", *HEALTH_MEASURES)


def _judged_of_kind(*kinds: str) -> frozenset[str]:
    """Judged measures of these kinds (dyafdb.judge.rubric.MEASURE_KINDS), with their older aliases."""
    found = measures_of_kind(*kinds)
    return found | {alias for alias, of in JUDGED_ALIASES.items() if of in found}


@derived
def label_only() -> frozenset[str]:
    """Judge measures whose value is not a number: their label is what to show and filter on."""
    return _judged_of_kind("choice")


@derived
def show_label() -> frozenset[str]:
    """Shown by their label (the judge's words) rather than the number derived from it."""
    return _judged_of_kind("choice", "label")


@derived
def boolean() -> frozenset[str]:
    """1/0 measures, shown as yes/no."""
    return _judged_of_kind("yes/no", "flag") | set(MECHANICAL_BOOLEAN)


def __getattr__(name: str) -> Any:
    # the lists as the declarations stand when read (a plugin's metric or question without a reload)
    derived = {"MECHANICAL_ORDER": mechanical_order, "LABEL_ONLY": label_only, "SHOW_LABEL": show_label,
               "BOOLEAN": boolean}
    if name in derived:
        return derived[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    only_label = label_only()
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
            values[key] = None if row["measure"] in only_label else value
            if row.get("label"):
                labels[key] = str(row["label"])
    return values, labels


def show(measure: str, value: Any, label: str | None) -> str:
    """A measure as a person reads it: yes/no for flags, the judge's words for labels, else the number."""
    if measure in boolean() and value in (0, 1):
        return "yes" if value else "no"
    if measure in show_label() and label:
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
            # how index.js shows a measure: the same lists show() uses, from the declarations
            "boolean": sorted(boolean()), "label_measures": sorted(show_label()),
            "models": {m: model_label(config, m) for m in models},
            "labels": {m: (spec or {}).get("label") or m for m, spec in models.items()}}
