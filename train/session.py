"""What every learner's run needs around its loop: seeding, determinism, torch.distributed, preemption signals."""

from __future__ import annotations

import hashlib
import os
import random
import signal
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class DistInfo:
    """This process's place in a data-parallel job (a single process is rank 0 of 1)."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        """Rank 0 logs and saves."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        """More than one process."""
        return self.world_size > 1

    def rsl_multi_gpu_cfg(self) -> dict | None:
        """rsl-rl's ``multi_gpu`` block (it reduces gradients, KL and normalizer statistics when set)."""
        if not self.enabled:
            return None
        return {"global_rank": self.rank, "local_rank": self.local_rank, "world_size": self.world_size}


def setup_distributed(device: str, backend: str | None = None) -> tuple[DistInfo, str]:
    """Join the process group that ``torchrun`` describes in the environment; returns this rank's info and device.

    NCCL on CUDA (one GPU per local rank), gloo on CPU, unless ``backend`` names one.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo(), device
    rank, local = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    if device.startswith("cuda"):
        device = f"cuda:{local}"
        torch.cuda.set_device(local)
    backend = backend or ("nccl" if device.startswith("cuda") else "gloo")
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group(backend=backend, rank=rank, world_size=world)
    return DistInfo(rank=rank, local_rank=local, world_size=world), device


def teardown_distributed() -> None:
    """Leave the process group (no-op when none), every rank together after a barrier."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def broadcast_object(obj, dist: DistInfo):
    """Rank 0's ``obj`` on every rank."""
    if not dist.enabled:
        return obj
    box = [obj]
    torch.distributed.broadcast_object_list(box, src=0)
    return box[0]


def any_rank(flag: bool, dist: DistInfo) -> bool:
    """True on every rank when ``flag`` is True on any rank (one tiny all-reduce)."""
    if not dist.enabled:
        return flag
    t = torch.tensor([1 if flag else 0], dtype=torch.int64)
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return bool(t.item())


def parameters_digest(module: torch.nn.Module) -> str:
    """sha256 of a module's state dict (bitwise identity check across ranks or runs)."""
    h = hashlib.sha256()
    for k, v in sorted(module.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def all_ranks_agree(digest: str, dist: DistInfo) -> bool:
    """True when every rank computed the same ``digest``."""
    if not dist.enabled:
        return True
    digests = [None] * dist.world_size
    torch.distributed.all_gather_object(digests, digest)
    return len(set(digests)) == 1


def seed_everything(seed: int, *, deterministic: bool) -> None:
    """Seed Python, numpy and torch; with ``deterministic`` also make torch refuse nondeterministic kernels."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False


class PreemptionGuard:
    """While active, SIGTERM and SIGUSR1 only set ``requested``: the loop checkpoints at the end of its iteration.

    Cluster schedulers (SLURM, Kubernetes) send one of these before killing a job.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

    def __init__(self) -> None:
        self.requested = False
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum, frame) -> None:  # noqa: ARG002
        self.requested = True
        self.signum = signum

    def __enter__(self) -> PreemptionGuard:
        import threading

        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()
