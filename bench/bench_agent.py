"""The embedded CPU agent's speed: real-time factor on one core, and the demo suite's recording wall time.

    python bench/bench_agent.py                  # RTF on one core + demo recordings projected from 4 jobs
    python bench/bench_agent.py --quick                   # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)
    python bench/bench_agent.py --demo-jobs 56   # record the whole demo (all 56 conversations)
    python bench/bench_agent.py --skip-demo

Real-time factor = seconds of conversation per CPU second, per agent (target >= 1x). It is measured
in a child process pinned to one core (sched_setaffinity) with every model on one thread, recording
20 s conversations of each pairing of the demo's variants in process (two agents share the core, so
the per-agent figure is 2 x conversation seconds / CPU seconds), then timing one call of each model. The demo's wall time runs the real
Snakemake rules (`--configfile config/demo.yaml`) in a scratch directory on the first N record jobs,
on all cores, once with the rule's declared threads and once with `--set-threads record=1`, and
projects to the whole demo by the number of its conversations, both from the wall time and from the
CPU time of Snakemake and all its jobs (which a busy machine does not inflate).
"""

from __future__ import annotations

from _figures import Bench, emit, row  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("agent",), slow=True)  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


from _slurm import no_slurm_probe  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MAIN_ARCHETYPES = ("T1-1", "T1-2", "T2", "T3-1", "T3-2", "T4-1", "T4-2")


def scenario_root(tmp: Path) -> Path:
    """The repository's scenarios, with synthetic stand-ins only for archetypes that have none yet."""
    import _testpath  # noqa: F401 (puts tests/helpers on the path)
    from synthetic_suite import write_suite

    root = tmp / "scenarios"
    root.mkdir(parents=True, exist_ok=True)
    # every archetype a config may name: the main ones, and the demo's balance archetypes
    folders = {p.name for p in (REPO / "scenarios").iterdir() if p.is_dir()}
    for archetype in sorted(set(MAIN_ARCHETYPES) | folders):
        real = REPO / "scenarios" / archetype
        if real.is_dir() and any(real.glob("*.yaml")):
            (root / archetype).symlink_to(real, target_is_directory=True)
        else:
            write_suite(tmp, per_archetype=1, archetypes=[archetype])
    return root


def one_core_child(window_s: float, out: Path) -> None:
    """Runs pinned to one core: record one conversation per pairing in process, report CPU times."""
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    from dyafdb.agents.base import Session
    from dyafdb.agents.cascade.agent import CascadeAgent
    from dyafdb.record.bridge import run_bridge
    from dyafdb.clock import seconds_to_ticks
    from dyafdb.suite.scenarios import load_suite

    c0, w0 = time.process_time(), time.perf_counter()
    agents = {v: [CascadeAgent({"variant": v}, f"cpu_{v}") for _ in range(2)] for v in ("eager", "polite")}
    load = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0}
    scenario = load_suite(Path(os.environ["BENCH_SCENARIOS"]), ["T1-1"])["T1-1"][0]
    ticks = seconds_to_ticks(window_s)
    runs = []
    for va, vb in (("eager", "eager"), ("eager", "polite"), ("polite", "polite")):
        sessions = {s: Session(conversation_id=f"bench-{va}-{vb}", side=s, prompt=scenario.prompt_for(s, s == "a"),
                               speaker_name=scenario.sides[s]["name"], seed=1000 + i, is_opener=(s == "a"),
                               window_ticks=ticks) for i, s in enumerate("ab")}
        a, b = agents[va][0], agents[vb][1]
        c0, w0 = time.process_time(), time.perf_counter()
        run_bridge({"a": a, "b": b}, sessions, ticks, seconds_to_ticks(1.5), "a")
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        runs.append({"pairing": f"{va}+{vb}", "conversation_s": ticks * 0.08, "cpu_s": cpu, "wall_s": wall,
                     "stats": {s: {k: v for k, v in ag.stats.items() if k != "transcripts"} for s, ag in (("a", a), ("b", b))}})
    out.write_text(json.dumps({"load": load, "runs": runs, "calls": per_call(agents["polite"][0], scenario)}))


def per_call(agent, scenario) -> dict[str, list[float]]:
    """CPU seconds of one call of each model, one after the other (the LLM server runs on its own thread)."""
    from dyafdb.agents.cascade.text import build_messages, system_prompt

    def cpu(fn, *args):
        c0 = time.process_time()
        result = fn(*args)
        return time.process_time() - c0, result

    models, slot = agent.models, agent.llm_slot
    reply = "Oh, I see what you mean, and I think we can sort that out tonight. Could you tell me a little more about it?"
    tts_s, speech = cpu(models.speak, reply + " (bench)")  # a text the speech cache has not seen
    asr_s, _ = cpu(models.transcribe, speech.audio)
    system = system_prompt(scenario.prompt_for("a", True), scenario.sides["a"]["name"])
    history = [("partner", "Hello there, sorry I am a bit late, the bus was stuck in traffic.")]
    first_s, said = cpu(models.chat, build_messages(system, history, 16), 1, 40, 0.5, 0.9, 40, 1.1, slot, False)
    history += [("self", said or "Okay."), ("partner", "Anyway, shall we start? I have about half an hour.")]
    next_s, _ = cpu(models.chat, build_messages(system, history, 16), 2, 40, 0.5, 0.9, 40, 1.1, slot, True)
    return {"tts": [tts_s, speech.audio.size / 24_000], "asr": [asr_s, speech.audio.size / 24_000],
            "llm_first": [first_s, 0.0], "llm_next": [next_s, 0.0]}


def one_core(window_s: float, scenarios: Path) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rtf.json"
        env = {**os.environ, "BENCH_SCENARIOS": str(scenarios), "OMP_NUM_THREADS": "1"}
        subprocess.run([sys.executable, __file__, "--child", str(out), "--window", str(window_s)], env=env, check=True)
        data = json.loads(out.read_text())
    print(f"one core, 1 thread per model; loading the models: {data['load']['cpu_s']:.2f} s CPU ({data['load']['wall_s']:.2f} s wall)")
    rows = []
    total_conv = total_cpu = 0.0
    for run in data["runs"]:
        conv = run["conversation_s"]
        total_conv += 2 * conv
        total_cpu += run["cpu_s"]
        st = run["stats"]
        acts = {k: st["a"][k] + st["b"][k] for k in ("replies", "backchannels", "yields", "barge_ins", "idle")}
        print(f"  {run['pairing']:<14} {conv:.0f} s conversation: {run['cpu_s']:5.1f} s CPU -> "
              f"RTF {2 * conv / run['cpu_s']:.2f}x per agent   ({', '.join(f'{k} {v}' for k, v in acts.items())})")
        rows.append(row(f"{run['pairing'].replace('+', ' + ')}: conversation seconds per CPU second, per agent (one core)",
                        [2 * conv / run["cpu_s"]], "x real time", ">= 1x"))
    print(f"  all pairings: RTF {total_conv / total_cpu:.2f}x per agent (seconds of conversation per CPU second; target >= 1x)")
    rows.append(row("all pairings: conversation seconds per CPU second, per agent", [total_conv / total_cpu], "x real time",
                    ">= 1x"))
    c = data["calls"]
    print(f"  one call each: TTS {c['tts'][0]:.2f} s for {c['tts'][1]:.1f} s of speech, ASR {c['asr'][0]:.2f} s for the same, "
          f"LLM {c['llm_first'][0]:.2f} s (first request, whole prompt) / {c['llm_next'][0]:.2f} s (next, cached prefix)")
    return rows + [
        row("loading the models of four agents (Piper, Whisper tiny.en, SmolLM2)", [data["load"]["cpu_s"]], "CPU s"),
        row("one call: Piper, a 25-word reply", [c["tts"][0]], "CPU s"),
        row("one call: Whisper tiny.en on that speech", [c["asr"][0]], "CPU s"),
        row("one call: SmolLM2, a conversation's first request", [c["llm_first"][0]], "CPU s"),
        row("one call: SmolLM2, the next request (cached prefix)", [c["llm_next"][0]], "CPU s"),
    ]


def demo_wall(jobs: int, window_s: float | None = None) -> list[dict]:
    """``window_s``: the demo suites' window cut to this (--quick), through a copy of config/demo.yaml
    beside symlinks to the rest of config/, so the record jobs are the demo's, only shorter."""
    import yaml

    from dyafdb.config import load_config
    from dyafdb.paths import Results
    from dyafdb.suite.design import build_design

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        scenario_root(tmp)
        configfile = REPO / "config" / "demo.yaml"
        if window_s is None:
            (tmp / "config").symlink_to(REPO / "config", target_is_directory=True)
        else:
            (tmp / "config").mkdir()
            for entry in (REPO / "config").iterdir():
                if entry.name != "demo.yaml":
                    (tmp / "config" / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
            raw = yaml.safe_load(configfile.read_text())
            raw["suites"]["demo"]["window_s"] = window_s  # the suite the timed jobs come from
            configfile = tmp / "config" / "demo.yaml"
            configfile.write_text(yaml.safe_dump(raw, sort_keys=False))
        config = load_config(configfile)
        config["scenarios_dir"] = str(tmp / "scenarios")
        rows = build_design(config)
        total = len(rows)
        chosen = rows[:: max(total // jobs, 1)][:jobs]  # spread over archetypes and pairings
        targets = [Results(config["results_dir"]).recording_file(r.conversation_id, "meta.json") for r in chosen]
        print(f"demo suite: {total} conversations of {config['suites']['demo']['window_s']:g} s; recording {len(chosen)} "
              f"with Snakemake on {os.cpu_count()} cores")
        print(f"  load average before: {os.getloadavg()[0]:.1f} (wall times are only meaningful on an idle machine; "
              f"the CPU-based projection is not affected)")
        # --quick: no 10 s wait per Snakemake start for the SLURM plugin's probe where scontrol finds no
        # controller (bench/_slurm.py)
        env = {**os.environ, **(no_slurm_probe(tmp) if window_s is not None else {})}
        rows = []
        for label, extra in (("declared threads (2 per record job)", []), ("--set-threads record=1", ["--set-threads", "record=1"])):
            shutil.rmtree(tmp / config["results_dir"], ignore_errors=True)
            cmd = [sys.executable, "-m", "snakemake", *targets, "-s", str(REPO / "workflow" / "Snakefile"),
                   "--directory", str(tmp), "--configfile", str(configfile),
                   "--cores", str(os.cpu_count()), *extra, "--quiet", "all"]
            t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)  # Snakemake and every job it ran
            if done.returncode != 0:
                print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"snakemake failed ({label})")
            metas = [json.loads((tmp / t).read_text()) for t in targets]
            bridge = sum(m["total_wall_time_s"] for m in metas) / len(metas)
            per_job_cpu = cpu / len(chosen)
            parallel = 1 if not extra else os.cpu_count()
            print(f"  {label}: {wall:6.1f} s wall for {len(chosen)} recordings ({wall / len(chosen):.1f} s per job, bridge "
                  f"{bridge:.1f} s; {per_job_cpu:.1f} s CPU per job all in) -> demo's recordings: {wall * total / len(chosen) / 60:.1f} min "
                  f"at this wall rate, {per_job_cpu * total / parallel / 60:.1f} min on {parallel} idle core(s) from the CPU time")
            rows.append(row(f"a demo record job (20 s; --quick: 4 s) through Snakemake, {label}: CPU of Snakemake and the job", [per_job_cpu],
                            "CPU s"))
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=float, default=20.0, help="conversation length for the RTF runs (s)")
    parser.add_argument("--demo-jobs", type=int, default=4, help="record jobs to time (56 = the whole demo)")
    parser.add_argument("--skip-rtf", action="store_true")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="the smallest size that runs every part (CI): 4 s conversations, one demo record job of 4 s")
    # --quick changes the defaults only, so an option given beside it still wins.
    if "--quick" in sys.argv[1:]:
        parser.set_defaults(window=4.0, demo_jobs=1)
    args = parser.parse_args()
    if args.child:
        one_core_child(args.window, args.child)
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        scenarios = scenario_root(Path(tmp))
        if not args.skip_rtf:
            rows += one_core(args.window, scenarios)
    if not args.skip_demo:
        rows += demo_wall(args.demo_jobs, args.window if args.quick else None)
    if not (args.skip_rtf or args.skip_demo):  # a partial run would rewrite the table without its other rows
        emit("agent", rows)


if __name__ == "__main__":
    main()
