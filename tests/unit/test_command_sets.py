"""The world-frame command-set measure (train/command_sets.py) on a kinematic stand-in whose motion is known: a
base that moves exactly as commanded scores progress 1 and no drift; one at half speed, 0.5; one that turns
instead of going straight shows the drift a body-frame speed cannot."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from horde.train.command_sets import (COMMAND_SETS, command_set, floor_checks, run_command_set, standing_still)

DT = 0.02


class KinematicEnv:
    """A base that follows ``speed`` x the commanded body-frame velocity and ``turn`` x the commanded yaw rate
    (plus ``extra_yaw`` rad/s), feet alternating every 10 steps; env k falls at ``fall_step[k]`` (-1: never)."""

    def __init__(self, n: int, *, speed=1.0, turn=1.0, extra_yaw=0.0, fall_step=None, push_interval=0.0):
        self.num_envs, self.device = n, torch.device("cpu")
        self.obs_names = ("a", "cmd_vx", "cmd_vy", "cmd_yaw")
        self.command = torch.zeros(n, 3)
        self.feet = (SimpleNamespace(index=1, arm=(0.0, 0.0, 0.0)), SimpleNamespace(index=2, arm=(0.0, 0.0, 0.0)))
        self.cfg = SimpleNamespace(sim_dt=0.005, decimation=4, contact_threshold=1.0,
                                   randomization=SimpleNamespace(enabled=push_interval > 0,
                                                                 push_interval=push_interval))
        self.speed, self.turn, self.extra_yaw = speed, turn, extra_yaw
        self.fall_step = torch.full((n,), -1) if fall_step is None else torch.as_tensor(fall_step)
        self.world = SimpleNamespace(root_pose=torch.zeros(n, 7), root_vel_base=torch.zeros(n, 6),
                                     contact_forces=torch.zeros(n, 2, 3), body_pose=torch.zeros(n, 3, 7),
                                     body_vel=torch.zeros(n, 3, 6), spawn_origin=torch.zeros(n, 3))
        self.obs = torch.zeros(n, 4)

    def seed(self, seed: int) -> None:
        pass

    def reset(self) -> None:
        self.k, self.yaw = 0, torch.full((self.num_envs,), 0.3)  # a heading that is not the world's x
        self.world.root_pose.zero_()
        self.world.root_pose[:, 2] = 0.7
        self._set_yaw()

    def _set_yaw(self) -> None:
        self.world.root_pose[:, 5] = torch.sin(self.yaw / 2)
        self.world.root_pose[:, 6] = torch.cos(self.yaw / 2)

    def step(self, actions):
        v = self.command[:, :2] * self.speed
        wz = self.command[:, 2] * self.turn + self.extra_yaw
        self.world.root_vel_base[:, :2], self.world.root_vel_base[:, 5] = v, wz
        mid = self.yaw + 0.5 * wz * DT  # midpoint heading: the exact arc to second order
        c, s = torch.cos(mid), torch.sin(mid)
        self.world.root_pose[:, 0] += (c * v[:, 0] - s * v[:, 1]) * DT
        self.world.root_pose[:, 1] += (s * v[:, 0] + c * v[:, 1]) * DT
        self.yaw = self.yaw + wz * DT
        self._set_yaw()
        left = (self.k // 10) % 2 == 0
        self.world.contact_forces.zero_()
        self.world.contact_forces[:, 0 if left else 1, 2] = 100.0
        terminated = self.fall_step == self.k
        self.k += 1
        truncated = torch.full((self.num_envs,), self.k == 1000)
        return SimpleNamespace(obs=self.obs, terminated=terminated, dones=terminated | truncated)


def test_command_sets_are_deterministic_and_named():
    for name in COMMAND_SETS:
        assert torch.equal(command_set(name, 16), command_set(name, 16))
    c = command_set("full", 4096)
    assert c[:, 0].abs().max() <= 1.0 and c[:, 1].abs().max() <= 0.5 and c[:, 2].abs().max() <= 1.0
    assert 0.55 < float(c[:, :2].norm(dim=1).mean()) < 0.63  # standing still's ~0.59 m/s over the full range
    assert (command_set("backward", 8)[:, 0] < 0).all() and (command_set("turning", 8)[:, :2] == 0).all()
    with pytest.raises(ValueError, match="valid sets: full, forward"):
        command_set("forwards", 4)


@pytest.mark.parametrize("name", ["forward", "sideways", "full"])
def test_a_base_that_moves_as_commanded_scores_full_progress(name):
    env = KinematicEnv(8)
    f = run_command_set(lambda o: torch.zeros(8, 1), env, command_set(name, 8), seed=0, steps=500, settle=50)
    assert f["up_fraction"] == 1.0
    assert f["lin_vel_error_mps"] == pytest.approx(0.0, abs=1e-6)
    assert f["progress"] == pytest.approx(1.0, abs=2e-3)
    assert f["heading_drift_deg"] == pytest.approx(0.0, abs=1e-3)
    assert f["double_support"] == 0.0 and f["feet_air_time_s"] == pytest.approx(10 * DT)
    assert f["base_height_m"] == pytest.approx(0.7)


def test_half_speed_and_turning_in_place():
    env = KinematicEnv(8, speed=0.5, turn=0.5)
    f = run_command_set(lambda o: None, env, command_set("forward", 8), seed=0, steps=500, settle=50)
    assert f["progress"] == pytest.approx(0.5, abs=2e-3)
    t = run_command_set(lambda o: None, env, command_set("turning", 8), seed=0, steps=500, settle=50)
    assert t["turn_progress"] == pytest.approx(0.5, abs=1e-3)
    assert t["progress"] is None  # turning in place commands no distance
    s = standing_still(command_set("turning", 8), 450 * DT)
    assert t["heading_drift_deg"] == pytest.approx(0.5 * s["heading_drift_deg"], rel=1e-3)


def test_circling_is_caught_by_progress_and_drift():
    """Seed 17's failure of issue 69: commanded straight ahead, the robot turns at 0.8 rad/s at full body-frame
    speed. The body-frame error stays small; progress and heading drift do not."""
    env = KinematicEnv(8, extra_yaw=0.8)
    f = run_command_set(lambda o: None, env, command_set("forward", 8), seed=0, steps=1000, settle=50)
    assert f["lin_vel_error_mps"] == pytest.approx(0.0, abs=1e-6)
    assert f["progress"] < 0.2 and f["heading_drift_deg"] > 30
    checks = floor_checks({"forward": {**f, "standing": standing_still(command_set("forward", 8), 19.0)}})
    assert checks["forward_lin"] and not checks["forward_progress"] and not checks["forward_drift"]


def test_falls_count_against_up_and_are_timed_from_the_last_push():
    fall = [-1, -1, -1, -1, -1, -1, 420, 95]  # 420: 0.42 s after the push at step 400; 95: before any push
    env = KinematicEnv(8, fall_step=fall, push_interval=8.0)
    f = run_command_set(lambda o: None, env, command_set("forward", 8), seed=0, steps=600, settle=50)
    assert f["up_fraction"] == 0.75
    assert f["fall_times_s"] == [pytest.approx(1.92), pytest.approx(8.42)]
    assert f["fall_since_push_s"] == [None, pytest.approx(0.42)]
    assert f["falls_within_1s_of_push"] == 0.5 and f["push_window_share"] == 0.125
    assert math.isfinite(f["progress"])  # over the six that stayed up
