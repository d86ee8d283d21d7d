"""The bridge's output is bit-identical to what it recorded before it became a ``Bridge`` object (issue 24, item 5).

``bridge_digests.json`` holds the sha256 of the audio, the text channel, the suppressed lead-in text
and the ending of a few conversations, recorded with the loop-style ``run_bridge`` at 79aac6a. The
cases use agents whose output depends on what they hear (echo, probe) so the t-1 coupling is in the
digest, not only each side's own script. Regenerate (only for an intended change of behaviour) with
``python tests/record/test_bridge_identity.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

if __name__ == "__main__":  # run as a script to regenerate: the helpers are on the path under pytest only
    sys.path.insert(0, str(Path(__file__).parent.parent / "helpers"))

from agents_for_tests import ProbeAgent
from echo_agent import EchoAgent

from dyafdb.agents.base import Session
from dyafdb.agents.scripted import ScriptedAgent
from dyafdb.record.bridge import run_bridge

HERE = Path(__file__).parent
DIGESTS = HERE / "bridge_digests.json"

SCRIPT_A = [{"start_s": 0.0, "end_s": 1.2, "text": "hello there how are you"},
            {"start_s": 2.0, "end_s": 3.04, "text": "fine thanks", "amplitude": 0.08}]
SCRIPT_B = [{"start_s": 0.4, "end_s": 2.4, "text": "I am here and listening"}]


def _cases() -> dict[str, dict[str, Any]]:
    return {
        "scripted-echo-a-opens": dict(agents=lambda: {"a": ScriptedAgent({"script": SCRIPT_A}), "b": EchoAgent({"gain": 0.5})},
                                      window=60, lead=19, opener="a"),
        "echo-scripted-b-opens": dict(agents=lambda: {"a": EchoAgent({}), "b": ScriptedAgent({"script": SCRIPT_B})},
                                      window=50, lead=19, opener="b"),
        "scripted-pair-finishes": dict(agents=lambda: {"a": ScriptedAgent({"script": SCRIPT_A, "finish_at_s": 2.8}),
                                                       "b": ScriptedAgent({"script": SCRIPT_B})},
                                       window=80, lead=5, opener="a"),
        "probe-pair-lead-in": dict(agents=lambda: {"a": ProbeAgent({}), "b": ProbeAgent({"finish_at": 30})},
                                   window=40, lead=19, opener="b"),
    }


def _digest(name: str, case: dict[str, Any]) -> dict[str, Any]:
    sessions = {s: Session(conversation_id=name, side=s, prompt=f"prompt {s}", speaker_name=s.upper(), seed=7 if s == "a" else 11,
                           is_opener=(s == case["opener"]), window_ticks=case["window"]) for s in "ab"}
    res = run_bridge(case["agents"](), sessions, case["window"], case["lead"], case["opener"])
    audio = np.ascontiguousarray(res.recording.audio, dtype=np.float32)
    tokens = [[t.channel, t.tick, t.text] for t in res.recording.tokens]
    return {
        "audio_sha256": hashlib.sha256(audio.tobytes()).hexdigest(), "shape": list(audio.shape),
        "tokens_sha256": hashlib.sha256(json.dumps(tokens).encode()).hexdigest(), "tokens": len(tokens),
        "suppressed_sha256": hashlib.sha256(json.dumps(res.suppressed_text, sort_keys=True).encode()).hexdigest(),
        "end_reason": res.end_reason, "ticks": res.ticks,
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_recording_is_bit_identical_to_the_loop_bridge(name):
    expected = json.loads(DIGESTS.read_text())[name]
    assert _digest(name, _cases()[name]) == expected


if __name__ == "__main__" and "--write" in sys.argv:
    DIGESTS.write_text(json.dumps({n: _digest(n, c) for n, c in sorted(_cases().items())}, indent=1) + "\n")
    print(f"wrote {DIGESTS}")


def test_bridge_object_ticks_the_same_as_run_bridge():
    """Driving ``Bridge`` by hand (as the seat does) gives the recording ``run_bridge`` gives."""
    from dyafdb.record.bridge import Bridge

    case = _cases()["scripted-echo-a-opens"]
    sessions = {s: Session(conversation_id="x", side=s, prompt="p", speaker_name=s, seed=3, is_opener=(s == "a"),
                           window_ticks=case["window"]) for s in "ab"}
    bridge = Bridge(case["agents"](), sessions, case["window"], case["lead"], "a")
    state = bridge.open()
    try:
        while not bridge.done:
            frames = bridge.tick()
            assert np.array_equal(state.heard["b"], frames["a"].audio)  # b hears a's frame on the next tick
    finally:
        bridge.close()
    by_hand = bridge.result()
    looped = run_bridge(case["agents"](), sessions, case["window"], case["lead"], "a")
    assert state.t == case["window"] and by_hand.end_reason == "window"
    assert np.array_equal(by_hand.recording.audio, looped.recording.audio)
    assert by_hand.recording.tokens == looped.recording.tokens


def test_empty_window_records_nothing():
    sessions = {s: Session(conversation_id="x", side=s, prompt="p", speaker_name=s, seed=3, is_opener=(s == "a"),
                           window_ticks=0) for s in "ab"}
    res = run_bridge({"a": EchoAgent({}), "b": EchoAgent({})}, sessions, 0, 0, "a")
    assert res.ticks == 0 and res.end_reason == "window" and res.recording.audio.shape == (2, 0)
