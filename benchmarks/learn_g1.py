"""Train PPO on ``g1-velocity`` (Unitree G1 humanoid, flat ground, pushes on) and report whether it walks, beside
what standing still scores on the same measure.

    python benchmarks/learn_g1.py [--minutes 60] [--seed 0] [--eval-every 50] [--append FILE] [--also-without-pushes]
                                  [--also-stochastic] [--json] [--quick] [--out docs/img] [override ...]

The floor (issue 29), on 2 CPU cores within 60 minutes of training: at least 95% of 64 fresh envs stay up for a
whole 20 s episode with pushes on (``up_fraction``), AND the linear-velocity tracking error on forward commands in
[0, 0.8] m/s (``lin_vel_error_mps``) is at most half of what standing still scores on the same commands (0.40 m/s:
a robot that stays up and does not move is off by its command). CPU: ``python benchmarks/learn_g1.py --minutes 60
--seed 0 --append benchmarks/results/g1_learning_cpu.jsonl num_envs=512 algo.num_learning_epochs=3`` (the CPU
recipe of ``learning_suite.py``; at least 2 seeds; 512 envs: 12,288 samples an iteration and 1,300-3,300 iterations
in the hour on an idle 2-core machine, the most with the sparse Jacobian on an AMD EPYC of 2026-12-01; the hour
is the budget: without a ``max_iterations=`` override the tuned config's 3,000 do not end it). GPU, the same recipe at
4096 envs: ``python benchmarks/learn_g1.py --minutes 60 --seed 0 --append benchmarks/results/g1_learning_gpu.jsonl
device=cuda:0 num_envs=4096``. Moonshot: the task's full command range tracked below 0.3 m/s
(``full_range_lin_vel_error_mps``, from the final policy).

The measure: the deterministic policy (its action mean, the normalizer frozen) drives ``--eval-envs`` fresh envs
(other seeds than training) for one episode (``--eval-steps``, 1000 = 20 s) with the floor's pushes
(``FLOOR_PUSHES``: up to 0.5 m/s every 8 s, the task's own when the floor was set, whatever training uses) and
domain randomization; env k holds the forward command vx = 0.8 k / (n - 1) m/s (vy = yaw rate = 0) for the whole episode.
``up_fraction``: envs whose first episode did not fail. ``lin_vel_error_mps``: |cmd_xy - v_xy| in the base frame,
averaged over the steps after the first ``--settle`` of every env while it is up. The baselines, in the same run and
on the same commands: ``standing_still`` (the error of a robot that stays up without moving: the mean |command|, the
floor's reference) and ``zero_action`` (the default pose held by PD, simulated: its up fraction and error). Where
the robots fall, with every evaluation: ``fall_median_s`` (the median time of a fall), ``falls_after_push`` (the
share of falls within 1 s after one of the randomization's pushes) and ``up_fraction_slow`` / ``_fast`` (up among
the slower and the faster half of the commands), ``fall_times_s`` (each fall's time); ``--also-without-pushes``
evaluates again with the pushes off (``no_push_*``: a diagnosis, not the floor's measure) and ``--also-stochastic``
with the actions sampled as PPO samples them in training (``sampled_*``); every evaluation also records the
training envs' last finished episodes (``train_episode_s``, ``train_termination_rate``, each reward term's mean sum
``train_reward``), the mean action noise std (``train_noise_std``) and where the curricula stand (``train_vx_range``,
``train_push_velocity``, and ``train_push_velocity_range``: its least and largest value over the iterations since
the evaluation before). Evaluation time is not counted. Writes ``<out>/g1_learning.png`` and
``<out>/g1_learning.json``; ``--append FILE`` adds the run's summary as one JSON line (seeds over sessions).

The full-range floor (issue 69), ``--sets``: every evaluation also drives 64 fresh envs per command set of
:mod:`horde.train.command_sets` (the full range, forward, backward, sideways, turning in place) for a whole 20 s
episode with the floor's pushes, world-frame progress and heading drift beside the tracking errors and gait figures,
each beside standing still's on the same commands (``sets_<set>_*``); ``sets_checks`` holds each floor's check
(:func:`horde.train.command_sets.floor_checks`) and ``sets_reached`` all of them. The summary states when the
floor was first met (``sets_reached_at_s``) and the share of the later evaluations that still meet it
(``sets_held_share``; the floor asks for 80%). The run itself is kept with ``--keep DIR`` (its checkpoints, for
``horde play``/``export``). CPU recipe: ``python benchmarks/learn_g1.py --sets --minutes 60 --seed S --eval-every 100
--append benchmarks/results/g1_full_range_cpu.jsonl num_envs=512 algo.num_learning_epochs=3``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learn_quadruped import tracking_error  # noqa: E402
from learning import (BASELINE_SEED, Target, ZeroPolicy, append_result, plot_curve, train_with_evals,  # noqa: E402
                      write_result)

from horde.envs import make  # noqa: E402
from horde.train.command_sets import FLOOR_PUSHES  # noqa: E402
from horde.train.command_sets import COMMAND_SETS, evaluate_command_sets, floor_checks  # noqa: E402
from horde.train.command_sets import describe as describe_set  # noqa: E402

TASK = "g1-velocity"
TARGET_UP = 0.95
TARGET_RATIO = 0.5
"""The trained error must be at most this share of standing still's on the same commands."""
TARGET_MPS = 0.2
"""TARGET_RATIO x standing still's 0.40 m/s on the evaluation's commands (each run states its own figure)."""
FORWARD = (0.0, 0.8)
"""Forward commands of the floor [m/s]."""
# FLOOR_PUSHES (horde.train.command_sets): the floor's pushes, fixed: up to 0.5 m/s every 8 s of an episode, the
# task's own randomization when the floor was set (2026-11-26). Training may push otherwise (the tuned config pushes
# every 4 s); every evaluation uses these.


def eval_config(task_cfg):
    """The task as evaluated: commands held for the whole episode, no curriculum (the commands are set by hand)."""
    cfg = copy.deepcopy(task_cfg)
    cfg.command_resample_s = 0.0
    cfg.vx_curriculum = False
    cfg.heading_fraction = 0.0  # commands set by hand: no heading tracking over them
    return cfg


@torch.inference_mode()
def walk_figures(policy, task_cfg, seed: int, *, num_envs: int, steps: int, settle: int,
                 device: str = "cpu") -> dict:
    """Up fraction and forward tracking error of ``policy`` over one episode of ``num_envs`` fresh envs, env k
    commanded vx = FORWARD spread evenly; with the standing-still error on the same commands."""
    env = make(TASK, num_envs=num_envs, seed=seed, config=eval_config(task_cfg), device=device)
    command = torch.zeros(num_envs, 3, device=env.device)
    command[:, 0] = torch.linspace(*FORWARD, num_envs, device=env.device)
    env.command.copy_(command)
    obs = env.obs
    obs[:, env.obs_names.index("cmd_vx"):env.obs_names.index("cmd_vx") + 3] = command  # the reset obs held others
    first = torch.ones(num_envs, dtype=torch.bool, device=env.device)  # still in its first episode
    fell = torch.zeros(num_envs, dtype=torch.bool, device=env.device)
    fell_at = torch.full((num_envs,), -1, dtype=torch.long, device=env.device)  # the control step of the fall
    err_sum = torch.zeros((), dtype=torch.float64, device=env.device)
    count = torch.zeros((), dtype=torch.float64, device=env.device)
    for k in range(steps):
        r = env.step(policy(obs.clone()))
        obs = r.obs
        fell_at = torch.where(first & r.terminated & ~fell, torch.full_like(fell_at, k), fell_at)
        fell |= first & r.terminated
        alive = first & ~r.dones  # a finished env was reset inside the step: its velocity is the new episode's
        if k >= settle:
            v = env.world.root_vel_base
            err = (command[:, :2] - v[:, :2]).norm(dim=1)
            err_sum += torch.where(alive, err, torch.zeros_like(err)).sum()
            count += alive.sum()
        first &= ~r.dones
        if not first.any():
            break
    n = float(count)
    return {"up_fraction": 1.0 - float(fell.float().mean()),
            "lin_vel_error_mps": float(err_sum) / n if n > 0 else float("nan"),
            "standing_still_error_mps": float(command[:, :2].norm(dim=1).mean()),
            **fall_figures(fell_at.cpu(), command[:, 0].cpu(), env)}


class SampledPolicy(torch.nn.Module):
    """The deterministic policy's actions plus the training noise (Gaussian, ``std`` per action), as PPO acts."""

    def __init__(self, policy: torch.nn.Module, std: torch.Tensor) -> None:
        super().__init__()
        self.policy = policy
        self.register_buffer("std", std.detach().clone())

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        mean = self.policy(obs)
        return mean + self.std * torch.randn_like(mean)


def training_figures(seen: dict, task_cfg) -> dict:
    """The training envs' last finished episodes (mean length [s], the share that failed) and the mean action
    noise std: beside each evaluation, where the sampled policy in training and the deterministic one part."""
    stats, trainer = seen.get("stats", {}), seen.get("trainer")
    dt = task_cfg.sim_dt * task_cfg.decimation
    return {"train_episode_s": stats["length_mean"] * dt if "length_mean" in stats else None,
            "train_termination_rate": stats.get("termination_rate"),
            "train_noise_std": trainer.noise_std() if trainer is not None else float("nan"),
            "train_vx_range": [stats[k] for k in ("curriculum/vx_min", "curriculum/vx_max") if k in stats] or None,
            "train_push_velocity": stats.get("curriculum/push_velocity"),
            "train_push_velocity_range": _range_since_last(seen.get("pushes")),
            "train_reward": {k.removeprefix("reward/"): round(v, 4) for k, v in stats.items()
                             if k.startswith("reward/")} or None}


def _range_since_last(values: list | None) -> list[float] | None:
    """[min, max] of the values recorded since the last call (then cleared): the push curriculum's range over the
    iterations between two evaluations."""
    if not values:
        return None
    out = [min(values), max(values)]
    values.clear()
    return out


def with_pushes(task_cfg, pushes: dict):
    """A copy of the task config with these randomization push fields and no push curriculum (the floor's measure
    uses ``FLOOR_PUSHES`` at their full velocity, whatever training used or grew them from)."""
    cfg = copy.deepcopy(task_cfg)
    for k, v in pushes.items():
        setattr(cfg.randomization, k, v)
    cfg.push_curriculum = False
    return cfg


def fall_figures(fell_at: torch.Tensor, vx: torch.Tensor, env) -> dict:
    """Where an evaluation's robots fall: the median time of a fall [s], the share of falls within 1 s after a push
    (the randomization's pushes come every ``push_interval`` seconds of an episode), and the share up for the whole
    episode among the slower and the faster half of the forward commands (below and from the middle of FORWARD)."""
    dt = env.cfg.sim_dt * env.cfg.decimation
    falls = fell_at[fell_at >= 0]
    dr = env.cfg.randomization
    every = int(round(dr.push_interval / dt)) if dr.enabled and dr.push_interval > 0 else 0
    after_push = ((falls + 1) % every < int(round(1.0 / dt))) & (falls + 1 >= every) if every else falls < 0
    slow = vx < 0.5 * (FORWARD[0] + FORWARD[1])
    up = fell_at < 0
    return {"fall_times_s": [round(float(f + 1) * dt, 2) for f in falls.sort().values],
            "fall_median_s": float(falls.float().median() * dt) if len(falls) else None,
            "falls_after_push": float(after_push.float().mean()) if len(falls) else None,
            "up_fraction_slow": float(up[slow].float().mean()), "up_fraction_fast": float(up[~slow].float().mean())}


def baselines(task_cfg, args, device: str) -> dict:
    """Standing still on the evaluation's commands: the error of a robot that stays up without moving (the
    floor's reference) and the zero-action policy (the default pose held by PD) simulated."""
    zero = walk_figures(ZeroPolicy(_num_actions(task_cfg)), task_cfg, BASELINE_SEED, num_envs=args.eval_envs,
                        steps=args.eval_steps, settle=args.settle, device=device)
    return {"standing_still": {"up_fraction": 1.0, "lin_vel_error_mps": zero["standing_still_error_mps"]},
            "zero_action": {"up_fraction": zero["up_fraction"], "lin_vel_error_mps": zero["lin_vel_error_mps"],
                            "fall_median_s": zero["fall_median_s"]}}


def _num_actions(task_cfg) -> int:
    from horde.envs.robots import resolve_robot
    from horde.envs.velocity_config import action_joints

    return len(action_joints(task_cfg, resolve_robot(task_cfg.robot)))


def targets(standing_mps: float) -> tuple[Target, Target]:
    """The floor, both parts: the forward error at most half of standing still's, up for a whole episode."""
    return (Target(key="lin_vel_error_mps", threshold=TARGET_RATIO * standing_mps, op="<=",
                   measure=f"forward-velocity tracking error [m/s], vx in {list(FORWARD)}, 64 fresh envs, pushes "
                           f"(half of standing still's {standing_mps:.2f})"),
            Target(key="up_fraction", threshold=TARGET_UP, op=">=",
                   measure="fraction of 64 fresh envs up for a whole 20 s episode, pushes on"))


def reached(point: dict) -> bool:
    """The floor: up for the whole episode in >= 95% of envs, error <= half of standing still's."""
    return all(t.met(point.get(t.key)) for t in targets(point["standing_still_error_mps"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0, help="wall-time budget for training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--append", default=None, help="append the summary as a JSON line to this file")
    ap.add_argument("--eval-every", type=int, default=50, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--eval-steps", type=int, default=1000, help="control steps of an evaluation (1000 = 20 s)")
    ap.add_argument("--settle", type=int, default=50, help="control steps ignored by the tracking error")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--also-without-pushes", action="store_true",
                    help="a diagnosis: every evaluation again with the pushes off (no_push_* figures)")
    ap.add_argument("--also-stochastic", action="store_true",
                    help="a diagnosis: every evaluation again with the actions sampled as in training (sampled_*)")
    ap.add_argument("--sets", action="store_true",
                    help="every evaluation also on the five command sets (the full-range floor of issue 69)")
    ap.add_argument("--keep", default=None, help="keep the run (checkpoints, config) under this folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 iterations on 16 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=512 device=cuda:0")
    args = ap.parse_args(argv)
    seeded = [o for o in args.overrides if o.startswith("seed=")]  # learning_suite passes the seed this way
    if seeded:
        args.seed = int(seeded[-1].split("=", 1)[1])
    overrides = [f"task={TASK}", *([] if seeded else [f"seed={args.seed}"]), *args.overrides]
    if args.quick:
        overrides += ["num_envs=16", "max_iterations=2"]
        args.eval_every, args.eval_envs, args.eval_steps, args.settle = 2, 4, 12, 2
    if not any(o.startswith("max_iterations=") for o in overrides):
        # the budget is --minutes: the tuned config's 3,000 iterations end a fast 2-core CPU's hour at 54 minutes
        overrides.append("max_iterations=1000000")
    device = next((o.split("=", 1)[1] for o in overrides if o.startswith("device=")), "cpu")
    from horde.train.config import compose

    task_cfg = compose(overrides)[0].task
    pushes = task_cfg.randomization.enabled
    trained_pushes = {k: getattr(task_cfg.randomization, k) for k in FLOOR_PUSHES}
    if trained_pushes != FLOOR_PUSHES:
        print(f"g1-velocity: training pushes {trained_pushes}; every evaluation uses the floor's {FLOOR_PUSHES}",
              file=sys.stderr)
    if not pushes:
        print("g1-velocity: pushes are off in this config (task.randomization): the floor asks for them",
              file=sys.stderr)
    base = baselines(with_pushes(task_cfg, FLOOR_PUSHES), args, device)
    print(f"trivial baselines on vx in {list(FORWARD)} m/s: standing still "
          f"{base['standing_still']['lin_vel_error_mps']:.3f} m/s; zero actions up "
          f"{base['zero_action']['up_fraction']:.2f} "
          f"(falls: median {_fmt(base['zero_action']['fall_median_s'], 's')}), error "
          f"{base['zero_action']['lin_vel_error_mps']:.3f} m/s while up", file=sys.stderr, flush=True)

    seen: dict = {}  # the trainer and its last training episodes (a diagnosis beside every evaluation)

    def on_start(trainer) -> None:
        seen["trainer"], pop = trainer, trainer.pop_episode_stats

        def pop_and_keep() -> dict:
            stats = pop()
            if stats["episodes"] > 0:
                seen["stats"] = stats
            if "curriculum/push_velocity" in stats:  # every iteration's, not only the one before an evaluation
                seen.setdefault("pushes", []).append(stats["curriculum/push_velocity"])
            return stats

        trainer.pop_episode_stats = pop_and_keep

    def evaluate(pol, cfg, seed):
        cfg = with_pushes(cfg, FLOOR_PUSHES)
        out = walk_figures(pol.to(device), cfg, seed, num_envs=args.eval_envs, steps=args.eval_steps,
                           settle=args.settle, device=device)
        out.update(training_figures(seen, cfg))
        if args.also_stochastic:  # a diagnosis: the actions sampled as in training, the same envs and seed
            noisy = walk_figures(SampledPolicy(pol, seen["trainer"].action_std()).to(device), cfg, seed,
                                 num_envs=args.eval_envs, steps=args.eval_steps, settle=args.settle, device=device)
            out.update({f"sampled_{k}": noisy[k] for k in ("up_fraction", "lin_vel_error_mps", "fall_median_s")})
        if args.sets:
            figs = evaluate_command_sets(pol, TASK, cfg, num_envs=args.eval_envs, steps=args.eval_steps,
                                         settle=args.settle, seed=seed, device=device)
            out.update(sets_figures(figs))
        if args.also_without_pushes:  # a diagnosis, not the floor's measure: the same envs and seed, no pushes
            calm = with_pushes(cfg, {"push_interval": 0.0})
            quiet = walk_figures(pol.to(device), calm, seed, num_envs=args.eval_envs, steps=args.eval_steps,
                                 settle=args.settle, device=device)
            out.update({f"no_push_{k}": quiet[k] for k in ("up_fraction", "lin_vel_error_mps", "fall_median_s")})
        return out

    run = train_with_evals(
        overrides, evaluate, eval_every=args.eval_every, minutes=args.minutes, on_start=on_start,
        run_root=args.keep,
        describe=lambda p: _describe_sets(p)
                           + f"up {p['up_fraction']:.2f} (slow / fast half {p['up_fraction_slow']:.2f} / "
                           f"{p['up_fraction_fast']:.2f})  forward error {p['lin_vel_error_mps']:.3f} m/s (standing "
                           f"{p['standing_still_error_mps']:.3f})  falls: median {_fmt(p['fall_median_s'], 's')}, "
                           f"{_fmt(p['falls_after_push'], '', pct=True)} within 1 s of a push"
                           + (f"; without pushes up {p['no_push_up_fraction']:.2f}" if "no_push_up_fraction" in p
                              else "")
                           + (f"; sampled actions up {p['sampled_up_fraction']:.2f}" if "sampled_up_fraction" in p
                              else "")
                           + f"; training: episodes {_fmt(p['train_episode_s'], 's')}, noise std "
                             f"{p['train_noise_std']:.2f}"
                           + (f", vx {p['train_vx_range'][0]:.1f} to {p['train_vx_range'][1]:.1f} m/s"
                              if p.get("train_vx_range") else "")
                           + (f", pushes up to {p['train_push_velocity']:.1f} m/s"
                              if p.get("train_push_velocity") is not None else ""))
    curve, out, cfg = run["curve"], Path(args.out), run["cfg"]
    if not curve:
        print("g1-velocity: no evaluation ran (training stopped before the first one)", file=sys.stderr)
        return 1
    hit = next((c for c in curve if reached(c)), None)
    last = curve[-1]
    result = {"task": TASK, "overrides": overrides, "device": cfg.device, "num_envs": cfg.num_envs,
              "seed": args.seed, "date": time.strftime("%Y-%m-%d"), "iterations": run["iterations"],
              "train_s": run["train_s"], "env_steps": last["env_steps"], "pushes": bool(pushes),
              "training_pushes": trained_pushes, "evaluation_pushes": FLOOR_PUSHES,
              "up_fraction": last["up_fraction"], "lin_vel_error_mps": last["lin_vel_error_mps"],
              "standing_still_error_mps": last["standing_still_error_mps"],
              "target_up_fraction": TARGET_UP, "target_error_ratio": TARGET_RATIO,
              "target_lin_vel_error_mps": TARGET_RATIO * last["standing_still_error_mps"],
              "target_reached": reached(last), "target_reached_at_s": hit["wall_s"] if hit else None,
              "target": [t.as_dict() for t in targets(last["standing_still_error_mps"])],
              "baseline_zero_action": {k: base["zero_action"][k] for k in ("up_fraction", "lin_vel_error_mps")},
              "baseline_standing_still": base["standing_still"], "png": str(out / "g1_learning.png"),
              "curve": curve}
    if args.sets:
        result.update(sets_summary(curve))
    if not args.quick:
        result.update(full_range(run["policy"], with_pushes(cfg.task, FLOOR_PUSHES), args, device))
        plot_curve(curve, out / "g1_learning.png", key="lin_vel_error_mps",
                   target=TARGET_RATIO * last["standing_still_error_mps"],
                   extra=("up_fraction", "fraction up for 20 s (pushes)"),
                   ylabel="forward-velocity error [m/s] / fraction up",
                   title=f"horde g1-velocity (Unitree G1, flat), PPO, {cfg.num_envs} envs on {cfg.device}; "
                         f"standing still {last['standing_still_error_mps']:.2f} m/s")
    write_result(result, out, "g1", quick=args.quick)
    append_result(args.append, result)
    if args.sets:
        for name in COMMAND_SETS:
            print(f"  {describe_set(name, last['sets'][name])}", file=sys.stderr)
        failed = [k for k, ok in last["sets_checks"].items() if not ok]
        print(f"full-range floor at the end: {'MET' if last['sets_reached'] else 'not met: ' + ', '.join(failed)}; "
              f"first met at {_fmt(result['sets_reached_at_s'] and result['sets_reached_at_s'] / 60, 'min')}, "
              f"held at {_fmt(result['sets_held_share'], '', pct=True)} of the later evaluations", file=sys.stderr)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        verdict = "REACHED" if result["target_reached"] else "not reached"
        print(f"g1-velocity: {run['iterations']} iterations, {run['train_s'] / 60:.1f} min training on {cfg.device} "
              f"(seed {args.seed}); trained: up {100 * result['up_fraction']:.0f}% of {args.eval_envs} envs for "
              f"{args.eval_steps} steps (floor {100 * TARGET_UP:.0f}%), forward error "
              f"{result['lin_vel_error_mps']:.3f} m/s (floor {result['target_lin_vel_error_mps']:.3f}); "
              f"standing still {result['standing_still_error_mps']:.3f} m/s, zero actions up "
              f"{100 * base['zero_action']['up_fraction']:.0f}%: {verdict}")
    return 0


def _fmt(value: float | None, unit: str, pct: bool = False) -> str:
    if value is None:
        return "none"
    return f"{100 * value:.0f}%" if pct else f"{value:.1f} {unit}"


def sets_figures(figs: dict[str, dict]) -> dict:
    """An evaluation's command-set figures: each set's (``sets``), the floor's checks and their verdict."""
    checks = floor_checks(figs)
    return {"sets": figs, "sets_checks": checks, "sets_reached": all(checks.values())}


def _describe_sets(p: dict) -> str:
    if "sets" not in p:
        return ""
    f = p["sets"]
    short = ", ".join(f"{n} {100 * f[n]['up_fraction']:.0f}% up" + (f" {100 * f[n]['progress']:.0f}% far"
                                                                     if f[n]["progress"] is not None else "")
                      for n in COMMAND_SETS[1:])
    full = f["full"]
    return (f"[sets {'MET' if p['sets_reached'] else 'not met'}: full {100 * full['up_fraction']:.0f}% up, "
            f"{full['lin_vel_error_mps']:.3f} m/s / {full['yaw_rate_error_rps']:.3f} rad/s (standing "
            f"{full['standing']['lin_vel_error_mps']:.2f} / {full['standing']['yaw_rate_error_rps']:.2f}); "
            f"{short}] ")


def sets_summary(curve: list[dict]) -> dict:
    """When the full-range floor was first met and the share of the later evaluations that still meet it."""
    hit = next((k for k, c in enumerate(curve) if c.get("sets_reached")), None)
    later = curve[hit + 1:] if hit is not None else []
    last = curve[-1]
    return {"sets_reached": bool(last.get("sets_reached")), "sets_checks": last.get("sets_checks"),
            "sets_final": last.get("sets"),
            "sets_reached_at_s": curve[hit]["wall_s"] if hit is not None else None,
            "sets_reached_at_env_steps": curve[hit]["env_steps"] if hit is not None else None,
            "sets_held_share": (sum(bool(c.get("sets_reached")) for c in later) / len(later)) if later else None}


def full_range(policy, task_cfg, args, device: str) -> dict:
    """The moonshot's figure: the task's own command ranges (the curriculum's end), from the final policy."""
    cfg = copy.deepcopy(task_cfg)
    cfg.vx_curriculum = False
    out = tracking_error(policy.to(device), cfg, 20_000, num_envs=args.eval_envs, steps=args.eval_steps,
                         settle=args.settle, device=device, task=TASK)
    return {"full_range_lin_vel_error_mps": out["lin_vel_error_mps"],
            "full_range_yaw_rate_error_rps": out["yaw_rate_error_rps"],
            "full_range_fell_fraction": out["fell_fraction"], "moonshot_full_range_mps": 0.3}


if __name__ == "__main__":
    raise SystemExit(main())
