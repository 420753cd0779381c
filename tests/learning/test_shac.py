"""SHAC: its maths on hand-worked numbers, a run through the CLI that play and export accept, a learning test,
and the benchmark's quick mode."""

import json
from pathlib import Path

import pytest
import torch
from clihelp import run_cli, run_main
from benchhelp import run_benchmark

from horde.train.config import ConfigError, compose
from horde.train.shac import (
    SHACConfig,
    SHACTrainer,
    linear_lr,
    mean_bound_penalty,
    polyak_update,
    straight_through_clip,
    td_lambda_targets,
)

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_td_lambda_targets_by_hand():
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    next_values = torch.tensor([[10.0], [20.0], [30.0]])
    ends = torch.tensor([[False], [True], [False]])
    g = td_lambda_targets(rewards, next_values, ends, gamma=0.5, lam=0.5)
    # G2 = 3 + .5*30 = 18 (horizon); G1 = 2 + .5*20 = 12 (episode end: no flow from G2);
    # G0 = 1 + .5*(.5*10 + .5*G1) = 6.5
    torch.testing.assert_close(g[:, 0], torch.tensor([6.5, 12.0, 18.0]))
    # lam = 1 without ends: the discounted return bootstrapped at the horizon
    g1 = td_lambda_targets(rewards, next_values, torch.zeros_like(ends), gamma=0.5, lam=1.0)
    assert float(g1[0, 0]) == pytest.approx(1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 30)
    # lam = 0: one-step TD targets
    g0 = td_lambda_targets(rewards, next_values, torch.zeros_like(ends), gamma=0.5, lam=0.0)
    torch.testing.assert_close(g0[:, 0], rewards[:, 0] + 0.5 * next_values[:, 0])


def test_polyak_update_and_linear_lr():
    src, dst = torch.nn.BatchNorm1d(2), torch.nn.BatchNorm1d(2)
    with torch.no_grad():
        src.weight.fill_(3.0)
        dst.weight.fill_(1.0)
        src.running_mean.fill_(7.0)
    polyak_update(dst, src, tau=0.25)
    torch.testing.assert_close(dst.weight, torch.full((2,), 0.25 * 1.0 + 0.75 * 3.0))
    torch.testing.assert_close(dst.running_mean, torch.full((2,), 7.0)), "buffers are copied, not averaged"
    assert linear_lr(1e-2, 1e-4, 0, 10) == 1e-2 and linear_lr(1e-2, 1e-4, 10, 10) == pytest.approx(1e-4)


def test_straight_through_clip_and_mean_bound_penalty_by_hand():
    x = torch.tensor([[-2.5], [-0.5], [0.25], [1.5]], requires_grad=True)
    y = straight_through_clip(x)
    torch.testing.assert_close(y.detach(), torch.tensor([[-1.0], [-0.5], [0.25], [1.0]]))
    (y * torch.tensor([[1.0], [2.0], [3.0], [4.0]])).sum().backward()
    torch.testing.assert_close(x.grad, torch.tensor([[1.0], [2.0], [3.0], [4.0]])), "identity gradient, clipped or not"
    # relu(|m| - 1)^2 summed over actions: (2.5 - 1)^2 = 2.25, 0, (1.5 - 1)^2 + 0 = 0.25
    m = torch.tensor([[-2.5, 0.0], [0.5, -0.9], [1.5, 1.0]])
    torch.testing.assert_close(mean_bound_penalty(m), torch.tensor([2.25, 0.0, 0.25]))


def test_clipped_actor_gets_a_gradient_where_its_actions_saturate(tmp_path):
    # With action_squash=clip every action below is clipped to +1; a plain clamp would pass no gradient at all.
    cfg, task, raw = compose(["task=pendulum", "algo=shac", "num_envs=8", "algo.horizon=4", "algo.mean_bound_coef=0",
                              "algo.policy.action_squash=clip", f"run_root={tmp_path}"])
    trainer = SHACTrainer(cfg, task, raw, quiet=True)
    with torch.no_grad():
        trainer.actor.mlp[-1].bias.fill_(10.0)
    trainer._rollout().backward()
    assert float(trainer.actor.mlp[-1].bias.grad.abs().sum()) > 0


def test_algo_shac_composes_and_refuses_tasks_without_a_differentiable_rollout(tmp_path):
    cfg, task, _ = compose(["task=pendulum", "algo=shac", f"run_root={tmp_path}"])
    assert isinstance(cfg.algo, SHACConfig) and cfg.algo.reward_scale == 0.1  # configs/tuned/pendulum_shac.yaml
    cfg, task, raw = compose(["task=cartpole", "algo=shac", f"run_root={tmp_path}"])
    with pytest.raises(ConfigError, match="task 'cartpole' has no differentiable rollout; differentiable tasks: "
                                          "cartpole-swingup, pendulum, reach"):
        SHACTrainer(cfg, task, raw, quiet=True)
    # reach differentiates Featherstone: a config whose env runs another solver would play other dynamics
    cfg, task, raw = compose(["task=reach", "algo=shac", "task.sim.solver=mujoco", f"run_root={tmp_path}"])
    with pytest.raises(ConfigError, match="add task.sim.solver=featherstone"):
        SHACTrainer(cfg, task, raw, quiet=True)


def test_actor_gradient_reaches_every_parameter_through_the_simulator(tmp_path):
    cfg, task, raw = compose(["task=cartpole-swingup", "algo=shac", "num_envs=8", "algo.horizon=8",
                              f"run_root={tmp_path}"])
    trainer = SHACTrainer(cfg, task, raw, quiet=True)
    loss = trainer._rollout()
    loss.backward()
    for name, p in trainer.actor.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().max() > 0, f"{name} got no gradient"
    assert all(p.grad is None for p in trainer.target_critic.parameters()), "the target critic is not trained"
    before = [p.detach().clone() for p in trainer.actor.parameters()]
    losses = trainer.iterate()
    assert set(losses) == {"actor", "critic", "grad_norm", "skipped_steps"} and losses["skipped_steps"] == 0
    assert any(not torch.equal(a, p) for a, p in zip(before, trainer.actor.parameters(), strict=True))


def test_shac_run_through_the_cli_plays_and_exports(tmp_path):
    assert run_main("train", "task=pendulum", "algo=shac", "num_envs=8", "max_iterations=3", "save_interval=2",
                     f"run_root={tmp_path}") == 0
    run = next((tmp_path / "pendulum").iterdir())
    names = {p.name for p in run.iterdir()}
    assert {"config.yaml", "model_2.pt", "model_3.pt", "train_summary.json"} <= names
    ckpt = torch.load(run / "model_3.pt", weights_only=True)
    assert ckpt["config"]["algo_name"] == "shac" and ckpt["iteration"] == 3
    assert {"actor_state_dict", "critic_state_dict", "optimizer_state_dict", "obs_dim", "num_actions"} <= set(ckpt)
    summary = json.loads((run / "train_summary.json").read_text())
    horizon = ckpt["config"]["algo"]["horizon"]  # configs/tuned/pendulum_shac.yaml
    assert summary["env_steps"] == 3 * 8 * horizon and 0.95 < sum(summary["time_share"].values()) < 1.05

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"Loss/actor", "Loss/critic", "Loss/learning_rate", "Perf/share_sim", "Perf/env_steps_per_s"} <= tags

    play = run_cli("play", f"run={run}", "episodes=4", cwd=tmp_path)
    assert play.returncode == 0 and "over 4 deterministic episodes" in play.stdout, play.stderr[-2000:]
    assert run_main("export", f"run={run}") == 0
    assert list(run.rglob("*.onnx"))


def _train_and_track(tmp_path, task: str, seed: int, env_steps: int, eval_every: int = 512
                     ) -> tuple[list[float], dict]:
    """Train SHAC with the tuned config, its iteration count (and so a linear learning-rate decay) set by the
    benchmark's budget, for ``env_steps``; evaluate the deterministic policy (32 episodes, seed 999) every
    ``eval_every`` env steps, as benchmarks/diff_vs_ppo.py does. Returns the evaluation returns (the first before any
    training)."""
    import importlib.util

    from horde.envs import make
    from horde.policies import InferencePolicy
    from horde.train.evaluate import evaluate

    spec = importlib.util.spec_from_file_location("diff_vs_ppo", BENCH / "diff_vs_ppo.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    probe, _, _ = compose([f"task={task}", "algo=shac"])
    iterations = bench.BUDGET_STEPS[task] // (probe.num_envs * probe.algo.horizon)
    cfg, task, raw = compose([f"task={task}", "algo=shac", f"seed={seed}", f"max_iterations={iterations}",
                              f"save_interval={iterations + 1}", f"run_root={tmp_path}"])
    trainer = SHACTrainer(cfg, task, raw, quiet=True)
    per_iter = cfg.num_envs * cfg.algo.horizon

    core = make(task, num_envs=32, seed=999, config=cfg.task)

    def score() -> float:
        return evaluate(InferencePolicy(trainer.actor), task, cfg.task, episodes=32, seed=999,
                        core=core).summary()["mean_return"]

    returns = [score()]

    def on_iteration(tr) -> bool:
        if (tr.iteration * per_iter) % eval_every < per_iter:
            returns.append(score())
        return tr.iteration * per_iter >= env_steps

    return returns, trainer.learn(on_iteration)


@pytest.mark.slow
def test_shac_swings_up_the_pendulum_and_the_cartpole(tmp_path):
    """Bars that held for every one of seeds 0-9 on a 2-core AMD EPYC (2026-11-23): another CPU moves a trajectory
    as much as another seed does, and the tuned SHAC is not monotone on these tasks (returns drop back after a
    crossing), so the bar is the best evaluation within the budget, set below the worst seed.

    pendulum (6,144 env steps; start -1,186 to -1,691): best -218, -292, -193, -164, -278, -187, -162, -350, -538,
    -180 (`python benchmarks/learning_bars.py --tests shac_pendulum shac_swingup` reruns both); a random policy scores about -1,150.
    Since the model's reward is the env's Warp terms (2026-11-27, the same EPYC; float rounding only, so new
    trajectories): -162, -200, -223, -209, -173, -146, -222, -317, -432, -580
    (`benchmarks/results/2026-11-27_learning_bars_shac_cpu.jsonl`). swing-up (16,384 env steps; start -13 to -20): best 151, 209, 183,
    203, 61, 145, 162, 155, 163, 179; a random policy scores about 0 (seed 1 scored 180 on an Intel Xeon). Since the
    cart-pole's model reward is its env's Warp terms (2026-11-27, the same EPYC; float rounding only): 151, 201, 145,
    196, 159, 115, 175, 109, 201, 180 (the same file). On a 2-core Intel Xeon (2026-11-29,
    `benchmarks/results/2026-11-29_learning_bars_shac_xeon.jsonl`): pendulum -149 to -425, swing-up 73 to 206."""
    pendulum, _ = _train_and_track(tmp_path / "p", "pendulum", seed=0, env_steps=6144)
    assert pendulum[0] < -900 and max(pendulum) >= -600, pendulum
    swingup, _ = _train_and_track(tmp_path / "c", "cartpole-swingup", seed=1, env_steps=16384)
    assert swingup[0] < 0 and max(swingup) >= 50, swingup


@pytest.mark.slow
def test_shac_reaches_with_the_arm(tmp_path):
    """Tuned config (configs/tuned/reach_shac.yaml, 64 envs x 4 steps), 16,384 env steps, evaluated every 2,048.
    Seeds 0-9 on a 2-core AMD EPYC (2026-11-23; `benchmarks/learning_bars.py --tests shac_reach`), start -> best: -80 -> 127, -152 -> 140, -74 -> 120, -79 -> 120,
    -105 -> 87, -82 -> 90, -182 -> 3, -177 -> 82, -110 -> 80, -109 -> 140. Nine of ten pass the benchmark's 60, one
    (seed 6) stalls near 0, so the bar is the gain, which every seed made: at least 172 (holding the default pose
    scores about -60; PPO's tuned runs needed about 180k env steps to reach 60).
    Since the model's reward is the env's Warp terms (2026-11-27, the same EPYC; values within 1.9e-6 of the torch
    copy's, so new trajectories, not a new objective): gains 179, 294, 168, 191, 94, 190, 196, 259, 185, 161
    (`benchmarks/results/2026-11-27_learning_bars_shac_cpu.jsonl`); seed 4 rose from -105 to -11 and fell back
    (the old code's seed 4: 192). The bar sits below the worst seed: a gain of 80. Seed 0 starts at -80, so an
    arm that learns only to rest (-60) gains 20 and fails it. On a 2-core Intel Xeon (2026-11-29, the same seeds,
    `benchmarks/results/2026-11-29_learning_bars_shac_xeon.jsonl`): gains 149 to 295."""
    reach, _ = _train_and_track(tmp_path, "reach", seed=0, env_steps=16384, eval_every=2048)
    assert reach[0] < 0 and max(reach) - reach[0] >= 80, reach


def test_random_episode_start_spreads_the_episode_clocks(tmp_path):
    from horde.train.ppo import PPOTrainer

    for algo, make_trainer in (("shac", SHACTrainer), ("ppo", PPOTrainer)):
        cfg, task, raw = compose(["task=pendulum", f"algo={algo}", "num_envs=64", "algo.random_episode_start=true",
                                  f"run_root={tmp_path / algo}"])
        trainer = make_trainer(cfg, task, raw, quiet=True)
        clock = trainer.episodes.length if algo == "shac" else trainer.core.episode_length
        assert 0 <= int(clock.min()) and int(clock.max()) < cfg.task.episode_length, algo
        assert clock.unique().numel() > 32, f"{algo}: the envs still share one episode clock"
        cfg, task, raw = compose(["task=pendulum", f"algo={algo}", "num_envs=64", f"run_root={tmp_path / algo}"])
        trainer = make_trainer(cfg, task, raw, quiet=True)
        clock = trainer.episodes.length if algo == "shac" else trainer.core.episode_length
        assert int(clock.abs().max()) == 0, f"{algo}: the default starts every episode at step 0"


def test_benchmark_runs_one_learner_with_overrides():
    proc = run_benchmark("diff_vs_ppo.py", "--quick", "--json", "--tasks", "pendulum", "--learners", "shac",
                         "--shac-overrides", "algo.horizon=2", "--eval-every", "1024")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    runs = [r for r in rows if r["kind"] == "run"]
    assert runs and {r["algo"] for r in runs} == {"shac"}
    assert all(r["overrides"] == ["algo.horizon=2"] for r in runs), runs
    assert [s for s, _, _ in runs[0]["curve"]] == list(range(1024, runs[0]["steps_trained"] + 1, 1024))
    summary = next(r for r in rows if r["kind"] == "summary")
    assert summary["config"].endswith("+ algo.horizon=2")
    assert not [r for r in rows if r["kind"] == "ratio"], "a ratio needs both learners"


def test_benchmark_quick_mode_prints_every_figure():
    proc = run_benchmark("diff_vs_ppo.py", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    kinds = {r["kind"] for r in rows}
    assert kinds == {"memory", "run", "summary", "ratio", "curves"}
    runs = [r for r in rows if r["kind"] == "run"]
    tasks = ("pendulum", "cartpole-swingup", "reach")
    assert {(r["task"], r["algo"]) for r in runs} == {(t, a) for t in tasks for a in ("ppo", "shac")}
    for task in tasks:
        assert len({r["num_envs"] for r in runs if r["task"] == task}) == 1, "same env count for both learners"
    for r in runs:
        assert r["steps_trained"] > 0 and r["curve"], r
    for r in rows:
        if r["kind"] == "memory":  # classic states are a few floats; the arm's Featherstone step ~100 KB
            assert 0 < r["counted_bytes_per_env_step"] < (200_000 if r["task"] == "reach" else 1000), r


def test_shac_resume_continues_exactly(tmp_path):
    """A run stopped after 3 iterations and resumed to 6 ends where a 6-iteration run does: the actor and the
    episode book (lengths, returns, per-term sums: statistics continue mid-episode) restored exactly."""

    def train(root, iterations: int) -> SHACTrainer:
        cfg, task, raw = compose(["task=pendulum", "algo=shac", "num_envs=8", "algo.horizon=40", "seed=7",
                                  f"max_iterations={iterations}", "save_interval=3", f"run_root={root}"])
        trainer = SHACTrainer(cfg, task, raw, quiet=True)
        trainer.learn()
        return trainer

    straight, first = train(tmp_path / "a", 6), train(tmp_path / "b", 3)
    cfg, task, raw = compose([f"resume={first.run_dir}", "max_iterations=6"])
    resumed = SHACTrainer(cfg, task, raw, quiet=True)
    assert resumed.iteration == 3
    resumed.learn()
    a, b = straight.actor.state_dict(), resumed.actor.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    for name in ("length", "returns", "sums"):
        assert torch.equal(getattr(straight.episodes, name), getattr(resumed.episodes, name)), name
    assert int(straight.episodes.length.max()) < 240, "an episode ended (200 steps): the book was exercised"
