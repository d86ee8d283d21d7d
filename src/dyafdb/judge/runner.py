"""One judge batch: every conversation of one archetype, one question, one judge -> one JSONL file.

``results/judge/<judge>/<archetype>/<question>.jsonl`` holds one record per judged seat (per
conversation, or per side for T1): the label, the measures it yields, every raw reply (for audit),
tokens used and whether the replies came from the cache. Only the anonymised transcript and the
scenario text the question needs reach the judge; the conversation id appears in the output file,
never in a prompt.

Flow: build every prompt; ask every uncached one that no other run is asking (each under a claim,
so concurrent runs never pay twice; concurrently up to ``concurrency``, or as one Anthropic Message
Batch); parse strictly; ask the off-label ones again with the assistant's reply
and a reminder (``label_retries`` times); whatever still does not parse is recorded ``invalid``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from dyafdb.suite.design import Conversation, build_design
from dyafdb.fileio import read_json, write_text_atomic
from dyafdb.paths import Results, results_of
from dyafdb.llm import Reply, Request
from dyafdb.judge.client import Backend, JudgeError, make_backend, retry_policy
from dyafdb.judge.cache import Claim, ReplyCache, cache_key
from dyafdb.judge.prompts import load_template, render
from dyafdb.judge.rubric import INVALID, QUESTIONS, Context, Question, Verdict
from dyafdb.judge.settings import JudgeSettings, JudgeSpec, judge_settings
from dyafdb.suite.scenarios import find_scenario
from dyafdb.errors import InputError
from dyafdb.record.recording import read_meta
from dyafdb.score.check import check_made_from


@dataclass
class Item:
    conversation_id: str
    seat: str | None
    ctx: Context
    messages: list[dict[str, str]]
    replies: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    all_cached: bool = True
    verdict: Verdict | None = None


@dataclass
class Usage:
    questions: int = 0
    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    batch_input_tokens: int = 0
    batch_output_tokens: int = 0
    invalid: int = 0
    reasked: int = 0

    def add(self, reply: Reply) -> None:
        self.calls += 1
        if reply.cached:
            self.cached += 1
            return
        if reply.batch:
            self.batch_input_tokens += reply.input_tokens
            self.batch_output_tokens += reply.output_tokens
        else:
            self.input_tokens += reply.input_tokens
            self.output_tokens += reply.output_tokens

    def cost(self, spec: JudgeSpec) -> float | None:
        if spec.backend == "llamacpp":
            return 0.0
        if spec.price_input_per_mtok is None or spec.price_output_per_mtok is None:
            return None
        plain = self.input_tokens * spec.price_input_per_mtok + self.output_tokens * spec.price_output_per_mtok
        batch = self.batch_input_tokens * spec.price_input_per_mtok + self.batch_output_tokens * spec.price_output_per_mtok
        return (plain + batch * spec.batch_discount) / 1e6

    def summary(self, spec: JudgeSpec, what: str) -> str:
        cost = self.cost(spec)
        cost_text = (f"${cost:.4f}" if cost is not None
                     else f"unknown (set judge.judges.{spec.name}.price_input_per_mtok and price_output_per_mtok)")
        return (f"{what}: {self.questions} questions, {self.calls} calls ({self.cached} from cache, "
                f"{self.reasked} re-asked, {self.invalid} invalid); tokens in {self.input_tokens + self.batch_input_tokens:,}"
                f" out {self.output_tokens + self.batch_output_tokens:,}; cost {cost_text}")


def _load_transcript(results: Results, cid: str) -> tuple[dict[str, Any], str]:
    fix = "run `dyafdb score` for this conversation"
    doc = read_json(Path(results.transcript_json(cid)), "transcript", fix)
    try:
        text = Path(results.transcript_txt(cid)).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{results.transcript_txt(cid)}: transcript not found; {fix}") from None
    # A transcript of another recording than the one now in place (re-recorded, restored, copied) is
    # not judged: its answers would be credited to this recording.
    if isinstance(doc, dict) and doc.get("provenance") is not None:  # a transcript made before provenance is judged
        now = (read_meta(Path(results.recording(cid))).get("provenance") or {}).get("recording")
        if now:
            check_made_from(Path(results.transcript_json(cid)), doc, {"recording": now},
                            f"fix: run `dyafdb score all --id {cid}` (or delete its measures file and rerun Snakemake)")
    return doc, text


def build_items(config: Mapping[str, Any], root: Path, settings: JudgeSettings, archetype: str, question: Question,
                rows: Sequence[Conversation]) -> list[Item]:
    template = load_template(settings.prompts_dir, question)
    results = results_of(config, root)
    scenarios: dict[str, Any] = {}
    items = []
    for row in sorted(rows, key=lambda r: r.conversation_id):
        if row.archetype != archetype:
            continue
        if row.scenario not in scenarios:
            scenarios[row.scenario] = find_scenario(Path(root) / config["scenarios_dir"], row.scenario)
        doc, text = _load_transcript(results, row.conversation_id)
        for seat in question.seats(archetype):
            ctx = Context(archetype=archetype, scenario=scenarios[row.scenario], transcript=doc,
                          transcript_text=text, seat=seat)
            prompt = render(template, question.placeholders(ctx))
            items.append(Item(row.conversation_id, seat, ctx, [{"role": "user", "content": prompt}]))
    return items


CLAIM_POLL_S = 0.25
BATCH_LIFETIME_S = 24 * 3600  # the Message Batches API ends a batch within a day


def claim_wait_s(settings: JudgeSettings, spec: JudgeSpec) -> float:
    """How long a run waits for another run's claim before it gives up: the longest the holder's
    question can take under the retry policy (every try at its deadline, every backoff at its
    longest), or a batch's lifetime, plus a margin. A holder still claiming after that is stuck."""
    policy = retry_policy(settings)
    worst = (policy.max_retries + 1) * policy.timeout_s + policy.max_retries * policy.max_backoff_s * 1.25
    return worst + (BATCH_LIFETIME_S if spec.batch else 0.0) + 30.0


def _cached(hit: Mapping[str, Any]) -> Reply:
    return Reply(hit["text"], hit.get("input_tokens", 0), hit.get("output_tokens", 0), cached=True)


async def _ask_all(backend: Backend, cache: ReplyCache, items: list[Item], question: Question, usage: Usage,
                   wait_s: float = 3600.0) -> list[Reply]:
    """Replies for each item's current messages: from the cache, or asked (batched or concurrently).
    A question is asked only under its claim (:mod:`dyafdb.judge.cache`); one claimed elsewhere is
    waited for, up to ``wait_s``, and read from the cache once its holder has put it there."""
    spec = backend.spec
    requests = [Request(list(it.messages), question.gbnf(it.ctx) if spec.grammar else None) for it in items]
    keys = [cache_key(spec.cache_identity, backend.request_body(r)) for r in requests]
    replies: list[Reply | None] = [None] * len(items)
    pending: list[int] = []
    for i, key in enumerate(keys):
        hit = cache.get(key)
        if hit is not None:
            replies[i] = _cached(hit)
        else:
            pending.append(i)

    def keep(i: int, reply: Reply) -> None:
        cache.put(keys[i], reply.to_cache())
        replies[i] = reply

    if pending and spec.batch and hasattr(backend, "complete_batch"):
        claims: dict[int, Claim] = {}
        try:
            for i in pending:
                claim = cache.try_claim(keys[i])
                if claim is None:
                    continue  # asked by another run, or by another item of this batch: waited for below
                hit = cache.get(keys[i])  # put there while we looked
                if hit is not None:
                    cache.release(claim)
                    replies[i] = _cached(hit)
                    continue
                claims[i] = claim
            if claims:
                got = await backend.complete_batch({f"q{i}": requests[i] for i in claims})
                for i in claims:
                    if f"q{i}" in got:
                        keep(i, got[f"q{i}"])
        finally:
            for claim in claims.values():
                cache.release(claim)
        pending = [i for i in pending if replies[i] is None]  # errored or expired in the batch: ask directly

    semaphore = asyncio.Semaphore(spec.concurrency)

    async def one(i: int) -> None:
        waited_since: float | None = None
        while True:
            hit = cache.get(keys[i])
            if hit is not None:
                replies[i] = _cached(hit)
                return
            claim = cache.try_claim(keys[i])
            if claim is not None:
                try:
                    hit = cache.get(keys[i])  # the holder before us may have just put it
                    if hit is not None:
                        replies[i] = _cached(hit)
                        return
                    async with semaphore:
                        keep(i, await backend.complete(requests[i]))
                    return
                finally:
                    cache.release(claim)
            now = time.monotonic()
            waited_since = now if waited_since is None else waited_since
            if now - waited_since > wait_s:
                raise JudgeError(f"judge {spec.name}: {cache.holder(keys[i])} has been asking the same question "
                                 f"for over {wait_s:.0f} s (its claim is {cache.claim_path(keys[i])}); if that "
                                 "judge run is stuck, stop it and rerun (replies already received stay cached)")
            await asyncio.sleep(CLAIM_POLL_S)

    await asyncio.gather(*(one(i) for i in pending))
    out = [r for r in replies if r is not None]
    for r in out:
        usage.add(r)
    return out


async def judge_items(backend: Backend, cache: ReplyCache, items: list[Item], question: Question,
                      label_retries: int, usage: Usage, wait_s: float = 3600.0) -> None:
    """Ask, parse strictly, re-ask off-label replies with a reminder, then record the rest invalid."""
    todo = list(items)
    usage.questions += len(items)
    for round_ in range(label_retries + 1):
        if not todo:
            break
        if round_:
            usage.reasked += len(todo)
        replies = await _ask_all(backend, cache, todo, question, usage, wait_s)
        again = []
        for it, reply in zip(todo, replies):
            it.replies.append(reply.text)
            it.input_tokens += reply.input_tokens
            it.output_tokens += reply.output_tokens
            it.all_cached = it.all_cached and reply.cached
            verdict = question.parse(reply.text, it.ctx)
            if verdict is not None:
                it.verdict = verdict
                continue
            it.messages = it.messages + [{"role": "assistant", "content": reply.text.strip() or "(no answer)"},
                                         {"role": "user", "content": question.reminder(it.ctx)}]
            again.append(it)
        todo = again
    for it in todo:
        it.verdict = Verdict(INVALID)
        usage.invalid += 1


def record(item: Item, question: Question, spec: JudgeSpec) -> dict[str, Any]:
    verdict = item.verdict or Verdict(INVALID)
    return {
        "conversation_id": item.conversation_id, "archetype": item.ctx.archetype, "question": question.id,
        "judge": spec.name, "backend": spec.backend, "model": spec.model, "demo_quality": spec.demo_quality,
        "seat": item.seat, "speaker": item.ctx.speaker(item.seat) if item.seat else None,
        "label": verdict.label, "valid": verdict.valid, "fields": verdict.fields,
        "rows": question.rows(verdict, item.ctx),
        "replies": item.replies, "input_tokens": item.input_tokens, "output_tokens": item.output_tokens,
        "cached": item.all_cached,
        # the recording the judged transcript was made from (docs/formats.md "Provenance"); never sent to the judge
        "recording": (item.ctx.transcript.get("provenance") or {}).get("recording"),
    }


def judge_output_path(config: Mapping[str, Any], root: Path, judge: str, archetype: str, question: str) -> Path:
    return Path(results_of(config, root).judge_output(judge, archetype, question))


def run_batch(config: Mapping[str, Any], root: Path, judge: str, archetype: str, question_id: str,
              out: Path | None = None, rows: Sequence[Conversation] | None = None,
              log: TextIO | None = None) -> Usage:
    """Judge one (judge, archetype, question) batch and write its JSONL; returns the usage counts."""
    settings = judge_settings(config, root)
    spec = settings.judge(judge)
    if question_id not in QUESTIONS:
        raise InputError(f"unknown judge question {question_id!r}; known: {', '.join(QUESTIONS)}")
    question = QUESTIONS[question_id]
    if archetype not in question.archetypes:
        raise InputError(f"question {question_id} is not asked in {archetype} (it belongs to {', '.join(question.archetypes)})")
    backend = make_backend(spec, settings)  # a missing API key stops here, before any work
    rows = list(rows) if rows is not None else build_design(config, root)
    items = build_items(config, root, settings, archetype, question, rows)
    usage = Usage()

    async def go() -> None:
        try:
            await judge_items(backend, ReplyCache(settings.cache_dir), items, question, settings.label_retries, usage,
                              claim_wait_s(settings, spec))
        finally:
            await backend.aclose()

    asyncio.run(go())
    out = out or judge_output_path(config, root, judge, archetype, question_id)
    lines = [json.dumps(record(it, question, spec), ensure_ascii=False) for it in items]
    write_text_atomic(out, "".join(line + "\n" for line in lines))
    quality = " [demo quality]" if spec.demo_quality else ""
    print(usage.summary(spec, f"judge {judge} ({spec.backend} {spec.model}){quality} {archetype} {question_id}"),
          file=log or sys.stdout)
    return usage


__all__ = ["run_batch", "judge_output_path", "Usage", "JudgeError"]
