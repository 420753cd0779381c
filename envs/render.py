"""Headless software rendering of the classic-control tasks: state -> RGB frame, numpy only (no display, no GPU).

Each renderer draws one env's state; :func:`render_frame` picks the renderer by env class and tiles several envs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from horde.envs.cartpole import CartpoleEnv
from horde.envs.core import WarpTaskEnv
from horde.envs.pendulum import PendulumEnv

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


def draw_cartpole(state: np.ndarray, env: CartpoleEnv, size: tuple[int, int]) -> np.ndarray:
    """One cart-pole: track, cart limits, cart, pole. ``state`` = [x, x_dot, theta, theta_dot]."""
    cfg = env.cfg
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


def draw_pendulum(state: np.ndarray, env: PendulumEnv, size: tuple[int, int]) -> np.ndarray:
    """One pendulum: pivot and rod. ``state`` = [theta (0 = up), theta_dot]."""
    length = env.cfg.length
    c = Canvas(*size, x_range=(-1.3 * length, 1.3 * length), y_range=(-1.3 * length, 1.3 * length))
    theta = float(state[0])
    c.segment(0.0, 0.0, length * np.sin(theta), length * np.cos(theta), 0.12 * length, POLE)
    c.circle(0.0, 0.0, 0.06 * length, DARK)
    return c.img


RENDERERS: dict[type, Callable[[np.ndarray, WarpTaskEnv, tuple[int, int]], np.ndarray]] = {
    CartpoleEnv: draw_cartpole,
    PendulumEnv: draw_pendulum,
}
"""Renderer per env class; tasks added by other code can register theirs here."""


def render_frame(env: WarpTaskEnv, env_ids: list[int], *, size: tuple[int, int] = (240, 320), cols: int = 2) -> np.ndarray:
    """A grid of the given envs' current states, uint8 [H, W, 3]."""
    draw = next((fn for cls, fn in RENDERERS.items() if isinstance(env, cls)), None)
    if draw is None:
        raise ValueError(f"no renderer for {type(env).__name__}; add one to horde.envs.render.RENDERERS")
    states = env.state.detach().cpu().numpy()
    tiles = [draw(states[i], env, size) for i in env_ids]
    rows = -(-len(tiles) // cols)
    while len(tiles) < rows * cols:
        tiles.append(np.full_like(tiles[0], 255))
    grid = [np.concatenate(tiles[r * cols:(r + 1) * cols], axis=1) for r in range(rows)]
    frame = np.concatenate(grid, axis=0)
    frame[::size[0], :] = DARK  # tile borders
    frame[:, ::size[1]] = DARK
    return frame
