"""Actuator networks: a learned joint-torque law in place of PD (Hwangbo et al. 2019), run inside the step graph.

A real motor behind a PD loop is not a PD law: its current loop, gearbox friction, backlash and transport delay make
the torque depend on the recent history of the position error and the velocity. An actuator network learns that map
from logged motor data (:mod:`horde.train.actuator_fit`); one network is shared by every joint, as on ANYmal and in
Isaac Lab's ``ActuatorNetMLP``.

horde evaluates it once per physics substep, in place of the PD law; the world then applies the motor strength and
the effort limit (or the DC-motor line) as for PD. The file is in the format of Newton's neural drive
(:class:`newton.actuators.DriveNeuralMLP`): its metadata say which history steps it reads (``input_idx``, in physics
substeps) and how its inputs and output are scaled (``pos_scale``, ``vel_scale``, ``effort_scale``). Two backends:

* ``warp`` (GPUs): Newton's drive itself, the ONNX graph run by Warp-NN's kernels, recorded in the step graph;
* ``onnxruntime`` (the CPU default): the same maths as a host call of the recorded step, the network run by
  onnxruntime on zero-copy views. Warp's CPU kernels are single-threaded and Warp-NN's CPU matmuls slow: the
  quadruped kept 0.21-0.25x of its PD speed with Warp-NN, 0.86-0.98x with onnxruntime on one thread
  (``benchmarks/actuator_net.py [--backend warp]``, 2026-11-25).

Per env and joint the drive keeps a history of position errors and velocities: :meth:`ActuatorNet.reset` clears the
history of reset envs and :meth:`ActuatorNet.physics_state` hands it to checkpoints, so resume stays exact.
"""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import torch
import warp as wp

from horde.sim.fields import FieldError

__all__ = ["ActuatorNet", "BACKENDS", "load_drive"]

BACKENDS = ("auto", "warp", "onnxruntime")
AUTO_CPU_BACKEND = "onnxruntime"
"""What ``auto`` picks on the CPU (GPUs: ``warp``); ``benchmarks/actuator_net.py --backend warp`` sets it to compare."""


@wp.kernel(enable_backward=False)
def clear_history(mask: wp.array(dtype=wp.bool), num_actions: int, pos_error: wp.array2d(dtype=float),
                  vel: wp.array2d(dtype=float)):
    """Zero history step ``h`` of actuator ``j`` (env ``j // num_actions``) where that env is reset."""
    h, j = wp.tid()
    if mask[j // num_actions]:
        pos_error[h, j] = 0.0
        vel[h, j] = 0.0


def load_drive(path: str | Path, field: str = "task.actuator_net"):
    """Newton's neural drive for the ONNX file at ``path``; a one-line :class:`FieldError` (naming ``field``) for a
    missing file, a missing Warp-NN, or a file that is no actuator network in Newton's format."""
    from newton.actuators import DriveNeuralMLP

    p = Path(path).expanduser()
    if not p.is_file():
        raise FieldError(f"{field}={path}: no such file (fit one with `horde actuator-net data=<motor log>.npz`)")
    if p.suffix.lower() != ".onnx":
        raise FieldError(f"{field}={path}: expected an .onnx file (`horde actuator-net` writes one)")
    try:
        return DriveNeuralMLP(str(p))
    except ImportError as exc:
        raise FieldError(f"{field}: {exc}") from None
    except Exception as exc:  # onnx's DecodeError, a bad metadata value: the file is the user's
        raise FieldError(f"{field}={path}: not an actuator network Newton can load ({exc})") from None


class ActuatorNet:
    """An actuator network for ``num_envs`` x ``num_actions`` joints on ``device``.

    The world fills :attr:`q`, :attr:`qd` and :attr:`target` (flat, ``[num_envs * num_actions]``, env-major) each
    substep, calls :meth:`compute`, and reads the torque before strength and limits from :attr:`effort` [N m].
    """

    def __init__(self, path: str | Path, *, num_envs: int, num_actions: int, device: str,
                 backend: str = "auto") -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown actuator-network backend '{backend}'; valid: {', '.join(BACKENDS)}")
        self.drive = load_drive(path)
        self.path, self.num_envs, self.num_actions, self.device = str(path), num_envs, num_actions, device
        dev = wp.get_device(device)
        self.backend = (AUTO_CPU_BACKEND if dev.is_cpu else "warp") if backend == "auto" else backend
        m = num_envs * num_actions
        if self.backend == "warp":
            try:
                self.drive.finalize(dev, m)
            except ValueError as exc:  # e.g. an output that is not one torque per joint
                raise FieldError(f"task.actuator_net={path}: {exc}") from None
            self._state = self.drive.state(m, dev)
            self._next = self.drive.state(m, dev)
            self._hist_e, self._hist_v = self._state.pos_error_history, self._state.vel_history
        else:
            if not dev.is_cpu:
                raise ValueError("the onnxruntime actuator-network backend runs on the cpu device only")
            self._session = self._open_session(path, m)
            h = self.drive.history_length
            self._hist_e = wp.zeros((h, m), dtype=float, device=device)
            self._hist_v = wp.zeros((h, m), dtype=float, device=device)
        with wp.ScopedDevice(device):
            self.q = wp.zeros(m, dtype=float)
            """Joint positions [rad], shape [num_envs * num_actions]."""
            self.qd = wp.zeros(m, dtype=float)
            """Joint velocities [rad/s], shape [num_envs * num_actions]."""
            self.target = wp.zeros(m, dtype=float)
            """Position targets [rad], shape [num_envs * num_actions]."""
            self.effort = wp.zeros(m, dtype=float)
            """The network's torque [N m], shape [num_envs * num_actions]."""
            self._index = wp.array(np.arange(m, dtype=np.uint32), dtype=wp.uint32)
        if self.backend == "onnxruntime":  # zero-copy host views and preallocated inputs: no allocation per substep
            self._np = types.SimpleNamespace(q=self.q.numpy(), qd=self.qd.numpy(), target=self.target.numpy(),
                                             effort=self.effort.numpy(), hist_e=self._hist_e.numpy(),
                                             hist_v=self._hist_v.numpy(), e=np.empty(m, np.float32),
                                             x=np.empty((m, 2 * len(self.drive.input_idx)), np.float32))

    def _open_session(self, path, m: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, torch.get_num_threads())  # the run's thread budget (benchmarks: 1)
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        inputs, outputs = session.get_inputs(), session.get_outputs()
        width = 2 * len(self.drive.input_idx)
        try:
            out = session.run(None, {inputs[0].name: np.zeros((m, width), np.float32)})[0]
        except Exception as exc:  # a network whose input is not [batch, 2 x history]
            raise FieldError(f"task.actuator_net={path}: the network does not take [batch, {width}] inputs "
                             f"({str(exc).splitlines()[0]})") from None
        if len(inputs) != 1 or out.shape != (m, 1):
            raise FieldError(f"task.actuator_net={path}: expected one input and one [batch, 1] output (a torque per "
                             f"joint); got {len(inputs)} input(s) and output shape {out.shape}")
        self._in_name, self._out_name = inputs[0].name, outputs[0].name
        return session

    def _run_onnxruntime(self) -> None:
        """The drive's maths on the host: inputs from the present and the history, the network, then the history
        advanced by one substep (zero-copy views of the CPU arrays, preallocated inputs)."""
        d, v = self.drive, self._np
        np.subtract(v.target, v.q, out=v.e)
        n = len(d.input_idx)
        pos_at, vel_at = (0, n) if d.input_order == "pos_vel" else (n, 0)
        for c, k in enumerate(d.input_idx):
            np.multiply(v.e if k == 0 else v.hist_e[k - 1], d.pos_scale, out=v.x[:, pos_at + c])
            np.multiply(v.qd if k == 0 else v.hist_v[k - 1], d.vel_scale, out=v.x[:, vel_at + c])
        v.effort[:] = self._session.run([self._out_name], {self._in_name: v.x})[0][:, 0] * d.effort_scale
        for h in range(len(v.hist_e) - 1, 0, -1):
            v.hist_e[h] = v.hist_e[h - 1]
            v.hist_v[h] = v.hist_v[h - 1]
        v.hist_e[0], v.hist_v[0] = v.e, v.qd

    @property
    def history_steps(self) -> int:
        """Substeps of history the network reads (1: the present only)."""
        return int(self.drive.history_length)

    def compute(self) -> None:
        """The network's torque for the present inputs, then the history advanced by one substep. Launches (warp)
        or one host call (onnxruntime): recordable in the step graph."""
        if self.backend == "onnxruntime":
            from horde.sim.graph import host_call

            host_call(self._run_onnxruntime)
            return
        s, nxt = self._state, self._next
        self.drive.compute(self.q, self.qd, self.target, self.qd, None, self._index, self._index, self._index,
                           self._index, self.effort, s, 0.0, wp.get_device(self.device))
        self.drive.update_state(s, nxt)
        # the drive double-buffers its history; copying back keeps the recorded graph on fixed memory
        wp.copy(s.pos_error_history, nxt.pos_error_history)
        wp.copy(s.vel_history, nxt.vel_history)

    def reset(self, mask: wp.array) -> None:
        """Clear the history of the envs where ``mask`` [num_envs] (bool) is set."""
        wp.launch(clear_history, self._hist_e.shape, device=self.device,
                  inputs=[mask, self.num_actions, self._hist_e, self._hist_v])

    def physics_state(self) -> dict[str, torch.Tensor]:
        """Views of the history, shape [history_steps, num_envs * num_actions] each (for exact save/restore)."""
        return {"actuator_net_pos_error": wp.to_torch(self._hist_e), "actuator_net_vel": wp.to_torch(self._hist_v)}
