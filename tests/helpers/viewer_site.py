"""A small demo-like site for the viewer tests: scripted recordings, real scoring, judged by a fake backend.

Two scripted models with distinctive names (so a leak of a model name into a blind page can be
searched for), three archetypes (T1-1, T1-2, T4-1) x 8 conversations each; each recording is
scored by the real segments/transcript/measures code and judged by the real judge runner, with a
backend that answers from the prompt instead of an API (one judge answers off-label once, so some
records carry two raw replies).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

from conftest import REPO, scripted_config, write_suite
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design
from dyafdb.fileio import write_text_atomic
from dyafdb.judge.client import Backend, Reply, Request
from dyafdb.judge.cache import ReplyCache
from dyafdb.judge.rubric import QUESTIONS, judge_plan
from dyafdb.judge.runner import Usage, build_items, judge_items, judge_output_path, record
from dyafdb.judge.settings import judge_settings
from dyafdb.record.conversation import record_many
from dyafdb.score.conversation import score_conversation
from run_once import built_once

MODEL_NAMES = ("zephyrine", "quokkalux")
MODEL_LABELS = ("Zephyrine XL", "Quokkalux Mini")
REPLY_MARKER = "FAKEJUDGE-REASONING"
ARCHETYPES = ["T1-1", "T1-2", "T4-1"]
WINDOW_S = 8.0

SCRIPTS: dict[str, dict[str, list[dict[str, Any]]]] = {
    "zephyrine": {
        "opener_script": [
            {"start_s": 0.0, "end_s": 1.6, "text": "good morning I wanted to talk about the garden plan"},
            {"start_s": 3.0, "end_s": 4.6, "text": "yes the garden needs water every single day"},
            {"start_s": 5.6, "end_s": 6.0, "text": "right"},
            {"start_s": 6.6, "end_s": 7.8, "text": "so we agree on the schedule"},
        ],
        "responder_script": [
            {"start_s": 1.8, "end_s": 3.2, "text": "hello there which plan do you mean"},
            {"start_s": 4.2, "end_s": 5.6, "text": "that sounds fair to me honestly"},
            {"start_s": 6.4, "end_s": 7.6, "text": "let us write it down"},
        ],
    },
    "quokkalux": {
        "opener_script": [
            {"start_s": 0.0, "end_s": 1.2, "text": "hi I am here about the budget"},
            {"start_s": 2.8, "end_s": 4.4, "text": "we could split the costs evenly"},
            {"start_s": 6.0, "end_s": 7.2, "text": "deal then"},
        ],
        "responder_script": [
            {"start_s": 1.6, "end_s": 2.6, "text": "oh hello"},
            {"start_s": 3.8, "end_s": 5.0, "text": "that works but the roof comes first"},
            {"start_s": 5.6, "end_s": 6.2, "text": "mm hmm"},
        ],
    },
}


class FakeJudge(Backend):
    """Answers every question from the prompt: a label chosen by a hash, with some reasoning first."""

    def __init__(self, spec: Any, off_label_first: bool):
        self.spec = spec
        self.off_label_first = off_label_first

    def request_body(self, request: Request) -> dict[str, Any]:
        return {"messages": request.messages, "judge": self.spec.name}

    async def complete(self, request: Request) -> Reply:
        prompt = request.messages[0]["content"]
        digest = int(hashlib.sha256((self.spec.name + prompt).encode()).hexdigest(), 16)
        reasoning = f"{REPLY_MARKER}: I read the transcript carefully."
        if "ENTRY:" in prompt:
            return Reply(f"{reasoning}\nENTRY: none\nDEVIATION: none")
        if "yes | partly | no" in prompt:
            if self.off_label_first and len(request.messages) == 1 and digest % 3 == 0:
                return Reply(f"{reasoning} I would say mostly yes.")  # no answer line: asked again
            return Reply(f"{reasoning}\nANSWER: {('yes', 'partly', 'no')[digest % 3]}")
        options = re.findall(r"^- (.+)$", prompt.split("Transcript:")[0], re.MULTILINE)
        choices = [*options, "none"] if options else ["yes", "no"]
        return Reply(f"{reasoning}\nANSWER: {choices[digest % len(choices)]}")


def demo_config(root: Path) -> dict[str, Any]:
    models = {name: {"adapter": "scripted", "label": label, "params": SCRIPTS[name]}
              for name, label in zip(MODEL_NAMES, MODEL_LABELS)}
    cfg = scripted_config(models=models, window_s=WINDOW_S, archetypes=ARCHETYPES)
    cfg["results_dir"] = "results"
    cfg["judge"] = {"judges": {"main": {"backend": "openai", "model": "fake-main", "api_key_env": None},
                               "second": {"backend": "openai", "model": "fake-second", "api_key_env": None}},
                    "prompts_dir": str(REPO / "config" / "judge"), "cache_dir": str(root / "judge-cache")}
    cfg["viewer"] = {"audio": "vorbis", "annotation": {"conversations": {"T1-1": 3, "T1-2": 3, "T4-1": 2}, "seed": 1}}
    return validate_config(cfg, "viewer test config")


def judge_all(config: dict[str, Any], root: Path) -> None:
    settings = judge_settings(config, root)
    rows = build_design(config, root)
    for judge in settings.run:
        spec = settings.judge(judge)
        backend = FakeJudge(spec, off_label_first=(judge == "second"))
        for archetype, qid in judge_plan(ARCHETYPES):
            question = QUESTIONS[qid]
            items = build_items(config, root, settings, archetype, question, rows)
            asyncio.run(judge_items(backend, ReplyCache(settings.cache_dir), items, question, 1, Usage()))
            lines = [json.dumps(record(it, question, spec), ensure_ascii=False) for it in items]
            write_text_atomic(judge_output_path(config, root, judge, archetype, qid), "".join(x + "\n" for x in lines))


def make_demo(root: Path) -> dict[str, Any]:
    """Record, score and judge the small suite under ``root``; returns its config."""
    write_suite(root, archetypes=ARCHETYPES)
    config = demo_config(root)
    rows = build_design(config, root)
    record_many(config, rows, root / config["results_dir"] / "recordings", root=root)
    for row in rows:
        score_conversation(config, root, row.conversation_id)
    judge_all(config, root)
    return config


_BUILT: dict[str, Any] = {}


def built_demo(tmp_path_factory: Any) -> tuple[Path, dict[str, Any]]:
    """The recorded, scored and judged demo, made once per test run (five test modules on either
    worker use it; its audio-health scoring alone costs ~20 CPU-s) and copied into each worker's own
    folder, where the modules write their measures, tables and sites."""
    if "root" not in _BUILT:
        shared = built_once(tmp_path_factory, "viewer-demo", make_demo)
        root = tmp_path_factory.mktemp("viewer-demo")
        shutil.copytree(shared, root, dirs_exist_ok=True, symlinks=True)
        _BUILT["config"] = demo_config(root)
        _BUILT["root"] = root
    return _BUILT["root"], _BUILT["config"]


def leaks(text: str, config: dict[str, Any], root: Path) -> list[str]:
    """What in ``text`` would tell a rater which models talked: a model name or label (or a word
    of one, as the transcript redacts them), a conversation id, a judge's model or reply."""
    from dyafdb.score.transcript import identifying_names

    words = {*identifying_names(config), *MODEL_NAMES, *MODEL_LABELS, REPLY_MARKER, "fake-main", "fake-second"}
    words |= {r.conversation_id for r in build_design(config, root)}
    found = [w for w in sorted(words) if re.search(rf"(?<![0-9a-z]){re.escape(w.lower())}(?![0-9a-z])", text.lower())]
    return found
