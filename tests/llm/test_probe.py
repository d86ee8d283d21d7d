"""`dyafdb plan --check` asks the far side (issue 25, class 8): one cheap request per judge (and per
text model of an enabled text pairing) proves the endpoint answers, the key is accepted and the model
exists, each failure a named check with its fix; `--offline` (or DYAFDB_OFFLINE=1) skips them.

The far side is a real HTTP peer on 127.0.0.1 (tests/standins: judge_stub for Anthropic and OpenAI,
stub_chat_server for a key-less OpenAI-compatible local server), spoken to by the official SDKs.
"""

from __future__ import annotations

import json
import socket
import time

import pytest
import yaml

from conftest import REPO, scripted_config
from dyafdb.cli import main
from judge_stub import KEY, Stub
from stub_chat_server import StubChat

KEY_ENV = "DYAFDB_TEST_PROBE_KEY"


@pytest.fixture
def stub():
    s = Stub()
    s.models = {"claude-opus-5", "claude-sonnet-5", "qwen"}
    yield s
    s.trickle_s = None
    s.close()


@pytest.fixture
def chat():
    with StubChat() as s:
        s.models = {"stub-judge", "talker-a", "talker-b"}
        yield s


@pytest.fixture
def project(tmp_path, monkeypatch):
    source = sorted((REPO / "scenarios" / "T1-1").glob("*.yaml"))[0]
    (tmp_path / "scenarios" / "T1-1").mkdir(parents=True)
    (tmp_path / "scenarios" / "T1-1" / source.name).write_text(source.read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DYAFDB_OFFLINE", raising=False)
    monkeypatch.setenv(KEY_ENV, KEY)
    return tmp_path


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def judge(backend: str, url: str, model: str, key_env: str | None = KEY_ENV, **more) -> dict:
    return {"backend": backend, "model": model, "base_url": url, "api_key_env": key_env, **more}


def write(root, judges: dict, **judge_section) -> None:
    cfg = scripted_config()
    cfg["judge"] = {"judges": judges, "prompts_dir": str(REPO / "config" / "judge"), **judge_section}
    (root / "config.yaml").write_text(yaml.safe_dump(cfg))


def plan_check(capsys, *extra: str) -> tuple[int, dict, str]:
    """rc, the checks by name (from --json) and the text output of the same command."""
    rc = main(["plan", "--config", "config.yaml", "--check", "--json", *extra])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    rc_text = main(["plan", "--config", "config.yaml", "--check", *extra])
    captured = capsys.readouterr()
    assert rc_text == rc
    return rc, checks, captured.out + captured.err


def anthropic_url(stub: Stub) -> str:
    return stub.url


def openai_url(stub: Stub) -> str:
    return stub.url + "/v1"


URL = {"anthropic": anthropic_url, "openai": openai_url}


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_a_good_judge_passes_after_one_models_request(project, stub, capsys, backend):
    model = "claude-opus-5" if backend == "anthropic" else "qwen"
    write(project, {"main": judge(backend, URL[backend](stub), model)})
    rc, checks, text = plan_check(capsys)
    assert rc == 0, text
    assert checks["judge main endpoint"]["ok"] and model in checks["judge main endpoint"]["detail"]
    gets = [r for r in stub.requests if r["method"] == "GET"]
    assert {r["path"] for r in gets} == {f"/v1/models/{model}"}
    assert not [r for r in stub.requests if r["method"] == "POST"], "a probe never asks the model anything"
    assert KEY not in text


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_an_unreachable_base_url_is_named_with_its_fix(project, capsys, backend):
    url = f"http://127.0.0.1:{closed_port()}" + ("/v1" if backend == "openai" else "")
    write(project, {"main": judge(backend, url, "claude-opus-5")})
    start = time.monotonic()
    rc, checks, text = plan_check(capsys)
    assert time.monotonic() - start < 30
    assert rc == 1
    bad = checks["judge main endpoint"]
    assert not bad["ok"] and bad["detail"] == f"{url} unreachable (connection refused)"
    assert "judge.judges.main.base_url" in bad["fix"] and "--offline" in bad["fix"]
    assert f"FAILED judge main endpoint: {url} unreachable (connection refused)" in text
    assert "failed: judge main endpoint" in text


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_a_refused_key_is_named_and_never_printed(project, stub, capsys, monkeypatch, backend):
    wrong = "sk-wrong-0123456789abcdef0123456789"
    monkeypatch.setenv(KEY_ENV, wrong)
    write(project, {"main": judge(backend, URL[backend](stub), "claude-opus-5")})
    rc, checks, text = plan_check(capsys)
    assert rc == 1
    assert checks["judge main key"]["ok"]  # it is set; the far side refuses it
    bad = checks["judge main endpoint"]
    assert not bad["ok"] and bad["detail"].startswith(f"key in ${KEY_ENV} refused (HTTP 401)")
    assert f"set a valid key in ${KEY_ENV}" in bad["fix"]
    assert wrong not in text and KEY not in text


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_an_unknown_model_is_named_with_the_models_the_endpoint_has(project, stub, capsys, backend):
    url = URL[backend](stub)
    write(project, {"main": judge(backend, url, "claude-x")})
    rc, checks, text = plan_check(capsys)
    assert rc == 1
    bad = checks["judge main endpoint"]
    assert not bad["ok"] and bad["detail"] == f"model claude-x unknown at {url} (HTTP 404)"
    assert bad["fix"] == "set judge.judges.main.model to one of: claude-opus-5, claude-sonnet-5, qwen"
    assert "FAILED judge main endpoint: model claude-x unknown" in text


def test_each_judge_the_run_calls_is_probed_and_named(project, stub, capsys):
    write(project, {"main": judge("anthropic", stub.url, "claude-opus-5"),
                    "second": judge("anthropic", stub.url, "claude-nope"),
                    "keyless": judge("anthropic", stub.url, "claude-sonnet-5", key_env="DYAFDB_TEST_PROBE_UNSET"),
                    "spare": judge("anthropic", stub.url, "claude-also-nope")}, run=["main", "second", "keyless"])
    rc, checks, text = plan_check(capsys)
    assert rc == 1
    assert checks["judge main endpoint"]["ok"] and not checks["judge second endpoint"]["ok"]
    assert "judge spare endpoint" not in checks  # not in judge.run: not called, not probed
    # A missing key fails its own check; the far side is not asked with no key.
    assert not checks["judge keyless key"]["ok"] and "judge keyless endpoint" not in checks
    asked = {r["path"].rsplit("/", 1)[-1] for r in stub.requests}
    assert "claude-also-nope" not in asked and "claude-sonnet-5" not in asked


def test_a_local_server_without_the_model_route_is_checked_against_its_list(project, chat, capsys):
    chat.retrieve = False  # llama.cpp's server: GET /v1/models only
    write(project, {"main": judge("openai", chat.url, "stub-judge", key_env=None)})
    rc, checks, text = plan_check(capsys)
    assert rc == 0, text
    write(project, {"main": judge("openai", chat.url, "not-served", key_env=None)})
    rc, checks, text = plan_check(capsys)
    assert rc == 1
    bad = checks["judge main endpoint"]
    assert bad["detail"] == f"model not-served unknown at {chat.url} (HTTP 404)"
    assert bad["fix"] == "set judge.judges.main.model to one of: stub-judge, talker-a, talker-b"


def test_a_base_url_that_is_not_the_apis_root_is_named(project, stub, capsys):
    url = stub.url + "/wrong/root"
    write(project, {"main": judge("anthropic", url, "claude-opus-5")})
    rc, checks, text = plan_check(capsys)
    assert rc == 1
    bad = checks["judge main endpoint"]
    assert not bad["ok"] and url in bad["detail"] and "no models endpoint" in bad["detail"]
    assert "judge.judges.main.base_url" in bad["fix"]


def test_a_server_error_is_named(project, stub, capsys):
    stub.fail = [503, 503]  # one per command run (json, text)
    write(project, {"main": judge("anthropic", stub.url, "claude-opus-5")})
    rc, checks, text = plan_check(capsys)
    assert rc == 1
    bad = checks["judge main endpoint"]
    assert "HTTP 503" in bad["detail"] and "try later" in bad["fix"]


def test_a_trickling_endpoint_fails_at_the_probe_deadline(project, stub, capsys):
    stub.trickle_s = 1.0
    write(project, {"main": judge("anthropic", stub.url, "claude-opus-5")}, probe_timeout_s=2)
    start = time.monotonic()
    rc = main(["plan", "--config", "config.yaml", "--check", "--json"])
    took = time.monotonic() - start
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert rc == 1 and took < 2 + 8, took
    bad = checks["judge main endpoint"]
    assert bad["detail"] == f"{stub.url} gave no complete reply within 2 s"
    assert "judge.probe_timeout_s" in bad["fix"]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_offline_skips_the_probes_and_says_so(project, capsys, monkeypatch, how):
    write(project, {"main": judge("anthropic", f"http://127.0.0.1:{closed_port()}", "claude-x")})
    if how == "env":
        monkeypatch.setenv("DYAFDB_OFFLINE", "1")
    rc, checks, text = plan_check(capsys, *(["--offline"] if how == "flag" else []))
    assert rc == 0, text
    skipped = checks["judge main endpoint"]
    assert skipped["ok"] and skipped["detail"].startswith("not probed: offline")
    assert "not probed: offline" in text


def test_a_local_gguf_judge_is_checked_on_disk_without_network(project, capsys):
    missing = project / "weights" / "judge.gguf"
    write(project, {"demo": {"backend": "llamacpp", "model_path": str(missing)}})
    rc, checks, text = plan_check(capsys)
    assert rc == 1
    bad = checks["judge demo endpoint"]
    assert not bad["ok"] and str(missing) in bad["detail"] and "judge.judges.demo.model_path" in bad["fix"]


def test_text_pairing_models_are_probed_when_the_pairing_is_on(project, chat, capsys):
    cfg = scripted_config()
    cfg["judge"] = {"judges": {"main": judge("openai", chat.url, "stub-judge", key_env=None)},
                    "prompts_dir": str(REPO / "config" / "judge")}
    cfg["text_pairing"] = {"enabled": True, "models": {
        "ta": {"backend": "openai", "base_url": chat.url, "model": "talker-a"},
        "tb": {"backend": "openai", "base_url": chat.url, "model": "talker-zzz"}}}
    (project / "config.yaml").write_text(yaml.safe_dump(cfg))
    rc, checks, text = plan_check(capsys)
    assert rc == 1
    assert checks["text model ta endpoint"]["ok"] and checks["judge main endpoint"]["ok"]
    bad = checks["text model tb endpoint"]
    assert bad["detail"] == f"model talker-zzz unknown at {chat.url} (HTTP 404)"
    assert bad["fix"].startswith("set text_pairing.models.tb.model to one of: ")
    cfg["text_pairing"]["enabled"] = False
    (project / "config.yaml").write_text(yaml.safe_dump(cfg))
    rc, checks, text = plan_check(capsys)
    assert rc == 0 and not any(name.startswith("text model") for name in checks), text
