"""Velocity tracking measured in the world frame, over named command sets (issue 69's measure for the G1, any
velocity task).

Each set holds one command per env for a whole episode (no resampling, no curriculum), drawn deterministically:

- ``full``: the full command range ``FULL_RANGE`` (vx [-1, 1], vy [-0.5, 0.5], yaw rate [-1, 1]: Isaac Lab's G1
  ranges), uniform, from a fixed generator;
- ``forward``: vx evenly from 0.3 to 1.0 m/s; ``backward``: vx from -0.3 to -1.0 m/s;
- ``sideways``: vy evenly from 0.2 to 0.5 m/s, half the envs to the left, half to the right;
- ``turning``: turning in place, yaw rate evenly from 0.3 to 1.0 rad/s, half each way.

(Commands near zero are left out of the single-direction sets: a distance ratio on a command of 0.05 m/s measures
noise.) The figures of a set, each beside standing still's on the same commands (``standing_*``: a robot that
stays up and does not move):

- ``up_fraction``: envs whose first episode did not fail;
- ``lin_vel_error_mps`` |cmd_xy - v_xy| (base frame) and ``yaw_rate_error_rps`` |cmd_wz - w_z|, over the steps
  after ``settle`` while an env is up;
- ``progress``: the world-frame distance covered along the commanded displacement (the command integrated along
  the commanded heading while the env was up, from step ``settle``), as a share of that displacement; the mean over
  envs whose commanded displacement is over 0.5 m (no figure for turning in place);
- ``turn_progress``: the yaw turned as a share of the yaw commanded (envs commanded at least 0.3 rad);
- ``heading_drift_deg``: |yaw turned - yaw commanded| at the last step up [deg], mean over envs;
- gait figures of the envs while up: ``feet_air_time_s`` (the mean length of a completed swing), ``double_support``
  (share of steps with every foot on the ground), ``base_height_m`` (root height above the spawn point's ground)
  and ``foot_slip_mps`` (horizontal speed of a foot on the ground);
- falls: ``fall_times_s``, ``fall_median_s``, and their attribution to a push by the time since the last one
  (``fall_since_push_s``, each fall's; ``falls_within_1s_of_push`` beside ``push_window_share``, the share of
  an episode's time that lies within 1 s after a push: the rate a fall unrelated to pushes would show).

:func:`floor_checks` reads issue 69's floors from the figures of the five sets.
"""

from __future__ import annotations

import copy
import math

import torch

from horde.envs import make
from horde.envs.observations import quat_rotate

__all__ = ["COMMAND_SETS", "FLOOR_PUSHES", "FULL_RANGE", "command_set", "evaluate_command_sets", "floor_checks",
           "standing_still"]

COMMAND_SETS = ("full", "forward", "backward", "sideways", "turning")
"""The named command sets, in report order."""
FULL_RANGE = {"vx": (-1.0, 1.0), "vy": (-0.5, 0.5), "yaw_rate": (-1.0, 1.0)}
"""The full command range [m/s, m/s, rad/s] (Isaac Lab's G1 ranges; the ``full`` set draws from it)."""
FLOOR_PUSHES = {"push_interval": 8.0, "push_velocity": 0.5}
"""The G1 floors' pushes: up to 0.5 m/s every 8 s of an episode, whatever the run trained with."""
MIN_DISTANCE_M = 0.5
"""An env's commanded displacement must be at least this for its ``progress`` to count [m]."""
MIN_TURN_RAD = 0.3
"""An env's commanded yaw must be at least this for its ``turn_progress`` to count [rad]."""


def command_set(name: str, num_envs: int, *, device: str | torch.device = "cpu") -> torch.Tensor:
    """The commands of set ``name`` [num_envs, 3] (vx [m/s], vy [m/s], yaw rate [rad/s]), deterministic."""
    if name not in COMMAND_SETS:
        raise ValueError(f"unknown command set '{name}'; valid sets: {', '.join(COMMAND_SETS)}")
    c = torch.zeros(num_envs, 3, dtype=torch.float32)
    half = torch.arange(num_envs) % 2 == 0  # alternate left/right so both halves span the same magnitudes
    if name == "full":
        g = torch.Generator().manual_seed(69)
        for k, (lo, hi) in enumerate(FULL_RANGE.values()):
            c[:, k] = lo + (hi - lo) * torch.rand(num_envs, generator=g)
    elif name == "forward":
        c[:, 0] = torch.linspace(0.3, 1.0, num_envs)
    elif name == "backward":
        c[:, 0] = -torch.linspace(0.3, 1.0, num_envs)
    elif name == "sideways":
        c[:, 1] = torch.where(half, 1.0, -1.0) * torch.linspace(0.2, 0.5, num_envs)
    else:
        c[:, 2] = torch.where(half, 1.0, -1.0) * torch.linspace(0.3, 1.0, num_envs)
    return c.to(device)


def standing_still(command: torch.Tensor, seconds: float) -> dict[str, float]:
    """A robot that stays up and never moves, on these commands over an episode of ``seconds`` (after settling):
    its tracking errors are the commands' magnitudes, its progress 0, its heading drift the commanded turn."""
    return {"up_fraction": 1.0, "lin_vel_error_mps": float(command[:, :2].norm(dim=1).mean()),
            "yaw_rate_error_rps": float(command[:, 2].abs().mean()), "progress": 0.0, "turn_progress": 0.0,
            "heading_drift_deg": float(torch.rad2deg(command[:, 2].abs() * seconds).mean())}


def _yaw(q: torch.Tensor) -> torch.Tensor:
    """Heading of quaternions (x, y, z, w) [..., 4] -> [...] [rad]."""
    x, y, z, w = q.unbind(-1)
    return torch.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _wrap(a: torch.Tensor) -> torch.Tensor:
    return torch.remainder(a + math.pi, 2.0 * math.pi) - math.pi


def hold_command(env, command: torch.Tensor) -> None:
    """Each env's velocity command, and its observation's command columns, set to ``command`` [num_envs, 3]."""
    env.command.copy_(command.to(env.device))
    col = env.obs_names.index("cmd_vx")
    env.obs[:, col:col + 3] = env.command


def eval_config(task_cfg, pushes: dict | None):
    """The task as evaluated: commands held for the whole episode, no curricula; ``pushes`` (randomization
    ``push_interval``/``push_velocity``) replace the run's when given."""
    cfg = copy.deepcopy(task_cfg)
    cfg.command_resample_s = 0.0
    if hasattr(cfg, "heading_fraction"):
        cfg.heading_fraction = 0.0  # the sets hold yaw-rate commands
    for name in ("vx_curriculum", "push_curriculum"):
        if hasattr(cfg, name):
            setattr(cfg, name, False)
    for k, v in (pushes or {}).items():
        setattr(cfg.randomization, k, v)
    return cfg


@torch.inference_mode()
def run_command_set(policy, env, command: torch.Tensor, *, seed: int, steps: int, settle: int,
                    progress=None) -> dict:
    """One episode of ``env`` (re-seeded and reset) with ``command`` [num_envs, 3] held; the figures of the
    module's docstring (without the standing-still ones). ``progress(step, steps)`` after each step."""
    env.seed(seed)
    env.reset()
    n, dev = env.num_envs, env.device
    command = command.to(dev)
    hold_command(env, command)  # the reset's observation holds the commands it drew
    obs = env.obs
    w, cfg = env.world, env.cfg
    dt = cfg.sim_dt * cfg.decimation
    nf = len(env.feet)
    feet_idx = torch.tensor([f.index for f in env.feet], device=dev)
    feet_arm = torch.tensor([f.arm for f in env.feet], dtype=torch.float32, device=dev).expand(n, nf, 3)
    threshold = cfg.contact_threshold
    z0 = w.spawn_origin[:, 2].clone()

    def zeros(*shape, dtype=torch.float64):
        return torch.zeros(*shape, dtype=dtype, device=dev)

    first = torch.ones(n, dtype=torch.bool, device=dev)
    fell_at = torch.full((n,), -1, dtype=torch.long, device=dev)
    lin, yaw_err, count = zeros(n), zeros(n), zeros(n)
    p0, psi0 = zeros(n, 2), zeros(n)
    disp, cmd_disp, turned = zeros(n, 2), zeros(n, 2), zeros(n)
    last_yaw = zeros(n)
    air = zeros(n, nf)
    swing_sum, swing_n = zeros(()), zeros(())
    double, height, slip, slip_n = zeros(()), zeros(()), zeros(()), zeros(())
    for k in range(steps):
        r = env.step(policy(obs.clone()))
        obs = r.obs
        fell = first & r.terminated
        fell_at = torch.where(fell & (fell_at < 0), torch.full_like(fell_at, k), fell_at)
        up = first & ~r.dones  # an env that finished was reset inside the step: its state is the next episode's
        first &= ~r.dones
        pose = w.root_pose.double()
        psi = _yaw(pose[:, 3:7])
        if k == settle - 1 or (k == 0 and settle <= 0):
            p0.copy_(pose[:, :2])
            psi0.copy_(psi)
            last_yaw.copy_(psi)
        if progress is not None:
            progress(k + 1, steps)
        if k < settle:
            continue
        upf = up.double()
        v = w.root_vel_base.double()
        lin += (command[:, :2].double() - v[:, :2]).norm(dim=1) * upf
        yaw_err += (command[:, 2].double() - v[:, 5]).abs() * upf
        count += upf
        turned += _wrap(psi - last_yaw) * upf
        last_yaw = torch.where(up, psi, last_yaw)
        disp = torch.where(up[:, None], pose[:, :2] - p0, disp)
        # the commanded displacement: the command's body-frame velocity along the commanded heading
        heading = psi0 + command[:, 2].double() * (count * dt)
        c, s = torch.cos(heading), torch.sin(heading)
        vx, vy = command[:, 0].double(), command[:, 1].double()
        cmd_disp += torch.stack((c * vx - s * vy, s * vx + c * vy), dim=1) * (dt * upf)[:, None]
        # gait, while up
        on = w.contact_forces[:, :nf].norm(dim=-1) > threshold  # [n, feet]
        landed = on & (air > 0)
        swing_sum += (air * dt * (landed & up[:, None])).sum()
        swing_n += (landed & up[:, None]).sum()
        air = torch.where(on, torch.zeros_like(air), air + 1)
        double += (on.all(dim=1) & up).sum()
        height += ((pose[:, 2] - z0) * upf).sum()
        fq = w.body_pose[:, feet_idx, 3:7]
        fv = w.body_vel[:, feet_idx, :3] + torch.cross(w.body_vel[:, feet_idx, 3:6], quat_rotate(fq, feet_arm), dim=-1)
        slip += (fv[..., :2].norm(dim=-1) * (on & up[:, None])).sum()
        slip_n += (on & up[:, None]).sum()
        if not first.any():
            break
    seconds = count * dt
    drift = torch.rad2deg((turned - command[:, 2].double() * seconds).abs())
    cmd_len = cmd_disp.norm(dim=1)
    stayed = fell_at < 0  # a robot that falls forward covers ground too: distances count only whole episodes
    moving = stayed & (cmd_len >= MIN_DISTANCE_M)
    along = (disp * cmd_disp).sum(dim=1) / cmd_len.clamp_min(1e-9)
    turn_cmd = command[:, 2].double() * seconds
    turning = stayed & (turn_cmd.abs() >= MIN_TURN_RAD)
    ups = count.sum()
    return {"up_fraction": float((fell_at < 0).float().mean()),
            "lin_vel_error_mps": _ratio(lin.sum(), ups), "yaw_rate_error_rps": _ratio(yaw_err.sum(), ups),
            "progress": _mean(along[moving] / cmd_len[moving]),
            "turn_progress": _mean(turned[turning] / turn_cmd[turning]),
            "heading_drift_deg": _mean(drift[stayed & (count > 0)]),
            "feet_air_time_s": _ratio(swing_sum, swing_n), "double_support": _ratio(double, ups),
            "base_height_m": _ratio(height, ups), "foot_slip_mps": _ratio(slip, slip_n),
            **_falls(fell_at.cpu(), env)}


def _ratio(a: torch.Tensor, b: torch.Tensor) -> float | None:
    b = float(b)
    return float(a) / b if b > 0 else None


def _mean(x: torch.Tensor) -> float | None:
    return float(x.mean()) if x.numel() else None


def _falls(fell_at: torch.Tensor, env) -> dict:
    """Fall times and their time since the last push (pushes come on every ``push_interval`` seconds of an
    episode: the step whose 1-based count is a multiple of it)."""
    dt = env.cfg.sim_dt * env.cfg.decimation
    falls = fell_at[fell_at >= 0].sort().values
    dr = env.cfg.randomization
    every = int(round(dr.push_interval / dt)) if dr.enabled and dr.push_interval > 0 else 0
    out = {"fall_times_s": [round(float(f + 1) * dt, 2) for f in falls],
           "fall_median_s": float(falls.float().median() * dt) if len(falls) else None}
    if every:
        since = [(int(f) + 1) % every * dt if int(f) + 1 >= every else None for f in falls]
        pushed = [s for s in since if s is not None]
        out.update({"fall_since_push_s": [None if s is None else round(s, 2) for s in since],
                    "falls_within_1s_of_push": (sum(s < 1.0 for s in pushed) / len(falls)) if len(falls) else None,
                    "push_window_share": min(1.0 / dr.push_interval, 1.0)})
    return out


def evaluate_command_sets(policy, task: str, task_cfg, *, sets=COMMAND_SETS, num_envs: int = 64,
                          steps: int = 1000, settle: int = 50, seed: int = 20_000, device: str = "cpu",
                          pushes: dict | None = None, progress=None, step_progress=None) -> dict[str, dict]:
    """Every set of ``sets``: the policy's figures and standing still's on the same commands, ``{set: {...,
    "standing": {...}}}``. One env of ``num_envs`` is built and re-seeded per set (the same episodes whatever the
    order). ``progress(line)`` is called after each set, ``step_progress(step, steps)`` after each step."""
    cfg = eval_config(task_cfg, pushes)
    env = make(task, num_envs=num_envs, seed=seed, config=cfg, device=device)
    if isinstance(policy, torch.nn.Module):
        policy = policy.to(env.device)
    out = {}
    for name in sets:
        command = command_set(name, num_envs, device=env.device)
        figs = run_command_set(policy, env, command, seed=seed, steps=steps, settle=settle, progress=step_progress)
        figs["standing"] = standing_still(command, (steps - settle) * env.cfg.sim_dt * env.cfg.decimation)
        out[name] = figs
        if progress is not None:
            progress(describe(name, figs))
    return out


def describe(name: str, f: dict) -> str:
    """One line of a set's figures beside standing still's."""
    s = f["standing"]
    parts = [f"{name}: up {100 * f['up_fraction']:.0f}%",
             f"lin error {_fmt(f['lin_vel_error_mps'])} m/s (standing {s['lin_vel_error_mps']:.2f})",
             f"yaw error {_fmt(f['yaw_rate_error_rps'])} rad/s (standing {s['yaw_rate_error_rps']:.2f})"]
    if f["progress"] is not None:
        parts.append(f"progress {_fmt(f['progress'], pct=True)}")
    if f["turn_progress"] is not None:
        parts.append(f"turned {_fmt(f['turn_progress'], pct=True)} of the command")
    parts.append(f"heading drift {_fmt(f['heading_drift_deg'], 0)} deg")
    parts.append(f"air time {_fmt(f['feet_air_time_s'])} s, double support {_fmt(f['double_support'], pct=True)}, "
                 f"slip {_fmt(f['foot_slip_mps'])} m/s")
    return ", ".join(parts)


def _fmt(v: float | None, digits: int = 2, pct: bool = False) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.0f}%" if pct else f"{v:.{digits}f}"


FLOOR = {"full_up": 0.95, "full_error_ratio": 0.5, "set_up": 0.90, "progress": 0.70, "drift_deg": 30.0}
"""Issue 69's floors on the command sets."""


def floor_checks(figs: dict[str, dict]) -> dict[str, bool]:
    """Issue 69's floors, one check each: ``full`` up >= 95% and both errors at most half of standing still's;
    each of forward, backward, sideways and turning up >= 90% and better than standing still on each error
    that standing still has (the straight sets' yaw error and turning's linear error are 0 for a robot that
    does not move: there the heading drift and ``turn_progress`` speak instead); forward, backward and sideways
    with ``progress`` >= 70% and heading drift < 30 deg."""
    out = {}
    f = figs.get("full")
    if f is not None:
        s = f["standing"]
        out["full_up"] = f["up_fraction"] >= FLOOR["full_up"]
        out["full_lin"] = _le(f["lin_vel_error_mps"], FLOOR["full_error_ratio"] * s["lin_vel_error_mps"])
        out["full_yaw"] = _le(f["yaw_rate_error_rps"], FLOOR["full_error_ratio"] * s["yaw_rate_error_rps"])
    for name in COMMAND_SETS[1:]:
        f = figs.get(name)
        if f is None:
            continue
        s = f["standing"]
        out[f"{name}_up"] = f["up_fraction"] >= FLOOR["set_up"]
        for key in ("lin_vel_error_mps", "yaw_rate_error_rps"):
            if s[key] > 0:
                out[f"{name}_{key.split('_')[0]}"] = _le(f[key], s[key], strict=True)
        if name != "turning":
            out[f"{name}_progress"] = f["progress"] is not None and f["progress"] >= FLOOR["progress"]
            out[f"{name}_drift"] = _le(f["heading_drift_deg"], FLOOR["drift_deg"], strict=True)
    return out


def _le(a: float | None, b: float, strict: bool = False) -> bool:
    return a is not None and (a < b if strict else a <= b)
