"""``horde play run=<dir> viewer=rerun|usd|file|viser``: a policy's rollout in Newton's 3D viewers, headless.

Every viewer records to a file by default (no display, no GPU, no open port except viser's local server):

| viewer | file | open it with | needs |
|---|---|---|---|
| ``rerun`` | ``.rrd`` | ``rerun <file>`` (or app.rerun.io) | ``rerun-sdk`` |
| ``usd`` | ``.usda`` | usdview, Omniverse, Blender | ``usd-core`` |
| ``file`` | ``.json`` or ``.bin`` | Newton's replay example (``python -m newton.examples replay``) | (``cbor2`` for .bin) |
| ``viser`` | ``.viser`` | viser's playback, or ``serve=true`` live in a browser | ``viser`` |

``serve=true`` (rerun, viser) keeps a web viewer up after the rollout until Ctrl-C.

Newton 1.8's ``ViewerRerun(record_to_rrd=...)`` loses every frame when it also serves or spawns a viewer: that
opens a gRPC sink which replaces the file sink. Here the viewer is built without a live sink (recording only) or
the file sink is attached again after construction (``serve=true``); ``tests/integration/test_viewers.py`` counts the
frames in the file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

VIEWERS = ("rerun", "usd", "file", "viser")
"""The viewers ``viewer=`` takes."""
SUFFIX = {"rerun": ".rrd", "usd": ".usda", "file": ".json", "viser": ".viser"}
PACKAGES = {"rerun": ("rerun", "rerun-sdk"), "usd": ("pxr", "usd-core"), "viser": ("viser", "viser")}


class ViewerError(ValueError):
    """A viewer that cannot be used here (unknown name, a classic task, a missing package); one line."""


def _require(viewer: str) -> None:
    import importlib.util

    if viewer not in VIEWERS:
        raise ViewerError(f"viewer={viewer}: not a valid choice; valid choices: {', '.join(VIEWERS)}")
    module, package = PACKAGES.get(viewer, (None, None))
    if module and importlib.util.find_spec(module) is None:
        raise ViewerError(f"viewer={viewer} needs {package}: pip install '{package}' (or horde[viewers])")


def open_viewer(viewer: str, out: Path, *, fps: int, frames: int, serve: bool = False, port: int = 0):
    """Newton's viewer ``viewer`` recording to ``out``; ``serve`` also serves it on ``port`` (rerun, viser)."""
    import newton.viewer as nv

    _require(viewer)
    if viewer == "file":
        return nv.ViewerFile(str(out))
    if viewer == "usd":
        return nv.ViewerUSD(output_path=str(out), fps=fps, up_axis="Z", num_frames=frames)
    if viewer == "viser":
        return nv.ViewerViser(host="127.0.0.1", port=port or 8080, record_to_viser=str(out), verbose=serve)
    import rerun as rr

    if serve:
        v = nv.ViewerRerun(serve_web_viewer=True, web_port=port or 9090, grpc_port=(port or 9090) + 1,
                           keep_historical_data=True, record_to_rrd=str(out))
    else:
        from unittest import mock

        import newton._src.viewer.viewer_rerun as viewer_rerun

        # Built as in a notebook, the viewer opens no gRPC server and spawns no viewer process: the file sink
        # stays the only sink.
        with mock.patch.object(viewer_rerun, "is_jupyter_notebook", lambda: True):
            v = nv.ViewerRerun(keep_historical_data=True, record_to_rrd=str(out))
    rr.save(str(out), default_blueprint=v._get_blueprint())  # the sink serving replaced, attached again
    return v


def _spread_worlds(viewer, world) -> None:
    """Worlds that all start at the same place (flat ground, fixed-base arms) are laid out on a grid; worlds on
    terrain tiles are already apart."""
    from horde.sim.camera import robot_extent

    origins = world.spawn_origin.detach().cpu().numpy()
    if np.ptp(origins[:, :2], axis=0).max() < 1e-6:
        spacing = max(2.0, 3.0 * robot_extent(world))
        viewer.set_world_offsets((spacing, spacing, 0.0))


@torch.inference_mode()
def record_3d(run: str | Path, *, viewer: str, envs: int = 4, steps: int | None = None,
              out: str | Path | None = None, seed: int = 2024, serve: bool = False, port: int = 0,
              progress: Callable[[int, int], None] | None = None) -> tuple[Path, int]:
    """Roll out the deterministic policy of ``run`` in ``envs`` envs for ``steps`` control steps (default: one
    episode) and record it with ``viewer``; returns the file and the number of frames (steps + 1)."""
    from horde.train.checkpoint import load_policy
    from horde.envs import make
    from horde.train.video import has_3d_scene

    _require(viewer)
    policy, ckpt, cfg, path = load_policy(run)
    core = make(ckpt["task"], num_envs=envs, device="cpu", seed=seed, config=cfg.task)
    if not has_3d_scene(core):
        raise ViewerError(f"viewer= shows Newton tasks; {ckpt['task']} has no 3D scene (use video=true)")
    world = core.world
    steps = steps or core.max_episode_length
    dt = core.cfg.control_dt
    out = Path(out) if out else path.parent / "viewer" / f"{ckpt['task']}_{path.stem}{SUFFIX[viewer]}"
    out.parent.mkdir(parents=True, exist_ok=True)
    v = open_viewer(viewer, out, fps=max(1, round(1.0 / dt)), frames=steps + 1, serve=serve, port=port)
    frames = 0
    try:
        v.set_model(world.model)
        _spread_worlds(v, world)
        obs = core.obs
        for k in range(steps + 1):
            v.begin_frame(k * dt)
            v.log_state(world.state_0)
            v.end_frame()
            frames += 1
            if progress:
                progress(frames, steps + 1)
            if k < steps:
                obs = core.step(policy(obs)).obs
        if serve:
            print(f"serving {viewer} on 127.0.0.1 (port {port or (9090 if viewer == 'rerun' else 8080)}); "
                  "Ctrl-C to stop", flush=True)
            while v.is_running():
                time.sleep(0.5)
    finally:
        v.close()
    return out, frames
