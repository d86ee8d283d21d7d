"""scripts/gpu-check.sh: without weights it names what is missing and where; with weights it records and checks.

The second mode runs here on a tiny Moshi checkpoint on the CPU (in process, a scripted partner instead
of the embedded agent's three models), which exercises the same recording and checks a GPU run does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu-check.sh"


def gpu_check(tmp_path: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "HF_HOME": str(tmp_path / "home" / "hf"), "PYTHON": sys.executable,
           "NO_TORCH_COMPILE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def tiny_moshi_overlay(tmp_path: Path, params: dict, entry: dict | None = None) -> Path:
    """A config overlay pointing model ``moshi`` at a tiny random Moshi written here (skips without moshi)."""
    pytest.importorskip("moshi")
    sys.path.insert(0, str(ROOT / "tests" / "standins"))
    import moshi_tiny

    checkpoint = moshi_tiny.write_moshi_checkpoint(tmp_path / "moshiko-tiny")
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({
        "bridge": {"in_process": True},
        "models": {"moshi": {"params": {"checkpoint_dir": str(checkpoint), "device": "cpu", "dtype": "float32",
                                        "warmup_frames": 1, **params}, **(entry or {})}}}))
    return overlay

def test_without_weights_it_says_what_is_missing_and_where(tmp_path):
    for args in (["--weights-only"], ["--out", str(tmp_path / "out")]):
        run = gpu_check(tmp_path, *args)
        assert run.returncode == 2, run.stdout + run.stderr
        out = run.stdout
        for model in ("personaplex", "minicpmo", "raon", "moshi"):
            assert f"MISSING {model}" in out
        home = str(tmp_path / "home")
        assert f"huggingface-cli download nvidia/personaplex-7b-v1 --local-dir {home}/models/personaplex-7b-v1" in out
        assert "huggingface-cli download openbmb/MiniCPM-o-4_5" in out and "checkout c7e1660" in out
        assert "python -m raon.export" in out and "krafton-ai/Raon-SpeechChat-Demo" in out
        assert "huggingface-cli download kyutai/moshiko-pytorch-bf16" in out
        assert not (tmp_path / "out").exists()  # nothing recorded


def test_with_weights_it_records_and_checks_each_model(tmp_path):
    overlay = tiny_moshi_overlay(tmp_path, {"sampling": {"temp": 0.6}})
    out = tmp_path / "out"
    run = gpu_check(tmp_path, "--config", str(ROOT / "config" / "config.yaml"), "--config", str(overlay), "--models", "moshi",
                    "--partner", "scripted", "--seconds", "4", "--out", str(out))
    assert run.returncode in (0, 1), run.stdout + run.stderr
    assert "ready   moshi" in run.stdout and "ms/tick" in run.stdout
    report = json.loads((out / "report.json").read_text())["reports"][0]
    checks = report["checks"]
    assert set(checks) == {"speech_model", "speech_partner", "text", "opener_in_lead_in", "sampling_in_meta", "voice_in_meta",
                           "step_time"}
    assert checks["sampling_in_meta"]["ok"] and checks["sampling_in_meta"]["meta"]["temp"] == 0.6
    assert checks["speech_partner"]["ok"] and checks["step_time"]["ms_per_tick"] > 0
    assert checks["voice_in_meta"]["meta"] == "built-in"
    meta = json.loads((out / "moshi" / "recording" / "meta.json").read_text())
    assert meta["agents"]["a"]["sampling"]["temp"] == 0.6 and meta["ticks"] == 50


def test_all_mode_prints_and_records_one_table_on_a_tiny_model(tmp_path):
    """`gpu-check.sh all` on the CPU (tiny Moshi): the smoke, the engine probe in the worker's environment
    (ticks at each batch, the same conversation through the engine at batch 1), one table, recorded."""
    overlay = tiny_moshi_overlay(tmp_path, {}, {"engine": {"sessions": 2},
                                               "worker": {"command": [sys.executable, "-m", "dyafdb.agents.worker"],
                                                          "env": {"OMP_NUM_THREADS": "1"}}})
    record = tmp_path / "BENCH.md"
    record.write_text("# figures\n")
    out = tmp_path / "out"
    run = gpu_check(tmp_path, "all", "--config", str(ROOT / "config" / "config.yaml"), "--config", str(overlay),
                    "--models", "moshi", "--seconds", "4", "--batches", "1,2", "--modes", "eager", "--ticks", "3",
                    "--warmup", "1", "--budget-s", "240", "--out", str(out), "--record", str(record))
    assert run.returncode == 0, run.stdout + run.stderr
    table = (out / "table.md").read_text()
    assert "without a GPU" in table and "| moshi | tick, batch 2, eager |" in table
    assert "| moshi | engine vs per-job text tokens, batch 1, greedy | same (" in table  # greedy: the worker's tokens
    probe = [json.loads(line) for line in (out / "moshi" / "probe.jsonl").read_text().splitlines()]
    assert [p["check"] for p in probe] == ["device", "load", "conversation", "tick", "tick"]
    written = record.read_text()
    assert written.startswith("# figures\n") and table in written and written.count("gpu-check: begin") == 1
    run = gpu_check(tmp_path, "all", "--config", str(ROOT / "config" / "config.yaml"), "--config", str(overlay),
                    "--models", "moshi", "--seconds", "4", "--budget-s", "0", "--out", str(out), "--record", str(record))
    assert run.returncode == 1 and "past the run's time budget" in run.stdout  # the budget is kept
    assert record.read_text().count("gpu-check: begin") == 1  # the block is replaced, not added again


def test_the_probe_times_joins_and_sessions_of_every_engine(tmp_path, monkeypatch, capsys):
    """The probe's parts a GPU run uses, here on stand-ins in process: PersonaPlex's join with its voice
    (alone and riding), MiniCPM-o's chunk compute through its engine, Raon's voice through its gateway."""
    pytest.importorskip("moshi")
    torch = pytest.importorskip("torch")
    sys.path[:0] = [str(ROOT / "tests" / d) for d in ("standins", "helpers", "agents")]
    import moshi_tiny
    import numpy as np
    import soundfile as sf
    from minicpmo_duplex import StandInMiniCPMOEngine
    from test_engine_personaplex_load import tiny_kwargs, write_fork_checkpoint
    from test_engine_personaplex_load import params as pp_params

    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_probe as probe

    from dyafdb.agents.engine.models import make_engine
    from dyafdb.agents.moshi import personaplex_load as load

    monkeypatch.setattr(load, "FORK_LM_KWARGS", tiny_kwargs())
    monkeypatch.setattr(load, "mimi_config", moshi_tiny.tiny_mimi_config)
    torch.manual_seed(0)
    mimi = moshi_tiny.build_mimi()
    with torch.no_grad():
        monkeypatch.setattr(load, "SILENCE_TOKENS", tuple(mimi.encode(torch.zeros(1, 1, 1920))[0, :, 0].tolist()))
        sine = torch.tensor(0.5 * np.sin(2 * np.pi * 440 * np.arange(1920) / 24000.0), dtype=torch.float32).view(1, 1, -1)
        monkeypatch.setattr(load, "SINE_TOKENS", tuple(mimi.encode(sine)[0, :, 0].tolist()))
    with moshi_tiny.one_torch_thread():
        engine = make_engine("personaplex", pp_params(write_fork_checkpoint(tmp_path / "pp")), "pp", 2)
        probe.probe_batched(engine, [1, 2], ["eager"], ticks=2, warmup=0)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["check"], r.get("batch")) for r in rows] == [("tick", 1), ("tick", 2), ("join", None)]
    join = rows[-1]
    assert join["prompt_lm_steps"] >= 5 + 2 * engine.batched.audio_silence_frame_cnt  # voice frames and silence, then text
    assert join["ride_ticks"] == join["prompt_lm_steps"] and join["sessions_stepping"] == 8

    folder = tmp_path / "MiniCPM-o-4_5"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    sf.write(tmp_path / "ref.wav", np.zeros(24000, np.float32), 24000)
    mini = StandInMiniCPMOEngine({"checkpoint_dir": str(folder), "ref_audio": str(tmp_path / "ref.wav"),
                                  "stand_in": {"prefill_s": 0.0, "generate_s": 0.02}}, "minicpmo", 4)
    probe.probe_sessions(mini, seconds=4.0)
    session = json.loads(capsys.readouterr().out)
    assert session["check"] == "session" and session["concurrent"] == 1 and session["ticks"] == 50
    assert len(session["chunk_compute_ms"]) >= 2 and min(session["chunk_compute_ms"]) >= 20

    pytest.importorskip("websockets")
    from test_adapter_raon import ecapa_cache, write_wav
    from test_engine_sessions import raon_params

    from dyafdb.agents.raon import RaonEngine

    monkeypatch.setenv("SPEECHBRAIN_ECAPA_SAVEDIR", str(ecapa_cache(tmp_path / "ecapa")))
    raon = RaonEngine(raon_params(tmp_path, tmp_path / "events.jsonl", write_wav(tmp_path / "raon.wav")), "raon", 4)
    try:
        probe.probe_sessions(raon, seconds=1.0)
    finally:
        raon.shutdown()
    session = json.loads(capsys.readouterr().out)
    assert session["voice_applied"] is True and session["voice"] == "raon.wav" and session["concurrent"] == 2
