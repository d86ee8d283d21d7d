"""Every network call of the LLM layer has a total deadline (issue 25, class 3).

httpx's timeouts (which both official SDKs pass on) bound each read, write and connect on its own: a
gateway that trickles one byte per second never lets a read wait long, so a call could take as long as
the reply is bytes. These tests serve exactly that from a 127.0.0.1 stub and time the call.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from dyafdb.llm import LLMError, ModelSpec, Request, RetryPolicy, make_client
from judge_stub import KEY, Stub

KEY_ENV = "DYAFDB_TEST_DEADLINE_KEY"
TIMEOUT = 2.0
MARGIN = 2.0  # the call's own set-up and tear-down on a busy 2-core machine
HUNG = 30.0  # how long a test waits for a call that has no deadline before it calls it hung


@pytest.fixture
def stub():
    s = Stub()
    s.trickle_s = 1.0
    yield s
    s.trickle_s = None
    s.close()


def spec(stub: Stub, backend: str, base_url: str | None = None) -> ModelSpec:
    url = base_url or (stub.url if backend == "anthropic" else stub.url + "/v1")
    return ModelSpec(name="main", backend=backend, model=f"{backend}-test", kind="judge",
                     config_key="judge.judges.main", base_url=url, api_key_env=KEY_ENV)


def ask(model: ModelSpec, policy: RetryPolicy, batch: bool = False) -> tuple[str, float]:
    """The LLMError message and how long the call took (fails the test if the call hangs)."""
    async def go() -> None:
        client = make_client(model, policy, batch_poll_s=0.01)
        try:
            request = Request([{"role": "user", "content": "Did the speaker ask? ANSWER: yes or no"}])
            if batch:
                await client.complete_batch({"q0": request})  # type: ignore[attr-defined]
            else:
                await client.complete(request)
        finally:
            await client.aclose()

    start = time.monotonic()
    with pytest.raises(LLMError) as err:
        try:
            asyncio.run(asyncio.wait_for(go(), HUNG))
        except asyncio.TimeoutError:
            pytest.fail(f"the call was still running after {HUNG} s with timeout_s {policy.timeout_s}")
    return str(err.value), time.monotonic() - start


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
def test_a_trickling_reply_fails_at_the_deadline(stub, monkeypatch, backend, headers):
    monkeypatch.setenv(KEY_ENV, KEY)
    stub.trickle_headers = headers
    message, took = ask(spec(stub, backend), RetryPolicy(max_retries=0, timeout_s=TIMEOUT))
    assert took < TIMEOUT + MARGIN, took
    port = stub.url.rsplit(":", 1)[1]
    assert f"judge main ({backend}, {backend}-test)" in message and f"127.0.0.1:{port}" in message
    assert "no complete reply within 2 s" in message and "judge.timeout_s" not in message
    assert KEY not in message


def test_each_retry_has_its_own_deadline_and_the_total_is_bounded(stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    policy = RetryPolicy(max_retries=1, backoff_s=0.01, max_backoff_s=0.01, timeout_s=TIMEOUT,
                         timeout_key="judge.timeout_s")
    message, took = ask(spec(stub, "anthropic"), policy)
    assert took < 2 * TIMEOUT + MARGIN, took
    assert len(stub.posts("/v1/messages")) == 2
    assert "no complete reply within 2 s after 2 tries" in message and "judge.timeout_s" in message


def test_a_message_batch_submission_that_trickles_fails_at_the_deadline(stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    message, took = ask(spec(stub, "anthropic"), RetryPolicy(max_retries=0, timeout_s=TIMEOUT), batch=True)
    assert took < TIMEOUT + MARGIN, took
    assert "POST /v1/messages/batches" in message and "no complete reply within 2 s" in message


def test_the_endpoint_in_the_message_has_no_credentials(stub, monkeypatch):
    """A gateway URL with user:password or a key in its query is named without them."""
    monkeypatch.setenv(KEY_ENV, KEY)
    host = stub.url.removeprefix("http://")
    message, took = ask(spec(stub, "openai", f"http://gw:{KEY}@{host}/v1?key={KEY}"),
                        RetryPolicy(max_retries=0, timeout_s=TIMEOUT))
    assert took < TIMEOUT + MARGIN, took
    assert f"http://{host}/v1" in message and KEY not in message and "gw:" not in message


def test_a_text_pairing_turn_against_a_trickling_server_fails_at_the_deadline():
    """The text pairing's synchronous client (turn by turn) has the same deadline."""
    from dyafdb.llm.text_backends import TextModel, make_chat
    from stub_chat_server import StubChat

    with StubChat(words=30) as stub:
        stub.trickle_s = 1.0
        chat = make_chat(TextModel.from_config("ta", {"backend": "openai", "model": "talker-a", "base_url": stub.url,
                                                      "timeout_s": TIMEOUT, "max_retries": 0}))
        outcome: dict[str, object] = {}

        def turn() -> None:
            start = time.monotonic()
            try:
                chat.reply([{"role": "user", "content": "hello"}], seed=1)
            except LLMError as exc:
                outcome["error"] = str(exc)
            outcome["took"] = time.monotonic() - start

        worker = threading.Thread(target=turn, daemon=True)
        worker.start()
        worker.join(HUNG)
        assert not worker.is_alive(), f"the turn was still running after {HUNG} s"
        stub.trickle_s = None
        chat.close()
    assert outcome["took"] < TIMEOUT + MARGIN, outcome
    message = str(outcome.get("error"))
    assert "text model ta (openai, talker-a)" in message and "no complete reply within 2 s" in message
    assert "text_pairing.models.ta.timeout_s" in message
