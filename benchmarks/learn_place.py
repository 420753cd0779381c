"""Train PPO on ``place`` (the lift's arm picks the cube and sets it down on a pad drawn on the table) and report
how often the cube ends resting on the pad, released.

    python benchmarks/learn_place.py [--minutes 60] [--seed 0] [--eval-every 25] [--append FILE] [--json] [--quick]
                                     [--out DIR] [override ...]
    python benchmarks/learn_place.py --replot FILE.jsonl [--out DIR]

The floor (issue 71, stated before the first run, 2026-12-06) on 2 CPU cores: within 60 minutes of training at 512
envs, the deterministic policy ends the episode with the cube resting within 3 cm of the pad's centre, down on the
table, still and released (``place.on_pad``) in at least 50% of 64 fresh envs (``on_pad_fraction``). The trivial
baseline, zero actions (the arm at rest, the cube where it was put), scores 0: the pad is drawn at least 1.5 cube
edges from the cube; it is measured on the same envs in the same run and printed beside the result. The GPU command:
``python benchmarks/learn_place.py --minutes 1 device=cuda:0 num_envs=4096``.

Every ``--eval-every`` iterations the policy's action mean drives ``--eval-envs`` fresh envs (other seeds) for one
episode (300 control steps, 6 s), judged after its next-to-last step (before the time-out resets the env); an env
whose cube leaves the table counts as missed. Also reported: the median distance of the cube to the pad in the
table's plane at the end [m]. Evaluation time is not counted. Writes ``<out>/place_learning.png`` and
``<out>/place_learning.json``; ``--append FILE`` adds the run as one JSON line (seeds over sessions).
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learn_fraction import FractionTask, main_fraction  # noqa: E402

from horde.envs import make  # noqa: E402
from horde.envs.place import on_pad  # noqa: E402

TARGET_FRACTION = 0.5
TARGET_KEY = "on_pad_fraction"


@torch.inference_mode()
def place_success(policy, task_cfg, seed: int, *, num_envs: int, device: str = "cpu") -> dict:
    """Place figures of ``policy`` over one episode of ``num_envs`` fresh envs."""
    env = make("place", num_envs=num_envs, seed=seed, config=task_cfg, device=device)
    obs = env.obs
    alive = torch.ones(num_envs, dtype=torch.bool, device=env.device)
    for _ in range(env.max_episode_length - 1):  # the last step would time out and reset every env
        r = env.step(policy(obs.clone()))
        obs = r.obs
        alive &= ~r.dones  # a cube off the table (or unstable physics) ended the episode early: a miss
    planar = torch.linalg.vector_norm((env.target - env.observation_sources()["object_pos"])[:, :2], dim=-1)
    return {TARGET_KEY: float((alive & on_pad(env)).float().mean()),
            "final_error_m": float(planar[alive].median()) if bool(alive.any()) else None,
            "off_table_fraction": float((~alive).float().mean())}


TASK = FractionTask(task="place", key=TARGET_KEY, fraction=TARGET_FRACTION, minutes=60.0, success=place_success,
                    short="on pad", state="resting within 3 cm of the pad")


def main(argv: list[str] | None = None) -> int:
    return main_fraction(argv, TASK, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
