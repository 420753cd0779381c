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
    (path,) = tmp_path.glob("runs/cartpole/*/train_summary.json")
    summary = json.loads(path.read_text())
    for key in ("task", "mean_return", "mean_episode_length", "onnx_max_abs_err", "policy_onnx"):
        assert key in summary, key
    assert summary["task"] == "cartpole" and summary["mean_episode_length"] >= 475, summary  # seeds 0-11: >= 498
    assert summary["onnx_max_abs_err"] <= 1e-5
    assert (tmp_path / summary["policy_onnx"]).is_file() or __import__("os").path.isfile(summary["policy_onnx"])
    assert "onnxruntime vs torch max abs error" in proc.stdout


@pytest.mark.slow
def test_ppo_swings_up_the_pendulum(tmp_path):
    """A random policy scores about -1,150 on this reward, a swing-up-and-hold policy about -200. After the tuned
    run (`benchmarks/learning_bars.py --tests ppo_pendulum`), seeds 0-9 scored, at 150 iterations, -200 to -348 but
    -600 on a 2-core AMD EPYC (2026-11-23) and -165 to -439 but -811, -938 and -1,194 on a 2-core Intel Xeon
    (2026-11-29: seed 0 failed this test there); at the 300 iterations the config now runs, -227, -220, -171, -242,
    -206, -167, -215, -249, -187 and -168 on the Xeon. The bar sits below the worst seed, since another CPU moves a
    trajectory as much as another seed does (a seed dipped to -510 at iteration 250 on its way there)."""
    _, result = _train_and_evaluate(tmp_path, ["task=pendulum", "seed=0"])
    assert result["mean_return"] > -750, result


def _cartpole_until_475(tmp_path, seed: int, max_iterations: int) -> list[float]:
    """The tuned cartpole's deterministic mean return (100 episodes) after each PPO iteration, stopping at the first
    at or above 475 (``benchmarks/learning_bars.py --tests tuned_cartpole`` reruns it over seeds)."""
    cfg, task, raw = compose([f"run_root={tmp_path}", "task=cartpole", f"seed={seed}",
                              f"max_iterations={max_iterations}"])
    trainer = PPOTrainer(cfg, task, raw, quiet=True)
    returns = []

    def on_iteration(tr) -> bool:
        res = evaluate(InferencePolicy(tr.alg.get_policy()), task, cfg.task, episodes=100).summary()
        returns.append(round(res["mean_return"], 1))
        return res["mean_return"] >= 475.0

    trainer.learn(on_iteration=on_iteration)
    return returns


@pytest.mark.slow
def test_tuned_cartpole_balances_within_20_iterations(tmp_path):
    """Issue #7's lever: the tuned config reaches a deterministic mean return of 475 in about 8 PPO iterations
    (seeds 0-7: 7-12); 20 leaves room for another machine's float rounding without hiding a regression to the old
    config's 12-39. On a 2-core Intel Xeon (2026-11-29), seeds 0-9 took 10, 9, 7, 11, 7, 8, 7, 11, 9 and 14
    (``benchmarks/results/2026-11-29_learning_bars_tuned_cartpole_xeon.jsonl``)."""
    returns = _cartpole_until_475(tmp_path, seed=0, max_iterations=20)
    assert returns[-1] >= 475.0, returns


def test_rsl_rl_adapter_keeps_each_observation_through_the_next_step():
    """horde's loop and rsl-rl's runner step the core through RslRlVecEnv (no TensorDict built, no clone a step):
    each step's observations stay intact through the next step, as rsl-rl's storage needs; rewards are the core's
    divided by value_scale; dones and time-outs are the core's flags."""
    from horde.envs import RslRlVecEnv, make

    cfg = compose(["task=cartpole"])[0].task
    a, b = (make("cartpole", num_envs=16, device="cpu", seed=5, config=cfg) for _ in range(2))
    adapter = RslRlVecEnv(b, value_scale=4.0)
    assert torch.equal(adapter.get_observations()["policy"], a.obs)
    gen = torch.Generator().manual_seed(0)
    previous, resets = None, 0
    with torch.inference_mode():
        for _ in range(60):  # long enough for failures and resets
            actions = torch.rand(16, 1, generator=gen) * 2 - 1
            ra = a.step(actions)
            obs_b, rew_b, done_b, ext_b = adapter.step(actions)
            if previous is not None:  # the observations rsl-rl acted on, after the next step
                kept, copy = previous
                assert torch.equal(kept["policy"], copy)
            previous = (obs_b, obs_b["policy"].clone())
            assert torch.equal(ra.obs, obs_b["policy"])
            assert torch.equal(ra.reward / 4.0, rew_b) and torch.equal(ra.dones, done_b)
            assert torch.equal(ra.truncated, ext_b["time_outs"]) and done_b.dtype == torch.bool
            resets += int(done_b.sum())
    assert resets > 0


def test_rsl_rl_on_policy_runner_trains_on_the_adapter(tmp_path):
    """rsl-rl's own OnPolicyRunner, unchanged, runs two iterations on a horde task through RslRlVecEnv."""
    from rsl_rl.runners import OnPolicyRunner

    from horde.envs import RslRlVecEnv, make
    from horde.policies import rsl_model_cfgs

    cfg = compose(["task=cartpole"])[0]
    env = RslRlVecEnv(make("cartpole", num_envs=32, seed=0, config=cfg.task))
    actor, critic = rsl_model_cfgs(cfg.algo.policy)
    train_cfg = {"num_steps_per_env": 8, "save_interval": 100, "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
                 "algorithm": {"class_name": "PPO", "learning_rate": 1e-3, "num_learning_epochs": 1,
                               "num_mini_batches": 2, "clip_param": 0.2, "gamma": 0.99, "lam": 0.95,
                               "value_loss_coef": 1.0, "entropy_coef": 0.0, "max_grad_norm": 1.0,
                               "schedule": "fixed", "desired_kl": 0.01},
                 "actor": actor, "critic": critic, "logger": "tensorboard", "check_for_nan": True}
    runner = OnPolicyRunner(env, train_cfg, log_dir=str(tmp_path), device="cpu")
    before = [p.detach().clone() for p in runner.alg.actor.parameters()]
    runner.learn(num_learning_iterations=2)
    assert runner.current_learning_iteration >= 1
    assert any(not torch.equal(x, p) for x, p in zip(before, runner.alg.actor.parameters(), strict=True))
