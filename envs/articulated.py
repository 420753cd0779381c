"""The task base of every articulated task (a robot on a :class:`horde.sim.newton_world.NewtonWorld`): the step
sequence, the reset sequence, the episode statistics the world adds and the state a checkpoint resumes, written once.

A step is ``_pre_physics`` (the task's kernel before the physics: action delay, squash, events, an IK command),
``world.simulate`` of ``_joint_actions()`` (one action per actuated joint, as the actuation law takes it),
``world.inspect`` (health check, contact forces, views), ``_post_physics`` (the fused reward, termination and
observation kernel), ``world.reset`` of the finished envs, then ``_observe_step`` (observations of the envs that just
reset). A reset is ``_reset_task`` (the task's draws: commands, targets), ``world.reset`` (with the task's reset
events, ``_reset_events``, between the joint state and the bodies) and ``_observe_reset``.

Construction has two phases: a task's ``__init__`` builds its world, constants and buffers and then calls
``super().__init__``; the core allocates the shared buffers (actions, observations, rewards, episode counters) and
calls ``_bind``, where the task builds its term context over them, before the first reset. No placeholder and
no ``None`` guard is needed for buffers the core has not created yet.
"""

from __future__ import annotations

import torch
import warp as wp

from horde.envs.core import WarpTaskEnv

__all__ = ["ArticulatedTaskEnv"]


class ArticulatedTaskEnv(WarpTaskEnv):
    """A :class:`WarpTaskEnv` whose physics is ``self.world`` (set before ``super().__init__``), with
    ``self._last_actions`` (the clipped actions of the previous step, [num_envs, num_actions])."""

    # --- the step and the reset, once ------------------------------------------------------------------------------
    def _launch_step(self) -> None:
        w = self.world
        self._pre_physics()
        w.simulate(self._joint_actions())
        w.inspect()
        self._post_physics()
        w.reset(self._dones, self._rng, self._reset_events)
        self._observe_step()

    def _launch_reset(self) -> None:
        self._reset_task()
        self.world.reset(self._reset_mask, self._rng, self._reset_events)
        self._observe_reset()

    # --- what a task fills in ------------------------------------------------------------------------------------
    _reset_events = None
    """The task's reset events, ``(mask, rng) -> None``, run by ``world.reset`` after it wrote the reset envs' joint
    state (None: none)."""

    def _pre_physics(self) -> None:
        """The task's kernel before the physics (none by default)."""

    def _joint_actions(self) -> wp.array:
        """One action per actuated joint, [num_envs, joints], as the actuation law takes it (default: the actions)."""
        return self._actions

    def _post_physics(self) -> None:
        """The task's fused post-step kernel: rewards, terminations, statistics, final and next observations."""
        raise NotImplementedError

    def _observe(self, mask: wp.array) -> None:
        """Observations of the envs in ``mask``."""
        raise NotImplementedError

    def _observe_step(self) -> None:
        """After the world reset the finished envs: their observations."""
        self._observe(self._dones)

    def _reset_task(self) -> None:
        """The task's own reset draws of the envs in ``_reset_mask`` (none by default)."""

    def _observe_reset(self) -> None:
        self._observe(self._reset_mask)

    def _task_state(self) -> dict[str, torch.Tensor]:
        """The task's own state a checkpoint must hold to resume exactly (commands, targets, histories)."""
        return {}

    # --- host side -------------------------------------------------------------------------------------------------
    def pop_episode_stats(self) -> dict[str, float]:
        out = super().pop_episode_stats()
        out["sim/unstable_resets"] = self.world.pop_unstable_count()
        return out

    def _resumable(self) -> dict[str, torch.Tensor]:
        return {**super()._resumable(), **self.world.physics_state(), "last_actions": wp.to_torch(self._last_actions),
                **self._task_state()}
