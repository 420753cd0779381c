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
from horde.sim.terrain import TerrainGrid, height_scan, terrain_height, terrain_level_update

__all__ = ["VelocityTask", "post_step_kernel", "pre_step_kernel", "reset_episode_kernel", "velocity_critic",
           "velocity_observe", "velocity_pre_step"]


@wp.struct
class VelocityTask:
    """Per-task constants read by the kernels."""

    root: int
    dt: float
    max_episode_length: int
    resample_steps: int
    noise_lin: float
    noise_ang: float
    noise_grav: float
    noise_q: float
    noise_qd: float
    rough: int
    scan_n: int
    scan_offset: float
    scan_clip: float
    noise_scan: float
    scan_yaw: int
    imu: int
    imu_q: wp.quat
    depth_n: int
    depth_w: int
    squash: int
    """How actions become PD target offsets: 0 clip (the actuation law's), 1 tanh."""
    clock_n: int
    """Gait-clock observation columns: 2 with the clock, else 0."""
    gait_period: float
    extra_n: int
    """Columns of the user's observation terms (``task.extra_observations``), after the task's own."""
    q_index: wp.array(dtype=int)
    """Coordinate index in ``joint_q`` of each actuated joint, in the robot config's joint order."""
    qd_index: wp.array(dtype=int)
    """Dof index in ``joint_qd`` of each actuated joint, in the robot config's joint order."""


@wp.func
def _write_obs(t: VelocityTask, i: int, ok: bool, s: wp.uint32, default_q: wp.array(dtype=float),
               joint_q: wp.array2d(dtype=float), joint_qd: wp.array2d(dtype=float),
               body_q: wp.array2d(dtype=wp.transform), root_vel_base: wp.array2d(dtype=float),
               command: wp.array2d(dtype=float), last_actions: wp.array2d(dtype=float), grid: TerrainGrid,
               scan: wp.array(dtype=wp.vec2), imu_gyro: wp.array(dtype=wp.vec3), depth: wp.array3d(dtype=float),
               phase: wp.array(dtype=float), state: wp.array2d(dtype=float), obs: wp.array2d(dtype=float)) -> wp.uint32:
    """Observation row i with noise (zeros when the world is not ``ok``) and the state row; returns the RNG state.
    Columns: base (12), every joint's angle and rate (nj each, the robot config's joint order: ``t.q_index``,
    ``t.qd_index``), the acting joints' last actions (na), the gait clock
    (``t.clock_n``), the height scan (its noise drawn after the others'), the depth image. With ``t.imu`` the
    angular velocity is the IMU's gyro and gravity is projected into the IMU site's frame (``t.imu_q`` in the base)."""
    frame = wp.transform_get_rotation(body_q[i, t.root])
    if t.imu != 0:
        frame = frame * t.imu_q
    g = wp.quat_rotate_inv(frame, wp.vec3(0.0, 0.0, -1.0))
    gyro = imu_gyro[i]
    for k in range(3):
        obs[i, k] = root_vel_base[i, k] + wp.randf(s, -1.0, 1.0) * t.noise_lin
        w = wp.where(t.imu != 0, gyro[k], root_vel_base[i, 3 + k])
        obs[i, 3 + k] = wp.where(ok, w, root_vel_base[i, 3 + k]) + wp.randf(s, -1.0, 1.0) * t.noise_ang
        obs[i, 6 + k] = wp.where(ok, g[k], 0.0) + wp.randf(s, -1.0, 1.0) * t.noise_grav
        obs[i, 9 + k] = command[i, k]
    nj = t.q_index.shape[0]
    na = last_actions.shape[1]
    for k in range(nj):
        c = t.q_index[k]
        q = wp.where(ok, joint_q[i, c] - default_q[c], 0.0)
        obs[i, 12 + k] = q + wp.randf(s, -1.0, 1.0) * t.noise_q
        obs[i, 12 + nj + k] = wp.where(ok, joint_qd[i, t.qd_index[k]], 0.0) + wp.randf(s, -1.0, 1.0) * t.noise_qd
    for k in range(na):
        obs[i, 12 + 2 * nj + k] = last_actions[i, k]
    c = 12 + 2 * nj + na
    if t.clock_n > 0:
        obs[i, c] = wp.sin(2.0 * wp.pi * phase[i])
        obs[i, c + 1] = wp.cos(2.0 * wp.pi * phase[i])
    c = c + t.clock_n
    for k in range(t.scan_n):
        h = height_scan(grid, body_q[i, t.root], scan[k], t.scan_yaw) - t.scan_offset
        h = wp.clamp(h + wp.randf(s, -1.0, 1.0) * t.noise_scan, -t.scan_clip, t.scan_clip)
        obs[i, c + k] = wp.where(ok, h, 0.0)
    for k in range(t.depth_n):
        obs[i, c + t.scan_n + k] = wp.where(ok, depth[i, k // t.depth_w, k % t.depth_w], 0.0)
    for k in range(state.shape[1]):  # root coordinates, then the joints in config order
        c = k
        if k >= 7:
            c = t.q_index[k - 7]
        state[i, k] = wp.where(ok, joint_q[i, c], 0.0)
    return s


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
                     extras: tuple = (), episode_events: tuple[wp.Function, ...] = (),
                     draw_command: wp.Function = uniform_velocity) -> wp.Kernel:
    """The step's second kernel for these reward terms, terminations (``(check, count)`` of
    :meth:`horde.envs.terms.TerminationSet.fused`), user observation terms (``extras``:
    :func:`velocity_obs.extra_spec`) and episode events (finished envs' next episode's parameters, after the
    command), fused with ``wp.static``: one launch for all."""
    check, count = terminations

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_post_step(
        t: VelocityTask,
        x: Legged,
        grid: TerrainGrid,
        scan: wp.array(dtype=wp.vec2),
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
        s = _write_obs(t, i, ok, s, x.default_q, x.joint_q, x.joint_qd, x.body_q, x.root_vel_base, x.command,
                       x.last_actions, grid, scan, x.imu_gyro, x.depth, x.gait_phase, state, obs)
        c = obs.shape[1] - t.extra_n
        for e in range(wp.static(len(extras))):  # the user's observation terms (velocity_obs.extras_kernel's loop)
            for j in range(wp.static(extras[e][1])):
                v = (wp.static(extras[e][0])(x, i, j) - wp.static(extras[e][2])) * wp.static(extras[e][3])
                if wp.static(extras[e][4] > 0.0):
                    v = wp.clamp(v, -wp.static(extras[e][4]), wp.static(extras[e][4]))
                obs[i, c + j] = wp.where(ok, v, 0.0)
            c = c + wp.static(extras[e][1])
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
            x.gait_phase[i] = 0.0
            for e in range(wp.static(len(episode_events))):
                s = wp.static(episode_events[e])(x, i, s)
        rng[i] = s

    return velocity_post_step


@wp.kernel(enable_backward=False)
def velocity_critic(
    clean: VelocityTask,
    x: Legged,
    grid: TerrainGrid,
    scan: wp.array(dtype=wp.vec2),
    kp: wp.array2d(dtype=float),
    kd: wp.array2d(dtype=float),
    kp0: wp.array(dtype=float),
    kd0: wp.array(dtype=float),
    strength: wp.array2d(dtype=float),
    physics: wp.array2d(dtype=float),
    state: wp.array2d(dtype=float),
    critic: wp.array2d(dtype=float),
):
    """The privileged critic group of every env from the current state (``clean``: the task without noise)."""
    i = wp.tid()
    ok = not x.unstable[i]
    _write_obs(clean, i, ok, wp.uint32(0), x.default_q, x.joint_q, x.joint_qd, x.body_q, x.root_vel_base, x.command,
               x.last_actions, grid, scan, x.imu_gyro, x.depth, x.gait_phase, state, critic)
    nj = strength.shape[1]
    c = 12 + 2 * nj + x.last_actions.shape[1] + clean.clock_n + clean.scan_n + clean.depth_n + clean.extra_n
    for k in range(nj):
        critic[i, c + k] = strength[i, k]
        critic[i, c + nj + k] = kp[i, k] / wp.max(kp0[k], 1.0e-6)
        critic[i, c + 2 * nj + k] = kd[i, k] / wp.max(kd0[k], 1.0e-6)
    c = c + 3 * nj
    for f in range(x.n_feet):
        critic[i, c + f] = wp.where(ok, wp.length(x.contact[i, f]), 0.0)
    c = c + x.n_feet
    critic[i, c] = physics[i, 0]
    critic[i, c + 1] = physics[i, 1]
    p = wp.transform_get_translation(x.body_q[i, clean.root])
    critic[i, c + 2] = wp.where(ok, p[2] - terrain_height(grid, p[0], p[1]), 0.0)


@wp.kernel(enable_backward=False)
def velocity_observe(
    t: VelocityTask,
    mask: wp.array(dtype=wp.bool),
    default_q: wp.array(dtype=float),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    body_q: wp.array2d(dtype=wp.transform),
    root_vel_base: wp.array2d(dtype=float),
    command: wp.array2d(dtype=float),
    last_actions: wp.array2d(dtype=float),
    grid: TerrainGrid,
    scan: wp.array(dtype=wp.vec2),
    history: wp.array3d(dtype=float),
    rng: wp.array(dtype=wp.uint32),
    imu_gyro: wp.array(dtype=wp.vec3),
    depth: wp.array3d(dtype=float),
    phase: wp.array(dtype=float),
    state: wp.array2d(dtype=float),
    obs: wp.array2d(dtype=float),
):
    """Observations of the envs in ``mask`` (just reset: root twist, IMU reading and action history zeroed)."""
    i = wp.tid()
    if mask[i]:
        for k in range(6):
            root_vel_base[i, k] = 0.0
        imu_gyro[i] = wp.vec3(0.0)
        for d in range(history.shape[1]):
            for k in range(history.shape[2]):
                history[i, d, k] = 0.0
        rng[i] = _write_obs(t, i, True, rng[i], default_q, joint_q, joint_qd, body_q, root_vel_base, command,
                            last_actions, grid, scan, imu_gyro, depth, phase, state, obs)


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
        draws), air time, gait clock."""
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
            phase[i] = 0.0

    return velocity_reset_episode
