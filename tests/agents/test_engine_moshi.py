"""The batched Moshi engine on a tiny random Moshi-architecture model (CPU, float32).

A conversation is two sessions (sides a and b) each hearing the other's previous frame. The same
conversation is run alone and in an engine of 16 slots with 7 other conversations that join at
other ticks, one of which leaves before it so it reuses a dirty slot, and it sits out two ticks
while the others step; its text and audio tokens must be equal and its audio equal within float
tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("moshi")
pytest.importorskip("sentencepiece")
torch = pytest.importorskip("torch")

import moshi_tiny  # noqa: E402
from engine_plan import run_plan  # noqa: E402

from dyafdb.agents.base import AgentError  # noqa: E402
from dyafdb.agents.moshi.engine import BatchedMoshi  # noqa: E402
from dyafdb.agents.moshi.stack import DEFAULT_SAMPLING  # noqa: E402

TICKS = 30


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with moshi_tiny.one_torch_thread():
        yield


@pytest.fixture(scope="module")
def model():
    tok = moshi_tiny.tokenizer()
    torch.manual_seed(0)
    return moshi_tiny.build_mimi(), moshi_tiny.build_lm(tok.vocab_size()), tok


def conversation_seed(name: str, side: str) -> int:
    return sum(ord(c) * 131 ** i for i, c in enumerate(f"{name}/{side}")) & 0xFFFFFF


def run(model, capacity: int, plan: dict[str, list[int]]) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """Step each conversation on the global ticks its plan lists; returns per side tokens and audio."""
    mimi, lm, tok = model
    engine = BatchedMoshi(mimi, lm, tok, capacity, DEFAULT_SAMPLING)
    try:
        return run_plan(plan, lambda c, s: engine.join(conversation_seed(c, s), skip_first_frame=True), engine.step,
                        lambda slot: engine.last_tokens[slot], engine.leave)
    finally:
        engine.close()


def test_alone_and_in_a_batch_of_8_give_the_same_tokens(model):
    alone = run(model, 2, {"x": list(range(TICKS))})["x"]
    start = 6
    # x sits out global ticks start+10 and start+11 while the others step
    x_ticks = [t for t in range(start, start + TICKS + 2) if t not in (start + 10, start + 11)]
    plan = {"early": list(range(0, start)),  # leaves before x joins: x reuses its dirty slots
            "x": x_ticks, **{f"c{i}": list(range(i, i + TICKS)) for i in range(6)},
            "late": list(range(start + 3, start + 3 + TICKS))}
    batched = run(model, 16, plan)
    assert sum(1 for ticks in plan.values() if set(ticks) & set(x_ticks)) == 8  # x shares its batch with 7 others
    for side in "ab":
        a, b = alone[side], batched["x"][side]
        assert a["tokens"].shape == (TICKS, 9)
        assert (a["tokens"][2:] >= 0).all()  # generating, not stuck in the delay warm-up
        assert len(set(a["tokens"][:, 1].tolist())) > 5  # audio codes vary: sampling is not degenerate
        np.testing.assert_array_equal(a["tokens"], b["tokens"])
        assert a["text"] == b["text"]
        assert np.abs(a["audio"]).max() > 0.01
        np.testing.assert_allclose(a["audio"], b["audio"], rtol=0, atol=1e-4)
    # the company differs: other conversations' tokens are not x's
    assert not np.array_equal(batched["c0"]["a"]["tokens"], batched["x"]["a"]["tokens"])


def test_tokens_follow_the_conversation_seed(model):
    one = run(model, 2, {"x": list(range(12))})["x"]["a"]["tokens"]
    again = run(model, 2, {"x": list(range(12))})["x"]["a"]["tokens"]
    other = run(model, 2, {"y": list(range(12))})["y"]["a"]["tokens"]
    np.testing.assert_array_equal(one, again)
    assert not np.array_equal(one, other)


def test_full_engine_and_unknown_slots_are_errors(model):
    mimi, lm, tok = model
    engine = BatchedMoshi(mimi, lm, tok, 2, DEFAULT_SAMPLING)
    try:
        engine.join(1), engine.join(2)
        with pytest.raises(AgentError, match="engine full"):
            engine.join(3)
        with pytest.raises(AgentError, match="hold no session"):
            engine.step({5: np.zeros(1920, np.float32)})
    finally:
        engine.close()
