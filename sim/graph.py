"""Record a fixed sequence of kernel launches once and replay it (CUDA graph on GPU, CPU graph on CPU).

On CPU, Warp runs a kernel's threads one after another in one OS thread but releases the GIL while it replays a
graph, so :class:`ParallelStepGraph` replays graphs over disjoint env ranges on two OS threads at once.

A step may also call host code that a graph cannot hold (MuJoCo's C engine, :mod:`horde.sim.mujoco_batch`): the
step passes it to :func:`host_call`, and the recording splits there into graph, host call, graph, ... replayed in
that order.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence

import warp as wp


_RECORDING = threading.local()


def host_call(fn: Callable[[], None]) -> None:
    """Run ``fn`` (host code: no kernel launches) at this point of the step.

    Called eagerly, it runs now. Called while a :class:`StepGraph` records, it ends the current graph, is kept in
    the recording, and a new graph begins: every replay then runs the launches before it, ``fn``, then the
    launches after it."""
    recording = getattr(_RECORDING, "parts", None)
    if recording is None:
        fn()
        return
    device = _RECORDING.device
    recording.append((wp.capture_end(device=device), fn))
    wp.capture_begin(device=device, force_module_load=False)


class _Segments:
    """A recording split by host calls: (graph, host call) pairs and the last graph."""

    def __init__(self, parts: list, last) -> None:
        self.parts, self.last = parts, last

    def launch(self) -> None:
        for graph, fn in self.parts:
            wp.capture_launch(graph)
            fn()
        wp.capture_launch(self.last)


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
        if self._graph is not None:
            self._replay()
            return
        if self._use_graph:
            self._graph = self._capture()
            if self._graph is not None:
                self._replay()
                return
            self._use_graph = False  # capture unsupported here: stay eager from now on
        self._launch_fn()

    def _capture(self):
        # Load only the modules this step uses: forcing all would also compile unrelated (backward) kernels.
        # CPU launches run with block_dim 1: loading the default (256) variant would compile the module twice.
        block_dim = 1 if wp.get_device(self._device).is_cpu else None
        for kernel in self._kernels:
            kernel.module.load(self._device, block_dim=block_dim)
        parts: list = []
        _RECORDING.parts, _RECORDING.device = parts, self._device
        try:
            with wp.ScopedCapture(device=self._device, force_module_load=False) as capture:
                self._launch_fn()
        except Exception as exc:  # noqa: BLE001 - capture support varies by Warp version and driver
            warnings.warn(f"graph capture failed on {self._device} ({exc}); stepping eagerly", stacklevel=3)
            return None
        finally:
            _RECORDING.parts = None
        return _Segments(parts, capture.graph) if parts else capture.graph

    def _replay(self) -> None:
        if isinstance(self._graph, _Segments):
            self._graph.launch()
        else:
            wp.capture_launch(self._graph)


class ParallelStepGraph:
    """Calls several :class:`StepGraph` over disjoint env ranges at once: the first on the calling thread, the
    others on worker threads (CPU only, where Warp releases the GIL while it replays a graph or runs a kernel).

    The parts must not write the same memory (per-part statistics buffers, for example). A call returns when
    every part is done, so the step stays synchronous as on one thread.
    """

    def __init__(self, parts: Sequence[StepGraph]) -> None:
        self._parts = tuple(parts)
        self._workers = [_worker(k) for k in range(len(self._parts) - 1)]

    @property
    def captured(self) -> bool:
        """True once every part has been recorded."""
        return all(p.captured for p in self._parts)

    def invalidate(self) -> None:
        """Drop every part's recording."""
        for p in self._parts:
            p.invalidate()

    def __call__(self) -> None:
        if not self.captured:  # record on this thread, one part after another
            for p in self._parts:
                p()
            return
        for worker, part in zip(self._workers, self._parts[1:]):
            worker.start(part)
        try:
            self._parts[0]()
        finally:
            for worker in self._workers:
                worker.wait()


class _Worker:
    """A daemon thread that runs one callable per :meth:`start`, handed over with two locks (cheapest wake-up)."""

    def __init__(self) -> None:
        self._go, self._done = threading.Lock(), threading.Lock()
        self._go.acquire()
        self._done.acquire()
        self._fn: Callable[[], None] | None = None
        self._error: BaseException | None = None
        self._busy = threading.Lock()  # one caller at a time (envs stepped from several Python threads)
        threading.Thread(target=self._loop, name="horde-step-worker", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            try:
                self._fn()
            except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
                self._error = exc
            self._done.release()

    def start(self, fn: Callable[[], None]) -> None:
        self._busy.acquire()
        self._fn = fn
        self._go.release()

    def wait(self) -> None:
        self._done.acquire()
        self._fn, error, self._error = None, self._error, None
        self._busy.release()
        if error is not None:
            raise error


_WORKERS: list[_Worker] = []
_WORKERS_LOCK = threading.Lock()


def _worker(k: int) -> _Worker:
    """The process-wide k-th worker thread, started on first use (shared by every env: no thread per env)."""
    with _WORKERS_LOCK:
        while len(_WORKERS) <= k:
            _WORKERS.append(_Worker())
        return _WORKERS[k]
