"""Where do MuJoCo's own actuators and horde's PD kernel part ways in training? The checks behind
``task.sim.mujoco_actuators`` staying off (benchmarks/README.md, "MuJoCo's own actuators"), on the quadruped's CPU
recipe (as `learning_suite.py` trains it: compiled 128-64-32 networks, 256 envs), each path built from the same seed.

    python benchmarks/actuator_paths.py step [--envs 64] [--steps 60] [--std 0.3] [--seed 0]
    python benchmarks/actuator_paths.py iteration [--iterations 1] [--seed 0]
    python benchmarks/actuator_paths.py cross-eval [--minutes 4] [--seed 0] [--eval-seeds 8]
    (each with [--json] and [override ...], added to both paths' recipe)

``step``: the same seeded Gaussian actions (``--std``) into two envs of the training config, one per path; after
every step the largest differences of the joints, observations, critic observations, rewards and reward terms
(absolute, and relative to each term's size where it exceeds 1), and the dones that differ. ``iteration``:
``PPOTrainer`` on each path for ``--iterations`` iterations; the last rollout's observations, actions, rewards and
dones, and the actor's parameters after the update, compared.
``cross-eval``: a policy trained for ``--minutes`` on each path, each evaluated as ``learn_quadruped.py`` evaluates
(64 fresh envs, 250 steps, the error after 50) on both paths over ``--eval-seeds`` seeds: a gap in how a policy is
judged shows as a column apart, a gap in what training produces as a row apart. Standing still scores 0.536 m/s.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

PATHS = ("false", "true")  # task.sim.mujoco_actuators: horde's kernel, MuJoCo's actuators


def _recipe() -> list[str]:
    """The quadruped's CPU recipe as the learning scoreboard trains it (``learning_suite.py``)."""
    from learning_suite import ENTRIES, cpu_overrides

    (entry,) = [e for e in ENTRIES if e.task == "quadruped"]
    return ["task=quadruped", *cpu_overrides(entry)]


def _overrides(path: str, seed: int, extra: list[str]) -> list[str]:
    """One path's training config: the recipe, the seed, the caller's overrides, then the path."""
    return [*_recipe(), f"seed={seed}", *extra, f"task.sim.mujoco_actuators={path}"]


def _compose(path: str, seed: int, extra: list[str], run_root: str):
    from horde.train.config import compose

    return compose([f"run_root={run_root}", *_overrides(path, seed, extra)])


def _largest(diff: torch.Tensor) -> float:
    return float(diff.abs().max()) if diff.numel() else 0.0


def check_step(envs: int, steps: int, std: float, seed: int, extra: list[str]) -> list[dict]:
    from horde.envs import make

    pair = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in PATHS:
            cfg, task, _ = _compose(path, seed, extra, tmp)
            pair.append(make(task, num_envs=envs, device="cpu", seed=seed, config=cfg.task))
    a, b = pair
    gen = torch.Generator().manual_seed(seed + 3)
    rows, worst = [], {}
    for t in range(1, steps + 1):
        act = std * torch.randn(envs, a.num_actions, generator=gen)
        ra, rb = a.step(act), b.step(act)
        row = {"step": t,
               "joints": _largest(a.world.joint_q - b.world.joint_q),
               "observations": _largest(ra.obs - rb.obs),
               "critic_observations": _largest(a.critic_obs - b.critic_obs),  # none without a privileged critic
               "rewards": _largest(ra.reward - rb.reward),
               "reward_terms": _largest(a.terms - b.terms),
               # each term's difference against its size (the torque term reaches thousands)
               "reward_terms_relative": float(((a.terms - b.terms).abs() / a.terms.abs().clamp(min=1.0)).max()),
               "dones_apart": int((ra.dones != rb.dones).sum()),
               "dones": int(ra.dones.sum())}
        rows.append(row)
        for k, v in row.items():
            if k != "step":
                worst[k] = max(worst.get(k, 0), v)
    first = next((r["step"] for r in rows if r["observations"] > 1e-4), None)
    return [{"check": "step", "envs": envs, "steps": steps, "std": std, "seed": seed, "largest": worst,
             "first_step_observations_over_1e-4": first, "per_step": rows}]


def check_iteration(iterations: int, seed: int, extra: list[str]) -> list[dict]:
    from horde.train.ppo import PPOTrainer

    torch.set_num_threads(1)
    got = {}
    for path in PATHS:
        with tempfile.TemporaryDirectory() as tmp:
            cfg, task, raw = _compose(path, seed, extra, tmp)
            tr = PPOTrainer(cfg, task, raw, quiet=True)
            tr.learn(on_iteration=lambda t: t.iteration >= iterations)
            st = tr.alg.storage
            obs = st.observations
            got[path] = {"observations": (obs["policy"] if hasattr(obs, "keys") else obs).clone(),
                         **{k: getattr(st, k).clone() for k in ("actions", "rewards", "dones")},
                         "actor_parameters": torch.cat([p.detach().flatten() for p in tr.alg.actor.parameters()])}
    a, b = (got[p] for p in PATHS)
    return [{"check": "iteration", "iterations": iterations, "seed": seed,
             "largest": {k: float((a[k].double() - b[k].double()).abs().max()) for k in a},
             "scale": {k: float(a[k].double().abs().mean()) for k in a}}]


def check_cross_eval(minutes: float, seed: int, eval_seeds: int, extra: list[str]) -> list[dict]:
    from learn_quadruped import tracking_error
    from learning import train_with_evals

    rows = []
    for trained in PATHS:
        run = train_with_evals(_overrides(trained, seed, extra), lambda p, c, s: {}, eval_every=10 ** 9,
                               minutes=minutes, describe=lambda p: "")
        for judged in PATHS:
            tc = copy.deepcopy(run["cfg"].task)
            tc.sim = dataclasses.replace(tc.sim, mujoco_actuators=judged == "true")
            evals = [tracking_error(run["policy"], tc, 20_000 + k, num_envs=64, steps=250, settle=50)
                     for k in range(eval_seeds)]
            rows.append({"check": "cross-eval", "trained_with_actuators": trained == "true",
                         "judged_with_actuators": judged == "true", "minutes": minutes, "seed": seed,
                         "iterations": run["iterations"],
                         **{k: round(statistics.mean(e[k] for e in evals), 4) for k in evals[0]},
                         "per_seed_error": [round(e["lin_vel_error_mps"], 3) for e in evals]})
    return rows


def _print(rows: list[dict]) -> None:
    for row in rows:
        if row["check"] == "cross-eval":
            print(f"trained on {'actuators' if row['trained_with_actuators'] else 'kernel':9s} "
                  f"({row['iterations']} it), judged on {'actuators' if row['judged_with_actuators'] else 'kernel':9s}"
                  f": error {row['lin_vel_error_mps']:.3f} m/s, fell {100 * row['fell_fraction']:.1f}% "
                  f"(standing still 0.536 m/s)")
            continue
        what = (f"{row['steps']} steps of {row['envs']} envs, actions std {row['std']}" if row["check"] == "step"
                else f"{row['iterations']} PPO iteration(s)")
        print(f"{row['check']}: {what}, seed {row['seed']}; largest difference, kernel against actuators:")
        for k, v in row["largest"].items():
            scale = f"  (mean |value| {row['scale'][k]:.2e})" if "scale" in row else ""
            print(f"  {k:22s} {v:.2e}{scale}" if isinstance(v, float) else f"  {k:22s} {v}")
        if row["check"] == "step":
            print(f"  first step an observation differs by more than 1e-4: "
                  f"{row['first_step_observations_over_1e-4'] or 'none'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("check", choices=("step", "iteration", "cross-eval"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--envs", type=int, default=64, help="step: envs per path")
    ap.add_argument("--steps", type=int, default=60, help="step: control steps")
    ap.add_argument("--std", type=float, default=0.3, help="step: the actions' standard deviation")
    ap.add_argument("--iterations", type=int, default=1, help="iteration: PPO iterations per path")
    ap.add_argument("--minutes", type=float, default=4.0, help="cross-eval: training minutes per path")
    ap.add_argument("--eval-seeds", type=int, default=8, help="cross-eval: evaluation seeds of 64 envs")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("overrides", nargs="*", help="added to both paths' recipe, e.g. num_envs=128")
    args = ap.parse_intermixed_args(argv)
    from horde.train.config import ConfigError

    try:
        if args.check == "step":
            rows = check_step(args.envs, args.steps, args.std, args.seed, args.overrides)
        elif args.check == "iteration":
            rows = check_iteration(args.iterations, args.seed, args.overrides)
        else:
            rows = check_cross_eval(args.minutes, args.seed, args.eval_seeds, args.overrides)
    except ConfigError as exc:
        print(f"actuator_paths.py: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        _print(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
