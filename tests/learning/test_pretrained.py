"""Every trained policy that ships in assets/pretrained/ still meets its scoreboard target on the current code
(benchmarks/pretrained.py check: the learn script's own measure, fresh envs of seed 20,000, never one that training
evaluated on). A change to a task that breaks a shipped policy fails here: retrain it with
``python benchmarks/pretrained.py ship <name>`` (its command is in its provenance.json)."""

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
