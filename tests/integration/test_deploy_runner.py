"""The robot-side runner and engine builder of a bundle: standalone, strict about inputs, strict about engines."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from horde.deploy import export_run, load_policy
from horde.deploy.robot import build_engine, run_policy
from horde.deploy.robot.run_policy import BundleError, EngineMismatchError, PolicyInputError, PolicyRunner

HOST = {"tensorrt_version": "10.3.0", "gpu_name": "Orin (nvgpu)", "compute_capability": "8.7"}
"""A made-up TensorRT host (a Jetson AGX Orin with JetPack 6) for the engine-record checks."""


@pytest.fixture(scope="module")
def bundle(tiny_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "cartpole"
    export_run(tiny_run, out_dir=out)
    return out


def _copy(bundle, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(bundle, dst)
    return dst


def _script(bundle, name, *args, cwd=None):
    return subprocess.run([sys.executable, "-I", "-B", str(bundle / name), *args], cwd=cwd or bundle,
                          capture_output=True, text=True, timeout=120)


def test_selftest_runs_isolated_without_horde_or_torch(bundle, tmp_path):
    proc = _script(bundle, "run_policy.py", "--selftest", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "selftest (onnxruntime" in proc.stdout and proc.stdout.strip().endswith("PASS")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import run_policy; r = run_policy.selftest(sys.argv[1]); "
            "print(r['passed'], sorted({m.split('.')[0] for m in sys.modules} & {'horde', 'torch', 'tensorrt'}))")
    proc = subprocess.run([sys.executable, "-I", "-c", code, str(bundle)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True []"


def test_selftest_fails_on_a_golden_mismatch_and_refuses_a_tampered_onnx(bundle, tmp_path):
    bad = _copy(bundle, tmp_path)
    with np.load(bad / "golden_io.npz") as g:
        data = {k: g[k] for k in g.files}
    data["actions"][57, 3, 0] += 1e-3
    np.savez_compressed(bad / "golden_io.npz", **data)
    proc = _script(bad, "run_policy.py", "--selftest")
    assert proc.returncode == 1 and proc.stdout.strip().endswith("FAIL"), proc.stdout + proc.stderr
    (bad / "policy.onnx").write_bytes((bundle / "policy.onnx").read_bytes() + b"\0")
    proc = _script(bad, "run_policy.py", "--selftest")
    assert proc.returncode == 2 and "sha256" in proc.stderr and "altered" in proc.stderr


def test_describe_prints_the_layout(bundle):
    proc = _script(bundle, "run_policy.py", "--describe")
    assert proc.returncode == 0, proc.stderr
    assert "obs[0:1] cart_pos" in proc.stdout and "action[0] cart_force: force = 0.0 + 10.0 * a [N]" in proc.stdout


def test_runner_matches_torch_and_scales_commands(bundle, tiny_run):
    policy, *_ = load_policy(tiny_run)
    runner = PolicyRunner(bundle, batch=3)
    obs = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
    actions = runner.step(obs)
    np.testing.assert_allclose(actions, policy(torch.from_numpy(obs)).detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(runner.command(np.array([[0.5], [-2.0], [1.0]], np.float32)), [[5.0], [-10.0], [10.0]])
    assert runner.state == {} and runner.runtime.startswith("onnxruntime ")


@pytest.mark.parametrize("obs, message", [
    ([[0.0] * 5], "must be a numpy array, got list"),
    (np.zeros((1, 5), np.float64), "dtype is float64, expected float32"),
    (np.zeros((5,), np.float32), r"shape is \(5,\), expected \(1, 5\).*cart_pos, cart_vel"),
    (np.zeros((2, 5), np.float32), r"shape is \(2, 5\), expected \(1, 5\)"),
    (np.array([[0, 0, 1, np.nan, 0]], np.float32), r"non-finite value\(s\): pole_sin \(row 0\) = nan"),
    (np.array([[0, np.inf, 1, 0, 0]], np.float32), r"cart_vel \(row 0\) = inf"),
])
def test_bad_observations_are_refused_with_the_term_named(bundle, obs, message):
    runner = PolicyRunner(bundle)
    with pytest.raises(PolicyInputError, match=message):
        runner.step(obs)


def test_bad_reset_masks_and_batches_are_refused(bundle):
    runner = PolicyRunner(bundle, batch=2)
    for mask in ([True, False], np.ones(3, bool), np.ones(2, np.int64)):
        with pytest.raises(PolicyInputError, match="reset mask must be a bool numpy array of shape"):
            runner.reset(mask)
    runner.reset(np.array([True, False]))
    with pytest.raises(PolicyInputError, match="batch must be a positive int"):
        PolicyRunner(bundle, batch=0)
    with pytest.raises(BundleError, match="unknown backend 'tflite'"):
        PolicyRunner(bundle, backend="tflite")
    with pytest.raises(BundleError, match="no policy.json"):
        PolicyRunner(bundle / "nowhere")


def _fake_engine(bundle, tmp_path, **overrides):
    """A bundle copy with a fake engine and a record from HOST, optionally altered."""
    dst = _copy(bundle, tmp_path)
    engine = dst / run_policy.DEFAULT_ENGINE
    engine.write_bytes(b"not really a TensorRT plan")
    spec = run_policy.load_spec(dst)
    record = build_engine.engine_record(host=HOST, onnx_sha256=spec["onnx"]["sha256"],
                                        engine_sha256=run_policy.sha256_file(engine), engine=engine,
                                        precision="fp32", max_batch=8, opt_batch=1)
    record.update(overrides)
    run_policy.engine_record_path(engine).write_text(json.dumps(record))
    return dst


@pytest.mark.parametrize("host_change, message", [
    ({"gpu_name": "NVIDIA H100 80GB HBM3"}, "gpu_name 'Orin \\(nvgpu\\)' in the record, 'NVIDIA H100 80GB HBM3'"),
    ({"tensorrt_version": "10.13.0"}, "tensorrt_version '10.3.0' in the record, '10.13.0' on this host"),
    ({"compute_capability": "11.0"}, "compute_capability '8.7' in the record, '11.0'"),
])
def test_engine_built_for_another_host_is_refused(bundle, tmp_path, host_change, message):
    dst = _fake_engine(bundle, tmp_path)
    with pytest.raises(EngineMismatchError, match=f"engine refused: {message}.*python build_engine.py"):
        PolicyRunner(dst, backend="tensorrt", host={**HOST, **host_change})


def test_engine_for_another_onnx_or_replaced_file_is_refused(bundle, tmp_path):
    dst = _fake_engine(bundle, tmp_path, onnx_sha256="0" * 64)
    with pytest.raises(EngineMismatchError, match="built from ONNX 000000000000... but the bundle's is"):
        PolicyRunner(dst, backend="tensorrt", host=HOST)
    dst = _fake_engine(bundle, tmp_path / "b")
    (dst / run_policy.DEFAULT_ENGINE).write_bytes(b"another plan")
    with pytest.raises(EngineMismatchError, match="engine file sha256 differs from its record"):
        PolicyRunner(dst, backend="tensorrt", host=HOST)
    dst = _fake_engine(bundle, tmp_path / "c")
    with pytest.raises(EngineMismatchError, match=r"built for batch <= 8, asked for 16"):
        PolicyRunner(dst, backend="tensorrt", host=HOST, batch=16)
    run_policy.engine_record_path(dst / run_policy.DEFAULT_ENGINE).unlink()
    with pytest.raises(EngineMismatchError, match="no policy.engine.json next to it"):
        PolicyRunner(dst, backend="tensorrt", host=HOST)
    with pytest.raises(BundleError, match="no TensorRT engine; build one"):
        PolicyRunner(bundle, backend="tensorrt", host=HOST)


def test_engine_record_round_trip_accepts_the_matching_host(bundle, tmp_path):
    dst = _fake_engine(bundle, tmp_path)
    record = json.loads(run_policy.engine_record_path(dst / run_policy.DEFAULT_ENGINE).read_text())
    run_policy.check_engine_record(record, onnx_sha256=run_policy.load_spec(dst)["onnx"]["sha256"],
                                   engine_sha256=run_policy.sha256_file(dst / run_policy.DEFAULT_ENGINE), host=HOST)
    assert record["profile"] == {"min_batch": 1, "opt_batch": 1, "max_batch": 8}
    assert not (bundle / run_policy.DEFAULT_ENGINE).exists(), "export never ships an engine"


def test_engine_refused_from_the_command_line_on_this_host(bundle, tmp_path):
    dst = _fake_engine(bundle, tmp_path)
    proc = _script(dst, "run_policy.py", "--selftest", "--backend", "tensorrt")
    assert proc.returncode == 2 and "run_policy: error:" in proc.stderr
    try:
        import tensorrt  # noqa: F401
    except ImportError:
        assert "tensorrt is not importable" in proc.stderr
    else:  # a real TensorRT host is not the made-up Orin
        assert "engine refused" in proc.stderr


def test_build_engine_arguments_and_missing_tensorrt(bundle, tmp_path):
    args = build_engine.parse_args(["--bundle", str(bundle), "--max-batch", "32", "--opt-batch", "4"])
    assert (args.max_batch, args.opt_batch, args.workspace_mb) == (32, 4, 256)
    assert args.engine == bundle / "policy.engine" and args.timing_cache == bundle / "timing.cache"
    args = build_engine.parse_args(["--engine", str(tmp_path / "x.engine"), "--timing-cache", str(tmp_path / "t")])
    assert args.engine == tmp_path / "x.engine" and args.timing_cache == tmp_path / "t"
    for bad in (["--opt-batch", "9", "--max-batch", "8"], ["--max-batch", "0"], ["--workspace-mb", "0"]):
        with pytest.raises(SystemExit) as exc:
            build_engine.parse_args(bad)
        assert exc.value.code == 2
    try:
        import tensorrt  # noqa: F401
    except ImportError:
        proc = _script(bundle, "build_engine.py", "--max-batch", "4")  # isolated: finds run_policy.py beside it
        assert proc.returncode == 2 and "tensorrt is not importable" in proc.stderr, proc.stderr
        assert not (bundle / "policy.engine").exists()


@pytest.mark.gpu
def test_tensorrt_engine_build_and_selftest(bundle, tmp_path):
    pytest.importorskip("tensorrt", reason="TensorRT is not importable here (needs NVIDIA's wheels or JetPack)")
    dst = _copy(bundle, tmp_path)
    proc = _script(dst, "build_engine.py", "--max-batch", "16")
    assert proc.returncode == 0, proc.stderr
    record = json.loads((dst / "policy.engine.json").read_text())
    assert record["onnx_sha256"] == run_policy.load_spec(dst)["onnx"]["sha256"] and (dst / "timing.cache").is_file()
    proc = _script(dst, "run_policy.py", "--selftest", "--backend", "tensorrt")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("PASS"), proc.stdout + proc.stderr


def test_export_from_a_relative_run_directory(tiny_run, monkeypatch):
    """`make demo` exports runs/<task>/<stamp> given relative to the working directory."""
    from horde.deploy import export_run

    monkeypatch.chdir(tiny_run.parent.parent)
    report = export_run(f"{tiny_run.parent.name}/{tiny_run.name}", name="relative")
    assert report.passed and report.selftest["passed"]
