"""Every trained policy that ships in assets/pretrained/ still meets its scoreboard target on the current code
(benchmarks/pretrained.py check: the learn script's own measure, fresh envs of seed 20,000, never one that training
evaluated on). A change to a task that breaks a shipped policy fails here: retrain it with
``python benchmarks/pretrained.py ship <name>`` (its command is in its provenance.json).

Margins over 8 evaluation seeds (20,000-20,007; an env seed moves a trajectory as a CPU does), 2026-12-06, AMD EPYC:
quadruped 0.134-0.197 m/s (bar < 0.25; standing still 0.530), quadruped-go2 0.173-0.200 (0.529), ant 0.837-1.050
m/s (bar > 0.5; zero torque 0.00); at the test's seed cartpole 498.7 (bar 475; zero force 33), lift 100% held (bar
30%; arm at rest 0%), push 100% on target (bar 50%; zero actions 9.4%)."""

from __future__ import annotations

import pytest
from benchhelp import _module

from horde.train.checkpoint import load_policy
from horde.train.pretrained import available, resolve

SHIPPED = sorted(available())


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_policy_still_meets_its_target(name):
    ship = _module("pretrained.py")
    policy, _, cfg, _ = load_policy(resolve(name))
    figures = ship.score(name, policy, cfg.task)
    targets = ship.targets_of(name)
    missed = {t.key: (figures.get(t.key), f"{t.op} {t.threshold:g}") for t in targets if not t.met(figures.get(t.key))}
    assert not missed, f"{name} no longer meets its target: {missed}; retrain it: " \
                       f"python benchmarks/pretrained.py ship {name}"
