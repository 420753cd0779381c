"""horde: GPU-parallel robot simulation and RL training on Warp, with ONNX export.

The repository root is the ``horde`` package: ``sim/`` is ``horde.sim``, ``envs/`` is ``horde.envs``, and so on.
Heavy subpackages are imported on demand, so ``import horde`` stays cheap.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
