"""The velocity task's Warp side: its per-task constants (:class:`VelocityTask`), the observation writer and the
step's kernels (pre-step, the post-step factory that fuses reward, termination and user observation terms, the
critic group, observation of reset envs, explicit resets), the pre-step factory that fuses the event terms. :class:`horde.envs.velocity.VelocityEnv` launches them.
"""

# no `from __future__ import annotations`: Warp reads the annotations of the kernels below
import functools

import warp as wp

from horde.envs.episode import Episodes, clear_episode, close_step, weighted_reward
from horde.envs.velocity_terms import Legged, advance, clock_phase, push, track_heading, uniform_velocity
from horde.sim.randomize import delay_actions
from horde.sim.terrain import TerrainGrid, terrain_height, terrain_level_update

__all__ = ["VelocityTask", "critic_history_kernel", "critic_kernel", "observe_kernel", "post_step_kernel",
           "pre_step_kernel", "reset_episode_kernel", "velocity_pre_step", "write_privileged", "write_state"]


@wp.struct
class VelocityTask:
    """Per-task constants read by the kernels."""

    root: int
    dt: float
    max_episode_length: int
    resample_steps: int
    rough: int
    squash: int
    """How actions become PD target offsets: 0 clip (the actuation law's), 1 tanh."""
    clock_n: int
    """Gait-clock observation columns: 2 with the clock, else 0."""
    gait_period: float
    q_index: wp.array(dtype=int)
    """Coordinate index in ``joint_q`` of each actuated joint, in the robot config's joint order."""


@wp.func
def write_state(t: VelocityTask, i: int, ok: bool, joint_q: wp.array2d(dtype=float), state: wp.array2d(dtype=float)):
    """The state row of env i: the root coordinates, then the actuated joints' in the robot config's order (zeros
    when the world is not ``ok``)."""
    for k in range(state.shape[1]):
        c = k
        if k >= 7:
            c = t.q_index[k - 7]
        state[i, k] = wp.where(ok, joint_q[i, c], 0.0)


@functools.lru_cache(maxsize=None)
def pre_step_kernel(events: tuple[wp.Function, ...] = ()) -> wp.Kernel:
    """The step's first kernel for these interval event terms (:data:`VELOCITY_EVENTS`, ``task.events``; the push
    first when randomization pushes are on), fused with ``wp.static``."""

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_pre_step(
        t: VelocityTask,
        x: Legged,
        actions: wp.array2d(dtype=float),
        episode_length: wp.array(dtype=wp.int32),
        delay: wp.array(dtype=wp.int32),
        act_joint: wp.array(dtype=int),
        event_steps: wp.array(dtype=int),
        head: wp.array(dtype=wp.int32),
        rng: wp.array(dtype=wp.uint32),
        history: wp.array3d(dtype=float),
        delayed: wp.array2d(dtype=float),
        applied: wp.array2d(dtype=float),
    ):
        """Delayed actions, squashed (``t.squash``), into the acting joints' columns of ``applied`` (the other
        joints' stay 0: their PD targets are the default pose); each event on the steps its interval names."""
        i = wp.tid()
        h = (head[i] + 1) % history.shape[1]
        head[i] = h
        delay_actions(i, delay[i], h, actions, history, delayed)
        for k in range(delayed.shape[1]):
            a = delayed[i, k]
            if t.squash == 1:
                a = wp.tanh(a)
            applied[i, act_joint[k]] = a
        step = episode_length[i] + 1
        s = rng[i]
        for e in range(wp.static(len(events))):
            n = event_steps[e]
            if n > 0 and step % n == 0:
                s = wp.static(events[e])(x, i, s)
        rng[i] = s

    return velocity_pre_step


velocity_pre_step = pre_step_kernel((push,))
"""The pre-step of a task whose only event is the push (precompiled with the other kernels)."""


@functools.lru_cache(maxsize=None)
def post_step_kernel(terms: tuple[wp.Function, ...], terminations: tuple[wp.Function, wp.Function],
                     write_obs: wp.Function, episode_events: tuple[wp.Function, ...] = (),
                     draw_command: wp.Function = uniform_velocity) -> wp.Kernel:
    """The step's second kernel for these reward terms, terminations (``(check, count)`` of
    :meth:`horde.envs.terms.TerminationSet.fused`), observation group (``write_obs``:
    :func:`velocity_obs.observation_writer_of`, the user's terms included) and episode events (finished envs' next
    episode's parameters, after the command), fused with ``wp.static``: one launch for all."""
    check, count = terminations

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_post_step(
        t: VelocityTask,
        x: Legged,
        grid: TerrainGrid,
        centre_z: wp.array(dtype=float),
        ep: Episodes,
        causes: wp.array(dtype=wp.float64),
        rng: wp.array(dtype=wp.uint32),
        level: wp.array(dtype=wp.int32),
        origin: wp.array(dtype=wp.vec3),
        state: wp.array2d(dtype=float),
        obs: wp.array2d(dtype=float),
        final_obs: wp.array2d(dtype=float),
    ):
        """Failure, reward terms, time-out, statistics, observations; for finished envs: curriculum, new command."""
        i = wp.tid()
        ok = not x.unstable[i]
        steps = ep.length[i] + 1
        if t.clock_n > 0:
            x.gait_phase[i] = clock_phase(steps, t.dt, t.gait_period)
        hits, failed, timed_out = wp.static(check)(x, i)
        failed = failed or x.unstable[i]
        x.failed[i] = failed
        for k in range(wp.static(len(terms))):
            ep.terms[k, i] = wp.static(terms[k])(x, i)
        r = weighted_reward(ep, i)
        advance(x, i)
        s = rng[i]
        if t.resample_steps > 0 and steps % t.resample_steps == 0:
            s = wp.static(draw_command)(x, i, s)
        track_heading(x, i)
        s = wp.static(write_obs)(x, i, ok, s, obs, 0)
        write_state(t, i, ok, x.joint_q, state)
        done = close_step(ep, i, r, failed, wp.where(timed_out, 0, t.max_episode_length))
        if done:
            wp.static(count)(hits, causes)
            for k in range(obs.shape[1]):
                final_obs[i, k] = obs[i, k]
            if t.rough == 1:
                p = wp.transform_get_translation(x.body_q[i, t.root])
                o = origin[i]
                walked = wp.where(ok, wp.length(wp.vec2(p[0] - o[0], p[1] - o[1])), 0.0)
                speed = wp.sqrt(x.command[i, 0] * x.command[i, 0] + x.command[i, 1] * x.command[i, 1])
                s = terrain_level_update(grid, i, walked, speed * float(steps) * t.dt, centre_z, level, origin, s)
            s = wp.static(draw_command)(x, i, s)
            for k in range(x.actions.shape[1]):
                x.last_actions[i, k] = 0.0
            for f in range(x.n_feet):
                x.air_time[i, f] = 0.0
                x.contact_time[i, f] = 0.0
            x.gait_phase[i] = 0.0
            for e in range(wp.static(len(episode_events))):
                s = wp.static(episode_events[e])(x, i, s)
        rng[i] = s

    return velocity_post_step


@wp.func
def write_privileged(x: Legged, i: int, ok: bool, start: int, physics: wp.array2d(dtype=float),
                     critic: wp.array2d(dtype=float)):
    """The critic group's privileged columns of env ``i`` from column ``start`` on: the episode's physics (motor
    strength, PD gain scales), the feet's contact forces, friction, added base mass and base height."""
    nj = x.strength.shape[1]
    c = start
    for k in range(nj):
        critic[i, c + k] = x.strength[i, k]
        critic[i, c + nj + k] = x.kp[i, k] / wp.max(x.kp0[k], 1.0e-6)
        critic[i, c + 2 * nj + k] = x.kd[i, k] / wp.max(x.kd0[k], 1.0e-6)
    c = c + 3 * nj
    for f in range(x.n_feet):
        critic[i, c + f] = wp.where(ok, wp.length(x.contact[i, f]), 0.0)
    c = c + x.n_feet
    critic[i, c] = physics[i, 0]
    critic[i, c + 1] = physics[i, 1]
    p = wp.transform_get_translation(x.body_q[i, x.root])
    critic[i, c + 2] = wp.where(ok, p[2] - terrain_height(x.grid, p[0], p[1]), 0.0)


@functools.lru_cache(maxsize=None)
def critic_kernel(write_clean: wp.Function) -> wp.Kernel:
    """The privileged critic group of every env from the current state: the observation group without noise
    (``write_clean``), then :func:`write_privileged`."""

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_critic(
        x: Legged,
        start: int,
        physics: wp.array2d(dtype=float),
        critic: wp.array2d(dtype=float),
    ):
        i = wp.tid()
        ok = not x.unstable[i]
        wp.static(write_clean)(x, i, ok, wp.uint32(0), critic, 0)
        write_privileged(x, i, ok, start, physics, critic)

    return velocity_critic


@functools.lru_cache(maxsize=None)
def critic_history_kernel(write_clean: wp.Function, fill_clean: wp.Function) -> wp.Kernel:
    """:func:`critic_kernel` for an observation group with history (its frames kept in the critic group as in the
    policy's): envs in ``mask`` (just reset) fill every frame (``fill_clean``); the others move their frames on and
    write the newest (``write_clean``) when ``step`` is 1 (the step's call) and keep them otherwise (an explicit
    reset's call: a second move would age them twice)."""

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_critic_history(
        x: Legged,
        start: int,
        physics: wp.array2d(dtype=float),
        mask: wp.array(dtype=wp.bool),
        step: int,
        critic: wp.array2d(dtype=float),
    ):
        i = wp.tid()
        ok = not x.unstable[i]
        if mask[i]:
            wp.static(fill_clean)(x, i, True, wp.uint32(0), critic, 0)
        elif step == 1:
            wp.static(write_clean)(x, i, ok, wp.uint32(0), critic, 0)
        write_privileged(x, i, ok, start, physics, critic)

    return velocity_critic_history


@functools.lru_cache(maxsize=None)
def observe_kernel(write_obs: wp.Function) -> wp.Kernel:
    """Observations (``write_obs``) and state rows of the envs in ``mask`` (just reset: root twist, IMU reading and
    action history zeroed first)."""

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_observe(
        t: VelocityTask,
        x: Legged,
        mask: wp.array(dtype=wp.bool),
        history: wp.array3d(dtype=float),
        rng: wp.array(dtype=wp.uint32),
        state: wp.array2d(dtype=float),
        obs: wp.array2d(dtype=float),
    ):
        i = wp.tid()
        if mask[i]:
            for k in range(6):
                x.root_vel_base[i, k] = 0.0
            x.imu_gyro[i] = wp.vec3(0.0)
            for d in range(history.shape[1]):
                for k in range(history.shape[2]):
                    history[i, d, k] = 0.0
            rng[i] = wp.static(write_obs)(x, i, True, rng[i], obs, 0)
            write_state(t, i, True, x.joint_q, state)

    return velocity_observe


@functools.lru_cache(maxsize=None)
def reset_episode_kernel(episode_events: tuple[wp.Function, ...] = (),
                         draw_command: wp.Function = uniform_velocity) -> wp.Kernel:
    """The explicit reset's task draws for this command term and these episode events (after the command), fused
    with ``wp.static``."""

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_reset_episode(
        t: VelocityTask,
        x: Legged,
        mask: wp.array(dtype=wp.bool),
        ep: Episodes,
        rng: wp.array(dtype=wp.uint32),
        command: wp.array2d(dtype=float),
        air_time: wp.array2d(dtype=float),
        last_actions: wp.array2d(dtype=float),
        phase: wp.array(dtype=float),
    ):
        """Explicit reset of the envs in ``mask``: counters, command, the episode events (action delay, actuation
        draws), air and contact time, gait clock."""
        i = wp.tid()
        if mask[i]:
            clear_episode(ep, i)
            s = wp.static(draw_command)(x, i, rng[i])
            for e in range(wp.static(len(episode_events))):
                s = wp.static(episode_events[e])(x, i, s)
            rng[i] = s
            for k in range(last_actions.shape[1]):
                last_actions[i, k] = 0.0
            for f in range(air_time.shape[1]):
                air_time[i, f] = 0.0
                x.contact_time[i, f] = 0.0
            phase[i] = 0.0

    return velocity_reset_episode
