"""Regenerate the 3D frames in docs/: the G1 and the rough-terrain quadruped, ray-traced by Newton's SensorCamera.

    .venv/bin/python docs/make_frames.py [--out docs/img]

The robots hold their default pose under PD (zero actions) for half a second after reset; the quadruped's envs
start on higher terrain levels so that slopes, stairs and bumps show. Runs on the CPU in about a minute.
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import torch

from horde.envs import get_task, make
from horde.sim.camera import chase_camera, robot_centres, tile


def frame(task: str, *, envs: int, start_level: int | None = None, steps: int = 25, **camera) -> np.ndarray:
    cfg = copy.deepcopy(get_task(task).config)
    if start_level is not None:
        cfg.terrain.start_level = start_level
    core = make(task, num_envs=envs, device="cpu", seed=3, config=cfg)
    with torch.inference_mode():
        for _ in range(steps):
            core.step(torch.zeros(envs, core.num_actions))
    cam = chase_camera(core.world, list(range(envs)), width=480, height=360, **camera)
    return tile(cam.render(core.world.state_0, robot_centres(core.world)), columns=envs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "img"))
    out = Path(ap.parse_args().out)
    imageio.imwrite(out / "g1_3d.png", frame("g1-velocity", envs=2, azimuth=-2.4))
    imageio.imwrite(out / "quadruped_rough_3d.png", frame("quadruped-rough", envs=3, start_level=4, elevation=0.6))
    print(f"wrote {out / 'g1_3d.png'} and {out / 'quadruped_rough_3d.png'}")


if __name__ == "__main__":
    main()
