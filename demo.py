"""``horde demo``: train cartpole with PPO on the CPU, evaluate it, export it to ONNX, verify, summarize.

Extends the run's ``<run_dir>/train_summary.json`` with task, mean_return, mean_episode_length, train_seconds, env_steps_per_s,
onnx_max_abs_err and policy_onnx, and fails (exit 1) when the policy or its export misses the bar.
"""

from __future__ import annotations

import json
from pathlib import Path

MIN_EPISODE_LENGTH = 475.0
"""The demo's bar for cartpole: mean deterministic episode length over the evaluation episodes."""


class DemoError(RuntimeError):
    """The demo ran but its result missed the bar; one line."""


def run_demo(overrides: list[str], *, episodes: int = 100) -> dict:
    """Run the whole pipeline; ``overrides`` are ``horde train`` overrides (task defaults to cartpole)."""
    from horde.deploy import export_run
    from horde.train.checkpoint import load_policy
    from horde.train.config import compose
    from horde.train.evaluate import evaluate
    from horde.train.ppo import PPOTrainer

    cfg, task, raw = compose(["device=cpu", *overrides])
    print(f"== 1/3 train {task} with PPO on {cfg.device} ({cfg.num_envs} envs, {cfg.max_iterations} iterations)")
    train = PPOTrainer(cfg, task, raw).learn()
    run_dir = Path(train["run_dir"])

    print(f"== 2/3 evaluate the deterministic policy over {episodes} episodes")
    policy, _, _, _ = load_policy(run_dir)
    ev = evaluate(policy, task, cfg.task, episodes=episodes, device=cfg.device).summary()

    print("== 3/3 export to ONNX and compare onnxruntime with torch")
    report = export_run(run_dir)

    summary = {
        "task": task,
        "mean_return": ev["mean_return"],
        "std_return": ev["std_return"],
        "mean_episode_length": ev["mean_episode_length"],
        "std_episode_length": ev["std_episode_length"],
        "eval_episodes": ev["episodes"],
        "train_seconds": train["train_seconds"],
        "env_steps": train["env_steps"],
        "env_steps_per_s": train["env_steps_per_s"],
        "sim_env_steps_per_s": train["sim_env_steps_per_s"],
        "time_share": train["time_share"],
        "onnx_max_abs_err": report.onnx_max_abs_err,
        "policy_onnx": str(Path(report.onnx_path).resolve()),
        "policy_json": str(Path(report.json_path).resolve()),
        "checkpoint": report.checkpoint,
        "run_dir": str(run_dir.resolve()),
    }
    # the run's own train_summary.json, extended with the evaluation and the export (one summary file per run)
    (run_dir / "train_summary.json").write_text(json.dumps({**train, **summary}, indent=2))
    share = ", ".join(f"{k} {100 * v:.0f}%" for k, v in train["time_share"].items())
    print(
        f"\n{task}: trained in {train['train_seconds']:.1f} s ({train['env_steps']:,} env steps, "
        f"{train['env_steps_per_s']:,.0f} env-steps/s overall; {share})\n"
        f"  deterministic evaluation, {ev['episodes']} episodes: return {ev['mean_return']:.1f} +- "
        f"{ev['std_return']:.1f}, episode length {ev['mean_episode_length']:.1f} +- {ev['std_episode_length']:.1f}"
        f" (time-out at {cfg.task.episode_length})\n"
        f"  ONNX: {summary['policy_onnx']}\n"
        f"  onnxruntime vs torch max abs error: {report.onnx_max_abs_err:.2e} (limit 1e-5)\n"
        f"  summary: {run_dir / 'train_summary.json'}"
    )
    if task == "cartpole" and ev["mean_episode_length"] < MIN_EPISODE_LENGTH:
        raise DemoError(f"policy balanced for {ev['mean_episode_length']:.1f} steps on average, below the demo's "
                        f"bar of {MIN_EPISODE_LENGTH:.0f}; see {run_dir}")
    return summary
