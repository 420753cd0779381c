"""The verification ladder of an exported policy, each rung a pass/fail with its figures.

1. Open-loop parity: observations recorded in closed loop with the torch policy (``golden_io.npz``) are replayed
   through onnxruntime, which carries its own recurrent state and resets it where the recording did; actions are
   compared with torch's. fp32: max abs error <= 1e-5. fp16: max over action columns of
   (max abs error / std of torch's actions) <= 1e-2.
2. Closed loop: onnxruntime drives horde's own simulator for one episode in each of >= 64 envs; its mean return
   must be within 2% of the torch policy's on the same initial states, or inside the 95% confidence interval of
   torch's mean.
3. Sim-to-sim in plain MuJoCo (:mod:`horde.deploy.sim2sim`), for the tasks that have a MuJoCo twin (reach, quadruped):
   the ONNX policy drives the MJCF in MuJoCo's C engine with observations rebuilt from the written ``policy.json``
   alone, over a few episodes; passes when its mean return >= rung 2's ONNX return - 0.2 x |that return| (a ratio
   >= 0.8 for positive returns). Advisory: a different simulator is expected to differ, so the figures are reported
   and a FAIL does not stop the export. Other tasks: skipped, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from horde.policies import reset_state

FP32_ABS_TOL = 1e-5
"""Open-loop limit for fp32 graphs: max abs action error against torch."""
FP16_REL_TOL = 1e-2
"""Open-loop limit for fp16 graphs: max abs action error relative to the std of torch's actions."""
RETURN_REL_TOL = 0.02
"""Closed-loop limit: |mean return (onnx) - mean return (torch)| relative to torch's."""
SIM2SIM_EPISODES = 16
"""Rung 3's MuJoCo episodes (about 0.5-1 s each for the quadruped on one CPU core)."""


class ProgressFn(Protocol):
    """What the deploy path reports while it runs: ``progress(stage)``, a line, as a stage starts or ends, and
    ``progress(stage, done, total, note)`` as a loop advances (``done`` of ``total`` control steps; a loop that
    ends early reports its count as the total). Every deploy function takes one as ``progress=``; None, the
    default, is silent (library use). ``horde export``, ``verify`` and ``sim2sim`` print them on stderr."""

    def __call__(self, stage: str, done: int = 0, total: int = 0, note: str = "") -> None: ...


def steps_of(progress: ProgressFn | None, stage: str) -> Callable[[int, int], None] | None:
    """``progress`` bound to one loop's ``stage``, as :func:`horde.train.evaluate.evaluate` calls it, or None."""
    if progress is None:
        return None
    return lambda done, total: progress(stage, done, total)


def say(progress: ProgressFn | None, stage: str) -> None:
    """A stage line through ``progress`` (nothing when it is None)."""
    if progress is not None:
        progress(stage)


@dataclass
class ParityResult:
    """Rung 1: onnxruntime against torch on the recorded observations."""

    precision: str
    steps: int
    envs: int
    max_abs_err: float
    """Max |onnx - torch| over every action of every step."""
    max_abs_state_err: float
    """Max |onnx - torch| over every recurrent state entry (0 for feed-forward policies)."""
    action_std: list[float]
    """Std of torch's actions per action column over the recording."""
    rel_err: float
    """Max over action columns of max abs error / action std."""
    batch1_max_abs_err: float
    """Max error of batch-1 calls fed the recorded state (the robot's case)."""
    limit_value: float
    """Rung 1's limit on max_abs_err (fp32) or rel_err (fp16)."""
    passed: bool

    def line(self) -> str:
        op = "<=" if self.passed else ">"
        crit = (f"max abs err {self.max_abs_err:.2e} {op} {self.limit_value:g}" if self.precision == "fp32"
                else f"err / action std {self.rel_err:.2e} {op} {self.limit_value:g} (max abs err "
                     f"{self.max_abs_err:.2e})")
        state = f", state err {self.max_abs_state_err:.2e}" if self.max_abs_state_err else ""
        return (f"[1/3] open-loop parity, {self.precision}, onnxruntime vs torch over {self.steps} steps x "
                f"{self.envs} envs (state carried): {crit}{state}, batch-1 err {self.batch1_max_abs_err:.2e}: "
                f"{'PASS' if self.passed else 'FAIL'}")


@dataclass
class ClosedLoopResult:
    """Rung 2: mean return of onnxruntime and torch driving the simulator from the same initial states."""

    episodes: int
    torch_mean_return: float
    torch_ci95: float
    onnx_mean_return: float
    onnx_ci95: float
    torch_mean_length: float
    onnx_mean_length: float
    rel_diff: float
    limit: float
    """Allowed |difference|: max(2% of |torch mean|, torch's 95% CI half-width)."""
    passed: bool

    def line(self) -> str:
        diff = self.onnx_mean_return - self.torch_mean_return
        return (f"[2/3] closed loop, {self.episodes} envs x 1 episode in horde's simulator: onnxruntime return "
                f"{self.onnx_mean_return:.2f} +- {self.onnx_ci95:.2f} vs torch {self.torch_mean_return:.2f} +- "
                f"{self.torch_ci95:.2f} (95% CI), difference {diff:+.3f} ({100 * self.rel_diff:.2f}%), limit "
                f"{self.limit:.3f}: {'PASS' if self.passed else 'FAIL'}")


@dataclass
class SimToSimResult:
    """Rung 3: the ONNX policy in plain MuJoCo against horde's closed-loop return (rung 2's ONNX figure)."""

    task: str
    mujoco: str
    """MuJoCo version."""
    episodes: int
    mujoco_mean_return: float
    mujoco_ci95: float
    mujoco_mean_length: float
    mujoco_failures: int
    horde_mean_return: float
    horde_mean_length: float
    return_ratio: float
    min_ratio: float
    passed: bool
    """Advisory: not part of :attr:`LadderReport.passed`."""
    details: dict = field(default_factory=dict)
    """Everything :func:`horde.deploy.sim2sim.run_sim2sim` reported (per-term means, task metrics)."""

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL (advisory: the bundle is still written)"
        return (f"[3/3] sim-to-sim (MuJoCo {self.mujoco} C engine, observations from policy.json), {self.episodes} "
                f"episodes: return {self.mujoco_mean_return:.2f} +- {self.mujoco_ci95:.2f} (95% CI, mean length "
                f"{self.mujoco_mean_length:.0f}, {self.mujoco_failures} failed) vs horde {self.horde_mean_return:.2f} "
                f"(length {self.horde_mean_length:.0f}), ratio {self.return_ratio:.3f}, pass if MuJoCo >= horde - "
                f"{1 - self.min_ratio:.1f} x |horde|: {verdict}")


@dataclass
class LadderReport:
    """All rungs for one exported graph."""

    parity: ParityResult
    closed_loop: ClosedLoopResult | None
    sim_to_sim: SimToSimResult | None = None
    skipped: list[dict] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Rungs 1 and 2 (rung 3 is advisory)."""
        return self.parity.passed and (self.closed_loop is None or self.closed_loop.passed)

    def lines(self) -> list[str]:
        out = [self.parity.line()]
        if self.closed_loop is not None:
            out.append(self.closed_loop.line())
        if self.sim_to_sim is not None:
            out.append(self.sim_to_sim.line())
        out += [f"[3/3] {s['name']}: SKIP ({s['reason']})" for s in self.skipped]
        return out

    def to_dict(self) -> dict:
        return {"passed": self.passed, "open_loop": asdict(self.parity),
                "closed_loop": asdict(self.closed_loop) if self.closed_loop else None,
                "sim_to_sim": asdict(self.sim_to_sim) if self.sim_to_sim else None, "skipped": self.skipped}


# --- recording -----------------------------------------------------------------------------------------------------
@torch.inference_mode()
def record_golden(policy, task: str, task_cfg, io: dict, *, num_envs: int, steps: int, seed: int = 777,
                  progress: ProgressFn | None = None) -> dict[str, np.ndarray]:
    """Closed-loop rollout of the torch ``policy``: what ``golden_io.npz`` holds.

    ``obs`` [T, N, obs_dim], ``actions`` [T, N, num_actions], ``resets`` bool [T, N] (state zeroed before step t:
    all at t=0, then where the previous step ended an episode), and per recurrent state its value entering each
    step under the ONNX input name and leaving it under the output name, [T, N, num_layers, hidden_dim]. float32.
    ``progress`` (:class:`ProgressFn`): a line before the envs are built, then the steps.
    """
    from horde.envs import make

    stage = f"recording golden I/O (torch, {num_envs} envs x {steps} steps)"
    say(progress, f"{stage}: building the envs")
    core = make(task, num_envs=num_envs, device="cpu", seed=seed, config=task_cfg)
    rec: dict[str, list] = {"obs": [], "actions": [], "resets": []}
    for s in io["state"]:
        rec[s["input"]], rec[s["output"]] = [], []
    state = policy.initial_state(num_envs)
    resets = torch.ones(num_envs, dtype=torch.bool)
    obs = core.obs
    for k in range(steps):
        rec["obs"].append(obs.clone())
        rec["resets"].append(resets.clone())
        if policy.is_recurrent:
            out = policy(obs, *state)
            actions, nxt = out[0], tuple(out[1:])
            for s, before, after in zip(io["state"], state, nxt):
                rec[s["input"]].append(before.clone())
                rec[s["output"]].append(after.clone())
        else:
            actions, nxt = policy(obs), ()
        rec["actions"].append(actions.clone())
        r = core.step(actions)
        resets = r.dones.clone()
        state = reset_state(nxt, resets) if nxt else ()
        obs = r.obs
        if progress is not None:
            progress(stage, k + 1, steps)
    return {k: torch.stack(v).numpy() for k, v in rec.items()}


@torch.inference_mode()
def torch_replay(policy, golden: dict[str, np.ndarray], io: dict) -> dict[str, np.ndarray]:
    """Torch's actions and states on the recorded observations, carrying its own state (to re-check a golden
    file against a checkpoint)."""
    obs, resets = torch.from_numpy(golden["obs"]), torch.from_numpy(golden["resets"])
    state = policy.initial_state(obs.shape[1])
    out: dict[str, list] = {"actions": [], **{s["output"]: [] for s in io["state"]}}
    for t in range(obs.shape[0]):
        state = reset_state(state, resets[t]) if state else ()
        if policy.is_recurrent:
            res = policy(obs[t], *state)
            actions, state = res[0], tuple(res[1:])
            for s, v in zip(io["state"], state):
                out[s["output"]].append(v)
        else:
            actions = policy(obs[t])
        out["actions"].append(actions)
    return {k: torch.stack(v).numpy() for k, v in out.items()}


# --- onnxruntime ---------------------------------------------------------------------------------------------------
def ort_session(onnx_path: Path, threads: int = 1):
    """A CPU onnxruntime session with ``threads`` intra-op threads."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])


class OrtPolicy:
    """An onnxruntime session with :func:`horde.train.evaluate.evaluate`'s policy interface (torch in, torch out)."""

    def __init__(self, onnx_path: Path, io: dict) -> None:
        self.session = ort_session(onnx_path)
        self.io = io
        self.is_recurrent = bool(io["state"])
        self._outputs = [o["name"] for o in io["outputs"]]

    def initial_state(self, batch: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, ...]:
        return tuple(torch.zeros(batch, *s["shape"][1:], device=device) for s in self.io["state"])

    def __call__(self, obs: torch.Tensor, *state: torch.Tensor):
        feeds = {"obs": obs.detach().cpu().numpy()}
        feeds.update({s["input"]: v.detach().cpu().numpy() for s, v in zip(self.io["state"], state)})
        outs = [torch.from_numpy(o).to(obs.device) for o in self.session.run(self._outputs, feeds)]
        return tuple(outs) if self.is_recurrent else outs[0]


def open_loop_parity(onnx_path: Path, golden: dict[str, np.ndarray], io: dict, precision: str, *,
                     limit: float | None = None) -> ParityResult:
    """Rung 1 on ``golden`` (torch's recording): onnxruntime carries its own state through every step.

    ``limit`` overrides the default limit (:data:`FP32_ABS_TOL` on the max abs error for fp32,
    :data:`FP16_REL_TOL` on the error relative to the action std for fp16)."""
    sess = ort_session(onnx_path)
    names = [o["name"] for o in io["outputs"]]
    obs, resets, ref = golden["obs"], golden["resets"], golden["actions"]
    steps, envs = obs.shape[:2]
    state = [np.zeros((envs, *s["shape"][1:]), dtype=np.float32) for s in io["state"]]
    err = np.zeros(ref.shape[-1])
    state_err = 0.0
    for t in range(steps):
        for v in state:
            v[resets[t]] = 0.0
        feeds = {"obs": obs[t], **{s["input"]: v for s, v in zip(io["state"], state)}}
        out = sess.run(names, feeds)
        err = np.maximum(err, np.abs(out[0].astype(np.float64) - ref[t]).max(axis=0))
        state = out[1:]
        for s, v in zip(io["state"], state):
            state_err = max(state_err, float(np.abs(v - golden[s["output"]][t]).max()))
    # Batch-1 calls fed the recorded state: the robot's case, and a check that nothing froze the batch axis.
    batch1 = 0.0
    t = steps // 2
    for row in range(min(envs, 8)):
        feeds = {"obs": obs[t, row:row + 1], **{s["input"]: golden[s["input"]][t, row:row + 1] for s in io["state"]}}
        batch1 = max(batch1, float(np.abs(sess.run(names[:1], feeds)[0] - ref[t, row:row + 1]).max()))
    std = ref.reshape(-1, ref.shape[-1]).astype(np.float64).std(axis=0)
    rel = float((err / np.maximum(std, 1e-6)).max())
    max_err = float(max(err.max(), batch1))
    if limit is None:
        limit = FP32_ABS_TOL if precision == "fp32" else FP16_REL_TOL
    passed = (max_err if precision == "fp32" else rel) <= limit
    return ParityResult(precision, int(steps), int(envs), max_err, state_err, std.tolist(), rel, batch1, limit,
                        bool(passed))


def closed_loop(onnx_path: Path, reference, task: str, task_cfg, io: dict, *, episodes: int = 64,
                seed: int = 4242, progress: ProgressFn | None = None) -> ClosedLoopResult:
    """Rung 2: torch ``reference`` and the ONNX graph each drive ``episodes`` envs from the same initial states
    (``progress``: a line as each builds its envs, then its steps)."""
    from horde.train.evaluate import confidence_halfwidth, evaluate

    stage = f"rung 2, closed loop ({episodes} envs x 1 episode)"
    say(progress, f"{stage}: torch policy, building the envs")
    ref = evaluate(reference, task, task_cfg, episodes=episodes, seed=seed,
                   progress=steps_of(progress, f"{stage}, torch policy"))
    say(progress, f"{stage}: onnxruntime policy, building the envs")
    got = evaluate(OrtPolicy(onnx_path, io), task, task_cfg, episodes=episodes, seed=seed,
                   progress=steps_of(progress, f"{stage}, onnxruntime policy"))
    t_mean, o_mean = float(ref.returns.double().mean()), float(got.returns.double().mean())
    t_ci, o_ci = confidence_halfwidth(ref.returns), confidence_halfwidth(got.returns)
    limit = max(RETURN_REL_TOL * abs(t_mean), t_ci)
    diff = abs(o_mean - t_mean)
    return ClosedLoopResult(episodes, t_mean, t_ci, o_mean, o_ci, float(ref.lengths.double().mean()),
                            float(got.lengths.double().mean()), diff / max(abs(t_mean), 1e-9), limit,
                            bool(diff <= limit))


def sim_to_sim(bundle: Path, loop: ClosedLoopResult, *, episodes: int = SIM2SIM_EPISODES,
               progress: ProgressFn | None = None) -> tuple[SimToSimResult | None, dict | None]:
    """Rung 3 on the bundle (or staging) directory ``bundle``, which must hold ``policy.json`` and the ONNX file:
    (result, None), or (None, the skip record) for a task without a MuJoCo twin."""
    from horde.deploy import sim2sim

    name = "sim-to-sim (MuJoCo)"
    say(progress, "rung 3, sim-to-sim: loading the task's MuJoCo model and twin")
    try:
        r = sim2sim.run_sim2sim(bundle, episodes=episodes, horde_return=loop.onnx_mean_return, write_report=False,
                                progress=progress, stage="rung 3, sim-to-sim")
    except sim2sim.Sim2SimError as exc:
        return None, {"rung": 3, "name": name, "reason": str(exc)}
    return SimToSimResult(
        r["task"], r["mujoco"], episodes, r["mujoco_mean_return"], r["mujoco_return_ci95"], r["mujoco_mean_length"],
        r["mujoco_failures"], loop.onnx_mean_return, loop.onnx_mean_length,
        r["return_ratio"] if r["return_ratio"] is not None else float("nan"), r["min_return_ratio"],
        bool(r["passed"]), r), None


def run_ladder(onnx_path: Path, golden: dict[str, np.ndarray], reference, task: str, task_cfg, io: dict,
               precision: str, *, episodes: int = 64, limit: float | None = None, bundle: Path | None = None,
               sim2sim_episodes: int = SIM2SIM_EPISODES, progress: ProgressFn | None = None) -> LadderReport:
    """Rungs 1 and 2, the gate an export must pass before it is written, then rung 3 (advisory) when the gate
    passed, ``bundle`` (the directory holding ``policy.json`` and the ONNX file) is given and the task has a MuJoCo
    twin. ``progress`` hears each rung start and end, and the closed loops' steps (:class:`ProgressFn`)."""
    steps, envs = golden["obs"].shape[:2]
    say(progress, f"rung 1, open-loop parity: onnxruntime on the recording ({steps} steps x {envs} envs)")
    parity = open_loop_parity(onnx_path, golden, io, precision, limit=limit)
    say(progress, f"rung 1, open-loop parity: {_verdict(parity.passed)}")
    loop = closed_loop(onnx_path, reference, task, task_cfg, io, episodes=episodes, progress=progress)
    say(progress, f"rung 2, closed loop: {_verdict(loop.passed)}")
    gate = parity.passed and loop.passed
    if bundle is None or sim2sim_episodes <= 0 or not gate:
        why = ("no bundle directory given" if bundle is None else "sim2sim_episodes=0" if sim2sim_episodes <= 0
               else "not run: rung 1 or 2 failed")
        say(progress, f"rung 3, sim-to-sim: skipped ({why})")
        return LadderReport(parity, loop, skipped=[{"rung": 3, "name": "sim-to-sim (MuJoCo)", "reason": why}])
    result, skip = sim_to_sim(Path(bundle), loop, episodes=sim2sim_episodes, progress=progress)
    say(progress, "rung 3, sim-to-sim: " + (f"skipped ({skip['reason']})" if skip else
                                            f"{'PASS' if result.passed else 'FAIL (advisory)'}"))
    return LadderReport(parity, loop, result, [skip] if skip else [])


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def golden_tolerances(golden: dict[str, np.ndarray], io: dict, precision: str) -> dict:
    """What ``run_policy.py --selftest`` accepts: per action column and for the recurrent state."""
    ref = golden["actions"].reshape(-1, golden["actions"].shape[-1]).astype(np.float64)
    if precision == "fp32":
        actions = [FP32_ABS_TOL] * ref.shape[-1]
        state = FP32_ABS_TOL * 10  # hidden state compounds rounding over the episode; actions are what matter
    else:
        actions = [max(FP16_REL_TOL * float(s), FP32_ABS_TOL) for s in ref.std(axis=0)]
        # A broken state hand-over errs by about the state's spread; fp16 rounding compounds to a few 1e-3 of it.
        states = [golden[s["output"]].astype(np.float64).std() for s in io["state"]]
        state = max([0.05 * float(s) for s in states] + [FP32_ABS_TOL * 10])
    return {"action_tolerance": actions, "state_tolerance": state}
