"""runtime.files: atomic writes leave the old file intact when the writer fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dgsr.runtime.files import atomic_write, atomic_write_path, atomic_write_text


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "front.csv"
    target.write_text("old\n")

    def half_then_fail(fh):
        fh.write("new, half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, half_then_fail, text=True)
    assert target.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["front.csv"]


def test_writes_replace_the_file_and_are_readable_by_others(tmp_path):
    atomic_write_text(tmp_path / "sub" / "a.txt", "hello")
    assert (tmp_path / "sub" / "a.txt").read_text() == "hello"
    atomic_write(tmp_path / "b.bin", lambda fh: fh.write(b"\x00\x01"))
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    atomic_write_path(tmp_path / "c.bin", lambda name: Path(name).write_bytes(b"x"))
    assert (tmp_path / "c.bin").stat().st_mode & 0o777 == 0o644
