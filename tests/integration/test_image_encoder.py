"""The CNN image encoder (algo.policy.image_encoder=cnn): which columns it encodes, and a depth-camera policy that
trains, plays and exports to ONNX with the convolutions inside the graph (through ``clihelp.run_main``, in this
process: the command line itself is tested in test_cli.py; a process of its own would add ~8 s of imports)."""

import json

import pytest
import torch
from clihelp import run_main

from horde.policies.actor_critic import ActorCriticConfig, build_actor
from horde.policies.image_encoder import ImageEncoder
from horde.policies.inference import make_inference_policy
from horde.sim.fields import FieldError

IMAGES = [{"name": "depth", "slice": [5, 5 + 6 * 8], "shape": [6, 8]}]
OBS_DIM = 5 + 48 + 3


def test_encoder_passes_other_columns_through_and_encodes_each_image():
    enc = ImageEncoder(OBS_DIM, IMAGES, channels=[4], kernel_size=3, stride=2, activation="elu")
    x = torch.randn(3, OBS_DIM)
    y = enc(x)
    assert y.shape == (3, enc.output_dim) and enc.output_dim == 8 + 4 * 2 * 3  # (6-3)//2+1 x (8-3)//2+1 = 2 x 3
    assert torch.equal(y[:, :8], torch.cat([x[:, :5], x[:, -3:]], dim=1)), "non-image columns unchanged, in order"
    x2 = x.clone()
    x2[:, 5 + 2 * 8 + 3] += 1.0  # one pixel
    assert not torch.allclose(enc(x2)[:, 8:], y[:, 8:]) and torch.equal(enc(x2)[:, :8], y[:, :8])


def test_actor_and_inference_policy_read_the_image():
    cfg = ActorCriticConfig(image_encoder="cnn", cnn_channels=[4], actor_hidden_dims=[16])
    actor = build_actor(cfg, OBS_DIM, 2, IMAGES)
    policy = make_inference_policy(actor)
    obs = torch.randn(4, OBS_DIM)
    moved = obs.clone()
    moved[:, 5:53] += torch.randn(4, 48)
    assert not torch.allclose(policy(obs), policy(moved)), "the image changes the action"
    with pytest.raises(FieldError, match="this task has no image observations"):
        build_actor(cfg, OBS_DIM, 2, [])
    with pytest.raises(FieldError, match="not with algo.policy.rnn_type=gru"):
        build_actor(ActorCriticConfig(image_encoder="cnn", rnn_type="gru"), OBS_DIM, 2, IMAGES)
    with pytest.raises(FieldError, match="the 6 x 8 image 'depth' is too small for 2 convolutions"):
        build_actor(ActorCriticConfig(image_encoder="cnn", cnn_channels=[4, 8]), OBS_DIM, 2, IMAGES)
    with pytest.raises(ValueError, match="do not fit"):
        ImageEncoder(OBS_DIM, [{"name": "x", "slice": [0, 10], "shape": [6, 8]}], channels=[4], kernel_size=3,
                     stride=1, activation="elu")


@pytest.mark.slow
def test_depth_cnn_policy_trains_and_exports_with_the_cnn_in_the_graph(tmp_path):
    import onnx

    assert run_main("train", "task=quadruped-rough-depth", "num_envs=8", "max_iterations=1", "save_interval=1",
                    "task.depth_camera.width=16", "task.depth_camera.height=12", "algo.policy.image_encoder=cnn",
                    "algo.policy.cnn_channels=[4,8]", "algo.num_steps_per_env=8", "task.episode_length=40",
                    f"run_root={tmp_path}") == 0  # short episodes: the export's closed-loop rung stays quick
    (run,) = list((tmp_path / "quadruped-rough-depth").iterdir())
    assert run_main("export", f"run={run}") == 0
    (bundle,) = [p for p in (run / "exported").iterdir() if p.is_dir()]
    model = onnx.load(str(bundle / "policy.onnx"))
    assert sum(node.op_type == "Conv" for node in model.graph.node) == 2
    spec = json.loads((bundle / "policy.json").read_text())
    (image,) = spec["observation"]["images"]
    assert image["name"] == "depth" and image["shape"] == [12, 16] and image["slice"][1] - image["slice"][0] == 192
    assert spec["observation"]["terms"][image["slice"][0]]["name"] == "depth_0_0"
