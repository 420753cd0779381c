"""The velocity-tracking tasks: one :class:`horde.envs.velocity.VelocityEnv` over a robot, terrain and
observation choice each (flat and rough quadruped, the perceptive teacher and its student, the G1 flat and rough)."""

from __future__ import annotations

from horde.envs import render
from horde.envs.registry import TaskSpec, register_task
from horde.envs.velocity import VelocityConfig, VelocityEnv, VelocityTwin, _g1_scales
from horde.sim.newton_world import SimConfig
from horde.sim.randomize import RandomizationConfig
from horde.sim.depth_camera import DepthCameraConfig
from horde.sim.terrain import HeightScanConfig, TerrainConfig


def _register(name: str, config: VelocityConfig, description: str, twin: type | None = None) -> None:
    """A velocity task: the legged side view, joint observations relative to the default pose."""
    register_task(name, TaskSpec(env_cls=VelocityEnv, config=config, description=description,
                                 renderer=render.draw_legged, twin=twin))


def _rough(**kw) -> VelocityConfig:
    return VelocityConfig(terrain=TerrainConfig(kind="rough"), randomization=RandomizationConfig(enabled=True), **kw)


def _g1_sim() -> SimConfig:
    # the G1's 34 capsules: MuJoCo-Warp asks for njmax >= 6 x nconmax (it raised 256 to 384 by itself)
    # auto: MuJoCo's C engine on the CPU (9.3x MuJoCo-Warp at N=4096), MuJoCo-Warp on a GPU. On the C engine the
    # sparse constraint Jacobian: the same steps to 1.2e-7 over 200 control steps, a G1 on its feet steps in 0.82x
    # the time, and over seeds 0-3 a side at 400 iterations it learned as the dense one did (p 0.97 and 0.83;
    # benchmarks/README.md, "MuJoCo's sparse constraint Jacobian for the G1")
    return SimConfig(solver="auto", max_contacts=64, max_constraints=384, mujoco_jacobian="sparse")


def _g1(**kw) -> VelocityConfig:
    """The G1 recipe (issue 29): the 12 leg joints act (waist and arms held by PD at the default pose), tanh-squashed
    targets, a 0.8 s gait clock with its contact reward (unitree_rl_gym), rewards without an alive bonus and with
    a real fall penalty (:func:`horde.envs.velocity_config._g1_scales`), a vx curriculum from [0, 0.5] m/s to the
    full [-0.5, 1] (which holds the walking target's [0, 0.8]), pushes and domain randomization on."""
    # a humanoid tilts less before it is lost; its hips, knees and hands are lower than a quadruped's trunk
    kw.setdefault("randomization", RandomizationConfig(enabled=True))
    return VelocityConfig(robot="g1", sim=_g1_sim(), reward_scales=_g1_scales(), max_tilt=0.8,
                          feet_air_time_target=0.4, command_vx=[-0.5, 1.0], command_vy=[-0.3, 0.3],
                          init_joint_pos_range=0.05, action_joints="legs", action_squash="tanh", gait_clock=True,
                          gait_period=0.8, vx_curriculum=True, vx_curriculum_start=[0.0, 0.5], **kw)


_register("quadruped", VelocityConfig(),
          "Go2-like quadruped, flat ground: track commanded (vx, vy, yaw rate); fails on base contact",
          twin=VelocityTwin)
_register("quadruped-rough", _rough(),
          "quadruped on rough heightfield tiles (noise, slopes, stairs) with a terrain curriculum and domain "
          "randomization")
_register("quadruped-rough-perceptive", _rough(height_scan=HeightScanConfig(enabled=True), privileged_critic=True),
          "quadruped-rough with a 17 x 11 height scan of the terrain around the base in its observations and a "
          "privileged critic (noise-free observations, randomized physics, foot contact forces)")
_register("quadruped-rough-student",
          _rough(height_scan=HeightScanConfig(enabled=True, noise=0.1), privileged_critic=True),
          "the student of quadruped-rough-perceptive (algo=distillation teacher=<its run>): the same scan with 5x "
          "the noise; its teacher group holds the observations without noise")
_register("quadruped-rough-depth", _rough(depth_camera=DepthCameraConfig(enabled=True, noise=0.02),
                                          privileged_critic=True),
          "quadruped-rough seeing the ground ahead with a 32 x 24 depth camera on its head (Newton's SensorCamera, "
          "ray-traced in the step) and a privileged critic")
_register("g1-velocity", _g1(),
          "Unitree G1 humanoid (29 DoF, mjlab wheel), flat ground, pushes: track commanded (vx, vy, yaw rate) with "
          "its 12 leg joints, waist and arms held; gait clock, vx curriculum",
          twin=VelocityTwin)
_register("g1-velocity-rough", _g1(terrain=TerrainConfig(kind="rough")),
          "Unitree G1 on rough heightfield tiles with a terrain curriculum and domain randomization (the recipe of "
          "g1-velocity)")
