"""The LLM layer's one scrubbing function, and where it is applied: every reply, every error, the SDK
logs (issue 25, class 4; what reaches the judge's files is tests/judge/test_reply_secrets.py)."""

from __future__ import annotations

import asyncio
import base64
import logging
from urllib.parse import quote, quote_plus

import pytest

from dyafdb.llm import LLMError, ModelSpec, Reply, Request, RetryPolicy, make_client
from judge_stub import KEY, Stub

KEY_ENV = "DYAFDB_TEST_SCRUB_KEY"
ODD_KEY = "sk-ant/odd+key=with:?&chars#1"  # every URL encoding of it differs from it


@pytest.fixture
def keys(monkeypatch):
    from dyafdb.llm.secrets import register_key_env

    register_key_env(KEY_ENV)
    register_key_env(KEY_ENV + "_ODD")
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv(KEY_ENV + "_ODD", ODD_KEY)


def encoded(key: str) -> list[str]:
    raw = key.encode()
    forms = [key, quote(key, safe=""), quote_plus(key), "".join(f"%{b:02x}" for b in raw), raw.hex().upper()]
    for prefix in (b"", b"u", b"us"):  # the key at each of the three alignments inside a longer base64 text
        forms += [base64.b64encode(prefix + raw).decode(), base64.urlsafe_b64encode(prefix + raw).decode()]
    return forms


@pytest.mark.parametrize("key", [KEY, ODD_KEY])
def test_every_simple_encoding_of_a_configured_key_is_scrubbed(keys, key):
    from dyafdb.llm.secrets import scrub

    for form in encoded(key):
        text = scrub(f"before {form} after")
        assert text.startswith("before ") and text.endswith(" after") and "***" in text, form
        # at most the 4-character group at each edge of a base64 text stays (and its padding): it
        # mixes the key's first or last byte or two with its neighbours' bits, so it differs from
        # text to text
        assert len(text) - len("before  after") <= len("***") + 10, (form, text)


def test_short_placeholder_keys_and_ordinary_text_are_left_alone(monkeypatch):
    from dyafdb.llm.secrets import register_key_env, scrub

    register_key_env("DYAFDB_TEST_PLACEHOLDER")
    monkeypatch.setenv("DYAFDB_TEST_PLACEHOLDER", "EMPTY")  # what vLLM's docs tell clients to send
    assert scrub("ANSWER: EMPTY, yes") == "ANSWER: EMPTY, yes"


def test_replies_and_errors_scrub_themselves(keys):
    assert Reply(f"the key {KEY} and {ODD_KEY}").text == "the key *** and ***"
    assert KEY not in str(LLMError(f"HTTP 400: {base64.b64encode(KEY.encode()).decode()}"))


def test_a_key_set_for_one_model_is_scrubbed_from_another_models_reply(monkeypatch):
    """A judge's config names its key variable; a reply from any model that quotes it is scrubbed."""
    from dyafdb.judge.settings import judge_settings

    monkeypatch.setenv("DYAFDB_TEST_OTHER_JUDGE_KEY", "sk-other-0123456789abcdef")
    judge_settings({"results_dir": "r", "judge": {"judges": {"x": {
        "backend": "openai", "model": "m", "api_key_env": "DYAFDB_TEST_OTHER_JUDGE_KEY"}}}})
    assert Reply("quote: sk-other-0123456789abcdef").text == "quote: ***"


def test_sdk_and_httpx_logs_hold_no_key(keys, caplog):
    """httpx logs each request's URL at INFO: a gateway URL with a key in it is scrubbed there too."""
    stub = Stub()
    host = stub.url.removeprefix("http://")
    spec = ModelSpec(name="gw", backend="openai", model="m", base_url=f"http://u:{KEY}@{host}/v1?key={KEY}",
                     api_key_env=KEY_ENV)

    async def go() -> None:
        client = make_client(spec, RetryPolicy(max_retries=0, timeout_s=10))
        try:
            await client.complete(Request([{"role": "user", "content": "hi"}]))
        except LLMError:
            pass  # the path is odd for the stub; what matters is what was logged on the way
        finally:
            await client.aclose()

    caplog.set_level(logging.DEBUG)
    try:
        asyncio.run(go())
    finally:
        stub.close()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "HTTP Request" in logged and KEY not in logged
