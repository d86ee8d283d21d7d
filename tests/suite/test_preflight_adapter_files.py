"""Preflight asks each adapter what it lacks (``missing_weights``), not only whether the checkpoint
folder exists: a MiniCPM-o folder without its reference voice was found only inside a SLURM job,
by the engine, before this check (helper report, issue 28 CI run)."""

from __future__ import annotations

from pathlib import Path

from dyafdb.commands._preflight import model_checks

REPO = Path(__file__).resolve().parents[2]


def _config(folder: Path) -> dict:
    params = {"checkpoint_dir": str(folder), "code": "demo", "code_dir": str(REPO / "tests/standins/minicpmo_code"),
              "allow_other_code": True, "device": "cpu"}
    return {"bridge": {"in_process": True}, "models": {"mc": {"adapter": "minicpmo", "params": params}}}


def test_a_checkpoint_folder_without_its_reference_voice_fails_preflight_naming_the_file(tmp_path):
    folder = tmp_path / "MiniCPM-o-4_5"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    checks = {c.name: c for c in model_checks(_config(folder), ["mc"])}
    assert checks["model mc weights"].ok
    files = checks["model mc files"]
    assert not files.ok and "ref_audio" in files.detail and "ref_en_dlc_1.wav" in files.detail, files


def test_with_the_voice_in_place_the_adapter_reports_nothing_missing(tmp_path):
    folder = tmp_path / "MiniCPM-o-4_5"
    (folder / "assets/ref_audio").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "assets/ref_audio/ref_en_dlc_1.wav").write_bytes(b"RIFF")
    checks = {c.name: c for c in model_checks(_config(folder), ["mc"])}
    assert checks["model mc files"].ok, checks["model mc files"]


def test_an_adapter_without_files_to_check_adds_no_line():
    config = {"bridge": {"in_process": True}, "models": {"s": {"adapter": "scripted", "params": {}}}}
    assert [c.name for c in model_checks(config, ["s"])] == []
