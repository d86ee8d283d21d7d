"""Recording one conversation of the design table: scenario + config -> agents -> bridge -> files."""

from __future__ import annotations

import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from dyafdb import __version__
from dyafdb.agents.base import Agent, Session
from dyafdb.paths import sharded
from dyafdb.record.bridge import SIDES, BridgeResult, run_bridge
from dyafdb.clock import FRAME_SECONDS, SAMPLE_RATE, FRAME_SAMPLES, seconds_to_ticks, tick_to_seconds
from dyafdb.suite.design import Conversation, derive_seed
from dyafdb.provenance import code_version
from dyafdb.record.recording import recording_lock, write_recording
from dyafdb.record.spec import inputs_digest, recording_inputs
from dyafdb.schema_check import model_default, schema_default
from dyafdb.suite.scenarios import Scenario, find_scenario


class AgentPool:
    """Two agent slots per model (self-play needs two instances), built once and reused.

    Reusing them across the conversations of one job means a model loads once per worker process.
    """

    def __init__(self, config: dict[str, Any], log_dir: Path | None = None):
        self.config = config
        self.log_dir = log_dir
        self._agents: dict[tuple[str, int], Agent] = {}
        self._next_gpu = 0

    def get(self, model: str, slot: int) -> Agent:
        key = (model, slot)
        if key not in self._agents:
            self._agents[key] = self._build(model, slot)
        return self._agents[key]

    def get_all(self, keys: list[tuple[str, int]]) -> list[Agent]:
        """The agents for ``keys`` (model, slot); the missing workers start at the same time.

        A worker's start-up is mostly its model load, so starting side b only after side a is
        ready would add the two loads up; here every missing worker is spawned first, then the pool
        waits for each to be ready. Spawning stays on the calling thread: a worker asks the kernel
        to kill it when the thread that forked it exits (PR_SET_PDEATHSIG). If one fails, the
        others are still waited for (and kept, so the pool shuts them down) and the first error
        is raised.
        """
        missing = [k for k in dict.fromkeys(keys) if k not in self._agents]
        if len(missing) > 1 and not self.config["bridge"].get("in_process", schema_default("config", "bridge", "in_process")):
            spawned: dict[tuple[str, int], Any] = {}
            errors: list[BaseException] = []
            for key in missing:
                try:
                    spawned[key] = self._build(*key, wait=False)
                except Exception as exc:
                    errors.append(exc)
            for key, agent in spawned.items():
                try:
                    agent.wait_ready()
                    self._agents[key] = agent
                except Exception as exc:
                    errors.append(exc)
            if errors:
                raise errors[0]
        return [self.get(*k) for k in keys]

    def _build(self, model: str, slot: int, wait: bool = True) -> Agent:
        """``wait=False``: a remote worker is spawned and the caller waits for it (``wait_ready``)."""
        spec = self.config["models"][model]
        params = spec.get("params") or {}
        if self.config["bridge"].get("in_process", schema_default("config", "bridge", "in_process")):
            from dyafdb.agents.registry import make_agent

            return make_agent(spec["adapter"], params, model)
        worker = spec.get("worker") or {}
        from dyafdb.agents.engine.client import EngineAgent, engine_socket

        engine = engine_socket(model)
        if engine is not None:  # an engine already hosts this model: join it instead of loading a copy
            return EngineAgent(model, engine, step_timeout_s=worker.get("step_timeout_s", model_default("worker", "step_timeout_s")),
                               connect_timeout_s=worker.get("startup_timeout_s", model_default("worker", "startup_timeout_s")))
        from dyafdb.agents.remote import RemoteAgent

        log_path = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log_path = str(self.log_dir / f"worker-{model}-{slot}.log")
        env = dict(worker.get("env") or {})
        gpus = self._take_gpus(int((spec.get("resources") or {}).get("gpus", model_default("resources", "gpus"))))
        if gpus is not None and "CUDA_VISIBLE_DEVICES" not in env:
            env["CUDA_VISIBLE_DEVICES"] = gpus
        return RemoteAgent(name=model, adapter=spec["adapter"], params=params, command=worker.get("command"),
                           env=env, startup_timeout_s=worker.get("startup_timeout_s", model_default("worker", "startup_timeout_s")),
                           step_timeout_s=worker.get("step_timeout_s", model_default("worker", "step_timeout_s")), log_path=log_path, wait=wait)

    def _take_gpus(self, count: int) -> str | None:
        """The next ``count`` of the job's GPUs for one worker, so each model gets its own (paper, App. A).

        Only when the scheduler names the job's GPUs in CUDA_VISIBLE_DEVICES; otherwise workers see
        whatever the machine has.
        """
        visible = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
        if count <= 0 or not visible:
            return None
        picked = [visible[(self._next_gpu + i) % len(visible)] for i in range(count)]
        self._next_gpu += count
        return ",".join(picked)

    def shutdown(self) -> None:
        for agent in self._agents.values():
            if hasattr(agent, "shutdown"):
                agent.shutdown()
        self._agents.clear()

    def __enter__(self) -> "AgentPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


def side_seed(conversation: str, attempt: int, side: str) -> int:
    return derive_seed(conversation, attempt, salt=f"side-{side}")


def build_sessions(row: Conversation, scenario: Scenario, attempt: int, window_ticks: int) -> dict[str, Session]:
    return {
        side: Session(
            conversation_id=row.conversation_id, side=side,
            prompt=scenario.prompt_for(side, is_opener=(row.opener == side)),
            speaker_name=scenario.sides[side]["name"], seed=side_seed(row.conversation_id, attempt, side),
            is_opener=(row.opener == side), window_ticks=window_ticks,
        )
        for side in SIDES
    }


def conversation_meta(config: dict[str, Any], row: Conversation, scenario: Scenario, attempt: int,
                      sessions: dict[str, Session], result: BridgeResult, inputs: dict[str, Any], started: datetime,
                      total_wall_s: float) -> dict[str, Any]:
    """meta.json of a recording of ``row`` (the recorder's and the seat's: one format, docs/formats.md)."""
    models = {side: row.model_of(side) for side in SIDES}
    lead_in_ticks = seconds_to_ticks(config["bridge"]["lead_in_s"])
    window_ticks = seconds_to_ticks(row.window_s)
    return {
        "conversation_id": row.conversation_id,
        "suite": row.suite, "archetype": row.archetype, "scenario": row.scenario, "pairing": row.pairing,
        "play": row.play, "repetition": row.repetition, "opener": row.opener, "attempt": attempt,
        "sample_rate": SAMPLE_RATE, "frame_samples": FRAME_SAMPLES, "frame_seconds": FRAME_SECONDS,
        "channels": [
            {"index": i, "side": side, "model": models[side], "role": scenario.role(side),
             "speaker_name": scenario.sides[side]["name"], "is_opener": row.opener == side,
             "adapter": config["models"][models[side]]["adapter"]}
            for i, side in enumerate(SIDES)
        ],
        "agents": result.agent_info,
        "seeds": {"conversation": row.seed if attempt == row.attempt else derive_seed(row.conversation_id, attempt),
                  **{side: sessions[side].seed for side in SIDES}},
        "lead_in_ticks": lead_in_ticks, "lead_in_s": tick_to_seconds(lead_in_ticks),
        "window_ticks": window_ticks, "window_s": row.window_s,
        "ticks": result.ticks, "duration_s": tick_to_seconds(result.ticks),
        "end_reason": result.end_reason,
        "wall_time_s": round(result.wall_time_s, 3),
        "total_wall_time_s": round(total_wall_s, 3),
        "step_wall_s": {k: round(v, 3) for k, v in result.step_wall_s.items()},
        "suppressed_text": result.suppressed_text,
        "dyafdb_version": __version__,
        # What this recording was made from (dyafdb.record.spec); write_files adds its own digest.
        "provenance": {"inputs": inputs, "spec": inputs_digest(inputs), "code": code_version()},
        "host": {"python": platform.python_version(), "machine": platform.machine(), "pid": os.getpid(),
                 "slurm_job_id": os.environ.get("SLURM_JOB_ID")},
        "created_utc": started.isoformat(timespec="seconds"),
    }


def record_conversation(config: dict[str, Any], row: Conversation, out_dir: Path, pool: AgentPool,
                        root: Path = Path("."), attempt: int | None = None) -> dict[str, Any]:
    """Record ``row`` into ``out_dir`` (atomically); returns the meta written."""
    attempt = attempt or row.attempt
    scenario = find_scenario(root / config["scenarios_dir"], row.scenario)
    inputs = recording_inputs(config, row, root)
    window_ticks = seconds_to_ticks(row.window_s)
    lead_in_ticks = seconds_to_ticks(config["bridge"]["lead_in_s"])
    sessions = build_sessions(row, scenario, attempt, window_ticks)
    models = {"a": row.model_a, "b": row.model_b}
    # Self-play uses two separate instances of the model: slot 0 for side a, slot 1 for side b.
    agents = dict(zip(SIDES, pool.get_all([(models[side], i) for i, side in enumerate(SIDES)])))
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    result = run_bridge(agents, sessions, window_ticks, lead_in_ticks, row.opener,
                        names={s: models[s] for s in SIDES}, progress=config["bridge"].get("progress", schema_default("config", "bridge", "progress")))
    meta = conversation_meta(config, row, scenario, attempt, sessions, result, inputs, started,
                             total_wall_s=time.perf_counter() - t0)
    result.recording.meta = meta
    write_recording(result.recording, out_dir)
    return meta


def record_many(config: dict[str, Any], rows: Iterable[Conversation], out_root: Path, root: Path = Path("."),
                log_dir: Path | None = None) -> list[dict[str, Any]]:
    done: list[Any] = []
    with AgentPool(config, log_dir) as pool:
        for row in rows:
            out_dir = Path(sharded(str(out_root), row.conversation_id))
            with recording_lock(out_dir):  # one writer per recording, from the bridge run to the write
                done.append(record_conversation(config, row, out_dir, pool, root))
    return done
