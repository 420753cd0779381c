"""``horde play run=<dir> video=true``: an mp4 of the deterministic policy in a few envs, rendered headless."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch


@torch.inference_mode()
def record_video(run: str | Path, *, envs: int = 4, steps: int | None = None, out: str | Path | None = None,
                 seed: int = 2024) -> tuple[Path, int]:
    """Render ``envs`` envs for ``steps`` control steps (default: one episode) at the control rate.

    Returns the mp4's path and its frame count. Software rendering: no display and no GPU needed.
    """
    import imageio.v2 as imageio

    from horde.deploy import load_policy
    from horde.envs import make
    from horde.envs.render import render_frame

    policy, ckpt, cfg, path = load_policy(run)
    core = make(ckpt["task"], num_envs=envs, device="cpu", seed=seed, config=cfg.task)
    steps = steps or core.max_episode_length
    fps = max(1, round(1.0 / core.cfg.control_dt))
    out = Path(out) if out else path.parent / "videos" / f"{ckpt['task']}_{path.stem}.mp4"
    out.parent.mkdir(parents=True, exist_ok=True)
    ids = list(range(envs))
    writer = imageio.get_writer(str(out), fps=fps, codec="libx264", quality=7, macro_block_size=16,
                                ffmpeg_log_level="error")
    frames = 0
    try:
        writer.append_data(render_frame(core, ids))
        frames += 1
        obs = core.obs
        for _ in range(steps):
            obs = core.step(policy(obs)).obs
            writer.append_data(render_frame(core, ids))
            frames += 1
    finally:
        writer.close()
    return out, frames


def first_frame(path: str | Path) -> np.ndarray:
    """The first frame of a video file, uint8 [H, W, 3]."""
    import imageio.v2 as imageio

    reader = imageio.get_reader(str(path))
    try:
        return reader.get_data(0)
    finally:
        reader.close()
