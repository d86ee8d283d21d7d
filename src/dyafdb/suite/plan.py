"""What a config will cost before it runs: conversations, audio hours, GPU-hours, disk and judge calls.

Pure arithmetic on the design table and the config's declared resources; the judge's questions and
prices come in as plain data (:class:`JudgeAsk`), so this module needs nothing from later stages.
Figures the config cannot know (speed, token counts) come from the ``plan`` section, whose defaults
are in schemas/config-plan.schema.yaml, or from the benchmark files of finished record jobs.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, Sequence

from dyafdb.clock import FRAME_SECONDS, SAMPLE_RATE
from dyafdb.errors import InputError
from dyafdb.paths import sharded
from dyafdb.schema_check import model_default, schema_default
from dyafdb.suite.design import Conversation

# audio.wav: stereo 32-bit float (record.recording writes subtype FLOAT).
RECORDING_BYTES_PER_S = SAMPLE_RATE * 2 * 4
# The lockstep bridge advances both agents one 80 ms frame per step; at real time unless measured.
DEFAULT_REAL_TIME_FACTOR = 1.0
# Until a GPU has run scripts/gpu-bench-engine.sh: vllm-omni's lockstep PersonaPlex prototype (PR #6604)
# stepped 32 conversations in 70.2 ms per tick on an H100 (/work/shared/research/adapter-audit.md).
# The paper's budget: two GPUs per conversation (one per model), each conversation recorded in near
# real time, so one hour of dialogue costs two GPU-hours. The plan prints its own ratio beside it.
PAPER_GPU_HOURS_PER_DIALOGUE_HOUR = 2.0
PUBLISHED_ENGINE_TICK = (70.2, 32, "published: vllm-omni's PersonaPlex prototype on an H100, not measured here")


def engine_tick(settings: Mapping[str, Any], root: Path = Path(".")) -> tuple[float, int, str]:
    """(ms per tick, sessions per tick, source) of a batched engine on one GPU.

    ``plan.engine_tick_ms`` with ``plan.engine_sessions`` when set, else the summary line of
    scripts/gpu-bench-engine.sh saved at ``plan.engine_benchmark`` (CUDA graphs where measured: the
    largest batch within the 80 ms frame and its tick), else the published figure.
    """
    if settings.get("engine_tick_ms") is not None:
        return float(settings["engine_tick_ms"]), int(settings.get("engine_sessions") or schema_default("config-plan", "engine_sessions")), "config plan.engine_tick_ms"
    if settings.get("engine_benchmark"):
        path = root / str(settings["engine_benchmark"])
        try:
            lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip().startswith("{")]
            summary = next(s for s in map(json.loads, reversed(lines)) if "largest_batch_under_80ms" in s)
            fits = summary["largest_batch_under_80ms"]
            mode = next(m for m in ("graph", "eager") if fits.get(m))
            batch = int(fits[mode])
            return float(summary["ms_per_tick"][mode][str(batch)]), batch, f"measured: {path.name} ({mode})"
        except (OSError, ValueError, StopIteration, KeyError, TypeError) as exc:
            raise InputError(f"plan.engine_benchmark: {path} holds no summary line of scripts/gpu-bench-engine.sh "
                             f"with a batch within 80 ms ({type(exc).__name__}); run the script with its output "
                             "saved there, or set plan.engine_tick_ms and plan.engine_sessions") from None
    return PUBLISHED_ENGINE_TICK


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
    # (archetype, question) -> calls per conversation: one per seat the question asks about (T1-1's role
    # questions once per side), from the judge's own Question.seats, so the plan counts what the run
    # calls; the command passes it in (suite is the first stage and does not import the judge).
    seats: Mapping[tuple[str, str], int] = field(default_factory=dict)


def estimate_tokens(text: str) -> int:
    """About four characters a token for English prose (the judges' tokenisers are not local)."""
    return max(1, round(len(text) / 4))


def measured_real_time_factor(benchmarks: Path, rows: Iterable[Conversation], lead_in_s: float) -> tuple[float, int] | None:
    """Median wall seconds per recorded second over finished record jobs (Snakemake's benchmark
    files), model loading included; None when no record job has finished yet."""
    ratios = []
    for row in rows:
        wall = read_benchmark_seconds(Path(sharded(str(benchmarks), row.conversation_id, ".tsv")))
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
    return int((config["models"][model].get("resources") or {}).get("gpus", model_default("resources", "gpus")))


def plan_run(config: Mapping[str, Any], rows: Sequence[Conversation], judges: Sequence[JudgeAsk],
             measured_rtf: tuple[float, int] | None = None, batched_adapters: Collection[str] = (),
             root: Path = Path("."), session_engines: Mapping[str, tuple[int, int]] | None = None,
             prompt_adapters: Collection[str] = ()) -> dict[str, Any]:
    """The plan as a JSON-ready dict (see README "What the paper's suite costs").

    ``batched_adapters``: adapters whose sessions an engine steps together on one GPU; their sides'
    GPU time with engines is the tick's share (ms per tick / sessions per tick) for every frame and,
    for ``prompt_adapters`` (PersonaPlex), every prompt step (``plan.engine_prompt_steps`` per join,
    riding in the same ticks), plus one model load per group of that many sessions.
    ``session_engines``: model -> (sessions at once, sessions per model load) of engines that step
    each session on its own (MiniCPM-o one at a time, Raon's gateway several); a side costs its
    recording time shared by the sessions at once, plus its share of one load.
    """
    settings = config.get("plan") or {}
    tick_ms, tick_sessions, tick_source = engine_tick(settings, root)
    prompt_steps = int(settings.get("engine_prompt_steps", schema_default("config-plan", "engine_prompt_steps")))
    batched = sorted({m for r in rows for m in (r.model_a, r.model_b)
                      if config["models"][m].get("adapter") in set(batched_adapters)})
    own = {m: v for m, v in (session_engines or {}).items() if m not in batched}
    per_engine: dict[str, float] = {m: 0.0 for m in [*batched, *sorted(own)] if any(m in (r.model_a, r.model_b) for r in rows)}
    lead_in = float(config["bridge"]["lead_in_s"])
    startup = float(settings.get("startup_s", schema_default("config-plan", "startup_s")))
    if settings.get("real_time_factor") is not None:
        rtf, rtf_source, job_startup = float(settings["real_time_factor"]), "config plan.real_time_factor", startup
    elif measured_rtf is not None:
        # A measured job time already holds the model loading.
        rtf, rtf_source, job_startup = measured_rtf[0], f"measured over {measured_rtf[1]} finished record jobs", 0.0
    else:
        rtf, rtf_source, job_startup = DEFAULT_REAL_TIME_FACTOR, "default (real time)", startup

    suites: dict[str, Any] = {}
    totals = {"conversations": 0, "audio_hours": 0.0, "record_hours": 0.0, "gpu_hours": 0.0, "gpu_hours_engines": 0.0}
    recording_bytes = 0.0
    for row in rows:
        job_s = (row.window_s + lead_in) * rtf + job_startup
        gpus = _gpus(config, row.model_a) + _gpus(config, row.model_b)
        engine_s = 0.0
        for model in (row.model_a, row.model_b):
            if model in batched:
                steps = (row.window_s + lead_in) / FRAME_SECONDS
                if config["models"][model].get("adapter") in set(prompt_adapters):
                    steps += prompt_steps
                side = _gpus(config, model) * (steps * tick_ms / 1000 + startup) / tick_sessions
            elif model in own:
                at_once, per_load = own[model]
                side = _gpus(config, model) * ((row.window_s + lead_in) * rtf / at_once + startup / per_load)
            else:
                side = _gpus(config, model) * job_s
            engine_s += side
            if model in per_engine:
                per_engine[model] += side / 3600
        figures = {"conversations": 1, "audio_hours": row.window_s / 3600, "record_hours": job_s / 3600,
                   "gpu_hours": gpus * job_s / 3600, "gpu_hours_engines": engine_s / 3600}
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
    out_tokens = int(settings.get("judge_output_tokens", schema_default("config-plan", "judge_output_tokens")))
    per_min = float(settings.get("transcript_tokens_per_min", schema_default("config-plan", "transcript_tokens_per_min")))
    judge_rows = []
    for ask in judges:
        calls = input_tokens = 0
        by_question: dict[str, int] = {}
        for archetype, questions in ask.questions.items():
            convs = per_archetype.get(archetype, [])
            transcript = sum(per_min * r.window_s / 60 for r in convs)
            for q in questions:
                seats = ask.seats.get((archetype, q), 1)
                calls += seats * len(convs)
                by_question[q] = by_question.get(q, 0) + seats * len(convs)
                input_tokens += round(seats * (transcript + len(convs) * ask.prompt_tokens.get(q, 0)))
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

    results_bytes = len(rows) * float(settings.get("results_kb_per_conversation", schema_default("config-plan", "results_kb_per_conversation"))) * 1000
    costs = [j["cost_usd"] for j in judge_rows]
    hours = totals["audio_hours"]
    return {
        **totals,
        "gpu_hours_per_dialogue_hour": {
            "batch_1": totals["gpu_hours"] / hours if hours else None,
            "engines": totals["gpu_hours_engines"] / hours if hours else None,
            "paper": PAPER_GPU_HOURS_PER_DIALOGUE_HOUR},
        "suites": suites,
        "real_time_factor": {"value": rtf, "source": rtf_source, "startup_s": job_startup},
        "engines": {"models": batched, "tick_ms": tick_ms, "sessions": tick_sessions, "source": tick_source,
                    "startup_s": startup, "prompt_steps": prompt_steps,
                    "prompt_models": [m for m in batched if config["models"][m].get("adapter") in set(prompt_adapters)],
                    "session_models": {m: {"at_once": own[m][0], "per_load": own[m][1]} for m in sorted(own) if m in per_engine},
                    "gpu_hours_by_model": per_engine},
        "processes": process_counts(config, rows),
        "disk_gb": {"recordings": recording_bytes / 1e9, "results": results_bytes / 1e9,
                    "total": (recording_bytes + results_bytes) / 1e9},
        "judges": judge_rows,
        "judge_calls": sum(j["calls"] for j in judge_rows),
        "judge_cost_usd": None if any(c is None for c in costs) else sum(costs),
    }


def process_counts(config: Mapping[str, Any], rows: Sequence[Conversation]) -> dict[str, Any]:
    """Processes and model loads of the record and score jobs as the workflow runs them.

    A record job is one process, plus one worker process per side unless ``bridge.in_process``; each
    worker loads its model (at batch 1: engines load once per group of sessions, counted above). With
    the agents in process, record jobs share processes (``bridge.conversations_per_process``,
    dyafdb.record.pool) and a process loads each adapter's models once per thread count, kept for its
    later conversations and shared by both sides (dyafdb.agents.cascade.models); the jobs are taken
    in design order. Score jobs share processes (``score.conversations_per_process``,
    dyafdb.score.pool): each process loads DNSMOS and, with ``health.asr``, Whisper once. That is the
    fewest; jobs running side by side each fill a process of their own, and on SLURM's job steps
    every job is its own process.
    """
    n = len(rows)
    in_process = bool(config["bridge"]["in_process"])
    per_process = int(config["score"]["conversations_per_process"])
    score_processes = -(-n // per_process)
    score_models = 1 + bool(config["health"]["asr"])
    return {
        "record": _record_counts(config, rows, in_process, int(config["bridge"]["conversations_per_process"])),
        "score": {"jobs": n, "conversations_per_process": per_process, "processes": score_processes,
                  "model_loads": score_processes * score_models, "processes_one_per_job": n,
                  "model_loads_one_per_job": n * score_models, "models_per_process": score_models},
    }


def _record_counts(config: Mapping[str, Any], rows: Sequence[Conversation], in_process: bool,
                   per_process: int) -> dict[str, Any]:
    n = len(rows)
    if not in_process:
        return {"jobs": n, "in_process": False, "conversations_per_process": 1, "processes": 3 * n,
                "model_loads": 2 * n, "processes_one_per_job": 3 * n, "model_loads_one_per_job": 2 * n}
    # In process, an adapter's agents share one load per thread count: the CPU agent's models are
    # kept per process under that key (dyafdb.agents.cascade.models.get_models), whatever the variant.
    load = {m: (spec["adapter"], (spec.get("params") or {}).get("threads")) for m, spec in config["models"].items()}

    def loads(per: int) -> int:
        return sum(len({load[r.model_of(side)] for r in rows[i:i + per] for side in ("a", "b")}) for i in range(0, n, per))

    return {"jobs": n, "in_process": True, "conversations_per_process": per_process, "processes": -(-n // per_process),
            "model_loads": loads(per_process), "processes_one_per_job": n, "model_loads_one_per_job": loads(1)}


def format_processes(counts: Mapping[str, Any]) -> list[str]:
    rec, sc = counts["record"], counts["score"]
    if rec["in_process"]:
        record = (f"  processes: record {rec['jobs']:,} jobs in {rec['processes']:,} processes (agents in process, "
                  f"{rec['conversations_per_process']} conversations each, bridge.conversations_per_process), "
                  f"{rec['model_loads']:,} model loads; one process per job on SLURM job steps: "
                  f"{rec['processes_one_per_job']:,} processes, {rec['model_loads_one_per_job']:,} loads")
    else:
        record = (f"  processes: record {rec['jobs']:,} jobs, {rec['processes']:,} processes (a job and a model worker "
                  f"per side), {rec['model_loads']:,} model loads at batch 1")
    return [record,
            f"    score {sc['jobs']:,} jobs in {sc['processes']:,} processes ({sc['conversations_per_process']} "
            f"conversations each, score.conversations_per_process), {sc['model_loads']:,} model loads "
            f"({sc['models_per_process']} per process); one process per job on SLURM job steps: "
            f"{sc['processes_one_per_job']:,} processes, {sc['model_loads_one_per_job']:,} loads"]


def format_plan(plan: Mapping[str, Any]) -> str:
    """The plan for a terminal."""
    lines = [f"{plan['conversations']:,} conversations, {plan['audio_hours']:,.0f} audio hours, "
             f"{plan['gpu_hours']:,.0f} GPU-hours ({plan['record_hours']:,.0f} record-job hours)"]
    rtf = plan["real_time_factor"]
    lines.append(f"  real-time factor {rtf['value']:.2f} ({rtf['source']}); model loading {rtf['startup_s']:.0f} s per record job")
    eng = plan["engines"]
    by_model = eng.get("gpu_hours_by_model") or {}
    lines.append(f"  with engines: {plan['gpu_hours_engines']:,.0f} GPU-hours instead of {plan['gpu_hours']:,.0f} at batch 1"
                 + ("" if by_model else "; no model of this config has an engine"))
    for model in eng["models"]:
        prompt = (f", {eng['prompt_steps']} prompt steps per join riding in the ticks" if model in eng.get("prompt_models", ())
                  else "")
        lines.append(f"    engine {model}: {by_model.get(model, 0):,.0f} GPU-h, batched {eng['sessions']} per GPU at "
                     f"{eng['tick_ms']:g} ms per tick ({eng['source']}){prompt}, one load per {eng['sessions']} sessions")
    for model, s in (eng.get("session_models") or {}).items():
        at_once = "one session at a time" if s["at_once"] == 1 else f"{s['at_once']} sessions at once"
        lines.append(f"    engine {model}: {by_model.get(model, 0):,.0f} GPU-h, {at_once} at the real-time factor above "
                     f"(not measured with engines), one load per {s['per_load']} sessions")
    per = plan["gpu_hours_per_dialogue_hour"]
    if per["batch_1"] is not None:
        lines.append(f"  GPU-hours per dialogue hour: {per['batch_1']:.2f} at batch 1, {per['engines']:.2f} with engines; "
                     f"the paper's {per['paper']:.1f} (two GPUs per conversation, near real time)")
    lines += format_processes(plan["processes"])
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
