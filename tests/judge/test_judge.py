"""The LLM judge against a local stub server that speaks the Anthropic Messages (+ Batches) and the
OpenAI chat-completions HTTP APIs: strict labels, off-label retry, backoff, cache, keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dyafdb.judge.client import JudgeError
from dyafdb.judge.rubric import QUESTIONS, Context, answer_value, price_in_text
from dyafdb.suite.scenarios import find_scenario
from dyafdb.errors import InputError
from judge_stub import KEY, Stub
from scoring_fixtures import load, write_project, write_recording_from_segments
from results_paths import results_at

REPO = Path(__file__).resolve().parents[2]
KEY_ENV = "DYAFDB_TEST_JUDGE_KEY"


@pytest.fixture
def stub():
    s = Stub()
    yield s
    s.close()


def last_user(messages: list[dict[str, str]]) -> str:
    return [m for m in messages if m["role"] == "user"][-1]["content"]


# ---------------------------------------------------------------- a project with transcripts

MODELS = {"orca_voice": {"adapter": "scripted", "label": "Orca Voice 7B", "params": {"script": []}},
          "heron_duplex": {"adapter": "scripted", "label": "Heron Duplex", "params": {"script": []}}}


DISTINCT = ("Ash", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel", "Ivy", "Juniper", "Kapok", "Larch",
            "Maple", "Nutmeg", "Oak", "Pine")


def make_project(root: Path, judges: dict[str, Any], archetypes=("T3-2",), **judge_extra: Any) -> dict[str, Any]:
    from dyafdb.suite.design import build_design
    from dyafdb.score.conversation import score_conversation

    judge = {"judges": judges, "prompts_dir": str(REPO / "config" / "judge"), "backoff_s": 0.01,
             "max_backoff_s": 0.05, **judge_extra}
    write_project(root, list(archetypes), models=MODELS, extra={"judge": judge})
    config = load(root)
    # Each conversation ends with a word of its own, so that no two prompts are the same request: a
    # run asks one request once (the others wait for its claim), and the tests count requests.
    for n, row in enumerate(build_design(config, root)):
        tokens = [("a", 2, "Hello,"), ("a", 3, "I"), ("a", 4, "am"), ("a", 5, "orca_voice."), ("a", 6, "Please"),
                  ("a", 7, "sign"), ("a", 8, "the"), ("a", 9, "release"), ("a", 10, "form."),
                  ("b", 25, "Maybe"), ("b", 26, "later,"), ("b", 27, f"{DISTINCT[n % len(DISTINCT)]}.")]
        write_recording_from_segments(Path(results_at(root).recording(row.conversation_id)),
                                      {"a": [(0, 20)], "b": [(24, 34)]}, 40, tokens,
                                      conversation_id=row.conversation_id, archetype=row.archetype,
                                      scenario=row.scenario, opener=row.opener, models=(row.model_a, row.model_b))
        # the judge reads the transcript only: the score job's other stages (audio health's Whisper and
        # DNSMOS) would cost seconds per conversation and change no request
        score_conversation(config, root, row.conversation_id, ("segments", "transcript"))
    return config


def anthropic(stub: Stub, **extra: Any) -> dict[str, Any]:
    return {"main": {"backend": "anthropic", "model": "claude-test", "base_url": stub.url, "api_key_env": KEY_ENV,
                     "price_input_per_mtok": 15.0, "price_output_per_mtok": 75.0, **extra}}


def read_out(root: Path, judge: str, archetype: str, question: str) -> list[dict[str, Any]]:
    path = root / "results/judge" / judge / archetype / f"{question}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def run(config, root, question="request_asked", archetype="T3-2", judge="main", **kw):
    from dyafdb.judge.runner import run_batch

    return run_batch(config, root, judge, archetype, question, **kw)


# ---------------------------------------------------------------- strict parsing

def ctx_for(archetype: str, root: Path, lines=((0.0, "A"), (1.52, "B"), (3.04, "A"))) -> Context:
    from synthetic_suite import write_suite

    write_suite(root, archetypes=[archetype])
    scenario = find_scenario(root / "scenarios", f"{archetype.lower()}-fixture-01")
    doc = {"speakers": {"A": "a", "B": "b"},
           "lines": [{"speaker": s, "start_s": t, "text": "x"} for t, s in lines]}
    text = "\n".join(f"[{t:.2f}] Speaker {s}: deal at 750 dollars" for t, s in lines)
    return Context(archetype, scenario, doc, text, "a")


def test_yes_no_parsing_is_strict(tmp_path):
    q, ctx = QUESTIONS["request_asked"], ctx_for("T3-2", tmp_path)
    ok = {"ANSWER: yes": "yes", "Reasoning here.\nANSWER: No.": "no", "**ANSWER:** Yes": "yes", "yes": "yes",
          "ANSWER: maybe\nANSWER: no": "no", "  answer :  YES  ": "yes"}
    for reply, label in ok.items():
        assert q.parse(reply, ctx).label == label, reply
    for reply in ("ANSWER: yes, partly", "I think yes", "ANSWER: y", "Yes.\nNo.", "", "ANSWER: yes and no"):
        assert q.parse(reply, ctx) is None, reply


def test_role_adherence_scale(tmp_path):
    q, ctx = QUESTIONS["role_adherence"], ctx_for("T1-1", tmp_path)
    rows = q.rows(q.parse("ANSWER: partly", ctx), ctx)
    assert rows == [{"side": "a", "measure": "role_adherence", "value": 1, "label": "partly"},
                    {"side": "a", "measure": "in_role", "value": 1, "label": "partly"}]
    assert q.rows(q.parse("ANSWER: no", ctx), ctx)[1]["value"] == 0


def test_candidates_and_options_exact_or_none(tmp_path):
    q, ctx = QUESTIONS["final_choice"], ctx_for("T2", tmp_path)
    assert q.parse("ANSWER: willow", ctx).label == "Willow"
    assert q.parse("ANSWER: Willow Room", ctx) is None and q.parse("ANSWER: Oak", ctx) is None
    rows = {r["measure"]: r["value"] for r in q.rows(q.parse("ANSWER: Willow", ctx), ctx) if r["side"] == "b"}
    assert rows == {"final_choice": None, "decided": 1, "solved": 1}
    rows = {r["measure"]: r["value"] for r in q.rows(q.parse("ANSWER: none", ctx), ctx) if r["side"] == "a"}
    assert rows == {"final_choice": None, "decided": 0, "solved": 0}
    q, ctx = QUESTIONS["landed_option"], ctx_for("T4-1", tmp_path / "t41")
    rows = q.rows(q.parse("ANSWER: option two", ctx), ctx)
    assert {(r["side"], r["measure"]): r["value"] for r in rows if r["measure"] == "won"} == {("a", "won"): 0, ("b", "won"): 1}


def test_role_timing_times_must_be_line_starts_in_order(tmp_path):
    q, ctx = QUESTIONS["role_timing"], ctx_for("T1-1", tmp_path)  # Speaker A lines start at 0.00 and 3.04
    v = q.parse("ENTRY: 0.00\nDEVIATION: 3.04 s", ctx)
    assert v.fields == {"entry_s": 0.0, "deviation_s": 3.04} and v.label == "entry=0.00;deviation=3.04"
    assert q.parse("ENTRY: 3.04\nDEVIATION: none", ctx).fields == {"entry_s": 3.04, "deviation_s": None}
    for bad in ("ENTRY: 1.52\nDEVIATION: none",  # a line of the other speaker
                "ENTRY: 3.04\nDEVIATION: 0.00",  # deviation before entry
                "ENTRY: none\nDEVIATION: 3.04",  # deviation without entry
                "ENTRY: 2.00\nDEVIATION: none", "ENTRY: 0.00"):
        assert q.parse(bad, ctx) is None, bad
    assert "3.04" in q.gbnf(ctx) and "1.52" not in q.gbnf(ctx)


def test_agreed_price_must_also_appear_in_transcript(tmp_path):
    q, ctx = QUESTIONS["agreed_price"], ctx_for("T4-4", tmp_path)  # openings 900 / 600; transcript says 750
    v = q.parse("ANSWER: $750", ctx)
    rows = {(r["side"], r["measure"]): r["value"] for r in q.rows(v, ctx)}
    assert rows[("a", "deal")] == 1 and rows[("a", "gap_share")] == 0.5 and rows[("b", "gap_share")] == 0.5
    assert q.parse("ANSWER: 750 dollars", ctx).label == "750" and q.parse("ANSWER: 1,200", ctx).label == "1200"
    v = q.parse("ANSWER: 800", ctx)  # judge says 800, the transcript never does: no deal
    rows = {(r["side"], r["measure"]): r["value"] for r in q.rows(v, ctx)}
    assert rows[("a", "deal")] == 0 and rows[("a", "agreed_price")] is None and rows[("b", "gap_share")] is None
    for bad in ("ANSWER: about 750", "ANSWER: 750 or 800", "ANSWER: seven fifty"):
        assert q.parse(bad, ctx) is None, bad
    assert price_in_text("1200", "we settle on 1,200 then") and price_in_text("750", "seven hundred and fifty")
    assert not price_in_text("750", "7500 is too much") and not price_in_text("75", "750")


def test_answer_value_takes_last_answer_line():
    assert answer_value("ANSWER: a\nthinking\nANSWER: b") == "b"
    assert answer_value("two\nlines") is None


# ---------------------------------------------------------------- against the stub server

def test_anthropic_labels_rows_headers_and_anonymous_prompt(tmp_path, stub, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub))
    stub.answer = lambda messages: "The presser asks for the signature.\nANSWER: yes"
    usage = run(config, tmp_path)
    records = read_out(tmp_path, "main", "T3-2", "request_asked")
    n = len(records)
    assert n == 8 and usage.calls == n and usage.cached == 0  # 2 self-play x 2 openers + 2 x 2 x 2 cross-play
    assert all(r["label"] == "yes" and r["rows"] == [{"side": "a", "measure": "asked", "value": 1, "label": "yes"}]
               for r in records)
    # each answer names the recording its transcript was made from (provenance), which the prompt never shows
    for r in records:
        meta = json.loads((Path(results_at(tmp_path).recording(r["conversation_id"])) / "meta.json").read_text())
        assert r["recording"] == meta["provenance"]["recording"]
    posts = stub.posts("/v1/messages")
    assert len(posts) == n
    from anthropic._constants import ANTHROPIC_API_VERSION

    # the anthropic SDK sends the key as a bearer token and pins the API version it was generated for
    assert posts[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert posts[0]["headers"]["anthropic-version"] == ANTHROPIC_API_VERSION
    assert posts[0]["headers"]["x-stainless-retry-count"] == "0"  # our retry policy, not the SDK's
    assert posts[0]["body"]["model"] == "claude-test" and posts[0]["body"]["max_tokens"] == 512
    assert "temperature" not in posts[0]["body"]  # API 2026-10-21 refuses sampling parameters
    prompt = posts[0]["body"]["messages"][0]["content"]
    assert "sign the release form" in prompt and "Speaker A: Hello, I am [redacted]. Please sign" in prompt
    for bad in ("orca", "heron", "model_", "t3-2-fixture", "__", str(tmp_path), "scripted", records[0]["recording"]):
        assert bad not in prompt.lower(), bad
    out = capsys.readouterr().out
    assert f"{n} questions, {n} calls (0 from cache" in out and "cost $" in out


def test_off_label_reply_is_asked_again_with_a_reminder(tmp_path, stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub))
    stub.answer = lambda messages: ("ANSWER: no" if "did not end with a valid answer" in last_user(messages)
                                    else "I think the presser did ask, more or less.")
    usage = run(config, tmp_path, question="request_granted")
    records = read_out(tmp_path, "main", "T3-2", "request_granted")
    assert all(r["label"] == "no" and len(r["replies"]) == 2 for r in records)
    assert usage.reasked == len(records) and usage.invalid == 0
    second = stub.posts("/v1/messages")[-1]["body"]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == "I think the presser did ask, more or less."
    assert "ANSWER: <one of: yes | no>" in second[2]["content"]


def test_still_off_label_is_recorded_invalid_never_guessed(tmp_path, stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub), label_retries=2)
    stub.answer = lambda messages: "Yes, I believe so."  # starts with yes, still not a label line
    usage = run(config, tmp_path)
    records = read_out(tmp_path, "main", "T3-2", "request_asked")
    assert all(r["label"] == "invalid" and not r["valid"] and len(r["replies"]) == 3 for r in records)
    assert all(r["rows"] == [{"side": "a", "measure": "asked", "value": None, "label": "invalid"}] for r in records)
    assert usage.invalid == len(records) and len(stub.posts("/v1/messages")) == 3 * len(records)


def test_rate_limits_and_server_errors_are_retried(tmp_path, stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub, concurrency=1))
    stub.fail = [429, 529, 500, 503]
    run(config, tmp_path)
    records = read_out(tmp_path, "main", "T3-2", "request_asked")
    assert all(r["label"] == "yes" for r in records)
    assert len(stub.posts("/v1/messages")) == len(records) + 4


def test_retries_give_up_with_a_message(tmp_path, stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub, concurrency=1), max_retries=2)
    stub.fail = [429] * 50
    with pytest.raises(JudgeError, match="HTTP 429 after 3 tries"):
        run(config, tmp_path)
    stub.fail = [400]
    with pytest.raises(JudgeError, match="HTTP 400: .*status 400"):
        run(config, tmp_path)


def test_cache_hits_cost_nothing_and_a_changed_prompt_asks_again(tmp_path, stub, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, KEY)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    for f in (REPO / "config/judge").glob("*.txt"):
        (prompts / f.name).write_text(f.read_text())
    config = make_project(tmp_path, anthropic(stub), prompts_dir=str(prompts))
    first = run(config, tmp_path)
    calls = len(stub.posts("/v1/messages"))
    before = read_out(tmp_path, "main", "T3-2", "request_asked")
    again = run(config, tmp_path)
    assert len(stub.posts("/v1/messages")) == calls and again.cached == again.calls == first.calls
    after = read_out(tmp_path, "main", "T3-2", "request_asked")
    assert [r["label"] for r in after] == [r["label"] for r in before] and all(r["cached"] for r in after)
    assert again.cost(config_spec(config)) == 0.0
    (prompts / "request_asked.txt").write_text((prompts / "request_asked.txt").read_text() + "\nBe strict.\n")
    run(config, tmp_path)
    assert len(stub.posts("/v1/messages")) == 2 * calls
    run(config, tmp_path, question="request_granted")  # the other question's cache is its own
    assert len(stub.posts("/v1/messages")) == 3 * calls


def config_spec(config):
    from dyafdb.judge.settings import judge_settings

    return judge_settings(config).judge("main")


def test_missing_key_names_the_variable_before_any_request(tmp_path, stub, monkeypatch, capsys):
    from dyafdb.cli import main

    monkeypatch.delenv(KEY_ENV, raising=False)
    config = make_project(tmp_path, anthropic(stub))
    with pytest.raises(InputError, match=KEY_ENV):
        run(config, tmp_path)
    rc = main(["judge", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path)])
    assert rc == 2 and KEY_ENV in capsys.readouterr().err
    assert stub.requests == []
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    from dyafdb.judge.settings import judge_settings

    with pytest.raises(InputError, match="ANTHROPIC_API_KEY"):
        judge_settings({"results_dir": "r"}).judge("main").api_key()  # the paper's default judges


def test_key_never_reaches_outputs_logs_or_cache(tmp_path, stub, monkeypatch, capsys):
    from dyafdb.cli import main

    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub))
    assert main(["judge", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path)]) == 0
    monkeypatch.setenv(KEY_ENV, KEY + "-wrong")  # the stub rejects it and echoes it back
    (tmp_path / "results/judge/cache").rename(tmp_path / "old-cache")
    rc = main(["judge", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path)])
    captured = capsys.readouterr()
    assert rc == 4 and "HTTP 401" in captured.err and KEY_ENV in captured.err
    assert KEY not in captured.out + captured.err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in files) and len(files) > 10
    for p in files:
        assert KEY not in p.read_text(errors="replace"), p


def test_anthropic_judge_with_a_temperature_is_refused_with_the_fix():
    from dyafdb.judge.settings import judge_settings

    config = {"results_dir": "r", "judge": {"judges": {"main": {"backend": "anthropic", "model": "m", "temperature": 0}}}}
    with pytest.raises(InputError, match=r"judge.judges.main.temperature: .*remove it"):
        judge_settings(config)


def test_openai_compatible_endpoint(tmp_path, stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    judges = {"gpt": {"backend": "openai", "model": "gpt-test", "base_url": stub.url + "/v1", "api_key_env": KEY_ENV,
                      "grammar": True, "extra_body": {"top_p": 1}}}
    config = make_project(tmp_path, judges, archetypes=("T1-1",))
    stub.answer = lambda messages: "ANSWER: partly"
    run(config, tmp_path, question="role_adherence", archetype="T1-1", judge="gpt")
    records = read_out(tmp_path, "gpt", "T1-1", "role_adherence")
    assert {r["seat"] for r in records} == {"a", "b"}  # T1-1 judges both sides
    assert all(r["rows"][0]["value"] == 1 and r["rows"][1] == {"side": r["seat"], "measure": "in_role", "value": 1,
                                                                 "label": "partly"} for r in records)
    post = stub.posts("/v1/chat/completions")[0]
    assert post["headers"]["authorization"] == f"Bearer {KEY}" and post["body"]["model"] == "gpt-test"
    assert post["body"]["top_p"] == 1 and post["body"]["grammar"].startswith('root ::= "ANSWER: "')
    prompts = {r["body"]["messages"][0]["content"].split("Question: did ")[1][:9] for r in stub.posts("/v1/chat/completions")}
    assert prompts == {"Speaker A", "Speaker B"}


def test_openai_compatible_local_server_without_key(tmp_path, stub, monkeypatch):
    judges = {"local": {"backend": "openai", "model": "qwen", "base_url": stub.url + "/v1", "api_key_env": None}}
    config = make_project(tmp_path, judges)
    run(config, tmp_path, judge="local")
    assert "authorization" not in stub.posts("/v1/chat/completions")[0]["headers"]


def test_message_batches_api(tmp_path, stub, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub, batch=True, batch_poll_s=0.01))
    stub.answer = lambda messages: ("ANSWER: yes" if len(messages) > 1 else "Hmm, hard to say.")
    usage = run(config, tmp_path)
    records = read_out(tmp_path, "main", "T3-2", "request_asked")
    assert all(r["label"] == "yes" for r in records)
    assert len(stub.posts("/v1/messages/batches")) == 2  # the first round, then the reminders
    assert stub.posts("/v1/messages") == []
    batch = stub.posts("/v1/messages/batches")[0]["body"]["requests"]
    assert len(batch) == len(records) and batch[0]["params"]["model"] == "claude-test"
    spec = config_spec(config)
    full = (usage.batch_input_tokens * 15.0 + usage.batch_output_tokens * 75.0) / 1e6
    assert usage.batch_input_tokens > 0 and usage.cost(spec) == pytest.approx(full * 0.5)


def test_local_llamacpp_judge_answers_in_label_set(tmp_path):
    from dyafdb.suite.design import build_design

    config = make_project(tmp_path, {"demo": {"backend": "llamacpp", "n_ctx": 2048}})
    usage = run(config, tmp_path, judge="demo", rows=build_design(config, tmp_path)[:1])
    records = read_out(tmp_path, "demo", "T3-2", "request_asked")
    assert usage.invalid == 0 and all(r["label"] in ("yes", "no") for r in records)
    assert all(r["demo_quality"] and r["backend"] == "llamacpp" for r in records)


# ---------------------------------------------------------------- malformed HTTP-200 replies (issue 15, item 4)

MALFORMED_MESSAGES = {"invalid_json": "invalid JSON", "html": "text/html", "no_content": "without content"}


@pytest.mark.parametrize("kind", sorted(MALFORMED_MESSAGES))
def test_malformed_reply_is_retried_like_a_server_error(tmp_path, stub, monkeypatch, kind):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub, concurrency=1))
    stub.malformed = [kind, kind]
    run(config, tmp_path)
    records = read_out(tmp_path, "main", "T3-2", "request_asked")
    assert all(r["label"] == "yes" and r["replies"] == ["ANSWER: yes"] for r in records)
    assert len(stub.posts("/v1/messages")) == len(records) + 2


@pytest.mark.parametrize("kind", sorted(MALFORMED_MESSAGES))
def test_malformed_replies_fail_the_batch_then_a_rerun_gets_real_answers(tmp_path, stub, monkeypatch, capsys, kind):
    from dyafdb.cli import main

    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub, concurrency=1), max_retries=2)
    out = tmp_path / "results/judge/main/T3-2/request_asked.jsonl"
    stub.malformed = [kind] * 3
    with pytest.raises(JudgeError, match=rf"judge main \(anthropic, claude-test\).*{MALFORMED_MESSAGES[kind]}.*after 3 tries"):
        run(config, tmp_path)
    assert not out.exists()  # a failed batch leaves no output that looks complete
    stub.malformed = [kind] * 3
    args = ["judge", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path),
            "--archetype", "T3-2", "--question", "request_asked"]
    rc = main(args)
    err = capsys.readouterr().err
    assert rc != 0 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("dyafdb judge: error: judge main") and MALFORMED_MESSAGES[kind] in err
    assert not out.exists()
    assert main(args) == 0  # the server is healthy again: real answers, nothing bad was cached
    records = read_out(tmp_path, "main", "T3-2", "request_asked")
    assert records and all(r["label"] == "yes" and not r["cached"] for r in records)


@pytest.mark.parametrize("kind", ["invalid_json", "html", "no_choices"])
def test_openai_malformed_reply_is_retried_then_fails_with_a_message(tmp_path, stub, monkeypatch, kind):
    judges = {"local": {"backend": "openai", "model": "qwen", "base_url": stub.url + "/v1", "api_key_env": None,
                        "concurrency": 1}}
    config = make_project(tmp_path, judges, max_retries=1)
    stub.malformed = [kind]
    run(config, tmp_path, judge="local")
    n = len(read_out(tmp_path, "local", "T3-2", "request_asked"))
    assert len(stub.posts("/v1/chat/completions")) == n + 1
    stub.malformed = [kind] * 2
    with pytest.raises(JudgeError, match=r"judge local \(openai, qwen\).*after 2 tries"):
        run(config, tmp_path, judge="local", question="request_granted")
    run(config, tmp_path, judge="local", question="request_granted")
    assert all(r["label"] == "yes" for r in read_out(tmp_path, "local", "T3-2", "request_granted"))


def test_message_batch_without_id_is_retried_then_fails_and_caches_nothing(tmp_path, stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub, batch=True, batch_poll_s=0.01), max_retries=2)
    stub.malformed = ["no_id"]
    run(config, tmp_path)  # one bad reply to the create: asked again, then polled as usual
    assert len(stub.posts("/v1/messages/batches")) == 2 and stub.posts("/v1/messages") == []
    assert all(r["label"] == "yes" for r in read_out(tmp_path, "main", "T3-2", "request_asked"))
    stub.malformed = ["no_id"] * 3
    with pytest.raises(JudgeError, match=r"judge main \(anthropic, claude-test\).*batch.*without id.*after 3 tries"):
        run(config, tmp_path, question="request_granted")
    assert not (tmp_path / "results/judge/main/T3-2/request_granted.jsonl").exists()
    run(config, tmp_path, question="request_granted")
    assert all(r["label"] == "yes" and not r["cached"] for r in read_out(tmp_path, "main", "T3-2", "request_granted"))


def test_a_corrupt_cache_entry_is_asked_again(tmp_path, stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub))
    run(config, tmp_path)
    calls = len(stub.posts("/v1/messages"))
    entries = sorted((tmp_path / "results/judge/cache").rglob("*.json"))
    for rounds, corrupt in enumerate(('{"input_tokens": 3}', '["ANSWER: yes"]', '{"text": "ANSW'), 2):
        for entry in entries:  # no text, not an object, cut short
            entry.write_text(corrupt)
        run(config, tmp_path)
        assert len(stub.posts("/v1/messages")) == rounds * calls
        assert all(r["label"] == "yes" and not r["cached"] for r in read_out(tmp_path, "main", "T3-2", "request_asked"))
