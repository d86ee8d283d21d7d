"""Engine node groups of a cluster run: which record jobs share which engines, and what each asks for.

When the Snakemake profile puts the ``engine`` rule in a group (profiles/slurm does), record jobs
whose models have an ``engine`` section run in node groups: a group holds up to ``engine.sessions``
conversations of one pairing and one engine per engined model of the pairing (a Snakemake service
job, started beside its record jobs and stopped when they end). Snakemake submits each group as one
SLURM job in which all its jobs run at once and sums their resources, so the group asks for each
engine's GPUs and memory once; its record jobs ask only for the bridge's share, one CPU. A local run
without such a group starts its engines at onstart instead (``dyafdb.agents.engine.launch``).

Not grouped: pairings with a model that has no engine but needs GPUs (its per-conversation workers
would need one GPU per conversation of the group, all at once), and self-play of a model whose engine
hosts one session at a time (MiniCPM-o: a conversation would wait for its own turn). A group's
conversations take turns at an engine that hosts fewer sessions at once than the group holds
(``dyafdb.agents.engine.models.concurrent_sessions``), so its runtime counts those waves.
"""

from __future__ import annotations

import os
import shlex
from typing import Any, Callable, Mapping, Sequence

from dyafdb.agents.engine.launch import host_argv
from dyafdb.agents.engine.models import concurrent_sessions
from dyafdb.schema_check import model_default

# Sockets live in a short relative folder: AF_UNIX paths are limited to ~107 bytes.
ENGINE_SOCKET = ".dyafdb-engines/{group}/{model}.sock"
ENGINE_RULE = "engine"


def _pairing_name(pair: Sequence[str]) -> str:
    """A group's name is its pairing's and a number: ``<model_a>+<model_b>-<n>``."""
    return f"{pair[0]}+{pair[1]}"


class EngineGroups:
    """The workflow's view of node groups; methods take Snakemake wildcards.

    ``group_name`` (the engine rule's group in the profile; None turns node groups off) and ``cores``
    are read when the DAG is built (profile groups are not known yet while the rules are read), so
    the grouping is computed on first use.
    """

    def __init__(self, config: Mapping[str, Any], conversations: Mapping[str, Any],
                 group_name: Callable[[], str | None], cores: Callable[[], Any], local: Callable[[], bool],
                 target_jobs: Callable[[], Any] = lambda: ()):
        self.config, self.conversations = config, conversations
        self._group_name, self._cores, self._local = group_name, cores, local
        self._target_jobs = target_jobs
        self._in_group_job = False
        self._groups: tuple[dict[str, str], dict[str, tuple[str, str]]] | None = None

    # -- the grouping ---------------------------------------------------------------------------
    def _spec(self, model: str) -> Mapping[str, Any]:
        return self.config["models"][model]

    def _res(self, model: str, key: str, default: int) -> int:
        return int((self._spec(model).get("resources") or {}).get(key, default))

    def engined(self, models: Sequence[str]) -> list[str]:
        return sorted(m for m in set(models) if self._spec(m).get("engine") is not None)

    def groups(self) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
        """conversation -> its group; group -> its pairing's (model_a, model_b). Empty when off."""
        if self._groups is None:
            inside = [t for t in self._target_jobs() if t[0] == ENGINE_RULE]
            self._in_group_job = bool(inside)
            if inside:
                self._groups = self._inside(inside)
            else:
                self._groups = self._compute() if self._group_name() else ({}, {})
        return self._groups

    def _inside(self, engine_targets: Sequence[Any]) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
        """The grouping inside a group's SLURM job. Snakemake runs there with the group's jobs as
        ``--target-jobs``, without the profile's ``--groups`` and with the group's width as
        ``--cores``, so the grouping cannot be computed again: the engine jobs name their group, and
        the record jobs of this run are that group's conversations."""
        groups: dict[str, str] = {}
        pairs: dict[str, tuple[str, str]] = {}
        names = {t[1]["group"] for t in engine_targets}
        for t in self._target_jobs():
            if t[0] != "record":
                continue
            cid = t[1]["conversation"]
            row = self.conversations[cid]
            pair = (row.model_a, row.model_b)
            mine = [g for g in names if g.rsplit("-", 1)[0] == _pairing_name(pair)]
            if len(mine) == 1:
                groups[cid], pairs[mine[0]] = mine[0], pair
        return groups, pairs

    def _compute(self) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
        by_pairing: dict[tuple[str, str], list[str]] = {}
        for cid in sorted(self.conversations):
            row = self.conversations[cid]
            pair = (row.model_a, row.model_b)
            engined = self.engined(pair)
            if (engined and not any(self._res(m, "gpus", 0) for m in set(pair) - set(engined))
                    and all(concurrent_sessions(self._spec(m)) >= list(pair).count(m) for m in engined)):
                by_pairing.setdefault(pair, []).append(cid)
        cores = self._cores()
        groups: dict[str, str] = {}
        pairs: dict[str, tuple[str, str]] = {}
        for pair, ids in by_pairing.items():
            engined = self.engined(pair)
            # A self-play conversation holds two sessions of its model's engine.
            size = min(int(self._spec(m)["engine"].get("sessions", model_default("engine", "sessions"))) // list(pair).count(m) for m in engined)
            if isinstance(cores, int):  # the engines' CPUs plus one bridge per conversation fit one job
                per_job = 1 + sum(self._res(m, "cpus", 1) for m in pair if m not in engined)
                size = min(size, (cores - sum(self._res(m, "cpus", 1) for m in engined)) // per_job)
            for i, cid in enumerate(ids):
                group = f"{_pairing_name(pair)}-{i // max(size, 1)}"
                groups[cid] = group
                pairs[group] = pair
        return groups, pairs

    # -- record jobs ----------------------------------------------------------------------------
    def _pair(self, wildcards: Any) -> tuple[str, str]:
        row = self.conversations[wildcards.conversation]
        return row.model_a, row.model_b

    def record_engines(self, wildcards: Any) -> list[str]:
        group = self.groups()[0].get(wildcards.conversation)
        if group is None:
            return []
        return [ENGINE_SOCKET.format(group=group, model=m) for m in self.engined(self._pair(wildcards))]

    def record_group(self, wildcards: Any) -> str | None:
        """The engine rule's group for a conversation in a node group (the record rule's `group:`).

        Snakemake puts a service job's consumers into the service's group only while they have no
        group of their own, and then keeps the service in its user-defined group: with the profile
        grouping the engine rule alone, each engine went to SLURM as a group of one (whose job fails:
        a service without consumers) and its record jobs to another. Naming the same group for both
        makes each pairing's engines and conversations one connected group, hence one SLURM job.
        Local runs ignore groups (Snakemake returns none), so this changes nothing there.
        """
        if wildcards.conversation not in self.groups()[0]:
            return None
        return self.group_name()

    def group_name(self, wildcards: Any = None) -> str:
        """The Snakemake group of engines and record jobs: the profile's (engine rule's), and inside
        a group's SLURM job, where no profile groups are given, the engine rule's name."""
        return self._group_name() or ENGINE_RULE

    def record_env(self, wildcards: Any) -> str:
        """Where the group's engines listen, and how long to wait for them to load (they start with the job)."""
        group = self.groups()[0].get(wildcards.conversation)
        if group is None:
            return ""
        models = self.engined(self._pair(wildcards))
        wait = max(float((self._spec(m).get("worker") or {}).get("startup_timeout_s", model_default("worker", "startup_timeout_s"))) for m in models)
        folder = os.path.dirname(ENGINE_SOCKET.format(group=group, model="x"))
        env = f"DYAFDB_ENGINES={shlex.quote(folder)} DYAFDB_ENGINES_WAIT_S={wait:g}"
        waves = self.waves(group)
        if waves > 1:  # the job may wait for the conversations before it at a one-session engine
            per_wave = max(self._res(m, "runtime_min", 10) for m in self._pair(wildcards))
            env += f" DYAFDB_ENGINE_TURN_WAIT_S={waves * per_wave * 60}"
        return env

    def record_share(self, key: str, default: int, combine: Callable[[list[int]], int] = sum) -> Callable[[Any], int]:
        """A record job's resource: a model in an engine (a local run's or its group's) counts only the
        bridge's share; in a group one CPU runs both sides' bridge."""
        def get(wildcards: Any) -> int:
            groups = self.groups()[0]
            in_group = wildcards.conversation in groups
            grouped = in_group or (self._local() and not groups)
            pair = self._pair(wildcards)
            values = [default if grouped and "engine" in self._spec(m) else self._res(m, key, default) for m in pair]
            if in_group and key == "cpus":
                if self._in_group_job:
                    # Inside the group's SLURM job its CPUs are allocated already, and Snakemake runs
                    # the group there (all jobs at once) with `--cores all`: the machine's cores where
                    # the node has no cpusets, which may be fewer than SLURM granted. The bridges ride
                    # along; the engines' threads still count.
                    return 0
                return max(1, combine(values) - sum(1 for m in pair if "engine" in self._spec(m)) * default)
            return combine(values)

        return get

    # -- engine jobs ----------------------------------------------------------------------------
    def engine_resource(self, key: str, default: int) -> Callable[[Any], int]:
        return lambda wildcards: self._res(wildcards.model, key, default)

    def waves(self, group: str) -> int:
        """How many conversations of ``group`` run one after another at its slowest-turning engine."""
        pair = self.groups()[1][group]
        size = sum(1 for g in self.groups()[0].values() if g == group)
        at_once = min(max(1, concurrent_sessions(self._spec(m)) // list(pair).count(m)) for m in self.engined(pair))
        return -(-size // at_once)

    def engine_runtime(self, wildcards: Any) -> int:
        """Minutes: the group's conversations run at once, or in waves where an engine hosts fewer at
        once (MiniCPM-o: one), after the engines load (at most as long again)."""
        per_wave = max(self._res(m, "runtime_min", 10) for m in self.groups()[1][wildcards.group])
        return per_wave * (1 + self.waves(wildcards.group))

    def engine_pair(self, wildcards: Any) -> tuple[str, str]:
        return self.groups()[1][wildcards.group]

    def engine_argv(self, wildcards: Any, output: Any) -> str:
        """The engine process, with the model's worker environment (as a local run's engines get it:
        thread counts and the like are the model's, wherever its engine runs)."""
        spec = dict(self._spec(wildcards.model))
        env = [f"{k}={v}" for k, v in ((spec.get("worker") or {}).get("env") or {}).items()]
        return shlex.join((["env", *env] if env else []) + host_argv(wildcards.model, spec, output.sock))
