"""Time an engine on its real model, in the model's own environment: ``python scripts/gpu_probe.py``.

scripts/gpu-check.sh (``all``) runs this once per engine model, in the environment its engine runs in
(``engine.command``, or the worker's, with this script in place of the engine host module), and reads
the JSON lines it prints. A script, not a module of the package: it records a conversation through
the bridge (the record stage), which the agents stage may not import.

* batched engines (Moshi, PersonaPlex): ``{"check": "tick", "mode": "eager"|"graph", "batch": B,
  "ms_median", "ms_p90"}`` for each batch size, the loaded model rebuilt into a batch of that many
  slots (moshi's CUDAGraphed reads NO_CUDA_GRAPH at every call, so one load serves both modes);
* PersonaPlex: ``{"check": "join", ...}``: a session joining with the released voice and the role
  prompt, alone (its prompt phase's LM steps and ms) and riding along with 8 stepping sessions
  (ticks until it may step, ms per tick while it rides);
* MiniCPM-o and Raon: ``{"check": "session", ...}``: one session through the engine (its
  ``open``/``step_one``/``close``) with a fixed heard signal, ms per step, and what the close report
  says (MiniCPM-o: each chunk's compute ms; Raon: whether the voice was applied).

The first line says where it ran (``{"check": "device", ...}``). Errors end the probe with one
``{"check": "error", ...}`` line and exit code 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

from dyafdb.agents.base import Session
from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE

ROLE = ("You are Sam, a receptionist at a small hotel. A guest is calling. Greet them, ask how you can "
        "help, and keep your answers short.")


def emit(**row: Any) -> None:
    print(json.dumps(row), flush=True)


def heard_signal(ticks: int, seed: int = 0) -> list[np.ndarray]:
    """A fixed partner: 1 s of a voiced-like tone every 3 s, silence between (the same for every probe)."""
    rng = np.random.default_rng(seed)
    t = np.arange(ticks * FRAME_SAMPLES) / SAMPLE_RATE
    voiced = ((t % 3.0) < 1.0).astype(np.float32)
    audio = (0.05 * np.sin(2 * np.pi * 180 * t) * voiced + 0.002 * rng.standard_normal(len(t))).astype(np.float32)
    return list(audio.reshape(ticks, FRAME_SAMPLES))


def session(name: str, side: str = "a", ticks: int = 125, seed: int = 1234) -> Session:
    return Session(conversation_id=name, side=side, prompt=ROLE, speaker_name="Sam", seed=seed, is_opener=side == "a",
                   window_ticks=ticks)


def _sync(device: Any) -> None:
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def rebuild(batched: Any, capacity: int) -> Any:
    """Another batch of ``capacity`` slots over the same loaded Mimi and LM (the first one closed)."""
    from dyafdb.agents.moshi.personaplex_engine import BatchedPersonaPlex

    if isinstance(batched, BatchedPersonaPlex):
        return BatchedPersonaPlex(batched.mimi, batched.lm, batched.tokenizer, capacity, batched.sampling,
                                  silence_tokens=batched.silence_tokens, sine_tokens=batched.sine_tokens,
                                  audio_silence_frame_cnt=batched.audio_silence_frame_cnt, device=batched.device)
    return type(batched)(batched.mimi, batched.lm_gen.lm_model, batched.tokenizer, capacity, batched.sampling,
                         device=batched.device)


def join_all(batched: Any, n: int) -> list[int]:
    """``n`` sessions' slots, their prompt phases done together (PersonaPlex: silence only, riding in
    the same ticks); stock Moshi skips each session's first frame."""
    if not hasattr(batched, "begin_join"):
        return [batched.join(i, skip_first_frame=True) for i in range(n)]
    slots = [batched.begin_join(i) for i in range(n)]
    while batched.prompting:
        batched.step({})
    return slots


def time_ticks(batched: Any, slots: list[int], ticks: int, warmup: int) -> list[float]:
    frames = heard_signal(warmup + ticks)
    out = []
    for i, frame in enumerate(frames):
        _sync(batched.device)
        t0 = time.perf_counter()
        batched.step({s: frame for s in slots})
        _sync(batched.device)
        if i >= warmup:
            out.append(1000 * (time.perf_counter() - t0))
    return out


def probe_batched(engine: Any, batches: list[int], modes: list[str], ticks: int, warmup: int) -> None:
    first = engine.batched
    first.close()
    for mode in modes:
        os.environ["NO_CUDA_GRAPH"] = "1" if mode == "eager" else "0"
        for batch in batches:
            batched = rebuild(first, batch)
            try:
                slots = join_all(batched, batch)
                times = time_ticks(batched, slots, ticks, warmup)
                emit(check="tick", mode=mode, batch=batch, ms_median=round(statistics.median(times), 2),
                     ms_p90=round(sorted(times)[int(0.9 * (len(times) - 1))], 2), n=len(times))
            except Exception as exc:  # an out-of-memory batch ends this mode, not the probe
                emit(check="tick", mode=mode, batch=batch, error=f"{type(exc).__name__}: {exc}"[:300])
                break
            finally:
                batched.close()
    os.environ["NO_CUDA_GRAPH"] = "0"
    if hasattr(first, "begin_join"):
        probe_join(engine, rebuild(first, 9), ticks)


def probe_join(engine: Any, batched: Any, ticks: int) -> None:
    """PersonaPlex: the released voice and the role prompt, alone (a stall) and riding with 8 sessions."""
    from dyafdb.agents.moshi.personaplex import wrap_with_system_tags

    tokens = list(batched.tokenizer.encode(wrap_with_system_tags(ROLE)))
    try:
        _sync(batched.device)
        t0 = time.perf_counter()
        slot = batched.join(1, text_prompt_tokens=tokens, voice=engine.voice)
        _sync(batched.device)
        alone_ms = 1000 * (time.perf_counter() - t0)
        steps = batched.prompt_steps(slot)
        batched.leave(slot)
        others = join_all(batched, 8)
        frames = heard_signal(4 * ticks)
        for frame in frames[:3]:
            batched.step({s: frame for s in others})
        slot = batched.begin_join(2, text_prompt_tokens=tokens, voice=engine.voice)
        riding = []
        i = 3
        while not batched.prompt_done(slot):
            _sync(batched.device)
            t0 = time.perf_counter()
            batched.step({s: frames[i % len(frames)] for s in others})
            _sync(batched.device)
            riding.append(1000 * (time.perf_counter() - t0))
            i += 1
        plain = time_ticks(batched, others, min(ticks, 20), 0)
        emit(check="join", voice=engine.voice_name, text_prompt_tokens=len(tokens), prompt_lm_steps=steps,
             alone_ms=round(alone_ms, 1), ride_ticks=len(riding), ride_tick_ms_median=round(statistics.median(riding), 2),
             plain_tick_ms_median=round(statistics.median(plain), 2), sessions_stepping=len(others))
    finally:
        batched.close()


class _EngineSide:
    """One session of a loaded engine as a bridge agent, stepped alone (batch 1)."""

    def __init__(self, engine: Any):
        self.engine, self.slot = engine, None

    def open(self, session: Session) -> Any:
        self.slot, info = self.engine.open(session)
        while not getattr(self.engine, "ready", lambda s: True)(self.slot):  # PersonaPlex's prompt phase
            self.engine.step({})
        return info

    def step(self, heard: np.ndarray) -> Any:
        return self.engine.step({self.slot: heard})[self.slot]

    def close(self) -> None:
        self.engine.close(self.slot)


def probe_conversation(engine: Any, spec: dict[str, Any]) -> None:
    """The per-job smoke conversation again, through the engine: the same sessions, the same scripted
    partner (its audio does not depend on what it hears), so under greedy decoding the text tokens
    must match the worker's (gpu_smoke.py compares them)."""
    from dyafdb.agents.scripted import ScriptedAgent
    from dyafdb.record.bridge import run_bridge

    sessions = {s: Session.from_json(v) for s, v in spec["sessions"].items()}
    partner = ScriptedAgent(spec["partner"], "scripted")
    if hasattr(engine, "batched"):  # batch 1: one slot, the worker's shapes
        first = engine.batched
        first.close()
        engine.batched = rebuild(first, 1)
    result = run_bridge({"a": _EngineSide(engine), "b": partner}, sessions, spec["ticks"], spec["lead_in"], "a")
    emit(check="conversation", tokens=[[t.tick, t.text] for t in result.recording.tokens if t.channel == "a"],
         rms=float(np.sqrt(np.mean(result.recording.audio[0].astype(np.float64) ** 2))))


def probe_sessions(engine: Any, seconds: float) -> None:
    """One session through an engine that steps sessions on their own (MiniCPM-o, Raon)."""
    ticks = int(seconds * SAMPLE_RATE / FRAME_SAMPLES)
    slot, info = engine.open(session("gpu-check-engine", ticks=ticks))
    steps = []
    try:
        for frame in heard_signal(ticks):
            t0 = time.perf_counter()
            engine.step_one(slot, frame)
            steps.append(1000 * (time.perf_counter() - t0))
    finally:
        report = engine.close(slot) or {}
    extra = {**info.extra, **report}
    emit(check="session", voice=info.voice, ticks=len(steps), step_ms_median=round(statistics.median(steps), 2),
         step_ms_max=round(max(steps), 2), chunk_compute_ms=extra.get("chunk_compute_ms"),
         voice_applied=extra.get("voice_applied"), voice_problem=extra.get("voice_problem"),
         concurrent=getattr(engine, "concurrent", None))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--params", default="{}", help="the model's params as JSON")
    parser.add_argument("--batches", default="1,8,16,32")
    parser.add_argument("--modes", default="eager,graph")
    parser.add_argument("--ticks", type=int, default=30, help="timed ticks per batch size")
    parser.add_argument("--warmup", type=int, default=5, help="untimed ticks first (CUDA graph capture)")
    parser.add_argument("--seconds", type=float, default=10.0, help="session length for MiniCPM-o and Raon")
    parser.add_argument("--conversation", help="JSON: sessions, partner script, ticks, lead_in of a conversation to "
                        "record through the engine at batch 1 first (the greedy comparison with the per-job worker)")
    args = parser.parse_args(argv)
    from dyafdb.agents.engine.models import make_engine

    batches = [int(b) for b in args.batches.split(",")]
    try:
        import torch

        cuda = torch.cuda.is_available()
        emit(check="device", model=args.model, adapter=args.adapter, torch=torch.__version__,
             device=torch.cuda.get_device_name(0) if cuda else "cpu")
    except ImportError:
        emit(check="device", model=args.model, adapter=args.adapter, torch=None, device="no torch here")
    try:
        t0 = time.perf_counter()
        engine = make_engine(args.adapter, json.loads(args.params), args.model, max(batches))
        emit(check="load", seconds=round(time.perf_counter() - t0, 1))
        if args.conversation:
            probe_conversation(engine, json.loads(args.conversation))
        if getattr(engine, "lockstep", True):
            probe_batched(engine, batches, args.modes.split(","), args.ticks, args.warmup)
        else:
            probe_sessions(engine, args.seconds)
            stop = getattr(engine, "shutdown", None)
            if callable(stop):
                stop()
    except Exception as exc:
        emit(check="error", error=f"{type(exc).__name__}: {exc}"[:500])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
