"""Progress lines on stderr for the command line's long steps: :class:`Progress` (``label k/n unit, note, ETA``)
and :class:`Stages` (the deploy path's stage lines). Split out of ``cli.py``; standard library only."""

from __future__ import annotations

import sys
import time


class Progress:
    """``label k/n unit, note, ETA`` on stderr every ``every`` items (0: not by count), with ``seconds`` also once
    that long has passed since the last line, whenever ``note`` changes and at the end (``done == total``: a run
    that ends early passes its count as the total): one refreshed line on a terminal, a line each in a pipe or a log
    file. The ETA is the rate since the first call (set-up excluded) times what is left (``n`` may be a bound); the
    last line gives the time taken."""

    def __init__(self, label: str, unit: str = "frames", every: int = 50, seconds: float | None = None):
        self.label, self.unit, self.every, self.seconds = label, unit, every, seconds
        self.start, self.first, self.note, self.tty = time.monotonic(), None, None, sys.stderr.isatty()
        self.shown = self.start

    def __call__(self, done: int, total: int, note: str = "") -> None:
        now = time.monotonic()
        self.first = self.first or (now, done)
        due = (done == total or note != self.note or (self.every and done % self.every == 0)
               or (self.seconds is not None and now - self.shown >= self.seconds))
        if not due:
            return
        self.note, self.shown = note, now
        (t0, d0) = self.first
        when = (f"{_duration(now - self.start)}" if done >= total else
                f"ETA {_duration((now - t0) / (done - d0) * (total - done))}" if done > d0 else "")
        text = ", ".join(t for t in (f"{self.label} {done}/{total} {self.unit}".rstrip(), note, when) if t)
        end = "\n" if done >= total or not self.tty else "\r"
        print(f"{text}\033[K" if self.tty else text, end=end, file=sys.stderr, flush=True)


class Stages:
    """The deploy path's ``progress`` (:class:`horde.deploy.verify.ProgressFn`) for ``horde <command>``, on
    stderr: ``<command> [elapsed]: <stage>`` as each stage starts or ends, and each loop as a :class:`Progress`
    (steps, note, ETA) on its first step, every :attr:`SECONDS` and at its end, so no stage is silent for long and
    a pipe gets a few lines, not one per step."""

    SECONDS = 5.0

    def __init__(self, command: str):
        self.command, self.start, self.bars = command, time.monotonic(), {}

    def __call__(self, stage: str, done: int = 0, total: int = 0, note: str = "") -> None:
        if not total:
            print(f"{self.command} [{_duration(time.monotonic() - self.start)}]: {stage}", file=sys.stderr,
                  flush=True)
            return
        if stage not in self.bars:
            self.bars[stage] = Progress(f"{self.command}: {stage}", "steps", every=0, seconds=Stages.SECONDS)
        self.bars[stage](done, total, note)


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
