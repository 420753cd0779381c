"""One source per piece of task logic: the reach twin (sim-to-sim in MuJoCo) scores with the env's own Warp term
functions on MuJoCo's state, as the velocity twin does; before 2026-11-26 it wrote them again in numpy, so a term
a user added to the task was unknown to the twin."""

import dataclasses
import math

import mujoco
import numpy as np
import pytest
import warp as wp

from horde.envs import get_task
from horde.envs.reach import JOINTS, REACH_TERMS, Arm, ReachTwin


@REACH_TERMS.term(name="ee_height", replace=True)
def ee_height(x: Arm, i: int) -> float:
    """A user's term: the end effector's height [m]."""
    return wp.transform_point(x.body_q[i, x.ee_body], x.ee_offset)[2]


class _Joints:
    def __init__(self, model):
        self.dadr = [model.joint(j).dofadr[0] for j in JOINTS]

    def qd(self, data):
        return data.qvel[self.dadr]


def test_the_reach_twin_scores_with_the_envs_terms_and_picks_up_a_users():
    cfg = dataclasses.asdict(get_task("reach").config)
    cfg["reward_scales"] = {**cfg["reward_scales"], "ee_height": 1.0}
    model = ReachTwin.load_model(cfg)
    data = mujoco.MjData(model)
    twin, joints = ReachTwin(model, cfg, 0.02), _Joints(model)
    rng = np.random.default_rng(0)
    for _ in range(5):
        data.qpos[:] = rng.uniform(-1, 1, model.nq)
        data.qvel[:] = rng.uniform(-2, 2, model.nv)
        mujoco.mj_forward(model, data)
        twin.target = rng.uniform(cfg["target_low"], cfg["target_high"])
        a, last = rng.uniform(-1.5, 1.5, 7), rng.uniform(-1, 1, 7)
        terms, failed = twin.terms(model, data, joints, a, last, np.zeros(7))
        ee = data.site_xpos[model.site("ee").id]
        dist = float(np.linalg.norm(twin.target - ee))
        want = {"distance": dist, "precision": 1.0 - math.tanh(dist / REACH_TERMS.parameters("precision")["std"]),
                "action_rate": float(np.sum((np.clip(a, -1, 1) - last) ** 2)),
                "joint_vel": float(np.sum(joints.qd(data) ** 2)), "ee_height": float(ee[2])}
        assert not failed and terms.keys() == want.keys()
        for k, v in want.items():
            assert terms[k] == pytest.approx(v, rel=1e-5, abs=1e-5), k
