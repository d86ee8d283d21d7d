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
import importlib
import json
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
    from dyafdb.agents.registry import adapters

    module, cls = adapters()[name].split(":")
    return getattr(importlib.import_module(module), cls)


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


def partner_agent(kind: str) -> Any:
    from dyafdb.agents.registry import make_agent

    if kind == "cascade":
        return make_agent("cascade", {"variant": "eager"}, "cpu_eager")
    # tests: a scripted talker instead of the embedded agent's three models
    return make_agent("scripted", {"script": [{"start_s": 2.0, "end_s": 4.0, "text": "hello is there a room",
                                                "amplitude": 0.05}]}, "scripted")


def record_one(name: str, config: dict[str, Any], seconds: float, partner: str, out: Path) -> Any:
    from dyafdb.agents.base import Session
    from dyafdb.clock import seconds_to_ticks
    from dyafdb.record.bridge import run_bridge
    from dyafdb.record.conversation import AgentPool
    from dyafdb.record.recording import write_recording

    ticks = seconds_to_ticks(seconds)
    lead_in = seconds_to_ticks(config["bridge"]["lead_in_s"])
    sessions = {"a": Session(conversation_id=f"gpu-check-{name}", side="a", prompt=SMOKE_ROLE + OPENER, speaker_name="Sam",
                             seed=1234, is_opener=True, window_ticks=ticks),
                "b": Session(conversation_id=f"gpu-check-{name}", side="b", prompt=PARTNER_ROLE, speaker_name="Alex",
                             seed=1235, is_opener=False, window_ticks=ticks)}
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", action="append", help="config file(s), later ones overlay earlier (default config/config.yaml)")
    parser.add_argument("--models", help="comma-separated model names (default: every model with weights to check)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--partner", choices=["cascade", "scripted"], default="cascade")
    parser.add_argument("--out", default="results/gpu-check")
    parser.add_argument("--weights-only", action="store_true", help="only check that weights and code are in place")
    args = parser.parse_args(argv)

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
    for name in ready:
        t0 = time.perf_counter()
        try:
            result, lead_in = record_one(name, config, args.seconds, args.partner, out)
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
    (out / "report.json").write_text(json.dumps({"missing": missing, "reports": reports}, indent=1))
    print(f"report: {out / 'report.json'}")
    if missing:
        return 2
    return 0 if all(r["ok"] for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
