"""``horde export`` and ``horde verify``: a checkpoint becomes a robot-ready bundle, with proof it behaves the same.

    <run>/exported/<name>/
        policy.onnx          the deterministic policy (normalizer and action head inside, state as explicit I/O)
        policy.json          observation/action layout, control period, recurrent spec, provenance, tolerances
        golden_io.npz        torch's closed-loop recording: observations, resets, states and actions
        parity_report.json   the verification ladder's figures
        run_policy.py        robot-side runner and self-test (numpy + onnxruntime or TensorRT only)
        build_engine.py      builds a TensorRT engine on the target (engines are never shipped)
        deploy_unitree.py    runs the policy on a Unitree Go2 or G1 over unitree_sdk2; --dry-run without a robot
        observations.py      builds the observation vector from raw robot state and policy.json's sources

The bundle is assembled in a staging directory and moved into place only after the ladder
(:mod:`horde.deploy.verify`) and the runner's self-test pass; a failing export (an fp16 graph that drifts, say)
writes no bundle, only ``<name>.rejected.json`` with the figures, and raises :class:`ExportError`. The staging
directory (``.<name>.staging-<pid>-<random>``) goes on the way out, on an error, Ctrl-C or SIGTERM; one left by a
process killed outright (SIGKILL, out of memory) is removed by the next export into the same folder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from horde.deploy import verify
from horde.deploy.verify import ProgressFn, say
from horde.deploy.onnx_export import IR_VERSION, OPSET, ExportError, export_onnx, io_spec
from horde.train.checkpoint import load_policy
from horde.deploy.robot import build_engine as _build_engine_module
from horde.deploy.robot import deploy_unitree as _deploy_unitree_module
from horde.deploy.robot import observations as _observations_module
from horde.deploy.robot import run_policy as _run_policy_module
from horde.deploy.spec import policy_json
from horde.sim.fields import FieldError, check_writable_dir
from horde.train.checkpoint import sha256

ROBOT_FILES = {"run_policy.py": _run_policy_module, "build_engine.py": _build_engine_module,
               "deploy_unitree.py": _deploy_unitree_module, "observations.py": _observations_module}
"""Robot-side modules copied verbatim into every bundle."""


@dataclass
class ExportReport:
    """What ``horde export`` wrote and measured."""

    bundle_dir: str
    onnx_path: str
    json_path: str
    checkpoint: str
    precision: str
    parity_samples: int
    """Observations (steps x envs) replayed through onnxruntime in rung 1."""
    onnx_max_abs_err: float
    """Rung 1's max |onnxruntime - torch| over every action."""
    tolerance: float
    """Rung 1's limit: max abs error (fp32) or error relative to the action std (fp16)."""
    ladder: dict
    selftest: dict
    lines: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every rung and the runner's self-test passed."""
        return bool(self.ladder["passed"] and self.selftest.get("passed"))


def report_dict(report: ExportReport) -> dict:
    """JSON-ready form of a report."""
    return {**asdict(report), "passed": report.passed}


def _metadata(task: str, precision: str, layout: dict, policy, ckpt: dict, ckpt_sha: str) -> dict:
    """What the ONNX file itself carries (policy.json has more, and the ONNX sha256)."""
    return {
        "horde_version": __import__("horde").__version__, "task": task, "precision": precision,
        "obs_names": layout["obs_names"], "action_names": layout["action_names"],
        "action_scale": layout["action_scale"], "action_type": layout["action_type"],
        "control_dt": layout["control_dt"], "decimation": layout["decimation"],
        "recurrent": policy.recurrent_spec() if policy.is_recurrent else None,
        "checkpoint_sha256": ckpt_sha, "checkpoint_iteration": int(ckpt["iteration"]),
        "policy_json_schema": _run_policy_module.BUNDLE_SCHEMA,
    }


def runner_selftest(bundle: Path, *, timeout: float = 120.0, progress: ProgressFn | None = None) -> dict:
    """``python -I -B run_policy.py --selftest`` in the bundle: isolated mode, so neither horde nor the current
    directory is importable; the runner must stand on numpy and onnxruntime alone."""
    bundle = Path(bundle).resolve()  # the runner runs with cwd=bundle: a relative path would resolve twice
    say(progress, "runner self-test: python -I run_policy.py --selftest in the bundle")
    proc = subprocess.run([sys.executable, "-I", "-B", str(bundle / "run_policy.py"), "--selftest"],
                          cwd=bundle, capture_output=True, text=True, timeout=timeout)
    text = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
    say(progress, f"runner self-test: {'PASS' if proc.returncode == 0 else 'FAIL'}")
    return {"passed": proc.returncode == 0, "returncode": proc.returncode, "output": text[-1] if text else ""}


def default_name(task: str, iteration: int, precision: str) -> str:
    """``<task>_it<iteration>_<precision>``, e.g. ``cartpole_it100_fp32``."""
    return f"{task}_it{iteration}_{precision}"


def default_precision(run: str | Path) -> str:
    """The bundle precision a run exports at by default: its rollout precision when that is fp16 (the policy was
    trained acting in it), else fp32 (a bf16 rollout precision has no bundle of its own: ONNX Runtime's CPU kernels
    and TensorRT's Jetson builds take fp32 or fp16)."""
    from horde.train.checkpoint import load_checkpoint, resolve_checkpoint

    ckpt = load_checkpoint(resolve_checkpoint(run))
    algo = (ckpt.get("config") or {}).get("algo") or {}
    return "fp16" if algo.get("rollout_precision") == "fp16" else "fp32"


def check_bundle_name(name: str) -> None:
    """``name=`` is one folder name: no path separator, not ``.`` or ``..`` (a bundle stays under
    ``<run>/exported/``; ``out=`` puts one elsewhere), not hidden (the staging folders are); a one-line
    :class:`FieldError` otherwise."""
    bad = (not name or name in (".", "..") or name.startswith(".") or "/" in name or "\\" in name
           or os.sep in name or Path(name).is_absolute() or "\0" in name)
    if bad:
        raise FieldError(f"name={name}: a bundle name is one folder name under <run>/exported/ (no '/', not '.' or "
                         f"'..', not starting with '.'); use out=<dir> for another place")


_STAGING = re.compile(r"\.(?P<name>.+)\.staging-(?P<pid>\d+)-[^/]+")


def remove_stale_staging(folder: str | Path) -> list[Path]:
    """Remove the staging folders in ``folder`` whose export process is gone (killed outright: SIGKILL, the OOM
    killer); returns them. A live process's staging folder stays."""
    from horde.train.session import _alive

    removed = []
    for p in Path(folder).glob(".*.staging-*"):
        m = _STAGING.fullmatch(p.name)
        if p.is_dir() and not p.is_symlink() and (m is None or not _alive(int(m["pid"]))):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


@contextlib.contextmanager
def _sigterm_exits():
    """SIGTERM raises SystemExit in the main thread while the block runs, so ``finally`` clauses (the staging
    folder's removal) run before the process ends; elsewhere, and after the block, signals are left alone."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum, frame):  # noqa: ARG001
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _one_torch_thread():
    """torch on one CPU thread while the block runs: the ladder's policies see batches of 1-64 observations, which
    gain nothing from more threads and lose much when the cores are busy (the quadruped on this loaded 2-core
    machine with torch's default 2 threads: 32 ms a policy call instead of 0.35 ms, rung 2's torch episode 29 s
    instead of 5 s, the export without rung 3 48 s instead of 25 s). The caller's count is restored after."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def export_run(run: str | Path, *, out_dir: str | Path | None = None, name: str | None = None,
               precision: str | None = None, parity_envs: int = 16, parity_steps: int = 200, episodes: int = 64,
               tolerance: float | None = None, sim2sim_episodes: int = verify.SIM2SIM_EPISODES,
               progress: ProgressFn | None = None) -> ExportReport:
    """Export a run's latest checkpoint (or a checkpoint file) to a verified bundle.

    The bundle goes to ``out_dir`` when given, else ``<run dir>/exported/<name>``. ``tolerance`` overrides rung
    1's limit (fp32: max abs error; fp16: error relative to action std). ``sim2sim_episodes`` is rung 3's MuJoCo
    episode count (0 skips it). Raises :class:`ExportError` and writes no bundle when rung 1, rung 2 or the
    runner's self-test fails (rung 3 is advisory). ``precision`` defaults to :func:`default_precision`. A ``name``
    that would leave ``<run>/exported/`` or an ``out_dir`` that cannot be a folder raise :class:`FieldError`.
    ``progress`` hears each stage start and end and the loops' steps (:class:`horde.deploy.verify.ProgressFn`;
    None: silent).
    """
    if name is not None:
        check_bundle_name(name)
    if out_dir is not None:
        if Path(out_dir).exists() and not Path(out_dir).is_dir():
            raise FieldError(f"out={out_dir}: is a file, not a folder")
        check_writable_dir("out", out_dir, Path(out_dir).parent)
    precision = precision or default_precision(run)

    if parity_steps < 200 or episodes < 64:
        raise ExportError(f"the ladder needs >= 200 parity steps and >= 64 closed-loop episodes, got "
                          f"{parity_steps} and {episodes}")
    reference, ckpt, cfg, ckpt_path = load_policy(run)  # fp32 torch: the reference for every rung
    from horde.train.memory import check_fits, estimate

    check_fits(estimate(cfg, ckpt["task"], num_envs=max(episodes, parity_envs), device="cpu", training=False),
               what="episodes")  # rung 2 steps one env per episode
    graph_policy = reference if precision == "fp32" else load_policy(ckpt_path, precision=precision)[0]
    task, iteration = ckpt["task"], int(ckpt["iteration"])
    name = name or default_name(task, iteration, precision)
    final = Path(out_dir) if out_dir else ckpt_path.parent / "exported" / name
    if out_dir is None:
        check_writable_dir("exported", final.parent)  # <run>/exported may be a file, or the run read-only
        if final.exists() and not final.is_dir():
            raise FieldError(f"name={name}: {final} is a file, not a bundle folder")
    if final.exists() and any(final.iterdir()) and not (final / "policy.json").is_file():
        raise ExportError(f"{final}: exists and is not a policy bundle; choose another out= or name=")
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(final.parent)
    # the first line once the arguments are checked: a mistake stays one line
    say(progress, f"{task} iteration {iteration} ({ckpt_path.name}) -> {final}, {precision}")
    with _sigterm_exits(), _one_torch_thread():
        return _export(final, name, precision, reference, graph_policy, ckpt, cfg, ckpt_path, parity_envs=parity_envs,
                       parity_steps=parity_steps, episodes=episodes, tolerance=tolerance,
                       sim2sim_episodes=sim2sim_episodes, progress=progress)


def _export(final: Path, name: str, precision: str, reference, graph_policy, ckpt: dict, cfg, ckpt_path: Path, *,
            parity_envs: int, parity_steps: int, episodes: int, tolerance: float | None,
            sim2sim_episodes: int, progress: ProgressFn | None) -> ExportReport:
    """Stage, verify and move the bundle into ``final`` (:func:`export_run` checked its arguments)."""
    from horde.envs import make

    task, iteration = ckpt["task"], int(ckpt["iteration"])
    say(progress, f"building 1 env of {task} (policy.json's layout)")
    env = make(task, num_envs=1, device="cpu", config=cfg.task)
    layout = env.describe()
    ckpt_sha = sha256(ckpt_path)
    io = io_spec(graph_policy, len(layout["action_names"]))

    stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.staging-{os.getpid()}-", dir=final.parent))
    try:
        onnx_path = stage / "policy.onnx"
        say(progress, f"exporting policy.onnx ({precision}, opset {OPSET})")
        export_onnx(graph_policy, onnx_path, io, _metadata(task, precision, layout, graph_policy, ckpt, ckpt_sha))
        say(progress, f"policy.onnx written and checked ({onnx_path.stat().st_size / 1024:.0f} KiB)")
        golden = verify.record_golden(reference, task, cfg.task, io, num_envs=parity_envs, steps=parity_steps,
                                      progress=progress)
        np.savez_compressed(stage / "golden_io.npz", **golden)
        info = policy_json(
            name=name, task=task, precision=precision, env=env, layout=layout, policy=graph_policy, io=io,
            onnx_info={"file": onnx_path.name, "sha256": sha256(onnx_path), "opset": OPSET, "ir_version": IR_VERSION},
            checkpoint={"file": str(ckpt_path.resolve()), "iteration": iteration, "sha256": ckpt_sha,
                        "imports": list(getattr(cfg, "imports", None) or [])},
            golden={"file": "golden_io.npz", "steps": parity_steps, "envs": parity_envs,
                    **verify.golden_tolerances(golden, io, precision)},
        )
        # written before the ladder: rung 3 rebuilds its observations from this file alone
        (stage / "policy.json").write_text(json.dumps(info, indent=2) + "\n")
        ladder = verify.run_ladder(onnx_path, golden, reference, task, cfg.task, io, precision, episodes=episodes,
                                   limit=tolerance, bundle=stage, sim2sim_episodes=sim2sim_episodes,
                                   progress=progress)
        for fname, module in ROBOT_FILES.items():
            shutil.copyfile(module.__file__, stage / fname)
        selftest = (runner_selftest(stage, progress=progress) if ladder.passed else
                    {"passed": False, "output": "not run: ladder failed"})
        report_doc = {"name": name, "precision": precision, "created_utc": _now(),
                      "onnx_sha256": info["onnx"]["sha256"],
                      "checkpoint_sha256": ckpt_sha, "runtime": f"onnxruntime {info['versions']['onnxruntime']}",
                      **ladder.to_dict(), "runner_selftest": selftest}
        report_doc["passed"] = bool(ladder.passed and selftest["passed"])
        (stage / "parity_report.json").write_text(json.dumps(report_doc, indent=2) + "\n")
        lines = ladder.lines() + [f"runner self-test (python -I run_policy.py --selftest): {selftest['output']}"]
        if not report_doc["passed"]:
            rejected = final.parent / f"{final.name}.rejected.json"
            rejected.write_text(json.dumps(report_doc, indent=2) + "\n")
            failing = [ln for ln in lines if "FAIL" in ln or "error" in ln] or lines
            raise ExportError(f"refusing to write the {precision} bundle {final}: " + " | ".join(failing) +
                              f" (figures in {rejected})")
        if final.exists():
            shutil.rmtree(final)
        stage.rename(final)
        (final.parent / f"{final.name}.rejected.json").unlink(missing_ok=True)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)

    return ExportReport(
        bundle_dir=str(final), onnx_path=str(final / "policy.onnx"), json_path=str(final / "policy.json"),
        checkpoint=str(ckpt_path), precision=precision, parity_samples=parity_steps * parity_envs,
        onnx_max_abs_err=ladder.parity.max_abs_err, tolerance=ladder.parity.limit_value, ladder=ladder.to_dict(),
        selftest=selftest,
        lines=lines,
    )


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# --- horde verify --------------------------------------------------------------------------------------------------
@dataclass
class VerifyReport:
    """``horde verify`` on one bundle."""

    bundle_dir: str
    precision: str
    golden_matches_checkpoint: float
    """Max |torch now - golden actions|: the recording still belongs to the checkpoint."""
    ladder: dict
    selftest: dict
    lines: list[str]

    @property
    def passed(self) -> bool:
        return bool(self.ladder["passed"] and self.selftest["passed"] and
                    self.golden_matches_checkpoint <= verify.FP32_ABS_TOL)


def find_bundles(run: str | Path) -> list[Path]:
    """A bundle directory itself, or every bundle under ``<run>/exported/``."""
    run = Path(run)
    if (run / "policy.json").is_file():
        return [run]
    found = sorted(p.parent for p in (run / "exported").glob("*/policy.json"))
    if not found:
        raise ExportError(f"{run}: no policy bundle here or under {run / 'exported'}; run horde export first")
    return found


def bundle_checkpoint(bundle: str | Path, checkpoint: str | Path | None = None, spec: dict | None = None) -> Path:
    """The checkpoint a bundle was exported from (``checkpoint``: another file to use), found where policy.json
    says, beside a shipped bundle, or in a moved run folder; its sha256 checked against policy.json's."""
    bundle = Path(bundle)
    if spec is None:
        try:
            spec = _run_policy_module.load_spec(bundle)
        except _run_policy_module.BundleError as exc:
            raise ExportError(str(exc)) from None
    ckpt_path = Path(checkpoint) if checkpoint else Path(spec["checkpoint"]["file"])
    if not checkpoint and not ckpt_path.is_absolute():  # a bundle that travels with its run (a shipped policy)
        ckpt_path = bundle / ckpt_path
    elif not checkpoint and not ckpt_path.is_file():  # a run folder moved or copied: <run>/exported/<bundle>
        moved = bundle.resolve().parent.parent / ckpt_path.name
        if moved.is_file() and sha256(moved) == spec["checkpoint"]["sha256"]:
            ckpt_path = moved
    if not ckpt_path.is_file():
        raise ExportError(f"{bundle}: its checkpoint {ckpt_path} is gone; pass checkpoint=<file>")
    if sha256(ckpt_path) != spec["checkpoint"]["sha256"]:
        raise ExportError(f"{ckpt_path}: sha256 differs from the one {bundle.name}/policy.json was exported from")
    return ckpt_path


def verify_bundle(bundle: str | Path, *, episodes: int = 64, checkpoint: str | Path | None = None,
                  sim2sim_episodes: int = verify.SIM2SIM_EPISODES, progress: ProgressFn | None = None
                  ) -> VerifyReport:
    """Re-run the ladder on a written bundle against its checkpoint, and the runner's self-test in isolation
    (``progress``: :class:`horde.deploy.verify.ProgressFn`)."""
    bundle = Path(bundle)
    try:
        spec = _run_policy_module.load_spec(bundle)
    except _run_policy_module.BundleError as exc:
        raise ExportError(str(exc)) from None
    ckpt_path = bundle_checkpoint(bundle, checkpoint, spec)
    with _one_torch_thread():
        return _verify(bundle, spec, ckpt_path, episodes=episodes, sim2sim_episodes=sim2sim_episodes,
                       progress=progress)


def _verify(bundle: Path, spec: dict, ckpt_path: Path, *, episodes: int, sim2sim_episodes: int,
            progress: ProgressFn | None) -> VerifyReport:
    """:func:`verify_bundle` once the bundle and its checkpoint are checked."""
    reference, _, cfg, _ = load_policy(ckpt_path)  # a run's plugin that fails to import: one line, before any other
    say(progress, f"{bundle.name}: the policy of {ckpt_path}")
    io = {"inputs": spec["onnx"]["inputs"], "outputs": spec["onnx"]["outputs"],
          "state": (spec.get("recurrent") or {}).get("state", [])}
    with np.load(bundle / spec["golden"]["file"]) as g:
        golden = {k: g[k] for k in g.files}
    say(progress, f"rung 0: golden_io.npz through the checkpoint's torch policy ({golden['obs'].shape[0]} steps)")
    replay = verify.torch_replay(reference, golden, io)
    golden_err = float(np.abs(replay["actions"] - golden["actions"]).max())
    say(progress, f"rung 0: {'PASS' if golden_err <= verify.FP32_ABS_TOL else 'FAIL'}")
    ladder = verify.run_ladder(bundle / spec["onnx"]["file"], golden, reference, spec["task"], cfg.task, io,
                               spec["precision"], episodes=episodes, bundle=bundle, sim2sim_episodes=sim2sim_episodes,
                               progress=progress)
    selftest = runner_selftest(bundle, progress=progress)
    lines = [f"[0/3] golden_io.npz vs the checkpoint's torch policy now: max abs err {golden_err:.2e} <= "
             f"{verify.FP32_ABS_TOL:g}: {'PASS' if golden_err <= verify.FP32_ABS_TOL else 'FAIL'}",
             *ladder.lines(), f"runner self-test (python -I run_policy.py --selftest): {selftest['output']}"]
    return VerifyReport(str(bundle), spec["precision"], golden_err, ladder.to_dict(), selftest, lines)
