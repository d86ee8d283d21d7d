"""Start the engines a local run needs, all at once, and stop them when it ends.

A model gets an engine when its config has an ``engine`` section and its adapter has a batched
model (``dyafdb.agents.engine.models.ENGINES``). Each engine runs where the model's workers would:
the worker command's ``-m dyafdb.agents.worker`` becomes ``-m dyafdb.agents.engine.host``, with the
worker's environment, unless ``engine.command`` names another; with ``resources.gpus`` it gets the next of the machine's GPUs. The sockets
go into one short-lived folder, exported as ``DYAFDB_ENGINES`` to the jobs started afterwards
(record jobs then join the engines instead of loading their own copies; see
``dyafdb.agents.engine.client.engine_socket``).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

from dyafdb.agents.base import AgentError
from dyafdb.agents.engine.client import ENGINES_ENV
from dyafdb.agents.engine.models import ENGINES
from dyafdb.errors import InputError
from dyafdb.schema_check import model_default

WORKER_MODULE, HOST_MODULE = "dyafdb.agents.worker", "dyafdb.agents.engine.host"


def engine_models(config: dict[str, Any], models: Iterable[str]) -> list[str]:
    """Those of ``models`` that are configured for an engine; an engine section on an adapter
    without one is an error rather than a silent fallback to per-job workers."""
    wanted = sorted(m for m in set(models) if config["models"][m].get("engine") is not None)
    for model in wanted:
        adapter = config["models"][model]["adapter"]
        if adapter not in ENGINES and ":" not in adapter:
            raise InputError(f"config: models.{model}.engine is set but adapter {adapter!r} has no engine "
                             f"(engines exist for {', '.join(sorted(ENGINES))}); remove models.{model}.engine")
    return wanted


def host_command(spec: dict[str, Any]) -> list[str]:
    """``engine.command`` when config gives one, else the worker command running the host module:
    an engine may need another environment than the model's per-job workers (PersonaPlex's engine
    runs on kyutai's moshi 0.2.13, its workers on NVIDIA's fork)."""
    own = (spec.get("engine") or {}).get("command")
    if own:
        if HOST_MODULE not in own:
            raise AgentError(f"engine.command {own!r} does not run -m {HOST_MODULE}; give the engine host's "
                             f"command line, for example [conda, run, -n, dyafdb-moshi, python, -m, {HOST_MODULE}]")
        return list(own)
    worker = list((spec.get("worker") or {}).get("command") or [sys.executable, "-m", WORKER_MODULE])
    if WORKER_MODULE not in worker:
        raise AgentError(f"cannot derive an engine command from worker command {worker!r}: it does not run "
                         f"-m {WORKER_MODULE}; remove the model's engine section or use the standard worker")
    worker[worker.index(WORKER_MODULE)] = HOST_MODULE
    return worker


def host_argv(model: str, spec: dict[str, Any], socket_path: str | Path) -> list[str]:
    """The engine process of ``model`` listening on ``socket_path``, as its config section says."""
    engine = spec.get("engine") or {}
    worker = spec.get("worker") or {}
    return host_command(spec) + [
        "--socket", str(socket_path), "--adapter", spec["adapter"], "--model", model,
        "--params", json.dumps(spec.get("params") or {}), "--sessions", str(engine.get("sessions", model_default("engine", "sessions"))),
        "--max-wait-ms", str(engine.get("max_wait_ms", model_default("engine", "max_wait_ms"))),
        "--step-timeout-s", str(worker.get("step_timeout_s", model_default("worker", "step_timeout_s"))),
        "--idle-exit-s", str(engine.get("idle_exit_s", model_default("engine", "idle_exit_s")))]


class Engines:
    """The engine processes of one run; ``start`` spawns all before waiting for any."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}

    def start(self, config: dict[str, Any], models: Iterable[str], log_dir: Path | None = None,
              timeout_s: float | None = None) -> dict[str, Path]:
        wanted = engine_models(config, models)
        if not wanted:
            return {}
        # AF_UNIX paths are limited to ~107 bytes: keep the sockets in a short temporary folder.
        self.folder = Path(tempfile.mkdtemp(prefix="dyafdb-eng-"))
        visible = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
        next_gpu = 0
        atexit.register(self.stop)
        for model in wanted:
            spec = config["models"][model]
            worker = spec.get("worker") or {}
            env = {**os.environ, **(worker.get("env") or {})}
            gpus = int((spec.get("resources") or {}).get("gpus", model_default("resources", "gpus")))
            if gpus and visible and "CUDA_VISIBLE_DEVICES" not in (worker.get("env") or {}):
                env["CUDA_VISIBLE_DEVICES"] = ",".join(visible[(next_gpu + i) % len(visible)] for i in range(gpus))
                next_gpu += gpus
            argv = host_argv(model, spec, self.folder / f"{model}.sock")
            log_dir = log_dir or self.folder
            log_dir.mkdir(parents=True, exist_ok=True)
            self.logs[model] = log_dir / f"engine-{model}.log"
            with open(self.logs[model], "ab") as log:
                self.procs[model] = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + (timeout_s or max(float((config["models"][m].get("worker") or {})
                                                                .get("startup_timeout_s", model_default("worker", "startup_timeout_s"))) for m in wanted))
        for model in wanted:
            sock = self.folder / f"{model}.sock"
            while not sock.exists():
                code = self.procs[model].poll()
                if code is not None or time.monotonic() > deadline:
                    self.stop()
                    why = f"exited with code {code}" if code is not None else "did not come up in time"
                    raise AgentError(f"engine for model {model} {why}; see {self.logs[model]}")
                time.sleep(0.05)
        os.environ[ENGINES_ENV] = str(self.folder)
        return {m: self.folder / f"{m}.sock" for m in wanted}

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        if self.folder is not None and os.environ.get(ENGINES_ENV) == str(self.folder):
            del os.environ[ENGINES_ENV]
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


# The workflow's engines (one Snakemake process, one run).
LOCAL_ENGINES = Engines()
