"""A lab's first-day check of the real models: one short conversation each, against the embedded CPU agent.

For every configured model whose adapter needs weights (PersonaPlex, MiniCPM-o, Raon, Moshi), this
first checks that the weights (and, for Raon and MiniCPM-o, the upstream code the adapter drives)
are where the config says; a model without them is listed with what is missing, where to put it and
the download command, and is not run. Each model that has them records one conversation of
``--seconds`` (10 s) as the opener (side a), through its worker exactly as a record job starts it,
against the embedded CPU agent (``cascade``, eager variant, in process) as side b, and is checked:

* speech on both channels (frames above ``vad.start_rms``),
* a non-empty text channel for the model,
* the opener audible within the lead-in (``bridge.lead_in_s``), unless the adapter reports that the
  model does not speak first (MiniCPM-o, Raon's realtime gateway: reported, not failed),
* the sampling keys set in ``params.sampling`` and the configured voice appear in meta.json as set,
* step time per tick (wall time of the model's steps / ticks; 80 ms is real time), reported.

The recordings (wavs, tokens, meta.json) stay under ``--out`` for listening. Exit status: 0 all
checks passed, 1 a check failed, 2 weights or code missing for a requested model.

    bash scripts/gpu-check.sh                       # every real model in config/config.yaml
    bash scripts/gpu-check.sh --models raon --seconds 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SMOKE_ROLE = ("You are Sam, a receptionist at a small hotel. A guest is calling. Greet them, ask how you can "
              "help, and keep your answers short.")
OPENER = " Start the conversation: greet the caller."
PARTNER_ROLE = "You are Alex, calling a hotel to ask whether they have a room free tonight."
VOICE_PARAMS = ("voice_prompt", "ref_audio", "speaker_audio")


def adapter_class(name: str) -> Any:
    from dyafdb.agents.registry import adapter_class as declared

    return declared(name)


def real_models(config: dict[str, Any], only: list[str] | None) -> dict[str, dict[str, Any]]:
    """Models whose adapter declares weights to check (``missing_weights``), in config order."""
    out = {}
    for name, spec in config["models"].items():
        if only and name not in only:
            continue
        if hasattr(adapter_class(spec["adapter"]), "missing_weights"):
            out[name] = spec
    unknown = sorted(set(only or []) - set(config["models"]))
    if unknown:
        sys.exit(f"gpu-check: --models names {', '.join(unknown)}, not in the config's models")
    return out


def voiced(audio: np.ndarray, threshold: float) -> np.ndarray:
    frames = audio[: len(audio) // 1920 * 1920].reshape(-1, 1920).astype(np.float64)
    return np.sqrt((frames ** 2).mean(axis=1)) > threshold


def check(name: str, spec: dict[str, Any], result: Any, config: dict[str, Any], lead_in: int) -> dict[str, Any]:
    threshold = float(config["vad"]["start_rms"])
    a, b = (voiced(result.recording.audio[i], threshold) for i in (0, 1))
    info = result.agent_info["a"]
    params = spec.get("params") or {}
    text = "".join(t.text for t in result.recording.tokens if t.channel == "a")
    checks: dict[str, dict[str, Any]] = {}
    checks["speech_model"] = {"ok": int(a.sum()) >= 3, "voiced_frames": int(a.sum())}
    checks["speech_partner"] = {"ok": int(b.sum()) >= 3, "voiced_frames": int(b.sum())}
    checks["text"] = {"ok": bool(text.strip()), "text": text.strip()[:200]}
    first = int(np.flatnonzero(a)[0]) if a.any() else None
    speaks_first = (info.get("extra") or {}).get("speak_first", True)
    audible = first is not None and first < lead_in
    checks["opener_in_lead_in"] = {"ok": audible or speaks_first is False, "first_voiced_tick": first, "lead_in_ticks": lead_in,
                                   **({"note": "adapter reports the model does not speak first"} if speaks_first is False else {})}
    wanted = params.get("sampling") or {}
    got = info.get("sampling") or {}
    mismatch = {k: [v, got.get(k)] for k, v in wanted.items() if got.get(k) != v}
    checks["sampling_in_meta"] = {"ok": bool(got) and not mismatch, "meta": got, **({"mismatch": mismatch} if mismatch else {})}
    voice_set = next((Path(str(params[k])).name for k in VOICE_PARAMS if params.get(k)), None)
    voice = info.get("voice")
    checks["voice_in_meta"] = {"ok": bool(voice) and (voice_set is None or voice_set in str(voice)), "meta": voice,
                               "configured": voice_set}
    per_tick = result.step_wall_s["a"] / max(result.ticks, 1)
    checks["step_time"] = {"ok": True, "ms_per_tick": round(per_tick * 1000, 1), "real_time": per_tick <= 0.08}
    return {"model": name, "ok": all(c["ok"] for c in checks.values()), "checks": checks, "ticks": result.ticks}


# A talker whose audio does not depend on what it hears: the greedy engine-vs-worker comparison
# feeds both the same frames (and tests use it instead of the embedded agent's three models).
SCRIPTED_PARTNER = {"script": [{"start_s": 2.0, "end_s": 4.0, "text": "hello is there a room", "amplitude": 0.05},
                               {"start_s": 7.0, "end_s": 8.5, "text": "just one night please", "amplitude": 0.05}]}


def partner_agent(kind: str) -> Any:
    from dyafdb.agents.registry import make_agent

    if kind == "cascade":
        return make_agent("cascade", {"variant": "eager"}, "cpu_eager")
    return make_agent("scripted", SCRIPTED_PARTNER, "scripted")


def smoke_sessions(name: str, ticks: int) -> dict[str, Any]:
    from dyafdb.agents.base import Session

    return {"a": Session(conversation_id=f"gpu-check-{name}", side="a", prompt=SMOKE_ROLE + OPENER, speaker_name="Sam",
                         seed=1234, is_opener=True, window_ticks=ticks),
            "b": Session(conversation_id=f"gpu-check-{name}", side="b", prompt=PARTNER_ROLE, speaker_name="Alex",
                         seed=1235, is_opener=False, window_ticks=ticks)}


def record_one(name: str, config: dict[str, Any], seconds: float, partner: str, out: Path) -> Any:
    from dyafdb.clock import seconds_to_ticks
    from dyafdb.record.bridge import run_bridge
    from dyafdb.record.conversation import AgentPool
    from dyafdb.record.recording import write_recording

    ticks = seconds_to_ticks(seconds)
    lead_in = seconds_to_ticks(config["bridge"]["lead_in_s"])
    sessions = smoke_sessions(name, ticks)
    pool = AgentPool(config, log_dir=out / name)
    (out / name).mkdir(parents=True, exist_ok=True)
    try:
        agents = {"a": pool.get(name, 0), "b": partner_agent(partner)}
        result = run_bridge(agents, sessions, ticks, lead_in, "a", names={"a": name, "b": partner})
    finally:
        pool.shutdown()
    result.recording.meta = {"conversation_id": f"gpu-check-{name}", "agents": result.agent_info, "ticks": result.ticks,
                             "lead_in_ticks": lead_in, "step_wall_s": result.step_wall_s, "channels": [
                                 {"index": 0, "side": "a", "model": name}, {"index": 1, "side": "b", "model": partner}]}
    write_recording(result.recording, out / name / "recording")
    return result, lead_in


# -- engines on real weights (gpu-check.sh all) --------------------------------------------------------
PROBE = ROOT / "scripts" / "gpu_probe.py"
TABLE_BEGIN, TABLE_END = "<!-- gpu-check: begin (scripts/gpu-check.sh all writes this block on a GPU) -->", "<!-- gpu-check: end -->"


def greedy(config: dict[str, Any], models: list[str]) -> dict[str, Any]:
    """The config with argmax decoding for ``models`` (Moshi's sampling keys), so a worker and an engine
    given the same frames must choose the same tokens."""
    import copy

    out = copy.deepcopy(config)
    for name in models:
        params = out["models"][name].setdefault("params", {})
        params["sampling"] = {**(params.get("sampling") or {}), "use_sampling": False}
    return out


def probe_argv(name: str, spec: dict[str, Any], sizes: dict[str, Any], conversation: dict[str, Any] | None) -> list[str]:
    """The probe in the environment the model's engine runs in (``engine.command`` or the worker's)."""
    from dyafdb.agents.engine.launch import HOST_MODULE, host_command

    argv = host_command({**spec, "engine": spec.get("engine") or {}})
    at = argv.index(HOST_MODULE)
    argv[at - 1:at + 1] = [str(PROBE)]  # `-m <host module>` -> the probe script, same interpreter and environment
    argv += ["--adapter", spec["adapter"], "--model", name, "--params", json.dumps(spec.get("params") or {}),
             "--batches", sizes["batches"], "--modes", sizes["modes"], "--ticks", str(sizes["ticks"]),
             "--warmup", str(sizes["warmup"]), "--seconds", str(sizes["seconds"])]
    if conversation is not None:
        argv += ["--conversation", json.dumps(conversation)]
    return argv


def run_probe(name: str, spec: dict[str, Any], argv: list[str], timeout_s: float, log: Path) -> list[dict[str, Any]]:
    import os
    import subprocess

    env = {**os.environ, **((spec.get("worker") or {}).get("env") or {})}
    visible = [g for g in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    if visible:
        env["CUDA_VISIBLE_DEVICES"] = visible[0]  # one GPU, as an engine gets
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(log, "w") as err:
            done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=err, text=True, timeout=max(timeout_s, 1))
        lines = done.stdout.splitlines()
    except subprocess.TimeoutExpired as exc:
        lines = (exc.stdout or b"").decode(errors="replace").splitlines() if isinstance(exc.stdout, bytes) else \
            (exc.stdout or "").splitlines()
        lines.append(json.dumps({"check": "error", "error": f"probe ran past {timeout_s:.0f} s (the run's budget); see {log}"}))
    except OSError as exc:
        lines = [json.dumps({"check": "error", "error": f"cannot start the probe {argv[:4]}: {exc}"})]
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    if not rows:
        rows.append({"check": "error", "error": f"the probe printed nothing; see {log}"})
    return rows


def compare_tokens(job: list[list[Any]], engine: list[list[Any]]) -> dict[str, Any]:
    """The per-job worker's (tick, text) pieces against the engine's, under greedy decoding."""
    same = 0
    for a, b in zip(job, engine):
        if list(a) != list(b):
            break
        same += 1
    first = None if same == len(job) == len(engine) else (job[same][0] if same < len(job) else engine[same][0])
    return {"ok": same == len(job) == len(engine) and len(job) > 0, "same_prefix": same, "job_pieces": len(job),
            "engine_pieces": len(engine), "first_difference_tick": first}


def engine_rows(name: str, probe: list[dict[str, Any]], comparison: dict[str, Any] | None) -> list[list[str]]:
    """The table's rows for one model: (model, what, figure)."""
    rows = []
    device = next((p.get("device") for p in probe if p.get("check") == "device"), "?")
    for p in probe:
        check = p.get("check")
        if check == "load":
            rows.append([name, f"engine load ({device})", f"{p['seconds']} s"])
        elif check == "tick" and "error" in p:
            rows.append([name, f"tick, batch {p['batch']}, {p['mode']}", f"failed: {p['error']}"])
        elif check == "tick":
            rows.append([name, f"tick, batch {p['batch']}, {p['mode']}", f"{p['ms_median']} ms median, {p['ms_p90']} p90 (n {p['n']})"])
        elif check == "join":
            rows.append([name, f"join, voice {p['voice']} + {p['text_prompt_tokens']} prompt tokens, alone",
                         f"{p['alone_ms']} ms, {p['prompt_lm_steps']} LM steps"])
            rows.append([name, f"join riding with {p['sessions_stepping']} sessions",
                         f"{p['ride_ticks']} ticks at {p['ride_tick_ms_median']} ms (plain tick {p['plain_tick_ms_median']} ms)"])
        elif check == "session":
            chunks = p.get("chunk_compute_ms") or []
            rows.append([name, "engine session step", f"{p['step_ms_median']} ms median, {p['step_ms_max']} max "
                         f"({p['ticks']} ticks, {p['concurrent']} at once)"])
            if chunks:
                rows.append([name, "chunk compute (prefill + generate)",
                             f"{statistics.median(chunks):.0f} ms median, {max(chunks):.0f} max (n {len(chunks)})"])
            if p.get("voice_applied") is not None:
                rows.append([name, f"voice applied ({p['voice']})", str(p["voice_applied"]) +
                             (f": {p['voice_problem']}" if p.get("voice_problem") else "")])
        elif check == "error":
            rows.append([name, "engine probe", f"FAILED: {p['error']}"])
    if comparison is not None:
        c = comparison
        rows.append([name, "engine vs per-job text tokens, batch 1, greedy",
                     ("same" if c["ok"] else f"differ from tick {c['first_difference_tick']}") +
                     f" ({c['same_prefix']} of {c['job_pieces']} pieces equal; engine {c['engine_pieces']})"])
    return rows


def format_table(rows: list[list[str]], header: str) -> str:
    lines = [header, "", "| model | check | figure |", "|---|---|---|"]
    lines += [f"| {' | '.join(cell.replace('|', '/') for cell in row)} |" for row in rows]
    return "\n".join(lines)


def record_table(path: Path, table: str) -> bool:
    """Put the table between the gpu-check markers of ``path`` (added at its end when absent)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{TABLE_BEGIN}\n{table}\n{TABLE_END}"
    if TABLE_BEGIN in text and TABLE_END in text:
        head, rest = text.split(TABLE_BEGIN, 1)
        text = head + block + rest.split(TABLE_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
    return True


def run_engines(config: dict[str, Any], ready: list[str], smoke: dict[str, Any], args: argparse.Namespace,
                deadline: float, out: Path) -> tuple[list[list[str]], bool, bool]:
    """Each ready model's engine on its weights; (table rows, all ok, whether a GPU ran them)."""
    from dyafdb.agents.engine.models import BATCHED_ADAPTERS, ENGINES
    from dyafdb.clock import seconds_to_ticks

    sizes = {"batches": args.batches, "modes": args.modes, "ticks": args.ticks, "warmup": args.warmup,
             "seconds": args.seconds}
    rows, ok, gpu = [], True, False
    for name in ready:
        spec = config["models"][name]
        if spec["adapter"] not in ENGINES:
            continue
        left = deadline - time.monotonic()
        if left < 30:
            rows.append([name, "engine probe", "not run: past the run's time budget (--budget-s)"])
            ok = False
            continue
        conversation = None
        if spec["adapter"] in BATCHED_ADAPTERS and name in smoke:
            ticks = seconds_to_ticks(args.seconds)
            conversation = {"sessions": {s: v.to_json() for s, v in smoke_sessions(name, ticks).items()},
                            "partner": SCRIPTED_PARTNER, "ticks": ticks,
                            "lead_in": seconds_to_ticks(config["bridge"]["lead_in_s"])}
        probe = run_probe(name, spec, probe_argv(name, spec, sizes, conversation), left, out / name / "probe.log")
        comparison = None
        if conversation is not None:
            engine_tokens = next((p["tokens"] for p in probe if p.get("check") == "conversation"), None)
            if engine_tokens is not None:
                job = [[t.tick, t.text] for t in smoke[name].recording.tokens if t.channel == "a"]
                comparison = compare_tokens(job, engine_tokens)
                ok &= comparison["ok"]
        ok &= not any(p.get("check") == "error" or "error" in p for p in probe)
        gpu |= any(p.get("check") == "device" and p.get("device") not in ("cpu", "no torch here") for p in probe)
        rows += engine_rows(name, probe, comparison)
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "probe.jsonl").write_text("\n".join(json.dumps(p) for p in probe) + "\n")
    return rows, ok, gpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", action="append", help="config file(s), later ones overlay earlier (default config/config.yaml)")
    parser.add_argument("--models", help="comma-separated model names (default: every model with weights to check)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--partner", choices=["cascade", "scripted"], default="cascade")
    parser.add_argument("--out", default="results/gpu-check")
    parser.add_argument("--weights-only", action="store_true", help="only check that weights and code are in place")
    parser.add_argument("--engines", action="store_true", help="also each engine on its weights (gpu-check.sh all): ms per "
                        "tick per batch and mode, PersonaPlex's join, engine vs worker tokens under greedy decoding, "
                        "MiniCPM-o's chunk compute, Raon's voice; one table at the end")
    parser.add_argument("--batches", default="1,8,16,32")
    parser.add_argument("--modes", default="eager,graph")
    parser.add_argument("--ticks", type=int, default=30, help="timed ticks per batch size and mode")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=600, help="the whole run's time; later steps are skipped past it")
    parser.add_argument("--record", help="a markdown file whose gpu-check block gets the table (default: BENCHMARKS.md, "
                        "when a GPU ran the engines)")
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.budget_s

    from dyafdb.config import load_config
    from dyafdb.errors import InputError
    from dyafdb.schema_check import read_yaml

    paths = args.config or [str(ROOT / "config" / "config.yaml")]
    overlay: dict[str, Any] = {}
    from dyafdb.config import _merge

    for extra in paths[1:]:
        overlay = _merge(overlay, read_yaml(Path(extra)) or {})
    try:
        config = load_config(paths[0], overrides=overlay or None)
    except InputError as exc:
        print(f"gpu-check: {exc}", file=sys.stderr)
        return 2
    models = real_models(config, args.models.split(",") if args.models else None)
    ready, missing = [], {}
    for name, spec in models.items():
        problems = adapter_class(spec["adapter"]).missing_weights(spec.get("params") or {}, name)
        (missing.__setitem__(name, problems) if problems else ready.append(name))
    for name, problems in missing.items():
        print(f"MISSING {name} ({models[name]['adapter']}): not run")
        for problem in problems:
            print(f"  - {problem}")
    for name in ready:
        print(f"ready   {name} ({models[name]['adapter']}): weights and code in place")
    if args.weights_only or not ready:
        if not models:
            print("gpu-check: the config has no model with weights to check")
        return 2 if missing else 0
    out = Path(args.out)
    reports = []
    smoke: dict[str, Any] = {}
    compared: list[str] = []
    if args.engines:  # the batched models' smoke doubles as the per-job side of the greedy comparison
        from dyafdb.agents.engine.models import BATCHED_ADAPTERS

        compared = [n for n in ready if models[n]["adapter"] in BATCHED_ADAPTERS]
        config = greedy(config, compared)
    for name in ready:
        t0 = time.perf_counter()
        if time.monotonic() > deadline - 30:
            reports.append({"model": name, "ok": False, "error": "not run: past the run's time budget (--budget-s)"})
            continue
        try:
            partner = "scripted" if name in compared else args.partner
            result, lead_in = record_one(name, config, args.seconds, partner, out)
            smoke[name] = result
            report = check(name, models[name], result, config, lead_in)
        except Exception as exc:  # a model that cannot run is a failed check, and the others still run
            report = {"model": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        report["wall_s"] = round(time.perf_counter() - t0, 1)
        reports.append(report)
        status = "PASS" if report["ok"] else "FAIL"
        print(f"{status}    {name}: " + (report.get("error") or ", ".join(
            f"{k} {'ok' if c['ok'] else 'FAILED'}" for k, c in report["checks"].items())))
        if "checks" in report:
            print(f"        step time {report['checks']['step_time']['ms_per_tick']} ms/tick; "
                  f"recording in {out / name / 'recording'}")
    out.mkdir(parents=True, exist_ok=True)
    engines_ok = True
    if args.engines:
        rows = [[r["model"], f"adapter smoke (per-job worker, {args.seconds:g} s conversation)",
                 ("PASS" if r["ok"] else "FAIL") + (f", {r['checks']['step_time']['ms_per_tick']} ms/tick" if "checks" in r
                                                    else f": {r.get('error')}")] for r in reports]
        for r in reports:
            voice = (r.get("checks") or {}).get("voice_in_meta")
            if voice:
                rows.append([r["model"], "voice in meta.json (per-job)", f"{voice['meta']}"])
        engine_rows_, engines_ok, on_gpu = run_engines(config, ready, smoke, args, deadline, out)
        rows += engine_rows_
        import subprocess

        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        header = (f"`bash scripts/gpu-check.sh all` at {commit or 'unknown commit'}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                  f"{'on a GPU' if on_gpu else 'without a GPU (CPU: not the GPU figures)'}; batches {args.batches}, modes "
                  f"{args.modes}, {args.ticks} timed ticks each; engine vs per-job under greedy decoding")
        table = format_table(rows, header)
        print(table)
        target = Path(args.record) if args.record else (ROOT / "BENCHMARKS.md" if on_gpu else None)
        if target is not None and record_table(target, table):
            print(f"recorded in {target}")
        (out / "table.md").write_text(table + "\n")
    (out / "report.json").write_text(json.dumps({"missing": missing, "reports": reports}, indent=1))
    print(f"report: {out / 'report.json'}")
    if missing:
        return 2
    return 0 if all(r["ok"] for r in reports) and engines_ok else 1


if __name__ == "__main__":
    sys.exit(main())
