"""What perception costs per env step: the rough quadruped blind, with the height scan, with the scan and the
privileged critic group, and with a depth camera, stepped in one process with alternating timed windows.

    python benchmarks/perception.py [--json] [--quick] [--device cpu] [--num-envs 256 1024 4096] [--repeats 5]

Variants (task.height_scan.enabled / task.privileged_critic on quadruped-rough-perceptive's config, everything
else equal): ``blind`` (neither: quadruped-rough's observations), ``scan`` (17 x 11 points), ``scan+critic``,
``depth`` (quadruped-rough-depth's 32 x 24 depth camera instead of the scan, ray-traced by Newton's SensorCamera;
``--depth-size W H`` changes it).
Each figure is the median of ``--repeats`` windows of random actions; the variants' windows alternate so machine
load falls on all alike. ``cost_us_per_env_step`` = 1e6 x (1 / rate - 1 / blind rate): the scan's (and the critic
group's) share of one env step.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

import torch


def build(variant: str, num_envs: int, device: str, depth_size: tuple[int, int] = (32, 24)):
    from horde.envs import get_task, make

    cfg = get_task("quadruped-rough-perceptive").config
    cfg = dataclasses.replace(cfg, height_scan=dataclasses.replace(cfg.height_scan, enabled=variant in (
        "scan", "scan+critic")), privileged_critic=variant == "scan+critic")
    if variant == "depth":
        cam = get_task("quadruped-rough-depth").config.depth_camera
        cfg = dataclasses.replace(cfg, depth_camera=dataclasses.replace(cam, width=depth_size[0],
                                                                        height=depth_size[1]))
    return make("quadruped-rough-perceptive", num_envs=num_envs, device=device, seed=0, config=cfg)


def window(env, actions, steps: int) -> float:
    env.step(actions[0])
    if env.dev.is_cuda:
        torch.cuda.synchronize()
    t = time.perf_counter()
    for k in range(steps):
        env.step(actions[k % len(actions)])
    if env.dev.is_cuda:
        torch.cuda.synchronize()
    return env.num_envs * steps / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="N=64, 2 windows of 5 steps (smoke test)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--num-envs", nargs="+", type=int, default=[256, 1024, 4096])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20, help="control steps per window")
    ap.add_argument("--depth-size", nargs=2, type=int, default=[32, 24], metavar=("W", "H"))
    args = ap.parse_args(argv)
    sizes, repeats, steps = ([64], 2, 5) if args.quick else (args.num_envs, args.repeats, args.steps)
    torch.set_num_threads(1)
    variants = ("blind", "scan", "scan+critic", "depth")
    for n in sizes:
        envs = {v: build(v, n, args.device, tuple(args.depth_size)) for v in variants}
        g = torch.Generator().manual_seed(0)
        actions = [(torch.rand(n, envs["blind"].num_actions, generator=g) * 2 - 1).to(envs["blind"].device)
                   for _ in range(8)]
        rates = {v: [] for v in variants}
        for _ in range(repeats):
            for v in variants:
                rates[v].append(window(envs[v], actions, steps))
        blind = statistics.median(rates["blind"])
        for v in variants:
            r = statistics.median(rates[v])
            row = {"variant": v, "num_envs": n, "device": args.device, "env_steps_per_s": r,
                   "obs_dim": envs[v].obs_dim, "critic_dim": len(envs[v].critic_names),
                   "ratio_to_blind": r / blind, "cost_us_per_env_step": 1e6 * (1 / r - 1 / blind),
                   "repeats": repeats, "steps_per_window": steps}
            print(json.dumps(row) if args.json else
                  f"N={n:<5} {v:<12} {r:>10,.0f} env-steps/s  x{r / blind:.3f} of blind  "
                  f"{row['cost_us_per_env_step']:+.2f} us/env-step  (obs {row['obs_dim']}, critic "
                  f"{row['critic_dim']})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
