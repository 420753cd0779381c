"""The memory a run will need, estimated before its envs are built, and the guard that refuses a run that will not
fit: one line with the estimate and what the machine has, instead of an out-of-memory kill (``memory_check=false``
skips the guard).

    needed = FIXED + MARGIN x num_envs x (envs + rollout + update)

- ``envs``: bytes per env of the task's simulation, measured once per task by ``benchmarks/memory_per_env.py``
  (:data:`TASK_MEMORY`): on the CPU the growth of the process's peak resident memory per env (default backend:
  MuJoCo's C engine for the Newton tasks; built and stepped 8 times, at 16 and 528 envs); for CUDA the bytes of
  every Warp array and torch tensor per env with the backend a CUDA run gets (MuJoCo-Warp, built on Warp's CPU
  backend: the arrays have the same sizes on a GPU). A task the table does not know (a plugin's) gets the table's
  largest figures.
- ``rollout``: the learner's storage, from the config: PPO keeps ``num_steps_per_env`` transitions of every
  observation group, three action-sized tensors (actions, mean, std) and six scalars per env (rsl-rl's
  ``RolloutStorage``); SHAC its ``horizon`` of observations and scalars (``critic_replay`` earlier ones too) plus what
  the differentiable simulator holds until backward (``tape``, counted by the task's rollout); SAC its replay ring,
  ``buffer_length`` transitions of two observations, the action and three scalars (its batch is in ``FIXED``).
- ``update``: one mini-batch's copy of those transitions and its activations (forward values and gradients of every
  layer of both networks, :data:`ACTIVATION_FACTOR` floats per unit), twice with symmetry augmentation; SHAC's actor
  keeps its activations over the whole horizon.

All in float32. ``benchmarks/memory_per_env.py --check <task>`` trains a task at two sizes for 2 iterations and
prints the measured growth of peak resident memory per env beside this estimate's (margin included); 2026-11-26 on
the 2-core EPYC: cartpole (16 and 4,112 envs) 24.6 KB measured, 33 KB estimated; quadruped (16 and 1,040 envs,
symmetry augmentation on) 252 KB measured, 283 KB estimated.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from horde.train.config import ConfigError

__all__ = ["InsufficientMemoryError", "MemoryEstimate", "TASK_MEMORY", "available_bytes", "check_fits", "check_run",
           "estimate", "out_of_memory"]


class TaskMemory(NamedTuple):
    """What one env of a task takes, measured (``benchmarks/memory_per_env.py``)."""

    cpu: int
    """Bytes per env on the CPU (peak resident memory growth, default backend)."""
    cuda: int
    """Bytes per env of device memory with a CUDA run's backend (Warp arrays and torch tensors)."""
    obs: int
    """Floats per env of every observation group (policy, critic, teacher)."""
    actions: int
    """Actions per env."""
    tape: int = 0
    """Bytes per env per control step that the differentiable simulator holds until backward (SHAC)."""


TASK_MEMORY: dict[str, TaskMemory] = {
    "ant": TaskMemory(cpu=24_584, cuda=63_544, obs=34, actions=8),
    "cartpole": TaskMemory(cpu=1_400, cuda=152, obs=5, actions=1),
    "cartpole-swingup": TaskMemory(cpu=392, cuda=152, obs=5, actions=1, tape=84),
    "g1-velocity": TaskMemory(cpu=63_984, cuda=329_714, obs=99, actions=29),
    "g1-velocity-rough": TaskMemory(cpu=97_632, cuda=24_125_622, obs=99, actions=29),
    "humanoid": TaskMemory(cpu=49_328, cuda=240_292, obs=73, actions=21),
    "lift": TaskMemory(cpu=23_240, cuda=203_814, obs=43, actions=4),
    "push": TaskMemory(cpu=42_016, cuda=203_782, obs=43, actions=4),  # the lift's world; its RSS growth is noisy
    "pendulum": TaskMemory(cpu=536, cuda=80, obs=3, actions=1, tape=28),
    # the lift's world: its CUDA figure is the lift's (no GPU lent when place was measured, 2026-12-06)
    "place": TaskMemory(cpu=18_944, cuda=203_814, obs=43, actions=4),
    "quadruped": TaskMemory(cpu=26_384, cuda=102_384, obs=48, actions=12),
    "quadruped-rough": TaskMemory(cpu=47_304, cuda=12_422_128, obs=48, actions=12),
    "quadruped-rough-depth": TaskMemory(cpu=47_416, cuda=12_438_073, obs=2491, actions=12),
    "quadruped-rough-perceptive": TaskMemory(cpu=47_360, cuda=12_424_736, obs=748, actions=12),
    "quadruped-rough-student": TaskMemory(cpu=47_152, cuda=12_424_736, obs=748, actions=12),
    "reach": TaskMemory(cpu=11_664, cuda=49_208, obs=30, actions=7, tape=116_232),
}
"""Measured 2026-11-26 on the 2-core AMD EPYC at d5713b7 (``python benchmarks/memory_per_env.py``, 16 and 528
envs, stepped 8 and 200 times; ``cpu`` is the largest of the resident-memory growth and the tensors' bytes, since
MuJoCo's C engine touches its arena's pages only as contacts need them; SHAC's ``tape`` from each differentiable
task's ``rollout.bytes_per_env_step``). The rough-terrain tasks' CUDA figures are MuJoCo-Warp's
collision buffers for about 1,200 contacts per world (its GJK/EPA arrays, allocated at the first step: 12 MB per
quadruped, 24 MB per G1): counted from the arrays' sizes, not yet seen on a GPU."""

MARGIN = 1.25
"""Factor on the per-env estimate: allocator slack, fragmentation, and what the model leaves out."""
FIXED = 256 << 20
"""Bytes a run needs whatever its size, on top of the process as it is when the guard runs (model building, kernels,
a CUDA graph)."""
ACTIVATION_FACTOR = 5
"""Floats per hidden unit and sample of a mini-batch that a training step keeps: the layer's output, its activation,
their gradients, and the optimizer's temporaries (fitted to the checks in the module docstring)."""
FLOAT = 4


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a run will need on its device (host memory for a CPU run, the GPU's memory for a CUDA run)."""

    num_envs: int
    device: str
    envs: int
    """The simulated envs."""
    learner: int
    """Rollout storage and the update's working set."""
    fixed: int = FIXED

    @property
    def per_env(self) -> float:
        """Bytes per env, margin included."""
        return (self.envs + self.learner) / max(self.num_envs, 1)

    @property
    def total(self) -> int:
        return self.fixed + self.envs + self.learner

    def fitting_envs(self, available: int) -> int:
        """The most envs that would fit in ``available`` bytes by this estimate."""
        return max(int((available - self.fixed) / max(self.per_env, 1.0)), 0)


def _gb(n: float) -> str:
    return f"{n / 1e12:.1f} TB" if n >= 1e12 else f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def _task_memory(task: str) -> TaskMemory:
    if task in TASK_MEMORY:
        return TASK_MEMORY[task]
    rows = TASK_MEMORY.values()  # a task the table does not know: the largest of every figure
    return TaskMemory(cpu=max(r.cpu for r in rows), cuda=max(r.cuda for r in rows), obs=max(r.obs for r in rows),
                      actions=max(r.actions for r in rows), tape=max(r.tape for r in rows))


def _units(policy: Any, actions: int) -> tuple[int, int]:
    """Hidden units (plus the output) of the actor and of the critic."""
    rnn = policy.rnn_hidden_dim * policy.rnn_num_layers if policy.rnn_type != "none" else 0
    return sum(policy.actor_hidden_dims) + rnn + actions, sum(policy.critic_hidden_dims) + rnn + 1


def learner_bytes_per_env(algo: Any, obs: int, actions: int, tape: int = 0) -> float:
    """Bytes per env of the learner's rollout storage and update working set (see the module docstring)."""
    from horde.train.config import DistillationConfig, PPOConfig
    from horde.train.sac_config import SACConfig
    from horde.train.shac import SHACConfig

    if isinstance(algo, SACConfig):  # the replay ring; a batch's working set is a fixed few tens of MB (in FIXED)
        return algo.buffer_length * (2 * obs + actions + 3) * FLOAT
    actor, critic = _units(algo.policy, actions)
    if isinstance(algo, SHACConfig):
        h = algo.horizon
        storage = (1 + algo.critic_replay) * h * (2 * obs + 4) * FLOAT
        graph = h * (tape + ACTIVATION_FACTOR * (actor + obs) * FLOAT)
        critic_batch = h / algo.critic_mini_batches * ACTIVATION_FACTOR * (critic + obs) * FLOAT
        return storage + graph + critic_batch
    if isinstance(algo, (PPOConfig, DistillationConfig)):
        t = algo.num_steps_per_env
        per_step = obs + 3 * actions + 6
        policy = algo.policy
        if policy.rnn_type != "none":  # hidden states of both networks stored per step (an LSTM's cell state too)
            per_step += 2 * policy.rnn_hidden_dim * policy.rnn_num_layers * (2 if policy.rnn_type == "lstm" else 1)
        storage = t * per_step * FLOAT
        batches = getattr(algo, "num_mini_batches", 1)
        augment = 2 if getattr(getattr(algo, "symmetry", None), "on", False) else 1
        batch = t / batches * augment * (per_step + ACTIVATION_FACTOR * (actor + critic)) * FLOAT
        return storage + batch
    raise TypeError(f"no memory model for {type(algo).__name__}")


def estimate(cfg: Any, task: str, *, num_envs: int | None = None, device: str | None = None,
             training: bool = True) -> MemoryEstimate:
    """Bytes a run of ``cfg`` (a :class:`horde.train.config.TrainConfig`) will need on its device; ``num_envs``
    (default ``cfg.num_envs``) are the envs of this process, ``training=False`` leaves the learner out (play,
    export)."""
    n = cfg.num_envs if num_envs is None else num_envs
    device = device or cfg.device
    m = _task_memory(task)
    per_env = m.cuda if device.startswith("cuda") else m.cpu
    learner = learner_bytes_per_env(cfg.algo, m.obs, m.actions, m.tape) if training else 0.0
    return MemoryEstimate(num_envs=n, device=device, envs=math.ceil(MARGIN * per_env * n),
                          learner=math.ceil(MARGIN * learner * n))


# --- what the machine has ------------------------------------------------------------------------------------------
def _cgroup_room() -> int | None:
    """Bytes the process's cgroup (a container, a Slurm job) still allows, or None without a limit."""
    for limit, usage in (("memory.max", "memory.current"),  # cgroup v2
                         ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):  # cgroup v1
        try:
            text = Path("/sys/fs/cgroup", limit).read_text().strip()
            if text == "max" or int(text) >= 1 << 60:
                continue
            return int(text) - int(Path("/sys/fs/cgroup", usage).read_text().strip())
        except (OSError, ValueError):
            continue
    return None


def _host_available() -> int | None:
    """Host memory available to new allocations: psutil, else ``MemAvailable`` of /proc/meminfo, else free pages."""
    value = None
    try:
        import psutil

        value = int(psutil.virtual_memory().available)
    except ImportError:
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemAvailable:"):
                    value = int(line.split()[1]) * 1024
                    break
        except (OSError, ValueError, IndexError):
            pass
        if value is None:
            try:
                value = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, AttributeError):
                return None
    room = _cgroup_room()
    return value if room is None else min(value, room)


def available_bytes(device: str) -> int | None:
    """Memory free for this run on ``device``: host memory for ``cpu``, the GPU's free memory for ``cuda[:N]``
    (``torch.cuda.mem_get_info``: only asked for a CUDA device, so a CPU run never initializes CUDA). None when it
    cannot be read."""
    if not device.startswith("cuda"):
        return _host_available()
    import torch

    try:
        index = int(device.partition(":")[2]) if ":" in device else torch.cuda.current_device()
        return int(torch.cuda.mem_get_info(index)[0])
    except (RuntimeError, ValueError, AssertionError):
        return None


class InsufficientMemoryError(ConfigError):
    """A run that will not fit in the memory its device has; one line with the estimate."""


def check_fits(est: MemoryEstimate, *, what: str = "num_envs", available: int | None = None) -> None:
    """Raise :class:`InsufficientMemoryError` when ``est`` needs more than ``available`` (default: what the device has now),
    naming the estimate, the memory available and how many envs would fit."""
    available = available_bytes(est.device) if available is None else available
    if available is None or est.total <= available:
        return
    where = "this machine has" if not est.device.startswith("cuda") else f"{est.device} has"
    fit = est.fitting_envs(available)
    hint = f"at most about {fit:,} envs fit" if fit else "not even one env fits"
    raise InsufficientMemoryError(f"{what}={est.num_envs}: needs about {_gb(est.total)} of memory (estimate: envs "
                       f"{_gb(est.envs)}, learner {_gb(est.learner)}), {where} {_gb(available)} available; "
                       f"{hint} (memory_check=false skips this check)")


def check_run(cfg: Any, task: str) -> None:
    """The memory guard of ``horde train``: refuse ``cfg`` in one line when its envs and learner will not fit (skipped
    with ``memory_check=false``). Under torchrun each rank checks its own share: on CUDA its GPU (``cuda:LOCAL_RANK``),
    on the CPU the host that all its node's ranks share."""
    if not cfg.memory_check:
        return
    world = int(os.environ.get("WORLD_SIZE", "1")) if cfg.distributed else 1
    n = max(cfg.num_envs // world, 1)
    device = cfg.device
    if device.startswith("cuda"):
        if world > 1:
            device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    else:
        n *= int(os.environ.get("LOCAL_WORLD_SIZE", str(world))) if world > 1 else 1
    check_fits(estimate(cfg, task, num_envs=n, device=device))


def out_of_memory(exc: BaseException) -> str | None:
    """One line for an allocation that failed although the guard let the run start (its estimate is a model: a
    plugin task, another process taking memory meanwhile, a CUDA figure not yet measured on that GPU), or None when
    ``exc`` is no out-of-memory error. Knows torch's ``OutOfMemoryError`` (CUDA), Warp's ``Failed to allocate``,
    and Python's ``MemoryError``."""
    import sys

    torch = sys.modules.get("torch")  # only when torch was imported: an error before that cannot be torch's
    oom = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if oom is not None and isinstance(exc, oom):
        text = ". ".join(text.split(". ")[:3])  # what failed, how much, the GPU's room; not the allocator advice
    elif not (isinstance(exc, MemoryError)
              or (isinstance(exc, RuntimeError) and text.startswith("Failed to allocate"))):
        return None
    return (f"out of memory: {text}; lower num_envs (or the update's size: algo.num_mini_batches up, "
            f"algo.num_steps_per_env down); a training run keeps its last checkpoint for resume=<run>")
