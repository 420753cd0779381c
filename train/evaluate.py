"""Deterministic evaluation: every env plays exactly one episode with the inference policy."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from horde.envs import make
from horde.envs.core import TaskConfig
from horde.policies import reset_state


@dataclass(frozen=True)
class EvalResult:
    """Per-episode figures of a deterministic evaluation."""

    returns: torch.Tensor
    """Undiscounted return of each episode, [episodes] on the CPU."""
    lengths: torch.Tensor
    """Length of each episode in control steps, [episodes] on the CPU."""

    def summary(self) -> dict[str, float]:
        """Mean and standard deviation of return and length."""
        r, n = self.returns.double(), self.lengths.double()
        return {
            "episodes": int(r.numel()),
            "mean_return": float(r.mean()),
            "std_return": float(r.std(unbiased=False)),
            "mean_episode_length": float(n.mean()),
            "std_episode_length": float(n.std(unbiased=False)),
        }


@torch.inference_mode()
def evaluate(
    policy, task: str, task_cfg: TaskConfig, *, episodes: int = 100, device: str = "cpu", seed: int = 12345,
    core=None, progress=None,
) -> EvalResult:
    """Run ``episodes`` envs in parallel for one full episode each; the policy sees raw observations.

    ``policy`` maps ``obs [N, obs_dim] -> actions [N, num_actions]``, or, when its ``is_recurrent`` is True,
    ``(obs, *state) -> (actions, *next_state)`` with ``initial_state(N, device)`` giving the episode-start state;
    the state of each env is zeroed when its episode ends (the env auto-resets inside ``step``). Any callable
    with that interface works, e.g. an onnxruntime session wrapper. Every env finishes within ``episode_length``
    steps, so the loop has a fixed length and never syncs.

    ``core`` reuses an env of ``episodes`` envs made for ``task_cfg`` (re-seeded and reset here, so the episodes
    are the same as in a fresh one): repeated evaluations skip building the env and recording its graph.
    ``progress(step, steps)`` is called after each step (it must not read device values: no sync).
    """
    if core is None:
        core = make(task, num_envs=episodes, device=device, seed=seed, config=task_cfg)
    else:
        if core.num_envs != episodes:
            raise ValueError(f"the env to reuse has {core.num_envs} envs, not {episodes}")
        core.seed(seed)
        core.reset()
    if isinstance(policy, torch.nn.Module):
        policy = policy.to(core.device)
    recurrent = bool(getattr(policy, "is_recurrent", False))
    state = policy.initial_state(episodes, core.device) if recurrent else ()
    alive = torch.ones(episodes, dtype=torch.bool, device=core.device)
    returns = torch.zeros(episodes, dtype=torch.float64, device=core.device)
    lengths = torch.zeros(episodes, dtype=torch.int64, device=core.device)
    obs = core.obs
    steps = core.max_episode_length
    for k in range(steps):
        if recurrent:
            actions, *state = policy(obs, *state)
        else:
            actions = policy(obs)
        r = core.step(actions)
        returns += r.reward.double() * alive
        lengths += alive.long()
        alive &= ~r.dones
        if recurrent:
            state = reset_state(tuple(state), r.dones)
        obs = r.obs
        if progress is not None:
            progress(k + 1, steps)
    return EvalResult(returns.cpu(), lengths.cpu())


def confidence_halfwidth(values: torch.Tensor) -> float:
    """Half-width of the 95% normal confidence interval of the mean."""
    v = values.double()
    return 1.96 * float(v.std(unbiased=True)) / math.sqrt(max(v.numel(), 1)) if v.numel() > 1 else float("inf")
