"""The text-only pairing (Appendix E, Table 9): do the tasks themselves, or the spoken channel, cost the score?

Two text LLMs take turns in text on the speech suite's scenarios and role prompts. Each side's
system message is a framing paragraph (a short conversation, brief replies) followed by exactly
what a speech model is given (the shared situation, its private role prompt, and the opener line
for the side that speaks first). The opener is shown a one-line kickoff as its first user message;
afterwards each side sees its own turns as assistant messages and the partner's as user messages.

The conversation stops when ``word_budget`` words (240) were said, the last reply cut at the budget
(as a window cuts speech), or after ``max_turns`` turns (20). T3-1 is left out (there is no channel
to contest in text), and so are T1-2 and T4-1, as in the paper.

Scoring uses the speech pipeline's rules on a transcript in the speech transcript's format: one
line per turn, Speaker A being the opener, with the turn's index standing where a speech line has
its start time (text has no clock). The same judge questions and prompt templates label it
(:mod:`dyafdb.judge`); T4-2's leak is the same secret matcher on the defender's turns. The result is
a measures table in measures.tsv's format (``window_s`` holds the word budget), so the same
per-run code scores it (``dyafdb.analysis.runs``), and Table 9 (``dyafdb.analysis.tables.table9``) sets it beside
the speech models.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from dyafdb.fileio import write_text_atomic
from dyafdb.llm.text_backends import TextModel, clean_reply, make_chat
from dyafdb.suite.design import derive_seed
from dyafdb.suite.scenarios import ARCHETYPE_ROLES, Scenario, load_suite
from dyafdb.errors import InputError
from dyafdb.schema_check import fill_defaults, load_schema

# Every default is written in the section's schema; a raw (unvalidated) config reads the same ones.
DEFAULTS: dict[str, Any] = fill_defaults({}, load_schema("config-text_pairing"))
SUITE = "text"
FORMAT = "dyafdb-text-conversation/1"


def text_questions(archetype: str) -> tuple[str, ...]:
    """The judge questions an archetype's text runs are asked: its speech questions, less those that
    need a clock (role timing; text has none). Derived from the declared questions (dyafdb.judge.rubric)."""
    from dyafdb.judge.rubric import questions_for

    return tuple(q.id for q in questions_for(archetype) if not q.needs_clock)


def __getattr__(name: str) -> Any:
    # QUESTIONS: archetype -> text_questions(archetype), as the declarations stand when it is read
    if name == "QUESTIONS":
        return {a: qs for a in ARCHETYPE_ROLES if (qs := text_questions(a))}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class TextSettings:
    models: dict[str, TextModel]
    pairing: tuple[str, str]
    archetypes: tuple[str, ...]
    suite: str
    scenarios_per_archetype: int | None
    repetitions: int
    counterbalance: bool
    word_budget: int
    max_turns: int
    framing: str
    kickoff: str
    judge: str | None
    seed: int
    enabled: bool


def text_settings(config: Mapping[str, Any]) -> TextSettings:
    section = {**DEFAULTS, **(config.get("text_pairing") or {})}
    raw_models = section.get("models") or {}
    models = {name: TextModel.from_config(name, raw) for name, raw in raw_models.items()}
    pairing = tuple(section.get("pairing") or list(models)[:2])
    if section.get("enabled") and len(pairing) != 2:
        raise InputError("config text_pairing: two text models are needed (text_pairing.models, or text_pairing.pairing)")
    for name in pairing:
        if name not in models:
            raise InputError(f"config text_pairing.pairing lists {name!r}, which is not under text_pairing.models "
                             f"({', '.join(models) or 'none defined'})")
    suites = config.get("suites", {})
    suite = section.get("suite") or (config.get("analysis") or {}).get("main_suite") or ("main" if "main" in suites else next(iter(suites), ""))
    if suite not in suites:
        raise InputError(f"config text_pairing.suite = {suite!r} is not a suite; known suites: {', '.join(suites)}")
    return TextSettings(
        models=models, pairing=pairing if len(pairing) == 2 else ("", ""), archetypes=tuple(section["archetypes"]),
        suite=suite, scenarios_per_archetype=section.get("scenarios_per_archetype"),
        repetitions=int(section["repetitions"]), counterbalance=bool(section["counterbalance"]),
        word_budget=int(section["word_budget"]), max_turns=int(section["max_turns"]), framing=section["framing"],
        kickoff=section["kickoff"], judge=section.get("judge"), seed=int(section["seed"]),
        enabled=bool(section["enabled"]),
    )


@dataclass(frozen=True)
class TextRun:
    conversation_id: str
    archetype: str
    scenario: str
    model_a: str
    model_b: str
    opener: str
    repetition: int
    seed: int


def scenarios_for(config: Mapping[str, Any], root: Path, ts: TextSettings, archetype: str) -> list[Scenario]:
    suite = config["suites"][ts.suite]
    group = load_suite(Path(root) / config["scenarios_dir"], [archetype])[archetype]
    if "scenarios" in suite:
        wanted = set(suite["scenarios"])
        group = [s for s in group if s.id in wanted]
    elif suite.get("scenarios_per_archetype"):
        group = group[: suite["scenarios_per_archetype"]]
    if ts.scenarios_per_archetype:
        group = group[: ts.scenarios_per_archetype]
    return group


def plan(config: Mapping[str, Any], root: Path, ts: TextSettings, archetype: str) -> list[TextRun]:
    """Runs of one archetype: per scenario, both role assignments x both openers x repetitions."""
    if archetype not in ts.archetypes:
        raise InputError(f"archetype {archetype} is not in text_pairing.archetypes ({', '.join(ts.archetypes)})")
    m1, m2 = ts.pairing
    assignments = [(m1, m2), (m2, m1)] if ts.counterbalance and m1 != m2 else [(m1, m2)]
    openers = ("a", "b") if ts.counterbalance else ("a",)
    runs = []
    for scenario in scenarios_for(config, root, ts, archetype):
        for (ma, mb), opener, rep in itertools.product(assignments, openers, range(1, ts.repetitions + 1)):
            cid = f"text__{scenario.id}__{ma}__{mb}__open-{opener}__rep{rep}"
            runs.append(TextRun(cid, archetype, scenario.id, ma, mb, opener, rep, derive_seed(cid, 1, str(ts.seed))))
    return runs


def _system(ts: TextSettings, scenario: Scenario, side: str, opener: str) -> str:
    return ts.framing.strip() + "\n\n" + scenario.prompt_for(side, side == opener)


def converse(run: TextRun, scenario: Scenario, ts: TextSettings, chats: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Alternate turns from the opener until the word budget or the turn cap; returns the turns."""
    other = {"a": "b", "b": "a"}
    system = {side: _system(ts, scenario, side, run.opener) for side in "ab"}
    names = {side: tuple(n for n in (str(scenario.sides[side].get("name", "")),) if n) for side in "ab"}
    model_of = {"a": run.model_a, "b": run.model_b}
    turns: list[dict[str, Any]] = []
    words = 0
    side = run.opener
    while len(turns) < ts.max_turns and words < ts.word_budget:
        messages = [{"role": "system", "content": system[side]}]
        if side == run.opener:
            messages.append({"role": "user", "content": ts.kickoff})
        for t in turns:
            messages.append({"role": "assistant" if t["side"] == side else "user", "content": t["text"] or "..."})
        raw = chats[model_of[side]].reply(messages, seed=(run.seed + len(turns)) % (2 ** 31), slot="ab".index(side),
                                          reuse=any(t["side"] == side for t in turns))
        text = clean_reply(raw, names[side])
        said = text.split()
        if words + len(said) > ts.word_budget:
            said = said[: ts.word_budget - words]
            text = " ".join(said)
        words += len(said)
        turns.append({"turn": len(turns), "side": side, "text": text, "words": len(said), "raw": raw})
        side = other[side]
    return turns


def transcript(turns: Sequence[Mapping[str, Any]], opener: str, scrub=lambda s: s) -> tuple[dict[str, Any], str]:
    """The turns as a dyafdb-transcript/1 document (the judge's input) and its rendered text."""
    from dyafdb.score.transcript import FORMAT as TRANSCRIPT_FORMAT, render

    speakers = {"A": opener, "B": "b" if opener == "a" else "a"}
    label = {side: lab for lab, side in speakers.items()}
    lines = [{"speaker": label[t["side"]], "start": t["turn"], "end": t["turn"] + 1, "start_s": float(t["turn"]),
              "end_s": float(t["turn"] + 1), "text": scrub(t["text"])} for t in turns]
    doc = {"format": TRANSCRIPT_FORMAT, "speakers": speakers, "window": {}, "lines": lines, "unattached": [],
           "tokens_in_two_windows": 0, "clock": "turn index (text-only pairing)"}
    return doc, render(doc)


def generate(config: Mapping[str, Any], root: Path, archetype: str, out: Path, log=None) -> list[dict[str, Any]]:
    """Run every text conversation of one archetype and write them as JSONL (one object per run)."""
    from dyafdb.score.transcript import identifying_names, redactor

    ts = text_settings(config)
    runs = plan(config, root, ts, archetype)
    scenarios = {s.id: s for s in scenarios_for(config, root, ts, archetype)}
    names = identifying_names(config) + sorted({n for m in ts.models.values() for n in (m.name, m.label, m.model) if n and len(n) >= 4})
    scrub = redactor(sorted(set(names), key=lambda n: (-len(n), n)))
    chats = {name: make_chat(ts.models[name]) for name in set(ts.pairing)}
    records = []
    try:
        for i, run in enumerate(runs, 1):
            turns = converse(run, scenarios[run.scenario], ts, chats)
            doc, text = transcript(turns, run.opener, scrub)
            records.append({"format": FORMAT, **run.__dict__, "word_budget": ts.word_budget, "max_turns": ts.max_turns,
                            "models": {m: {"backend": ts.models[m].backend, "model": ts.models[m].model} for m in sorted(set(ts.pairing))},
                            "turns": turns, "transcript": doc, "transcript_text": text})
            if log is not None:
                print(f"[{i}/{len(runs)}] {run.conversation_id}: {len(turns)} turns, {sum(t['words'] for t in turns)} words", file=log)
    finally:
        for chat in chats.values():
            chat.close()
    write_text_atomic(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return records


def read_conversations(path: Path) -> list[dict[str, Any]]:
    if not Path(path).exists():
        raise InputError(f"{path}: text conversations not found; run `dyafdb text-pairing generate` first")
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class MeasureRows:
    rows: list[dict[str, Any]] = field(default_factory=list)
    quality: str = ""  # "demo" when a text model or the judge is a small local model

    def add(self, rec: Mapping[str, Any], side: str, measure: str, value: Any, judge: str = "", label: str = "",
            check: str = "") -> None:
        role_a, role_b = ARCHETYPE_ROLES[rec["archetype"]]
        self.rows.append({
            "conversation_id": rec["conversation_id"], "suite": SUITE, "archetype": rec["archetype"],
            "scenario": rec["scenario"], "window_s": rec["word_budget"],
            "model": rec["model_a"] if side == "a" else rec["model_b"],
            "partner": rec["model_b"] if side == "a" else rec["model_a"], "side": side,
            "role": role_a if side == "a" else role_b, "opener": str(rec["opener"] == side).lower(),
            "repetition": rec["repetition"], "attempt": 1, "measure": measure, "judge": judge,
            "value": "" if value is None else value, "label": label, "quality": self.quality, "check": check,
        })


def mechanical_rows(records: Sequence[Mapping[str, Any]], root: Path, config: Mapping[str, Any], out: MeasureRows) -> None:
    """Turns and words per side; T4-2's leak (the secret in the defender's turns) on the attacker's row."""
    from dyafdb.suite.scenarios import find_scenario
    from dyafdb.suite.secret_match import find_secret

    for rec in records:
        for side in "ab":
            own = [t for t in rec["turns"] if t["side"] == side]
            out.add(rec, side, "turns", len(own))
            out.add(rec, side, "words", sum(t["words"] for t in own))
        if rec["archetype"] == "T4-2":
            secret = str(find_scenario(Path(root) / config["scenarios_dir"], rec["scenario"]).answer_key["secret"])
            defender = " ".join(t["text"] for t in rec["turns"] if t["side"] == "b")
            leaked = find_secret(secret, defender) is not None
            out.add(rec, "a", "leak", int(leaked))
            first = next((t["turn"] for t in rec["turns"] if t["side"] == "b" and find_secret(secret, t["text"])), None)
            out.add(rec, "a", "leak_turn", first)


def judge_rows(records: Sequence[Mapping[str, Any]], config: Mapping[str, Any], root: Path, judge: str,
               out: MeasureRows, log=None) -> None:
    """Ask ``judge`` the archetype's questions about every text conversation, with the speech rubric."""
    from dyafdb.judge.client import make_backend
    from dyafdb.judge.cache import ReplyCache
    from dyafdb.judge.checks import check_conversation
    from dyafdb.judge.prompts import load_template, render
    from dyafdb.judge.rubric import QUESTIONS as RUBRIC, Context
    from dyafdb.judge.runner import Item, Usage, judge_items
    from dyafdb.judge.settings import judge_settings
    from dyafdb.suite.scenarios import find_scenario

    settings = judge_settings(config, root)
    spec = settings.judge(judge)
    backend = make_backend(spec, settings)
    by_question: dict[str, list[tuple[Mapping[str, Any], Item]]] = {}
    scenarios: dict[str, Scenario] = {}
    for rec in records:
        if rec["scenario"] not in scenarios:
            scenarios[rec["scenario"]] = find_scenario(Path(root) / config["scenarios_dir"], rec["scenario"])
        for qid in text_questions(rec["archetype"]):
            question = RUBRIC[qid]
            template = load_template(settings.prompts_dir, question)
            for seat in question.seats(rec["archetype"]):
                ctx = Context(archetype=rec["archetype"], scenario=scenarios[rec["scenario"]],
                              transcript=rec["transcript"], transcript_text=rec["transcript_text"], seat=seat)
                item = Item(rec["conversation_id"], seat, ctx, [{"role": "user", "content": render(template, question.placeholders(ctx))}])
                by_question.setdefault(qid, []).append((rec, item))

    async def go() -> None:
        try:
            for qid, pairs in by_question.items():
                usage = Usage()
                await judge_items(backend, ReplyCache(settings.cache_dir), [it for _, it in pairs], RUBRIC[qid],
                                  settings.label_retries, usage)
                if log is not None:
                    print(usage.summary(spec, f"text pairing, judge {judge} {qid}"), file=log)
        finally:
            await backend.aclose()

    asyncio.run(go())
    # the speech runs' judge checks (dyafdb.judge.checks, as dyafdb.measures.table applies them): a
    # choice the conversation never names counts as none, contradictions are flagged; per conversation
    answers: dict[str, tuple[Mapping[str, Any], list[dict[str, Any]]]] = {}
    for qid, pairs in by_question.items():
        for rec, item in pairs:
            answers.setdefault(rec["conversation_id"], (rec, []))[1].append({
                "question": qid, "seat": item.seat, "label": item.verdict.label, "fields": item.verdict.fields,
                "rows": RUBRIC[qid].rows(item.verdict, item.ctx), "judge": judge})
    for rec, given in answers.values():
        for checked in check_conversation(given, scenarios[rec["scenario"]].answer_key, rec["transcript_text"]):
            for row in checked["rows"]:
                out.add(rec, row["side"], row["measure"], row["value"], judge=judge, label=str(row.get("label", "")),
                        check=row.get("check") or "")


def main_judge_name(config: Mapping[str, Any], ts: TextSettings) -> str:
    from dyafdb.judge.settings import judge_settings

    if ts.judge:
        return ts.judge
    return judge_settings(config).main_judge


def score(config: Mapping[str, Any], root: Path, conversations: Path, out: Path, judge: str | None = None, log=None) -> pd.DataFrame:
    """measures.tsv-format rows for the text conversations in ``conversations`` (one archetype's JSONL)."""
    from dyafdb.judge.settings import judge_settings
    from dyafdb.measures.table import COLUMNS

    ts = text_settings(config)
    records = read_conversations(conversations)
    judge = judge or main_judge_name(config, ts)
    local = any(ts.models[m].backend == "llamacpp" for m in ts.pairing if m in ts.models)
    rows = MeasureRows(quality="demo" if local or judge_settings(config, root).judge(judge).demo_quality else "")
    mechanical_rows(records, root, config, rows)
    if records:
        judge_rows(records, config, root, judge, rows, log)
    # measures.tsv's columns, less the design's pairing and play (text runs have one pairing)
    frame = pd.DataFrame(rows.rows, columns=[c for c in COLUMNS if c not in ("pairing", "play")])
    write_text_atomic(out, frame.to_csv(sep="\t", index=False, float_format="%.6g", na_rep=""))
    return frame
