"""Train PPO on ``push`` (the lift's arm pushes the cube to a target on the table) and report how often the cube
ends on target.

    python benchmarks/learn_push.py [--minutes 15] [--seed 0] [--eval-every 25] [--append FILE] [--json] [--quick]
                                    [--out DIR] [override ...]
    python benchmarks/learn_push.py --replot FILE.jsonl [--out DIR]

The target, stated before the first run (2026-11-26) and measured on 2 CPU cores: within 15 minutes of training at
512 envs, the deterministic policy ends the episode with the cube within 3 cm of its target (``push.on_target``) in
at least 50% of 64 fresh envs (``on_target_fraction``). The trivial baseline, zero actions (the arm at rest, the
cube where it was put), scores the share of targets drawn within 3 cm of the cube's spot (targets are up to 10 cm
away in x and y: about 7%); it is measured on the same envs in the same run and printed beside the result. The GPU
command: ``python benchmarks/learn_push.py --minutes 15 device=cuda:0 num_envs=4096``.

Every ``--eval-every`` iterations the policy's action mean drives ``--eval-envs`` fresh envs (other seeds) for one
episode (250 control steps, 5 s); an env whose cube leaves the table counts as missed. Also reported: the median
distance of the cube to its target at the episode's end [m]. Evaluation time is not counted. Writes
``<out>/push_learning.png`` and ``<out>/push_learning.json``; ``--append FILE`` adds the run as one JSON line (seeds
over sessions).
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learn_fraction import FractionTask, main_fraction  # noqa: E402

from horde.envs import make  # noqa: E402
from horde.envs.push import PUSHED  # noqa: E402

TARGET_FRACTION = 0.5
TARGET_KEY = "on_target_fraction"


@torch.inference_mode()
def push_success(policy, task_cfg, seed: int, *, num_envs: int, device: str = "cpu") -> dict:
    """Push figures of ``policy`` over one episode of ``num_envs`` fresh envs."""
    env = make("push", num_envs=num_envs, seed=seed, config=task_cfg, device=device)
    obs = env.obs
    alive = torch.ones(num_envs, dtype=torch.bool, device=env.device)
    error = torch.full((num_envs,), float("inf"), device=env.device)
    for _ in range(env.max_episode_length):
        cube_before = env.observation_sources()["object_pos"].clone()
        target_before = env.target.clone()
        r = env.step(policy(obs.clone()))
        obs = r.obs
        ended = alive & r.dones
        # an episode that ends reset its env: judge it on the state before the reset (a time-out ends on target or
        # not; a cube off the table is a miss)
        last_error = torch.linalg.vector_norm((target_before - cube_before)[:, :2], dim=-1)
        error = torch.where(ended, torch.where(r.truncated, last_error, torch.full_like(error, float("inf"))),
                            error)
        alive &= ~r.dones
        if not bool(alive.any()):
            break
    ended = ~alive
    finite = error[torch.isfinite(error)]
    return {TARGET_KEY: float((ended & (error < PUSHED)).float().mean()),
            "final_error_m": float(finite.median()) if finite.numel() else None,
            "off_table_fraction": float((ended & ~torch.isfinite(error)).float().mean())}


TASK = FractionTask(task="push", key=TARGET_KEY, fraction=TARGET_FRACTION, minutes=15.0, success=push_success,
                    short="on target", state="within 3 cm of its target")


def main(argv: list[str] | None = None) -> int:
    return main_fraction(argv, TASK, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
