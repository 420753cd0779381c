"""A world keeps every Warp array on its own device whatever Warp's default device is.

On a GPU machine Warp's default device is ``cuda:0``; a CPU world that allocates one array without naming its
device gets GPU memory, and its CPU kernels then read it through a host pointer: the H200 run of 2026-11-26
segfaulted exactly so (``solver=mujoco-c``'s index maps, in ``horde export``'s closed-loop rung). A machine with
no GPU has only the CPU, so the test stands in a second CPU device object as the default (same memory, another
identity) and looks for any array that landed on it."""

import copy

import pytest
import torch
import warp as wp
from warp._src import context as warp_context

from horde.envs import make


def _arrays_off_device(obj, device: wp.Device, path: str = "env", seen: set | None = None,
                       depth: int = 0) -> list[str]:
    """Attribute paths of the Warp arrays reachable from ``obj`` (horde's, Newton's and Warp's objects, Warp
    structs, containers) that are not on ``device``."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 8 or obj is None or isinstance(obj, (torch.Tensor, str, bytes, int, float, type)):
        return []
    seen.add(id(obj))
    if isinstance(obj, wp.array):
        return [f"{path} ({obj.device})"] if obj.device is not None and obj.device is not device else []
    if isinstance(obj, dict):
        items = [(f"{path}[{k!r}]", v) for k, v in list(obj.items())]
    elif isinstance(obj, (list, tuple)):
        items = [(f"{path}[{k}]", v) for k, v in enumerate(obj)]
    elif (type(obj).__module__ or "").split(".")[0] in ("horde", "newton", "warp") and hasattr(obj, "__dict__"):
        items = [(f"{path}.{k}", v) for k, v in list(vars(obj).items())]
    else:
        return []
    return [bad for p, v in items for bad in _arrays_off_device(v, device, p, seen, depth + 1)]


@pytest.fixture
def foreign_default_device(monkeypatch):
    """Warp's default device replaced by a stand-in for a GPU: a copy of the CPU device (another object)."""
    wp.init()
    stand_in = copy.copy(wp.get_device("cpu"))
    stand_in.alias = "default-not-cpu"
    monkeypatch.setattr(warp_context.runtime, "default_device", stand_in)
    assert wp.zeros(1).device is stand_in  # the stand-in is what an allocation without a device gets
    return stand_in


@pytest.mark.parametrize("task", ["cartpole", "quadruped"])  # horde's own kernels; MuJoCo's C engine (mujoco-c)
def test_world_arrays_stay_on_the_world_device(task, foreign_default_device):
    env = make(task, num_envs=4, seed=0, device="cpu")
    for _ in range(2):
        env.step(torch.zeros(4, env.num_actions))
    cpu = wp.get_device("cpu")
    assert foreign_default_device is not cpu
    assert _arrays_off_device(env, cpu) == []
