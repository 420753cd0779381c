"""Learning tests: PPO must actually solve the classic tasks on CPU (marked slow; still run by make test), and the
PPO loop must hand rsl-rl exactly what the env adapter would."""

import pytest
import torch

from horde.policies import InferencePolicy
from horde.train.config import compose
from horde.train.evaluate import evaluate
from horde.train.ppo import PPOTrainer


def _train_and_evaluate(tmp_path, overrides, episodes=100):
    cfg, task, raw = compose([f"run_root={tmp_path}", *overrides])
    trainer = PPOTrainer(cfg, task, raw, quiet=True)
    summary = trainer.learn()
    result = evaluate(InferencePolicy(trainer.alg.get_policy()), task, cfg.task, episodes=episodes).summary()
    return summary, result


@pytest.mark.slow
def test_demo_trains_evaluates_exports_and_summarizes(tmp_path):
    """`make demo`'s command, from a fresh working directory, as a user runs it. The demo's bar (mean episode length
    >= 475 of 500) held for seeds 0-11 of its tuned config (every seed reached the 500-step time-out)."""
    import json

    from clihelp import run_cli

    proc = run_cli("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = tmp_path.glob("runs/cartpole/*/summary.json")
    summary = json.loads(path.read_text())
    for key in ("task", "mean_return", "mean_episode_length", "train_seconds", "env_steps_per_s",
                "onnx_max_abs_err", "policy_onnx"):
        assert key in summary, key
    assert summary["task"] == "cartpole" and summary["mean_episode_length"] >= 475, summary
    assert summary["onnx_max_abs_err"] <= 1e-5 and summary["train_seconds"] > 0
    assert (tmp_path / summary["policy_onnx"]).is_file() or __import__("os").path.isfile(summary["policy_onnx"])
    assert "onnxruntime vs torch max abs error" in proc.stdout


@pytest.mark.slow
def test_ppo_swings_up_the_pendulum(tmp_path):
    """A random policy scores about -1,150 on this reward, a swing-up-and-hold policy about -200. After the tuned
    run, seeds 0-9 on a 2-core AMD EPYC (2026-11-23) scored -200, -348, -265, -229, -177, -233, -226, -171, -187 and
    -600: the bar sits below the worst seed, since another CPU moves a trajectory as much as another seed does."""
    _, result = _train_and_evaluate(tmp_path, ["task=pendulum", "seed=0"])
    assert result["mean_return"] > -750, result


@pytest.mark.slow
def test_tuned_cartpole_balances_within_20_iterations(tmp_path):
    """Issue #7's lever: the tuned config reaches a deterministic mean return of 475 in about 8 PPO iterations
    (seeds 0-7: 7-12); 20 leaves room for another machine's float rounding without hiding a regression to the old
    config's 12-39."""
    cfg, task, raw = compose([f"run_root={tmp_path}", "task=cartpole", "seed=0", "max_iterations=20"])
    trainer = PPOTrainer(cfg, task, raw, quiet=True)
    returns = []

    def on_iteration(tr) -> bool:
        res = evaluate(InferencePolicy(tr.alg.get_policy()), task, cfg.task, episodes=100).summary()
        returns.append(round(res["mean_return"], 1))
        return res["mean_return"] >= 475.0

    trainer.learn(on_iteration=on_iteration)
    assert returns[-1] >= 475.0, returns


def test_rollout_stepper_matches_the_rsl_rl_adapter():
    """horde's loop steps the core through RolloutStepper (no TensorDict, no clones a step): same observations,
    rewards (divided by value_scale), dones and time-outs as RslRlVecEnv, and each step's observations stay intact
    through the next step, as rsl-rl's storage needs."""
    from horde.envs import RslRlVecEnv, make
    from horde.train.ppo import RolloutStepper

    cfg = compose(["task=cartpole"])[0].task
    a, b = (make("cartpole", num_envs=16, device="cpu", seed=5, config=cfg) for _ in range(2))
    adapter, stepper = RslRlVecEnv(a), RolloutStepper(b, value_scale=4.0)
    assert torch.equal(adapter.get_observations()["policy"], stepper.observations()["policy"])
    gen = torch.Generator().manual_seed(0)
    previous, resets = None, 0
    with torch.inference_mode():
        for _ in range(60):  # long enough for failures and resets
            actions = torch.rand(16, 1, generator=gen) * 2 - 1
            obs_a, rew_a, done_a, ext_a = adapter.step(actions)
            obs_b, rew_b, done_b, ext_b = stepper.step(actions)
            if previous is not None:  # the observations rsl-rl acted on, after the next step
                kept, copy = previous
                assert torch.equal(kept["policy"], copy)
            previous = (obs_b, obs_b["policy"].clone())
            assert torch.equal(obs_a["policy"], obs_b["policy"])
            assert torch.allclose(rew_a / 4.0, rew_b) and torch.equal(done_a, done_b)
            assert torch.equal(ext_a["time_outs"], ext_b["time_outs"]) and done_b.dtype == torch.bool
            resets += int(done_b.sum())
    assert resets > 0
