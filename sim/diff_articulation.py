"""Differentiable control steps of a Newton articulation: Featherstone's solver under a ``wp.Tape``.

:class:`ArticulationDiffRollout` has the surface of :class:`horde.sim.diff.DiffRollout` (``step``, ``rollout``,
``state_dim``, ``action_dim``, ``bytes_per_env_step``) and goes through the same ``torch.autograd.Function``. Its
state is ``[joint_q (C), joint_qd (D), site positions (3 per site)]`` per env: joint angles [rad], joint rates
[rad/s] and the world positions [m] of named sites (an end effector) after the step; the site columns of an input
state are ignored. Each substep runs horde's actuation law (the PD law or torques of
:func:`horde.sim.actuation.actuate_joints`, the same maths) and one Featherstone step into a fresh state.

Two measured facts shape it (``tests/unit/test_diff.py`` checks both against central finite differences):

- Featherstone keeps its Jacobian, mass matrix and Cholesky factor in buffers of the solver object, rewritten by
  every ``step``: under a tape, the backward pass of every substep but the last reads the last substep's matrices,
  and the gradient through the state comes out wrong (measured on the 7-DoF arm: 12-45% off after 5 control steps;
  the last step's was right). Each substep therefore takes a solver of its own from a pool (a solver costs about
  1.5 ms to build); a step's solvers go back to the pool after its backward pass (or go with its graph).
- Newton's Featherstone kernels compile without backward passes when horde's default (``enable_backward=False``)
  is in force; building a rollout turns them on for that module (the module recompiles once, cached on disk).

MuJoCo-Warp (horde's default solver for ``reach``) returns exactly zero gradients (ENGINE_NOTES), so the
differentiable model of a task uses Featherstone; a policy trained on it is evaluated in an env with
``task.sim.solver=featherstone`` to see the same dynamics.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import warp as wp

from horde.sim.actuation import MODE_PD, MODE_TORQUE, Actuation, joint_torque
from horde.sim.device import on_torch_stream, resolve_device
from horde.sim.diff import TapedRollout, ZeroGradientError
from horde.sim.newton_build import build_model, joint_dof_layout


@wp.kernel(enable_backward=True, module="unique")
def load_joint_state(
    state: wp.array2d(dtype=float),
    coords: int,
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
):
    """Joint angles and rates of env i from its state row [q (C), qd (D), ...]."""
    i, k = wp.tid()
    if k < coords:
        joint_q[i, k] = state[i, k]
    else:
        joint_qd[i, k - coords] = state[i, k]


@wp.kernel(enable_backward=True, module="unique")
def actuate(
    mode: int,
    actions: wp.array2d(dtype=float),
    q_index: wp.array(dtype=int),
    qd_index: wp.array(dtype=int),
    scale: wp.array(dtype=float),
    offset: wp.array(dtype=float),
    stiffness: wp.array(dtype=float),
    damping: wp.array(dtype=float),
    effort: wp.array(dtype=float),
    lower: wp.array(dtype=float),
    upper: wp.array(dtype=float),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    joint_f: wp.array2d(dtype=float),
):
    """:func:`horde.sim.actuation.actuate_joints` (motor strength 1), with a backward pass."""
    i, k = wp.tid()
    a = wp.clamp(actions[i, k], -1.0, 1.0)
    di = qd_index[k]
    tau = joint_torque(mode, a, scale[k], offset[k], stiffness[k], damping[k], lower[k], upper[k],
                       joint_q[i, q_index[k]], joint_qd[i, di])
    joint_f[i, di] = wp.clamp(tau, -effort[k], effort[k])


@wp.kernel(enable_backward=True, module="unique")
def store_joint_state(
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    body_q: wp.array2d(dtype=wp.transform),
    site_body: wp.array(dtype=int),
    site_offset: wp.array(dtype=wp.vec3),
    state: wp.array2d(dtype=float),
):
    """State row i: [q, qd, positions of the sites]."""
    i = wp.tid()
    c = joint_q.shape[1]
    d = joint_qd.shape[1]
    for k in range(c):
        state[i, k] = joint_q[i, k]
    for k in range(d):
        state[i, c + k] = joint_qd[i, k]
    for s in range(site_body.shape[0]):
        p = wp.transform_point(body_q[i, site_body[s]], site_offset[s])
        for k in range(3):
            state[i, c + d + 3 * s + k] = p[k]


class ArticulationDiffRollout(TapedRollout):
    """Differentiable control steps of copies of a fixed-base robot on Newton's Featherstone solver.

    ``step(state [N, S], actions [N, A]) -> next state [N, S]``, differentiable in both, with
    ``S = joint coords + joint dofs + 3 x len(sites)``; actions in [-1, 1] (clipped as the env clips them). Any N:
    a Newton model of N worlds (and its solver pool) is built on first use and kept.
    """

    def __init__(self, robot, *, actuated_joints: Sequence[str], actuation: Actuation, sim_dt: float,
                 decimation: int, sites: Sequence[tuple[int, Sequence[float]]] = (), device: str = "cpu",
                 check_zero_grad: bool = True) -> None:
        """``robot`` is a Newton ``ModelBuilder`` of one robot (loaded for the ``featherstone`` solver); ``sites``
        are (body index, offset in that body [m]) whose world positions the state carries."""
        import newton._src.solvers.featherstone.kernels as featherstone_kernels

        if decimation < 1:
            raise ValueError(f"decimation must be >= 1, got {decimation}")
        if robot.joint_coord_count != robot.joint_dof_count:
            raise ValueError("ArticulationDiffRollout takes fixed-base robots (a free joint's gradients are wrong in "
                             "Featherstone, see ENGINE_NOTES)")
        # Newton compiles its Featherstone kernels without backward passes under horde's default config.
        wp.set_module_options({"enable_backward": True}, module=featherstone_kernels)
        self.robot = robot
        self.dev = resolve_device(device)
        self.device = self.dev.torch
        self.decimation, self.sim_dt = int(decimation), float(sim_dt)
        self.check_zero_grad = check_zero_grad
        self.coords, self.dofs, self.bodies = robot.joint_coord_count, robot.joint_dof_count, robot.body_count
        self.state_dim = self.coords + self.dofs + 3 * len(sites)
        self.action_dim = len(actuated_joints)
        self.kernel = actuate  # named in error messages
        q_idx, qd_idx = joint_dof_layout(robot, actuated_joints)
        with wp.ScopedDevice(self.dev.warp):
            self._mode = MODE_PD if actuation.mode == "pd" else MODE_TORQUE
            self._q_index, self._qd_index = wp.array(q_idx, dtype=int), wp.array(qd_idx, dtype=int)
            self._scale, self._offset = wp.array(actuation.scale, dtype=float), wp.array(actuation.offset, dtype=float)
            self._kp, self._kd = wp.array(actuation.stiffness, dtype=float), wp.array(actuation.damping, dtype=float)
            self._effort = wp.array(actuation.effort_limit, dtype=float)
            self._lower = wp.array([robot.joint_limit_lower[k] for k in qd_idx], dtype=float)
            self._upper = wp.array([robot.joint_limit_upper[k] for k in qd_idx], dtype=float)
            self._site_body = wp.array([int(b) for b, _ in sites], dtype=int)
            self._site_offset = wp.array([wp.vec3(*o) for _, o in sites], dtype=wp.vec3)
        self._models: dict[int, object] = {}
        self._free_solvers: dict[int, list] = {}

    def _model(self, n: int):
        """The Newton model of ``n`` worlds (built once, with gradient buffers)."""
        if n not in self._models:
            self._models[n] = build_model(self.robot, world_count=n, device=self.dev.warp, solver="featherstone",
                                          ground=False, contact_ke=self.robot.default_shape_cfg.ke,
                                          requires_grad=True)
            self._free_solvers[n] = []
        return self._models[n]

    def _solver(self, n: int):
        import newton

        pool = self._free_solvers[n]
        return pool.pop() if pool else newton.solvers.SolverFeatherstone(self._models[n])

    @property
    def bytes_per_env_step(self) -> int:
        """Warp buffers one control step keeps alive per env until backward: values and gradients of every
        substep's state and control, and of the solver each substep holds (Jacobians, mass matrices and their
        factors: most of it, about 27 KB per env per substep on the 7-DoF arm)."""
        def nbytes(obj) -> int:
            arrays = [a for a in vars(obj).values() if isinstance(a, wp.array)]
            return sum(a.capacity + (a.grad.capacity if a.grad is not None else 0) for a in arrays)

        m = self._model(1)
        solver = self._solver(1)
        per_substep = (nbytes(m.state(requires_grad=True)) + nbytes(m.control(requires_grad=True))
                       + nbytes(solver))
        self._free_solvers[1].append(solver)
        return per_substep * self.decimation + 8 * (self.state_dim + self.action_dim)

    @torch.no_grad()
    def sites(self, joint_q: torch.Tensor) -> torch.Tensor:
        """World positions [N, 3 x len(sites)] [m] of the sites for joint angles ``joint_q`` [N, C] (forward
        kinematics, not differentiable: initial states)."""
        import newton

        n = joint_q.shape[0]
        m, c = self._model(n), self.coords
        with wp.ScopedDevice(self.dev.warp):
            s = m.state()
            wp.to_torch(s.joint_q).copy_(joint_q.reshape(-1).to(self.device, torch.float32))
            newton.eval_fk(m, s.joint_q, s.joint_qd, s)
            out = wp.zeros((n, self.state_dim), dtype=float)
            wp.launch(store_joint_state, n, inputs=[s.joint_q.reshape((n, c)), s.joint_qd.reshape((n, self.dofs)),
                                                    s.body_q.reshape((n, self.bodies)), self._site_body,
                                                    self._site_offset], outputs=[out])
        return wp.to_torch(out)[:, c + self.dofs:].clone()

    def _forward(self, state: torch.Tensor, actions: torch.Tensor, taped: bool):
        n, d = state.shape[0], self.dev.warp
        m = self._model(n)
        s_in = wp.from_torch(state, requires_grad=False)
        a_in = wp.from_torch(actions, requires_grad=False)
        if taped:
            s_in.grad = wp.zeros_like(s_in, requires_grad=False)
            a_in.grad = wp.zeros_like(a_in, requires_grad=False)
        tape = wp.Tape() if taped else None
        solvers = []
        c, dofs, b = self.coords, self.dofs, self.bodies
        with wp.ScopedDevice(d), on_torch_stream(self.dev.torch):
            if tape is not None:
                tape.__enter__()
            try:
                s = m.state(requires_grad=taped)
                wp.launch(load_joint_state, (n, c + dofs), inputs=[s_in, c],
                          outputs=[s.joint_q.reshape((n, c)), s.joint_qd.reshape((n, dofs))])
                for _ in range(self.decimation):
                    control = m.control(requires_grad=taped)
                    wp.launch(actuate, (n, self.action_dim), inputs=[
                        self._mode, a_in, self._q_index, self._qd_index, self._scale, self._offset, self._kp,
                        self._kd, self._effort, self._lower, self._upper, s.joint_q.reshape((n, c)),
                        s.joint_qd.reshape((n, dofs))], outputs=[control.joint_f.reshape((n, dofs))])
                    out = m.state(requires_grad=taped)
                    solvers.append(self._solver(n))
                    solvers[-1].step(s, out, control, None, self.sim_dt)
                    s = out
                next_state = wp.empty((n, self.state_dim), dtype=float, requires_grad=taped)
                wp.launch(store_joint_state, n, inputs=[s.joint_q.reshape((n, c)), s.joint_qd.reshape((n, dofs)),
                                                        s.body_q.reshape((n, b)), self._site_body, self._site_offset],
                          outputs=[next_state])
            finally:
                if tape is not None:
                    tape.__exit__(None, None, None)
        if tape is None:
            self._free_solvers[n].extend(solvers)
        else:
            tape.horde_solvers = (n, solvers)  # kept with the tape; back to the pool after its backward pass
        return tape, s_in, a_in, next_state

    def _backward(self, tape: wp.Tape, s_in: wp.array, a_in: wp.array, out: wp.array, grad_out: torch.Tensor):
        with wp.ScopedDevice(self.dev.warp), on_torch_stream(self.dev.torch):
            tape.backward(grads={out: wp.from_torch(grad_out.contiguous(), requires_grad=False)})
        n, solvers = tape.horde_solvers
        self._free_solvers[n].extend(solvers)
        tape.horde_solvers = (n, [])
        g_state, g_act = wp.to_torch(s_in.grad, requires_grad=False), wp.to_torch(a_in.grad, requires_grad=False)
        if self.check_zero_grad and bool(grad_out.any()) and not (bool(g_state.any()) or bool(g_act.any())):
            raise ZeroGradientError("backward through the Featherstone step gave exactly zero gradients for a nonzero "
                                    "incoming gradient (backward kernels disabled?)")
        return g_state, g_act
