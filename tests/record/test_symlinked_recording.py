"""A recording folder that is a symbolic link to a folder elsewhere (recordings kept on another disk):
re-recording replaces the folder the link points to and keeps the link; nothing is left behind
(issue 25, class 10: "Cannot call rmtree on a symbolic link", and a `.partial-...` symlink for good)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from dyafdb.record.recording import Recording, Token, read_recording, write_recording


def _rec(value: float, text: str) -> Recording:
    audio = np.full((2, 1920 * 4), value, dtype=np.float32)
    return Recording(audio=audio, tokens=[Token("a", 1, text)], meta={"conversation_id": "x__y", "ticks": 4})


def test_rerecording_through_a_symlinked_folder_replaces_its_target_and_keeps_the_link(tmp_path):
    elsewhere = tmp_path / "other-disk" / "x__y"
    write_recording(_rec(0.1, "first"), elsewhere)
    link = tmp_path / "results" / "recordings" / "x" / "x__y"
    link.parent.mkdir(parents=True)
    link.symlink_to(elsewhere, target_is_directory=True)
    assert read_recording(link).tokens[0].text == "first"

    write_recording(_rec(0.2, "second"), link)
    assert link.is_symlink() and Path(os.path.realpath(link)) == elsewhere
    assert read_recording(link).tokens[0].text == "second"
    assert read_recording(elsewhere).tokens[0].text == "second"
    leftovers = [p.name for folder in (link.parent, elsewhere.parent) for p in folder.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_a_dangling_symlinked_folder_is_recorded_where_it_points(tmp_path):
    target = tmp_path / "gone" / "x__y"
    link = tmp_path / "results" / "x__y"
    link.parent.mkdir(parents=True)
    link.symlink_to(target, target_is_directory=True)
    write_recording(_rec(0.3, "again"), link)
    assert link.is_symlink() and read_recording(link).tokens[0].text == "again"
