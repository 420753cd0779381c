"""``horde export``: a verified bundle with one self-contained ONNX file, its JSON, golden I/O and robot files."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from clihelp import run_cli

from horde.deploy import ExportError, export_run, load_policy, verify
from horde.deploy.robot import run_policy

BUNDLE_FILES = ["build_engine.py", "deploy_unitree.py", "golden_io.npz", "observations.py", "parity_report.json",
                "policy.json", "policy.onnx", "run_policy.py"]


@pytest.fixture(scope="module")
def exported(tiny_run):
    report = export_run(tiny_run)
    return tiny_run / "exported" / "cartpole_it3_fp32", report


def test_bundle_layout_single_file_opset_ir_and_symbolic_batch(exported):
    out, report = exported
    assert report.bundle_dir == str(out)
    assert sorted(p.name for p in out.iterdir()) == BUNDLE_FILES
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")], "no staging directory left behind"
    model = onnx.load(str(out / "policy.onnx"))
    assert model.ir_version <= 9
    assert {o.domain: o.version for o in model.opset_import}[""] == 18
    assert [i.name for i in model.graph.input] == ["obs"] and [o.name for o in model.graph.output] == ["actions"]
    dim0 = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim0.dim_param and not dim0.HasField("dim_value")
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["task"] == "cartpole" and json.loads(meta["obs_names"])[0] == "cart_pos"
    assert meta["precision"] == "fp32" and json.loads(meta["recurrent"]) is None


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
    out, _ = exported
    info = json.loads((out / "policy.json").read_text())
    assert info["schema_version"] == run_policy.BUNDLE_SCHEMA and info["precision"] == "fp32"
    assert [t["name"] for t in info["observation"]["terms"]] == ["cart_pos", "cart_vel", "pole_cos", "pole_sin",
                                                                 "pole_vel"]
    assert [t["slice"] for t in info["observation"]["terms"]][-1] == [4, 5]
    assert {"scale", "clip", "unit"} <= set(info["observation"]["terms"][0])
    a = info["action"]
    assert a["names"] == ["cart_force"] and a["scale"] == [10.0] and a["offset"] == [0.0] and a["clip"] == [-1, 1]
    assert a["type"] == "force" and a["unit"] == "N"
    assert info["pd_gains"]["kp"] is None and info["pd_gains"]["kd"] is None  # classic task: no PD joints
    assert info["effort_limits"] is None and a["default_joint_pos"] is None
    assert info["control"]["dt"] == pytest.approx(0.02) and info["control"]["decimation"] == 2
    assert info["recurrent"] is None
    assert info["checkpoint"]["iteration"] == 3 and len(info["checkpoint"]["sha256"]) == 64
    assert info["checkpoint"]["imports"] == []  # a plugin run lists its modules: sim2sim imports them
    assert len(info["onnx"]["sha256"]) == 64 and info["onnx"]["opset"] == 18 and info["onnx"]["ir_version"] == 9
    assert {"horde", "torch", "onnx"} <= set(info["versions"])
    assert info["golden"]["action_tolerance"] == [1e-5]


def test_golden_file_and_parity_report(exported):
    out, _ = exported
    with np.load(out / "golden_io.npz") as g:
        assert g["obs"].shape == (200, 16, 5) and g["actions"].shape == (200, 16, 1)
        assert g["resets"].shape == (200, 16) and g["resets"][0].all() and g["resets"][1:].any()
    rep = json.loads((out / "parity_report.json").read_text())
    assert rep["passed"] and rep["open_loop"]["steps"] >= 200 and rep["open_loop"]["max_abs_err"] <= 1e-5
    loop = rep["closed_loop"]
    assert loop["episodes"] >= 64 and loop["passed"]
    assert abs(loop["onnx_mean_return"] - loop["torch_mean_return"]) <= loop["limit"]
    assert rep["skipped"][0]["name"].startswith("sim-to-sim") and "MuJoCo" in rep["skipped"][0]["reason"]
    assert rep["runner_selftest"]["passed"]


def test_fp16_bundle_passes_the_same_gate(tiny_run):
    report = export_run(tiny_run, precision="fp16")
    out = tiny_run / "exported" / "cartpole_it3_fp16"
    assert report.passed and report.bundle_dir == str(out)
    model = onnx.load(str(out / "policy.onnx"))
    assert any(init.data_type == onnx.TensorProto.FLOAT16 for init in model.graph.initializer), "weights in fp16"
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT, "float32 interface"
    rep = json.loads((out / "parity_report.json").read_text())
    assert rep["open_loop"]["rel_err"] <= 1e-2 and rep["closed_loop"]["passed"]


def test_failed_gate_writes_no_bundle_and_says_why(tiny_run, monkeypatch, tmp_path):
    real = verify.open_loop_parity

    def drifting(*args, **kwargs):
        res = real(*args, **kwargs)
        res.max_abs_err, res.passed = 1e-3, False
        return res

    monkeypatch.setattr(verify, "open_loop_parity", drifting)
    out = tmp_path / "bundle"
    with pytest.raises(ExportError, match="refusing to write the fp32 bundle.*max abs err 1.00e-03 > 1e-05.*FAIL"):
        export_run(tiny_run, out_dir=out)
    assert not out.exists() and (tmp_path / "bundle.rejected.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["bundle.rejected.json"]


def test_cli_export_and_verify(tiny_run, capsys):
    proc = run_cli("export", f"run={tiny_run}", "name=cli", cwd=tiny_run)  # the one subprocess: as a user runs it
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[1/3] open-loop parity" in proc.stdout and "[2/3] closed loop" in proc.stdout
    assert "[3/3] sim-to-sim (MuJoCo): SKIP" in proc.stdout and "PASS" in proc.stdout.splitlines()[-1]
    from horde import cli

    assert cli.main(["verify", f"run={tiny_run / 'exported' / 'cli'}"]) == 0
    out = capsys.readouterr().out
    for rung in ("[0/3]", "[1/3]", "[2/3]", "runner self-test"):
        assert any(ln.strip().startswith(rung) and "PASS" in ln for ln in out.splitlines()), out
    assert cli.main(["export", f"run={tiny_run}", "precision=fp8"]) == 2
    assert "valid values: fp32, fp16" in capsys.readouterr().err
    (tiny_run / "exported" / "cli" / "policy.onnx").write_bytes(b"tampered")
    assert cli.main(["verify", f"run={tiny_run / 'exported' / 'cli'}"]) == 1
    assert "sha256" in capsys.readouterr().err
