"""Terrain for legged tasks: a flat plane, or a grid of rough heightfield tiles with a difficulty curriculum.

The rough terrain is one static heightfield shared by every world (worlds never collide with each other, so envs
can stand on the same tile). Rows of tiles are difficulty levels (0 = easiest), columns are terrain types:

* ``noise``: uniform random bumps;
* ``slope_up``: a pyramid, the tile centre highest;
* ``slope_down``: an inverted pyramid, the tile centre lowest;
* ``stairs``: pyramid stairs up towards the centre.

Each env owns a column (its type, fixed) and a row (its level, moved by :func:`terrain_level_update` at every
episode end: up after walking out of the tile's inner half, down after covering less than half of the commanded
distance). Envs spawn at their tile's centre, given by :attr:`Terrain.origins`. A plane at z=0 surrounds the
field. Heights are generated from a fixed seed with numpy, once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import warp as wp

from horde.sim.fields import bounded, bounded_list, choice

__all__ = ["KINDS", "TERRAIN_TYPES", "HeightScanConfig", "Terrain", "TerrainConfig", "TerrainGrid", "height_scan",
           "scan_offsets", "terrain_height", "terrain_level_update"]

KINDS = ("flat", "rough")
TERRAIN_TYPES = ("noise", "slope_up", "slope_down", "stairs")


@dataclass(kw_only=True)
class TerrainConfig:
    """Terrain of a legged task (``task.terrain.<field>=...`` on the command line)."""

    kind: str = choice(KINDS)
    """flat (a ground plane) or rough (heightfield tiles with a curriculum)."""
    tile_size: float = bounded(8.0, gt=0)
    """Side of one square tile [m]."""
    num_levels: int = bounded(6, ge=1)
    """Difficulty levels (rows of tiles)."""
    resolution: float = bounded(0.1, gt=0)
    """Heightfield grid spacing [m]."""
    max_noise: float = bounded(0.08, ge=0)
    """Bump height of the noise tiles at the hardest level [m]."""
    max_slope: float = bounded(0.35, ge=0)
    """Rise over run of the slope tiles at the hardest level."""
    max_step: float = bounded(0.14, ge=0)
    """Step height of the stair tiles at the hardest level [m]."""
    step_width: float = bounded(0.35, gt=0)
    """Tread of one stair [m]."""
    curriculum: bool = True
    """Move envs between levels by how far they walked; False spreads envs over all levels at random."""
    start_level: int = bounded(0, ge=0)
    """Highest level an env starts on (levels are drawn in 0..start_level)."""
    seed: int = bounded(0, ge=0)
    """Seed of the heightfield's random bumps (the terrain is the same for every run with this seed)."""


@dataclass(kw_only=True)
class HeightScanConfig:
    """A grid of terrain heights around the base, as legged_gym and Isaac Lab's perceptive policies see it
    (``task.height_scan.<field>=...``)."""

    enabled: bool = False
    """Append the scan to the observations (and to the exported policy's inputs)."""
    size: list[float] = bounded_list([1.6, 1.0], ge=0, same_length=True)
    """Extent of the grid along the base's forward and left axes [m], centred on the base."""
    resolution: float = bounded(0.1, gt=0)
    """Spacing of the scan points [m]: (1.6 / 0.1 + 1) x (1.0 / 0.1 + 1) = 17 x 11 points by default."""
    yaw_aligned: bool = True
    """Turn the grid with the base's heading (its roll and pitch are ignored); False keeps it world-aligned."""
    offset: float = 0.5
    """Each value is base height - terrain height - offset [m] (about zero on flat ground for a quadruped)."""
    clip: float = bounded(1.0, gt=0)
    """Values are clipped to +- this [m]."""
    noise: float = bounded(0.02, ge=0)
    """Uniform noise on each value [m] (x the randomization's observation-noise scale; none without it)."""


def scan_offsets(cfg: HeightScanConfig) -> np.ndarray:
    """Scan points in the base's yaw frame [P, 2] (x forward, y left [m]), x-major: the order of the
    observations ``height_scan_<k>``."""
    nx = int(round(cfg.size[0] / cfg.resolution)) + 1
    ny = int(round(cfg.size[1] / cfg.resolution)) + 1
    x = (np.arange(nx) - 0.5 * (nx - 1)) * cfg.resolution
    y = (np.arange(ny) - 0.5 * (ny - 1)) * cfg.resolution
    gx, gy = np.meshgrid(x, y, indexing="ij")
    return np.stack([gx.ravel(), gy.ravel()], axis=1).astype(np.float32)


@wp.struct
class TerrainGrid:
    """Tile layout read by the curriculum kernel, and the heightfield read by :func:`terrain_height`."""

    levels: int
    types: int
    tile: float
    hx: float
    hy: float
    curriculum: int
    heights: wp.array2d(dtype=float)
    """Heightfield samples [nx, ny] (x-major) at the field's vertices; a 2 x 2 zero array on flat terrain."""
    rough: int
    dx: float
    dy: float


@wp.func
def terrain_height(g: TerrainGrid, x: float, y: float) -> float:
    """Terrain height [m] under the world point (x, y): bilinear in the heightfield's vertex samples (exact on its
    planar parts: slopes, treads), the ground plane (z = 0) outside the field and on flat terrain."""
    if g.rough == 0 or x < -g.hx or x > g.hx or y < -g.hy or y > g.hy:
        return 0.0
    fx = (x + g.hx) / g.dx
    fy = (y + g.hy) / g.dy
    ix = wp.clamp(int(wp.floor(fx)), 0, g.heights.shape[0] - 2)
    iy = wp.clamp(int(wp.floor(fy)), 0, g.heights.shape[1] - 2)
    tx = fx - float(ix)
    ty = fy - float(iy)
    h0 = g.heights[ix, iy] * (1.0 - tx) + g.heights[ix + 1, iy] * tx
    h1 = g.heights[ix, iy + 1] * (1.0 - tx) + g.heights[ix + 1, iy + 1] * tx
    return h0 * (1.0 - ty) + h1 * ty


@wp.func
def height_scan(g: TerrainGrid, base: wp.transform, offset: wp.vec2, yaw_aligned: int) -> float:
    """Base height above the terrain at one scan point (``offset`` in the base's yaw frame, or world-aligned)."""
    p = wp.transform_get_translation(base)
    ox = offset[0]
    oy = offset[1]
    if yaw_aligned == 1:
        fwd = wp.quat_rotate(wp.transform_get_rotation(base), wp.vec3(1.0, 0.0, 0.0))
        yaw = wp.atan2(fwd[1], fwd[0])
        c = wp.cos(yaw)
        s = wp.sin(yaw)
        ox = c * offset[0] - s * offset[1]
        oy = s * offset[0] + c * offset[1]
    return p[2] - terrain_height(g, p[0] + ox, p[1] + oy)


@wp.func
def terrain_level_update(g: TerrainGrid, i: int, walked: float, commanded: float, centre_z: wp.array(dtype=float),
                         level: wp.array(dtype=wp.int32), origin: wp.array(dtype=wp.vec3), s: wp.uint32) -> wp.uint32:
    """End of env i's episode: move its level (curriculum) and set its next spawn origin; returns the RNG state."""
    lv = level[i]
    if g.curriculum == 1:
        if walked > 0.5 * g.tile:
            lv = lv + 1
        elif walked < 0.5 * commanded:
            lv = lv - 1
        if lv >= g.levels:  # graduated: start again anywhere, so the hardest level keeps being practised
            lv = wp.int32(wp.randi(s, 0, g.levels))
        lv = wp.max(lv, 0)
    else:
        lv = wp.int32(wp.randi(s, 0, g.levels))
    level[i] = lv
    col = i % g.types
    origin[i] = wp.vec3(-g.hx + (float(lv) + 0.5) * g.tile, -g.hy + (float(col) + 0.5) * g.tile,
                        centre_z[lv * g.types + col])
    return s


class Terrain:
    """A generated terrain: adds its shapes to a Newton builder and gives tile centres for spawning."""

    def __init__(self, cfg: TerrainConfig) -> None:
        if cfg.kind not in KINDS:
            raise ValueError(f"unknown terrain kind '{cfg.kind}'; valid kinds: {', '.join(KINDS)}")
        self.cfg = cfg
        self.levels, self.types = cfg.num_levels, len(TERRAIN_TYPES)
        self.hx, self.hy = 0.5 * cfg.tile_size * self.levels, 0.5 * cfg.tile_size * self.types
        self.heights = self._generate() if cfg.kind == "rough" else None
        self.centre_z = self._centre_heights()

    # --- generation --------------------------------------------------------------------------------------------
    def _tile(self, kind: str, difficulty: float, rng: np.random.Generator) -> np.ndarray:
        c = self.cfg
        m = int(round(c.tile_size / c.resolution))
        u = (np.arange(m) + 0.5) * c.resolution - 0.5 * c.tile_size
        x, y = np.meshgrid(u, u, indexing="ij")
        edge = np.maximum(np.abs(x), np.abs(y))  # 0 at the centre, tile/2 at the border
        flat = 1.0  # half side of the flat platform at the centre [m]
        if kind == "noise":
            amp = 0.01 + difficulty * c.max_noise
            return rng.uniform(0.0, amp, size=(m, m))
        if kind in ("slope_up", "slope_down"):
            slope = difficulty * c.max_slope
            rise = slope * np.clip(edge - flat, 0.0, None)
            top = slope * (0.5 * c.tile_size - flat)
            return top - rise if kind == "slope_up" else rise
        step = 0.02 + difficulty * (c.max_step - 0.02)  # stairs
        ring = np.floor(np.clip(edge - flat, 0.0, None) / c.step_width)
        return np.clip(ring.max() - ring, 0.0, None) * step

    def _generate(self) -> np.ndarray:
        rng = np.random.default_rng(self.cfg.seed)
        m = int(round(self.cfg.tile_size / self.cfg.resolution))
        h = np.zeros((self.levels * m, self.types * m))
        for lv in range(self.levels):
            difficulty = lv / max(self.levels - 1, 1)
            for t, kind in enumerate(TERRAIN_TYPES):
                h[lv * m:(lv + 1) * m, t * m:(t + 1) * m] = self._tile(kind, difficulty, rng)
        return h.astype(np.float32)

    def _centre_heights(self) -> np.ndarray:
        """Ground height at the centre of tile (level, type), flattened level-major [levels * types]."""
        z = np.zeros(self.levels * self.types, dtype=np.float32)
        if self.heights is None:
            return z
        m = int(round(self.cfg.tile_size / self.cfg.resolution))
        for lv in range(self.levels):
            for t in range(self.types):
                z[lv * self.types + t] = self.heights[lv * m + m // 2, t * m + m // 2]
        return z

    # --- use ---------------------------------------------------------------------------------------------------
    def add_to(self, builder) -> None:
        """Add the ground plane (and the heightfield of a rough terrain) to a Newton builder as global shapes."""
        import newton

        builder.add_ground_plane()
        if self.heights is None:
            return
        h = self.heights.T  # horde indexes [x, y]; heightfield rows run along y and columns along x (MuJoCo's layout)
        hf = newton.Heightfield(data=h, nrow=h.shape[0], ncol=h.shape[1], hx=self.hx, hy=self.hy,
                                min_z=float(h.min()), max_z=float(max(h.max(), h.min() + 1e-3)))
        builder.add_shape_heightfield(heightfield=hf, label="terrain")

    def grid(self, device=None) -> TerrainGrid:
        """The tile layout and the heightfield as a kernel struct (arrays on ``device``)."""
        g = TerrainGrid()
        g.levels, g.types, g.tile = self.levels, self.types, float(self.cfg.tile_size)
        g.hx, g.hy = float(self.hx), float(self.hy)
        g.curriculum = int(self.cfg.curriculum)
        h = self.heights if self.heights is not None else np.zeros((2, 2), dtype=np.float32)
        g.heights = wp.array(h, dtype=float, device=device)
        g.rough = int(self.heights is not None)
        # the heightfield's nx x ny vertices span [-hx, hx] x [-hy, hy] (Newton's and MuJoCo's layout)
        g.dx, g.dy = 2.0 * float(self.hx) / (h.shape[0] - 1), 2.0 * float(self.hy) / (h.shape[1] - 1)
        return g

    def initial_levels(self, num_envs: int, seed: int) -> np.ndarray:
        """Starting level of each env: drawn in 0..start_level (all levels without a curriculum)."""
        top = self.cfg.start_level if self.cfg.curriculum else self.levels - 1
        top = min(max(top, 0), self.levels - 1)
        return np.random.default_rng(seed).integers(0, top + 1, size=num_envs).astype(np.int32)

    def origins(self, levels: np.ndarray) -> np.ndarray:
        """Spawn origin [num_envs, 3] of each env on its (level, i % types) tile; zeros on flat terrain."""
        n = len(levels)
        if self.heights is None:
            return np.zeros((n, 3), dtype=np.float32)
        col = np.arange(n) % self.types
        x = -self.hx + (levels + 0.5) * self.cfg.tile_size
        y = -self.hy + (col + 0.5) * self.cfg.tile_size
        return np.stack([x, y, self.centre_z[levels * self.types + col]], axis=1).astype(np.float32)
