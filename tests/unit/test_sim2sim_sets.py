"""The command-set figures in MuJoCo (``horde sim2sim commands=``, issue 69 item 2): :class:`SetMeter` on state that
moves exactly as commanded, and off it, against hand-computed figures."""

import math

import numpy as np
import pytest

from horde.deploy.sim2sim import SetMeter


class _Data:
    def __init__(self):
        self.qpos = np.zeros(7)
        self.qpos[3] = 1.0  # w, x, y, z: no rotation


class _Twin:
    def __init__(self):
        self.v, self.w = np.zeros(3), np.zeros(3)

    def base_twist(self, data):
        return self.v.copy(), self.w.copy()


def _drive(commands, motion, *, steps=100, dt=0.02, settle=10, failed=None):
    """Episodes whose base moves by ``motion(e, k) -> (vx_world, vy_world, yaw_rate)`` each step."""
    n = len(commands)
    meter = SetMeter(np.array(commands), dt, settle)
    datas, twins = [_Data() for _ in range(n)], [_Twin() for _ in range(n)]
    yaw = np.zeros(n)
    for k in range(steps):
        for e in range(n):
            vx, vy, wz = motion(e, k)
            d = datas[e]
            d.qpos[0] += vx * dt
            d.qpos[1] += vy * dt
            yaw[e] += wz * dt
            d.qpos[3:7] = [math.cos(yaw[e] / 2), 0.0, 0.0, math.sin(yaw[e] / 2)]
            c, s = math.cos(yaw[e]), math.sin(yaw[e])
            twins[e].v = np.array([c * vx + s * vy, -s * vx + c * vy, 0.0])  # the base frame's
            twins[e].w = np.array([0.0, 0.0, wz])
            meter.update(e, k, d, twins[e], up=True)
    return meter.figures(np.zeros(n, dtype=bool) if failed is None else np.asarray(failed))


def test_a_robot_that_does_what_it_is_told_scores_zero_error_full_progress_no_drift():
    f = _drive([(0.6, 0.0, 0.0), (0.0, -0.4, 0.0)], lambda e, k: ((0.6, 0.0, 0.0), (0.0, -0.4, 0.0))[e])
    assert f["up_fraction"] == 1.0
    assert f["lin_vel_error_mps"] == pytest.approx(0.0, abs=1e-9) and f["yaw_rate_error_rps"] == pytest.approx(0.0)
    assert f["progress"] == pytest.approx(1.0, abs=1e-6)  # 0.6 x 90 x 0.02 = 1.08 m and 0.72 m commanded: both count
    assert f["heading_drift_deg"] == pytest.approx(0.0, abs=1e-6) and f["turn_progress"] is None


def test_turning_in_place_and_a_robot_that_stands_or_circles():
    turn = _drive([(0.0, 0.0, 0.5)], lambda e, k: (0.0, 0.0, 0.5))
    assert turn["turn_progress"] == pytest.approx(1.0, abs=1e-6) and turn["progress"] is None  # 0 m commanded
    stand = _drive([(0.5, 0.0, 0.0)], lambda e, k: (0.0, 0.0, 0.0))
    assert stand["lin_vel_error_mps"] == pytest.approx(0.5) and stand["progress"] == pytest.approx(0.0)
    # a circling robot (8 s): body-frame speed right, heading wrong: little progress, a large drift
    circle = _drive([(0.5, 0.0, 0.0)], lambda e, k: (0.5 * math.cos(0.016 * (k + 1)), 0.5 * math.sin(0.016 * (k + 1)),
                                                     0.8), steps=400)
    assert circle["lin_vel_error_mps"] == pytest.approx(0.0, abs=1e-6)
    assert abs(circle["progress"]) < 0.2
    assert circle["heading_drift_deg"] == pytest.approx(math.degrees(0.8 * 390 * 0.02), rel=1e-3)


def test_a_fallen_episode_counts_down_and_leaves_progress_out():
    f = _drive([(0.6, 0.0, 0.0), (0.6, 0.0, 0.0)], lambda e, k: (0.6, 0.0, 0.0), failed=[True, False])
    assert f["up_fraction"] == 0.5 and f["progress"] == pytest.approx(1.0, abs=1e-6)
