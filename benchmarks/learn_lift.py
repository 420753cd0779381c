"""Train PPO on ``lift`` (horde's arm and gripper, one cube) and report how often the cube ends up lifted.

    python benchmarks/learn_lift.py [--minutes 30] [--seed 0] [--eval-every 50] [--append FILE] [--json] [--quick]
                                    [--out docs/img] [override ...]

The target (issue 29), on 2 CPU cores within 30 minutes: the deterministic policy lifts the cube at least 5 cm and
holds it there to the episode's end in at least 30% of 64 fresh envs (``held_at_end_fraction``; moonshot 60%):
``python benchmarks/learn_lift.py --minutes 30 num_envs=512``. The trivial baseline, zero actions (the arm at rest,
the gripper open), is evaluated on the same measure in the same run and printed beside it (it scores 0). The GPU
command: ``python benchmarks/learn_lift.py --minutes 30 device=cuda:0 num_envs=4096``.

Every ``--eval-every`` iterations the policy's action mean drives ``--eval-envs`` fresh envs (other seeds) for one
episode (250 control steps, 5 s). Reported: the fraction of envs whose cube stayed at least ``--height`` above its
resting height for ``--hold`` consecutive control steps (0.5 s: carried, not batted into the air; the first CPU
run threw cubes 14 cm up within 2 minutes) at some point of the episode (``lifted_fraction``), the fraction holding
it there at the end, and the mean best height [m]. Evaluation time is not counted. Writes ``<out>/lift_learning.png`` and
``<out>/lift_learning.json``; ``--append FILE`` adds the run's summary as one JSON line to FILE (seeds over
sessions).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learning import append_result, plot_curve, train_with_evals, write_result  # noqa: E402
from learning import plot_seeds as plot_runs  # noqa: E402

from horde.envs import make  # noqa: E402

TARGET_FRACTION = 0.3
TARGET_KEY = "held_at_end_fraction"


@torch.inference_mode()
def lift_success(policy, task_cfg, seed: int, *, num_envs: int, height: float, hold: int,
                 device: str = "cpu") -> dict:
    """Lift figures of ``policy`` over one episode of ``num_envs`` fresh envs."""
    env = make("lift", num_envs=num_envs, seed=seed, config=task_cfg, device=device)
    obs = env.obs
    best = torch.zeros(num_envs, device=env.device)
    alive = torch.ones(num_envs, dtype=torch.bool, device=env.device)
    last = torch.zeros(num_envs, device=env.device)
    run = torch.zeros(num_envs, dtype=torch.int32, device=env.device)
    held = torch.zeros(num_envs, dtype=torch.bool, device=env.device)
    target_err = torch.zeros(num_envs, device=env.device)
    for _ in range(env.max_episode_length):
        r = env.step(policy(obs.clone()))
        obs = r.obs
        h = torch.where(alive, env.cube_height, torch.zeros_like(best))
        best = torch.maximum(best, h)
        last = torch.where(alive, h, last)
        run = torch.where(h >= height, run + 1, torch.zeros_like(run))
        held |= run >= hold
        cube = env.world.object_pose[:, 0, :3]
        target_err = torch.where(alive & ~r.dones, (cube - env.target).norm(dim=1), target_err)
        alive &= ~r.dones
    return {"lifted_fraction": float(held.float().mean()),
            "held_at_end_fraction": float((last >= height).float().mean()), "best_height_m": float(best.mean()),
            "target_error_m": float(target_err[last >= height].median()) if bool((last >= height).any()) else None}


@torch.inference_mode()
def held_cube_frame(policy, task_cfg, path: Path, *, envs: int = 3, steps: int = 200) -> None:
    """A 3D frame (Newton's ray-traced SensorCamera) of ``envs`` fresh envs after ``steps`` control steps of the
    deterministic policy: the cube held above the table."""
    import imageio.v2 as imageio

    from horde.sim.camera import chase_camera, tile

    env = make("lift", num_envs=envs, seed=20_000, config=task_cfg, device="cpu")
    obs = env.obs
    for _ in range(steps):
        obs = env.step(policy(obs.clone())).obs
    cube = env.world.object_pose[:, 0, :3].numpy()
    cam = chase_camera(env.world, list(range(envs)), width=400, height=300, distance=1.2, azimuth=1.2,
                       elevation=0.25)
    target = 0.5 * (cube + [0.25, 0.0, 0.35])  # between the cube and the arm's shoulder
    path.parent.mkdir(parents=True, exist_ok=True)
    imageio.imwrite(path, tile(cam.render(env.world.state_0, target), columns=envs))


def plot_seeds(results_file: Path, path: Path) -> None:
    """Every run of ``results_file`` (``--append``'s JSON lines): held-at-end fraction against training minutes,
    with the target and the zero-action baseline."""
    plot_runs(results_file, path, key=TARGET_KEY, target=TARGET_FRACTION, ylabel="cube >= 5 cm up at episode end",
              title="horde lift, PPO on {device} (64 fresh envs, deterministic policy)",
              baseline_label="zero actions (arm at rest)")


def zero_action_baseline(overrides: list[str], args, device: str) -> dict:
    """The lift figures of the zero-action policy (the arm holds its pose, the gripper stays open) on the same
    evaluation envs as the trained policy's first evaluation."""
    from horde.train.config import compose

    cfg, _, _ = compose(overrides)
    return lift_success(lambda obs: torch.zeros(obs.shape[0], len(_action_names(cfg.task)), device=obs.device),
                        cfg.task, 10_000, num_envs=args.eval_envs, height=args.height, hold=args.hold, device=device)


def _action_names(task_cfg) -> tuple[str, ...]:
    from horde.envs.lift import action_names_of

    return action_names_of(task_cfg.arm, task_cfg.gripper)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30.0, help="wall-time budget for training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--append", default=None, help="append the summary as a JSON line to this file")
    ap.add_argument("--eval-every", type=int, default=50, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--height", type=float, default=0.05, help="lift counted above this height [m]")
    ap.add_argument("--hold", type=int, default=25, help="control steps the cube must stay above --height")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--frame", default=None, help="write a 3D frame of the trained policy's held cubes here "
                    "(default: <out>/lift_3d.png, none with --quick)")
    ap.add_argument("--replot", default=None, metavar="FILE", help="plot every run of an --append file into "
                    "<out>/lift_learning.png and exit")
    ap.add_argument("--keep", default=None, help="keep the run (checkpoints, config) under this folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 iterations on 16 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=128 device=cuda:0")
    args = ap.parse_args(argv)
    if args.replot:
        plot_seeds(Path(args.replot), Path(args.out) / "lift_learning.png")
        print(f"wrote {Path(args.out) / 'lift_learning.png'}")
        return 0
    overrides = ["task=lift", f"seed={args.seed}", *args.overrides]
    if args.quick:
        overrides += ["num_envs=16", "max_iterations=2", "task.episode_length=20"]
        args.eval_every, args.eval_envs = 2, 4
    device = next((o.split("=", 1)[1] for o in overrides if o.startswith("device=")), "cpu")
    baseline = zero_action_baseline(overrides, args, device)
    print(f"trivial baseline (zero actions: arm at rest, gripper open): held {baseline[TARGET_KEY]:.2f}  "
          f"lifted {baseline['lifted_fraction']:.2f}", file=sys.stderr, flush=True)
    run = train_with_evals(
        overrides, lambda pol, cfg, seed: lift_success(pol.to(device), cfg, seed, num_envs=args.eval_envs,
                                                       height=args.height, hold=args.hold, device=device),
        run_root=args.keep, eval_every=args.eval_every, minutes=args.minutes,
        describe=lambda p: f"lifted {p['lifted_fraction']:.2f}  held {p['held_at_end_fraction']:.2f}  "
                           f"best height {p['best_height_m']:.3f} m")
    curve, out, cfg = run["curve"], Path(args.out), run["cfg"]
    if not curve:
        print("lift: no evaluation ran (training stopped before the first one)", file=sys.stderr)
        return 1
    reached = next((c for c in curve if c[TARGET_KEY] >= TARGET_FRACTION), None)
    result = {"task": "lift", "overrides": overrides, "device": cfg.device, "num_envs": cfg.num_envs,
              "iterations": run["iterations"], "train_s": run["train_s"],
              **{k: curve[-1][k] for k in ("lifted_fraction", "held_at_end_fraction", "best_height_m")},
              "best_held_at_end_fraction": max(c[TARGET_KEY] for c in curve), "seed": args.seed,
              "target_key": TARGET_KEY, "target_fraction": TARGET_FRACTION, "baseline_zero_action": baseline,
              "env_steps": curve[-1]["env_steps"], "date": time.strftime("%Y-%m-%d"), "height_m": args.height, "hold_steps": args.hold,
              "target_reached_at_s": reached["wall_s"] if reached else None,
              "png": str(out / "lift_learning.png"), "curve": curve}
    if not args.quick:
        plot_curve(curve, out / "lift_learning.png", key=TARGET_KEY, target=TARGET_FRACTION,
                   extra=("lifted_fraction", "lifted 5 cm for 0.5 s"), ylabel="fraction of 64 envs, cube 5 cm up",
                   title=f"horde lift (arm7 + gripper), PPO, {cfg.num_envs} envs on {cfg.device}")
    if not args.quick:
        torch.save(run["policy"].to("cpu"), out / "lift_policy.pt")  # held_cube_frame(torch.load(...)) redraws
    if not args.quick or args.frame:
        frame = Path(args.frame or out / "lift_3d.png")
        held_cube_frame(run["policy"].to("cpu"), cfg.task, frame)
        result["frame"] = str(frame)
    write_result(result, out, "lift", quick=args.quick)
    append_result(args.append, result)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        print(f"lift: {run['iterations']} iterations, {run['train_s'] / 60:.1f} min training on {cfg.device}; "
              f"cube {args.height * 100:.0f} cm up at the episode's end in {100 * result[TARGET_KEY]:.0f}% of "
              f"{args.eval_envs} envs (target {100 * TARGET_FRACTION:.0f}%, zero actions "
              f"{100 * baseline[TARGET_KEY]:.0f}%), best {100 * result['best_held_at_end_fraction']:.0f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
