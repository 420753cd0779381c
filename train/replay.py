"""The off-policy learner's memory: a replay ring of every env's transitions on the env's device, n-step targets
gathered from it, and the running scale of the discounted return that normalizes rewards.

Layout: each field is preallocated as ``[length, num_envs, ...]`` (time-major: one vector step fills one
contiguous column of every field, ``buf[pos] = x``, a device copy with no host sync and no per-env loop). Every env
writes at the same position, so the write position and the fill level are two Python integers that advance once
per vector step: sampling draws an env and a filled slot uniformly, and the slots after a sampled one in the same
env are that env's next steps (modulo ``length``) until the newest one.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ReplayRing", "ReturnScale", "nstep_returns"]


def nstep_returns(rewards: torch.Tensor, dones: torch.Tensor, terminated: torch.Tensor, valid: torch.Tensor,
                  gamma: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """n-step returns of windows that start at a sampled step: ``(returns [B], last [B], discount [B])``.

    Inputs are ``[B, n]``, column j the step j after the window's start: rewards, ``dones`` (the episode ended at
    that step: a termination or a time-out), ``terminated`` (it ended by failure) and ``valid`` (the step is in the
    buffer: written, not overwritten; a prefix of each row). A window stops at its first end or its last valid
    step, after ``k = last + 1`` steps: ``returns = sum_{j<k} gamma^j r_j`` and the target is
    ``returns + discount * Q(next_obs[last], .)`` with ``discount = gamma^k``, or 0 when step ``last`` terminated.
    A time-out keeps its discount: the target bootstraps from the episode's pre-reset observation there.
    """
    n = rewards.shape[1]
    ended = dones.to(rewards.dtype)
    ended_before = torch.cumsum(ended, dim=1) - ended  # ends strictly before column j
    used = valid & (ended_before == 0)
    powers = gamma ** torch.arange(n, device=rewards.device, dtype=rewards.dtype)
    returns = (rewards * powers * used).sum(1)
    k = used.sum(1)
    last = k - 1
    failed = terminated.gather(1, last[:, None]).squeeze(1)
    discount = torch.where(failed, 0.0, gamma ** k.to(rewards.dtype))
    return returns, last, discount


class ReplayRing:
    """``length`` transitions of each of ``num_envs`` envs, time-major ``[length, num_envs, ...]`` on ``device``.

    A transition is ``(obs, action, reward, terminated, truncated, next_obs)`` with ``next_obs`` the observation
    the step reached before any automatic reset (the env core's ``final_obs`` where the episode ended)."""

    FIELDS = ("obs", "actions", "rewards", "terminated", "truncated", "next_obs")

    def __init__(self, num_envs: int, length: int, obs_dim: int, num_actions: int, device: torch.device | str) -> None:
        if num_envs < 1 or length < 1:
            raise ValueError(f"a replay ring needs num_envs >= 1 and length >= 1, got {num_envs} and {length}")
        self.num_envs, self.length = int(num_envs), int(length)
        shape = (self.length, self.num_envs)
        self.obs = torch.zeros(*shape, obs_dim, device=device)
        """Observations acted on, [length, num_envs, obs_dim]."""
        self.actions = torch.zeros(*shape, num_actions, device=device)
        """Actions taken, in [-1, 1], [length, num_envs, num_actions]."""
        self.rewards = torch.zeros(*shape, device=device)
        """Rewards in the task's units, [length, num_envs]."""
        self.terminated = torch.zeros(*shape, dtype=torch.bool, device=device)
        """The step ended its episode by a failure, [length, num_envs]."""
        self.truncated = torch.zeros(*shape, dtype=torch.bool, device=device)
        """The step ended its episode by the time limit only, [length, num_envs]."""
        self.next_obs = torch.zeros(*shape, obs_dim, device=device)
        """Observation the step reached, before an automatic reset, [length, num_envs, obs_dim]."""
        self.pos = 0
        """The column the next vector step writes."""
        self.count = 0
        """Vector steps written since the ring was made (the ring holds the last ``length`` of them)."""

    @property
    def size(self) -> int:
        """Filled columns."""
        return min(self.count, self.length)

    def add(self, obs: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor, terminated: torch.Tensor,
            truncated: torch.Tensor, next_obs: torch.Tensor) -> None:
        """One vector step of every env (``[num_envs, ...]`` each) into column ``pos``: device copies only."""
        p = self.pos
        self.obs[p].copy_(obs)
        self.actions[p].copy_(actions)
        self.rewards[p].copy_(rewards)
        self.terminated[p].copy_(terminated)
        self.truncated[p].copy_(truncated)
        self.next_obs[p].copy_(next_obs)
        self.pos = (p + 1) % self.length
        self.count += 1

    def sample_slots(self, batch: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``(column [B], env [B])`` drawn uniformly over the filled slots."""
        if self.count == 0:
            raise RuntimeError("the replay ring is empty")
        dev = self.obs.device
        col = torch.randint(0, self.size, (batch,), generator=generator, device=dev)
        env = torch.randint(0, self.num_envs, (batch,), generator=generator, device=dev)
        return col, env

    def window(self, col: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Columns of the ``n`` steps from each sampled column on, in the env's order (``[B, n]``, wrapping around
        the ring), and which of them are written steps of the same env history (``valid``, ``[B, n]``): a window
        stops at the newest column."""
        offsets = torch.arange(n, device=col.device)
        cols = (col[:, None] + offsets) % self.length
        newer = (self.pos - 1 - col) % self.length  # steps written after the sampled one
        return cols, offsets[None, :] <= newer[:, None]

    def sample(self, batch: int, n: int, gamma: float, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """A uniform batch of n-step transitions: ``obs`` [B, obs_dim], ``actions`` [B, A], ``returns`` [B] (task
        units), ``discount`` [B] (:func:`nstep_returns`) and ``next_obs`` [B, obs_dim] to bootstrap from."""
        col, env = self.sample_slots(batch, generator)
        return self.gather(col, env, n, gamma)

    def gather(self, col: torch.Tensor, env: torch.Tensor, n: int, gamma: float) -> dict[str, torch.Tensor]:
        """The n-step transitions that start at slots ``(col, env)`` (see :meth:`sample`)."""
        cols, valid = self.window(col, n)
        flat = cols * self.num_envs + env[:, None]  # [B, n] into the [length * num_envs] views
        rewards = self.rewards.view(-1)[flat]
        terminated = self.terminated.view(-1)[flat]
        dones = terminated | self.truncated.view(-1)[flat]
        returns, last, discount = nstep_returns(rewards, dones, terminated, valid, gamma)
        start = col * self.num_envs + env
        end = flat.gather(1, last[:, None]).squeeze(1)
        d = self.obs.shape[-1]
        return {"obs": self.obs.view(-1, d)[start], "actions": self.actions.view(-1, self.actions.shape[-1])[start],
                "returns": returns, "discount": discount, "next_obs": self.next_obs.view(-1, d)[end]}

    def state_dict(self) -> dict:
        """The filled part of every field and the two counters (for an exact resume)."""
        filled = self.size
        return {"pos": self.pos, "count": self.count, "length": self.length, "num_envs": self.num_envs,
                **{k: getattr(self, k)[:filled].cpu() for k in self.FIELDS}}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` into a ring of the same shape."""
        if (state["length"], state["num_envs"]) != (self.length, self.num_envs):
            raise ValueError(f"saved replay ring is {state['length']} x {state['num_envs']} (length x envs), this one "
                             f"{self.length} x {self.num_envs}")
        self.pos, self.count = int(state["pos"]), int(state["count"])
        for k in self.FIELDS:
            saved = state[k]
            getattr(self, k)[:saved.shape[0]].copy_(saved)


class ReturnScale(nn.Module):
    """The factor that divides rewards (FastTD3's and FlashSAC's reward normalization): per env the running
    discounted return ``G <- gamma * G + r`` (zeroed after an episode end), its variance over every env and step so
    far, and the largest ``|G|`` seen; ``scale = 1 / max(std(G), max|G| / return_max)``, so normalized returns stay
    within ``+-return_max`` and fit the critic's fixed support. Buffers only: its state dict is the checkpoint's."""

    def __init__(self, num_envs: int, gamma: float, return_max: float, device: torch.device | str) -> None:
        super().__init__()
        self.gamma, self.return_max = float(gamma), float(return_max)
        self.register_buffer("returns", torch.zeros(num_envs, device=device))
        # float64: the count passes float32's 2^24 integers after a few thousand steps of thousands of envs
        self.register_buffer("mean", torch.zeros((), dtype=torch.float64, device=device))
        self.register_buffer("var", torch.zeros((), dtype=torch.float64, device=device))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64, device=device))
        self.register_buffer("abs_max", torch.zeros((), device=device))

    @torch.no_grad()
    def update(self, rewards: torch.Tensor, dones: torch.Tensor) -> None:
        """One vector step's rewards [N] and episode ends [N] (no host sync)."""
        g = self.returns.mul_(self.gamma).add_(rewards)
        n = float(g.numel())
        mean_b, var_b = g.mean().double(), g.var(unbiased=False).double()
        total = self.count + n
        delta = mean_b - self.mean
        self.var.copy_((self.var * self.count + var_b * n + delta.square() * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)
        torch.maximum(self.abs_max, g.abs().max(), out=self.abs_max)
        g.mul_(~dones)

    def scale(self) -> torch.Tensor:
        """The factor on rewards (a device scalar)."""
        return 1.0 / torch.maximum(torch.sqrt(self.var + 1e-8).float(), self.abs_max / self.return_max)
