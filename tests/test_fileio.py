"""The one atomic writer (dyafdb.fileio): every stage writes through it."""

from __future__ import annotations

import os
import stat

import pytest

import dyafdb.analysis.io as analysis_io
from dyafdb.fileio import write_atomic, write_bytes_atomic, write_json_atomic, write_text_atomic


def test_writes_land_whole_and_readable_by_others(tmp_path):
    out = tmp_path / "deep" / "x.txt"
    write_text_atomic(out, "héllo\n")
    write_bytes_atomic(tmp_path / "b.bin", b"\x00\x01")
    write_json_atomic(tmp_path / "d.json", {"a": 1}, indent=None)
    assert out.read_text(encoding="utf-8") == "héllo\n"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "d.json").read_text() == '{"a": 1}\n'
    # mkstemp makes 0600; a shared results folder needs the umask's usual bits
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_a_failed_write_leaves_neither_output_nor_temporary(tmp_path):
    out = tmp_path / "x.tsv"
    write_text_atomic(out, "old\n")

    def broken(tmp):
        tmp.write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_atomic(out, broken)
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.tsv"]


def test_one_writer_only():
    # analysis.io once had write_text(text, path), the arguments swapped against fileio's
    assert not hasattr(analysis_io, "write_text") and not hasattr(analysis_io, "write_bytes")
