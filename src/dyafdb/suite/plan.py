"""What a config will cost before it runs: conversations, audio hours, GPU-hours, disk and judge calls.

Pure arithmetic on the design table and the config's declared resources; the judge's questions and
prices come in as plain data (:class:`JudgeAsk`), so this module needs nothing from later stages.
Figures the config cannot know (speed, token counts) come from the ``plan`` section, whose defaults
are in schemas/config-plan.schema.yaml, or from the benchmark files of finished record jobs.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from dyafdb.clock import SAMPLE_RATE
from dyafdb.suite.design import Conversation

# audio.wav: stereo 32-bit float (record.recording writes subtype FLOAT).
RECORDING_BYTES_PER_S = SAMPLE_RATE * 2 * 4
# The lockstep bridge advances both agents one 80 ms frame per step; at real time unless measured.
DEFAULT_REAL_TIME_FACTOR = 1.0


@dataclass(frozen=True)
class JudgeAsk:
    """One judge the run asks: its questions per archetype, prompt sizes and prices (None: unknown)."""

    judge: str
    model: str
    backend: str
    questions: Mapping[str, Sequence[str]]  # archetype -> question ids
    prompt_tokens: Mapping[str, int] = field(default_factory=dict)  # question id -> template tokens
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    batch: bool = False
    batch_discount: float = 0.5


def estimate_tokens(text: str) -> int:
    """About four characters a token for English prose (the judges' tokenisers are not local)."""
    return max(1, round(len(text) / 4))


def measured_real_time_factor(benchmarks: Path, rows: Iterable[Conversation], lead_in_s: float) -> tuple[float, int] | None:
    """Median wall seconds per recorded second over finished record jobs (Snakemake's benchmark
    files), model loading included; None when no record job has finished yet."""
    ratios = []
    for row in rows:
        path = benchmarks / f"{row.conversation_id}.tsv"
        wall = read_benchmark_seconds(path)
        if wall is not None:
            ratios.append(wall / (row.window_s + lead_in_s))
    if not ratios:
        return None
    return statistics.median(ratios), len(ratios)


def read_benchmark_seconds(path: Path) -> float | None:
    """The `s` column of a Snakemake benchmark file (wall seconds), or None if absent or unreadable."""
    try:
        with path.open(newline="") as fh:
            first = next(csv.DictReader(fh, delimiter="\t"), None)
    except OSError:
        return None
    try:
        return float(first["s"]) if first else None
    except (KeyError, TypeError, ValueError):
        return None


def _gpus(config: Mapping[str, Any], model: str) -> int:
    return int((config["models"][model].get("resources") or {}).get("gpus", 0))


def plan_run(config: Mapping[str, Any], rows: Sequence[Conversation], judges: Sequence[JudgeAsk],
             measured_rtf: tuple[float, int] | None = None) -> dict[str, Any]:
    """The plan as a JSON-ready dict (see README "What the paper's suite costs")."""
    settings = config.get("plan") or {}
    lead_in = float(config["bridge"]["lead_in_s"])
    startup = float(settings.get("startup_s", 120))
    if settings.get("real_time_factor") is not None:
        rtf, rtf_source, job_startup = float(settings["real_time_factor"]), "config plan.real_time_factor", startup
    elif measured_rtf is not None:
        # A measured job time already holds the model loading.
        rtf, rtf_source, job_startup = measured_rtf[0], f"measured over {measured_rtf[1]} finished record jobs", 0.0
    else:
        rtf, rtf_source, job_startup = DEFAULT_REAL_TIME_FACTOR, "default (real time)", startup

    suites: dict[str, Any] = {}
    totals = {"conversations": 0, "audio_hours": 0.0, "record_hours": 0.0, "gpu_hours": 0.0}
    recording_bytes = 0.0
    for row in rows:
        job_s = (row.window_s + lead_in) * rtf + job_startup
        gpus = _gpus(config, row.model_a) + _gpus(config, row.model_b)
        figures = {"conversations": 1, "audio_hours": row.window_s / 3600, "record_hours": job_s / 3600,
                   "gpu_hours": gpus * job_s / 3600}
        suite = suites.setdefault(row.suite, {**{k: 0 for k in totals}, "window_s": row.window_s, "pairings": {}})
        pairing = suite["pairings"].setdefault(row.pairing, {k: 0 for k in totals})
        for target in (totals, suite, pairing):
            for key, value in figures.items():
                target[key] += value
        recording_bytes += (row.window_s + lead_in) * RECORDING_BYTES_PER_S

    per_archetype: dict[str, list[Conversation]] = {}
    for row in rows:
        per_archetype.setdefault(row.archetype, []).append(row)
    prices = settings.get("judge_prices") or {}
    out_tokens = int(settings.get("judge_output_tokens", 40))
    per_min = float(settings.get("transcript_tokens_per_min", 400))
    judge_rows = []
    for ask in judges:
        calls = input_tokens = 0
        by_question: dict[str, int] = {}
        for archetype, questions in ask.questions.items():
            convs = per_archetype.get(archetype, [])
            transcript = sum(per_min * r.window_s / 60 for r in convs)
            for q in questions:
                calls += len(convs)
                by_question[q] = by_question.get(q, 0) + len(convs)
                input_tokens += round(transcript + len(convs) * ask.prompt_tokens.get(q, 0))
        output_tokens = calls * out_tokens
        price_in, price_out = ask.price_input_per_mtok, ask.price_output_per_mtok
        price_source = "judge config"
        if (price_in is None or price_out is None) and ask.model in prices:
            price_in, price_out = prices[ask.model]["input_per_mtok"], prices[ask.model]["output_per_mtok"]
            price_source = "config plan.judge_prices"
        if ask.backend == "llamacpp":
            cost, price_source = 0.0, "local model"
        elif price_in is None or price_out is None:
            cost, price_source = None, f"unknown: set judge.judges.{ask.judge}.price_input_per_mtok and price_output_per_mtok"
        else:
            cost = (input_tokens * price_in + output_tokens * price_out) / 1e6
            if ask.batch:
                cost *= ask.batch_discount
        judge_rows.append({"judge": ask.judge, "model": ask.model, "backend": ask.backend, "calls": calls,
                           "input_tokens": input_tokens, "output_tokens": output_tokens,
                           "cost_usd": cost, "price_source": price_source, "questions": by_question})

    results_bytes = len(rows) * float(settings.get("results_kb_per_conversation", 200)) * 1000
    costs = [j["cost_usd"] for j in judge_rows]
    return {
        **totals,
        "suites": suites,
        "real_time_factor": {"value": rtf, "source": rtf_source, "startup_s": job_startup},
        "disk_gb": {"recordings": recording_bytes / 1e9, "results": results_bytes / 1e9,
                    "total": (recording_bytes + results_bytes) / 1e9},
        "judges": judge_rows,
        "judge_calls": sum(j["calls"] for j in judge_rows),
        "judge_cost_usd": None if any(c is None for c in costs) else sum(costs),
    }


def format_plan(plan: Mapping[str, Any]) -> str:
    """The plan for a terminal."""
    lines = [f"{plan['conversations']:,} conversations, {plan['audio_hours']:,.0f} audio hours, "
             f"{plan['gpu_hours']:,.0f} GPU-hours ({plan['record_hours']:,.0f} record-job hours)"]
    rtf = plan["real_time_factor"]
    lines.append(f"  real-time factor {rtf['value']:.2f} ({rtf['source']}); model loading {rtf['startup_s']:.0f} s per record job")
    for name, suite in plan["suites"].items():
        lines.append(f"  suite {name} ({suite['window_s']:g} s window): {suite['conversations']:,} conversations, "
                     f"{suite['audio_hours']:,.1f} audio h, {suite['gpu_hours']:,.1f} GPU-h")
        for pairing, p in suite["pairings"].items():
            lines.append(f"    {pairing:40s} {p['conversations']:>6,}  {p['audio_hours']:8,.1f} audio h  {p['gpu_hours']:8,.1f} GPU-h")
    disk = plan["disk_gb"]
    lines.append(f"disk: {disk['recordings']:,.1f} GB recordings + {disk['results']:,.1f} GB results = {disk['total']:,.1f} GB")
    for j in plan["judges"]:
        cost = "unknown" if j["cost_usd"] is None else f"${j['cost_usd']:,.2f}"
        lines.append(f"judge {j['judge']} ({j['backend']} {j['model']}): {j['calls']:,} calls, "
                     f"{j['input_tokens']:,} tokens in, {j['output_tokens']:,} out, cost {cost} ({j['price_source']})")
        for q, n in j["questions"].items():
            lines.append(f"    {q:20s} {n:>7,} calls")
    total = plan["judge_cost_usd"]
    lines.append(f"judge total: {plan['judge_calls']:,} calls, cost " + ("unknown" if total is None else f"${total:,.2f}"))
    return "\n".join(lines)
