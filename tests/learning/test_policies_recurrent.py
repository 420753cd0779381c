"""Recurrent (GRU/LSTM) policies: a config choice that trains, evaluates, exports and runs like the MLP."""

import json

import numpy as np
import onnx
import pytest
import torch
from clihelp import run_cli
from rsl_rl.models import MLPModel, RNNModel

from horde.deploy import ExportError, export_run, load_policy
from horde.deploy.robot.run_policy import PolicyRunner
from horde.policies import (
    ActorCriticConfig,
    InferencePolicy,
    RecurrentInferencePolicy,
    build_actor,
    make_inference_policy,
    reset_state,
    rsl_model_cfgs,
)
from horde.policies.actor_critic import example_obs
from horde.train.checkpoint import save_checkpoint
from horde.train.config import compose, to_container
from horde.train.evaluate import evaluate


def _actor(rnn_type: str, seed: int = 0) -> RNNModel:
    torch.manual_seed(seed)
    actor = build_actor(ActorCriticConfig(rnn_type=rnn_type, rnn_hidden_dim=16, rnn_num_layers=2), 5, 2)
    with torch.no_grad():  # non-trivial normalizer statistics, as after training
        actor.obs_normalizer._mean.copy_(torch.randn(1, 5) * 0.3)
        actor.obs_normalizer._std.copy_(torch.rand(1, 5) + 0.5)
    return actor


def test_config_selects_rsl_rl_rnn_models():
    actor, critic = rsl_model_cfgs(ActorCriticConfig(rnn_type="lstm", rnn_hidden_dim=32, rnn_num_layers=2))
    assert actor["class_name"] is RNNModel and critic["class_name"] is RNNModel
    assert (actor["rnn_type"], actor["rnn_hidden_dim"], actor["rnn_num_layers"]) == ("lstm", 32, 2)
    mlp_actor, _ = rsl_model_cfgs(ActorCriticConfig())
    assert mlp_actor["class_name"] is MLPModel and "rnn_type" not in mlp_actor
    with pytest.raises(ValueError, match="algo.policy.rnn_type=rnn: not a valid choice; valid choices: none, gru, "
                                         "lstm"):
        rsl_model_cfgs(ActorCriticConfig(rnn_type="rnn"))
    assert isinstance(build_actor(ActorCriticConfig(rnn_type="gru"), 5, 1), RNNModel)
    with pytest.raises(TypeError, match="use RecurrentInferencePolicy"):
        InferencePolicy(build_actor(ActorCriticConfig(rnn_type="gru"), 5, 1))


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_explicit_state_policy_matches_rsl_rl_stateful_actor(rnn_type):
    actor = _actor(rnn_type).eval()
    policy = make_inference_policy(actor)
    assert isinstance(policy, RecurrentInferencePolicy) and policy.state_names == (("h", "c") if rnn_type == "lstm"
                                                                                  else ("h",))
    state = policy.initial_state(3)
    assert [tuple(s.shape) for s in state] == [(3, 2, 16)] * len(state)
    actor.reset()
    gen = torch.Generator().manual_seed(1)
    with torch.inference_mode():
        for t in range(12):
            obs = torch.randn(3, 5, generator=gen)
            ref = torch.clamp(actor(example_obs(5, 3).update({"policy": obs})), -1, 1)
            actions, *state = policy(obs, *state)
            torch.testing.assert_close(actions, ref, atol=1e-6, rtol=0)
            if t == 5:  # episode of env 1 ends: both sides zero its state
                dones = torch.tensor([False, True, False])
                actor.reset(dones.long())
                state = reset_state(tuple(state), dones)
                assert all(float(s[1].abs().max()) == 0.0 and float(s[0].abs().max()) > 0 for s in state)


def test_reset_state_zeroes_rows_even_when_not_finite():
    h = torch.tensor([[[1.0, 2.0]], [[float("nan"), 4.0]], [[5.0, 6.0]]])
    (out,) = reset_state((h,), torch.tensor([False, True, False]))
    torch.testing.assert_close(out, torch.tensor([[[1.0, 2.0]], [[0.0, 0.0]], [[5.0, 6.0]]]))


class _CountingPolicy:
    """A recurrent stand-in whose state counts steps since its env's last reset; records what it was fed."""

    is_recurrent = True

    def __init__(self):
        self.seen = []

    def initial_state(self, batch, device="cpu"):
        return (torch.zeros(batch, 1, 1, device=device),)

    def __call__(self, obs, h):
        self.seen.append(h[:, 0, 0].clone())
        return torch.full((obs.shape[0], 1), 0.7), h + 1.0


def test_evaluate_carries_state_and_resets_it_per_env_on_done():
    cfg = compose(["task=cartpole"])[0].task
    policy = _CountingPolicy()
    res = evaluate(policy, "cartpole", cfg, episodes=6, seed=3)
    seen = torch.stack(policy.seen)  # [steps, envs]
    lengths = res.lengths.tolist()
    assert max(lengths) < cfg.episode_length, "a constant push ends every episode early"
    for i, n in enumerate(lengths):
        assert seen[n - 1, i] == n - 1 and seen[n, i] == 0, (i, n, seen[: n + 1, i])


def _fake_run(tmp_path, rnn_type, obs_std_scale=1.0):
    """A checkpoint of an untrained recurrent actor, saved the way the trainer saves one."""
    cfg, task, raw = compose(["task=cartpole", f"algo.policy.rnn_type={rnn_type}", "algo.policy.rnn_hidden_dim=16",
                              "algo.policy.obs_normalization=true"])  # a normalizer for the export to carry
    torch.manual_seed(0)
    actor = build_actor(cfg.algo.policy, 5, 1)
    with torch.no_grad():
        actor.obs_normalizer._std.copy_((torch.rand(1, 5) + 0.5) * obs_std_scale)
    run = tmp_path / rnn_type
    config = {**to_container(raw), "algo_name": "ppo"}
    save_checkpoint(run / "model_7.pt", {"iteration": 7, "task": task, "config": config, "obs_dim": 5,
                                         "num_actions": 1, "actor_state_dict": actor.state_dict()})
    return run


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_recurrent_export_bundle_and_runner_carry_state(tmp_path, rnn_type):
    run = _fake_run(tmp_path, rnn_type)
    report = export_run(run)
    out = run / "exported" / "cartpole_it7_fp32"
    assert report.passed and report.onnx_max_abs_err <= 1e-5
    names = ["h"] if rnn_type == "gru" else ["h", "c"]
    model = onnx.load(str(out / "policy.onnx"))
    assert [i.name for i in model.graph.input] == ["obs", *(f"{n}_in" for n in names)]
    assert [o.name for o in model.graph.output] == ["actions", *(f"{n}_out" for n in names)]
    batch_axes = {v.type.tensor_type.shape.dim[0].dim_param for v in [*model.graph.input, *model.graph.output]}
    assert len(batch_axes) == 1 and "" not in batch_axes
    info = json.loads((out / "policy.json").read_text())
    rec = info["recurrent"]
    assert rec["type"] == rnn_type and rec["hidden_dim"] == 16 and rec["num_layers"] == 1
    assert [s["input"] for s in rec["state"]] == [f"{n}_in" for n in names]
    assert rec["state"][0]["shape"] == ["batch", 1, 16] and rec["state"][0]["initial_value"] == 0.0
    with np.load(out / "golden_io.npz") as g:
        assert g["h_in"].shape == (200, 16, 1, 16) and g["h_out"].shape == (200, 16, 1, 16)
    rep = json.loads((out / "parity_report.json").read_text())
    assert rep["open_loop"]["max_abs_state_err"] > 0 and rep["closed_loop"]["passed"]

    # The robot's loop: batch 1, state carried by the runner, equal to torch carrying it explicitly.
    policy, *_ = load_policy(run)
    runner = PolicyRunner(out, batch=1)
    state = policy.initial_state(1)
    gen = np.random.default_rng(0)
    with torch.inference_mode():
        for t in range(30):
            if t == 20:
                runner.reset()
                state = policy.initial_state(1)
                assert all(not v.any() for v in runner.state.values())
            obs = gen.normal(size=(1, 5)).astype(np.float32)
            ref, *state = policy(torch.from_numpy(obs), *state)
            np.testing.assert_allclose(runner.step(obs), ref.numpy(), atol=1e-5)
    for s, (name, value) in zip(state, runner.state.items()):
        np.testing.assert_allclose(value, s.numpy(), atol=1e-5, err_msg=name)


def test_fp16_export_of_a_near_constant_policy_is_refused(tmp_path):
    # Normalized observations barely move, so the actions barely do: fp16 rounding is then a large fraction of
    # the action spread and the gate must refuse the bundle (and say why) rather than write it.
    run = _fake_run(tmp_path, "gru", obs_std_scale=100.0)
    with pytest.raises(ExportError, match=r"refusing to write the fp16 bundle .*err / action std .* > 0.01.*FAIL"):
        export_run(run, precision="fp16")
    assert not (run / "exported" / "cartpole_it7_fp16").exists()
    rejected = json.loads((run / "exported" / "cartpole_it7_fp16.rejected.json").read_text())
    assert not rejected["passed"] and rejected["open_loop"]["rel_err"] > 1e-2


@pytest.mark.slow
def test_gru_policy_trains_exports_and_plays(tmp_path):
    proc = run_cli("train", "task=cartpole", "num_envs=64", "max_iterations=6", "save_interval=6",
                   "algo.policy.rnn_type=gru", "algo.policy.rnn_hidden_dim=32", f"run_root={tmp_path}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = next((tmp_path / "cartpole").iterdir())
    policy, ckpt, cfg, _ = load_policy(run)
    assert policy.is_recurrent and cfg.algo.policy.rnn_type == "gru" and ckpt["iteration"] == 6
    res = evaluate(policy, "cartpole", cfg.task, episodes=32).summary()
    # learning something: random policies last about 20 steps; after these 6 iterations seeds 0-9 of the same run
    # lasted 156, 101, 174, 464, 166, 170, 103, 90, 360 and 155 steps on average (2-core AMD EPYC, 2026-11-23;
    # `python benchmarks/learning_bars.py --tests gru`)
    assert res["mean_episode_length"] > 30, res
    for precision in ("fp32", "fp16"):
        report = export_run(run, precision=precision)
        assert report.passed, report.lines
        loop = report.ladder["closed_loop"]
        assert abs(loop["onnx_mean_return"] - loop["torch_mean_return"]) <= loop["limit"]
    assert sorted(p.name for p in (run / "exported").iterdir()) == ["cartpole_it6_fp16", "cartpole_it6_fp32"]
