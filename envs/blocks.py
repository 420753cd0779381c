"""The CPU block path: ``LANES`` envs per Warp thread in a native loop that clang vectorizes, optionally replayed
over disjoint env ranges on several OS threads. Only tasks whose step is written as such a loop use it (cartpole);
every other task, and every task on CUDA, runs the core's one-env-per-thread kernels.

Why: Warp runs a CPU kernel's threads one after another in one OS thread, and clang vectorizes no loop over Warp
arrays (their strides are run-time values), so a per-env kernel uses one SIMD lane. A block kernel steps ``LANES``
envs per thread through raw pointers (see :mod:`horde.envs.cartpole` and :mod:`horde.sim.classic`), bit-identical to
the per-env kernels (``tests/unit/test_sim.py``). The envs after the last full block go through the per-env kernels on
env slices (``WarpTaskEnv._launch_post_step`` with ``start``).
"""

from __future__ import annotations

import functools
import os
from typing import ClassVar

import warp as wp

from horde.envs.core import WarpTaskEnv
from horde.sim import StepGraph
from horde.sim.classic import LANES
from horde.sim.graph import ParallelStepGraph

__all__ = ["LANES", "PARALLEL_MIN_ENVS", "BlockStepEnv"]

PARALLEL_MIN_ENVS = 2048
"""Fewest envs per OS thread when a CPU step is split over cores (``TaskConfig.cpu_threads``): a step of fewer envs
takes less than waking a thread may cost under load (tens of microseconds). Not tuned on an idle machine."""


class BlockStepEnv(WarpTaskEnv):
    """A task with a CPU block step: it implements ``_launch_step_range`` and lists ``block_kernels``."""

    block_kernels: ClassVar[tuple] = ()
    """Kernels only the CPU block path launches (loaded only there: they may hold CPU-only native code)."""

    def _configure_step(self) -> None:
        self._stats_parts = [self._stats]
        self._causes_parts = [self._causes]
        self._configure_cpu_path(blocks=not self.dev.is_cuda)

    def _configure_cpu_path(self, *, blocks: bool, threads: int | None = None) -> None:
        """Choose how a step runs: ``blocks`` of ``LANES`` envs per Warp thread or one env per thread, split over
        ``threads`` OS threads (default: ``cfg.cpu_threads``, fewer when there are not ``PARALLEL_MIN_ENVS`` envs per
        thread or cores for them). Records nothing yet; tests call it before the first step to compare the paths."""
        self._use_blocks = blocks and not self.dev.is_cuda
        if threads is None:
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
            threads = min(self.cfg.cpu_threads, cores, self.num_envs // PARALLEL_MIN_ENVS)
        threads = max(1, min(threads, self.num_envs // LANES)) if self._use_blocks and self.cfg.use_graph else 1
        d, use_graph = self.dev.warp, self.cfg.use_graph
        kernels = self.step_kernels + (self.block_kernels if self._use_blocks else ())
        if threads == 1:
            self._graph = StepGraph(self._launch_step, d, kernels=kernels, use_graph=use_graph)
            return
        with wp.ScopedDevice(d):
            while len(self._stats_parts) < threads:  # one statistics buffer per thread: CPU atomics are plain adds
                self._stats_parts.append(wp.zeros_like(self._stats))
                self._causes_parts.append(wp.zeros_like(self._causes))
        blocks_total = self.num_envs // LANES
        bounds = [LANES * (blocks_total * k // threads) for k in range(threads)] + [self.num_envs]
        self._graph = ParallelStepGraph([
            StepGraph(functools.partial(self._launch_step_range, bounds[k], bounds[k + 1], self._stats_parts[k],
                                        self._causes_parts[k]), d, kernels=kernels, use_graph=use_graph)
            for k in range(threads)
        ])

    def _fold_stats(self) -> None:
        """Add the other threads' statistics buffers into ``_stats`` and ``_causes`` (host side, between steps)."""
        for extra in self._stats_parts[1:]:
            wp.to_torch(self._stats).add_(wp.to_torch(extra))
            extra.zero_()
        for extra in self._causes_parts[1:]:
            wp.to_torch(self._causes).add_(wp.to_torch(extra))
            extra.zero_()

    def set_env_state(self, saved) -> None:
        super().set_env_state(saved)
        for extra in self._stats_parts[1:] + self._causes_parts[1:]:
            extra.zero_()

    def _block_end(self, start: int, stop: int) -> int:
        """End of the full blocks of ``LANES`` envs from ``start`` (a multiple of ``LANES``) within ``stop``: the
        block kernels step envs [start, end), the one-env-per-thread kernels [end, stop)."""
        return start + (stop - start) // LANES * LANES if self._use_blocks else start

    def _launch_step(self) -> None:
        self._launch_step_range(0, self.num_envs, self._stats, self._causes)

    def _launch_step_range(self, start: int, stop: int, stats: wp.array, causes: wp.array) -> None:
        """Step envs [start, stop) only (``start`` a multiple of ``LANES``), accumulating episode statistics into
        ``stats`` and termination causes into ``causes``; ranges run concurrently on CPU threads."""
        raise NotImplementedError
