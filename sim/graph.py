"""Record a fixed sequence of kernel launches once and replay it (CUDA graph on GPU, CPU graph on CPU)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import warp as wp


class StepGraph:
    """Replays ``launch_fn`` as a captured graph, or calls it eagerly.

    ``launch_fn`` must only launch kernels on fixed, preallocated arrays: no allocation, no host sync and no
    Python branch on device values, so that one recording is valid for every later step. Kernel arguments
    passed by value (floats, structs) are frozen at capture time; call :meth:`invalidate` after changing them.
    ``kernels`` lists the kernels ``launch_fn`` launches, so their modules are compiled before recording.
    """

    def __init__(
        self, launch_fn: Callable[[], None], device: str, *, kernels: Sequence = (), use_graph: bool = True
    ) -> None:
        self._launch_fn = launch_fn
        self._kernels = tuple(kernels)
        self._device = device
        self._use_graph = use_graph
        self._graph = None

    @property
    def captured(self) -> bool:
        """True once a graph has been recorded (replays, rather than Python launches, then run the step)."""
        return self._graph is not None

    def invalidate(self) -> None:
        """Drop the recording; the next call records again."""
        self._graph = None

    def __call__(self) -> None:
        if not self._use_graph:
            self._launch_fn()
            return
        if self._graph is None:
            self._graph = self._capture()
            if self._graph is None:  # capture unsupported here: stay eager from now on
                self._use_graph = False
                self._launch_fn()
                return
        wp.capture_launch(self._graph)

    def _capture(self):
        # Load only the modules this step uses: forcing all would also compile unrelated (backward) kernels.
        for kernel in self._kernels:
            kernel.module.load(self._device)
        try:
            with wp.ScopedCapture(device=self._device, force_module_load=False) as capture:
                self._launch_fn()
        except Exception as exc:  # noqa: BLE001 - capture support varies by Warp version and driver
            warnings.warn(f"graph capture failed on {self._device} ({exc}); stepping eagerly", stacklevel=3)
            return None
        return capture.graph
