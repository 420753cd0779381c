"""Which learner trains horde's envs fastest: horde's PPO, rsl-rl's own OnPolicyRunner, skrl, Stable-Baselines3 and
rl-games on the same horde task, same env count, same seeds, same deterministic threshold.

    python benchmarks/libraries.py [--json] [--seeds 0 1 2] [--learners horde rsl-rl skrl sb3 rl-games]
                                   [--budget 240]

Task: horde's `cartpole` (continuous force), 128 envs on the CPU, threshold: deterministic mean return >= 475 over
100 episodes (horde.train.evaluate, the same evaluation for every learner), evaluated after every 8,192 env steps
(one horde / rsl-rl / SB3 rollout of 64 steps x 128 envs; two of skrl's and rl-games' 32-step rollouts). The
clock starts when the learner is built (env, model, imports: excluded) and stops at the first passing evaluation;
evaluation time is excluded. Each learner runs with the settings stated in the output (its module's SETTINGS in
horde.train.libs; horde and rsl-rl: configs/tuned/cartpole_ppo.yaml). One torch thread for everyone; learners take
turns seed by seed. Needs the extras: pip install -e ".[skrl,sb3,rl-games]" (missing libraries are skipped).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.util
import io
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # loaded from a file by the tests too
from scratch import scratch_dir  # noqa: E402  (run roots and library logs, removed at exit)

TASK, NUM_ENVS, THRESHOLD, EVAL_EVERY, EVAL_EPISODES = "cartpole", 128, 475.0, 8192, 100
LEARNERS = ("horde", "rsl-rl", "skrl", "sb3", "rl-games")
PACKAGE = {"rsl-rl": "rsl_rl", "skrl": "skrl", "sb3": "stable_baselines3", "rl-games": "rl_games"}


class _Reached(Exception):
    """Raised inside a library's training loop to stop it."""


class Clock:
    """Training time (evaluation excluded), env steps, the curve and the first passing evaluation."""

    def __init__(self, budget_s: float, max_env_steps: int | None = None) -> None:
        from horde.envs import get_task, make

        self.budget_s, self.max_env_steps = budget_s, max_env_steps
        self.task_cfg = copy.deepcopy(get_task(TASK).config)
        self.eval_core = make(TASK, num_envs=EVAL_EPISODES, seed=12345, config=self.task_cfg)
        self.t0 = time.perf_counter()
        self.eval_s = 0.0
        self.curve: list[tuple[float, int, float]] = []
        self.reached: tuple[float, int] | None = None

    def start(self) -> None:
        self.t0, self.eval_s = time.perf_counter(), 0.0

    def check(self, policy, env_steps: int) -> bool:
        """Evaluate ``policy``; True when training should stop (threshold reached or budget spent)."""
        from horde.train.evaluate import evaluate

        t = time.perf_counter()
        mean = evaluate(policy, TASK, self.task_cfg, episodes=EVAL_EPISODES, core=self.eval_core).summary()[
            "mean_return"]
        self.eval_s += time.perf_counter() - t
        train_s = time.perf_counter() - self.t0 - self.eval_s
        self.curve.append((round(train_s, 3), int(env_steps), round(float(mean), 2)))
        if mean >= THRESHOLD:
            self.reached = (train_s, int(env_steps))
            return True
        return train_s >= self.budget_s or (self.max_env_steps is not None and env_steps >= self.max_env_steps)


def run_horde(seed: int, clock: Clock) -> dict:
    from horde.policies import InferencePolicy
    from horde.train.config import compose
    from horde.train.ppo import PPOTrainer

    cfg, name, raw = compose([f"task={TASK}", f"seed={seed}", f"num_envs={NUM_ENVS}", "max_iterations=100000",
                              "save_interval=100000", f"run_root={scratch_dir('horde-bench-')}"])
    from train_vs_sb3 import horde_hyperparameters

    trainer = PPOTrainer(cfg, name, raw, quiet=True)
    per_iter, done = NUM_ENVS * cfg.algo.num_steps_per_env, [0]

    def on_iteration(tr) -> bool:
        done[0] += 1
        return clock.check(InferencePolicy(tr.alg.get_policy()), done[0] * per_iter)

    clock.start()
    trainer.learn(on_iteration=on_iteration)
    return {"settings": horde_hyperparameters(cfg)}


def run_rsl_rl(seed: int, clock: Clock) -> dict:
    from horde.train.libs import rsl_rl

    with contextlib.redirect_stdout(io.StringIO()):
        runner = rsl_rl.build(TASK, seed=seed, overrides=(f"num_envs={NUM_ENVS}",), log_dir=scratch_dir("horde-rsl-"))
    per_iter = NUM_ENVS * runner.cfg["num_steps_per_env"]
    clock.start()
    it = 0
    while True:
        with contextlib.redirect_stdout(io.StringIO()):
            runner.learn(num_learning_iterations=1)
        it += 1
        if clock.check(rsl_rl.deterministic_policy(runner), it * per_iter):
            break
    return {"settings": {k: v for k, v in runner.cfg.items() if k not in ("actor", "critic")}
            | {"actor": str(runner.cfg["actor"]), "critic": str(runner.cfg["critic"])}}


def run_skrl(seed: int, clock: Clock) -> dict:
    from horde.train.libs import skrl

    runner = skrl.build(skrl.make_env(TASK, num_envs=NUM_ENVS, seed=seed), seed=seed, timesteps=10**7,
                        directory=scratch_dir("horde-skrl-"))
    agent, rollouts = runner.agent, skrl.SETTINGS["agent"]["rollouts"]
    post = agent.post_interaction

    def post_interaction(*, timestep: int, timesteps: int) -> None:
        post(timestep=timestep, timesteps=timesteps)
        steps = (timestep + 1) * NUM_ENVS
        if steps % EVAL_EVERY == 0 and clock.check(skrl.deterministic_policy(agent), steps):
            raise _Reached

    agent.post_interaction = post_interaction
    clock.start()
    with contextlib.suppress(_Reached):
        runner.run("train")
    return {"settings": {**skrl.SETTINGS["agent"], "models": str(skrl.SETTINGS["models"]), "rollouts": rollouts}}


def run_sb3(seed: int, clock: Clock) -> dict:
    from stable_baselines3.common.callbacks import BaseCallback

    from horde.train.libs import sb3

    model = sb3.build(sb3.make_env(TASK, num_envs=NUM_ENVS, seed=seed), seed=seed)

    class Every(BaseCallback):
        def _on_step(self) -> bool:
            steps = self.model.num_timesteps
            if steps % EVAL_EVERY:
                return True
            return not clock.check(sb3.deterministic_policy(self.model), steps)

    clock.start()
    model.learn(total_timesteps=10**9, callback=Every())
    return {"settings": {**sb3.SETTINGS, "policy_kwargs": str(sb3.SETTINGS["policy_kwargs"]),
                         "observation normalization": "VecNormalize(norm_obs=True, norm_reward=False)"}}


def run_rl_games(seed: int, clock: Clock) -> dict:
    from horde.train.libs import rl_games

    def on_epoch(agent, epoch: int, frames: int) -> bool:
        return frames % EVAL_EVERY == 0 and clock.check(rl_games.deterministic_policy(agent), frames)

    with contextlib.redirect_stdout(io.StringIO()):
        agent = rl_games.build(rl_games.make_env(TASK, num_envs=NUM_ENVS, seed=seed), seed=seed, epochs=10**6,
                               on_epoch=on_epoch, directory=scratch_dir("horde-rlg-"))
        clock.start()
        agent.train()
    return {"settings": {k: v for k, v in rl_games.SETTINGS["config"].items()}
            | {"network": str(rl_games.SETTINGS["network"]), "minibatch_size": NUM_ENVS * 32 // 8}}


RUN = {"horde": run_horde, "rsl-rl": run_rsl_rl, "skrl": run_skrl, "sb3": run_sb3, "rl-games": run_rl_games}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=LEARNERS)
    ap.add_argument("--budget", type=float, default=240.0, help="training seconds per run before giving up")
    ap.add_argument("--plot", metavar="PNG", help="draw evaluation return against training wall time per learner")
    ap.add_argument("--from-json", metavar="FILE", help="with --plot: draw from a saved --json output, run nothing")
    args = ap.parse_args(argv)
    if args.from_json:
        lines = [json.loads(x) for x in open(args.from_json) if x.startswith("{")]
        plot(next(x["curves"] for x in lines if "curves" in x), args.plot)
        return 0
    torch.set_num_threads(1)
    learners = [x for x in args.learners if x == "horde" or importlib.util.find_spec(PACKAGE[x]) is not None]
    for x in sorted(set(args.learners) - set(learners)):
        print(f"# {x}: not installed (pip install -e '.[{x}]'), skipped", file=sys.stderr)
    out = print if not args.json else (lambda *a, **k: None)
    out(f"# {TASK}, {NUM_ENVS} envs on cpu, threshold {THRESHOLD} (deterministic, {EVAL_EPISODES} episodes, every "
        f"{EVAL_EVERY:,} env steps), seeds {args.seeds}, budget {args.budget:.0f} s of training per run", flush=True)
    rows = []
    for seed in args.seeds:
        for learner in learners:
            clock = Clock(args.budget)
            info = RUN[learner](seed, clock)
            r = {"learner": learner, "seed": seed, "reached": clock.reached is not None,
                 "seconds_to_threshold": clock.reached[0] if clock.reached else None,
                 "env_steps_to_threshold": clock.reached[1] if clock.reached else None,
                 "last_eval_return": clock.curve[-1][2] if clock.curve else None, "curve": clock.curve, **info}
            rows.append(r)
            if seed == args.seeds[0]:
                out(f"  {learner} settings: {json.dumps(info['settings'], default=str)}", flush=True)
            print(json.dumps({k: v for k, v in r.items() if k not in ("curve", "settings")}) if args.json else
                  f"  {learner:<9} seed {seed}: " + (f"{r['seconds_to_threshold']:.1f} s, "
                                                      f"{r['env_steps_to_threshold']:,} env steps" if r["reached"]
                                                      else f"not reached in {args.budget:.0f} s (last eval "
                                                           f"{r['last_eval_return']})"), flush=True)
    summary = []
    for learner in learners:
        rs = [r for r in rows if r["learner"] == learner]
        secs = [r["seconds_to_threshold"] for r in rs if r["reached"]]
        steps = [r["env_steps_to_threshold"] for r in rs if r["reached"]]
        summary.append({"learner": learner, "seeds": len(rs), "reached": len(secs),
                        "median_seconds": statistics.median(secs) if len(secs) == len(rs) else None,
                        "median_env_steps": statistics.median(steps) if len(steps) == len(rs) else None,
                        "seconds_per_seed": [r["seconds_to_threshold"] for r in rs]})
    base = next((s for s in summary if s["learner"] == "horde"), None)
    for s in summary:
        if base and base["median_seconds"] and s["median_seconds"]:
            s["wall_time_vs_horde"] = s["median_seconds"] / base["median_seconds"]
        print(json.dumps({"summary": True, **s}) if args.json else
              f"# {s['learner']:<9} reached {s['reached']}/{s['seeds']}: median "
              + (f"{s['median_seconds']:.1f} s, {s['median_env_steps']:,.0f} env steps"
                 + (f", {s['wall_time_vs_horde']:.2f}x horde's wall time" if "wall_time_vs_horde" in s else "")
                 if s["median_seconds"] else "n/a (not every seed reached the threshold)"), flush=True)
    curves = [{k: r[k] for k in ("learner", "seed", "curve")} for r in rows]
    if args.json:
        print(json.dumps({"curves": curves}))
    if args.plot:
        plot(curves, args.plot)
    return 0


def plot(curves: list[dict], path: str) -> None:
    """Deterministic evaluation return against training wall time, one colour per learner, one line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    colours = dict(zip(LEARNERS, ("C0", "C1", "C2", "C3", "C4"), strict=True))
    seen = set()
    for c in curves:
        t = [0.0] + [x[0] for x in c["curve"]]
        r = [None] + [x[2] for x in c["curve"]]
        label = c["learner"] if c["learner"] not in seen else None
        seen.add(c["learner"])
        ax.plot(t[1:], r[1:], color=colours[c["learner"]], alpha=0.6, lw=1.2, marker=".", label=label)
    ax.axhline(THRESHOLD, color="k", ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("training wall time [s] (evaluation excluded)")
    ax.set_ylabel("deterministic mean return, 100 episodes")
    ax.set_title(f"horde {TASK}, {NUM_ENVS} envs: each learner until its first evaluation >= {THRESHOLD:.0f}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
