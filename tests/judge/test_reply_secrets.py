"""No configured API key, nor a simple encoding of one, is stored anywhere, whatever a server
quotes back (issue 25, class 4): a successful reply, a JSON object inside a reply, an off-label
reply that is asked again, an error body, a reply quoting another judge's key, a text model's turn."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import quote

import pytest

from dyafdb.cli import main
from judge_stub import KEY, Stub
from test_judge import KEY_ENV, anthropic, make_project

OTHER_ENV = "DYAFDB_TEST_SECOND_JUDGE_KEY"
OTHER_KEY = "sk-ant/Second+Key=9f8e7d6c5b4a:?&"  # URL-encoding changes it


@pytest.fixture
def stub():
    s = Stub()
    yield s
    s.close()


def encodings(key: str) -> dict[str, str]:
    raw = key.encode()
    return {"raw": key, "url": quote(key, safe=""), "percent": "".join(f"%{b:02X}" for b in raw),
            "base64": base64.b64encode(raw).decode(), "base64url": base64.urlsafe_b64encode(raw).decode(),
            "hex": raw.hex()}


def leaks(root: Path, *keys: str) -> list[str]:
    """Every file under ``root`` holding a key or the first 16 characters of one of its encodings."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8", errors="replace")
        for key in keys:
            for name, value in encodings(key).items():
                if value[:16] in text or value[:16].lower() in text.lower() and name in ("percent", "hex"):
                    found.append(f"{path.relative_to(root)}: {name}")
    return found


def judge(root: Path, capsys) -> tuple[int, str]:
    rc = main(["judge", "--config", str(root / "config.yaml"), "--root", str(root),
               "--archetype", "T3-2", "--question", "request_asked"])
    captured = capsys.readouterr()
    return rc, captured.out + captured.err


def two_judges(stub: Stub) -> dict:
    judges = anthropic(stub)
    judges["second"] = {**judges["main"], "api_key_env": OTHER_ENV}
    return judges


@pytest.mark.parametrize("reply", [
    pytest.param(lambda k: f"The key in use is {k}.\nANSWER: yes", id="in-the-text"),
    pytest.param(lambda k: f'{{"reasoning": "auth header {k}", "token": "{base64.b64encode(k.encode()).decode()}"}}\n'
                           "ANSWER: yes", id="in-a-json-field"),
    pytest.param(lambda k: f"see https://gw.example/v1?key={quote(k, safe='')}&x=1\nANSWER: yes", id="url-encoded"),
    pytest.param(lambda k: f"dump: 0x{k.encode().hex()} and 'ab{base64.urlsafe_b64encode(b'xy' + k.encode()).decode()}'"
                           "\nANSWER: yes", id="hex-and-misaligned-base64"),
])
def test_a_key_in_a_successful_reply_is_stored_nowhere(tmp_path, stub, monkeypatch, capsys, reply):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv(OTHER_ENV, OTHER_KEY)
    make_project(tmp_path, two_judges(stub))
    stub.answer = lambda messages: reply(KEY) + "\n" + reply(OTHER_KEY)  # its own key and the other judge's
    rc, out = judge(tmp_path, capsys)
    assert rc == 0, out
    answers = (tmp_path / "results/judge/main/T3-2/request_asked.jsonl").read_text()
    assert "***" in answers and '"label": "yes"' in answers  # scrubbed, and still parsed
    assert len(list((tmp_path / "results/judge/cache").rglob("*.json"))) >= 1
    assert leaks(tmp_path, KEY, OTHER_KEY) == [] and KEY not in out and OTHER_KEY not in out


def test_a_key_in_an_off_label_reply_is_neither_stored_nor_sent_back(tmp_path, stub, monkeypatch, capsys):
    """The off-label reply is kept for audit and sent back with the reminder: both scrubbed."""
    monkeypatch.setenv(KEY_ENV, KEY)
    make_project(tmp_path, anthropic(stub))
    stub.answer = lambda messages: ("ANSWER: no" if len(messages) > 1 else f"My key is {KEY}, I think yes.")
    rc, out = judge(tmp_path, capsys)
    assert rc == 0, out
    reminders = [r["body"]["messages"] for r in stub.posts("/v1/messages") if len(r["body"]["messages"]) > 1]
    assert reminders and all(m[1]["content"] == "My key is ***, I think yes." for m in reminders)
    assert leaks(tmp_path, KEY) == []


@pytest.mark.parametrize("echo", [
    pytest.param(lambda k: f"model not found; request had key {k}", id="raw"),
    pytest.param(lambda k: f"bad header Authorization: Basic {base64.b64encode(('user:' + k).encode()).decode()}",
                 id="basic-auth-base64"),
    pytest.param(lambda k: f"bad url /v1/messages?api_key={quote(k, safe='')}", id="url-encoded"),
])
def test_a_key_in_an_error_body_is_stored_and_printed_nowhere(tmp_path, stub, monkeypatch, capsys, echo):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv(OTHER_ENV, OTHER_KEY)
    make_project(tmp_path, two_judges(stub))
    stub.echo = [echo(KEY) + " / " + echo(OTHER_KEY)]
    rc, out = judge(tmp_path, capsys)
    assert rc == 4 and "HTTP 400" in out and "***" in out, out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out
    assert leaks(tmp_path, KEY, OTHER_KEY) == []
    assert not any(v[:16] in out for k in (KEY, OTHER_KEY) for v in encodings(k).values()), out


def test_a_key_in_a_text_models_turn_reaches_no_transcript(tmp_path, monkeypatch):
    """The text pairing's turns come through the same replies: its transcripts hold no key either."""
    from conftest import REPO, write_suite
    from dyafdb.config import validate_config
    from dyafdb.text_pairing import pairing as T
    from stub_chat_server import StubChat

    monkeypatch.setenv(KEY_ENV, KEY)
    write_suite(tmp_path, archetypes=["T1-1"])
    with StubChat(words=12, say=f"token {KEY} {base64.b64encode(KEY.encode()).decode()}") as chat:
        models = {name: {"backend": "openai", "model": f"talker-{name}", "base_url": chat.url, "api_key_env": KEY_ENV}
                  for name in ("ta", "tb")}
        cfg = validate_config({
            "scenarios_dir": str(tmp_path / "scenarios"), "results_dir": str(tmp_path / "results"),
            "models": {"m1": {"adapter": "null"}, "m2": {"adapter": "null"}},
            "suites": {"main": {"models": ["m1", "m2"], "archetypes": ["T1-1"], "repetitions": 1, "window_s": 4}},
            "judge": {"judges": {"main": {"backend": "openai", "model": "stub-judge", "base_url": chat.url,
                                          "api_key_env": None}}, "prompts_dir": str(REPO / "config" / "judge")},
            "text_pairing": {"enabled": True, "models": models}}, "test")
        records = T.generate(cfg, tmp_path, "T1-1", tmp_path / "results" / "t11.jsonl")
    assert records and all("***" in t["text"] for r in records for t in r["turns"])
    assert leaks(tmp_path, KEY) == []
