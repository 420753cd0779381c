"""Files are written whole or not at all (horde.sim.files): a write that fails leaves the old file and no temporary."""

from __future__ import annotations

import pytest

from horde.sim.files import atomic_path, atomic_write_text


def test_a_complete_write_replaces_the_file(tmp_path):
    target = tmp_path / "sub" / "report.json"
    atomic_write_text(target, "old")
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent and tmp.suffix == ".json" and tmp != target
        tmp.write_text("new")
        assert target.read_text() == "old"  # not replaced before the block ends
    assert target.read_text() == "new"
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "plot.png"
    atomic_write_text(target, "good")
    with pytest.raises(OSError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise OSError(28, "No space left on device")
    assert target.read_text() == "good"
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C mid-write: the same
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise KeyboardInterrupt
    assert target.read_text() == "good" and len(list(tmp_path.iterdir())) == 1
