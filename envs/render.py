"""Headless software rendering: env state -> RGB frame, numpy only (no display, no GPU, no OpenGL).

Each renderer draws one env from a per-frame host snapshot of the env's buffers; :func:`render_frame` picks the
renderer from the task's ``TaskSpec.renderer`` and tiles several envs. Classic tasks are drawn from their state; Newton tasks as an
orthographic side view of their bodies (a dot per body, a link from each body to its parent) with a camera that
follows the root.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the task modules import this one to name their renderers in their TaskSpec
    from horde.envs.ant import AntEnv
    from horde.envs.cartpole import CartpoleEnv
    from horde.envs.core import WarpTaskEnv
    from horde.envs.humanoid import HumanoidEnv
    from horde.envs.pendulum import PendulumEnv
    from horde.envs.lift import LiftEnv
    from horde.envs.velocity import VelocityEnv
    from horde.envs.reach import ReachEnv

SKY = np.array([236, 241, 247], np.uint8)
GROUND = np.array([120, 120, 120], np.uint8)
CART = np.array([52, 101, 164], np.uint8)
POLE = np.array([204, 120, 50], np.uint8)
DARK = np.array([40, 40, 40], np.uint8)


class Canvas:
    """An RGB image with world-to-pixel mapping and a few anti-alias-free primitives."""

    def __init__(self, height: int, width: int, x_range: tuple[float, float], y_range: tuple[float, float]) -> None:
        self.img = np.empty((height, width, 3), np.uint8)
        self.img[:] = SKY
        self.h, self.w = height, width
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range
        ys, xs = np.mgrid[0:height, 0:width]
        self.px = self.x0 + (xs + 0.5) / width * (self.x1 - self.x0)
        self.py = self.y1 - (ys + 0.5) / height * (self.y1 - self.y0)

    def rect(self, cx: float, cy: float, half_w: float, half_h: float, color: np.ndarray) -> None:
        self.img[(np.abs(self.px - cx) <= half_w) & (np.abs(self.py - cy) <= half_h)] = color

    def circle(self, cx: float, cy: float, r: float, color: np.ndarray) -> None:
        self.img[(self.px - cx) ** 2 + (self.py - cy) ** 2 <= r * r] = color

    def segment(self, ax: float, ay: float, bx: float, by: float, width: float, color: np.ndarray) -> None:
        dx, dy = bx - ax, by - ay
        t = np.clip(((self.px - ax) * dx + (self.py - ay) * dy) / max(dx * dx + dy * dy, 1e-12), 0.0, 1.0)
        d2 = (self.px - ax - t * dx) ** 2 + (self.py - ay - t * dy) ** 2
        self.img[d2 <= (width / 2) ** 2] = color


def draw_cartpole(env: CartpoleEnv, snap: dict, i: int, size: tuple[int, int]) -> np.ndarray:
    """One cart-pole: track, cart limits, cart, pole. ``state`` = [x, x_dot, theta, theta_dot]."""
    cfg, state = env.cfg, snap["state"][i]
    lim = cfg.cart_limit
    c = Canvas(*size, x_range=(-lim - 0.6, lim + 0.6), y_range=(-0.9, 1.6))
    c.rect(0.0, -0.15, lim + 0.6, 0.01, GROUND)
    for s in (-lim, lim):
        c.rect(s, -0.05, 0.02, 0.12, DARK)
    x, theta = float(state[0]), float(state[2])
    c.rect(x, 0.0, 0.25, 0.12, CART)
    length = 2 * cfg.pole_half_length
    c.segment(x, 0.05, x + length * np.sin(theta), 0.05 + length * np.cos(theta), 0.06, POLE)
    c.circle(x, 0.05, 0.04, DARK)
    return c.img


def draw_pendulum(env: PendulumEnv, snap: dict, i: int, size: tuple[int, int]) -> np.ndarray:
    """One pendulum: pivot and rod. ``state`` = [theta (0 = up), theta_dot]."""
    length, state = env.cfg.length, snap["state"][i]
    c = Canvas(*size, x_range=(-1.3 * length, 1.3 * length), y_range=(-1.3 * length, 1.3 * length))
    theta = float(state[0])
    c.segment(0.0, 0.0, length * np.sin(theta), length * np.cos(theta), 0.12 * length, POLE)
    c.circle(0.0, 0.0, 0.06 * length, DARK)
    return c.img


def _links(env: WarpTaskEnv) -> list[tuple[int, int]]:
    """(parent, child) body pairs of one world's articulation, from the Newton model (cached on the env)."""
    if not hasattr(env, "_render_links"):
        model, bodies = env.world.model, env.world.bodies
        joints = model.joint_count // env.num_envs
        parent, child = model.joint_parent.numpy()[:joints], model.joint_child.numpy()[:joints]
        env._render_links = [(int(p), int(c)) for p, c in zip(parent, child) if 0 <= p < bodies and 0 <= c < bodies]
    return env._render_links


def draw_bodies(env: WarpTaskEnv, snap: dict, i: int, size: tuple[int, int], *, span: float = 2.4,
                follow: bool = True, extra=None) -> np.ndarray:
    """Side view (x right, z up, y shifts depth) of a Newton env's bodies; the camera follows the root in x."""
    pos = snap["body_pose"][i, :, :3]
    depth = pos[:, 1] - pos[env.world.root_body, 1]  # y relative to the root: envs far apart in y stay in view
    u = pos[:, 0] + 0.35 * depth
    v = pos[:, 2] - snap["ground_z"][i] + 0.2 * depth
    cx = float(u[env.world.root_body]) if follow else 0.0
    c = Canvas(*size, x_range=(cx - span / 2, cx + span / 2), y_range=(-0.25, span * size[0] / size[1] - 0.25))
    c.rect(cx, -0.125, span, 0.125, np.array([205, 205, 200], np.uint8))
    for m in np.arange(np.floor(cx - span), cx + span, 0.5):  # ground ticks every 0.5 m show the motion
        c.rect(float(m), -0.02, 0.01, 0.02, DARK)
    for p, ch in _links(env):
        c.segment(float(u[p]), float(v[p]), float(u[ch]), float(v[ch]), 0.05, CART)
    for b in range(len(u)):
        c.circle(float(u[b]), float(v[b]), 0.035, POLE)
    if extra is not None:
        extra(c, i)
    return c.img


def draw_ant(env: AntEnv, snap: dict, i: int, size: tuple[int, int]) -> np.ndarray:
    """The ant from the side, the camera following its torso."""
    return draw_bodies(env, snap, i, size, span=3.0)


def draw_humanoid(env: HumanoidEnv, snap: dict, i: int, size: tuple[int, int]) -> np.ndarray:
    """The humanoid from the side (2 m of height in view), the camera following its torso; its head (a sphere on the
    torso body, 0.19 m up the torso's z axis) drawn as a disc."""
    def head(c: Canvas, k: int) -> None:
        pose = snap["body_pose"][k, env.world.root_body]
        x, y, z, w = pose[3:]
        up = np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])  # torso z axis, world
        p = pose[:3] + 0.19 * up
        depth = p[1] - pose[1]  # relative to the root, as draw_bodies projects
        c.circle(float(p[0] + 0.35 * depth), float(p[2] - snap["ground_z"][k] + 0.2 * depth), 0.09, CART)

    return draw_bodies(env, snap, i, size, span=3.0, extra=head)


def draw_legged(env: VelocityEnv, snap: dict, i: int, size: tuple[int, int]) -> np.ndarray:
    """A legged robot from the side, the camera following its base: bodies as links, a quadruped's trunk as a thick
    bar between its front and rear hips; the commanded forward speed as an arrow above the base."""
    pos = snap["body_pose"][:, :, :3]
    names = [lbl.split("/")[-1] for lbl in env.world.model.body_label[:env.world.bodies]]
    hips = [names.index(f"{leg}_hip") for leg in ("FL", "FR", "RL", "RR") if f"{leg}_hip" in names]
    tall = env.robot.root_height is not None and env.robot.root_height > 0.5

    def trunk(c: Canvas, k: int) -> None:
        p = pos[k]
        depth = p[:, 1] - p[env.world.root_body, 1]
        u, v = p[:, 0] + 0.35 * depth, p[:, 2] - snap["ground_z"][k] + 0.2 * depth
        if len(hips) == 4:
            front, rear = hips[:2], hips[2:]
            c.segment(float(u[front].mean()), float(v[front].mean()), float(u[rear].mean()),
                      float(v[rear].mean()), 0.09, DARK)
        root = env.world.root_body
        cmd = float(snap["command"][k, 0]) if "command" in snap else 0.0
        y0 = float(v[root]) + (0.6 if tall else 0.22)
        c.segment(float(u[root]), y0, float(u[root]) + 0.3 * cmd, y0, 0.02, POLE)

    return draw_bodies(env, snap, i, size, span=2.4 if tall else 1.6, extra=trunk)


def draw_reach(env: ReachEnv, snap: dict, i: int, size: tuple[int, int]) -> np.ndarray:
    """The arm from the side, with its target (red)."""
    def target(c: Canvas, k: int) -> None:
        t = snap["target"][k]
        c.circle(float(t[0] + 0.35 * t[1]), float(t[2] + 0.2 * t[1]), 0.04, np.array([200, 40, 40], np.uint8))

    return draw_bodies(env, snap, i, size, span=2.0, follow=False, extra=target)


def draw_lift(env: LiftEnv, snap: dict, i: int, size: tuple[int, int]) -> np.ndarray:
    """The arm and gripper from the side; the table top as a bar, the cube (green) and its target (red)."""
    green, red = np.array([40, 160, 60], np.uint8), np.array([200, 40, 40], np.uint8)

    def cube_and_target(c: Canvas, k: int) -> None:
        sc = env.arm.scene
        top = sc.table_height
        c.segment(sc.table_x - sc.table_half[0], top - 0.02, sc.table_x + sc.table_half[0], top - 0.02, 0.02, DARK)
        p = snap["body_pose"][k, env.world.object_body("cube"), :3]
        c.segment(float(p[0] + 0.35 * p[1]) - 0.02, float(p[2] + 0.2 * p[1]), float(p[0] + 0.35 * p[1]) + 0.02,
                  float(p[2] + 0.2 * p[1]), 0.025, green)
        t = snap["target"][k]
        c.circle(float(t[0] + 0.35 * t[1]), float(t[2] + 0.2 * t[1]), 0.02, red)

    return draw_bodies(env, snap, i, size, span=1.8, follow=False, extra=cube_and_target)


def render_frame(env: WarpTaskEnv, env_ids: list[int], *, size: tuple[int, int] = (240, 320), cols: int = 2) -> np.ndarray:
    """A grid of the given envs' current states, uint8 [H, W, 3]."""
    from horde.envs.registry import get_task

    name = getattr(env, "task_name", None)
    draw = get_task(name).renderer if name is not None else None
    if draw is None:
        raise ValueError(f"no renderer for task {name or type(env).__name__}: give its TaskSpec a renderer")
    snap = {"state": env.state.detach().cpu().numpy()}  # one device-to-host copy per buffer per frame
    if hasattr(env, "world"):
        snap["body_pose"] = env.world.body_pose.detach().cpu().numpy()
        snap["ground_z"] = env.world.spawn_origin[:, 2].detach().cpu().numpy()  # terrain height at the spawn
    if hasattr(env, "command"):
        snap["command"] = env.command.detach().cpu().numpy()
    if hasattr(env, "target"):
        snap["target"] = env.target.detach().cpu().numpy()
    tiles = [draw(env, snap, i, size) for i in env_ids]
    rows = -(-len(tiles) // cols)
    while len(tiles) < rows * cols:
        tiles.append(np.full_like(tiles[0], 255))
    grid = [np.concatenate(tiles[r * cols:(r + 1) * cols], axis=1) for r in range(rows)]
    frame = np.concatenate(grid, axis=0)
    frame[::size[0], :] = DARK  # tile borders
    frame[:, ::size[1]] = DARK
    return frame
