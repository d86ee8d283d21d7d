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
    pytest.importorskip("moshi")
    sys.path.insert(0, str(ROOT / "tests" / "standins"))
    import moshi_tiny

    checkpoint = moshi_tiny.write_moshi_checkpoint(tmp_path / "moshiko-tiny")
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({
        "bridge": {"in_process": True},
        "models": {"moshi": {"params": {"checkpoint_dir": str(checkpoint), "device": "cpu", "dtype": "float32",
                                        "warmup_frames": 1, "sampling": {"temp": 0.6}}}}}))
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
