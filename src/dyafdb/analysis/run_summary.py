"""Where a run stands and what it produced, read from its files: `dyafdb status` while it runs, and
`<results>/summary.md` when it ends (the workflow's `onsuccess` handler writes it).

Everything here reads what the stages wrote (recordings' meta.json, score outputs, judge JSONL,
analysis tables, logs and Snakemake benchmark files); it never recomputes a result.
"""

from __future__ import annotations

import csv
import json
import math
import shlex
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from dyafdb.config import RUN_RECORD
from dyafdb.fileio import write_text_atomic
from dyafdb.judge.rubric import judge_plan
from dyafdb.judge.settings import judge_settings
from dyafdb.paths import FLAT_LAYOUT_FIX, Results, flat_layout_entries, results_of
from dyafdb.suite.design import Conversation
from dyafdb.suite.plan import read_benchmark_seconds

# What a failed stage command leaves in its log (dyafdb.cli's messages, or a crash).
FAILURE_MARKS = ("error:", "agent failure:", "Traceback (most recent call last)")
STAGES = ("recorded", "scored", "judged", "failed")


@dataclass
class Where:
    """The run's files, as dyafdb.paths names them."""

    results: Path
    layout: Results

    @classmethod
    def of(cls, config: Mapping[str, Any], root: Path) -> "Where":
        paths = results_of(config, root)
        return cls(Path(paths.root), paths)

    @property
    def logs(self) -> Path:
        return Path(self.layout.log_dir())

    @property
    def benchmarks(self) -> Path:
        return Path(self.layout.benchmark_dir())

    def recording(self, cid: str) -> Path:
        return Path(self.layout.recording(cid))

    def scored(self, cid: str) -> Path:
        return Path(self.layout.measures_json(cid))

    def job_log(self, rule: str, cid: str) -> Path:
        return Path(self.layout.conversation_log(rule, cid))

    def judge_output(self, judge: str, archetype: str, question: str) -> Path:
        return Path(self.layout.judge_output(judge, archetype, question))


def _log_failed(path: Path) -> bool:
    try:
        text = path.read_text(errors="replace")[-20000:]
    except OSError:
        return False
    return any(mark in text for mark in FAILURE_MARKS)


def conversation_states(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation]) -> dict[str, dict[str, Any]]:
    """Per conversation: recorded, scored, judged (every judge batch of its archetype written),
    failed (its record or score job's log shows an error and its output is missing), attempt."""
    where = Where.of(config, root)
    settings = judge_settings(config, root)
    batches = judge_plan(sorted({r.archetype for r in rows}))
    judged_archetypes = {a for a in {r.archetype for r in rows}
                         if all(where.judge_output(j, a, q).exists() for j in settings.run for aa, q in batches if aa == a)}
    # The same scan the workflow plans with (dyafdb.verify.state), so status and `snakemake -n` agree
    # on what is left: a recording deleted after scoring is left to record, and to score again.
    from dyafdb.verify.state import scan  # here, not at import: every command's CLI loads this module

    held = scan(where.layout, rows)
    states = {}
    for row in rows:
        cid = row.conversation_id
        meta_path = where.recording(cid) / "meta.json"
        recorded = held.recorded[cid]
        scored = recorded and held.scored[cid]
        failed = ((not recorded and _log_failed(where.job_log("record", cid)))
                  or (recorded and not scored and _log_failed(where.job_log("score", cid))))
        attempt = 1
        if recorded:
            try:
                attempt = int(json.loads(meta_path.read_text()).get("attempt", 1))
            except (OSError, ValueError, TypeError):
                pass
        states[cid] = {"recorded": recorded, "scored": scored, "judged": scored and row.archetype in judged_archetypes,
                       "failed": failed, "attempt": attempt}
    return states


@dataclass
class JobTimes:
    """Finished jobs of one rule, from their benchmark files: wall seconds and when each ended."""

    seconds: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)

    @property
    def mean_s(self) -> float | None:
        return sum(self.seconds) / len(self.seconds) if self.seconds else None

    @property
    def concurrency(self) -> float:
        """Job-seconds per wall second since the first of them started: how many ran side by side."""
        if len(self.seconds) < 2:
            return 1.0
        starts = [e - s for e, s in zip(self.ends, self.seconds)]
        span = max(self.ends) - min(starts)
        return max(1.0, sum(self.seconds) / span) if span > 0 else 1.0


def job_times(paths: Iterable[Path]) -> JobTimes:
    """From the benchmark files of finished jobs (``Results.conversation_benchmarks``)."""
    times = JobTimes()
    for path in sorted(paths):
        s = read_benchmark_seconds(path)
        if s is not None:
            times.seconds.append(s)
            times.ends.append(path.stat().st_mtime)
    return times


def run_status(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation]) -> dict[str, Any]:
    """Counts per suite and pairing and an ETA for the recordings and scoring still to do."""
    states = conversation_states(config, root, rows)
    suites: dict[str, Any] = {}
    for row in rows:
        state = states[row.conversation_id]
        suite = suites.setdefault(row.suite, {"conversations": 0, **{k: 0 for k in STAGES}, "pairings": {}})
        pairing = suite["pairings"].setdefault(row.pairing, {"conversations": 0, **{k: 0 for k in STAGES}})
        for target in (suite, pairing):
            target["conversations"] += 1
            for key in STAGES:
                target[key] += bool(state[key])
    total = {"conversations": len(rows), **{k: sum(bool(s[k]) for s in states.values()) for k in STAGES}}
    where = Where.of(config, root)
    eta: dict[str, Any] = {}
    remaining_s = 0.0
    for stage, done_key in (("record", "recorded"), ("score", "scored")):
        times = job_times(where.layout.conversation_benchmarks(stage))
        left = sum(1 for s in states.values() if not s[done_key] and not s["failed"])
        if times.mean_s is None:
            eta[stage] = {"left": left, "mean_job_s": None, "eta_s": None}
            continue
        stage_s = left * times.mean_s / times.concurrency
        remaining_s += stage_s
        eta[stage] = {"left": left, "mean_job_s": times.mean_s, "jobs_side_by_side": times.concurrency,
                      "finished_jobs": len(times.seconds), "eta_s": stage_s}
    known = all(e["eta_s"] is not None or e["left"] == 0 for e in eta.values())
    # Results of an older version, directly in their folders: counted as missing above, so say why.
    flat = sum(1 for _ in flat_layout_entries(where.layout))
    return {**total, "suites": suites, "eta": eta, "eta_s": remaining_s if known else None, "flat_layout_entries": flat}


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown (no finished job to time yet)"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h} h {rest // 60:02d} min" if h else f"{rest // 60} min {rest % 60:02d} s"


def format_status(status: Mapping[str, Any]) -> str:
    lines = [f"{status['conversations']:,} conversations: " + ", ".join(f"{status[k]:,} {k}" for k in STAGES)]
    for name, suite in status["suites"].items():
        lines.append(f"  suite {name}: " + ", ".join(f"{suite[k]:,} {k}" for k in STAGES) + f" of {suite['conversations']:,}")
        for pairing, p in suite["pairings"].items():
            lines.append(f"    {pairing:40s} " + "  ".join(f"{k} {p[k]:>5,}" for k in STAGES) + f"  of {p['conversations']:,}")
    for stage, e in status["eta"].items():
        timing = (f"{e['mean_job_s']:.1f} s per job over {e['finished_jobs']} finished, {e['jobs_side_by_side']:.1f} side by side"
                  if e["mean_job_s"] is not None else "no finished job yet")
        lines.append(f"  {stage}: {e['left']:,} jobs left ({timing})")
    lines.append(f"ETA: {_duration(status['eta_s'])}")
    if status.get("flat_layout_entries"):
        lines.append(f"WARNING: {status['flat_layout_entries']:,} per-conversation results are in the old flat layout "
                     f"(recordings/<id>/, segments/<id>.json, ...), where this version does not look: {FLAT_LAYOUT_FIX}")
    return "\n".join(lines)


# ---------------------------------------------------------------- end-of-run summary


def _read_tsv(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as fh:
            return list(csv.DictReader(fh, delimiter="\t"))
    except OSError:
        return []


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return None if value is None or math.isnan(value) else value


def judge_usage(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation]) -> list[dict[str, Any]]:
    """Per judge: answers, invalid answers, replies from the cache, tokens and cost (from its
    prices, else plan.judge_prices; None when neither knows the model)."""
    where = Where.of(config, root)
    settings = judge_settings(config, root)
    prices = (config.get("plan") or {}).get("judge_prices") or {}
    out = []
    for name in settings.run:
        spec = settings.judge(name)
        counts = Counter()
        for archetype, question in judge_plan(sorted({r.archetype for r in rows})):
            path = where.judge_output(name, archetype, question)
            if not path.exists():
                continue
            for line in path.read_text().splitlines():
                if not line.strip():
                    continue
                rec = json.loads(line)
                counts["answers"] += 1
                counts["invalid"] += not rec.get("valid", False)
                counts["cached"] += bool(rec.get("cached"))
                counts["input_tokens"] += int(rec.get("input_tokens") or 0)
                counts["output_tokens"] += int(rec.get("output_tokens") or 0)
        price_in, price_out = spec.price_input_per_mtok, spec.price_output_per_mtok
        if (price_in is None or price_out is None) and spec.model in prices:
            price_in, price_out = prices[spec.model]["input_per_mtok"], prices[spec.model]["output_per_mtok"]
        if spec.backend == "llamacpp":
            cost = 0.0
        elif price_in is None or price_out is None:
            cost = None
        else:
            cost = (counts["input_tokens"] * price_in + counts["output_tokens"] * price_out) / 1e6
        out.append({"judge": name, "model": spec.model, "backend": spec.backend, **{k: counts[k] for k in
                    ("answers", "invalid", "cached", "input_tokens", "output_tokens")}, "cost_usd": cost})
    return out


def answer_lines(config: Mapping[str, Any], measures_table: Path) -> list[str]:
    """What the answer policy made of each judge's answers, from measures.tsv through the same ledger the
    tables and the judge-checks table use (dyafdb.analysis.answers)."""
    from dyafdb.analysis.answers import ledger, policy_of, tally, tally_text

    policy = policy_of(config)
    lines = ["## Judge answers", "", policy.describe() + "."]
    if not measures_table.exists():
        return lines + ["", f"No measures table yet ({measures_table})."]
    from dyafdb.analysis.io import read_measures

    answers = ledger(read_measures(measures_table), policy)
    lines.append("")
    for judge, t in tally(answers, by=["judge"]).items():
        judge = judge[0] if isinstance(judge, tuple) else judge
        lines.append(f"- {judge}: {tally_text(t)}")
    return lines if len(answers) else lines + ["No judge answers in measures.tsv."]


def headline_scores(tables: Path, tasks: Iterable[str]) -> tuple[dict[str, dict[str, float | None]], list[str]]:
    """Each model's average score per task (the `avg` column of score_<task>.tsv), and warnings for
    tables that are missing, empty, all blank or the same for every model."""
    scores: dict[str, dict[str, float | None]] = {}
    warnings = []
    for task in tasks:
        path = tables / f"score_{task}.tsv"
        if not path.exists():
            warnings.append(f"{path.name}: missing")
            continue
        body = [r for r in _read_tsv(path) if r.get(f"n:{_first_partner(r)}", "") != ""] or _read_tsv(path)
        values = {r["row"]: _number(r.get("avg")) for r in body if r.get("row")}

        if not values:
            warnings.append(f"{path.name}: no model rows")
        elif all(v is None for v in values.values()):
            warnings.append(f"{path.name}: every score is blank (no valid answer or measure)")
        elif len({v for v in values.values() if v is not None}) == 1 and len(values) > 1:
            warnings.append(f"{path.name}: every model scores {next(v for v in values.values() if v is not None):g}; "
                            "the table cannot rank them")
        for model, value in values.items():
            scores.setdefault(model, {})[task] = value
    return scores, warnings


def headline_cells(tables: Path, tasks: Iterable[str]) -> dict[str, dict[str, str]]:
    """Each model's average per task as printed: value, interval and n (:func:`headline_cell`)."""
    out: dict[str, dict[str, str]] = {}
    for task in tasks:
        rows = _read_tsv(tables / f"score_{task}.tsv")
        for r in rows:
            if r.get("row") and r.get(f"n:{_first_partner(r)}", "") != "":
                out.setdefault(r["row"], {})[task] = headline_cell(r)
    return out


def headline_cell(row: Mapping[str, str]) -> str:
    """A model's average as the report's matrix prints it: the value, its interval and its n (the runs
    behind its cells), all read from the score table, so summary.md and the report say the same."""
    from dyafdb.analysis.numbers import fmt
    from dyafdb.analysis.render import interval_text

    value = _number(row.get("avg"))
    n = sum(int(float(v)) for k, v in row.items() if k.startswith("n:") and v not in (None, ""))
    bounds = interval_text(_number(row.get("avg_lo")), _number(row.get("avg_hi")))
    return " ".join(x for x in (fmt(value), bounds, f"n={n}") if x)


def _board_cell(row: Mapping[str, str], col: str) -> str:
    """A leaderboard cell as summary.md prints it: the anchor's rating is pinned, not estimated, so it says so."""
    text = row.get(col, "") or ""
    if col == "model" and str(row.get("anchor", "")).lower() == "true":
        return f"{text} (anchor, pinned)"
    return text


def _first_partner(row: Mapping[str, str]) -> str:
    return next((k[2:] for k in row if k.startswith("n:")), "")


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}g}"


def summary_markdown(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation], when: float | None = None) -> str:
    where = Where.of(config, root)
    status = run_status(config, root, rows)
    states = conversation_states(config, root, rows)
    rerecorded = sum(1 for s in states.values() if s["recorded"] and s["attempt"] > 1)
    tasks = sorted({r.archetype for r in rows})
    tables = Path(where.layout.analysis_table("leaderboard")).parent
    scores, warnings = headline_scores(tables, tasks)
    lines = [f"# DyaFDB run summary: {where.results}",
             "",
             f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(when or time.time()))}."
             + (" Demo quality: embedded agents and a local judge, not the paper's numbers." if config.get("demo_quality") else ""),
             "",
             "## Conversations",
             "",
             f"- planned: {len(rows):,}; recorded: {status['recorded']:,}; scored: {status['scored']:,}; "
             f"judged: {status['judged']:,}",
             f"- failed: {status['failed']:,}; re-recorded (garbled first attempt): {rerecorded:,}",
             f"- not recorded: {len(rows) - status['recorded']:,}",
             "",
             "## Judge",
             "",
             "| judge | model | answers | invalid | from cache | tokens in | tokens out | cost |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for j in judge_usage(config, root, rows):
        cost = "unknown" if j["cost_usd"] is None else f"${j['cost_usd']:,.2f}"
        lines.append(f"| {j['judge']} | {j['backend']} {j['model']} | {j['answers']:,} | {j['invalid']:,} | {j['cached']:,} | "
                     f"{j['input_tokens']:,} | {j['output_tokens']:,} | {cost} |")
    lines += ["", *answer_lines(config, Path(where.layout.measures_table))]
    lines += ["", "## Headline scores (average over partners, main window; 95% interval, n = runs behind its cells)", ""]
    cells = headline_cells(tables, tasks)
    if scores:
        lines += ["| model | " + " | ".join(tasks) + " |", "| --- |" + " ---: |" * len(tasks)]
        for model, by_task in scores.items():
            shown = cells.get(model, {})
            lines.append(f"| {model} | " + " | ".join(shown.get(t, _fmt(by_task.get(t))) for t in tasks) + " |")
    else:
        lines.append("No score tables yet.")
    board = _read_tsv(tables / "leaderboard.tsv")
    lines += ["", "## Leaderboard", ""]
    rated = [r for r in board if r.get("rating")]
    if rated:
        # the leaderboard's own columns, so the summary carries its ties and "not separable" too
        cols = [c for c in ("rank", "model", "rating", "lower", "upper", "battles", "decisive", "ties", "separable")
                if c in board[0]]
        lines += ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
        lines += ["| " + " | ".join(_board_cell(r, c) for c in cols) + " |" for r in board]
    elif board:
        # A config without a contested archetype has a board with no rating: say so, not "same rating".
        from dyafdb.analysis.columns import NO_BATTLES

        lines.append(NO_BATTLES[0].upper() + NO_BATTLES[1:] + ".")
    else:
        lines.append("No leaderboard yet (tables/leaderboard.tsv).")
    if len(rated) > 1 and len({r["rating"] for r in rated}) == 1:
        warnings.append("leaderboard.tsv: every model has the same rating")
    lines += ["", "## Verify", "", *verify_lines(config, root, rows)]
    lines += ["", "## Warnings", ""]
    lines += [f"- {w}" for w in warnings] or ["None."]
    report = Path(where.layout.report)
    site = Path(where.layout.site) / "index.html"
    lines += ["", "## Open", ""]
    lines += [f"- report: {report}" + ("" if report.exists() else " (not built)"),
              f"- viewer: {site}" + ("" if site.exists() else " (not built)"),
              f"- measures: {where.layout.measures_table}",
              f"- status while a run goes on: `dyafdb status --results {shlex.quote(str(where.results.resolve()))}`"
              + ("" if (where.results / RUN_RECORD).exists() else " (after the workflow has started it; else pass its -c)")]
    return "\n".join(lines) + "\n"


def verify_lines(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation], limit: int = 10) -> list[str]:
    """`dyafdb verify`'s verdict on the results folder (dyafdb.verify.check), for summary.md."""
    from dyafdb.verify.check import verify

    report = verify(config, root, rows=rows)
    if report.ok:
        return [f"`dyafdb verify`: {report.format()}"]
    lines = [f"`dyafdb verify`: {len(report.problems):,} problems ("
             + ", ".join(f"{len(v):,} {k}" for k, v in report.by_kind().items()) + "); the first:"]
    lines += [f"- {p.line()}" for p in report.problems[:limit]]
    where = Where.of(config, root).results.resolve()
    return lines + ["", f"Every problem and its fix: `dyafdb verify --results {shlex.quote(str(where))}`."]


def write_summary(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation]) -> tuple[Path, str]:
    """Write <results>/summary.md; returns its path and text."""
    text = summary_markdown(config, root, rows)
    path = Where.of(config, root).results / "summary.md"
    write_text_atomic(path, text)
    return path, text
