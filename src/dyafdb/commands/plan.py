"""What a config will cost: conversations per suite and pairing, audio hours, GPU-hours, disk, judge
calls, tokens and cost. With --check, the preflight too (judge keys, one cheap request per judge
and text model to its endpoint unless --offline, weights, workers, scenarios, room in the results
folder); exits 1 and names every failed check with its fix."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from dyafdb.agents.engine.models import BATCHED_ADAPTERS, PROMPT_ADAPTERS, session_engines
from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.commands._preflight import (OFFLINE_ENV, failed, far_side_checks, format_checks, judge_key_checks,
                                        model_checks, offline_from_env, results_checks, suite_checks)
from dyafdb.judge.rubric import judge_plan
from dyafdb.judge.settings import judge_settings
from dyafdb.paths import Results, results_of
from dyafdb.suite.design import Conversation, build_design
from dyafdb.suite.plan import JudgeAsk, estimate_tokens, measured_real_time_factor, plan_run, format_plan

NAME = "plan"
HELP = "print what the config will cost (conversations, audio and GPU hours, disk, judge calls and cost); --check adds the preflight"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the plan (and checks) as JSON")
    parser.add_argument("--check", action="store_true",
                        help="also run the preflight; exit 1 if any check fails")
    parser.add_argument("--offline", action="store_true",
                        help=f"with --check: send no request to the judges' and text models' endpoints (a node "
                             f"without network; {OFFLINE_ENV}=1 does the same)")
    parser.add_argument("--benchmarks", type=Path, default=None,
                        help="benchmark files of finished record jobs, for a measured real-time factor "
                             "when plan.real_time_factor is not set (default: <results_dir>/benchmarks/record, "
                             "else benchmarks/record)")


def judge_seats(plan: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Calls per conversation of each (archetype, question): its seats, as the judge runner asks them."""
    from dyafdb.judge.rubric import QUESTIONS

    return {(a, q): len(QUESTIONS[q].seats(a)) for a, q in plan}


def judge_asks(config: Mapping[str, Any], rows: Sequence[Conversation], root: Path = Path(".")) -> list[JudgeAsk]:
    """Each judge the run calls, with the questions per archetype and each template's size."""
    settings = judge_settings(config, root)
    plan = judge_plan(sorted({r.archetype for r in rows}))
    questions: dict[str, list[str]] = {}
    for archetype, question in plan:
        questions.setdefault(archetype, []).append(question)
    sizes = {}
    for _, question in plan:
        path = settings.prompts_dir / f"{question}.txt"
        sizes[question] = estimate_tokens(path.read_text(encoding="utf-8")) if path.is_file() else 0
    asks = []
    for name in settings.run:
        spec = settings.judge(name)
        asks.append(JudgeAsk(judge=name, model=spec.model, backend=spec.backend, questions=questions,
                             prompt_tokens=sizes, price_input_per_mtok=spec.price_input_per_mtok,
                             price_output_per_mtok=spec.price_output_per_mtok, batch=spec.batch,
                             batch_discount=spec.batch_discount, seats=judge_seats(plan)))
    return asks


def build_plan(config: Mapping[str, Any], root: Path, benchmarks: Path | None) -> tuple[list[Conversation], dict[str, Any]]:
    rows = build_design(dict(config), root)
    measured = measured_real_time_factor(benchmarks, rows, float(config["bridge"]["lead_in_s"])) if benchmarks else None
    return rows, plan_run(config, rows, judge_asks(config, rows, root), measured, BATCHED_ADAPTERS, root,
                          session_engines=session_engines(dict(config)), prompt_adapters=PROMPT_ADAPTERS)


def run(args: argparse.Namespace) -> int:
    config = load_configs(args)
    benchmarks = args.root / args.benchmarks if args.benchmarks else Path(results_of(config, args.root).benchmark_dir("record"))
    if args.benchmarks is None and not benchmarks.is_dir():
        benchmarks = Path(Results(str(args.root)).benchmark_dir("record"))  # a run made before logs moved under results
    rows, plan = build_plan(config, args.root, benchmarks)
    checks = []
    if args.check:
        models = {m for r in rows for m in (r.model_a, r.model_b)}
        checks = (judge_key_checks(config, root=args.root)
                  + far_side_checks(config, root=args.root, offline=args.offline or offline_from_env())
                  + model_checks(config, models)
                  + suite_checks(config, rows, args.root)
                  + results_checks(config, plan["disk_gb"]["total"] * 1e9, args.root))
    if args.json:
        print(json.dumps({**plan, **({"checks": [c.as_dict() for c in checks]} if args.check else {})}, indent=2))
    else:
        print(format_plan(plan))
        if args.check:
            print(format_checks(checks), file=sys.stderr if failed(checks) else sys.stdout)
    return 1 if failed(checks) else 0
