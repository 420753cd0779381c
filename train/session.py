"""What every learner's run needs around its loop: seeding, determinism, torch.distributed, preemption signals, the
run directory (new or resumed, its ``config.yaml``, its lock), in one :class:`RunSession` that PPO, distillation,
SHAC and every ``lib=`` run open the same way."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import hashlib
import os
import random
import signal
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from horde.sim.files import atomic_write_text


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
    """While active, SIGTERM, SIGUSR1 and SIGINT (Ctrl-C) only set ``requested``: the loop checkpoints at the end of
    its iteration. A second SIGINT raises :class:`KeyboardInterrupt` at once: the run stops without that checkpoint,
    and the last complete one stays (checkpoints are written to a temporary name and renamed).

    Cluster schedulers (SLURM, Kubernetes) send SIGTERM or SIGUSR1 before killing a job. A SIGINT this process
    ignores (a job started in the background by a shell) stays ignored. ``on_signal(signum)`` runs on the first
    signal (a notice for the user)."""

    SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)

    def __init__(self, on_signal: Callable[[int], None] | None = None) -> None:
        self.requested = False
        self.signum: int | None = None
        self.on_signal = on_signal
        self._previous: dict[int, object] = {}

    def _handle(self, signum, frame) -> None:  # noqa: ARG002
        if self.requested:
            if signum == signal.SIGINT:  # Ctrl-C twice: stop now, without the checkpoint
                raise KeyboardInterrupt
            return
        self.requested = True
        self.signum = signum
        if self.on_signal is not None:
            self.on_signal(signum)

    def __enter__(self) -> PreemptionGuard:
        import threading

        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                if s == signal.SIGINT and signal.getsignal(s) is signal.SIG_IGN:
                    continue
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a run after its iteration and the checkpoint is written: the command exits with 130,
    as for any Ctrl-C, having printed where the checkpoint is and how to resume (``reported``)."""

    reported = True


# --- the run directory's lock ----------------------------------------------------------------------------------------
LOCK_NAME = ".horde.lock"
"""The lock file in a run directory while a process writes it: ``<pid> <host>``."""


def new_run_dir(root: str | Path, task: str) -> Path:
    """``<root>/<task>/<YYYY-mm-dd_HH-MM-SS>``, suffixed when two runs start in the same second."""
    base = Path(root) / task / dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    path, k = base, 1
    while path.exists():
        path, k = base.with_name(f"{base.name}_{k}"), k + 1
    path.mkdir(parents=True)
    return path


@dataclass
class RunSession:
    """One training run's set-up, shared by every learner: its place in a torchrun job, device, seed (seeded before
    the envs are built), env count per rank, then (:meth:`open`) the resumed checkpoint, the run directory and its
    ``config.yaml``. A learner calls :meth:`begin`, builds its envs and networks, then :meth:`open`.

    ``algo`` is the learner's name in :data:`horde.train.config.ALGORITHMS` (saved as ``algo_name`` in every
    checkpoint's config, which play and export read)."""

    cfg: Any
    task: str
    algo: str
    dist: DistInfo
    device: str
    seed: int
    """This rank's seed: ``cfg.seed + rank`` (every rank explores differently)."""
    num_envs: int
    """Envs of this rank: ``cfg.num_envs`` split over the ranks."""
    quiet: bool
    """No console output (asked for, or a rank other than 0)."""
    run_dir: Path | None = None
    resume_ckpt: dict | None = None
    config_dict: dict = field(default_factory=dict)

    @classmethod
    def begin(cls, cfg, task: str, algo: str, *, quiet: bool = False, distributed: bool = True) -> RunSession:
        """Join the torchrun job (``cfg.distributed`` and ``distributed``), split the envs, set torch's threads and
        seed every generator; nothing is written yet."""
        from horde.train.config import ConfigError

        dist, device = (setup_distributed(cfg.device, cfg.dist_backend) if distributed and cfg.distributed
                        else (DistInfo(), cfg.device))
        num_envs = cfg.num_envs // dist.world_size
        if num_envs < 1:
            raise ConfigError(f"num_envs={cfg.num_envs} cannot be split over {dist.world_size} ranks")
        torch.set_num_threads(cfg.torch_threads)
        seed = cfg.seed + dist.rank
        seed_everything(seed, deterministic=getattr(cfg, "deterministic", False))
        return cls(cfg=cfg, task=task, algo=algo, dist=dist, device=device, seed=seed, num_envs=num_envs,
                   quiet=quiet or not dist.is_main)

    def open(self, raw_cfg, run_dir: str | Path | None = None) -> Path:
        """The checkpoint ``cfg.resume`` names (``resume_ckpt``), the run directory (``run_dir``, else the resumed
        checkpoint's folder, else a new one; rank 0 names it for every rank) with ``config.yaml`` in it."""
        from omegaconf import OmegaConf

        from horde.train.checkpoint import load_checkpoint, resolve_checkpoint
        from horde.train.config import to_container

        self.config_dict = {**to_container(raw_cfg), "algo_name": self.algo}
        resume = getattr(self.cfg, "resume", None)
        self.resume_ckpt = load_checkpoint(resolve_checkpoint(resume)) if resume else None
        if run_dir is None and self.resume_ckpt is not None:
            run_dir = resolve_checkpoint(resume).parent  # a resumed run keeps writing where it was
        path = None
        if self.dist.is_main:
            path = Path(run_dir) if run_dir else new_run_dir(self.cfg.run_root, self.task)
            path.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path / "config.yaml", OmegaConf.to_yaml(raw_cfg, resolve=True))
        self.run_dir = Path(broadcast_object(str(path) if path is not None else None, self.dist))
        return self.run_dir


class RunDirError(RuntimeError):
    """A run directory that cannot be written: held by another process, or not a writable folder; one line."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


class RunLock:
    """An exclusive lock on a run directory (``flock`` on ``<run>/.horde.lock``) held while a process writes it.

    The kernel drops a ``flock`` when its process dies, however it dies, so a lock file left by a killed run is stale
    by construction and the next process takes it over. Where the file system has no ``flock`` (some network file
    systems), the PID written in the file decides: a live process on this host holds it, a dead one does not.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self._fd: int | None = None

    def holder(self) -> tuple[int, str] | None:
        """(pid, host) written in the lock file, or None."""
        try:
            pid, host = self.path.read_text().split()[:2]
            return int(pid), host
        except (OSError, ValueError):
            return None

    def _refuse(self) -> RunDirError:
        pid, host = self.holder() or (0, "?")
        who = f"process {pid}" + ("" if host == socket.gethostname() else f" on {host}")
        return RunDirError(f"{self.run_dir}: in use by {who} (another horde train is writing it); wait for it to "
                           f"end or stop it (kill {pid}), then retry")

    def acquire(self) -> RunLock:
        """Take the lock or raise :class:`RunDirError` naming the process that holds it."""
        import fcntl

        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._refuse() from None
            except OSError as exc:  # no flock here: fall back on the PID in the file
                if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    os.close(fd)
                    raise
                held = self.holder()
                if held and held[0] != os.getpid() and (held[1] != socket.gethostname() or _alive(held[0])):
                    os.close(fd)
                    raise self._refuse() from None
            try:  # the holder before us may have removed the file between our open and our lock: lock the new one
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Remove the lock file and drop the lock (no-op when not held)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def writable_run_dir(label: str, value: str | Path, path: str | Path) -> None:
    """``path`` (where ``label=value`` leads) is a folder this process can write, or can create: a one-line
    :class:`RunDirError` names the part that is a file or is read-only."""
    from horde.sim.fields import FieldError, check_writable_dir

    try:
        check_writable_dir(label, value, path)
    except FieldError as exc:
        raise RunDirError(str(exc)) from None


def sweep_temporaries(task_dir: str | Path) -> int:
    """Remove the temporary checkpoint files that killed runs left in the run directories under ``task_dir``
    (``<run_root>/<task>``), skipping directories a live process holds; returns how many went."""
    from horde.train.checkpoint import TEMP_GLOB, remove_temporaries

    count = 0
    for run in Path(task_dir).glob(f"*/{TEMP_GLOB}"):
        lock = RunLock(run.parent)
        try:
            lock.acquire()
        except (RunDirError, OSError):
            continue
        try:
            count += len(remove_temporaries(run.parent))
        finally:
            lock.release()
    return count


@contextlib.contextmanager
def run_directory(run_root: str | Path, task: str, *, resume: str | Path | None = None,
                  main: bool = True) -> Iterator[Path | None]:
    """The run directory ``horde train`` writes, locked for this process while the block runs.

    A resumed run's directory (the checkpoint's folder), or a new ``<run_root>/<task>/<stamp>/``; a run directory
    another process holds is refused in one line (:class:`RunDirError`), and so is a run root that is a file or
    read-only. Temporary checkpoint files a killed run left are removed. A new directory that the block leaves
    empty (the run failed before writing anything) is removed again, with the folders above it that it created. On ranks other than 0 (``main=False``) it
    yields None: rank 0 names the directory.
    """
    if not main:
        yield None
        return
    from horde.train.checkpoint import remove_temporaries, resolve_checkpoint

    new_parents: list[Path] = []  # folders above a new run directory that this call creates (deepest first)
    if resume is not None:
        run_dir, created = resolve_checkpoint(resume).parent, False
        writable_run_dir("resume", resume, run_dir)
    else:
        task_dir = Path(run_root) / task
        writable_run_dir("run_root", run_root, task_dir)
        new_parents = [p for p in (task_dir, *task_dir.parents) if not p.exists()]
        sweep_temporaries(task_dir)
        for _ in range(100):  # two runs that start in the same second race for one name: the loser takes the next
            try:
                run_dir, created = new_run_dir(run_root, task), True
                break
            except FileExistsError:
                continue
    lock = RunLock(run_dir).acquire()
    try:
        remove_temporaries(run_dir)
        yield run_dir
    finally:
        lock.release()
        if created:
            with contextlib.suppress(OSError):  # rmdir removes only an empty folder: stop at the first that is not
                for p in (run_dir, *new_parents):
                    p.rmdir()


def run_training(args: list[str]) -> dict:
    """What ``horde train <overrides>`` does (and each job of a launched sweep, :mod:`horde.train.sweep`): compose,
    check the memory, train with horde's learner in a locked run directory (or another library's), and return the
    run's summary."""
    from horde.train.config import ALGORITHMS, algorithm_name, compose, refuse_repeated_keys
    from horde.train.memory import check_run

    refuse_repeated_keys(args)
    cfg, task, raw = compose(args)
    if cfg.profile and not cfg.resume:
        print(f"horde train: the {cfg.profile.split(':')[0]} profile of the tuned config ran: "
              f"{cfg.profile.split(':', 1)[1].strip()} (a key on the command line wins; cpu={{}} turns it off)",
              flush=True)
    if cfg.lib == "horde":
        check_launcher(cfg)
    check_run(cfg, task)  # before any env is built: a run that will not fit is refused in one line
    if cfg.lib != "horde":
        from horde.train.libs import train_with_library

        return train_with_library(cfg, task, raw)
    trainer_cls = ALGORITHMS[algorithm_name(cfg)].learner_class()
    main_rank = not cfg.distributed or int(os.environ.get("RANK", "0")) == 0
    try:
        with run_directory(cfg.run_root, task, resume=cfg.resume, main=main_rank) as run_dir:  # locked while written
            summary = trainer_cls(cfg, task, raw, run_dir=run_dir).learn()
    except Interrupted:  # Ctrl-C: every rank stopped after the same iteration, rank 0 saved
        teardown_distributed()
        raise
    teardown_distributed()  # every rank leaves gloo/NCCL together (left to exit, a rank aborted once under load)
    return summary


def check_launcher(cfg) -> None:
    """``distributed=true`` needs the environment ``torchrun`` gives each rank (``WORLD_SIZE``, ``RANK``): without it
    the run would train as one process, which is refused in one line (:class:`ConfigError`)."""
    from horde.train.config import ConfigError

    if not cfg.distributed or "WORLD_SIZE" in os.environ:
        return
    outside = "this process was not started by torchrun (no WORLD_SIZE in its environment)"
    if cfg.resume:
        raise ConfigError(f"resume={cfg.resume}: the run was trained with distributed=true and {outside}; resume it "
                          f"with `torchrun --nproc_per_node=<N> -m horde train resume={cfg.resume}`")
    raise ConfigError(f"distributed=true: {outside}, so it would train alone; launch it with `torchrun "
                      f"--nproc_per_node=<N> -m horde train ... distributed=true`, or leave distributed=true out")
