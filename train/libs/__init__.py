"""Adapters that let the RL libraries people already use train horde tasks unchanged, one small module each.

Each module offers ``make_env(task, ...)`` (the library's own env interface over a horde env), ``train(...)`` (the
library's PPO with the settings stated in its ``SETTINGS``) and ``deterministic_policy(...)`` (the trained mean
action as a callable ``obs [N, obs_dim] -> actions [N, num_actions]`` for :func:`horde.train.evaluate.evaluate`).
The libraries are optional extras: ``pip install "horde[skrl]"``, ``"horde[sb3]"``, ``"horde[rl-games]"``.
rsl-rl needs no adapter module: :class:`horde.envs.RslRlVecEnv` is its ``VecEnv``.
"""

from __future__ import annotations

import importlib
import importlib.util

LIBRARIES = {"horde": None, "rsl-rl": "rsl_rl", "skrl": "skrl", "sb3": "stable_baselines3", "rl-games": "rl_games"}
"""Learners that train horde tasks, and the Python package each needs (horde's own PPO needs none)."""
EXTRAS = {"rsl-rl": "horde", "skrl": "horde[skrl]", "sb3": "horde[sb3]", "rl-games": "horde[rl-games]"}


def require(lib: str) -> None:
    """Fail in one line, naming the extra to install, when ``lib``'s package is missing."""
    if lib not in LIBRARIES:
        raise ValueError(f"unknown library '{lib}'; valid: {', '.join(LIBRARIES)}")
    package = LIBRARIES[lib]
    if package is not None and importlib.util.find_spec(package) is None:
        raise ModuleNotFoundError(f"lib={lib} needs the '{package}' package: pip install \"{EXTRAS[lib]}\"")


def main(lib: str, argv: list[str] | None = None) -> int:
    """``python -m horde.train.libs.<lib> --task cartpole --env-steps 200000``: train with ``lib``'s PPO, then print
    the deterministic policy's mean return over 100 evaluation episodes."""
    import argparse
    import copy
    import time

    from horde.envs import get_task, task_names
    from horde.train.evaluate import evaluate

    ap = argparse.ArgumentParser(prog=f"python -m horde.train.libs.{lib.replace('-', '_')}",
                                 description=f"Train a horde task with {lib}'s PPO, then evaluate it.")
    ap.add_argument("--task", default="cartpole", choices=task_names(), metavar="TASK")
    ap.add_argument("--num-envs", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--env-steps", type=int, default=200_000, help="training budget, env steps over all envs")
    args = ap.parse_args(argv)
    require(lib)
    module = importlib.import_module(f"horde.train.libs.{lib.replace('-', '_')}")
    t0 = time.perf_counter()
    n, steps = args.num_envs, args.env_steps
    if lib == "skrl":
        policy = module.deterministic_policy(module.train(args.task, num_envs=n, seed=args.seed,
                                                          timesteps=steps // n).agent)
    elif lib == "sb3":
        policy = module.deterministic_policy(module.train(args.task, num_envs=n, seed=args.seed, timesteps=steps))
    elif lib == "rl-games":
        epochs = max(1, steps // (n * module.SETTINGS["config"]["horizon_length"]))
        policy = module.deterministic_policy(module.train(args.task, num_envs=n, seed=args.seed, epochs=epochs))
    else:
        runner = module.build(args.task, seed=args.seed, overrides=(f"num_envs={n}",))
        runner.learn(num_learning_iterations=max(1, steps // (n * runner.cfg["num_steps_per_env"])))
        policy = module.deterministic_policy(runner)
    train_s = time.perf_counter() - t0
    result = evaluate(policy, args.task, copy.deepcopy(get_task(args.task).config), episodes=100).summary()
    print(f"{lib} on {args.task}: {steps:,} env steps in {train_s:.1f} s; deterministic mean return "
          f"{result['mean_return']:.1f} over 100 episodes (mean length {result['mean_episode_length']:.0f})")
    return 0


def train_with_library(cfg, task: str, raw) -> dict:
    """``horde train task=<task> lib=<lib>``: ``max_iterations`` rollouts and updates of ``lib``'s PPO on ``num_envs``
    envs, its checkpoints in a new run directory (opened, locked and, when nothing was written, removed again as
    :func:`horde.train.session.run_directory` does for horde's learners; ``config.yaml`` in it), then 100
    deterministic evaluation episodes; returns the summary, also written to ``train_summary.json`` (the file every
    ``horde train`` run ends with)."""
    from omegaconf import OmegaConf

    from horde.train.config import ConfigError, PPOConfig, algorithm_name
    from horde.train.session import run_directory

    lib = cfg.lib
    try:
        require(lib)
    except (ModuleNotFoundError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    if not isinstance(cfg.algo, PPOConfig):
        raise ConfigError(f"lib={lib} trains PPO; algo={algorithm_name(cfg)} needs lib=horde")
    for key in ("resume", "distributed"):
        if getattr(cfg, key):
            raise ConfigError(f"{key} needs lib=horde (lib={lib} runs the library's own loop)")
    if lib == "sb3" and cfg.device != "cpu":
        raise ConfigError("lib=sb3 runs on the cpu (Stable-Baselines3 steps numpy arrays); use device=cpu")
    with run_directory(cfg.run_root, task) as run_dir:  # locked while written
        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(raw, resolve=True))
        return _train(lib, cfg, task, run_dir)


def _train(lib: str, cfg, task: str, run_dir) -> dict:
    """The library's run in ``run_dir``, then the evaluation and ``train_summary.json``."""
    import copy
    import json
    import time

    from horde.train.evaluate import evaluate

    n, iters, seed, device = cfg.num_envs, cfg.max_iterations, cfg.seed, cfg.device
    print(f"horde train: {task} with {lib}'s PPO, {n} envs, {iters} iterations on {device}; run dir {run_dir}"
          + ("" if lib == "rsl-rl" else f" (algo.* settings are horde's; {lib} uses horde.train.libs."
                                        f"{lib.replace('-', '_')}.SETTINGS)"), flush=True)
    t0 = time.perf_counter()
    if lib == "rsl-rl":
        from horde.train.libs import rsl_rl as m

        runner = m.build_from(cfg, task, log_dir=str(run_dir))
        runner.learn(num_learning_iterations=iters)
        runner.save(str(run_dir / f"model_{iters}.pt"))
        policy, steps = m.deterministic_policy(runner), iters * n * runner.cfg["num_steps_per_env"]
    elif lib == "skrl":
        from horde.train.libs import skrl as m

        rollouts = m.SETTINGS["agent"]["rollouts"]
        runner = m.build(m.make_env(task, num_envs=n, seed=seed, device=device, config=cfg.task), seed=seed,
                         timesteps=iters * rollouts, directory=str(run_dir))
        runner.run("train")
        runner.agent.save(str(run_dir / "agent.pt"))
        policy, steps = m.deterministic_policy(runner.agent), iters * rollouts * n
    elif lib == "sb3":
        from horde.train.libs import sb3 as m

        model = m.build(m.make_env(task, num_envs=n, seed=seed, config=cfg.task), seed=seed)
        steps = iters * n * m.SETTINGS["n_steps"]
        model.learn(total_timesteps=steps)
        model.save(str(run_dir / "model.zip"))
        model.get_env().save(str(run_dir / "vecnormalize.pkl"))
        policy = m.deterministic_policy(model)
    else:
        from horde.train.libs import rl_games as m

        agent = m.build(m.make_env(task, num_envs=n, seed=seed, device=device, config=cfg.task), seed=seed,
                        epochs=iters, directory=str(run_dir))
        agent.train()
        policy, steps = m.deterministic_policy(agent), iters * n * m.SETTINGS["config"]["horizon_length"]
    train_s = time.perf_counter() - t0
    res = evaluate(policy, task, copy.deepcopy(cfg.task), episodes=100, device=device).summary()
    summary = {"task": task, "lib": lib, "num_envs": n, "iterations": iters, "env_steps": steps,
               "train_seconds": train_s, "eval": res, "run_dir": str(run_dir)}
    (run_dir / "train_summary.json").write_text(json.dumps(summary, indent=2))
    print(f"horde train: {lib} on {task}: {steps:,} env steps in {train_s:.1f} s; deterministic return "
          f"{res['mean_return']:.2f} +- {res['std_return']:.2f} over 100 episodes; {run_dir}", flush=True)
    return summary
