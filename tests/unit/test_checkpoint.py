"""Checkpoints: atomic writes, weights-only loads, and one-line errors for broken files."""

import pytest
import torch

from horde.train.checkpoint import CheckpointError, load_checkpoint, resolve_checkpoint, save_checkpoint

PAYLOAD = {"iteration": 4, "task": "cartpole", "config": {"seed": 1}, "actor_state_dict": {"w": torch.ones(3)}}


def test_roundtrip_is_weights_only(tmp_path):
    path = save_checkpoint(tmp_path / "model_4.pt", PAYLOAD)
    data = torch.load(path, weights_only=True)
    assert data["schema_version"] == 1 and torch.equal(data["actor_state_dict"]["w"], torch.ones(3))
    assert load_checkpoint(path)["iteration"] == 4
    assert [p.name for p in tmp_path.iterdir()] == ["model_4.pt"], "no temporary file is left behind"


def test_latest_checkpoint_of_a_run(tmp_path):
    for it in (2, 10, 4):
        save_checkpoint(tmp_path / f"model_{it}.pt", {**PAYLOAD, "iteration": it})
    assert resolve_checkpoint(tmp_path).name == "model_10.pt"


@pytest.mark.parametrize("damage, expected", [
    (lambda p: p.write_bytes(p.read_bytes()[:200]), "unreadable checkpoint"),
    (lambda p: p.write_bytes(b"not a zip at all"), "unreadable checkpoint"),
    (lambda p: torch.save([1, 2, 3], p), "not a horde checkpoint"),
    (lambda p: torch.save({"a": 1}, p), "no schema_version"),
    (lambda p: torch.save({**PAYLOAD, "schema_version": 99}, p), "newer than this horde"),
    (lambda p: torch.save({"schema_version": 1, "task": "x"}, p), "lacks iteration"),
    # a pickled object that weights_only refuses: not torch's advice to load it unsafely (issue 72)
    (lambda p: torch.save({"schema_version": 1, "a": __import__("numpy").zeros(3)}, p),
     "holds objects other than tensors and plain values"),
])
def test_broken_files_fail_in_one_line(tmp_path, damage, expected):
    path = save_checkpoint(tmp_path / "model_1.pt", PAYLOAD)
    damage(path)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(path)
    assert expected in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_run_directory(tmp_path):
    with pytest.raises(CheckpointError, match="no such run directory"):
        resolve_checkpoint(tmp_path / "nope")
    with pytest.raises(CheckpointError, match="holds no model_"):
        resolve_checkpoint(tmp_path)
