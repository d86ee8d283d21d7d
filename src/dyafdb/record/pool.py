"""Several conversations per record process (bridge.conversations_per_process), one record job per
conversation in the plan: the shared processes of dyafdb.procpool, for `dyafdb record` with the
agents in process (bridge.in_process).

Most of a record job of the embedded CPU agent is its model loads (Whisper, the Piper voice, the
llama.cpp server: dyafdb.agents.cascade.models keeps them per process). A shared process builds
each conversation's agents afresh, as a process of its own would (dyafdb.record.conversation's
AgentPool lives for one request), and only those loads carry over, so the recordings are the same.
Models out of process (workers, engines) load in their own processes and are not shared here.
"""

from __future__ import annotations

from typing import Any, Mapping

from dyafdb.procpool import SharedProcesses

RECORD = SharedProcesses(stage="record", env="DYAFDB_RECORD_PER_PROCESS", verb="recorded",
                         takes=lambda argv: list(argv[1:2]) != ["garble"])


def shares(config: Mapping[str, Any]) -> int:
    """Conversations per record process for ``config`` (1: a process per job): only with the agents
    in process, since a worker's or an engine's model load lives in that worker or engine."""
    return int(config["bridge"]["conversations_per_process"]) if config["bridge"]["in_process"] else 1
