"""horde: GPU-parallel robot simulation and RL training on Warp, with ONNX export.

The repository root is the ``horde`` package: ``sim/`` is ``horde.sim``, ``envs/`` is ``horde.envs``, and so on.
Heavy subpackages are imported on demand, so ``import horde`` stays cheap.

``import horde`` also makes every built-in task a gymnasium id, ``gymnasium.make_vec("horde/<task>", num_envs=...)``,
without importing gymnasium itself: the ids are registered (with string entry points, so nothing heavy loads until
an env is made) as soon as gymnasium is imported, or at once if it already is.
"""

import importlib.util
import sys

__version__ = "0.1.0"
__all__ = ["__version__"]

_BUILTIN_TASKS = ("ant", "cartpole", "cartpole-swingup", "g1-velocity", "g1-velocity-rough", "humanoid", "lift",
                  "pendulum", "place", "push", "quadruped", "quadruped-rough", "quadruped-rough-depth",
                  "quadruped-rough-perceptive", "quadruped-rough-student", "reach")
"""The tasks that ``import horde.envs`` registers, named here so that their gymnasium ids exist before the task
modules (torch, Warp, Newton) are imported; ``tests/integration/test_libraries.py`` checks it equals ``task_names()``. A
task registered later with ``register_task`` gets its id then."""


def _register_with_gymnasium(names=_BUILTIN_TASKS) -> None:
    """``gymnasium.make_vec("horde/<name>", num_envs=..., device=..., seed=..., autoreset_mode=..., array=...)``:
    the entry point is a string, so gymnasium imports ``horde.envs`` (and with it every task) only in ``make_vec``."""
    import gymnasium

    for name in names:
        gid = f"horde/{name}"
        if gid not in gymnasium.registry:
            gymnasium.register(id=gid, vector_entry_point="horde.envs.adapters:make_vec", kwargs={"task": name})


class _RegisterWhenGymnasiumLoads:
    """A one-shot import hook: gymnasium 1.x dropped its plugin entry points (``gymnasium.envs`` in package
    metadata), and importing gymnasium here would cost ``import horde`` ~0.1 s (gymnasium, numpy). So the ids are
    registered right after gymnasium's own module has run, whichever of the two is imported first."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)  # the finders after this one
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            _register_with_gymnasium()

        spec.loader.exec_module = exec_then_register  # this loader object serves this one import
        return spec


if "gymnasium" in sys.modules:
    _register_with_gymnasium()
else:
    sys.meta_path.insert(0, _RegisterWhenGymnasiumLoads())
