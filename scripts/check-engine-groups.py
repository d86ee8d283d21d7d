"""Check a profiles/slurm run of engine node groups (scripts/ci-slurm.sh, config/ci-slurm-engines.yaml):

- the record jobs ran inside group jobs: no record or engine job was submitted alone, there are
  fewer SLURM jobs than record jobs, every job of the run completed and was charged to the site's
  account, and each group job asked for its engines' GPUs once (not once per conversation);
- one engine per model per group: every conversation of a group names, for each model, the same
  engine_pid (meta.json agents.<side>.extra.engine_pid) and the same SLURM job (host.slurm_job_id),
  and no two groups or models share an engine;
- each model was loaded once per group: each engine log says "ready on" exactly once, from that pid,
  and every model with an engine has one load in each group that hosts it (printed per group);
- no engine process is left after the run.

    python scripts/check-engine-groups.py --config config/ci-slurm-engines.yaml \
        --results results/ci-slurm-engines/slurm --cores 6 --after JOBID
    python scripts/check-engine-groups.py --config ... --results ... --print-targets   # the record targets
    ... --group-size 8   # also: every group holds 8 conversations

The grouping expected is the workflow's own (dyafdb.record.engine_groups with the run's --cores).
Only SLURM jobs with ids above JOBID (the last id before the run) count. The site comes from
DYAFDB_SLURM_ACCOUNT and DYAFDB_SLURM_GPU_MODEL, as in the run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from dyafdb.agents.engine.models import concurrent_sessions
from dyafdb.config import load_config
from dyafdb.paths import Results
from dyafdb.record.engine_groups import ENGINE_SOCKET, EngineGroups
from dyafdb.suite.design import build_design
from slurm_jobs import gpus_of, submitted_jobs

GROUP_RULE = "engine_node"  # profiles/slurm: groups: engine: engine_node
GROUP_COMMENT = f"rule_{GROUP_RULE}_engine_record"  # the SLURM comment of a group of engine and record jobs
HOST_MODULE = "dyafdb.agents.engine.host"




def engine_processes(sockets: set[str]) -> list[str]:
    """Live engine hosts listening on one of this run's sockets (other people's engines do not count)."""
    alive = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if HOST_MODULE in argv and "--socket" in argv and argv.index("--socket") + 1 < len(argv):
            if argv[argv.index("--socket") + 1] in sockets:
                alive.append(f"pid {proc.name} ({' '.join(argv[:12]).strip()})")
    return alive


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--results", required=True, help="the run's results_dir")
    parser.add_argument("--cores", type=int, help="the run's --cores (a group's width)")
    parser.add_argument("--after", type=int, help="the last SLURM job id before the run; without it, a run on this "
                        "machine (--groups engine=engine_node) is checked without SLURM's side")
    parser.add_argument("--group-size", type=int, help="the conversations every group must hold (a run that means to "
                        "show one load for a group of N says so; without it, any size passes)")
    parser.add_argument("--print-targets", action="store_true", help="print the record jobs' targets and exit")
    args = parser.parse_args()
    config = load_config(args.config)
    rows = {r.conversation_id: r for r in build_design(config, Path("."))}
    results = Results(args.results)
    if args.print_targets:
        print("\n".join(results.recording_file(cid, "meta.json") for cid in sorted(rows)))
        return 0
    if args.cores is None:
        parser.error("--cores is required unless --print-targets")
    grouping = EngineGroups(config, rows, group_name=lambda: GROUP_RULE, cores=lambda: args.cores, local=lambda: False)
    group_of, pairs = grouping.groups()
    problems: list[str] = []
    ungrouped = sorted(set(rows) - set(group_of))
    # Self-play of an engine that hosts one session at a time (MiniCPM-o) is never grouped: it would wait for itself.
    alone = [cid for cid in ungrouped if rows[cid].model_a == rows[cid].model_b
             and concurrent_sessions(config["models"][rows[cid].model_a]) < 2 and config["models"][rows[cid].model_a].get("engine")]
    if alone:
        problems.append(f"{len(alone)} conversations ({alone[0]}, ...) self-play a model whose engine hosts one session at "
                        f"a time; they run outside engine groups: leave them out of {args.config}")
    ungrouped = sorted(set(ungrouped) - set(alone))
    if ungrouped:
        problems.append(f"{len(ungrouped)} conversations belong to no engine group ({ungrouped[0]}, ...): "
                        f"their models need `engine` sections in {args.config}")
    sizes = Counter(group_of.values())  # group -> its conversations
    if args.group_size is not None:
        problems += [f"group {g} holds {n} conversations, not {args.group_size}: raise --cores, engine.sessions or the "
                     f"suite's conversations per pairing in {args.config}" for g, n in sorted(sizes.items()) if n != args.group_size]
    if len(pairs) >= len(rows):
        problems.append(f"{len(pairs)} groups for {len(rows)} conversations: with --cores {args.cores} a group "
                        "holds one conversation, so nothing is shared; raise --cores or engine.sessions")

    # -- what SLURM ran ----------------------------------------------------------------------------
    on_slurm = args.after is not None
    account = os.environ.get("DYAFDB_SLURM_ACCOUNT")
    if on_slurm and not account:
        parser.error("DYAFDB_SLURM_ACCOUNT is not set: export the site variables the run used")
    # Only the Snakemake plugin's jobs (it comments each rule_...): a probe job that slurmdbd listed
    # after the last id was read before the run (scripts/slurm-local.sh's srun) is not this run's.
    jobs = [j for j in submitted_jobs(args.after) if j["Comment"].startswith("rule_")] if on_slurm else []
    by_id = {j["JobID"]: j for j in jobs}
    # The plugin names a job's comment rule_<rule>_wildcards_<...>, a group's rule_<group>_<its rules>.
    alone = [j for j in jobs if j["Comment"].startswith(("rule_record_wildcards_", "rule_engine_wildcards_"))]
    problems += [f"SLURM job {j['JobID']} ({j['Comment']}) was submitted alone, not in an engine group" for j in alone]
    group_jobs = [j for j in jobs if j["Comment"] == GROUP_COMMENT]
    if on_slurm and not jobs:
        problems.append(f"sacct lists no SLURM job after job {args.after}: did the run go through profiles/slurm?")
    elif len(jobs) >= len(rows):
        problems.append(f"{len(jobs)} SLURM jobs for {len(rows)} record jobs: the record jobs did not share group jobs")
    if on_slurm and len(group_jobs) != len(pairs):
        problems.append(f"{len(group_jobs)} engine group jobs in SLURM, the workflow planned {len(pairs)} groups")
    for job in jobs:
        if job["State"] != "COMPLETED":
            problems.append(f"SLURM job {job['JobID']} ({job['Comment']}) ended {job['State']}")
        if job["Account"] != account:
            problems.append(f"SLURM job {job['JobID']} was charged to {job['Account']!r}, not {account!r}")

    # -- what the recordings say -------------------------------------------------------------------
    pids: dict[tuple[str, str], set[int]] = defaultdict(set)       # (group, model) -> engine pids
    numbers: dict[tuple[str, str], list[int]] = defaultdict(list)  # (group, model) -> engine_session_number
    slurm_of: dict[str, set[str]] = defaultdict(set)                # group -> SLURM job ids
    for cid, row in sorted(rows.items()):
        meta_path = Path(results.recording_file(cid, "meta.json"))
        if not meta_path.exists():
            problems.append(f"{cid}: no recording ({meta_path} is missing)")
            continue
        meta = json.loads(meta_path.read_text())
        group = group_of.get(cid, "-")
        slurm_of[group].add(str((meta.get("host") or {}).get("slurm_job_id")))
        for side, model in (("a", row.model_a), ("b", row.model_b)):
            extra = (meta.get("agents", {}).get(side) or {}).get("extra") or {}
            if not extra.get("engine") or not extra.get("engine_pid"):
                problems.append(f"{cid}: side {side} ({model}) was not stepped by an engine (meta.json agents.{side}.extra "
                                f"has no engine_pid): the record job loaded its own copy")
                continue
            pids[(group, model)].add(int(extra["engine_pid"]))
            if extra.get("engine_session_number") is not None:  # engines that step sessions on their own
                numbers[(group, model)].append(int(extra["engine_session_number"]))
    for (group, model), found in sorted(pids.items()):
        if len(found) != 1:
            problems.append(f"group {group}: model {model} was stepped by {len(found)} engine processes "
                            f"{sorted(found)}, not one")
    for (group, model), found in sorted(numbers.items()):
        # Sessions 1..n of one engine: each after the first was hosted by the same load, none reloaded it.
        if sorted(found) != list(range(1, len(found) + 1)):
            problems.append(f"group {group}: model {model}'s engine numbered its sessions {sorted(found)}, not 1 to "
                            f"{len(found)}: not every conversation of the group was a session of one load")
    owners: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for key, found in pids.items():
        for pid in found:
            owners[pid].append(key)
    problems += [f"engine pid {pid} served {len(keys)} (group, model) pairs {sorted(keys)}: not one engine each"
                 for pid, keys in owners.items() if len(keys) > 1]
    for group, ids in sorted(slurm_of.items() if on_slurm else ()):
        if len(ids) != 1:
            problems.append(f"group {group}: its conversations ran in SLURM jobs {sorted(ids)}, not one")
            continue
        job = by_id.get(next(iter(ids)))
        if job is None:
            problems.append(f"group {group}: its conversations name SLURM job {next(iter(ids))}, not one of this run")
            continue
        if job["Comment"] != GROUP_COMMENT:
            problems.append(f"group {group}: SLURM job {job['JobID']} is {job['Comment']!r}, not an engine group job")
        want = sum(int((config["models"][m].get("resources") or {}).get("gpus", 0)) for m in grouping.engined(pairs.get(group, ())))
        if gpus_of(job["ReqTRES"]) != want:
            problems.append(f"group {group}: SLURM job {job['JobID']} asked for {gpus_of(job['ReqTRES'])} GPUs "
                            f"(ReqTRES {job['ReqTRES']}); its engines declare {want}, asked for once per group")

    # -- one load per engine, none left ------------------------------------------------------------
    loads = 0
    loads_of: dict[str, int] = defaultdict(int)  # model -> loads over all groups (one per group expected)
    loads_in: dict[str, list[str]] = defaultdict(list)  # group -> "<model> <loads>"
    for (group, model), found in sorted(pids.items()):
        log = Path(results.log("engine", f"{group}-{model}"))
        if not log.exists():
            problems.append(f"group {group}: no engine log for {model} ({log})")
            continue
        ready = [line for line in log.read_text(errors="replace").splitlines() if " ready on " in line]
        loads += len(ready)
        loads_of[model] += len(ready)
        conversations = sizes[group]
        hosted = f" (its sessions 1-{max(numbers[(group, model)])})" if numbers.get((group, model)) else ""
        loads_in[group].append(f"{model} {len(ready)} load{'s' * (len(ready) != 1)} for {conversations} conversations{hosted}")
        if len(ready) != 1:
            problems.append(f"{log}: the engine loaded {model} {len(ready)} times ('ready on' lines), not once")
        elif found and f'"pid": {next(iter(found))},' not in ready[0]:
            problems.append(f"{log}: its engine is not the one the recordings name (pid {sorted(found)}): {ready[0]}")
    # Per model, one load in each group that hosts it: a model whose conversations all ran outside
    # engines (or whose group left no engine log) would otherwise pass on the other models' loads.
    groups_of: dict[str, list[str]] = defaultdict(list)
    for g, pair in sorted(pairs.items()):
        for m in grouping.engined(pair):
            groups_of[m].append(g)
    engined_models = {m for r in rows.values() for m in (r.model_a, r.model_b) if config["models"][m].get("engine")}
    for model in sorted(engined_models):
        if not groups_of.get(model):
            problems.append(f"model {model} has an engine but is in no engine group: nothing shows it loaded once per group")
        elif loads_of.get(model, 0) != len(groups_of[model]):
            problems.append(f"model {model}: {loads_of.get(model, 0)} model loads in {len(groups_of[model])} groups, "
                            "not one per group")
    sockets = {ENGINE_SOCKET.format(group=g, model=m) for g, pair in pairs.items() for m in grouping.engined(pair)}
    left = engine_processes(sockets)
    problems += [f"engine process left after the run: {p}" for p in left]
    if on_slurm:
        queued = subprocess.run(["squeue", "--noheader", "-o", "%i"], capture_output=True, text=True).stdout.split()
        problems += [f"SLURM job {j} of this run is still queued or running" for j in queued
                     if j.isdigit() and int(j) > args.after]

    where = f"ran as {len(jobs)} SLURM jobs ({len(group_jobs)} group jobs)" if on_slurm else "ran on this machine"
    per_model = ", ".join(f"{m} {n}" for m, n in sorted(loads_of.items()))
    print(f"engine groups: {len(rows)} record jobs in {len(pairs)} groups {where}; {len(pids)} engines (one per model per group), {loads} model loads "
          f"({per_model or 'none'}), {len(left)} engine processes left")
    for group, loads in sorted(loads_in.items()):
        print(f"  group {group}: {'; '.join(loads)}")
    for p in problems:
        print(f"  problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
