"""Differentiable control steps: one ``torch.autograd.Function`` around a ``wp.Tape``.

Forward runs the ``decimation`` physics substeps of one control step with a ``*_step_diff`` kernel, each into a
*fresh* state array (a state recorded on a tape is never overwritten), and returns the next state as a torch
tensor that aliases the Warp array. Backward replays that step's tape in reverse and hands torch the gradients
with respect to the input state and the actions, so ``loss.backward()`` reaches a policy's parameters through
``T`` control steps of physics. Tapes are per step: torch's autograd graph chains them, and truncating a rollout
(``state.detach()``) frees everything before the cut.

Memory held until backward, per env per control step: the action gradient, the input-state gradient, and the
value and gradient of every substep's output state (:attr:`DiffRollout.bytes_per_env_step`).

An exactly-zero gradient for every input while the incoming gradient is not zero is what a kernel without a
backward pass, or a solver that does not propagate gradients, produces; it raises :class:`ZeroGradientError`
instead of passing silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import warp as wp

from horde.sim.classic import (
    CARTPOLE_STATE,
    PENDULUM_STATE,
    CartpoleParams,
    PendulumParams,
    cartpole_step_diff,
    pendulum_step_diff,
)
from horde.sim.device import on_torch_stream, resolve_device


class NotDifferentiableError(ValueError):
    """A differentiable rollout was asked of a task (or physics) that has none; the message names those that do."""


class ZeroGradientError(RuntimeError):
    """Backward produced exactly zero gradients for a nonzero incoming gradient (backward kernels missing?)."""


PHYSICS: dict[object, tuple[wp.Kernel, int, int]] = {
    PendulumParams: (pendulum_step_diff, len(PENDULUM_STATE), 1),
    CartpoleParams: (cartpole_step_diff, len(CARTPOLE_STATE), 1),
}
"""Differentiable substep kernel, state width and action width, by physics-constants ``@wp.struct``."""


class TapedRollout:
    """The public surface of a differentiable control step (``step``, ``rollout``); subclasses set ``state_dim``,
    ``action_dim``, ``device`` and ``dev``, and implement ``_forward`` (run one control step, under a ``wp.Tape``
    when ``taped``) and ``_backward`` (replay that tape, return the input gradients) for :class:`_DiffStep`."""

    state_dim: int
    action_dim: int

    def _forward(self, state: torch.Tensor, actions: torch.Tensor, taped: bool):
        raise NotImplementedError

    def _backward(self, tape, s_in, a_in, out, grad_out: torch.Tensor):
        raise NotImplementedError

    def step(self, state: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Next state [N, S] after one control step from ``state`` [N, S] under ``actions`` [N, A] in [-1, 1]."""
        n = state.shape[0]
        if state.shape != (n, self.state_dim) or actions.shape != (n, self.action_dim):
            raise ValueError(f"expected state [N, {self.state_dim}] and actions [N, {self.action_dim}], got "
                             f"{tuple(state.shape)} and {tuple(actions.shape)}")
        return _DiffStep.apply(state, actions, self)

    def rollout(self, state: torch.Tensor, policy: Callable[[torch.Tensor, int], torch.Tensor], steps: int, *,
                truncate_every: int = 0) -> torch.Tensor:
        """States [steps + 1, N, S] from ``state`` under ``policy(state, t) -> actions [N, A]``.

        ``truncate_every=k > 0`` detaches the state every k steps, so gradients flow back at most k steps and
        the tapes (and policy activations) before each cut can be freed as soon as nothing else needs them.
        """
        states = [state]
        for t in range(steps):
            if truncate_every > 0 and t > 0 and t % truncate_every == 0:
                state = state.detach()
            state = self.step(state, policy(state, t))
            states.append(state)
        return torch.stack(states)


class DiffRollout(TapedRollout):
    """Differentiable control steps of a batch of worlds whose physics is one ``*_step_diff`` kernel.

    ``step(state [N, S], actions [N, A]) -> next state [N, S]`` is differentiable in both arguments. States are
    float32 in the units of the task's ``state_names``; actions are in [-1, 1] (the kernel clips them).
    """

    def __init__(self, params, *, decimation: int, device: str = "cpu", kernel: wp.Kernel | None = None,
                 check_zero_grad: bool = True) -> None:
        """``params`` is the physics struct (e.g. ``PendulumParams``); ``kernel`` overrides the substep kernel
        (tests use it to run one without a backward pass). ``check_zero_grad`` raises :class:`ZeroGradientError`
        on an all-zero backward (one host sync per step in backward)."""
        match = [v for k, v in PHYSICS.items() if isinstance(params, k.cls)]
        if not match:
            raise NotDifferentiableError(
                f"no differentiable step for physics {type(params).__name__}; known: "
                f"{', '.join(k.key for k in PHYSICS)}")
        if decimation < 1:
            raise ValueError(f"decimation must be >= 1, got {decimation}")
        default_kernel, self.state_dim, self.action_dim = match[0]
        self.kernel = kernel or default_kernel
        self.params = params
        self.decimation = int(decimation)
        self.dev = resolve_device(device)
        self.device = self.dev.torch
        self.check_zero_grad = check_zero_grad

    @property
    def bytes_per_env_step(self) -> int:
        """Bytes that one control step keeps alive per env until backward (Warp values and gradients)."""
        floats = self.action_dim + self.state_dim + 2 * self.state_dim * self.decimation
        return 4 * floats

    # --- forward and backward (called by _DiffStep) ------------------------------------------------------------
    def _forward(self, state: torch.Tensor, actions: torch.Tensor, taped: bool):
        """Run the substeps; returns (tape or None, state_in, actions_in, final state array)."""
        n, d = state.shape[0], self.dev.warp
        s = wp.from_torch(state, requires_grad=False)
        a = wp.from_torch(actions, requires_grad=False)
        if taped:  # gradients live in fresh Warp buffers, never in the torch tensors' .grad
            s.grad = wp.zeros_like(s, requires_grad=False)
            a.grad = wp.zeros_like(a, requires_grad=False)
        tape = wp.Tape() if taped else None
        s_in, a_in = s, a
        with wp.ScopedDevice(d), on_torch_stream(self.dev.torch):
            if tape is not None:
                tape.__enter__()
            try:
                for _ in range(self.decimation):
                    out = wp.empty((n, self.state_dim), dtype=float, requires_grad=taped)
                    wp.launch(self.kernel, n, inputs=[self.params, a, s], outputs=[out])
                    s = out
            finally:
                if tape is not None:
                    tape.__exit__(None, None, None)
        return tape, s_in, a_in, s

    def _backward(self, tape: wp.Tape, s_in: wp.array, a_in: wp.array, out: wp.array, grad_out: torch.Tensor):
        with wp.ScopedDevice(self.dev.warp), on_torch_stream(self.dev.torch):
            tape.backward(grads={out: wp.from_torch(grad_out.contiguous(), requires_grad=False)})
        g_state, g_act = wp.to_torch(s_in.grad, requires_grad=False), wp.to_torch(a_in.grad, requires_grad=False)
        if self.check_zero_grad and bool(grad_out.any()) and not (bool(g_state.any()) or bool(g_act.any())):
            raise ZeroGradientError(
                f"backward through {self.kernel.key} gave exactly zero gradients for a nonzero incoming gradient: "
                "the kernel has no backward pass (enable_backward=False?) or does not propagate gradients")
        return g_state, g_act


class _DiffStep(torch.autograd.Function):
    """One control step through Warp: forward under a ``wp.Tape``, backward by replaying it."""

    @staticmethod
    def forward(ctx, state: torch.Tensor, actions: torch.Tensor, sim: DiffRollout) -> torch.Tensor:
        state = state.detach().to(device=sim.device, dtype=torch.float32).contiguous()
        actions = actions.detach().to(device=sim.device, dtype=torch.float32).contiguous()
        taped = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        tape, s_in, a_in, out = sim._forward(state, actions, taped)
        out_t = wp.to_torch(out, requires_grad=False)
        ctx.sim, ctx.tape, ctx.arrays = sim, tape, (s_in, a_in, out)
        # Saved so that torch's version counters catch an in-place write to a state the tape still reads.
        ctx.save_for_backward(state, actions, out_t)
        return out_t

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        ctx.saved_tensors  # noqa: B018 - raises if a saved (taped) tensor was modified in place since forward
        if ctx.tape is None:
            raise RuntimeError("differentiable step was recorded without a tape (no input required grad)")
        s_in, a_in, out = ctx.arrays
        g_state, g_act = ctx.sim._backward(ctx.tape, s_in, a_in, out, grad_out)
        ctx.tape, ctx.arrays = None, None  # free the Warp buffers now, not when the graph is collected
        return g_state, g_act, None


@dataclass(frozen=True, kw_only=True)
class DiffTask:
    """A task's differentiable model: physics on Warp, observations, reward terms, failure and resets on torch
    tensors.

    Every function is batched over ``[num_envs, ...]`` and computes what the task's Warp kernels do; reward terms
    of a task with a :class:`horde.envs.terms.TermSet` are its own term functions
    (:func:`horde.envs.terms.term_values_torch`), not a second copy.
    """

    rollout: TapedRollout
    """The differentiable control step (``step``, ``action_dim``, ``device``, ``bytes_per_env_step``)."""
    obs: Callable[[torch.Tensor], torch.Tensor]
    """state [N, S] -> observations [N, obs_dim], as the env reports them."""
    reward_terms: Callable[[torch.Tensor, torch.Tensor], dict[str, torch.Tensor]]
    """(next state [N, S], actions [N, A]) -> unscaled reward terms, each [N]."""
    reward_scales: dict[str, float]
    """Weight of each term (the task config's ``reward_scales``)."""
    failed: Callable[[torch.Tensor], torch.Tensor]
    """next state [N, S] -> bool [N], the task's failure condition."""
    sample_state: Callable[[int, torch.Generator], torch.Tensor]
    """(num_envs, generator) -> initial states [num_envs, S] drawn from the task's reset distribution."""
    episode_length: int
    """Control steps before a time-out."""
    env_settings: dict[str, object] = field(default_factory=dict)
    """Task-config settings (dotted paths under the task config) the env must have to run the dynamics this model
    differentiates, e.g. ``{"sim.solver": "featherstone"}`` for reach; SHAC refuses a config without them."""

    def mismatched_settings(self, task_config) -> dict[str, tuple[object, object]]:
        """``{path: (required, actual)}`` for each of :attr:`env_settings` that ``task_config`` does not have."""
        out = {}
        for path, want in self.env_settings.items():
            have = task_config
            for part in path.split("."):
                have = getattr(have, part)
            if have != want:
                out[path] = (want, have)
        return out

    def reward(self, next_state: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Reward [N] = sum of scale x term, as the env's post-step kernel computes it."""
        terms = self.reward_terms(next_state, actions)
        return sum(self.reward_scales[k] * v for k, v in terms.items())
