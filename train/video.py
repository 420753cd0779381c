"""``horde play run=<dir> video=true``: an mp4 of the deterministic policy in a few envs, rendered headless.

Newton tasks are ray-traced in 3D by Newton's ``SensorCamera`` (:mod:`horde.sim.camera`, a chase camera per env);
``render=2d`` draws them as the older stick-figure side view (:mod:`horde.envs.render`), which the classic tasks
always use."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from horde.sim.files import atomic_path


RENDER_MODES = ("3d", "2d")


def has_3d_scene(core) -> bool:
    """True for a task whose world is a Newton model (it can be ray-traced and shown in Newton's viewers)."""
    return getattr(getattr(core, "world", None), "model", None) is not None


@torch.inference_mode()
def record_video(run: str | Path, *, envs: int = 4, episodes: int | None = None, steps: int | None = None,
                 out: str | Path | None = None, seed: int = 2024, render: str = "3d",
                 progress: Callable[[int, int, int], None] | None = None,
                 commands: tuple[str, ...] = ()) -> tuple[Path, int]:
    """Render ``envs`` envs at the control rate until every one of them has ended ``episodes`` episodes, or for
    ``steps`` control steps, whichever comes first (neither given: one episode each).

    Returns the mp4's path and its frame count (control steps + 1). Software rendering: no display and no GPU
    needed. ``render``: ``3d`` ray-traces Newton tasks with a chase camera per env; ``2d`` draws the side view.
    ``progress(frames, most_frames, ended)`` is called after every frame (``ended``: the fewest episodes any env has
    ended), and once more at the end with ``most_frames == frames``.

    ``commands`` (velocity tasks): command sets of :mod:`horde.train.command_sets`; env ``k`` holds the middle
    command of set ``k`` (cycled over the sets) for the whole video, as ``play commands=`` evaluates them (no
    curricula, the floors' pushes when the run trained with randomization).
    """
    import imageio.v2 as imageio

    from horde.train.checkpoint import load_policy
    from horde.envs import make
    from horde.envs.render import render_frame

    if render not in RENDER_MODES:
        raise ValueError(f"render={render}: not a valid choice; valid choices: {', '.join(RENDER_MODES)}")
    policy, ckpt, cfg, path = load_policy(run)
    task_cfg, held = cfg.task, None
    if commands:
        from horde.train.command_sets import FLOOR_PUSHES, command_set, eval_config, hold_command

        if not hasattr(task_cfg, "command_vx"):
            raise ValueError(f"commands= plays velocity tasks (a commanded base velocity); {ckpt['task']} has none")
        task_cfg = eval_config(task_cfg, FLOOR_PUSHES if task_cfg.randomization.enabled else None)
        middle = {name: command_set(name, 8)[3] for name in commands}  # a middling magnitude of each set
        held = torch.stack([middle[commands[k % len(commands)]] for k in range(envs)])
    core = make(ckpt["task"], num_envs=envs, device="cpu", seed=seed, config=task_cfg)
    if held is not None:
        hold_command(core, held)
    ids = list(range(envs))
    if render == "3d" and has_3d_scene(core):
        from horde.sim.camera import chase_camera, robot_centres, tile

        camera = chase_camera(core.world, ids)

        def draw() -> np.ndarray:
            return tile(camera.render(core.world.state_0, robot_centres(core.world)[ids]), columns=min(envs, 4))
    else:
        def draw() -> np.ndarray:
            return render_frame(core, ids)

    if episodes is None and steps is None:
        episodes = 1
    # every env ends an episode within max_episode_length steps, so `episodes` of them end within this many
    limit = min(n for n in (steps, episodes * core.max_episode_length if episodes else None) if n)
    fps = max(1, round(1.0 / core.cfg.control_dt))
    out = Path(out) if out else path.parent / "videos" / f"{ckpt['task']}_{path.stem}.mp4"
    with atomic_path(out) as tmp:  # a video cut short (Ctrl-C, a full disk) never replaces a whole one
        frames, ended = _record(imageio, tmp, fps, draw, core, policy, limit, envs, episodes, progress, held)
    if progress:
        progress(frames, frames, int(ended.min()))
    return out, frames


def _record(imageio, out: Path, fps: int, draw, core, policy, limit: int, envs: int, episodes, progress,
            held: torch.Tensor | None = None):
    """Step and draw into an mp4 at ``out``; (frames written, episodes ended per env). ``held``: commands
    restored after every step (an env that fell and reset draws a new one)."""
    if held is not None:
        from horde.train.command_sets import hold_command
    writer = imageio.get_writer(str(out), fps=fps, codec="libx264", quality=7, macro_block_size=16,
                                ffmpeg_log_level="error")
    frames, ended = 0, torch.zeros(envs, dtype=torch.long)
    try:
        writer.append_data(draw())
        frames += 1
        obs = core.obs
        for _ in range(limit):
            result = core.step(policy(obs))
            if held is not None:
                hold_command(core, held)
            obs = result.obs
            ended += result.dones.to("cpu", torch.long)
            writer.append_data(draw())
            frames += 1
            if episodes and int(ended.min()) >= episodes:
                break
            if progress:
                progress(frames, limit + 1, int(ended.min()))
    finally:
        writer.close()
    return frames, ended


def first_frame(path: str | Path) -> np.ndarray:
    """The first frame of a video file, uint8 [H, W, 3]."""
    import imageio.v2 as imageio

    reader = imageio.get_reader(str(path))
    try:
        return reader.get_data(0)
    finally:
        reader.close()
