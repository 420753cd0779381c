"""Robot-side files copied into every policy bundle: ``run_policy.py`` (runner and self-test) and
``build_engine.py`` (TensorRT engine builder). They import numpy, onnxruntime and tensorrt only, never horde or
torch, so a robot needs nothing else; they live here so they are linted and tested as code."""

__all__: list[str] = []
