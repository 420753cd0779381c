"""Fitting an actuator network to logged motor data, and writing it in the format horde's sim runs.

The recipe of Hwangbo et al. (2019), as ANYmal's and Isaac Lab's actuator nets use it: log a robot's joints while
its PD loop tracks varied targets (position error ``target - q`` [rad], velocity [rad/s] and the measured torque
[N m], one row per physics step), then fit one MLP, shared by every joint, from the position errors and velocities
of the present and a few past steps to the present torque. Softsign hidden units (the paper's) keep the fit smooth
outside the logged range.

The result is an ONNX file in Newton's neural-drive format (``input_order``, ``input_idx``, ``pos_scale``,
``vel_scale``, ``effort_scale`` in its metadata), which ``task.actuator_net=<file>`` runs in the simulator
(:mod:`horde.sim.actuator_net`).

Motor log (``.npz``): arrays ``pos_error``, ``velocity`` and ``torque``, each ``[T, J]`` (one episode) or
``[E, T, J]`` (several episodes of equal length), sampled at the simulator's physics rate (its ``sim_dt``): the
history indices count physics steps.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import logging
from pathlib import Path

import numpy as np
import torch
from torch import nn

__all__ = ["MotorLog", "MotorLogError", "FitReport", "load_motor_log", "pd_motor_log", "fit_actuator_net", "write_actuator_net"]

LOG_KEYS = ("pos_error", "velocity", "torque")


class MotorLogError(ValueError):
    """A motor log that cannot be fitted (one line, for the CLI)."""


@dataclass(frozen=True)
class MotorLog:
    """Logged joints, each array shaped [episodes, steps, joints]."""

    pos_error: np.ndarray
    """Position target minus position [rad]."""
    velocity: np.ndarray
    """Joint velocity [rad/s]."""
    torque: np.ndarray
    """Measured joint torque [N m]."""


@dataclass(frozen=True)
class FitReport:
    """How well the network reproduces torques it was not fitted on."""

    samples: int
    """Training samples (steps x joints x episodes, minus the history's first steps)."""
    val_rmse: float
    """Root-mean-square torque error on the held-out episodes (or the last 20% of steps) [N m]."""
    val_rel: float
    """``val_rmse`` over the held-out torques' standard deviation."""
    train_rmse: float
    """The same on the training samples [N m]."""


def load_motor_log(path: str | Path) -> MotorLog:
    """The motor log in ``path`` (see the module docstring); :class:`MotorLogError` says what is wrong in one line."""
    p = Path(path)
    if not p.is_file():
        raise MotorLogError(f"{path}: no such file")
    try:
        data = np.load(p)
    except Exception as exc:  # not an npz
        raise MotorLogError(f"{path}: not a .npz motor log ({exc})") from None
    missing = [k for k in LOG_KEYS if k not in data]
    if missing:
        raise MotorLogError(f"{path}: missing arrays {', '.join(missing)} (a motor log holds {', '.join(LOG_KEYS)})")
    arrays = [np.asarray(data[k], dtype=np.float32) for k in LOG_KEYS]
    arrays = [a[None] if a.ndim == 2 else a for a in arrays]
    if any(a.ndim != 3 for a in arrays) or len({a.shape for a in arrays}) != 1:
        raise MotorLogError(f"{path}: pos_error, velocity and torque must share one [T, J] or [E, T, J] shape; got "
                            f"{', '.join(str(tuple(data[k].shape)) for k in LOG_KEYS)}")
    if not all(np.isfinite(a).all() for a in arrays):
        raise MotorLogError(f"{path}: the log holds NaN or infinite values")
    return MotorLog(*arrays)


def pd_motor_log(*, stiffness: float, damping: float, effort_limit: float, episodes: int = 8, steps: int = 2000,
                 joints: int = 4, delay: int = 0, sim_dt: float = 0.005, seed: int = 0) -> MotorLog:
    """A synthetic log of a PD motor with ``delay`` physics steps of transport delay and an effort limit, each joint
    a unit inertia tracking random step targets: data with a known answer, for tests and for trying the pipeline
    before a robot's log exists."""
    rng = np.random.default_rng(seed)
    shape = (episodes, steps, joints)
    e_log, v_log, tau_log = np.zeros(shape, np.float32), np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    q = rng.uniform(-0.5, 0.5, (episodes, joints))
    qd = np.zeros((episodes, joints))
    target = np.zeros((episodes, joints))
    past = [np.zeros((episodes, joints))] * (delay + 1)
    for t in range(steps):
        switch = rng.random((episodes, joints)) < 0.02
        target = np.where(switch, rng.uniform(-1.0, 1.0, (episodes, joints)), target)
        e = target - q
        past = [np.clip(stiffness * e - damping * qd, -effort_limit, effort_limit)] + past[:-1]
        tau = past[-1]
        e_log[:, t], v_log[:, t], tau_log[:, t] = e, qd, tau
        qd = qd + sim_dt * (tau - 0.05 * qd)  # semi-implicit Euler on a unit inertia with light viscous friction
        q = q + sim_dt * qd
    return MotorLog(e_log, v_log, tau_log)


def _features(log: MotorLog, history: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Inputs [S, 2 * len(history)] (errors of each history step, then velocities) and torques [S]."""
    h = max(history)
    T = log.torque.shape[1]
    if T <= h:
        raise MotorLogError(f"the log has {T} steps per episode; history index {h} needs more")
    cols = [log.pos_error[:, h - k: T - k] for k in history] + [log.velocity[:, h - k: T - k] for k in history]
    x = np.stack(cols, axis=-1)  # [E, T - h, J, F]
    y = log.torque[:, h:]
    return x.reshape(-1, x.shape[-1]), y.reshape(-1)


def _split(log: MotorLog) -> tuple[MotorLog, MotorLog]:
    """Hold out the last episode (or, with one episode, its last 20% of steps) for validation."""
    if log.torque.shape[0] > 1:
        return (MotorLog(*(a[:-1] for a in (log.pos_error, log.velocity, log.torque))),
                MotorLog(*(a[-1:] for a in (log.pos_error, log.velocity, log.torque))))
    cut = int(0.8 * log.torque.shape[1])
    return (MotorLog(*(a[:, :cut] for a in (log.pos_error, log.velocity, log.torque))),
            MotorLog(*(a[:, cut:] for a in (log.pos_error, log.velocity, log.torque))))


class ActuatorMLP(nn.Module):
    """Scaled [errors..., velocities...] -> scaled torque; softsign hidden units."""

    def __init__(self, inputs: int, hidden: tuple[int, ...]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for width in hidden:
            layers += [nn.Linear(inputs, width), nn.Softsign()]
            inputs = width
        layers.append(nn.Linear(inputs, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _train(model: ActuatorMLP, xt: torch.Tensor, yt: torch.Tensor, *, epochs: int, batch: int, lr: float,
           gen: torch.Generator, progress) -> None:
    """Adam on the mean squared error of scaled torques, cosine learning-rate decay, shuffled minibatches."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    for epoch in range(epochs):
        order = torch.randperm(len(xt), generator=gen)
        for s in range(0, len(xt), batch):
            idx = order[s: s + batch]
            loss = nn.functional.mse_loss(model(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        if progress is not None:
            progress(epoch + 1, epochs)


def fit_actuator_net(log: MotorLog, *, history: tuple[int, ...] = (0, 1, 2), hidden: tuple[int, ...] = (32, 32, 32),
                     epochs: int = 60, batch: int = 1024, lr: float = 3e-3, seed: int = 0,
                     progress=None) -> tuple[ActuatorMLP, dict, FitReport]:
    """Fit the network; returns it, its metadata (Newton's neural-drive keys) and the validation report.

    ``history``: the physics steps back that the network reads (0 = the present). Inputs are scaled by the inverse
    standard deviations of the training errors and velocities and the output by the torques' standard deviation.
    """
    if not history or any(k < 0 for k in history) or len(set(history)) != len(history):
        raise MotorLogError(f"history={list(history)}: distinct indices >= 0 expected, e.g. 0,1,2")
    train, val = _split(log)
    x, y = _features(train, history)
    xv, yv = _features(val, history)
    k = len(history)
    pos_scale = 1.0 / max(float(x[:, :k].std()), 1e-6)
    vel_scale = 1.0 / max(float(x[:, k:].std()), 1e-6)
    effort_scale = max(float(y.std()), 1e-6)
    scale = np.array([pos_scale] * k + [vel_scale] * k, np.float32)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = ActuatorMLP(2 * k, tuple(hidden))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 32-wide MLP gains nothing from more, and loses 10x+ when the cores are busy
    try:
        _train(model, torch.from_numpy(x * scale), torch.from_numpy(y / effort_scale)[:, None], epochs=epochs,
               batch=batch, lr=lr, gen=gen, progress=progress)
    finally:
        torch.set_num_threads(threads)

    def rmse(xs: np.ndarray, ys: np.ndarray) -> float:
        with torch.no_grad():
            pred = model(torch.from_numpy(xs * scale))[:, 0].numpy() * effort_scale
        return float(np.sqrt(np.mean((pred - ys) ** 2)))

    val_rmse = rmse(xv, yv)
    report = FitReport(samples=len(x), val_rmse=val_rmse, val_rel=val_rmse / max(float(yv.std()), 1e-9),
                       train_rmse=rmse(x, y))
    metadata = {"input_order": "pos_vel", "input_idx": list(history), "pos_scale": pos_scale,
                "vel_scale": vel_scale, "effort_scale": effort_scale}
    return model, metadata, report


def write_actuator_net(model: ActuatorMLP, metadata: dict, path: str | Path, *, report: FitReport | None = None) -> Path:
    """The network as one ONNX file (input ``input`` [batch, 2 * len(input_idx)], output ``effort`` [batch, 1],
    symbolic batch) with Newton's neural-drive metadata under the ``metadata`` key."""
    import onnx

    from horde.policies.inference import ONNX_IR_VERSION as IR_VERSION
    from horde.policies.inference import ONNX_OPSET as OPSET

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # torchvision-op registration chatter
    inputs = 2 * len(metadata["input_idx"])
    batch = torch.export.Dim("batch", min=1, max=1 << 20)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dynamo exporter's FutureWarning chatter
        program = torch.onnx.export(model.eval(), (torch.zeros(4, inputs),), input_names=["input"],
                                    output_names=["effort"], opset_version=OPSET, dynamo=True,
                                    dynamic_shapes=({0: batch},), external_data=False, verbose=False)
    proto = program.model_proto
    proto.ir_version = min(proto.ir_version, IR_VERSION)
    del proto.metadata_props[:]
    meta = dict(metadata)
    if report is not None:
        meta["horde_fit"] = {"samples": report.samples, "val_rmse": report.val_rmse, "val_rel": report.val_rel,
                             "train_rmse": report.train_rmse}
    entry = proto.metadata_props.add()
    entry.key, entry.value = "metadata", json.dumps(meta)
    onnx.checker.check_model(proto)
    onnx.save_model(proto, str(path), save_as_external_data=False)
    return path


def predict(model: ActuatorMLP, metadata: dict, log: MotorLog) -> tuple[np.ndarray, np.ndarray]:
    """The network's torques and the logged ones on ``log``'s samples (flat), for plots and checks."""
    history = tuple(metadata["input_idx"])
    k = len(history)
    x, y = _features(log, history)
    scale = np.array([metadata["pos_scale"]] * k + [metadata["vel_scale"]] * k, np.float32)
    with torch.no_grad():
        pred = model(torch.from_numpy(x * scale))[:, 0].numpy() * metadata["effort_scale"]
    return pred, y


def plot_fit(model: ActuatorMLP, metadata: dict, log: MotorLog, path: str | Path, steps: int = 400) -> Path:
    """Logged against predicted torque of the held-out data's first joint over ``steps`` physics steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, val = _split(log)
    one = MotorLog(*(a[:1, : steps + max(metadata["input_idx"]), :1] for a in (val.pos_error, val.velocity,
                                                                              val.torque)))
    pred, y = predict(model, metadata, one)
    fig, ax = plt.subplots(figsize=(8, 3), dpi=120)
    ax.plot(y, label="logged", color="black", lw=1)
    ax.plot(pred, label="actuator network", color="tab:orange", lw=1, ls="--")
    ax.set(xlabel="physics step (held-out data, first joint)", ylabel="torque [N m]")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


def parse_ints(text: str) -> tuple[int, ...]:
    """``"0,1,2"`` -> (0, 1, 2)."""
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise MotorLogError(f"'{text}': comma-separated integers expected, e.g. 0,1,2") from None
