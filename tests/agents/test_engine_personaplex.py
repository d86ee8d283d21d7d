"""The batched PersonaPlex engine on the tiny fork-shaped model (CPU, float32).

Each side of a conversation runs the fork's prompt phase (a .pt voice, silence, its own text
prompt, silence) alone in its slot when it joins, then steps in the shared batch. The same
conversation run alone and in an engine of 16 slots, where 7 other conversations join at other
ticks (their prompt phases run while it waits), one leaves before it so it reuses a dirty slot, and
it sits out two ticks, gives the same text and audio tokens and audio within float tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("moshi")
pytest.importorskip("sentencepiece")
torch = pytest.importorskip("torch")

import moshi_tiny  # noqa: E402
from engine_plan import run_plan  # noqa: E402
from personaplex_fork import ForkLMGen, build_fork_stack  # noqa: E402

from dyafdb.agents.moshi.personaplex import wrap_with_system_tags  # noqa: E402
from dyafdb.agents.moshi.personaplex_engine import BatchedPersonaPlex, VoicePrompt  # noqa: E402
from dyafdb.agents.moshi.stack import DEFAULT_SAMPLING  # noqa: E402

TICKS = 24
PROTO = moshi_tiny.train_tokenizer()
ROLES = {"a": "you enjoy a good conversation", "b": "you want to book the table"}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with moshi_tiny.one_torch_thread():
        yield


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    mimi, lm, tok = build_fork_stack(PROTO)
    max_delay = max(lm.delays)
    gen = torch.Generator().manual_seed(5)
    # A released voice's shape: per-frame embeddings and the fork's token cache (max_delay + 3 positions).
    cache = torch.randint(0, moshi_tiny.CARD, (1, lm.num_codebooks, max_delay + 3), generator=gen)
    cache[:, 0] = torch.randint(4, lm.text_card, (1, max_delay + 3), generator=gen)
    voice = VoicePrompt(torch.randn(5, 1, 1, lm.dim, generator=gen), cache)
    return mimi, lm, tok, voice


def seed_of(name: str, side: str) -> int:
    return sum(ord(c) * 131 ** i for i, c in enumerate(f"{name}/{side}")) & 0xFFFFFF


def make_engine(model, capacity: int) -> BatchedPersonaPlex:
    mimi, lm, tok, _ = model
    return BatchedPersonaPlex(mimi, lm, tok, capacity, DEFAULT_SAMPLING,
                              silence_tokens=ForkLMGen.silence_tokens[0, :, 0].tolist(),
                              sine_tokens=ForkLMGen.sine_tokens[0, :, 0].tolist(), audio_silence_frame_cnt=3)


def run(model, capacity: int, plan: dict[str, list[int]]) -> dict:
    """Step each conversation on the global ticks its plan lists; returns per side tokens and audio."""
    tok, voice = model[2], model[3]
    engine = make_engine(model, capacity)
    join = lambda c, s: engine.join(seed_of(c, s), text_prompt_tokens=tok.encode(wrap_with_system_tags(ROLES[s])),  # noqa: E731
                                    voice=voice)
    try:
        return run_plan(plan, join, engine.step, lambda slot: engine.last_tokens[slot], engine.leave)
    finally:
        engine.close()


def test_alone_and_in_a_batch_of_8_give_the_same_tokens(model):
    alone = run(model, 2, {"x": list(range(TICKS))})["x"]
    start = 5
    x_ticks = [t for t in range(start, start + TICKS + 2) if t not in (start + 8, start + 9)]
    plan = {"early": list(range(0, start)),  # leaves before x joins: x reuses its dirty slots
            "x": x_ticks, **{f"c{i}": list(range(i, i + TICKS)) for i in range(6)},
            "late": list(range(start + 3, start + 3 + TICKS))}  # its prompt phase runs mid-conversation of x
    batched = run(model, 16, plan)
    assert sum(1 for ticks in plan.values() if set(ticks) & set(x_ticks)) == 8
    for side in "ab":
        a, b = alone[side], batched["x"][side]
        assert a["tokens"].shape == (TICKS, 17)  # text + the depformer's 16 codebooks
        assert (a["tokens"] >= 0).all()  # past the delay warm-up: the prompt phase ran first
        assert len(set(a["tokens"][:, 1].tolist())) > 5  # agent audio codes vary: not degenerate
        np.testing.assert_array_equal(a["tokens"], b["tokens"])
        assert a["text"] == b["text"]
        assert np.abs(a["audio"]).max() > 0.01
        np.testing.assert_allclose(a["audio"], b["audio"], rtol=0, atol=1e-4)
    assert not np.array_equal(batched["c0"]["a"]["tokens"], batched["x"]["a"]["tokens"])


def test_the_prompt_phase_shapes_the_conversation(model):
    """The text prompt and the voice reach the model: changing either changes the tokens."""
    tok, voice = model[2], model[3]

    def first_tokens(role: str, voice_prompt) -> np.ndarray:
        engine = make_engine(model, 2)
        try:
            slot = engine.join(7, text_prompt_tokens=tok.encode(wrap_with_system_tags(role)), voice=voice_prompt)
            return np.stack([(engine.step({slot: np.zeros(1920, np.float32)}), engine.last_tokens[slot])[1]
                             for _ in range(8)])
        finally:
            engine.close()

    base = first_tokens(ROLES["a"], voice)
    np.testing.assert_array_equal(base, first_tokens(ROLES["a"], voice))
    assert not np.array_equal(base, first_tokens(ROLES["b"], voice))
    other_voice = VoicePrompt(voice.embeddings.flip(0), voice.cache.roll(1, dims=2))
    assert not np.array_equal(base, first_tokens(ROLES["a"], other_voice))


def test_forced_tokens_win_over_the_sample_and_condition_the_depformer(model):
    """The fork's provided tokens: the text prompt's tokens appear in the text stream at their positions."""
    tok, voice = model[2], model[3]
    engine = make_engine(model, 2)
    try:
        prompt = tok.encode(wrap_with_system_tags(ROLES["b"]))
        seen: list[int] = []
        original = engine._execute

        def spy(slots, embeddings=None):
            out = original(slots, embeddings)
            if embeddings is None and out is not None:
                seen.append(int(engine.lm_gen._streaming_state.cache[slots[0], 0,
                                engine.lm_gen._streaming_state.offsets[slots[0]] % engine.lm_gen._streaming_state.cache.shape[2]]))
            return out

        engine._execute = spy
        engine.join(3, text_prompt_tokens=prompt, voice=None)
        # calls: prime, 2 silence, then the text tokens one per call, then 3 silence
        assert seen[2:2 + len(prompt)] == list(prompt)
        assert seen[:2] == [3, 3] and seen[2 + len(prompt):] == [3, 3, 3]
    finally:
        engine.close()


def test_sessions_through_the_tick_batcher_match_the_engine_alone(model):
    """The host's path: sessions open (prompt phase under the model lock) while another steps."""
    import threading

    from dyafdb.agents.base import Session
    from dyafdb.agents.engine.batcher import TickBatcher
    from dyafdb.agents.moshi.personaplex_engine import PersonaPlexSessions

    tok, voice = model[2], model[3]

    def session(name: str, side: str) -> Session:
        return Session(conversation_id=name, side=side, prompt=ROLES[side], speaker_name="Avery",
                       seed=seed_of(name, side), is_opener=side == "a", window_ticks=10)

    def self_talk(batcher, name: str, ticks: int, out: dict) -> None:
        handles = {s: batcher.open(session(name, s))[0] for s in "ab"}
        heard = {s: np.zeros(1920, np.float32) for s in "ab"}
        got = {s: [] for s in "ab"}
        for _ in range(ticks):
            frames = {}
            threads = [threading.Thread(target=lambda s=s: frames.__setitem__(s, batcher.step(handles[s], heard[s])))
                       for s in "ab"]
            [t.start() for t in threads]
            [t.join() for t in threads]
            for s in "ab":
                got[s].append(frames[s].audio)
            heard = {"a": frames["b"].audio, "b": frames["a"].audio}
        for s in "ab":
            batcher.close(handles[s])
        out[name] = {s: np.concatenate(v) for s, v in got.items()}

    results: dict = {}
    engine = make_engine(model, 8)
    sessions = PersonaPlexSessions(engine, voice, "tiny.pt", model_name="pp")
    batcher = TickBatcher(sessions, max_wait_s=0.05, step_timeout_s=60)
    try:
        first = threading.Thread(target=self_talk, args=(batcher, "x", 12, results))
        first.start()
        second = threading.Thread(target=self_talk, args=(batcher, "y", 8, results))
        second.start()  # its two prompt phases run while x is mid-conversation
        first.join(120)
        second.join(120)
        assert batcher.failure is None
        _, info = sessions.open(session("z", "a"))
        assert info.adapter == "personaplex" and info.voice == "tiny.pt" and info.extra["text_prompt_tokens"] > 0
    finally:
        batcher.stop()
        engine.close()
    alone = run(model, 2, {"x": list(range(12))})["x"]
    for side in "ab":
        np.testing.assert_allclose(results["x"][side], alone[side]["audio"], rtol=0, atol=1e-4)
    assert not np.allclose(results["x"]["a"][: len(results["y"]["a"])], results["y"]["a"])


def run_riding(model, capacity: int, joins: dict[str, int], steps: dict[str, int], pause: dict[str, set] | None = None) -> tuple[dict, dict]:
    """Conversations that join (``begin_join``) at the global tick given and step ``steps[c]`` ticks once
    their prompt phases are done, the prompt steps riding in the ticks of those already stepping.
    Returns per conversation and side the tokens, audio and text, and per conversation the ticks its
    join took and the batch sizes of the ticks it rode in."""
    tok, voice = model[2], model[3]
    engine = make_engine(model, capacity)
    slots: dict[tuple[str, str], int] = {}
    heard: dict[tuple[str, str], np.ndarray] = {}
    done = {c: 0 for c in joins}
    got = {c: {s: {"tokens": [], "audio": [], "text": []} for s in "ab"} for c in joins}
    joined_at: dict[str, dict] = {c: {} for c in joins}
    pause = pause or {}
    try:
        t = 0
        while any(n < steps[c] for c, n in done.items()):
            for c, at in joins.items():
                if t == at:
                    for s in "ab":
                        slots[(c, s)] = engine.begin_join(seed_of(c, s), text_prompt_tokens=tok.encode(wrap_with_system_tags(ROLES[s])),
                                                          voice=voice)
                        heard[(c, s)] = np.zeros(1920, np.float32)
            ready = [c for c in joins if t >= joins[c] and all(engine.prompt_done(slots[(c, s)]) for s in "ab")
                     and done[c] < steps[c] and t not in pause.get(c, set())]
            joining = [c for c in joins if t >= joins[c] and not all(engine.prompt_done(slots[(c, s)]) for s in "ab")]
            frames = engine.step({slots[(c, s)]: heard[(c, s)] for c in ready for s in "ab"})
            for c in joining:
                joined_at[c].setdefault("ticks", 0)
                joined_at[c]["ticks"] += 1
                joined_at[c].setdefault("batches", []).append(2 * len(ready))
            for c in ready:
                for s in "ab":
                    frame = frames[slots[(c, s)]]
                    got[c][s]["audio"].append(frame.audio)
                    got[c][s]["text"].extend(frame.text)
                    got[c][s]["tokens"].append(engine.last_tokens[slots[(c, s)]])
                heard[(c, "a")], heard[(c, "b")] = frames[slots[(c, "b")]].audio, frames[slots[(c, "a")]].audio
                done[c] += 1
                if done[c] == steps[c]:
                    for s in "ab":
                        engine.leave(slots[(c, s)])
            t += 1
            assert t < 1000
    finally:
        engine.close()
    out = {c: {s: {"tokens": np.stack(v["tokens"]), "audio": np.concatenate(v["audio"]), "text": v["text"]}
               for s, v in sides.items()} for c, sides in got.items()}
    return out, joined_at


def test_a_session_joining_mid_run_rides_along_and_gives_the_same_tokens(model):
    """x joins while 5 conversations step (and one more joins right after it): its prompt steps ride in
    their ticks, no tick runs its prompt without their frames, and its tokens are those of x recorded
    alone with a blocking join; a later conversation reuses the slots of those that left."""
    alone = run(model, 2, {"x": list(range(TICKS))})["x"]
    # prompt phases here: 5 voice frames, 2 x 3 silent, 35-40 text tokens: about 51 ticks
    joins = {**{f"c{i}": 0 for i in range(3)}, **{f"d{i}": 2 for i in range(2)}, "x": 60, "late1": 63, "late2": 130}
    steps = {c: (TICKS if c in ("x", "late2") else 70) for c in joins}
    riding, joined = run_riding(model, 16, joins, steps, pause={"x": {120, 121}})
    for side in "ab":
        np.testing.assert_array_equal(alone[side]["tokens"], riding["x"][side]["tokens"])
        assert alone[side]["text"] == riding["x"][side]["text"]
        np.testing.assert_allclose(alone[side]["audio"], riding["x"][side]["audio"], rtol=0, atol=1e-4)
    # x's prompt took one tick per prompt LM step of its longer side, each tick also stepping the 10
    # sessions already talking: a join delays them by no tick
    voice_frames, silence = model[3].embeddings.shape[0], 2 * 3
    text = max(len(model[2].encode(wrap_with_system_tags(ROLES[s]))) for s in "ab")
    assert joined["x"]["ticks"] == voice_frames + silence + text
    assert min(joined["x"]["batches"]) == 10
    assert not np.array_equal(riding["c0"]["a"]["tokens"], riding["x"]["a"]["tokens"])
