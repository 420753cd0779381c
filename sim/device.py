"""One place that maps a user's device string to a Warp device and the matching torch device."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import torch
import warp as wp

_initialized = False

# Before any Warp call (struct instances included): no banner, and no backward kernels unless a kernel asks.
if os.environ.get("HORDE_WARP_VERBOSE", "0") != "1":
    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
wp.config.enable_backward = False


def init_warp() -> None:
    """Initialise Warp once per process.

    Backward kernels are off unless a differentiable kernel asks for them (``enable_backward`` per kernel),
    which cuts CPU compile time about 3x.
    """
    global _initialized
    if _initialized:
        return
    if os.environ.get("HORDE_WARP_VERBOSE", "0") != "1" and not _cuda_driver_present():
        # Warp's native init prints a driver warning on every machine without a GPU; a CPU user needs no such line
        with native_output_captured(fds=(2,)):
            wp.init()
    else:
        wp.init()
    _initialized = True


def _cuda_driver_present() -> bool:
    import ctypes

    for name in ("libcuda.so", "libcuda.so.1", "nvcuda.dll"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


@contextlib.contextmanager
def native_output_captured(fds=(1, 2)):
    """Route file descriptors ``fds`` to a temporary file for the block (what Warp's native code prints, which
    Python's ``sys.stdout``/``sys.stderr`` never see); yields a list that holds the captured text afterwards."""
    import tempfile

    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = [os.dup(fd) for fd in fds]
        for fd in fds:
            os.dup2(sink.fileno(), fd)
        text: list[str] = []
        try:
            yield text
        finally:
            for fd, old in zip(fds, saved, strict=True):
                os.dup2(old, fd)
                os.close(old)
            sink.seek(0)
            text.append(sink.read().decode(errors="replace"))


@dataclass(frozen=True)
class Device:
    """A simulation device: the Warp device and the torch device that aliases its memory."""

    warp: str
    """Warp device alias, ``"cpu"`` or ``"cuda:N"``."""
    torch: torch.device
    """Torch device sharing memory with ``warp``."""

    @property
    def is_cuda(self) -> bool:
        """True for a CUDA device."""
        return self.torch.type == "cuda"


def on_torch_stream(device) -> contextlib.AbstractContextManager:
    """On CUDA, run Warp on torch's current stream of ``device`` (a torch device or its name), so Warp kernels
    order with torch ops without a sync; nothing elsewhere."""
    device = torch.device(device)
    if device.type != "cuda":
        return contextlib.nullcontext()
    return wp.ScopedStream(wp.stream_from_torch(torch.cuda.current_stream(device)))


def resolve_device(name: str) -> Device:
    """Map ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` to a :class:`Device`, failing with a one-line reason."""
    init_warp()
    name = str(name).strip().lower()
    if name == "cuda":
        name = "cuda:0"
    if name == "cpu":
        return Device(warp="cpu", torch=torch.device("cpu"))
    if name.startswith("cuda:") and name[5:].isdigit():
        if not wp.is_cuda_available() or not torch.cuda.is_available():
            raise ValueError(f"device '{name}' asked for, but no CUDA device is usable here (Warp or torch sees none)")
        index = int(name[5:])
        if index >= wp.get_cuda_device_count():
            raise ValueError(f"device '{name}' does not exist: {wp.get_cuda_device_count()} CUDA device(s) present")
        return Device(warp=name, torch=torch.device(name))
    raise ValueError(f"unknown device '{name}': use 'cpu', 'cuda' or 'cuda:N'")
