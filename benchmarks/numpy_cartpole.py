"""A plain numpy batched cart-pole: the in-process reference for horde's throughput figures.

Same dynamics, substeps, reward terms, failure and time-out rules, auto-reset and float32 precision as
``horde.envs.cartpole``, written the way one would in numpy (one vectorized op per line, no Python loop over envs).
"""

from __future__ import annotations

import numpy as np

from horde.envs.cartpole import CartpoleConfig


class NumpyCartpole:
    """Batched cart-pole on numpy arrays."""

    def __init__(self, cfg: CartpoleConfig, num_envs: int, seed: int = 0) -> None:
        self.cfg, self.n = cfg, num_envs
        self.rng = np.random.default_rng(seed)
        self.state = np.zeros((num_envs, 4), dtype=np.float32)
        self.length = np.zeros(num_envs, dtype=np.int32)
        self.scales = np.array(list(cfg.reward_scales.values()), dtype=np.float32)
        self.episode_sums = np.zeros((num_envs, len(self.scales)), dtype=np.float32)
        self._sample(np.ones(num_envs, dtype=bool))

    def _sample(self, mask: np.ndarray) -> None:
        c, k = self.cfg, int(mask.sum())
        lo = np.array([-c.init_cart_pos_range, -c.init_vel_range, c.init_pole_angle - c.init_pole_angle_range,
                       -c.init_vel_range], dtype=np.float32)
        hi = np.array([c.init_cart_pos_range, c.init_vel_range, c.init_pole_angle + c.init_pole_angle_range,
                       c.init_vel_range], dtype=np.float32)
        self.state[mask] = self.rng.uniform(lo, hi, size=(k, 4)).astype(np.float32)

    def obs(self) -> np.ndarray:
        x, xd, th, thd = self.state.T
        return np.stack([x, xd, np.cos(th), np.sin(th), thd], axis=1)

    def step(self, actions: np.ndarray):
        c = self.cfg
        a = np.clip(actions[:, 0], -1.0, 1.0)
        force = a * np.float32(c.max_force)
        x, xd, th, thd = (self.state[:, j].copy() for j in range(4))
        total, pml = c.cart_mass + c.pole_mass, c.pole_mass * c.pole_half_length
        for _ in range(c.decimation):
            s, co = np.sin(th), np.cos(th)
            temp = (force + pml * thd * thd * s) / total
            th_acc = (c.gravity * s - co * temp) / (c.pole_half_length * (4.0 / 3.0 - c.pole_mass * co * co / total))
            x_acc = temp - pml * th_acc * co / total
            xd = xd + c.sim_dt * x_acc
            thd = thd + c.sim_dt * th_acc
            x = x + c.sim_dt * xd
            th = th + c.sim_dt * thd
        angle = np.arctan2(np.sin(th), np.cos(th))
        failed = (np.abs(x) > c.cart_limit) | ((c.pole_limit > 0) & (np.abs(angle) > c.pole_limit))
        fail = failed.astype(np.float32)
        terms = np.stack([1.0 - fail, 0.5 * (np.cos(angle) + 1.0), angle * angle, x * x, xd * xd, thd * thd,
                          a * a, fail], axis=1)
        scaled = terms * self.scales
        reward = scaled.sum(axis=1)
        self.episode_sums += scaled
        self.length += 1
        truncated = (self.length >= c.episode_length) & ~failed
        dones = failed | truncated
        self.state[:] = np.stack([x, xd, th, thd], axis=1)
        if dones.any():
            self._sample(dones)
            self.length[dones] = 0
            self.episode_sums[dones] = 0.0
        return self.obs(), reward, failed, truncated
