"""ONNX export: one self-contained file, symbolic batch, normalizer inside, parity with torch."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from horde.deploy import ExportError, export_run, load_policy
from horde.deploy import onnx_export


@pytest.fixture(scope="module")
def exported(tiny_run):
    report = export_run(tiny_run)
    return tiny_run / "exported", report


def test_single_file_opset_ir_and_symbolic_batch(exported):
    out, report = exported
    assert sorted(p.name for p in out.iterdir()) == ["parity_obs.npz", "policy.json", "policy.onnx"]
    model = onnx.load(str(out / "policy.onnx"))
    assert model.ir_version <= 9
    assert {o.domain: o.version for o in model.opset_import}[""] == 18
    assert [i.name for i in model.graph.input] == ["obs"] and [o.name for o in model.graph.output] == ["actions"]
    dim0 = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim0.dim_param and not dim0.HasField("dim_value")
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["task"] == "cartpole" and json.loads(meta["obs_names"])[0] == "cart_pos"


def test_parity_and_batch_sizes(exported, tiny_run):
    out, report = exported
    assert report.passed and report.onnx_max_abs_err <= 1e-5 and report.parity_samples >= 200
    policy, *_ = load_policy(tiny_run)
    sess = ort.InferenceSession(str(out / "policy.onnx"), providers=["CPUExecutionProvider"])
    for batch in (1, 7, 300):
        obs = np.random.default_rng(batch).normal(size=(batch, 5)).astype(np.float32) * 3
        got = sess.run(None, {"obs": obs})[0]
        ref = policy(torch.from_numpy(obs)).detach().numpy()
        assert got.shape == (batch, 1)
        np.testing.assert_allclose(got, ref, atol=1e-5)
        assert np.abs(got).max() <= 1.0


def test_normalizer_is_inside_the_graph(exported, tiny_run):
    out, _ = exported
    info = json.loads((out / "policy.json").read_text())
    norm = info["observation"]["normalizer"]
    assert len(norm["mean"]) == 5 and any(abs(m) > 0 for m in norm["mean"]), "trained normalizer statistics"
    policy, *_ = load_policy(tiny_run)
    x = torch.randn(4, 5)
    mean, std = torch.tensor(norm["mean"]), torch.tensor(norm["std"])
    manual = torch.clamp(policy.mlp((x - mean) / (std + norm["eps"])), -1, 1)
    torch.testing.assert_close(policy(x), manual)


def test_policy_json_layout(exported):
    info = json.loads((exported[0] / "policy.json").read_text())
    assert info["action"]["names"] == ["cart_force"] and info["action"]["scale"] == [10.0]
    assert info["control_dt"] == pytest.approx(0.02) and info["decimation"] == 2
    assert len(info["checkpoint"]["sha256"]) == 64 and len(info["onnx"]["sha256"]) == 64


def test_parity_failure_is_reported(tiny_run, monkeypatch, tmp_path):
    monkeypatch.setattr(onnx_export, "onnx_parity", lambda *a, **k: 1e-3)
    with pytest.raises(ExportError, match="differs from torch"):
        export_run(tiny_run, out_dir=tmp_path)
