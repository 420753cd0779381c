"""Fingerprints of same-seed trajectories and short training runs, to prove that a refactor keeps behaviour.

    python benchmarks/trajectory_digest.py [--tasks ant humanoid reach quadruped quadruped-rough quadruped:go2
                                            lift@arm=joint_delta@gripper=delta]
                                           [--learners cartpole:ppo pendulum:shac quadruped:ppo] [--solver mujoco]
                                           [--warp-opt-level 0..3] [--sim mujoco_actuators=false ...]

Per task: 64 envs (seed 3), 300 steps of seeded random actions (torch generator seed 7); one sha256 over the
reset observation, every step's observation, reward, terminated and truncated, and the final state, with the first
episode statistics. Per learner: 3 iterations at 32 envs, the sha256 of the policy's state dict. Run it before and
after a change (e.g. the old commit from a ``git worktree`` on ``PYTHONPATH``) and compare the lines: bit-identical
behaviour gives identical digests.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import tempfile

import torch
import warp as wp
import yaml

wp.config.quiet = True


def trajectory_digest(spec: str, *, num_envs: int = 64, steps: int = 300, solver: str | None = None,
                      sim: dict | None = None) -> str:
    from horde.envs import get_task, make

    name, *fields = spec.split("@")
    task, _, robot = name.partition(":")
    cfg = copy.deepcopy(get_task(task).config)
    if robot:
        cfg.robot = robot
    for item in fields:  # task@field=value@...: a config field changed (lift@arm=joint_delta@gripper=delta)
        key, _, value = item.partition("=")
        if not hasattr(cfg, key):
            raise SystemExit(f"{spec}: task {task} has no field '{key}'")
        setattr(cfg, key, yaml.safe_load(value))
    changes = {**(sim or {}), **({"solver": solver} if solver is not None else {})}
    if changes and hasattr(cfg, "sim"):
        import dataclasses

        cfg.sim = dataclasses.replace(cfg.sim, **changes)
    env = make(task, num_envs=num_envs, device="cpu", seed=3, config=cfg)
    g = torch.Generator().manual_seed(7)
    h = hashlib.sha256(env.reset().numpy().tobytes())
    for _ in range(steps):
        r = env.step(torch.rand(num_envs, env.num_actions, generator=g) * 2 - 1)
        for x in (r.obs, r.reward, r.terminated, r.truncated):
            h.update(x.detach().numpy().tobytes())
    h.update(env.state.numpy().tobytes())
    stats = {k: round(v, 5) for k, v in sorted(env.pop_episode_stats().items())[:4]}
    return f"{spec} {h.hexdigest()[:16]} {stats}"


def learner_digest(spec: str, sim: dict | None = None) -> str:
    from horde.envs import get_task
    from horde.train.config import compose
    from horde.train.session import parameters_digest

    task, _, algo = spec.partition(":")
    overrides = [f"task.sim.{k}={v}" for k, v in (sim or {}).items()] if hasattr(get_task(task).config, "sim") else []
    with tempfile.TemporaryDirectory() as tmp:
        # cpu={}: the tuned configs' CPU recipes off, as every recorded learner digest ran (until 2026-12-07 an
        # explicit algo= dropped a profile's algo.* keys, and the digest sets num_envs and max_iterations itself)
        cfg, name, raw = compose([f"task={task}", f"algo={algo or 'ppo'}", "num_envs=32", "max_iterations=3",
                                  "cpu={}", f"run_root={tmp}", *overrides])
        if algo == "shac":
            from horde.train.shac import SHACTrainer as Trainer
        else:
            from horde.train.ppo import PPOTrainer as Trainer
        trainer = Trainer(cfg, name, raw, quiet=True)
        summary = trainer.learn()
        return f"{spec} {parameters_digest(trainer.policy())[:16]} {summary['iterations']} {summary['env_steps']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="*", default=["ant", "humanoid", "reach", "quadruped", "quadruped-rough"])
    ap.add_argument("--learners", nargs="*", default=["cartpole:ppo", "pendulum:shac", "quadruped:ppo"])
    ap.add_argument("--solver", help="articulated tasks on this solver (e.g. mujoco: MuJoCo-Warp, the GPU's)")
    ap.add_argument("--warp-opt-level", type=int, choices=range(4), default=None,
                    help="Warp's kernel optimisation level (default: Warp's, -O2 on the CPU); part of Warp's module "
                         "hash, so each level builds and caches its own kernels")
    ap.add_argument("--sim", nargs="*", default=[], metavar="KEY=VALUE",
                    help="task.sim settings of the articulated tasks (true/false, numbers, names)")
    args = ap.parse_args(argv)
    sim = {key: yaml.safe_load(value) for key, _, value in (item.partition("=") for item in args.sim)}
    if args.warp_opt_level is not None:
        wp.config.optimization_level = args.warp_opt_level
    for spec in args.tasks:
        print(trajectory_digest(spec, solver=args.solver, sim=sim), flush=True)
    for spec in args.learners:
        print(learner_digest(spec, sim), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
