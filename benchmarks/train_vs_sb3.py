"""Training wall time to a return threshold: horde vs Stable-Baselines3, same machine, same process, same seeds.

    python benchmarks/train_vs_sb3.py [--json] [--quick] [--seeds 0 1 2] [--tasks cartpole pendulum]

- cartpole: horde PPO on `cartpole` vs SB3 PPO on gymnasium `CartPole-v1`; threshold: deterministic evaluation
  mean return >= 475 (horde: 100 episodes of 500 steps, reward ~1 per step; CartPole-v1: 10 episodes).
  The two tasks are not the same and horde's is the harder one to score 475 on: a continuous force in [-10, 10] N
  (CartPole-v1: a push of -10 or +10 N), initial cart position +-0.5 m, pole angle +-0.1 rad and velocities +-0.1
  (CartPole-v1: all four +-0.05), a return of 1 per step minus penalties on pole angle, cart position and velocity,
  pole rate and force and -2 on failure (CartPole-v1: 1 per step), so 475 needs nearly every episode to last its
  500 steps near the centre; the pole may lean to 0.4 rad before the episode fails (CartPole-v1: 0.21 rad). Both run
  at 50 Hz with a 2.4 m cart limit. Both tasks' settings are printed.
- pendulum: horde PPO (and SHAC when `horde.train.shac` is present) on `pendulum` vs SB3 PPO on `Pendulum-v1`
  (same dynamics constants: g=10, m=1, l=1, 2 N m, 8 rad/s, 50 ms, 200 steps); threshold: deterministic mean
  return >= -300 (horde: 100 episodes, Pendulum-v1: 10 episodes).

Each learner uses its library's recommended hyperparameters for the task (horde: configs/tuned/; SB3: the
rl-baselines3-zoo values); both are printed with N envs, device and repeats. The clock is the same for both: it
starts when the learner is built (envs and model constructed, imports done: both excluded) and stops at the first
evaluation that passes the threshold; evaluation time is excluded. Evaluation is frequent on both sides so the
time to threshold is not quantized coarsely: horde after every PPO iteration (~8k env steps), SB3 every 512 env
steps (two of its 256-step rollouts). Needs the `bench` extra (`pip install -e ".[bench]"`, i.e. stable-baselines3).
One torch thread for everyone; the learners take turns seed by seed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scratch import scratch_dir  # noqa: E402  (training runs' roots, removed at exit)

SB3_ZOO = {
    "CartPole-v1": dict(n_envs=8, policy="MlpPolicy", n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
                        n_epochs=20, ent_coef=0.0, learning_rate="lin_0.001", clip_range="lin_0.2"),
    "Pendulum-v1": dict(n_envs=4, policy="MlpPolicy", n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10,
                        ent_coef=0.0, learning_rate=1e-3, clip_range=0.2, use_sde=True, sde_sample_freq=4),
}
THRESHOLD = {"cartpole": 475.0, "pendulum": -300.0}
SB3_EVAL_EVERY = {"cartpole": 512, "pendulum": 8192}
"""SB3 evaluates every this many env steps (CartPole-v1 zoo rollout: 8 envs x 32 steps = 256)."""
HORDE_EVAL_EVERY = {"cartpole": 1, "pendulum": 10}
"""horde evaluates every this many PPO/SHAC iterations."""
CLOCK = ("training wall time from the built learner (env and model construction and imports excluded on both "
         "sides) to the first evaluation at or above the threshold; evaluation time excluded on both sides")
GYM_ID = {"cartpole": "CartPole-v1", "pendulum": "Pendulum-v1"}
TASK_NOTE = {
    "cartpole": "horde's cartpole is a harder variant than CartPole-v1: continuous force in [-10, 10] N (not two "
                "discrete pushes), initial states 2-10x wider (cart +-0.5 m, pole +-0.1 rad, velocities +-0.1), "
                "return shaped by penalties and -2 on failure so 475 needs ~all 500 steps near the centre; its pole "
                "may lean to 0.4 rad (CartPole-v1: 0.21 rad)",
    "pendulum": "same dynamics constants on both sides (g=10, m=1, l=1, 2 N m, 8 rad/s, 50 ms, 200 steps)",
}
BUDGET_S = {"cartpole": 300.0, "pendulum": 400.0}


def _linear(start: float):
    return lambda progress: progress * start


def run_sb3(task: str, seed: int, *, budget_s: float, eval_every: int) -> dict:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    from horde.train.libs.sb3 import quiet_logger

    params = dict(SB3_ZOO[GYM_ID[task]])
    n_envs = params.pop("n_envs")
    for k in ("learning_rate", "clip_range"):
        if isinstance(params[k], str):
            params[k] = _linear(float(params[k][4:]))
    env = make_vec_env(GYM_ID[task], n_envs=n_envs, seed=seed)
    eval_env = make_vec_env(GYM_ID[task], n_envs=1, seed=seed + 1000)
    model = quiet_logger(PPO(env=env, seed=seed, verbose=0, device="cpu", **params))

    class Clock(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.t0 = time.perf_counter()
            self.eval_s = 0.0
            self.curve: list[tuple[float, int, float]] = []
            self.reached: tuple[float, int] | None = None

        def _on_step(self) -> bool:
            if self.n_calls % max(eval_every // n_envs, 1):
                return True
            t = time.perf_counter()
            mean, _ = evaluate_policy(self.model, eval_env, n_eval_episodes=10, deterministic=True)
            self.eval_s += time.perf_counter() - t
            train_s = time.perf_counter() - self.t0 - self.eval_s
            self.curve.append((train_s, self.num_timesteps, float(mean)))
            if mean >= THRESHOLD[task]:
                self.reached = (train_s, self.num_timesteps)
                return False
            return train_s < budget_s

    clock = Clock()
    model.learn(total_timesteps=10_000_000, callback=clock)
    setup = {"num_envs": n_envs, "device": str(model.device), "eval_episodes": 10, "eval_every_env_steps": eval_every,
             "hyperparameters": SB3_ZOO[GYM_ID[task]], "task_settings": gym_task_settings(eval_env.envs[0])}
    return _result("sb3-ppo", GYM_ID[task], seed, clock.reached, clock.curve, setup)


def gym_task_settings(env) -> dict:
    """The gymnasium task's constants that decide how hard it is (CartPole-v1 or Pendulum-v1)."""
    u = env.unwrapped
    out = {"id": env.spec.id if env.spec else type(u).__name__, "max_episode_steps": env.spec.max_episode_steps
           if env.spec else None}
    for name in ("force_mag", "tau", "x_threshold", "theta_threshold_radians", "kinematics_integrator",
                 "max_speed", "max_torque", "dt", "g", "m", "l"):
        if hasattr(u, name):
            out[name] = getattr(u, name)
    if out["id"] == "CartPole-v1":
        out["action"] = "discrete: -force_mag or +force_mag"
        out["initial_state"] = "every state variable uniform in +-0.05 (gymnasium's reset)"
        out["reward"] = "1 per step"
    return out


def horde_task_settings(task_cfg) -> dict:
    """horde's task config as trained and evaluated (every field of its dataclass)."""
    import dataclasses

    return dataclasses.asdict(task_cfg) if dataclasses.is_dataclass(task_cfg) else dict(task_cfg)


def run_horde(task: str, algo: str, seed: int, *, budget_s: float, eval_every_iters: int) -> dict:
    from horde.policies import InferencePolicy
    from horde.train.config import compose
    from horde.train.evaluate import evaluate

    import torch.utils.tensorboard  # noqa: F401  (the trainer's TensorBoard writer; an import, outside the clock)

    root = scratch_dir("horde-bench-")
    cfg, name, raw = compose([f"task={task}", f"algo={algo}", f"seed={seed}", "max_iterations=100000",
                              "save_interval=100000", f"run_root={root}"])
    if algo == "ppo":
        from horde.train.ppo import PPOTrainer as Trainer
    else:
        from horde.train.shac import SHACTrainer as Trainer
    trainer = Trainer(cfg, name, raw, quiet=True)
    state = {"t0": time.perf_counter(), "eval_s": 0.0, "curve": [], "reached": None, "steps": 0}
    steps_per_iter = cfg.num_envs * (getattr(cfg.algo, "num_steps_per_env", None) or cfg.algo.horizon)

    def on_iteration(tr) -> bool:
        state["steps"] += steps_per_iter
        if tr.iteration % eval_every_iters:
            return False
        t = time.perf_counter()
        policy = InferencePolicy(tr.alg.get_policy() if hasattr(tr, "alg") else tr.actor)
        mean = evaluate(policy, name, cfg.task, episodes=100, device=cfg.device).summary()["mean_return"]
        state["eval_s"] += time.perf_counter() - t
        train_s = time.perf_counter() - state["t0"] - state["eval_s"]
        state["curve"].append((train_s, state["steps"], float(mean)))
        if mean >= THRESHOLD[task]:
            state["reached"] = (train_s, state["steps"])
            return True
        return train_s >= budget_s

    trainer.learn(on_iteration=on_iteration)
    setup = {"num_envs": cfg.num_envs, "device": str(cfg.device), "eval_episodes": 100,
             "eval_every_env_steps": steps_per_iter * eval_every_iters, "hyperparameters": horde_hyperparameters(cfg),
             "task_settings": horde_task_settings(cfg.task)}
    return _result(f"horde-{algo}", task, seed, state["reached"], state["curve"], setup)


def horde_hyperparameters(cfg) -> dict:
    """The learner's resolved hyperparameters (configs/tuned/<task>_<algo>.yaml over the schema defaults)."""
    import dataclasses

    from omegaconf import OmegaConf

    algo = dataclasses.asdict(cfg.algo) if dataclasses.is_dataclass(cfg.algo) else OmegaConf.to_container(cfg.algo)
    policy = algo.pop("policy", {})
    return {"num_envs": cfg.num_envs, **algo, **{f"policy.{k}": v for k, v in policy.items()
                                                if k in ("actor_hidden_dims", "critic_hidden_dims", "activation",
                                                         "init_noise_std", "obs_normalization",
                                                         "obs_normalization_until", "value_scale", "action_squash")}}


def _result(learner: str, env: str, seed: int, reached, curve, setup: dict) -> dict:
    return {"learner": learner, "env": env, "seed": seed, "reached": reached is not None, "setup": setup,
            "seconds_to_threshold": reached[0] if reached else None,
            "env_steps_to_threshold": reached[1] if reached else None,
            "final_eval_return": curve[-1][2] if curve else None, "curve": curve}


def _median(rows: list[dict], key: str) -> tuple[float | None, float | None, float | None]:
    vals = [r[key] for r in rows if r[key] is not None]
    if len(vals) < len(rows) or not vals:
        return None, None, None
    return statistics.median(vals), min(vals), max(vals)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="cartpole, one seed, horde only unless SB3 is installed")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--tasks", nargs="+", default=["cartpole", "pendulum"])
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        import stable_baselines3  # noqa: F401
        have_sb3 = True
    except ImportError:
        have_sb3 = False
        print("stable-baselines3 not installed (pip install -e '.[bench]'): horde only", file=sys.stderr)
    seeds, tasks = (args.seeds[:1], ["cartpole"]) if args.quick else (args.seeds, args.tasks)
    try:
        import horde.train.shac  # noqa: F401
        have_shac = True
    except ImportError:
        have_shac = False
    rows = []
    for task in tasks:
        learners = [("horde", "ppo")] + ([("horde", "shac")] if task == "pendulum" and have_shac else [])
        learners += [("sb3", "ppo")] if have_sb3 and not args.quick else []
        if not args.json:
            print(f"# {task}: threshold {THRESHOLD[task]} (deterministic eval), {len(seeds)} seeds each; clock: "
                  f"{CLOCK}", flush=True)
            print(f"# {task}: {TASK_NOTE[task]}", flush=True)
        # Seed by seed, learners in turn: a change in the machine's load during the run falls on both sides.
        for seed in seeds:
            for lib, algo in learners:
                if lib == "sb3":
                    r = run_sb3(task, seed, budget_s=BUDGET_S[task], eval_every=SB3_EVAL_EVERY[task])
                else:
                    r = run_horde(task, algo, seed, budget_s=BUDGET_S[task], eval_every_iters=HORDE_EVAL_EVERY[task])
                r["task"] = task
                rows.append(r)
                if seed == seeds[0] and not args.json:
                    print(f"  {r['learner']} on {r['env']}: {r['setup']}", flush=True)
                line = {k: v for k, v in r.items() if k not in ("curve", "setup")}
                print(json.dumps(line) if args.json else
                      f"  {r['learner']:<11} seed {seed}: " + (
                          f"{r['seconds_to_threshold']:.1f} s, {r['env_steps_to_threshold']:,} env steps"
                          if r["reached"] else f"not reached (last eval {r['final_eval_return']})"), flush=True)
    summary = []
    for task in tasks:
        by = {}
        for r in rows:
            if r["task"] == task:
                by.setdefault(r["learner"], []).append(r)
        for learner, rs in by.items():
            med, lo, hi = _median(rs, "seconds_to_threshold")
            smed, _, _ = _median(rs, "env_steps_to_threshold")
            summary.append({"task": task, "learner": learner, "env": rs[0]["env"], "seeds": len(rs),
                            "median_seconds": med, "min_seconds": lo, "max_seconds": hi, "median_env_steps": smed,
                            "seconds_per_seed": [r["seconds_to_threshold"] for r in rs],
                            "threshold": THRESHOLD[task], "num_envs": rs[0]["setup"]["num_envs"],
                            "device": rs[0]["setup"]["device"], "clock": CLOCK,
                            "hyperparameters": rs[0]["setup"]["hyperparameters"],
                            "task_settings": rs[0]["setup"]["task_settings"], "task_note": TASK_NOTE[task]})
        b = next((s for s in summary if s["task"] == task and s["learner"] == "sb3-ppo"), None)
        for learner in ("horde-ppo", "horde-shac"):
            h = next((s for s in summary if s["task"] == task and s["learner"] == learner), None)
            if h and b and h["median_seconds"] and b["median_seconds"]:
                summary.append({"task": task, "learner": f"ratio:sb3-ppo/{learner}", "wall_time_ratio":
                                b["median_seconds"] / h["median_seconds"], "seeds": len(seeds)})
    for s in summary:
        print(json.dumps({"summary": True, **s}) if args.json else "  " + json.dumps(s))
    if not args.json:
        for s in summary:
            if "wall_time_ratio" in s:
                print(f"# {s['task']}: median wall time to threshold, {s['learner'][6:]} = {s['wall_time_ratio']:.2f} "
                      f"over {s['seeds']} seeds", flush=True)
            elif s.get("median_seconds") is not None:
                per_seed = ", ".join(f"{v:.2f}" for v in s["seconds_per_seed"])
                print(f"# {s['task']} {s['learner']:<10} median {s['median_seconds']:.2f} s (min {s['min_seconds']:.2f}, "
                      f"max {s['max_seconds']:.2f}; seeds: {per_seed}), median {s['median_env_steps']:,} env steps",
                      flush=True)
    if args.json:
        print(json.dumps({"curves": [{k: r[k] for k in ("task", "learner", "seed", "curve")} for r in rows]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
